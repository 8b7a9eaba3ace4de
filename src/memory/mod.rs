//! Memory: durable facts per guild, channel and user (seed: memory.md).
//!
//! - `fact`: kinds, importance, scopes
//! - `keywords`: the supersede rule's keyword overlap
//! - `search`: FTS5 + recency + importance, confined to one guild
//! - `extract`: turning conversations into facts with the `extract` model role
//! - `compact`: keeping a scope under its threshold
//! - `portable`: export and import
//! - `tools`: `memory_search` for the executive's tool loops
//!
//! Storing a fact first compares it with the active facts of the same kind
//! in the same scope: a near-duplicate (keyword Jaccard ≥ 0.8) reinforces the
//! old fact (strength, breadcrumb), whatever its kind; a *decision* that
//! repeats more than `memory.supersedeThreshold` of an earlier decision's
//! keywords supersedes it (seed: "Supersede Detection"); anything else is new
//! — two facts that merely share words ("Bob lives in Berlin", "Bob works in
//! Berlin") are both kept.

use crate::store::{MemoryStore, MessageStore, PeopleStore};
pub mod compact;
mod erased;
pub mod extract;
use crate::vocab::fact;
pub(crate) mod keywords;
pub mod portable;
pub mod search;
pub(crate) mod tools;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::backoff::Backoff;
use crate::clock::SharedClock;
use crate::executive::prompts::PromptError;
use crate::executive::{ExecError, Executive};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::journal::Journal;
use crate::settings::SettingsService;
use crate::store::StoreError;
use crate::store::memory::FactFilter;
use crate::vocab::journal::{Entry, Kind};
use fact::{Fact, FactKind, Importance, Scope, ScopeKind};
use search::{Reader, Scored};

/// How often the maintenance loop runs (extraction, compaction, expiry).
const MAINTAIN_EVERY: Duration = Duration::from_secs(60);

/// Jaccard similarity at or above which a new fact is "the same thing again".
const NEAR_DUPLICATE: f64 = 0.8;

/// Why a fact could not be stored or forgotten; the text is what the
/// person who asked reads.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("there is nothing to remember: the text is empty")]
    Empty,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no memory with an id starting {0:?} here")]
    NoSuchPrefix(String),
    /// `ids` are the short ids of the facts the prefix matched.
    #[error(
        "{count} memories start with {prefix:?}; give more of the id ({list})",
        count = .ids.len(),
        list = .ids.join(", ")
    )]
    Ambiguous { prefix: String, ids: Vec<String> },
    #[error("only members with Manage Server, or the person it is about, can forget that")]
    NotYours,
    #[error("no memory with the id {0:?} (already forgotten?)")]
    NoSuchId(String),
    #[error("I could not forget you: {0}; nothing was changed")]
    ForgetPerson(StoreError),
}

/// Why asking the `extract` role (for facts, or for a compaction summary)
/// gave nothing usable; the journal line shows the text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AskError {
    /// The executive's words for why the role has no model.
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Model(#[from] ExecError),
    /// The model's final call did not fit its schema (the executive's explanation).
    #[error("{0}")]
    BadAnswer(String),
    /// The turn ended without the final call; the outcome, for the journal.
    #[error("no extraction: {0}")]
    NoExtraction(String),
    #[error("no summary: {0}")]
    NoSummary(String),
    #[error("the summary was empty")]
    EmptySummary,
    /// A read the work depends on failed; nothing was asked or stored.
    #[error("store read failed: {what}: {source}")]
    StoreRead {
        what: &'static str,
        source: StoreError,
    },
}

/// What storing a fact did.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // made once per fact stored and read at once; a Box would only add noise
pub enum Stored {
    New(Fact),
    /// An existing fact was confirmed instead of duplicated.
    Reinforced(Fact),
    /// The new fact replaced an old one, which is kept but inactive.
    Superseded {
        new: Fact,
        old: Fact,
    },
}

