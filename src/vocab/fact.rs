//! What a fact is: its kind, importance and scope.
//!
//! Scopes map the seed's levels onto Discord: the seed's *project* is a
//! guild, its *task/branch* is a channel or thread, and there is a *user*
//! scope for what people tell the bot about themselves. Every fact belongs
//! to exactly one guild (or, for a direct message, to no guild and the one
//! user), and nothing ever reads a fact across that line.

use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{ChannelId, GuildId, MessageId, UserId};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FactKind {
    Decision,
    Fact,
    Preference,
    ErrorResolution,
    TaskUpdate,
    SessionSummary,
    BehaviorGuidance,
    /// The bot's own feedback memories: how people received what it did.
    Feedback,
}

impl FactKind {
    pub(crate) const ALL: [FactKind; 8] = [
        FactKind::Decision,
        FactKind::Fact,
        FactKind::Preference,
        FactKind::ErrorResolution,
        FactKind::TaskUpdate,
        FactKind::SessionSummary,
        FactKind::BehaviorGuidance,
        FactKind::Feedback,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FactKind::Decision => "decision",
            FactKind::Fact => "fact",
            FactKind::Preference => "preference",
            FactKind::ErrorResolution => "error-resolution",
            FactKind::TaskUpdate => "task-update",
            FactKind::SessionSummary => "session-summary",
            FactKind::BehaviorGuidance => "behavior-guidance",
            FactKind::Feedback => "feedback",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<FactKind, FactParseError> {
        FactKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| FactParseError::UnknownKind(s.to_string()))
    }

    /// Every type's word, for messages that list what would be valid.
    fn names() -> String {
        let valid: Vec<&str> = FactKind::ALL.iter().map(|k| k.as_str()).collect();
        valid.join(", ")
    }

    /// The importance a fact of this kind gets when nobody says otherwise
    /// (the seed: `remember` stores a decision, high importance by default).
    pub(crate) fn default_importance(self) -> Importance {
        match self {
            FactKind::Decision | FactKind::BehaviorGuidance => Importance::High,
            FactKind::SessionSummary | FactKind::TaskUpdate => Importance::Low,
            _ => Importance::Medium,
        }
    }
}

/// A memory type or importance given as a word that is not one of ours
/// (from a command, a reflex file, the CLI).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FactParseError {
    /// The word as given.
    #[error("{0:?} is not a memory type; use one of {valid}", valid = FactKind::names())]
    UnknownKind(String),
    /// The word, trimmed and lowercased.
    #[error("{0:?} is not an importance; use high, medium or low")]
    UnknownImportance(String),
}

impl fmt::Display for FactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Importance {
    Low,
    Medium,
    High,
}

impl Importance {
    pub fn as_str(self) -> &'static str {
        match self {
            Importance::Low => "low",
            Importance::Medium => "medium",
            Importance::High => "high",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Importance, FactParseError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(Importance::Low),
            "medium" => Ok(Importance::Medium),
            "high" => Ok(Importance::High),
            other => Err(FactParseError::UnknownImportance(other.to_string())),
        }
    }

    /// The search weight: high importance counts half again (the seed's 1.5×).
    pub(crate) fn weight(self) -> f64 {
        if self == Importance::High { 1.5 } else { 1.0 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeKind {
    Guild,
    Channel,
    User,
}

impl ScopeKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Guild => "guild",
            ScopeKind::Channel => "channel",
            ScopeKind::User => "user",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<ScopeKind> {
        match s {
            "guild" => Some(ScopeKind::Guild),
            "channel" => Some(ScopeKind::Channel),
            "user" => Some(ScopeKind::User),
            _ => None,
        }
    }
}

/// Where a fact lives. `guild` is `None` only for facts learned in a DM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    pub kind: ScopeKind,
    pub guild: Option<GuildId>,
    pub channel: Option<ChannelId>,
    pub user: Option<UserId>,
}

impl Scope {
    pub fn guild(g: GuildId) -> Self {
        Self {
            kind: ScopeKind::Guild,
            guild: Some(g),
            channel: None,
            user: None,
        }
    }

    pub fn channel(g: Option<GuildId>, c: ChannelId) -> Self {
        Self {
            kind: ScopeKind::Channel,
            guild: g,
            channel: Some(c),
            user: None,
        }
    }

    pub fn user(g: Option<GuildId>, u: UserId) -> Self {
        Self {
            kind: ScopeKind::User,
            guild: g,
            channel: None,
            user: Some(u),
        }
    }
}

/// One remembered thing.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    /// 32 hex digits; the first 8 are usually enough to name it.
    pub id: String,
    pub scope: Scope,
    pub kind: FactKind,
    pub importance: Importance,
    /// A few words naming what it is about ("auth", "ada's editor"), when known.
    pub subject: Option<String>,
    pub content: String,
    /// The messages it was learned from.
    pub sources: Vec<MessageId>,
    pub author: Option<(UserId, String)>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Last stored, reinforced or retrieved: what the TTL counts from.
    pub last_seen_at: DateTime<Utc>,
    pub strength: u32,
    pub confidence: f64,
    pub superseded_by: Option<String>,
    pub archived_at: Option<DateTime<Utc>>,
    /// Which message reinforced it, and when.
    pub reinforcements: Vec<(Option<MessageId>, DateTime<Utc>)>,
}

impl Fact {
    pub fn new(
        scope: Scope,
        kind: FactKind,
        importance: Importance,
        content: impl Into<String>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: uuid::Uuid::new_v4().simple().to_string(),
            scope,
            kind,
            importance,
            subject: None,
            content: content.into(),
            sources: Vec::new(),
            author: None,
            created_at: now,
            updated_at: now,
            last_seen_at: now,
            strength: 1,
            confidence: 1.0,
            superseded_by: None,
            archived_at: None,
            reinforcements: Vec::new(),
        }
    }

    pub(crate) fn short_id(&self) -> &str {
        &self.id[..8.min(self.id.len())]
    }

    pub fn is_active(&self) -> bool {
        self.superseded_by.is_none() && self.archived_at.is_none()
    }
}
