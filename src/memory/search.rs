//! Search: SQLite FTS5 (BM25) relevance combined with recency and importance.
//!
//! The one formula:
//!
//! ```text
//! score = relevance × 0.5^(age_days / memory.searchHalfLifeDays) × importance
//! ```
//!
//! - `relevance` is BM25 over the fact's content (and, at half weight, its
//!   subject), as FTS5 computes it (negated, so larger is better);
//! - `age_days` counts from the fact's last update or reinforcement, so a
//!   fact people keep confirming stays fresh; with the default half-life of
//!   30 days, a 30-day-old fact needs twice the relevance of a new one;
//! - `importance` is 1.5 for high importance and 1 otherwise (the seed's boost).
//!
//! Scope: a guild's search sees that guild's facts — guild-wide, every
//! channel's, and its members' user facts — and never another guild's. A
//! direct message sees only the facts learned in direct messages with that
//! person. The guild (or DM) filter is part of the full-text query itself.

use chrono::{DateTime, Utc};

use super::keywords::keywords;
use crate::ids::{GuildId, UserId};
use crate::store::MemoryStore;
use crate::vocab::fact::Fact;

/// Whose memory a search may read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    Guild(GuildId),
    /// A direct message with this person.
    Dm(UserId),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    pub fact: Fact,
    pub score: f64,
}

/// How many BM25 matches are re-scored with recency and importance.
const CANDIDATES: usize = 64;

/// The FTS5 query for `text` within `reader`'s memory; `None` if `text` has no keywords.
pub(crate) fn match_expr(text: &str, reader: Reader) -> Option<String> {
    let terms: Vec<String> = keywords(text)
        .into_iter()
        .take(24)
        .map(|t| format!("\"{t}\""))
        .collect();
    if terms.is_empty() {
        return None;
    }
    // Only active facts carry the plain `g`/`u` tokens (see store::memory::tags).
    let confine = match reader {
        Reader::Guild(g) => format!("tags : \"g{g}\""),
        Reader::Dm(u) => format!("tags : \"g0\" AND tags : \"u{u}\""),
    };
    Some(format!(
        "{{content subject}} : ({}) AND {confine}",
        terms.join(" OR ")
    ))
}

pub(crate) fn score(relevance: f64, fact: &Fact, now: DateTime<Utc>, half_life_days: f64) -> f64 {
    let age_days = (now - fact.updated_at).num_seconds().max(0) as f64 / 86_400.0;
    relevance * 0.5f64.powf(age_days / half_life_days.max(0.001)) * fact.importance.weight()
}

/// The best `limit` facts for `text`, best first.
pub fn search(
    store: &MemoryStore,
    reader: Reader,
    text: &str,
    now: DateTime<Utc>,
    half_life_days: f64,
    limit: usize,
) -> Vec<Scored> {
    let Some(expr) = match_expr(text, reader) else {
        return Vec::new();
    };
    let matches = match store.search_facts(&expr, CANDIDATES.max(limit)) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(error = %e, "memory search failed");
            return Vec::new();
        }
    };
    let mut scored: Vec<Scored> = matches
        .into_iter()
        .map(|(fact, relevance)| Scored {
            score: score(relevance, &fact, now, half_life_days),
            fact,
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    scored.truncate(limit);
    scored
}
