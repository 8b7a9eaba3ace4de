//! Context assembly: everything the ambient-text prompt shows the model,
//! gathered cheaply from the store, in the seed's sections.
//!
//! CHANNELS summarises each eligible channel from its recent stored messages
//! (voice transcript rows included, labelled `[vc]`), when a person last
//! spoke there and when the bot last posted, and names the people shown
//! there who asked not to be pinged, so the model writes their names (speech
//! would turn a mention of them into their name anyway). YOUR FEED, FEED SOURCES,
//! MEMORY, BEHAVIOR GUIDANCE and RELEVANT BEHAVIORAL MEMORY come from
//! [`Sources`], which the discovery and memory features fill; until they
//! do, their sections are present and say so.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Stores;
use super::community;
use crate::executive::prompts::PromptLine;
use crate::ids::{ChannelId, GuildId, UserId};
use crate::settings::Settings;
use crate::store::PeopleStore;
use crate::store::boundaries::Boundary;
use crate::vocab::pending::{MediaDirective, PendingThought};
use crate::when::ago;

/// What the feed and memory features contribute to a prompt.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sources {
    /// `None` until discovery exists for this bot; `Some(vec![])` when it has nothing fresh.
    pub feed: Option<Vec<String>>,
    pub feed_sources: Option<Vec<String>>,
    /// `None` until memory exists.
    pub memory: Option<Vec<String>>,
    pub guidance: Vec<String>,
    pub behavioral: Vec<String>,
    /// This week's interests, read once per look: the feed's ranking and
    /// memory's topics use them before the prompt shows them.
    pub interests: community::Interests,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct PendingView {
    pub draft: String,
    pub channel: Option<String>,
    pub revision: u32,
    pub age_minutes: i64,
    pub last_reason: String,
    pub media: Option<MediaDirective>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct ChannelView {
    pub name: String,
    /// A reply channel: the seed's "vibe" bonus.
    pub vibe: bool,
    pub last_human: String,
    pub last_bot: String,
    pub lines: Vec<PromptLine>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct InitiativePrompt {
    pub bot_name: String,
    pub persona: String,
    pub guild_name: String,
    pub now: String,
    pub pending: Option<PendingView>,
    pub channels: Vec<ChannelView>,
    /// People in the channels shown who asked not to be pinged (`no-ping`).
    pub no_ping: Vec<String>,
    pub feed: Vec<String>,
    pub feed_note: String,
    pub feed_sources: Vec<String>,
    pub feed_sources_note: String,
    pub community: Vec<String>,
    pub memory: Vec<String>,
    pub memory_note: String,
    pub guidance: Vec<String>,
    pub behavioral: Vec<String>,
    pub pool: String,
    pub max_post_chars: u32,
    pub capabilities: Vec<String>,
}

pub(crate) struct Request<'a> {
    pub settings: &'a Settings,
    pub store: &'a Stores,
    pub guild: GuildId,
    pub pool: &'a [(ChannelId, String)],
    pub pending: Option<&'a PendingThought>,
    pub now: DateTime<Utc>,
    pub capabilities: Vec<String>,
    pub sources: Sources,
}

pub(crate) fn assemble(r: Request<'_>) -> InitiativePrompt {
    let s = r.settings;
    let (channels, people) = channels(&r);
    let no_ping = no_ping(&r.store.people, people);
    let community = community(&r.sources.interests);
    let pending = r.pending.map(|p| pending_view(&r, p));
    let (feed, feed_note) = section(
        r.sources.feed,
        "Nothing fresh in your feed right now.",
        "Discovery is not set up: there is no feed to draw on.",
    );
    let (feed_sources, feed_sources_note) = section(
        r.sources.feed_sources,
        "No sources configured.",
        "Discovery is not set up: no sources to report on.",
    );
    let (memory, memory_note) = section(
        r.sources.memory,
        "Nothing remembered about this server yet.",
        "Memory is not set up: you remember nothing beyond the channels above.",
    );
    InitiativePrompt {
        bot_name: s.bot.name.clone(),
        persona: s.bot.persona.clone(),
        guild_name: r
            .store
            .messages
            .guild_name(r.guild)
            .ok()
            .flatten()
            .unwrap_or_default(),
        now: r.now.format("%A %Y-%m-%d %H:%M UTC").to_string(),
        pending,
        channels,
        no_ping,
        feed,
        feed_note,
        feed_sources,
        feed_sources_note,
        community,
        memory,
        memory_note,
        guidance: r.sources.guidance,
        behavioral: r.sources.behavioral,
        pool: r
            .pool
            .iter()
            .map(|(_, n)| format!("#{n}"))
            .collect::<Vec<_>>()
            .join(", "),
        max_post_chars: s.initiative.text.max_post_chars,
        capabilities: r.capabilities,
    }
}

/// CHANNELS: each channel of the pool with its latest lines (the lookback
/// shared among them, at least five each), and the people seen in them.
fn channels(r: &Request<'_>) -> (Vec<ChannelView>, BTreeMap<UserId, String>) {
    let s = r.settings;
    let per_channel = (s.initiative.text.lookback_messages as usize / r.pool.len().max(1)).max(5);
    let mut people: BTreeMap<UserId, String> = BTreeMap::new();
    let channels = r
        .pool
        .iter()
        .map(|(id, name)| {
            let lines = r
                .store
                .messages
                .recent_messages(*id, per_channel)
                .unwrap_or_default();
            people.extend(
                lines
                    .iter()
                    .filter(|m| !m.is_self && !m.author_is_bot)
                    .map(|m| (m.author_id, m.author_name.clone())),
            );
            let (bot, human) = r
                .store
                .messages
                .channel_activity(*id)
                .unwrap_or((None, None));
            ChannelView {
                name: name.clone(),
                vibe: s.permissions.replies.reply_channel_ids.contains(id),
                last_human: human.map_or("nobody yet".into(), |t| ago(t, r.now)),
                last_bot: bot.map_or("never".into(), |t| ago(t, r.now)),
                lines: lines.iter().map(PromptLine::from).collect(),
            }
        })
        .collect();
    (channels, people)
}

/// The names of the people shown who asked not to be pinged, sorted, once each.
fn no_ping(store: &PeopleStore, people: BTreeMap<UserId, String>) -> Vec<String> {
    let ids: Vec<UserId> = people.keys().copied().collect();
    let unpingable = store
        .with_boundary(&ids, Boundary::NoPing)
        .unwrap_or_default();
    let mut no_ping: Vec<String> = people
        .into_iter()
        .filter(|(id, _)| unpingable.contains(id))
        .map(|(_, name)| name)
        .collect();
    no_ping.sort();
    no_ping.dedup();
    no_ping
}

/// COMMUNITY: this week's topics, and the busiest channels when there are topics.
fn community(interests: &community::Interests) -> Vec<String> {
    let mut community: Vec<String> = interests
        .topics
        .iter()
        .map(|(w, n)| format!("{w} ({n} messages)"))
        .collect();
    if !interests.busiest_channels.is_empty() && !community.is_empty() {
        let busiest: Vec<String> = interests
            .busiest_channels
            .iter()
            .map(|(c, n)| format!("#{c} ({n})"))
            .collect();
        community.push(format!(
            "busiest channels this week: {}",
            busiest.join(", ")
        ));
    }
    community
}

/// PENDING THOUGHT: the held draft, with its channel by name (from the
/// pool, else the store) and how old it is.
fn pending_view(r: &Request<'_>, p: &PendingThought) -> PendingView {
    PendingView {
        draft: p.draft.clone(),
        channel: p
            .channel
            .and_then(|c| {
                r.pool
                    .iter()
                    .find(|(id, _)| *id == c)
                    .map(|(_, n)| n.clone())
            })
            .or_else(|| {
                p.channel
                    .and_then(|c| r.store.messages.channel_name(c).ok().flatten())
            }),
        revision: p.revision,
        age_minutes: (r.now - p.created_at).num_minutes(),
        last_reason: p.last_reason.clone(),
        media: p.media.clone(),
    }
}

/// A section from a source and the note that stands in when it is empty
/// (`empty`) or when the feature behind it does not exist yet (`absent`).
fn section(items: Option<Vec<String>>, empty: &str, absent: &str) -> (Vec<String>, String) {
    match items {
        Some(items) if !items.is_empty() => (items, String::new()),
        Some(_) => (Vec::new(), empty.to_string()),
        None => (Vec::new(), absent.to_string()),
    }
}
