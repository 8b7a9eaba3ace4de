//! Acting on impulses the attention queue hands over: a due task, a schedule
//! entry, an idea.
//!
//! A task that carries a message (a reminder) is said as is — no model call.
//! Anything else goes to the `ambient` role, which ends with a typed call:
//! `act` (say something, or nothing) for tasks and schedules, `explored` (what
//! it learned, and maybe a thought for the initiative cycle to consider) for
//! ideas. Nothing is posted behind the initiative gates' back except what a
//! task or routine asked for.
//!
//! Courtesy: a routine is unprompted, so quiet hours skip its firing (unless
//! it was added to run anyway) and a hush always does; so does nobody having
//! answered the bot's last unprompted posts (`initiative.text.maxUnansweredPosts`,
//! the initiative's `unanswered` gate), unless it was added to post even
//! then. A reminder or task was asked for and is said when due, quiet hours
//! or not. A routine's post is journaled with its name (`data.routine`): it
//! is one of the unprompted posts that gate counts.
//!
//! Everything said here is journalled with the id of the message it became,
//! so `/ambient why` on a reminder or a routine's post explains it. A failed
//! idea exploration gives the idea back and backs off for the guild (see
//! [`Impulses::idea_failed`]).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::attention::router::ORDER_IMPULSE;
use crate::attention::{Attended, Handler, ImpulseKind, Input, Outcome, Place};
use crate::clock::SharedClock;
use crate::executive::prompts::PromptError;
use crate::executive::prompts::PromptLine;
use crate::executive::tools::{ArgsError, FinalTool, parse_args};
use crate::executive::{ExecError, Executive, Message, Turn, TurnOutcome};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::impulses::Impulses;
use crate::impulses::Stores;
use crate::journal::Journal;
use crate::memory::Memory;
use crate::memory::search::Reader;
use crate::settings::Role;
use crate::settings::SettingsService;
use crate::speech::{Speech, SpeechError};
use crate::store::impulses::{ScheduleEntry, Task};
use crate::vocab::fact::{FactKind, Importance, Scope};
use crate::vocab::journal::{Entry, Kind};
use crate::vocab::pending::PendingThought;

/// How long a task that could not be said waits before it is due again.
const POSTPONE_MINUTES: i64 = 10;