impl Stored {
    pub fn fact(&self) -> &Fact {
        match self {
            Stored::New(f) | Stored::Reinforced(f) | Stored::Superseded { new: f, .. } => f,
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Stored::New(f) => format!(
                "Remembered ({} {}, id {}).",
                f.importance.as_str(),
                f.kind,
                f.short_id()
            ),
            Stored::Reinforced(f) => format!(
                "I already knew that; it is now stronger (id {}, strength {}).",
                f.short_id(),
                f.strength
            ),
            Stored::Superseded { new, old } => format!(
                "Remembered (id {}); it replaces an earlier {}: \"{}\".",
                new.short_id(),
                old.kind,
                old.content
            ),
        }
    }
}

pub struct Memory {
    pub(crate) store: Stores,
    pub(crate) settings: Arc<SettingsService>,
    pub(crate) journal: Journal,
    pub(crate) clock: SharedClock,
    pub(crate) executive: Arc<Executive>,
    /// Channels (or a model) whose extraction failed, waiting before the next try.
    pub(crate) extraction_backoff: Backoff<extract::Holdback>,
}

impl Memory {
    pub fn new(
        store: Stores,
        settings: Arc<SettingsService>,
        journal: Journal,
        clock: SharedClock,
        executive: Arc<Executive>,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            settings,
            journal,
            clock,
            executive,
            extraction_backoff: Backoff::new(
                chrono::Duration::minutes(1),
                chrono::Duration::minutes(extract::BACKOFF_CEILING_MINUTES),
            ),
        })
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Stores a fact, reinforcing or superseding a similar one of the same kind and scope.
    pub fn remember(
        &self,
        mut new: Fact,
        reinforced_by: Option<MessageId>,
    ) -> Result<Stored, MemoryError> {
        let settings = self.settings.for_guild(new.scope.guild);
        let threshold = settings.memory.supersede_threshold;
        let now = self.clock.now();
        new.content = new.content.trim().to_string();
        if new.content.is_empty() {
            return Err(MemoryError::Empty);
        }
        let (duplicate, replaced) = self.similar(&new, threshold)?;
        let stored = match (duplicate, replaced) {
            (Some(mut old), _) => {
                old.strength += 1;
                old.confidence = (old.confidence + 0.1).min(1.0);
                old.importance = old.importance.max(new.importance);
                old.updated_at = now;
                old.last_seen_at = now;
                old.sources.extend(new.sources.iter().copied());
                self.store.memory.save_facts(&[], &[&old])?;
                self.store.memory.add_reinforcement(
                    &old.id,
                    reinforced_by.or(new.sources.first().copied()),
                    now,
                )?;
                Stored::Reinforced(old)
            }
            (None, Some(mut old)) => {
                old.superseded_by = Some(new.id.clone());
                old.updated_at = now;
                self.store.memory.save_facts(&[&new], &[&old])?;
                Stored::Superseded { new, old }
            }
            (None, None) => {
                self.store.memory.insert_fact(&new)?;
                Stored::New(new)
            }
        };
        let f = stored.fact();
        let (summary, reason) = match &stored {
            Stored::New(_) => ("remembered", String::new()),
            Stored::Reinforced(_) => ("reinforced a memory", format!("strength {}", f.strength)),
            Stored::Superseded { old, .. } => (
                "superseded a memory",
                format!("replaces \"{}\"", old.content),
            ),
        };
        self.journal.record(
            Entry::new(
                Kind::Memory,
                format!("{summary}: [{}] {}", f.kind, f.content),
            )
            .place(f.scope.guild, f.scope.channel)
            .reason(reason)
            .data(serde_json::json!({"fact": f.id})),
        );
        Ok(stored)
    }

    /// The active fact of the same kind, scope (and subject) that `new`
    /// repeats (keyword Jaccard ≥ `NEAR_DUPLICATE`), else, for a decision,
    /// the earlier decision it replaces (more than `threshold` of its keywords).
    fn similar(
        &self,
        new: &Fact,
        threshold: f64,
    ) -> Result<(Option<Fact>, Option<Fact>), StoreError> {
        let new_kw = keywords::keywords(&new.content);
        let candidates: Vec<(f64, f64, Fact)> = self
            .store
            .memory
            .facts_in_scope(&new.scope, Some(new.kind))?
            .into_iter()
            .filter(|old| match (&old.subject, &new.subject) {
                (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                _ => true,
            })
            .map(|old| {
                let old_kw = keywords::keywords(&old.content);
                (
                    keywords::overlap(&old_kw, &new_kw),
                    keywords::jaccard(&old_kw, &new_kw),
                    old,
                )
            })
            .collect();
        let duplicate = candidates
            .iter()
            .filter(|(_, similarity, _)| *similarity >= NEAR_DUPLICATE)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(_, _, old)| old.clone());
        // Only a decision replaces an earlier one (the seed's "Supersede
        // Detection"): "Bob works in Berlin" does not make "Bob lives in
        // Berlin" false, but "use JWT for auth" does end "use cookies for auth".
        if duplicate.is_some() || new.kind != FactKind::Decision {
            return Ok((duplicate, None));
        }
        let replaced = candidates
            .into_iter()
            .filter(|(overlap, _, _)| *overlap > threshold)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)))
            .map(|(_, _, old)| old);
        Ok((None, replaced))
    }

    /// Memory lines for answering someone: what is relevant to the message
    /// and what the bot knows about its author.
    pub fn for_reply(&self, guild: Option<GuildId>, author: UserId, text: &str) -> Vec<String> {
        let settings = self.settings.for_guild(guild);
        if !settings.memory.enabled {
            return Vec::new();
        }
        let reader = match guild {
            Some(g) => Reader::Guild(g),
            None => Reader::Dm(author),
        };
        let limit = settings.memory.max_prompt_facts as usize;
        let mut found = self.search(reader, text, limit);
        let about_author = self
            .store
            .memory
            .list_facts(&FactFilter {
                guild: Some(guild),
                scope: Some(ScopeKind::User),
                user: Some(author),
                limit: Some(5),
                ..Default::default()
            })
            .unwrap_or_default();
        for f in about_author {
            if found.len() < limit && !found.iter().any(|s| s.fact.id == f.id) {
                found.push(Scored {
                    fact: f,
                    score: 0.0,
                });
            }
        }
        self.lines(&found)
    }

    /// The initiative prompt's MEMORY, BEHAVIOR GUIDANCE and RELEVANT
    /// BEHAVIORAL MEMORY; `None` when memory is off for the guild.
    pub fn for_initiative(
        &self,
        guild: GuildId,
        topics: &str,
    ) -> Option<(Vec<String>, Vec<String>, Vec<String>)> {
        let settings = self.settings.for_guild(Some(guild));
        if !settings.memory.enabled {
            return None;
        }
        let limit = settings.memory.max_prompt_facts as usize;
        let mut relevant: Vec<Scored> = self
            .search(Reader::Guild(guild), topics, limit)
            .into_iter()
            .filter(|s| !matches!(s.fact.kind, FactKind::BehaviorGuidance | FactKind::Feedback))
            .collect();
        if relevant.len() < limit {
            let important = self
                .store
                .memory
                .list_facts(&FactFilter {
                    guild: Some(Some(guild)),
                    importance: Some(Importance::High),
                    limit: Some(limit),
                    ..Default::default()
                })
                .unwrap_or_default();
            for f in important {
                if relevant.len() < limit
                    && f.kind != FactKind::BehaviorGuidance
                    && !relevant.iter().any(|s| s.fact.id == f.id)
                {
                    relevant.push(Scored {
                        fact: f,
                        score: 0.0,
                    });
                }
            }
        }
        let guidance: Vec<String> = self
            .store
            .memory
            .list_facts(&FactFilter {
                guild: Some(Some(guild)),
                kind: Some(FactKind::BehaviorGuidance),
                limit: Some(limit),
                ..Default::default()
            })
            .unwrap_or_default()
            .into_iter()
            .map(|f| f.content)
            .collect();
        let behavioral: Vec<Scored> = self
            .search(
                Reader::Guild(guild),
                &format!("{topics} post posted shared reaction liked"),
                limit * 2,
            )
            .into_iter()
            .filter(|s| s.fact.kind == FactKind::Feedback)
            .take(limit / 2 + 1)
            .collect();
        Some((self.lines(&relevant), guidance, self.lines(&behavioral)))
    }

    /// A scored search that marks what it returns as used.
    pub fn search(&self, reader: Reader, text: &str, limit: usize) -> Vec<Scored> {
        let guild = match reader {
            Reader::Guild(g) => Some(g),
            Reader::Dm(_) => None,
        };
        let settings = self.settings.for_guild(guild);
        let now = self.clock.now();
        let found = search::search(
            &self.store.memory,
            reader,
            text,
            now,
            f64::from(settings.memory.search_half_life_days),
            limit,
        );
        let ids: Vec<String> = found.iter().map(|s| s.fact.id.clone()).collect();
        // Harmless if lost: last-seen times only nudge future search scores.
        let _ = self.store.memory.touch_facts(&ids, now);
        found
    }

    fn lines(&self, facts: &[Scored]) -> Vec<String> {
        facts
            .iter()
            .map(|s| {
                let f = &s.fact;
                match (f.scope.kind, f.scope.user) {
                    (ScopeKind::User, Some(u)) => {
                        let who = f
                            .author
                            .as_ref()
                            .filter(|(id, _)| *id == u)
                            .map(|(_, n)| n.clone())
                            .unwrap_or_else(|| format!("member {u}"));
                        format!("[about {who}] {}", f.content)
                    }
                    _ => format!("[{}] {}", f.kind, f.content),
                }
            })
            .collect()
    }

    /// Deletes a fact; a member may delete facts about themselves, Manage
    /// Server anything in the guild.
    pub(crate) fn forget(
        &self,
        guild: Option<GuildId>,
        id_prefix: &str,
        by: UserId,
        manage: bool,
    ) -> Result<Fact, MemoryError> {
        let matches: Vec<Fact> = self
            .store
            .memory
            .facts_by_prefix(id_prefix)?
            .into_iter()
            .filter(|f| f.scope.guild == guild)
            .collect();
        let fact = match matches.as_slice() {
            [] => return Err(MemoryError::NoSuchPrefix(id_prefix.to_string())),
            [one] => one.clone(),
            many => {
                return Err(MemoryError::Ambiguous {
                    prefix: id_prefix.to_string(),
                    ids: many.iter().map(|f| f.short_id().to_string()).collect(),
                });
            }
        };
        let own = fact.scope.kind == ScopeKind::User && fact.scope.user == Some(by);
        if !manage && !own {
            return Err(MemoryError::NotYours);
        }
        self.delete_fact(fact, &format!("asked by member {by}"))
    }

    /// The operator's forget (the dashboard): any fact, by its whole id.
    pub(crate) fn forget_by_operator(&self, id: &str, via: &str) -> Result<Fact, MemoryError> {
        let fact = self
            .store
            .memory
            .fact(id)?
            .ok_or_else(|| MemoryError::NoSuchId(id.to_string()))?;
        self.delete_fact(fact, &format!("asked by the operator ({via})"))
    }

    fn delete_fact(&self, fact: Fact, why: &str) -> Result<Fact, MemoryError> {
        self.store.memory.delete_fact(&fact.id)?;
        self.journal.record(
            Entry::new(Kind::Memory, format!("forgot: {}", fact.content))
                .guild(fact.scope.guild)
                .reason(why),
        );
        Ok(fact)
    }

    /// `/memory forget-me`: every user-scoped fact about `user`, in every
    /// guild and direct message, and every quote of them; with `messages`,
    /// also the facts they told and the text of everything they said (see
    /// `store::forget`). `guild` is only where they asked.
    pub fn forget_me(
        &self,
        guild: Option<GuildId>,
        user: UserId,
        messages: bool,
    ) -> Result<(usize, usize), MemoryError> {
        self.forget_person(guild, user, messages, "at their request")
    }

    /// Forget-me run for `user` by someone else (`asked`: "by the operator
    /// (dashboard)"); the same erasure, journaled with who asked.
    pub fn forget_person(
        &self,
        guild: Option<GuildId>,
        user: UserId,
        messages: bool,
        asked: &str,
    ) -> Result<(usize, usize), MemoryError> {
        let gone = self
            .store
            .people
            .forget_person(user, messages, self.clock.now())
            .map_err(MemoryError::ForgetPerson)?;
        let log = if gone.log_truncated {
            ""
        } else {
            "; the database log was busy and is emptied at the next checkpoint"
        };
        self.journal.record(
            Entry::new(
                Kind::Memory,
                format!("forgot everything about member {user}"),
            )
            .guild(guild)
            .reason(format!(
                "{} fact(s), {} message(s) erased, {} quote(s) redacted {asked}{log}",
                gone.facts, gone.messages, gone.redacted
            )),
        );
        Ok((gone.facts, gone.messages))
    }

    /// A deleted channel: its high-importance facts move to the guild, the
    /// rest are archived (and purged after `memory.archiveRetentionDays`).
    pub fn archive_channel(
        &self,
        guild: GuildId,
        channel: ChannelId,
    ) -> Result<(usize, usize), MemoryError> {
        let now = self.clock.now();
        let facts = self
            .store
            .memory
            .facts_in_scope(&Scope::channel(Some(guild), channel), None)?;
        let (mut promoted, mut archived) = (Vec::new(), Vec::new());
        for mut f in facts {
            if f.importance == Importance::High {
                f.scope = Scope::guild(guild);
                f.updated_at = now;
                promoted.push(f);
            } else {
                f.archived_at = Some(now);
                archived.push(f);
            }
        }
        let changed: Vec<&Fact> = promoted.iter().chain(archived.iter()).collect();
        self.store.memory.save_facts(&[], &changed)?;
        self.journal.record(
            Entry::new(
                Kind::Memory,
                "a channel was deleted; its memory was archived",
            )
            .place(Some(guild), Some(channel))
            .reason(format!(
                "{} important fact(s) kept for the server, {} archived",
                promoted.len(),
                archived.len()
            )),
        );
        Ok((promoted.len(), archived.len()))
    }

    /// Expiry and archive purge (cheap, no model).
    pub fn expire(&self) -> (usize, usize) {
        let settings = self.settings.global();
        let now = self.clock.now();
        let expired = self
            .store
            .memory
            .expire_facts(now - chrono::Duration::days(i64::from(settings.memory.ttl_days)))
            .unwrap_or(0);
        let purged = self
            .store
            .memory
            .purge_archived_facts(
                now - chrono::Duration::days(i64::from(settings.memory.archive_retention_days)),
            )
            .unwrap_or(0);
        if expired + purged > 0 {
            self.journal
                .record(Entry::new(Kind::Memory, "tidied memory").reason(format!(
                "{expired} fact(s) unused for {} days expired, {purged} archived fact(s) purged",
                settings.memory.ttl_days
            )));
        }
        (expired, purged)
    }

    /// The earliest time a maintenance round could do anything if no
    /// message came: `now` when it could now (or the store cannot say),
    /// else the first of a conversation going quiet or an extraction
    /// back-off ending, a fact expiring, an archived fact's purge; `None`
    /// when only a new message can give it
    /// work. What lets a replay skip a silent year without a round every
    /// five simulated minutes; a round before this time does nothing.
    pub fn next_upkeep(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if self.some_scope_crowded() {
            return Some(now);
        }
        let Ok(oldest) = self.store.memory.oldest_fact_marks() else {
            return Some(now);
        };
        let m = &self.settings.global().memory;
        let days = |d: u32| chrono::Duration::days(i64::from(d));
        [
            self.extraction_due_at(now),
            oldest.seen.map(|t| t + days(m.ttl_days)),
            oldest.archived.map(|t| t + days(m.archive_retention_days)),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|t| t.max(now))
    }

    /// One maintenance round: extraction where due, compaction where crowded, expiry.
    pub async fn maintain(&self) {
        self.extract_due().await;
        self.compact_crowded().await;
        self.expire();
    }

    pub(crate) async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = self.maintain() => {}
                _ = shutdown.changed() => return,
            }
            tokio::select! {
                _ = tokio::time::sleep(MAINTAIN_EVERY) => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// A fact about to be stored, from a person (`/memory remember`, `ambient remember`).
pub fn manual(
    scope: Scope,
    kind: FactKind,
    importance: Option<Importance>,
    content: &str,
    author: Option<(UserId, String)>,
    now: DateTime<Utc>,
) -> Fact {
    let mut f = Fact::new(
        scope,
        kind,
        importance.unwrap_or_else(|| kind.default_importance()),
        content,
        now,
    );
    f.author = author;
    f
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub messages: MessageStore,
    pub memory: MemoryStore,
    pub people: PeopleStore,
}
