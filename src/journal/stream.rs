//! The context stream (seed: context-stream.md): an append-only feed of what
//! happened in a guild — people's messages, observations, decisions, errors,
//! delegations — that model calls which start cold (a garden cycle, a
//! level-2 reflex, an initiative consideration) can get as a short
//! `[AMBIENT CONTEXT — last 5 min]` summary.
//!
//! It has two sources. People's messages are read from their own stored
//! rows (see [`read`]): never copied, so a message costs the store one row,
//! and an edit, a delete or a forget-me shows in the stream at once. The
//! journal writes the rest (every decision already passes through it;
//! routing chatter and gate checks are left out, like the seed's "tool
//! metadata"). An identical event within ten minutes is shown once. A
//! guild's stream is only ever read for that guild — and only what the
//! reader may see of it (see [`Audience`]: a private channel's talk is not
//! told elsewhere) — and no prompt gets anything older than
//! `executive.contextStream.retentionHours` (the journal's lines are deleted
//! then). Prepending costs tokens, so it is opt-in per model role
//! (`executive.contextStream.roles`).

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use super::summary::Audience;
use crate::ids::GuildId;
use crate::settings::{Role, Settings};
use crate::store::JournalStore;
use crate::store::stream::{StreamEvent, StreamLine, USER_MESSAGE};
use crate::vocab::journal::{Entry, Kind};

pub(crate) const KINDS: &[&str] = &[
    USER_MESSAGE,
    "observation",
    "decision",
    "error",
    "delegation",
];

/// An event longer than this is cut.
const MAX_EVENT_CHARS: usize = 240;

fn repeat_window() -> Duration {
    Duration::minutes(10)
}

fn cut(text: &str) -> String {
    let t: String = text.chars().take(MAX_EVENT_CHARS).collect();
    if t.len() < text.len() {
        format!("{t}…")
    } else {
        t
    }
}

/// The stream kind a journal entry becomes, if it is worth streaming.
fn kind_of(e: &Entry) -> Option<&'static str> {
    match e.kind {
        Kind::Reply
        | Kind::InitiativePost
        | Kind::InitiativeSkip
        | Kind::Reflex
        | Kind::Impulse
        | Kind::Settings => Some("decision"),
        Kind::Memory | Kind::Garden | Kind::Discovery | Kind::Voice => Some("observation"),
        Kind::Error => Some("error"),
        Kind::Outcome if e.summary.ends_with("escalated") => Some("delegation"),
        Kind::Route | Kind::Outcome | Kind::Gate | Kind::System => None,
    }
}

/// The stream line a journal entry becomes, and its guild's, if it is one
/// the stream shows (the journal writes it with the entry).
pub(crate) fn entry_event(e: &Entry) -> Option<(GuildId, StreamLine<'static>)> {
    let (Some(guild), Some(kind)) = (e.guild, kind_of(e)) else {
        return None;
    };
    if e.may_quote_any_channel() {
        return None;
    }
    let content = if e.reason.is_empty() {
        e.summary.clone()
    } else {
        format!("{} — {}", e.summary, e.reason)
    };
    Some((
        guild,
        StreamLine {
            kind,
            content: cut(&content),
            repeat_window: repeat_window(),
        },
    ))
}

/// One guild's stream since `since`, as the stream shows it: oldest first,
/// of `kinds` (all when empty), the newest `limit`, each line cut, and a
/// person's message that repeats one of the ten minutes before it left out
/// (journal lines were checked for repeats when written; people's messages
/// are read from their own rows, so theirs is checked here).
pub(crate) fn read(
    store: &JournalStore,
    guild: GuildId,
    since: DateTime<Utc>,
    kinds: &[String],
    limit: usize,
) -> crate::store::Result<Vec<StreamEvent>> {
    // The ten minutes before `since` only say what is a repeat.
    let events = store.stream_read(guild, since - repeat_window(), kinds, limit)?;
    let mut last_shown: HashMap<String, DateTime<Utc>> = HashMap::new();
    let mut out = Vec::with_capacity(events.len());
    for mut e in events {
        if e.kind == USER_MESSAGE {
            e.content = cut(&e.content);
            if let Some(&shown) = last_shown.get(&e.content)
                && e.at - shown < repeat_window()
            {
                continue;
            }
            last_shown.insert(e.content.clone(), e.at);
        }
        if e.at >= since {
            out.push(e);
        }
    }
    Ok(out)
}

/// Checks a comma-separated list of stream kinds, naming the bad one.
pub(crate) fn parse_kinds(list: &str) -> Result<Vec<String>, UnknownStreamKind> {
    list.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|k| {
            KINDS
                .iter()
                .find(|known| **known == k)
                .map(|known| known.to_string())
                .ok_or_else(|| UnknownStreamKind {
                    name: k.to_string(),
                })
        })
        .collect()
}