/// Why a due impulse's turn or message came to nothing; the text goes to the journal.
#[derive(Debug, thiserror::Error)]
enum ImpulseFailure {
    /// The place cannot be spoken in now (checked before paying for the turn).
    #[error(transparent)]
    Undeliverable(#[from] SpeechError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Executive(#[from] ExecError),
    /// The turn ended without its final tool; holds the outcome as debugged.
    #[error("no decision: {0}")]
    NoDecision(String),
    #[error(transparent)]
    Args(#[from] ArgsError),
    #[error("there is no channel to say it in")]
    NoChannel,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Act {
    /// The message to post now; leave out to post nothing.
    #[serde(default)]
    say: Option<String>,
    /// What you did, in a sentence (kept in your journal).
    note: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Explored {
    /// What you learned, in a sentence or two (kept in your memory).
    learned: String,
    /// A thought worth sharing with people here later, if any.
    #[serde(default)]
    share: Option<String>,
}

#[derive(Serialize)]
struct ImpulsePrompt {
    persona: String,
    bot_name: String,
    guild_name: String,
    now: String,
    kind: &'static str,
    text: String,
    context: String,
    channel: Option<String>,
    lines: Vec<PromptLine>,
    memory: Vec<String>,
}

pub(crate) struct ImpulseHandler {
    pub store: Stores,
    pub settings: Arc<SettingsService>,
    pub journal: Journal,
    pub clock: SharedClock,
    pub executive: Arc<Executive>,
    pub speech: Arc<Speech>,
    pub memory: Arc<Memory>,
    pub impulses: Arc<Impulses>,
}

impl ImpulseHandler {
    fn prompt(
        &self,
        guild: Option<GuildId>,
        channel: Option<ChannelId>,
        kind: &'static str,
        text: &str,
        context: &str,
    ) -> ImpulsePrompt {
        let settings = self.settings.for_guild(guild);
        let memory = match guild {
            Some(g) if settings.memory.enabled => self
                .memory
                .search(Reader::Guild(g), &format!("{text} {context}"), 6)
                .into_iter()
                .map(|s| s.fact.content)
                .collect(),
            _ => Vec::new(),
        };
        ImpulsePrompt {
            persona: settings.bot.persona.clone(),
            bot_name: settings.bot.name.clone(),
            guild_name: guild
                .and_then(|g| self.store.messages.guild_name(g).ok().flatten())
                .unwrap_or_default(),
            now: {
                let tz = settings.zone();
                self.clock
                    .now()
                    .with_timezone(&tz)
                    .format("%A %Y-%m-%d %H:%M %Z")
                    .to_string()
            },
            kind,
            text: text.to_string(),
            context: context.to_string(),
            channel: channel.map(|c| {
                self.store
                    .messages
                    .channel_name(c)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| c.to_string())
            }),
            lines: channel
                .map(|c| {
                    self.store
                        .messages
                        .recent_messages(c, 15)
                        .unwrap_or_default()
                        .iter()
                        .map(PromptLine::from)
                        .collect()
                })
                .unwrap_or_default(),
            memory,
        }
    }

    async fn turn(
        &self,
        guild: Option<GuildId>,
        channel: Option<ChannelId>,
        prompt: &ImpulsePrompt,
        final_tool: FinalTool,
    ) -> Result<serde_json::Value, ImpulseFailure> {
        // What the model writes here is meant for the channel: not paid for if it could not be said.
        if let Some(channel) = channel {
            self.speech.deliverable(Place { guild, channel })?;
        }
        let rendered = self.executive.prompts.render("impulse", prompt)?;
        let settings = self.settings.for_guild(guild);
        let mut turn = Turn::new(
            Role::Ambient,
            guild,
            format!("{} impulse: {}", prompt.kind, prompt.text),
        );
        turn.channel = channel;
        turn.system = rendered.system;
        turn.messages = vec![Message::user(rendered.user)];
        turn.final_tool = Some(final_tool);
        turn.max_steps = settings.initiative.text.max_tool_steps;
        turn.max_calls = settings.initiative.text.max_tool_calls;
        if let (Some(g), true) = (guild, settings.memory.enabled) {
            turn.tools.push(crate::memory::tools::memory_search(
                &self.memory,
                Reader::Guild(g),
            ));
        }
        match self.executive.run_turn(turn).await.outcome {
            Ok(TurnOutcome::Final(v)) => Ok(v),
            Ok(other) => Err(ImpulseFailure::NoDecision(format!("{other:?}"))),
            Err(e) => Err(e.into()),
        }
    }

    /// Says `text`; only `owner` (whose task it is) may be pinged.
    async fn say(
        &self,
        guild: Option<GuildId>,
        channel: Option<ChannelId>,
        text: &str,
        cause: &str,
        owner: Option<UserId>,
    ) -> Result<Vec<MessageId>, ImpulseFailure> {
        let Some(channel) = channel else {
            return Err(ImpulseFailure::NoChannel);
        };
        let pings: Vec<UserId> = owner.into_iter().collect();
        Ok(self
            .speech
            .say_pinging(Place { guild, channel }, text, None, cause, &pings)
            .await?)
    }

    /// A journal entry; `sent` are the ids of what was said, so `why` finds it.
    fn note(
        &self,
        guild: Option<GuildId>,
        channel: Option<ChannelId>,
        summary: String,
        reason: String,
        sent: &[MessageId],
    ) {
        self.note_said(guild, channel, summary, reason, sent, None);
    }

    /// [`Self::note`], naming the routine that said it, if one did.
    fn note_said(
        &self,
        guild: Option<GuildId>,
        channel: Option<ChannelId>,
        summary: String,
        reason: String,
        sent: &[MessageId],
        routine: Option<&str>,
    ) {
        let mut e = Entry::new(Kind::Impulse, summary)
            .place(guild, channel)
            .reason(reason);
        if let Some(first) = sent.first() {
            e = e.message(*first).data(serde_json::json!({
                "sent": sent.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
                "routine": routine,
            }));
        }
        self.journal.record(e);
    }

    async fn task(&self, id: &str) -> Outcome {
        let Ok(Some(task)) = self.store.impulses.task(id) else {
            return Outcome::Declined(format!("task {id} no longer exists"));
        };
        if task.done_at.is_some() {
            return Outcome::Declined(format!("task {} is already done", task.short_id()));
        }
        let now = self.clock.now();
        if let Some(channel) = task.channel {
            let place = Place {
                guild: task.guild,
                channel,
            };
            if let Err(why) = self.speech.deliverable(place) {
                return self.postpone(&task, &why.to_string(), now);
            }
            if let Some((refused, until)) = self.unasked_refusal(&task, channel, now) {
                return self.postpone_until(&task, &refused, until, now);
            }
        }
        if let Some(message) = &task.message {
            return match self
                .say(
                    task.guild,
                    task.channel,
                    message,
                    &format!("task-{}", task.id),
                    task.owner,
                )
                .await
            {
                Ok(sent) => {
                    // The task was claimed before it fired: a lost completion cannot fire it twice.
                    let _ = self.store.impulses.complete_task(&task.id, now);
                    self.note(
                        task.guild,
                        task.channel,
                        format!("did a task: {}", task.text),
                        format!("said {message:?}"),
                        &sent,
                    );
                    Outcome::Done
                }
                Err(e) => Outcome::Failed(format!("could not deliver the reminder: {e}")),
            };
        }
        let prompt = self.prompt(task.guild, task.channel, "task", &task.text, &task.context);
        let act = FinalTool::of::<Act>(
            "act",
            "What you did about it: what to say (if anything) and a note.",
        );
        match self.turn(task.guild, task.channel, &prompt, act).await {
            Ok(v) => {
                let act: Act = match parse_args(&v) {
                    Ok(a) => a,
                    Err(e) => return Outcome::Failed(e.to_string()),
                };
                // The task was claimed before it fired: a lost completion cannot fire it twice.
                let _ = self.store.impulses.complete_task(&task.id, now);
                self.finish(
                    task.guild,
                    task.channel,
                    &format!("did a task: {}", task.text),
                    act,
                    (&format!("task-{}", task.id), None),
                )
                .await
            }
            Err(why) => Outcome::Failed(format!("could not act on the task: {why}")),
        }
    }

    /// Why a task nobody asked for (the garden's own, with no owner) may
    /// not be said in `channel` now — quiet hours or a hush, as for every
    /// unprompted word — and when that ends, if known. A reminder a person
    /// asked for is theirs, and goes.
    fn unasked_refusal(
        &self,
        task: &Task,
        channel: ChannelId,
        now: DateTime<Utc>,
    ) -> Option<(String, Option<DateTime<Utc>>)> {
        let guild = task.guild.filter(|_| task.owner.is_none())?;
        let settings = self.settings.for_guild(Some(guild));
        let refused =
            crate::courtesy::unprompted(&settings, &(&self.store).into(), guild, channel, now)
                .err()?;
        let until = crate::courtesy::quiet_until(&settings, now).or_else(|| {
            crate::courtesy::hush_on(&self.store.people, guild, Some(channel), now)
                .ok()
                .flatten()
                .map(|h| h.until)
        });
        Some((format!("{} gate: {}", refused.gate, refused.reason), until))
    }

    /// A due task that cannot be said now is due again later, not lost and not paid for.
    fn postpone(&self, task: &Task, why: &str, now: DateTime<Utc>) -> Outcome {
        self.postpone_until(task, why, None, now)
    }

    /// [`Self::postpone`] to when what stops it ends (`until`), if later than the usual wait.
    fn postpone_until(
        &self,
        task: &Task,
        why: &str,
        until: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Outcome {
        let later = (now + chrono::Duration::minutes(POSTPONE_MINUTES)).max(until.unwrap_or(now));
        match self.store.impulses.postpone_task(&task.id, later) {
            Ok(_) => {
                self.note(
                    task.guild,
                    task.channel,
                    format!("postponed a task: {}", task.text),
                    format!("{why}; due again at {}", later.format("%H:%M UTC")),
                    &[],
                );
                Outcome::Done
            }
            Err(e) => Outcome::Failed(format!("could not postpone the task ({why}): {e}")),
        }
    }

    async fn scheduled(&self, guild: Option<GuildId>, name: &str) -> Outcome {
        let entry = self
            .store
            .impulses
            .schedules(guild)
            .unwrap_or_default()
            .into_iter()
            .find(|s| s.name == name);
        let Some(entry) = entry else {
            return Outcome::Declined(format!("schedule entry {name} was removed"));
        };
        // A routine is unprompted: quiet hours skip it unless it runs anyway, and
        // nobody answering the bot's last posts unless it posts even then; a hush always does.
        let settings = self.settings.for_guild(Some(entry.guild));
        let now = self.clock.now();
        let quiet = crate::courtesy::quiet(&settings, now).filter(|_| !entry.during_quiet_hours);
        let hush =
            match crate::courtesy::hush_on(&self.store.people, entry.guild, entry.channel, now) {
                Ok(h) => {
                    h.map(|h| crate::courtesy::hushed(&self.store.messages, &settings, &h, now))
                }
                Err(e) => Some(crate::courtesy::Refusal::read_failed("the hushes", &e)),
            };
        let unanswered = || {
            if entry.even_if_unanswered {
                return None;
            }
            self.unanswered(&settings, &entry).err()
        };
        if let Some(r) = quiet.or(hush).or_else(unanswered) {
            self.note(
                Some(entry.guild),
                entry.channel,
                format!("skipped the routine {}", entry.name),
                format!("{} gate: {}", r.gate, r.reason),
                &[],
            );
            return Outcome::Done;
        }
        let prompt = self.prompt(
            Some(entry.guild),
            entry.channel,
            "schedule",
            &entry.action,
            &format!("the routine \"{}\" ({})", entry.name, entry.cron),
        );
        let act = FinalTool::of::<Act>(
            "act",
            "What you did about it: what to say (if anything) and a note.",
        );
        let cause = format!("schedule-{}-{}", entry.id, self.clock.now().timestamp());
        match self
            .turn(Some(entry.guild), entry.channel, &prompt, act)
            .await
        {
            Ok(v) => match parse_args::<Act>(&v) {
                Ok(act) => {
                    self.finish(
                        Some(entry.guild),
                        entry.channel,
                        &format!("ran the routine {}", entry.name),
                        act,
                        (&cause, Some(&entry.name)),
                    )
                    .await
                }
                Err(e) => Outcome::Failed(e.to_string()),
            },
            Err(why) => Outcome::Failed(format!("could not run the routine: {why}")),
        }
    }

    /// Says what the turn decided; `(cause, routine)`: the send's nonce
    /// cause, and the routine that fired it, if one did.
    /// Whether the routine may post with nobody having answered the bot's
    /// last unprompted posts: the initiative's `unanswered` gate, with the
    /// routine's own channel answering it too. A read that fails refuses.
    fn unanswered(
        &self,
        settings: &crate::settings::Settings,
        entry: &ScheduleEntry,
    ) -> Result<(), crate::courtesy::Refusal> {
        use crate::courtesy::Refusal;
        use crate::initiative::gates;
        if settings.initiative.text.max_unanswered_posts == 0 {
            return Ok(());
        }
        let failed = |e| Refusal::read_failed("when people last posted", &e);
        let channels = self
            .store
            .messages
            .guild_channels(entry.guild)
            .map_err(failed)?;
        let mut room = gates::eligible_pool(settings, &channels);
        room.extend(entry.channel.filter(|c| !room.contains(c)));
        let mut last_human = None;
        for c in &room {
            last_human = last_human.max(self.store.messages.last_human_in(*c).map_err(failed)?);
        }
        let posts = gates::unanswered(
            &self.store.messages,
            settings,
            entry.guild,
            &room,
            last_human,
        )?;
        match gates::unanswered_refusal(settings, &posts) {
            Some(reason) => Err(Refusal {
                gate: "unanswered",
                reason: format!("{reason}; the routine was not added to post even then"),
            }),
            None => Ok(()),
        }
    }

    async fn finish(
        &self,
        guild: Option<GuildId>,
        channel: Option<ChannelId>,
        summary: &str,
        act: Act,
        (cause, routine): (&str, Option<&str>),
    ) -> Outcome {
        match act.say.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(text) => match self.say(guild, channel, text, cause, None).await {
                Ok(sent) => {
                    self.note_said(
                        guild,
                        channel,
                        summary.to_string(),
                        act.note,
                        &sent,
                        routine,
                    );
                    Outcome::Done
                }
                Err(e) => Outcome::Failed(format!("could not say it: {e}")),
            },
            None => {
                self.note(
                    guild,
                    channel,
                    summary.to_string(),
                    format!("{} (nothing posted)", act.note),
                    &[],
                );
                Outcome::Done
            }
        }
    }

    async fn idea(&self, guild: Option<GuildId>, id: &str) -> Outcome {
        let Ok(Some(idea)) = self.store.impulses.idea(id) else {
            return Outcome::Declined(format!("idea {id} no longer exists"));
        };
        let prompt = self.prompt(guild, None, "idea", &idea.text, &idea.sparked_by);
        let explored = FinalTool::of::<Explored>(
            "explored",
            "What you learned, and maybe a thought to share later.",
        );
        let found = match self.turn(guild, None, &prompt, explored).await {
            Ok(v) => parse_args::<Explored>(&v).map_err(ImpulseFailure::from),
            Err(why) => Err(why),
        };
        let found = match found {
            Ok(e) => e,
            Err(why) => {
                let later = self
                    .impulses
                    .idea_failed(guild, &idea.id)
                    .map_or(String::new(), |s| {
                        format!("; the idea waits, {}", s.describe())
                    });
                return Outcome::Failed(format!("could not explore the idea: {why}{later}"));
            }
        };
        self.impulses.idea_explored(guild);
        let now = self.clock.now();
        if let Some(g) = guild {
            let fact = crate::memory::manual(
                Scope::guild(g),
                FactKind::Fact,
                Some(Importance::Low),
                &found.learned,
                None,
                now,
            );
            // Harmless if lost: the journal note below keeps what was learned.
            let _ = self.memory.remember(fact, None);
            // A thought worth sharing waits for the initiative cycle, which decides when and where.
            if let Some(share) = found
                .share
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                && self.no_held_thought(g)
            {
                let max_age = chrono::Duration::minutes(i64::from(
                    self.settings
                        .for_guild(guild)
                        .initiative
                        .text
                        .pending_thought_max_age_minutes,
                ));
                let thought = PendingThought::new(
                    g,
                    share.to_string(),
                    None,
                    format!("from exploring: {}", idea.text),
                    None,
                    now,
                    max_age,
                );
                // Harmless if lost: sharing is optional, and the note below keeps the finding.
                let _ = self.store.initiative.save_pending_thought(&thought);
            }
        }
        self.note(
            guild,
            None,
            format!("explored an idea: {}", idea.text),
            found.learned,
            &[],
        );
        Outcome::Done
    }

    /// Whether `guild` holds no thought, so an idea's may be kept: one
    /// that cannot be read might be there, and is not written over.
    fn no_held_thought(&self, guild: GuildId) -> bool {
        match self.store.initiative.pending_thought(guild) {
            Ok(held) => held.is_none(),
            Err(e) => {
                let what = "the held thought, before keeping an idea's";
                self.journal.read_failed(Some(guild), what, &e);
                false
            }
        }
    }
}

#[async_trait]
impl Handler for ImpulseHandler {
    fn name(&self) -> String {
        "impulses".into()
    }

    fn order(&self) -> i32 {
        ORDER_IMPULSE
    }

    fn wants(&self, item: &Attended) -> Option<String> {
        match &item.input {
            Input::Impulse(i) => match &i.kind {
                ImpulseKind::TaskDue { .. } => Some("a task is due".into()),
                ImpulseKind::Scheduled { .. } => Some("a schedule entry fired".into()),
                ImpulseKind::Idea { .. } => Some("it is quiet: time to explore an idea".into()),
                _ => None,
            },
            _ => None,
        }
    }

    async fn handle(&self, item: &Attended) -> Outcome {
        let Input::Impulse(i) = &item.input else {
            return Outcome::Declined("not an impulse".into());
        };
        match &i.kind {
            ImpulseKind::TaskDue { task_id } => self.task(task_id).await,
            ImpulseKind::Scheduled { name } => self.scheduled(i.guild, name).await,
            ImpulseKind::Idea { idea_id } => self.idea(i.guild, idea_id).await,
            _ => Outcome::Declined("not an impulse this handler acts on".into()),
        }
    }
}
