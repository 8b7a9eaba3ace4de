//! Extraction: recent messages → structured facts, with the `extract` role.
//!
//! When: after a conversation the bot took part in has gone quiet for
//! `memory.conversationIdleMinutes` (`memory.extractConversations`), and, more
//! cheaply, for channels it only listens to, once `memory.listenBatchSize`
//! new messages have gathered (`memory.extractListened`). A per-channel
//! checkpoint makes each message go through extraction once; a failed
//! attempt keeps the checkpoint and backs off (1, 2, 4, … minutes), however
//! many messages wait, with one journal line per back-off:
//!
//! - a failure of the call (the provider down, a budget, the store) holds
//!   back that channel, at most `BACKOFF_CEILING_MINUTES`;
//! - a model that answers without calling `remember_facts` (or calls it
//!   with arguments that do not fit) holds back every channel, at most
//!   `MODEL_BACKOFF_CEILING_HOURS`: it would answer the next channel the
//!   same way, so trying each channel in turn only multiplies the requests.
//!   Another model (a settings change) is tried at once.
//!
//! The model answers with a typed `remember_facts` call (possibly empty:
//! greetings and small talk are not remembered), forced, in one request: a
//! model that ignores a forced tool ignores a reminder too. Batches with
//! nothing that looks like content are not even sent.
//!
//! People who asked not to be remembered (the `no-memory` boundary) are
//! left out before the model sees the batch: their messages, and the bot's
//! replies to them. A fact the model still pins on them by name is dropped.
//! What was remembered before stays until they ask to be forgotten.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AskError, Memory, erased};
use crate::executive::prompts::PromptLine;
use crate::executive::tools::{FinalTool, parse_args};
use crate::executive::{Message, Turn, TurnOutcome};
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::settings::Role;
use crate::store::boundaries::Boundary;
use crate::store::messages::{StoredMessage, Unextracted};
use crate::vocab::fact::{Fact, FactKind, Importance, Scope, ScopeKind};
use crate::vocab::journal::{Entry, Kind};

/// The longest a channel's failing extraction waits between tries.
pub(crate) const BACKOFF_CEILING_MINUTES: i64 = 60;
/// The longest extraction waits for a model that does not call its tool.
pub(crate) const MODEL_BACKOFF_CEILING_HOURS: i64 = 24;

