//! Export and import: memory as one JSON document.
//!
//! Import is all or nothing: the whole file is parsed and checked before
//! anything is written, a malformed file is rejected with the location of
//! its first error, and facts whose ids already exist are skipped.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::vocab::fact::{Fact, FactKind, Importance, Scope, ScopeKind};

pub(crate) const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    pub version: u32,
    pub exported_at: DateTime<Utc>,
    pub facts: Vec<PortableFact>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortableFact {
    pub id: String,
    pub guild_id: Option<GuildId>,
    pub scope: ScopeKind,
    pub channel_id: Option<ChannelId>,
    pub user_id: Option<UserId>,
    pub kind: FactKind,
    pub importance: Importance,
    pub subject: Option<String>,
    pub content: String,
    pub sources: Vec<MessageId>,
    pub author_id: Option<UserId>,
    pub author_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    pub strength: u32,
    pub confidence: f64,
    pub superseded_by: Option<String>,
    pub archived_at: Option<DateTime<Utc>>,
    pub reinforcements: Vec<PortableReinforcement>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortableReinforcement {
    pub message_id: Option<MessageId>,
    pub at: DateTime<Utc>,
}

impl From<&Fact> for PortableFact {
    fn from(f: &Fact) -> Self {
        Self {
            id: f.id.clone(),
            guild_id: f.scope.guild,
            scope: f.scope.kind,
            channel_id: f.scope.channel,
            user_id: f.scope.user,
            kind: f.kind,
            importance: f.importance,
            subject: f.subject.clone(),
            content: f.content.clone(),
            sources: f.sources.clone(),
            author_id: f.author.as_ref().map(|(id, _)| *id),
            author_name: f.author.as_ref().map(|(_, n)| n.clone()),
            created_at: f.created_at,
            updated_at: f.updated_at,
            last_seen_at: f.last_seen_at,
            strength: f.strength,
            confidence: f.confidence,
            superseded_by: f.superseded_by.clone(),
            archived_at: f.archived_at,
            reinforcements: f
                .reinforcements
                .iter()
                .map(|(m, at)| PortableReinforcement {
                    message_id: *m,
                    at: *at,
                })
                .collect(),
        }
    }
}

impl PortableFact {
    fn into_fact(self) -> Fact {
        Fact {
            id: self.id,
            scope: Scope {
                kind: self.scope,
                guild: self.guild_id,
                channel: self.channel_id,
                user: self.user_id,
            },
            kind: self.kind,
            importance: self.importance,
            subject: self.subject,
            content: self.content,
            sources: self.sources,
            author: self.author_id.zip(self.author_name),
            created_at: self.created_at,
            updated_at: self.updated_at,
            last_seen_at: self.last_seen_at,
            strength: self.strength,
            confidence: self.confidence,
            superseded_by: self.superseded_by,
            archived_at: self.archived_at,
            reinforcements: self
                .reinforcements
                .into_iter()
                .map(|r| (r.message_id, r.at))
                .collect(),
        }
    }
}

pub fn export(facts: &[Fact], now: DateTime<Utc>) -> Document {
    Document {
        version: FORMAT_VERSION,
        exported_at: now,
        facts: facts.iter().map(PortableFact::from).collect(),
    }
}

/// Why an export cannot be imported; the text names the first problem's place.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// `reason` is serde_json's explanation without its own position.
    #[error("line {line}, column {column}: {reason}")]
    Json {
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("version {0} is not supported (this ambient reads version {FORMAT_VERSION})")]
    Version(u32),
    /// `index` is the fact's place in `facts`.
    #[error("facts[{index}] (id {id:?}): {problem}")]
    Fact {
        index: usize,
        id: String,
        problem: FactProblem,
    },
}

/// What is wrong with one imported fact.
#[derive(Debug, thiserror::Error)]
pub enum FactProblem {
    #[error("id must be at least 8 hex digits")]
    BadId,
    #[error("content is empty")]
    EmptyContent,
    #[error("a channel-scoped fact needs channel_id")]
    NoChannel,
    #[error("a user-scoped fact needs user_id")]
    NoUser,
    #[error("confidence must be between 0 and 1, got {0}")]
    Confidence(f64),
}

/// Parses and checks a whole export; the error names the first problem's place.
pub fn parse(text: &str) -> Result<Vec<Fact>, ImportError> {
    let doc: Document = serde_json::from_str(text).map_err(|e| ImportError::Json {
        line: e.line(),
        column: e.column(),
        reason: e
            .to_string()
            .split(" at line")
            .next()
            .unwrap_or("")
            .to_string(),
    })?;
    if doc.version != FORMAT_VERSION {
        return Err(ImportError::Version(doc.version));
    }
    for (index, f) in doc.facts.iter().enumerate() {
        let problem = if f.id.len() < 8 || !f.id.chars().all(|c| c.is_ascii_hexdigit()) {
            Some(FactProblem::BadId)
        } else if f.content.trim().is_empty() {
            Some(FactProblem::EmptyContent)
        } else if f.scope == ScopeKind::Channel && f.channel_id.is_none() {
            Some(FactProblem::NoChannel)
        } else if f.scope == ScopeKind::User && f.user_id.is_none() {
            Some(FactProblem::NoUser)
        } else if !(0.0..=1.0).contains(&f.confidence) {
            Some(FactProblem::Confidence(f.confidence))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(ImportError::Fact {
                index,
                id: f.id.clone(),
                problem,
            });
        }
    }
    Ok(doc.facts.into_iter().map(PortableFact::into_fact).collect())
}
