//! Impulses: what moves the bot from inside (seed: attention-reflexes-executive.md).
//!
//! - tasks: "I will do X by T" — a reminder a person asked for, or a
//!   commitment the bot made in conversation; a due task becomes an impulse
//!   once (it is marked fired before it is queued, so a restart cannot fire
//!   it again);
//! - a schedule of recurring actions with cron expressions, in the guild's
//!   timezone; missed firings are not replayed, the next one simply happens;
//! - ideas: things to explore, which become impulses only when the guild
//!   has been idle for `impulses.ideaIdleMinutes`, and not in its quiet
//!   hours or while it is hushed (a finding is meant to be shared); an exploration that fails
//!   gives its idea back and backs off for that guild (1, 2, 4, … minutes, at
//!   most `IDEA_BACKOFF_CEILING_MINUTES`).
//!
//! The check runs every `impulses.activeCheckSeconds` while people are
//! talking with the bot and every `idleCheckSeconds` otherwise.

use crate::store::cut;
use crate::store::{ImpulseStore, InitiativeStore, MessageStore, PeopleStore};
pub(crate) mod handler;
pub(crate) mod tools;
pub(crate) mod when;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use tokio::sync::watch;

use crate::attention::{Impulse, ImpulseKind, Input, Spine};
use crate::backoff::{Backoff, Setback};
use crate::clock::SharedClock;
use crate::ids::{ChannelId, GuildId, UserId};
use crate::journal::Journal;
use crate::settings::SettingsService;
use crate::store::impulses::{Idea, ScheduleEntry, Task};
use crate::vocab::Priority;
use crate::vocab::journal::{Entry, Kind};

/// What [`Impulses::add_task`] needs.
pub struct NewTask {
    pub guild: Option<GuildId>,
    pub channel: Option<ChannelId>,
    pub text: String,
    /// As a person wrote it: "in 10m", "tomorrow 9:00", "18:30", …
    pub due: String,
    /// Said as is when due (a reminder); without it the bot decides then.
    pub message: Option<String>,
    /// What led to it, for the bot when it acts on it.
    pub context: String,
    /// Who or what added it, for people: a name, `reflex:remind-me`.
    pub created_by: String,
    /// The person it belongs to, who may close it.
    pub owner: Option<UserId>,
}

/// Why a task, idea or schedule entry was not added; the text is for whoever asked.
#[derive(Debug, thiserror::Error)]
pub enum ImpulseError {
    #[error("a task needs a description")]
    NoDescription,
    #[error(
        "that task is too long: keep the text under 500 characters and the message under 1,800"
    )]
    TaskTooLong,
    #[error(transparent)]
    Due(#[from] when::DueError),
    #[error(
        "you already have {max} open tasks here (impulses.maxOpenTasksPerPerson); close one with /task done first"
    )]
    TooManyOpen { max: u32 },
    #[error("an idea needs some words")]
    EmptyIdea,
    #[error("ideas belong to a server: suggest it there")]
    IdeaWithoutServer,
    #[error("{name:?} is not a schedule name (1–40 letters, digits, - or _)")]
    BadScheduleName { name: String },
    #[error(transparent)]
    Cron(#[from] when::CronError),
    #[error("a schedule entry needs an action: what should the bot do?")]
    NoAction,
    #[error("there is already a schedule entry named {name:?} here")]
    DuplicateSchedule { name: String },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Which of the courtesy gates a routine may pass that a post made unasked
/// would stop at: all off for a routine added plainly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoutineFlags {
    /// It runs in the server's quiet hours too (otherwise those firings are skipped).
    pub during_quiet_hours: bool,
    /// It posts even when nobody has answered the bot's last unprompted
    /// posts (`initiative.text.maxUnansweredPosts`): a routine people rely
    /// on, such as a meeting's reminder. Otherwise those firings are skipped.
    pub even_if_unanswered: bool,
}

pub struct Impulses {
    store: Stores,
    settings: Arc<SettingsService>,
    journal: Journal,
    clock: SharedClock,
    spine: Arc<Spine>,
    /// Guilds whose last idea exploration failed, waiting before the next.
    idea_backoff: Backoff<GuildId>,
}

/// The longest a guild waits between failing idea explorations.
pub(crate) const IDEA_BACKOFF_CEILING_MINUTES: i64 = 6 * 60;