/// What a failed extraction holds back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Holdback {
    /// One channel: its call failed (the provider, a budget, the store).
    Channel(ChannelId),
    /// Every channel while this model (`model (provider)`) serves the
    /// extract role: it answered without doing the job.
    Model(String),
}
/// Most messages in one extraction call.
const MAX_BATCH: usize = 100;
/// A batch needs at least this many content words in one message to be worth a call.
const MIN_CONTENT_WORDS: usize = 3;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractedFact {
    pub kind: FactKind,
    pub importance: Importance,
    /// guild: true for the whole server; channel: about this channel only; user: about one person.
    pub scope: ExtractScope,
    /// For scope "user": the person's name exactly as it appears in the transcript.
    #[serde(default)]
    pub about: Option<String>,
    /// A few words naming what it is about ("auth", "ada's editor").
    pub subject: String,
    /// The fact itself, one self-contained sentence.
    pub content: String,
    /// The numbers of the messages it comes from.
    #[serde(default)]
    pub sources: Vec<u32>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ExtractScope {
    Guild,
    Channel,
    User,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Extraction {
    /// The facts worth keeping; an empty list when nothing is.
    pub facts: Vec<ExtractedFact>,
}

#[derive(Serialize)]
struct ExtractPrompt {
    bot_name: String,
    place: String,
    lines: Vec<NumberedLine>,
    known: Vec<String>,
}

#[derive(Serialize)]
struct NumberedLine {
    n: usize,
    #[serde(flatten)]
    line: PromptLine,
}

impl Memory {
    /// Runs extraction for every channel that is due; returns (channels, facts stored).
    pub async fn extract_due(&self) -> (usize, usize) {
        let now = self.clock.now();
        // A model that did not do the job holds back every channel at once.
        if self.model_held_back(now) {
            return (0, 0);
        }
        let due = self
            .store
            .messages
            .unextracted_channels()
            .unwrap_or_default();
        let (mut channels, mut facts) = (0, 0);
        for u in due {
            if self.is_due(&u, now) {
                channels += 1;
                facts += self.extract_channel(u.guild, u.channel).await;
                if self.model_held_back(now) {
                    break;
                }
            }
        }
        (channels, facts)
    }

    /// The model that would serve the next extraction, as `model (provider)`.
    fn extract_model(&self) -> Option<String> {
        let ep = self
            .executive
            .resolve(Role::Extract)
            .endpoints
            .into_iter()
            .next()?;
        Some(format!("{} ({})", ep.model, ep.provider_name()))
    }

    fn model_held_back(&self, now: DateTime<Utc>) -> bool {
        self.extract_model()
            .is_some_and(|m| !self.extraction_backoff.ready(&Holdback::Model(m), now))
    }

    /// When extraction next falls due with no new message: `now` when it
    /// is due now, the first conversation's quiet time, or `None` when
    /// nothing waits. A back-off (the model's, or a channel's) ends on its
    /// own: until then a round does nothing there, so a channel held back
    /// falls due when its back-off ends, or later if its own time is later.
    pub(super) fn extraction_due_at(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let Ok(waiting) = self.store.messages.unextracted_channels() else {
            return Some(now);
        };
        let held = |key: &Holdback| self.extraction_backoff.until(key).filter(|t| now < *t);
        let model_ready = self.extract_model().and_then(|m| held(&Holdback::Model(m)));
        let mut due: Option<DateTime<Utc>> = None;
        for u in waiting {
            let m = &self.settings.for_guild(u.guild).memory;
            if !m.enabled {
                continue;
            }
            let at = if m.extract_listened && u.count >= u64::from(m.listen_batch_size) {
                now
            } else if u.bot_spoke && m.extract_conversations {
                u.last_at + chrono::Duration::minutes(i64::from(m.conversation_idle_minutes))
            } else {
                continue;
            };
            let at = [held(&Holdback::Channel(u.channel)), model_ready]
                .into_iter()
                .flatten()
                .fold(at, DateTime::max);
            due = Some(due.map_or(at, |d| d.min(at)));
        }
        due.map(|d| d.max(now))
    }

    fn is_due(&self, u: &Unextracted, now: chrono::DateTime<chrono::Utc>) -> bool {
        let m = &self.settings.for_guild(u.guild).memory;
        if !m.enabled {
            return false;
        }
        // A failing channel waits out its back-off, however many messages pile up.
        if !self
            .extraction_backoff
            .ready(&Holdback::Channel(u.channel), now)
        {
            return false;
        }
        let quiet =
            now - u.last_at >= chrono::Duration::minutes(i64::from(m.conversation_idle_minutes));
        (u.bot_spoke && m.extract_conversations && quiet)
            || (m.extract_listened && u.count >= u64::from(m.listen_batch_size))
    }

    /// Extracts facts from a channel's messages since its checkpoint; returns how many were stored.
    pub async fn extract_channel(&self, guild: Option<GuildId>, channel: ChannelId) -> usize {
        let now = self.clock.now();
        let after = self
            .store
            .memory
            .extraction_checkpoint(channel)
            .ok()
            .flatten()
            .map(|(m, _)| m);
        let messages = self
            .store
            .messages
            .messages_after(channel, after, MAX_BATCH)
            .unwrap_or_default();
        let Some(last) = messages.last().map(|m| m.id) else {
            return 0;
        };
        let Some((messages, withheld)) = self.without_the_unremembered(messages) else {
            return 0;
        };
        // Noted before what was forgotten is taken out: a forget-me that
        // comes later is caught when the facts are stored.
        let read = self
            .store
            .people
            .erasure_mark()
            .map_err(|source| AskError::StoreRead {
                what: "the erasure log",
                source,
            })
            .and_then(|mark| {
                Ok((
                    mark,
                    erased::without_the_forgotten(&self.store.people, messages)?,
                ))
            });
        let (mark, messages) = match read {
            Ok(read) => read,
            Err(why) => {
                self.extraction_failed(guild, channel, (after, now), &why);
                return 0;
            }
        };
        let worth_it = messages.iter().any(|m| {
            !m.is_self && super::keywords::keywords(&m.content).len() >= MIN_CONTENT_WORDS
        });
        if !worth_it {
            // Harmless if lost: these messages are only looked over once more.
            let _ = self
                .store
                .memory
                .set_extraction_checkpoint(channel, last, now);
            return 0;
        }
        if self.executive.unavailable(Role::Extract).is_some() {
            return 0;
        }
        match self
            .run_extraction(guild, channel, &messages, &withheld)
            .await
        {
            Ok(facts) => match erased::without_the_erased(&self.store.people, facts, &messages) {
                Ok(facts) => {
                    let stored =
                        self.store_extracted(guild, channel, &facts, messages.len(), (last, now));
                    erased::erase_what_came_too_late(&self.store, mark, &facts, &messages);
                    stored
                }
                Err(why) => {
                    self.extraction_failed(guild, channel, (after, now), &why);
                    0
                }
            },
            Err(why) => {
                self.extraction_failed(guild, channel, (after, now), &why);
                0
            }
        }
    }

    /// Stores what the model extracted and moves the checkpoint past `last`,
    /// unless a fact could not be stored: then the checkpoint stays, so the
    /// batch is read again after a back-off. Returns how many were stored.
    fn store_extracted(
        &self,
        guild: Option<GuildId>,
        channel: ChannelId,
        facts: &[Fact],
        read: usize,
        (last, now): (MessageId, DateTime<Utc>),
    ) -> usize {
        let recovered = self
            .extraction_backoff
            .succeeded(&Holdback::Channel(channel))
            .max(
                self.extract_model()
                    .and_then(|m| self.extraction_backoff.succeeded(&Holdback::Model(m))),
            );
        let mut stored = 0;
        let mut refused = Vec::new();
        for fact in facts.iter().filter(|f| !f.content.trim().is_empty()) {
            match self.remember(fact.clone(), None) {
                Ok(_) => stored += 1,
                Err(why) => refused.push(why),
            }
        }
        if let Some(why) = refused.first() {
            // Only store errors are left: keep the checkpoint so the facts are extracted
            // again (those stored meanwhile are then reinforced), after a back-off.
            self.extraction_backoff
                .failed(&Holdback::Channel(channel), now);
            self.journal.record(
                Entry::new(
                    Kind::Error,
                    format!("could not store {} extracted fact(s)", refused.len()),
                )
                .place(guild, Some(channel))
                .reason(format!("{why}; these messages will be read again")),
            );
            return stored;
        }
        // Lost, the checkpoint makes this batch be read again and its facts
        // reinforced a second time: worth a warning, not worth undoing the
        // facts already stored.
        if let Err(e) = self
            .store
            .memory
            .set_extraction_checkpoint(channel, last, now)
        {
            tracing::warn!(%channel, error = %e, "could not save the extraction checkpoint");
        }
        self.journal.record(
            Entry::new(
                Kind::Memory,
                format!("extracted {stored} fact(s) from {read} message(s)"),
            )
            .place(guild, Some(channel))
            .reason(recovered.map_or(String::new(), |n| {
                format!("extraction works again after {n} failure(s) in a row")
            })),
        );
        stored
    }

    /// A failed extraction: the channel backs off and the same messages are
    /// tried again later, with one journal line saying when.
    fn extraction_failed(
        &self,
        guild: Option<GuildId>,
        channel: ChannelId,
        (after, now): (Option<MessageId>, DateTime<Utc>),
        why: &AskError,
    ) {
        let (setback, held) = match (why, self.extract_model()) {
            (AskError::NoExtraction(_) | AskError::BadAnswer(_), Some(model)) => {
                let setback = self.extraction_backoff.failed_within(
                    &Holdback::Model(model.clone()),
                    now,
                    chrono::Duration::minutes(1),
                    chrono::Duration::hours(MODEL_BACKOFF_CEILING_HOURS),
                );
                let held = format!(
                    "{model} does not call remember_facts, so extraction waits in every channel"
                );
                (setback, Some(held))
            }
            _ => (
                self.extraction_backoff
                    .failed(&Holdback::Channel(channel), now),
                None,
            ),
        };
        // Keep the checkpoint: the same messages are tried again later
        // (harmless if lost: the checkpoint already points there).
        let _ = self.store.memory.set_extraction_checkpoint(
            channel,
            after.unwrap_or(MessageId(0)),
            now,
        );
        let reason = match held {
            Some(held) => format!("{why}; {held}, {}", setback.describe()),
            None => format!("{why}; {}", setback.describe()),
        };
        self.journal.record(
            Entry::new(Kind::Memory, "could not extract memories")
                .place(guild, Some(channel))
                .reason(reason),
        );
    }

    /// The batch without the people who asked not to be remembered (and
    /// the bot's replies to them), and those people's names. `None` when the
    /// boundaries cannot be read: the batch waits, unread, for the next try.
    fn without_the_unremembered(
        &self,
        messages: Vec<StoredMessage>,
    ) -> Option<(Vec<StoredMessage>, Vec<String>)> {
        let authors: Vec<_> = messages
            .iter()
            .filter(|m| !m.is_self)
            .map(|m| m.author_id)
            .collect();
        let withheld = self
            .store
            .people
            .with_boundary(&authors, Boundary::NoMemory)
            .ok()?;
        if withheld.is_empty() {
            return Some((messages, Vec::new()));
        }
        let theirs: HashSet<MessageId> = messages
            .iter()
            .filter(|m| !m.is_self && withheld.contains(&m.author_id))
            .map(|m| m.id)
            .collect();
        let names: Vec<String> = messages
            .iter()
            .filter(|m| theirs.contains(&m.id))
            .map(|m| m.author_name.to_lowercase())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let kept = messages
            .into_iter()
            .filter(|m| !theirs.contains(&m.id))
            .filter(|m| !(m.is_self && m.reply_to.is_some_and(|r| theirs.contains(&r))))
            .collect();
        Some((kept, names))
    }

    /// Asks the `extract` role for the facts in `messages`; facts about the
    /// people in `withheld` (no-memory) are dropped even if the model names them.
    async fn run_extraction(
        &self,
        guild: Option<GuildId>,
        channel: ChannelId,
        messages: &[StoredMessage],
        withheld: &[String],
    ) -> Result<Vec<Fact>, AskError> {
        let prompt = self.extract_prompt(guild, channel, messages);
        let rendered = self.executive.prompts.render("extract", &prompt)?;
        let mut turn = Turn::new(
            Role::Extract,
            guild,
            format!("memory extraction in channel {channel}"),
        );
        turn.channel = Some(channel);
        turn.system = rendered.system;
        turn.messages = vec![Message::user(rendered.user)];
        turn.final_tool = Some(FinalTool::of::<Extraction>(
            "remember_facts",
            "The facts worth remembering from these messages (an empty list if none are).",
        ));
        // One forced request: a model that ignores a forced tool ignores a reminder too.
        turn.max_steps = 1;
        turn.max_calls = 0;
        let result = self.executive.run_turn(turn).await;
        let value = match result.outcome? {
            TurnOutcome::Final(v) => v,
            other => return Err(AskError::NoExtraction(format!("{other:?}"))),
        };
        let extraction: Extraction =
            parse_args(&value).map_err(|e| AskError::BadAnswer(e.to_string()))?;
        let now = self.clock.now();
        let about_withheld = |f: &ExtractedFact| {
            f.about.as_deref().is_some_and(|name| {
                let name = name.trim().trim_start_matches('@').to_lowercase();
                withheld.contains(&name)
            })
        };
        Ok(extraction
            .facts
            .into_iter()
            .filter(|f| !f.content.trim().is_empty())
            .filter(|f| !about_withheld(f))
            .map(|x| self.to_fact(x, guild, channel, messages, now))
            .collect())
    }

    /// The extraction prompt: where it was said, the numbered lines, and
    /// what is already known about it (so the model does not repeat it).
    fn extract_prompt(
        &self,
        guild: Option<GuildId>,
        channel: ChannelId,
        messages: &[StoredMessage],
    ) -> ExtractPrompt {
        let settings = self.settings.for_guild(guild);
        let place = match guild {
            Some(g) => format!(
                "#{} on \"{}\"",
                self.store
                    .messages
                    .channel_name(channel)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| channel.to_string()),
                self.store
                    .messages
                    .guild_name(g)
                    .ok()
                    .flatten()
                    .unwrap_or_default()
            ),
            None => "a direct message".into(),
        };
        let text: String = messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let reader = match guild {
            Some(g) => super::search::Reader::Guild(g),
            None => super::search::Reader::Dm(
                messages
                    .iter()
                    .find(|m| !m.is_self)
                    .map_or(crate::ids::UserId(0), |m| m.author_id),
            ),
        };
        let known = super::search::search(
            &self.store.memory,
            reader,
            &text,
            self.clock.now(),
            f64::from(settings.memory.search_half_life_days),
            10,
        )
        .into_iter()
        .map(|s| format!("[{}] {}", s.fact.kind, s.fact.content))
        .collect();
        ExtractPrompt {
            bot_name: settings.bot.name.clone(),
            place,
            lines: messages
                .iter()
                .enumerate()
                .map(|(i, m)| NumberedLine {
                    n: i + 1,
                    line: PromptLine::from(m),
                })
                .collect(),
            known,
        }
    }

    fn to_fact(
        &self,
        x: ExtractedFact,
        guild: Option<GuildId>,
        channel: ChannelId,
        messages: &[StoredMessage],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Fact {
        let person = x.about.as_deref().and_then(|name| {
            messages
                .iter()
                .find(|m| {
                    !m.is_self
                        && m.author_name
                            .eq_ignore_ascii_case(name.trim().trim_start_matches('@'))
                })
                .map(|m| (m.author_id, m.author_name.clone()))
        });
        let dm_partner = messages
            .iter()
            .find(|m| !m.is_self)
            .map(|m| (m.author_id, m.author_name.clone()));
        let scope = match (guild, x.scope, &person) {
            // In a DM everything is about the one person there.
            (None, _, _) => dm_partner
                .as_ref()
                .map_or(Scope::channel(None, channel), |(u, _)| {
                    Scope::user(None, *u)
                }),
            (Some(_), ExtractScope::User, Some((u, _))) => Scope::user(guild, *u),
            (Some(g), ExtractScope::Guild, _) => Scope::guild(g),
            (Some(_), _, _) => Scope::channel(guild, channel),
        };
        let mut f = Fact::new(scope, x.kind, x.importance, x.content.trim(), now);
        f.subject = Some(x.subject.trim().to_string()).filter(|s| !s.is_empty());
        f.sources = x
            .sources
            .iter()
            .filter_map(|n| messages.get((*n as usize).saturating_sub(1)).map(|m| m.id))
            .collect();
        f.author = match scope.kind {
            ScopeKind::User => person.or(dm_partner),
            _ => f
                .sources
                .first()
                .and_then(|id| messages.iter().find(|m| m.id == *id))
                .map(|m| (m.author_id, m.author_name.clone())),
        };
        f
    }
}
