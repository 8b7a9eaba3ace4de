//! How people received the bot's ambient posts, kept as feedback memories
//! (seed: "User Feedback via Memory"), and the scout's rule that a pattern
//! of rejections makes similar work less likely.
//!
//! A 👍-like reaction to an ambient post becomes (or reinforces) "liked"
//! feedback about that post, a 👎-like one "disliked" feedback, a reply
//! "replied" feedback with what was said. Each post's verdicts have their
//! own subject, so a like and a dislike of the same post never fold into
//! each other. The harvest runs at the start of every garden pass from a
//! cursor, so nothing is counted twice.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::garden::Stores;
use crate::ids::{GuildId, UserId};
use crate::memory::Memory;
use crate::memory::keywords::{keywords, overlap};
use crate::store::MemoryStore;
use crate::store::memory::FactFilter;
use crate::vocab::fact::{Fact, FactKind, Importance, Scope};

const LIKED: &[&str] = &["👍", "❤️", "❤", "🔥", "🎉", "😂", "💯", "👏", "🙌", "😍"];
const DISLIKED: &[&str] = &["👎", "🙄", "😒", "😴", "❌", "🤮", "😬"];

/// The excerpt of a post that feedback quotes.
fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(140).collect();
    if t.len() < text.len() {
        format!("{t}…")
    } else {
        t
    }
}

/// Stores feedback that arrived since the last harvest; returns how many events were kept.
pub fn harvest(store: &Stores, memory: &Memory, me: UserId, now: DateTime<Utc>) -> usize {
    let since: DateTime<Utc> = store
        .garden
        .garden_get::<i64>("feedback_cursor")
        .ok()
        .flatten()
        .and_then(DateTime::from_timestamp_millis)
        .unwrap_or(DateTime::UNIX_EPOCH);
    let events = store
        .garden
        .ambient_post_feedback(since, me)
        .unwrap_or_default();
    let mut kept = 0;
    let mut cursor = since;
    for e in &events {
        cursor = cursor.max(e.at);
        let channel = store
            .messages
            .channel_name(e.channel)
            .ok()
            .flatten()
            .unwrap_or_else(|| e.channel.to_string());
        let post = excerpt(&e.post_text);
        let (verdict, content, importance) = match (&e.emoji, &e.reply) {
            (Some(emoji), _) if LIKED.contains(&emoji.as_str()) => (
                "liked",
                format!("People liked my ambient post in #{channel}: \"{post}\""),
                Importance::Medium,
            ),
            (Some(emoji), _) if DISLIKED.contains(&emoji.as_str()) => (
                "disliked",
                format!("People disliked my ambient post in #{channel} ({emoji}): \"{post}\""),
                Importance::High,
            ),
            (None, Some(reply)) => (
                "replied",
                format!(
                    "{} replied to my ambient post in #{channel} (\"{post}\"): \"{}\"",
                    e.who,
                    excerpt(reply)
                ),
                Importance::Medium,
            ),
            _ => continue,
        };
        let mut fact = crate::memory::manual(
            Scope::guild(e.guild),
            FactKind::Feedback,
            Some(importance),
            &content,
            None,
            now,
        );
        fact.subject = Some(format!("{verdict}: post {}", e.post));
        // Stopping before the cursor passes an event means the next pass harvests it again.
        if let Err(why) = memory.remember(fact, None) {
            return stopped(memory, kept, &why);
        }
        kept += 1;
        // After each event: a crash mid-harvest must not count one 👎 twice.
        if let Err(e) = store
            .garden
            .garden_set("feedback_cursor", &cursor.timestamp_millis())
        {
            return stopped(memory, kept, &e);
        }
    }
    kept
}

fn stopped(memory: &Memory, kept: usize, why: &dyn std::fmt::Display) -> usize {
    memory.journal.record(
        crate::vocab::journal::Entry::new(
            crate::vocab::journal::Kind::Error,
            "stopped keeping feedback: a write failed",
        )
        .reason(format!("{why}; the rest is harvested next pass")),
    );
    kept
}

/// A guild's feedback memories, newest first (what the scout reads).
pub(crate) fn history(store: &MemoryStore, guild: GuildId, limit: usize) -> Vec<Fact> {
    store
        .list_facts(&FactFilter {
            guild: Some(Some(guild)),
            kind: Some(FactKind::Feedback),
            limit: Some(limit),
            ..Default::default()
        })
        .unwrap_or_default()
}

/// Why a proposal looks like posts people rejected, if it does: two or more
/// rejections (counting reinforcements) of posts sharing 30 % or more of
/// their words with it.
pub(crate) fn rejected_before(
    store: &MemoryStore,
    guild: GuildId,
    proposal: &str,
) -> Option<String> {
    let words: BTreeSet<String> = keywords(proposal);
    let similar: Vec<Fact> = history(store, guild, 200)
        .into_iter()
        .filter(|f| {
            f.subject
                .as_deref()
                .is_some_and(|s| s.starts_with("disliked:"))
        })
        .filter(|f| overlap(&keywords(quoted(&f.content)), &words) >= 0.3)
        .collect();
    let strength: u32 = similar.iter().map(|f| f.strength).sum();
    (strength >= 2).then(|| {
        format!(
            "people rejected {strength} similar post(s) before: {}",
            similar
                .iter()
                .map(|f| f.content.as_str())
                .take(2)
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

/// The quoted post inside a feedback memory.
fn quoted(content: &str) -> &str {
    content
        .split_once('"')
        .map(|(_, rest)| rest.trim_end_matches('"'))
        .unwrap_or(content)
}
