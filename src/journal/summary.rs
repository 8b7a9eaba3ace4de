//! "What did you do today?": the journal retold for people.
//!
//! Routing chatter (route, outcome, gate, error, system) is left out; what
//! remains is what the bot actually did — answers, posts, quiet decisions,
//! reflexes, tasks, memory and garden work — each with its reason, in the
//! guild's timezone. Used by the `journal_summary` reflex action and the
//! executive's `journal_search` tool.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{Entry, Filter, Journal, Kind};
use crate::ids::GuildId;
use crate::store::Store;

/// The kinds of entry that say what the bot did, rather than how it routed.
pub const DEEDS: &[Kind] = &[
    Kind::Reply,
    Kind::InitiativePost,
    Kind::InitiativeSkip,
    Kind::Reflex,
    Kind::Impulse,
    Kind::Memory,
    Kind::Garden,
    Kind::Settings,
    Kind::Voice,
];

/// One line per entry: `14:05 #general  answered alice — a mention`.
pub fn line(e: &Entry, store: &Store, tz: Tz) -> String {
    let at = e.at.with_timezone(&tz).format("%H:%M");
    let place = e
        .channel
        .map(|c| {
            format!(
                " #{}",
                store
                    .channel_name(c)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| c.to_string())
            )
        })
        .unwrap_or_default();
    let mut out = format!("{at}{place}  {}", e.summary);
    if !e.reason.is_empty() {
        let reason: String = e.reason.chars().take(160).collect();
        out.push_str(" — ");
        out.push_str(&reason);
    }
    out
}

/// What the bot did in `guild` since `since`, newest `limit` entries, oldest first.
pub fn what_i_did(
    journal: &Journal,
    store: &Store,
    guild: Option<GuildId>,
    since: DateTime<Utc>,
    tz: Tz,
    limit: usize,
) -> Vec<String> {
    let filter = Filter {
        since: Some(since),
        kinds: DEEDS.to_vec(),
        guild,
        limit: Some(limit),
        ..Default::default()
    };
    journal
        .query(&filter)
        .unwrap_or_default()
        .iter()
        .map(|e| line(e, store, tz))
        .collect()
}

/// Midnight today in `tz`, as an instant.
pub fn start_of_today(now: DateTime<Utc>, tz: Tz) -> DateTime<Utc> {
    let local = now
        .with_timezone(&tz)
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists");
    local
        .and_local_timezone(tz)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(now - chrono::Duration::hours(24))
}

/// `today`, `yesterday` (from yesterday's midnight) or a window like `24h`.
pub fn parse_window(spec: &str, now: DateTime<Utc>, tz: Tz) -> Result<DateTime<Utc>, String> {
    match spec.trim() {
        "" | "today" => Ok(start_of_today(now, tz)),
        "yesterday" => Ok(start_of_today(now, tz) - chrono::Duration::days(1)),
        other => crate::when::parse_since(other, now),
    }
}
