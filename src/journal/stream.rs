//! The context stream (seed: context-stream.md): an append-only feed of what
//! happened in a guild — people's messages, observations, decisions, errors,
//! delegations — that model calls which start cold (a garden cycle, a
//! level-2 reflex, an initiative consideration) can get as a short
//! `[AMBIENT CONTEXT — last 5 min]` summary.
//!
//! Written from two places: the senses (people's messages, with the message
//! itself, see [`message_event`]) and the journal
//! (every decision already passes through it; routing chatter and gate
//! checks are left out, like the seed's "tool metadata"). An identical event
//! within ten minutes is not written again. A guild's stream is only ever
//! read for that guild — and only what the reader may see of it (see
//! [`Audience`]: a private channel's talk is not told elsewhere) — and it is cleaned up after
//! `executive.contextStream.retentionHours`. Prepending costs tokens, so it is opt-in
//! per model role (`executive.contextStream.roles`).

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use super::summary::Audience;
use super::{Entry, Kind};
use crate::ids::GuildId;
use crate::settings::{Role, Settings};
use crate::store::Store;
use crate::store::garden::{StreamEvent, StreamLine};
use crate::store::messages::StoredMessage;

pub const KINDS: &[&str] = &[
    "user_message",
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
pub fn entry_event(e: &Entry) -> Option<(GuildId, StreamLine<'static>)> {
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

/// The line a person's message in a guild becomes, for the senses to store
/// with the message (see `Store::insert_seen`).
pub fn message_event(author: &str, content: &str) -> StreamLine<'static> {
    StreamLine {
        kind: "user_message",
        content: message_line(author, content),
        repeat_window: repeat_window(),
    }
}

fn message_line(author: &str, content: &str) -> String {
    cut(&format!("{author}: {content}"))
}

/// Called by the senses when a person edits (`Some(new)`) or deletes
/// (`None`) a message: the stream shows the new text, or nothing. A failure
/// is the caller's to report: the old text would still reach prompts.
pub fn message_changed(
    store: &Store,
    old: &StoredMessage,
    new: Option<&str>,
) -> crate::store::Result<()> {
    let Some(guild) = old.guild.filter(|_| !old.author_is_bot) else {
        return Ok(());
    };
    store.stream_message_changed(
        guild,
        old.channel,
        old.created_at,
        &message_line(&old.author_name, &old.content),
        new.map(|n| message_line(&old.author_name, n)).as_deref(),
    )?;
    Ok(())
}

/// Checks a comma-separated list of stream kinds, naming the bad one.
pub fn parse_kinds(list: &str) -> Result<Vec<String>, UnknownStreamKind> {
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
pub struct UnknownStreamKind {
    pub name: String,
}

/// One event as a line: `12:03 ada: should we…` or `12:04 decision: answered ada — a mention`.
pub fn line(e: &StreamEvent, tz: Tz) -> String {
    let at = e.at.with_timezone(&tz).format("%H:%M");
    if e.kind == "user_message" {
        format!("{at} {}", e.content)
    } else {
        format!("{at} {}: {}", e.kind, e.content)
    }
}

/// The `[AMBIENT CONTEXT — last N min]` block for one guild, as `audience`
/// may read it (what happened in a channel it cannot see is left out).
pub fn summary(
    store: &Store,
    settings: &Settings,
    audience: &Audience,
    now: DateTime<Utc>,
    tz: Tz,
) -> Option<String> {
    let guild = audience.guild?;
    let c = &settings.executive.context_stream;
    let minutes = i64::from(c.window_minutes);
    let events: Vec<StreamEvent> = store
        .stream_read(guild, now - Duration::minutes(minutes), &[], 10_000)
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
    store: &Store,
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

/// Drops events older than `executive.contextStream.retentionHours`.
pub fn cleanup(store: &Store, settings: &Settings, now: DateTime<Utc>) -> usize {
    store
        .stream_cleanup(
            now - Duration::hours(i64::from(settings.executive.context_stream.retention_hours)),
        )
        .unwrap_or(0)
}
