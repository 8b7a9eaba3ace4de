//! Compaction: keeping each scope under its threshold (the seed's 40 guild /
//! 80 channel events; `memory.*CompactionThreshold`).
//!
//! When a scope has more active facts than its threshold, its oldest low-
//! and medium-importance facts are summarised by the model into one
//! `session-summary` fact, bringing the scope back to three quarters of the
//! threshold. High-importance facts are never compacted. If the model is
//! unavailable or fails, only low-importance facts are dropped. The summary
//! and the deletes are one store transaction: if the write fails, no fact is
//! lost and the next compaction tries again.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AskError, Memory};
use crate::executive::tools::{FinalTool, parse_args};
use crate::executive::{Message, Turn, TurnOutcome};
use crate::settings::Role;
use crate::vocab::fact::{Fact, FactKind, Importance, Scope, ScopeKind};
use crate::vocab::journal::{Entry, Kind};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Summary {
    /// One paragraph keeping everything still useful from these memories.
    content: String,
}

#[derive(Serialize)]
struct CompactPrompt {
    bot_name: String,
    facts: Vec<String>,
}

/// What a compaction did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compaction {
    NotNeeded,
    Summarised {
        facts: usize,
        summary: String,
    },
    DroppedLow {
        facts: usize,
    },
    /// The store refused the change; every fact is still there.
    Failed {
        why: String,
    },
}

impl Memory {
    pub(crate) fn threshold(&self, scope: &Scope) -> usize {
        let m = &self.settings.for_guild(scope.guild).memory;
        (match scope.kind {
            ScopeKind::Guild => m.guild_compaction_threshold,
            ScopeKind::Channel => m.channel_compaction_threshold,
            ScopeKind::User => m.user_compaction_threshold,
        }) as usize
    }

    /// Whether some scope is over its threshold (or the store cannot
    /// say): what `compact_crowded` would act on.
    pub(super) fn some_scope_crowded(&self) -> bool {
        let Ok(guilds) = self.store.memory.fact_guilds() else {
            return true;
        };
        guilds
            .into_iter()
            .any(|guild| match self.store.memory.crowded_scopes(guild) {
                Ok(scopes) => scopes
                    .iter()
                    .any(|(scope, count)| *count as usize > self.threshold(scope)),
                Err(_) => true,
            })
    }

    /// Compacts every scope over its threshold.
    pub(crate) async fn compact_crowded(&self) {
        for guild in self.store.memory.fact_guilds().unwrap_or_default() {
            for (scope, count) in self.store.memory.crowded_scopes(guild).unwrap_or_default() {
                if count as usize > self.threshold(&scope) {
                    self.compact(&scope).await;
                }
            }
        }
    }

    pub async fn compact(&self, scope: &Scope) -> Compaction {
        let threshold = self.threshold(scope);
        let mut active = self
            .store
            .memory
            .facts_in_scope(scope, None)
            .unwrap_or_default();
        if active.len() <= threshold {
            return Compaction::NotNeeded;
        }
        // Summarising `batch` facts into one leaves n - batch + 1; aim for 3/4 of the threshold.
        let target = threshold * 3 / 4;
        let wanted = (active.len() + 1).saturating_sub(target).max(2);
        active.sort_by_key(|f| f.updated_at);
        let batch: Vec<Fact> = active
            .into_iter()
            .filter(|f| f.importance != Importance::High)
            .take(wanted)
            .collect();
        if batch.len() < 2 {
            return Compaction::NotNeeded;
        }
        match self.summarise(scope, &batch).await {
            Ok(content) => {
                let now = self.clock.now();
                let mut summary = Fact::new(
                    *scope,
                    FactKind::SessionSummary,
                    Importance::Low,
                    content.trim(),
                    now,
                );
                summary.sources = batch
                    .iter()
                    .flat_map(|f| f.sources.iter().copied())
                    .collect();
                let ids: Vec<&str> = batch.iter().map(|f| f.id.as_str()).collect();
                if let Err(e) = self.store.memory.compact_facts(Some(&summary), &ids) {
                    return self.failed(scope, e);
                }
                self.journal.record(
                    Entry::new(
                        Kind::Memory,
                        format!("compacted {} memories into one summary", batch.len()),
                    )
                    .place(scope.guild, scope.channel)
                    .reason(format!(
                        "the {} scope passed its threshold of {threshold}",
                        scope.kind.as_str()
                    )),
                );
                Compaction::Summarised {
                    facts: batch.len(),
                    summary: summary.content,
                }
            }
            Err(why) => {
                let low: Vec<&Fact> = batch
                    .iter()
                    .filter(|f| f.importance == Importance::Low)
                    .collect();
                let ids: Vec<&str> = low.iter().map(|f| f.id.as_str()).collect();
                if let Err(e) = self.store.memory.compact_facts(None, &ids) {
                    return self.failed(scope, e);
                }
                self.journal.record(
                    Entry::new(
                        Kind::Memory,
                        format!("dropped {} low-importance memories", low.len()),
                    )
                    .place(scope.guild, scope.channel)
                    .reason(format!(
                        "compaction without a summary ({why}): only low importance is dropped"
                    )),
                );
                Compaction::DroppedLow { facts: low.len() }
            }
        }
    }

    fn failed(&self, scope: &Scope, e: crate::store::StoreError) -> Compaction {
        let why = e.to_string();
        self.journal.record(
            Entry::new(Kind::Error, "could not compact memories; none were removed")
                .place(scope.guild, scope.channel)
                .reason(why.clone()),
        );
        Compaction::Failed { why }
    }

    async fn summarise(&self, scope: &Scope, batch: &[Fact]) -> Result<String, AskError> {
        if let Some(why) = self.executive.unavailable(Role::Extract) {
            return Err(AskError::Unavailable(why));
        }
        let settings = self.settings.for_guild(scope.guild);
        let prompt = CompactPrompt {
            bot_name: settings.bot.name.clone(),
            facts: batch
                .iter()
                .map(|f| format!("[{}, {}] {}", f.kind, f.importance.as_str(), f.content))
                .collect(),
        };
        let rendered = self.executive.prompts.render("compact", &prompt)?;
        let mut turn = Turn::new(Role::Extract, scope.guild, "memory compaction");
        turn.channel = scope.channel;
        turn.system = rendered.system;
        turn.messages = vec![Message::user(rendered.user)];
        turn.final_tool = Some(FinalTool::of::<Summary>(
            "summary",
            "The summary that replaces these memories.",
        ));
        turn.max_steps = 2;
        turn.max_calls = 0;
        match self.executive.run_turn(turn).await.outcome {
            Ok(TurnOutcome::Final(v)) => {
                let s: Summary = parse_args(&v).map_err(|e| AskError::BadAnswer(e.to_string()))?;
                if s.content.trim().is_empty() {
                    return Err(AskError::EmptySummary);
                }
                Ok(s.content)
            }
            Ok(other) => Err(AskError::NoSummary(format!("{other:?}"))),
            Err(e) => Err(e.into()),
        }
    }
}
