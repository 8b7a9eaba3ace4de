//! A journal entry, its kind, and which entries to read.
//!
//! The journal (`crate::journal`) writes them, the store keeps them, and
//! nearly every layer names a kind: so the nouns live here, below the store.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::ids::{ChannelId, GuildId, MessageId};

/// What kind of decision an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Attention routed an input to a handler, or let it pass.
    Route,
    /// A handler finished, declined, escalated or failed.
    Outcome,
    /// The bot answered someone.
    Reply,
    /// An initiative gate stopped a guild before any model call.
    Gate,
    /// The seed's `initiative_post`: an ambient thought surfaced.
    InitiativePost,
    /// The seed's `initiative_skip`: a quiet decision or pending-thought lifecycle event.
    InitiativeSkip,
    Reflex,
    Impulse,
    Memory,
    Garden,
    Discovery,
    Settings,
    Voice,
    Error,
    System,
}

impl Kind {
    pub(crate) const ALL: &'static [Kind] = &[
        Kind::Route,
        Kind::Outcome,
        Kind::Reply,
        Kind::Gate,
        Kind::InitiativePost,
        Kind::InitiativeSkip,
        Kind::Reflex,
        Kind::Impulse,
        Kind::Memory,
        Kind::Garden,
        Kind::Discovery,
        Kind::Settings,
        Kind::Voice,
        Kind::Error,
        Kind::System,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Route => "route",
            Kind::Outcome => "outcome",
            Kind::Reply => "reply",
            Kind::Gate => "gate",
            Kind::InitiativePost => "initiative_post",
            Kind::InitiativeSkip => "initiative_skip",
            Kind::Reflex => "reflex",
            Kind::Impulse => "impulse",
            Kind::Memory => "memory",
            Kind::Garden => "garden",
            Kind::Discovery => "discovery",
            Kind::Settings => "settings",
            Kind::Voice => "voice",
            Kind::Error => "error",
            Kind::System => "system",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// Parses a comma-separated list such as `route,reply`, naming the bad one.
    pub(crate) fn parse_list(s: &str) -> Result<Vec<Kind>, UnknownKind> {
        s.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                Kind::parse(t).ok_or_else(|| UnknownKind {
                    name: t.to_string(),
                })
            })
            .collect()
    }

    /// Every kind's name, comma-separated: what a person may type.
    fn valid_list() -> String {
        let valid: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        valid.join(", ")
    }
}

/// A journal type nobody knows, as typed; the message lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown journal type {name:?}; valid types: {}", Kind::valid_list())]
pub(crate) struct UnknownKind {
    pub name: String,
}

/// One journal line.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Assigned by the store; 0 before the entry is written.
    pub id: i64,
    pub at: DateTime<Utc>,
    pub kind: Kind,
    pub guild: Option<GuildId>,
    pub channel: Option<ChannelId>,
    pub message: Option<MessageId>,
    pub model_call: Option<i64>,
    /// What happened, in a few words.
    pub summary: String,
    /// Why.
    pub reason: String,
    pub salience: Option<f64>,
    /// Anything else worth keeping, as JSON.
    pub data: Value,
}

impl Entry {
    /// A memory or garden entry with no channel can quote what was remembered
    /// anywhere in the server (a merge, a forgotten fact): no audience can be
    /// told apart for it, so no channel's summary or stream may show it.
    pub(crate) fn may_quote_any_channel(&self) -> bool {
        matches!(self.kind, Kind::Memory | Kind::Garden) && self.channel.is_none()
    }

    pub fn new(kind: Kind, summary: impl Into<String>) -> Self {
        Self {
            id: 0,
            at: DateTime::<Utc>::MIN_UTC,
            kind,
            guild: None,
            channel: None,
            message: None,
            model_call: None,
            summary: summary.into(),
            reason: String::new(),
            salience: None,
            data: Value::Object(Default::default()),
        }
    }

    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }

    pub fn place(mut self, guild: Option<GuildId>, channel: Option<ChannelId>) -> Self {
        self.guild = guild;
        self.channel = channel;
        self
    }

    pub fn guild(mut self, guild: Option<GuildId>) -> Self {
        self.guild = guild;
        self
    }

    pub fn message(mut self, id: MessageId) -> Self {
        self.message = Some(id);
        self
    }

    pub(crate) fn model_call(mut self, id: i64) -> Self {
        self.model_call = Some(id);
        self
    }

    pub fn salience(mut self, s: f64) -> Self {
        self.salience = Some(s);
        self
    }

    pub fn data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }
}

/// Which entries to read.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub kinds: Vec<Kind>,
    pub guild: Option<GuildId>,
    pub channel: Option<ChannelId>,
    pub message: Option<MessageId>,
    /// Substring of the summary or reason.
    pub text: Option<String>,
    /// Keep only the newest N.
    pub limit: Option<usize>,
}
