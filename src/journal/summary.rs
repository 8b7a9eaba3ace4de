//! "What did you do today?": the journal retold for people.
//!
//! Routing chatter (route, outcome, gate, error, system) is left out; what
//! remains is what the bot actually did — answers, posts, quiet decisions,
//! reflexes, tasks, memory and garden work — each with its reason, in the
//! guild's timezone. Used by the `journal_summary` reflex action and the
//! executive's `journal_search` tool.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::Journal;
use crate::ids::{ChannelId, GuildId};
use crate::settings::Settings;
use crate::store::MessageStore;
use crate::vocab::journal::{Entry, Filter, Kind};

/// The kinds of entry that say what the bot did, rather than how it routed.
/// Memory and garden work are left out: their entries quote what was
/// remembered, which belongs to `/memory`, not to an answer anyone in the
/// channel can read.
pub(crate) const DEEDS: &[Kind] = &[
    Kind::Reply,
    Kind::InitiativePost,
    Kind::InitiativeSkip,
    Kind::Reflex,
    Kind::Impulse,
    Kind::Settings,
    Kind::Voice,
];

/// Who will read the answer, and so which entries it may mention: in a DM,
/// that DM only; in a server, what concerns the server as a whole, the
/// channel asked in, and the channels the bot talks in where everyone can
/// see (its discovery and reply channels) — never another server, and not
/// what happened in a channel the asker may not see. Memory and garden
/// entries count only with a channel: without one they may quote any channel.
#[derive(Clone, Debug)]
pub struct Audience {
    pub guild: Option<GuildId>,
    pub channel: ChannelId,
    pub public: Vec<ChannelId>,
}

impl Audience {
    pub(crate) fn new(settings: &Settings, guild: Option<GuildId>, channel: ChannelId) -> Self {
        let r = &settings.permissions.replies;
        let public = r
            .discovery_channel_ids
            .iter()
            .chain(&r.reply_channel_ids)
            .copied()
            .collect();
        Self {
            guild,
            channel,
            public,
        }
    }

    /// The journal filter that keeps to this audience's server (or DM).
    pub(crate) fn filter(
        &self,
        since: DateTime<Utc>,
        kinds: Vec<Kind>,
        text: Option<String>,
    ) -> Filter {
        Filter {
            since: Some(since),
            kinds,
            guild: self.guild,
            // Channel ids are unique across Discord: in a DM the channel is the whole scope.
            channel: self.guild.is_none().then_some(self.channel),
            text,
            // Read generously; entries for other channels are dropped below.
            limit: Some(500),
            ..Default::default()
        }
    }

    pub(crate) fn admits(&self, e: &Entry) -> bool {
        !e.may_quote_any_channel() && self.sees(e.guild, e.channel)
    }

    /// Whether something that happened in `guild` (and `channel`, if in one) may be told.
    pub(crate) fn sees(&self, guild: Option<GuildId>, channel: Option<ChannelId>) -> bool {
        match (self.guild, channel) {
            (None, c) => c == Some(self.channel),
            (Some(g), _) if guild != Some(g) => false,
            (Some(_), None) => true,
            (Some(_), Some(c)) => c == self.channel || self.public.contains(&c),
        }
    }

    /// Only what anyone in the bot's open channels could see (no asking channel).
    pub fn public(settings: &Settings, guild: GuildId) -> Self {
        Self::new(settings, Some(guild), ChannelId(0))
    }

    /// The newest `limit` entries this audience may read, oldest first.
    pub(crate) fn read(&self, journal: &Journal, filter: &Filter, limit: usize) -> Vec<Entry> {
        let mut entries: Vec<Entry> = journal
            .query(filter)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| self.admits(e))
            .collect();
        let skip = entries.len().saturating_sub(limit);
        entries.drain(..skip);
        entries
    }
}

/// One line per entry: `14:05 #general  answered alice — a mention`.
pub(crate) fn line(e: &Entry, store: &MessageStore, tz: Tz) -> String {
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

/// What the bot did since `since`, as this audience may hear it: newest `limit` entries, oldest first.
pub(crate) fn what_i_did(
    journal: &Journal,
    store: &MessageStore,
    audience: &Audience,
    since: DateTime<Utc>,
    tz: Tz,
    limit: usize,
) -> Vec<String> {
    let filter = audience.filter(since, DEEDS.to_vec(), None);
    audience
        .read(journal, &filter, limit)
        .iter()
        .map(|e| line(e, store, tz))
        .collect()
}

/// Midnight today in `tz`, as an instant.
pub(crate) fn start_of_today(now: DateTime<Utc>, tz: Tz) -> DateTime<Utc> {
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
pub(crate) fn parse_window(
    spec: &str,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<DateTime<Utc>, crate::when::NotAWindow> {
    match spec.trim() {
        "" | "today" => Ok(start_of_today(now, tz)),
        "yesterday" => Ok(start_of_today(now, tz) - chrono::Duration::days(1)),
        other => crate::when::parse_since(other, now),
    }
}
