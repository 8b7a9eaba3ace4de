//! The journal: an append-only record of every decision and its reason.
//!
//! Every routing decision, reply, gate, post, skip, reflex and garden step
//! lands here with where it happened, why, and ids linking it to messages
//! and model calls. It is how the bot answers "what did you do today, and
//! why?" (`ambient journal`, `/ambient why`), and how an operator audits it.

pub mod stream;
pub mod summary;
pub mod tools;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::clock::SharedClock;
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::store::{Store, StoreError};

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
    pub const ALL: &'static [Kind] = &[
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

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// Parses a comma-separated list such as `route,reply`, naming the bad one.
    pub fn parse_list(s: &str) -> Result<Vec<Kind>, UnknownKind> {
        s.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| Kind::parse(t).ok_or_else(|| UnknownKind { name: t.to_string() }))
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
pub struct UnknownKind {
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
    pub fn may_quote_any_channel(&self) -> bool {
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

    pub fn model_call(mut self, id: i64) -> Self {
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

/// Writes and reads the journal.
#[derive(Clone)]
pub struct Journal {
    store: Store,
    clock: SharedClock,
}

impl Journal {
    pub fn new(store: Store, clock: SharedClock) -> Self {
        Self { store, clock }
    }

    /// Appends an entry stamped with the current time. A failure to write is
    /// logged, not propagated: losing a journal line must not stop a reply.
    pub fn record(&self, mut entry: Entry) -> Option<i64> {
        entry.at = self.clock.now();
        tracing::debug!(
            kind = entry.kind.as_str(),
            guild = ?entry.guild,
            channel = ?entry.channel,
            reason = %entry.reason,
            "{}",
            entry.summary
        );
        stream::record_entry(&self.store, &entry);
        match self.store.journal_append(&entry) {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::error!(error = %e, summary = %entry.summary, "could not write to the journal");
                None
            }
        }
    }

    pub fn query(&self, filter: &Filter) -> Result<Vec<Entry>, StoreError> {
        self.store.journal_query(filter)
    }
}

/// One entry as a line of text, for the CLI and the console.
pub fn format_line(e: &Entry, channel_name: Option<&str>) -> String {
    let place = match (channel_name, e.channel) {
        (Some(name), _) => format!("#{name}"),
        (None, Some(c)) => format!("#{c}"),
        (None, None) => e
            .guild
            .map(|g| format!("guild {g}"))
            .unwrap_or_else(|| "-".into()),
    };
    let mut line = format!(
        "{}  {:<15} {:<14} {}",
        e.at.format("%Y-%m-%d %H:%M:%S"),
        e.kind.as_str(),
        place,
        e.summary
    );
    if let Some(s) = e.salience {
        line.push_str(&format!(" (salience {s:.2})"));
    }
    if !e.reason.is_empty() {
        line.push_str(" — ");
        line.push_str(&e.reason);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn entries_are_queryable_by_window_type_and_place() {
        let clock = ManualClock::at_test_epoch();
        let journal = Journal::new(Store::open_in_memory().unwrap(), clock.clone());
        journal.record(Entry::new(Kind::Route, "old").place(Some(GuildId(1)), Some(ChannelId(5))));
        clock.advance(chrono::Duration::hours(2));
        let t = clock.now();
        journal.record(
            Entry::new(Kind::Route, "new route")
                .place(Some(GuildId(1)), Some(ChannelId(5)))
                .salience(0.9)
                .reason("addressed"),
        );
        journal.record(
            Entry::new(Kind::Reply, "said hi")
                .place(Some(GuildId(2)), Some(ChannelId(6)))
                .message(MessageId(77)),
        );

        let recent = journal
            .query(&Filter {
                since: Some(t),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(
            recent
                .iter()
                .map(|e| e.summary.as_str())
                .collect::<Vec<_>>(),
            vec!["new route", "said hi"]
        );
        let routes = journal
            .query(&Filter {
                kinds: vec![Kind::Route],
                ..Default::default()
            })
            .unwrap();
        assert_eq!(routes.len(), 2);
        let g2 = journal
            .query(&Filter {
                guild: Some(GuildId(2)),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(g2.len(), 1);
        assert_eq!(g2[0].message, Some(MessageId(77)));
        let by_text = journal
            .query(&Filter {
                text: Some("addressed".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(by_text.len(), 1);
        let newest = journal
            .query(&Filter {
                limit: Some(1),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(newest[0].summary, "said hi");

        let line = format_line(&recent[0], Some("general"));
        assert!(
            line.contains("route")
                && line.contains("#general")
                && line.contains("(salience 0.90) — addressed"),
            "{line}"
        );
    }

    #[test]
    fn type_lists_name_the_bad_type() {
        assert_eq!(
            Kind::parse_list("route, reply").unwrap(),
            vec![Kind::Route, Kind::Reply]
        );
        let err = Kind::parse_list("route,rout").unwrap_err().to_string();
        assert!(
            err.contains("\"rout\"") && err.contains("initiative_post"),
            "{err}"
        );
    }
}