/// A stream kind nobody knows, as typed; the message lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown context type {name:?}; valid types: {}", KINDS.join(", "))]
pub(crate) struct UnknownStreamKind {
    pub name: String,
}

/// One event as a line: `12:03 ada: should we…` or `12:04 decision: answered ada — a mention`.
pub(crate) fn line(e: &StreamEvent, tz: Tz) -> String {
    let at = e.at.with_timezone(&tz).format("%H:%M");
    if e.kind == USER_MESSAGE {
        format!("{at} {}", e.content)
    } else {
        format!("{at} {}: {}", e.kind, e.content)
    }
}

/// The `[AMBIENT CONTEXT — last N min]` block for one guild, as `audience`
/// may read it (what happened in a channel it cannot see is left out).
pub fn summary(
    store: &JournalStore,
    settings: &Settings,
    audience: &Audience,
    now: DateTime<Utc>,
    tz: Tz,
) -> Option<String> {
    let guild = audience.guild?;
    let c = &settings.executive.context_stream;
    let minutes = i64::from(c.window_minutes);
    let since = retained(settings, now - Duration::minutes(minutes), now);
    let events: Vec<StreamEvent> = read(store, guild, since, &[], 10_000)
        .ok()?
        .into_iter()
        .filter(|e| audience.sees(Some(guild), e.channel))
        .collect();
    let skip = events.len().saturating_sub(c.max_lines as usize);
    let events = &events[skip..];
    if events.is_empty() {
        return None;
    }
    let mut out = format!("[AMBIENT CONTEXT — last {minutes} min]\n");
    for e in events {
        out.push_str("- ");
        out.push_str(&line(e, tz));
        out.push('\n');
    }
    Some(out)
}

/// The summary to put in front of a cold call for `role`, when the operator opted that role in.
pub fn prefix_for(
    store: &JournalStore,
    settings: &Settings,
    role: Role,
    audience: &Audience,
    now: DateTime<Utc>,
) -> Option<String> {
    if !settings
        .executive
        .context_stream
        .roles
        .iter()
        .any(|r| r == role.as_str())
    {
        return None;
    }
    let tz = settings.zone();
    summary(store, settings, audience, now, tz)
}

/// `since`, or the oldest instant `executive.contextStream.retentionHours`
/// keeps if that is later.
pub(crate) fn retained(
    settings: &Settings,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    let hours = settings.executive.context_stream.retention_hours;
    since.max(now - Duration::hours(i64::from(hours)))
}

/// Drops the journal's lines older than `executive.contextStream.retentionHours`
/// (people's messages are not copied into the stream; see [`read`]).
pub(crate) fn cleanup(store: &JournalStore, settings: &Settings, now: DateTime<Utc>) -> usize {
    store
        .stream_cleanup(
            now - Duration::hours(i64::from(settings.executive.context_stream.retention_hours)),
        )
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::messages::sample;

    #[test]
    fn peoples_messages_are_read_from_their_rows_cut_and_without_repeats() {
        let store = Store::open_in_memory().unwrap();
        let t = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        let said = |id: u64, text: &str, minutes: i64| {
            let m = sample(id, 5, text, t + Duration::minutes(minutes));
            store.messages().insert_message(&m).unwrap();
        };
        said(1, "lol", 0);
        said(2, "lol", 5); // a repeat of the first
        said(3, &"long ".repeat(100), 6);
        said(4, "lol", 12); // ten minutes after the last shown
        let mut bot = sample(5, 5, "i am the bot", t + Duration::minutes(7));
        bot.author_is_bot = true;
        store.messages().insert_message(&bot).unwrap();
        let mut other = sample(6, 5, "elsewhere", t + Duration::minutes(7));
        other.guild = Some(GuildId(2));
        store.messages().insert_message(&other).unwrap();

        let lines = |since: DateTime<Utc>| -> Vec<String> {
            read(&store.journal(), GuildId(1), since, &[], 100)
                .unwrap()
                .into_iter()
                .map(|e| e.content)
                .collect()
        };
        let all = lines(t);
        assert_eq!(all.len(), 3, "{all:?}");
        assert_eq!(all[0], "ada: lol");
        assert!(
            all[1].starts_with("ada: long long") && all[1].ends_with('…'),
            "{}",
            all[1]
        );
        assert_eq!(all[1].chars().count(), MAX_EVENT_CHARS + 1);
        assert_eq!(all[2], "ada: lol");
        // From the fourth minute on, the repeat at the fifth is still one of
        // the first's, which is before the window but decides it.
        assert_eq!(lines(t + Duration::minutes(4)).len(), 2);
    }
}
