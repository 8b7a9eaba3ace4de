//! Ranking feed candidates for the YOUR FEED section: fresher is better, and
//! an item that touches what the community has been talking about (the
//! WHAT THIS COMMUNITY IS INTO words) is better still. A short list: the
//! model may ignore all of it.

use chrono::{DateTime, Utc};

use super::topics::keywords;
use crate::store::discovery::FeedItem;
use crate::when::ago;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Candidate {
    pub item: FeedItem,
    pub score: f64,
    /// Community words found in the item.
    pub matched: Vec<String>,
}

/// score = freshness + overlap, where freshness halves every
/// `freshness_hours / 2` and overlap is 0.5 per community word matched (at most 3).
pub(crate) fn rank(
    items: Vec<FeedItem>,
    interests: &[String],
    now: DateTime<Utc>,
    freshness_hours: u32,
    top: usize,
) -> Vec<Candidate> {
    let half_life = (f64::from(freshness_hours) / 2.0).max(1.0);
    let mut ranked: Vec<Candidate> = items
        .into_iter()
        .map(|item| {
            let at = item.published_at.unwrap_or(item.fetched_at);
            let age_hours = (now - at).num_minutes().max(0) as f64 / 60.0;
            let freshness = 0.5f64.powf(age_hours / half_life);
            let words: Vec<String> =
                keywords(&format!("{} {}", item.title, item.summary)).collect();
            let matched: Vec<String> = interests
                .iter()
                .filter(|w| words.contains(w))
                .take(3)
                .cloned()
                .collect();
            Candidate {
                score: freshness + 0.5 * matched.len() as f64,
                item,
                matched,
            }
        })
        .collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    ranked.truncate(top);
    ranked
}

/// One line of YOUR FEED.
pub(crate) fn line(c: &Candidate, source: &str, now: DateTime<Utc>) -> String {
    let at = c.item.published_at.unwrap_or(c.item.fetched_at);
    let mut text = format!(
        "{} — {} ({source}, {}",
        c.item.title,
        c.item.url,
        ago(at, now)
    );
    if let Some(m) = &c.item.media {
        text.push_str(&format!(", {m}"));
    }
    text.push(')');
    if !c.matched.is_empty() {
        text.push_str(&format!(" — touches: {}", c.matched.join(", ")));
    }
    if !c.item.summary.is_empty() {
        let summary: String = c.item.summary.chars().take(160).collect();
        text.push_str(&format!("\n  {summary}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: i64, title: &str, hours_old: i64, now: DateTime<Utc>) -> FeedItem {
        FeedItem {
            id,
            source_id: 1,
            url: format!("https://e.example/{id}"),
            canonical_url: format!("e.example/{id}"),
            title: title.into(),
            summary: String::new(),
            published_at: Some(now - chrono::Duration::hours(hours_old)),
            fetched_at: now,
            media: None,
        }
    }

    #[test]
    fn community_overlap_beats_a_little_freshness() {
        let now = Utc::now();
        let items = vec![
            item(1, "Gardening tips", 1, now),
            item(2, "Tokio and Rust in production", 10, now),
            item(3, "Old news", 40, now),
        ];
        let ranked = rank(items, &["rust".into(), "tokio".into()], now, 48, 2);
        assert_eq!(ranked.len(), 2);
        assert_eq!(ranked[0].item.id, 2);
        assert_eq!(ranked[0].matched, vec!["rust", "tokio"]);
        assert_eq!(ranked[1].item.id, 1);
        assert!(line(&ranked[0], "r/rust", now).contains("touches: rust, tokio"));
    }
}