/// How long after claiming a task a restart may still deliver it.
const RESUME_WINDOW_MINUTES: i64 = 10;

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl Impulses {
    pub(crate) fn new(
        store: Stores,
        settings: Arc<SettingsService>,
        journal: Journal,
        clock: SharedClock,
        spine: Arc<Spine>,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            settings,
            journal,
            clock,
            spine,
            idea_backoff: Backoff::new(
                chrono::Duration::minutes(1),
                chrono::Duration::minutes(IDEA_BACKOFF_CEILING_MINUTES),
            ),
        })
    }

    /// An exploration failed: the idea waits to be explored again, and the
    /// guild backs off before the next try.
    pub(crate) fn idea_failed(&self, guild: Option<GuildId>, idea_id: &str) -> Option<Setback> {
        let g = guild?;
        // Losing the release only loses this one idea, as before back-off existed.
        let _ = self.store.impulses.release_idea(idea_id);
        Some(self.idea_backoff.failed(&g, self.clock.now()))
    }

    /// An exploration succeeded: the guild's back-off (if any) is over.
    pub(crate) fn idea_explored(&self, guild: Option<GuildId>) {
        if let Some(g) = guild {
            self.idea_backoff.succeeded(&g);
        }
    }

    pub(crate) fn timezone(&self, guild: Option<GuildId>) -> Tz {
        self.settings.for_guild(guild).zone()
    }

    /// Adds a task; `due` is what a person wrote ("in 10m", "tomorrow 9:00", …).
    pub fn add_task(&self, new: NewTask) -> Result<Task, ImpulseError> {
        let NewTask {
            guild,
            channel,
            text,
            due,
            message,
            context,
            created_by,
            owner,
        } = new;
        let now = self.clock.now();
        let text = text.trim();
        if text.is_empty() {
            return Err(ImpulseError::NoDescription);
        }
        if text.chars().count() > 500 || message.as_ref().is_some_and(|m| m.chars().count() > 1_800)
        {
            return Err(ImpulseError::TaskTooLong);
        }
        let due = when::parse_due(&due, now, self.timezone(guild))?;
        if let Some(person) = owner {
            let max = self
                .settings
                .for_guild(guild)
                .impulses
                .max_open_tasks_per_person;
            if self.store.impulses.open_tasks_of(guild, person)? >= u64::from(max) {
                return Err(ImpulseError::TooManyOpen { max });
            }
        }
        let task = Task {
            id: new_id(),
            guild,
            channel,
            text: text.to_string(),
            message,
            due,
            priority: 1,
            context,
            created_by: created_by.clone(),
            owner,
            created_at: now,
            fired_at: None,
            done_at: None,
        };
        self.store.impulses.insert_task(&task)?;
        self.journal.record(
            Entry::new(Kind::Impulse, format!("task added: {}", task.text))
                .place(guild, channel)
                .reason(format!(
                    "due {} — by {created_by}",
                    task.due.format("%Y-%m-%d %H:%M UTC")
                )),
        );
        Ok(task)
    }

    pub fn add_idea(
        &self,
        guild: Option<GuildId>,
        text: &str,
        sparked_by: &str,
    ) -> Result<Idea, ImpulseError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ImpulseError::EmptyIdea);
        }
        if guild.is_none() {
            return Err(ImpulseError::IdeaWithoutServer);
        }
        let idea = Idea {
            id: new_id(),
            guild,
            text: text.into(),
            sparked_by: sparked_by.into(),
            created_at: self.clock.now(),
            explored_at: None,
        };
        self.store.impulses.insert_idea(&idea)?;
        self.journal.record(
            Entry::new(Kind::Impulse, format!("idea noted: {}", idea.text))
                .guild(guild)
                .reason(sparked_by.to_string()),
        );
        Ok(idea)
    }

    pub fn add_schedule(
        &self,
        guild: GuildId,
        channel: Option<ChannelId>,
        name: &str,
        cron: &str,
        action: &str,
        created_by: &str,
    ) -> Result<ScheduleEntry, ImpulseError> {
        self.add_routine_with(
            guild,
            channel,
            name,
            cron,
            action,
            created_by,
            RoutineFlags::default(),
        )
    }

    /// Like [`Impulses::add_schedule`], with the routine's [`RoutineFlags`].
    #[allow(clippy::too_many_arguments)]
    pub fn add_routine_with(
        &self,
        guild: GuildId,
        channel: Option<ChannelId>,
        name: &str,
        cron: &str,
        action: &str,
        created_by: &str,
        flags: RoutineFlags,
    ) -> Result<ScheduleEntry, ImpulseError> {
        let name = name.trim();
        if name.is_empty()
            || name.len() > 40
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ImpulseError::BadScheduleName { name: name.into() });
        }
        when::parse_cron(cron)?;
        if action.trim().is_empty() {
            return Err(ImpulseError::NoAction);
        }
        let entry = ScheduleEntry {
            id: new_id(),
            guild,
            channel,
            name: name.into(),
            cron: cron.trim().into(),
            action: action.trim().into(),
            created_by: created_by.into(),
            created_at: self.clock.now(),
            last_fired_at: None,
            during_quiet_hours: flags.during_quiet_hours,
            even_if_unanswered: flags.even_if_unanswered,
        };
        if !self.store.impulses.insert_schedule(&entry)? {
            return Err(ImpulseError::DuplicateSchedule { name: name.into() });
        }
        self.journal.record(
            Entry::new(
                Kind::Impulse,
                format!("schedule added: {name} ({})", entry.cron),
            )
            .place(Some(guild), channel)
            .reason(entry.action.clone()),
        );
        Ok(entry)
    }

    /// One check: due tasks and schedule entries, and ideas where it is quiet,
    /// become impulses in the attention queue. Returns what was queued.
    pub fn check(&self) -> Vec<Impulse> {
        let now = self.clock.now();
        let mut queued = self.tasks_due(now);
        queued.extend(self.schedules_due(now));
        queued.extend(self.ideas_ready(now));
        for i in &queued {
            self.spine.submit(Input::Impulse(i.clone()));
        }
        queued
    }

    /// Tasks whose time has come, claimed so that no other check fires them again.
    fn tasks_due(&self, now: DateTime<Utc>) -> Vec<Impulse> {
        let mut queued = Vec::new();
        for task in self.store.impulses.claim_due_tasks(now).unwrap_or_default() {
            let mut i = Impulse::new(
                ImpulseKind::TaskDue {
                    task_id: task.id.clone(),
                },
                task.guild,
                now,
            );
            i.channel = task.channel;
            i.priority = if task.priority >= 2 {
                Priority::High
            } else {
                Priority::Normal
            };
            i.detail = task.text.clone();
            queued.push(i);
        }
        queued
    }

    /// Schedule entries due since they last fired, each marked fired once.
    fn schedules_due(&self, now: DateTime<Utc>) -> Vec<Impulse> {
        let mut queued = Vec::new();
        for entry in self.store.impulses.schedules(None).unwrap_or_default() {
            let Ok(schedule) = when::parse_cron(&entry.cron) else {
                continue;
            };
            let since = entry.last_fired_at.unwrap_or(entry.created_at);
            let due = when::next_fire(&schedule, since, self.timezone(Some(entry.guild)))
                .is_some_and(|next| next <= now);
            if due
                && self
                    .store
                    .impulses
                    .mark_schedule_fired(&entry.id, entry.last_fired_at, now)
                    .unwrap_or(false)
            {
                let mut i = Impulse::new(
                    ImpulseKind::Scheduled {
                        name: entry.name.clone(),
                    },
                    Some(entry.guild),
                    now,
                );
                i.channel = entry.channel;
                i.detail = entry.action.clone();
                queued.push(i);
            }
        }
        queued
    }

    /// One idea per guild that is idle, not backing off, and neither quiet nor hushed.
    fn ideas_ready(&self, now: DateTime<Utc>) -> Vec<Impulse> {
        let mut queued = Vec::new();
        for (guild, _) in self.store.messages.known_guilds().unwrap_or_default() {
            if !self.idea_backoff.ready(&guild, now) || !self.idle(guild, now) {
                continue;
            }
            // What an idea finds is meant to be shared: not explored while nothing may be.
            let settings = self.settings.for_guild(Some(guild));
            let hushed = match crate::courtesy::hush_on(&self.store.people, guild, None, now) {
                Ok(h) => h.is_some(),
                Err(e) => {
                    // An unreadable hush counts as one: the idea waits for the next look.
                    self.journal.read_failed(
                        Some(guild),
                        "the hushes, before exploring an idea",
                        &e,
                    );
                    true
                }
            };
            if crate::courtesy::quiet(&settings, now).is_some() || hushed {
                continue;
            }
            let Some(idea) = self
                .store
                .impulses
                .ideas(Some(guild), false)
                .unwrap_or_default()
                .into_iter()
                .next()
            else {
                continue;
            };
            if self
                .store
                .impulses
                .claim_idea(&idea.id, now)
                .unwrap_or(false)
            {
                let mut i = Impulse::new(
                    ImpulseKind::Idea {
                        idea_id: idea.id.clone(),
                    },
                    Some(guild),
                    now,
                );
                i.priority = Priority::Low;
                i.detail = idea.text.clone();
                queued.push(i);
            }
        }
        queued
    }

    /// Nobody is talking with the bot in the guild, and nobody has spoken there for a while.
    /// A time that cannot be read is no proof of quiet: the idea waits, and the journal says why.
    fn idle(&self, guild: GuildId, now: DateTime<Utc>) -> bool {
        if !self
            .spine
            .active
            .active_channels(Some(guild), now)
            .is_empty()
        {
            return false;
        }
        let quiet = chrono::Duration::minutes(i64::from(
            self.settings
                .for_guild(Some(guild))
                .impulses
                .idea_idle_minutes,
        ));
        let unread = |what: &'static str, e: crate::store::StoreError| {
            self.journal.read_failed(Some(guild), what, &e);
            false
        };
        let last_human = match self.store.impulses.last_human_message(guild) {
            Ok(t) => t,
            Err(e) => return unread("when people last posted, before exploring an idea", e),
        };
        // One idea per quiet spell: the next waits until people have spoken again.
        let explored = match self.store.impulses.last_idea_explored(guild) {
            Ok(t) => t,
            Err(e) => return unread("when an idea was last explored", e),
        };
        if explored.is_some_and(|e| last_human.is_none_or(|h| e >= h)) {
            return false;
        }
        last_human.is_none_or(|t| now - t >= quiet)
    }

    /// How long until the next check: short while people are talking with the bot, long when idle.
    pub fn interval(&self) -> Duration {
        let s = self.settings.global();
        let seconds = if self.spine.active.any_active(self.clock.now()) {
            s.impulses.active_check_seconds
        } else {
            s.impulses.idle_check_seconds
        };
        Duration::from_secs(u64::from(seconds.max(1)))
    }

    /// At start: a task claimed just before the process stopped is queued
    /// again while its nonce still guards against a double post (the same
    /// task always speaks with the same nonce); an older one is closed and
    /// journaled rather than repeated late.
    pub fn recover(&self) {
        let now = self.clock.now();
        for task in self.store.impulses.interrupted_tasks().unwrap_or_default() {
            let fired = task.fired_at.unwrap_or(now);
            if now - fired <= chrono::Duration::minutes(RESUME_WINDOW_MINUTES) {
                let mut i = Impulse::new(
                    ImpulseKind::TaskDue {
                        task_id: task.id.clone(),
                    },
                    task.guild,
                    now,
                );
                i.channel = task.channel;
                i.detail = task.text.clone();
                self.spine.submit(Input::Impulse(i));
                self.journal.record(
                    Entry::new(
                        Kind::Impulse,
                        format!("resuming a task interrupted by a restart: {}", task.text),
                    )
                    .place(task.guild, task.channel),
                );
            } else {
                // Harmless if lost: the task stays claimed, so it is never run twice.
                let _ = self.store.impulses.complete_task(&task.id, now);
                self.journal.record(
                    Entry::new(
                        Kind::Impulse,
                        format!("task not repeated after a restart: {}", task.text),
                    )
                    .place(task.guild, task.channel)
                    .reason(format!(
                        "it was started {} and may have been done already",
                        crate::when::ago(fired, now)
                    )),
                );
            }
        }
    }

    pub(crate) async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        self.recover();
        let mut changes = self.settings.changes();
        loop {
            self.check();
            let checked = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(checked + self.interval()) => break,
                    // Reloaded check intervals count from the last check.
                    _ = changes.next() => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
    }
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub(crate) struct Stores {
    pub messages: MessageStore,
    pub initiative: InitiativeStore,
    pub people: PeopleStore,
    pub impulses: ImpulseStore,
}

cut!(Stores => crate::courtesy::Stores { messages, people });
