//! The garden: background memory consolidation with an adaptive,
//! budget-aware scheduler (seed: ambient-mode-garden-and-scheduler.md).
//!
//! ```text
//! run loop: wake at the scheduled time, on /ambient garden, when a
//!           conversation ends, or after a crash — an early wake only with
//!           the budget healthy; a wake due while people talk with the bot
//!           moves to the stretched interval (not a request) ─► Impulse(GardenDue)
//! attention (people first) ─► GardenHandler ─► one cycle (cycle.rs):
//!   1. the memory pass (pass.rs; code, no model; checkpointed per server):
//!      feedback harvest, duplicates merged, decayed facts pruned, links;
//!      conversations missed while the bot was down extracted
//!   2. for one server that needs it: a model turn (the `ambient` role, the
//!      prompt in prompt.rs) with todos / schedule_ambient /
//!      memory_resolve|confirm|retire and, past the warm-up, add_task /
//!      add_idea / propose_thought; it must end with end_ambient_cycle (else
//!      the seed's continuation once, then a forced end: incomplete, default wake)
//!   3. the transcript is stored; the next wake is the agent's proposal,
//!      pushed later or pulled earlier by the adaptive interval (scheduler.rs),
//!      or sooner for what was asked while the cycle ran
//! ```
//!
//! One cycle at a time: a mutex inside the process, and the data-directory
//! lock (`store::lock`) between processes. For this bot "proactive work" is
//! preparing tasks, ideas and pending thoughts — never posting: every post
//! still goes through the initiative gates.

use crate::store::{
    GardenStore, ImpulseStore, InitiativeStore, JournalStore, MemoryStore, MessageStore, UsageStore,
};
mod cycle;
pub mod feedback;
pub mod pass;
mod prompt;
pub(crate) mod scheduler;
pub(crate) mod similar;
pub(crate) mod tools;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};

use crate::attention::router::ORDER_IMPULSE;
use crate::attention::{Attended, Handler, Impulse, ImpulseKind, Input, Outcome, Spine};
use crate::backoff::Backoff;
use crate::clock::SharedClock;
use crate::executive::Executive;
use crate::ids::{ChannelId, GuildId, UserId};
use crate::impulses::Impulses;
use crate::journal::Journal;
use crate::memory::Memory;
use crate::settings::{Settings, SettingsService};
use crate::store::garden::QueueItem;
use crate::vocab::Priority;
use crate::vocab::journal::{Entry, Kind};
pub use cycle::{CycleError, CycleReport};
use scheduler::Plan;

/// The seed's continuation message, sent once when the model stops without the final call.
pub const CONTINUATION: &str = "You stopped unexpectedly without calling end_ambient_cycle.\n\
If you are done with your work, call end_ambient_cycle with a\n\
summary of what you accomplished and schedule your next wake.\n\
If you are not done, continue what you were doing.";

/// How long the run loop lets a queued cycle take before it stops waiting for it.
const CYCLE_WAIT: StdDuration = StdDuration::from_secs(15 * 60);
/// The context a `/ambient garden` request carries (and how a second one is recognised).
const REQUESTED: &str = "(/ambient garden)";
/// Why a cycle asked for while another runs is declined (the running one serves it).
const BUSY: &str = "a garden cycle is already running";

/// What `ambient status` and `/ambient status` show (kept in the store, so
/// another process can read it), and the next wake the run loop keeps to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// idle, running, scheduled or paused.
    pub state: String,
    pub detail: String,
    pub next_wake: Option<DateTime<Utc>>,
    /// Why then.
    pub next_reason: String,
    /// Whether the adaptive interval moved the wake someone asked for.
    pub adaptive_moved: bool,
}

/// The failure back-off's bounds: `garden.minIntervalMinutes` doubling up to `maxIntervalMinutes`.
fn backoff_bounds(g: &crate::settings::GardenSettings) -> (Duration, Duration) {
    (
        Duration::minutes(i64::from(g.min_interval_minutes.max(1))),
        Duration::minutes(i64::from(
            g.max_interval_minutes.max(g.min_interval_minutes),
        )),
    )
}

/// "at 14:00 UTC — it keeps to the budget, …": when a `/ambient garden`
/// request the budget holds back will be served, in the same words however
/// often it is asked.
fn held_until(at: DateTime<Utc>) -> String {
    format!(
        "at {} — it keeps to the budget, which holds it until then.",
        at.format("%H:%M UTC")
    )
}

/// Reads the garden's status from a store (for `ambient status` in another process too).
pub fn read_status(store: &GardenStore) -> Status {
    store
        .garden_get("status")
        .ok()
        .flatten()
        .unwrap_or_else(|| Status {
            state: "idle".into(),
            ..Default::default()
        })
}

pub struct Garden {
    store: Stores,
    settings: Arc<SettingsService>,
    journal: Journal,
    clock: SharedClock,
    executive: Arc<Executive>,
    memory: Arc<Memory>,
    impulses: Arc<Impulses>,
    spine: Arc<Spine>,
    me: UserId,
    running: tokio::sync::Mutex<()>,
    wake: Notify,
    cycle_done: Notify,
    /// A `GardenDue` impulse is queued or its cycle runs (so the loop never queues two).
    in_flight: AtomicBool,
    in_flight_since: Mutex<Option<Instant>>,
    /// Channels with a conversation at the last look (to notice one ending).
    was_active: Mutex<HashSet<ChannelId>>,
    /// A conversation ended while a cycle ran: its early wake, kept for the
    /// cycle's end (which would otherwise overwrite it with its own).
    early: Mutex<Option<String>>,
    /// Servers whose model part failed (and `None`: whole cycles that
    /// failed), waiting `garden.minIntervalMinutes` × 2ⁿ, at most
    /// `garden.maxIntervalMinutes`, before the next try.
    backoff: Backoff<Option<GuildId>>,
    /// The status the store would not take: `look` wakes by its next wake,
    /// so this process keeps it, and writes it again, until the store does.
    unsaved: Mutex<Option<Status>>,
    /// Held by whoever reads the next wake, decides, and writes it back (a
    /// request, the loop's look, a conversation ending, a cycle's end,
    /// recovery): a request made between another's read and its write
    /// would otherwise be overwritten by a wake decided without it. A
    /// running cycle's own writes are not under it: a request made while
    /// one runs is served by it or by the wake its end sets (`cycle_until`).
    deciding: Mutex<()>,
}

impl Garden {
    pub fn new(services: Services) -> Arc<Self> {
        let Services {
            store,
            settings,
            journal,
            clock,
            executive,
            memory,
            impulses,
            spine,
            me,
        } = services;
        let (base, ceiling) = backoff_bounds(&settings.global().garden);
        let backoff = Backoff::new(base, ceiling);
        Arc::new(Self {
            store,
            settings,
            journal,
            clock,
            executive,
            memory,
            impulses,
            spine,
            me,
            running: tokio::sync::Mutex::new(()),
            wake: Notify::new(),
            cycle_done: Notify::new(),
            in_flight: AtomicBool::new(false),
            in_flight_since: Mutex::new(None),
            was_active: Mutex::new(HashSet::new()),
            early: Mutex::new(None),
            backoff,
            unsaved: Mutex::new(None),
            deciding: Mutex::new(()),
        })
    }

    pub fn status(&self) -> Status {
        if let Some(s) = self.unsaved_lock().clone() {
            return s;
        }
        read_status(&self.store.garden)
    }

    /// One decision about the next wake at a time (see `deciding`).
    fn deciding(&self) -> std::sync::MutexGuard<'_, ()> {
        // Guards no data: a panic elsewhere cannot leave it half-written.
        self.deciding.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn unsaved_lock(&self) -> std::sync::MutexGuard<'_, Option<Status>> {
        // A plain value: a panic elsewhere cannot leave it half-written.
        self.unsaved.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Journals a failed write whose loss matters; the cycle goes on (what it did is done).
    fn saved<T>(&self, what: &str, r: crate::store::Result<T>) {
        if let Err(e) = r {
            self.journal.record(
                Entry::new(Kind::Error, format!("could not save {what}")).reason(e.to_string()),
            );
        }
    }

    fn set_status(&self, f: impl FnOnce(&mut Status)) {
        let mut s = self.status();
        f(&mut s);
        self.save_status(s);
    }

    /// Stores the status; one the store will not take is kept in this
    /// process instead (its next wake is what `look` keeps to), and the
    /// first such failure is journaled — not every retry.
    fn save_status(&self, s: Status) {
        let first_failure = {
            let mut unsaved = self.unsaved_lock();
            match self.store.garden.garden_set("status", &s) {
                Ok(()) => {
                    *unsaved = None;
                    return;
                }
                Err(e) => {
                    let first = unsaved.is_none();
                    *unsaved = Some(s);
                    first.then_some(e)
                }
            }
        };
        if let Some(e) = first_failure {
            self.journal.record(
                Entry::new(Kind::Error, "could not save the garden's status").reason(format!(
                    "{e}; this process keeps its next wake and writes it again at each look; \
                     until then `ambient status` in another process shows the last one saved"
                )),
            );
        }
    }

    pub fn scheduler_state(&self) -> scheduler::State {
        self.store
            .garden
            .garden_get("scheduler")
            .ok()
            .flatten()
            .unwrap_or_else(|| scheduler::State::new(&self.settings.global().garden))
    }

    fn schedule_wake(&self, at: DateTime<Utc>, reason: impl Into<String>, adaptive_moved: bool) {
        let reason = reason.into();
        self.set_status(|s| {
            s.state = "scheduled".into();
            s.detail = String::new();
            s.next_wake = Some(at);
            s.next_reason = reason;
            s.adaptive_moved = adaptive_moved;
        });
        self.wake.notify_one();
    }

    /// The earliest a cycle may run if asked for at `wanted`: an early wake
    /// (an event, a request, a restart) goes through only while the budget
    /// is healthy — no back-off after a 429, under 80 % used — and never
    /// within `garden.minIntervalMinutes` of the last cycle; otherwise it
    /// waits for the adaptive interval. Returns the time and, when held, why.
    fn earliest(&self, wanted: DateTime<Utc>) -> (DateTime<Utc>, Option<String>) {
        let settings = self.settings.global();
        let state = self.scheduler_state();
        let inputs = self.inputs();
        let held = state.consecutive_rate_limits > 0
            || inputs.budget_used > 0.8
            || inputs.unread.is_some();
        let Some(last) = self
            .store
            .garden
            .garden_get::<DateTime<Utc>>("last_cycle_at")
            .ok()
            .flatten()
        else {
            return self.earliest_first(wanted, held, &inputs, &state, &settings);
        };
        let min_gap = Duration::minutes(i64::from(settings.garden.min_interval_minutes));
        let (gap, why) = if held {
            let plan = scheduler::plan(&inputs, &state, &settings.garden);
            (
                plan.wait.unwrap_or(min_gap).max(min_gap),
                plan.why.join("; "),
            )
        } else {
            (
                min_gap,
                "the shortest interval since the last cycle (garden.minIntervalMinutes)"
                    .to_string(),
            )
        };
        if wanted >= last + gap {
            (wanted, None)
        } else {
            (last + gap, Some(why))
        }
    }

    /// [`Garden::earliest`] before the first cycle ever: there is no last
    /// cycle to count from, but the budget rule holds all the same. Over
    /// 80 % used, the wake already planned goes ahead when it comes; any
    /// other waits for it — or, when none is planned ahead (a wake left
    /// from before a restart), for the adaptive interval from now.
    fn earliest_first(
        &self,
        wanted: DateTime<Utc>,
        held: bool,
        inputs: &scheduler::Inputs,
        state: &scheduler::State,
        settings: &Settings,
    ) -> (DateTime<Utc>, Option<String>) {
        let scheduled = self.status().next_wake;
        if !held || scheduled == Some(wanted) {
            return (wanted, None);
        }
        let plan = scheduler::plan(inputs, state, &settings.garden);
        let min_gap = Duration::minutes(i64::from(settings.garden.min_interval_minutes));
        let planned = scheduled
            .filter(|t| *t > inputs.now)
            .unwrap_or_else(|| inputs.now + plan.wait.unwrap_or(min_gap).max(min_gap));
        if wanted >= planned {
            (wanted, None)
        } else {
            (planned, Some(plan.why.join("; ")))
        }
    }

    /// Whether a cycle runs in this process right now.
    fn cycle_running(&self) -> bool {
        self.running.try_lock().is_err()
    }

    /// Wakes early for an event — within the budget (see [`Garden::earliest`]).
    /// `None` while a cycle runs: its end decides the next wake, and takes
    /// what was asked meanwhile into account (see `cycle.rs`).
    fn wake_early(&self, wanted: DateTime<Utc>, reason: &str) -> Option<DateTime<Utc>> {
        if self.cycle_running() {
            return None;
        }
        let (at, held) = self.earliest(wanted);
        self.schedule_held(at, held, reason);
        Some(at)
    }

    /// Schedules a wake [`Garden::earliest`] gave, saying why it was held.
    fn schedule_held(&self, at: DateTime<Utc>, held: Option<String>, reason: &str) {
        match held {
            Some(why) => self.schedule_wake(
                at,
                format!("{reason}; held until {}: {why}", at.format("%H:%M UTC")),
                true,
            ),
            None => self.schedule_wake(at, reason, false),
        }
    }

    /// At start: a cycle left running was interrupted (a crash, a kill) —
    /// mark it and wake soon: the memory pass resumes from its checkpoint,
    /// if it had not finished, and the next cycle for that server is shown
    /// the plan's unfinished items; after a long downtime, one catch-up
    /// cycle (missed cycles are not replayed). `App::start` calls it before
    /// the loop and any front end start: a request made before it ran would
    /// be taken for one left from before a restart, or lost behind its wake.
    pub fn recover(&self) {
        let _deciding = self.deciding();
        let now = self.clock.now();
        // A cycle this process is running is not a crashed one.
        let interrupted = if self.cycle_running() {
            Vec::new()
        } else {
            self.store
                .garden
                .cycles_with_status(crate::store::garden::CycleStatus::Running)
                .unwrap_or_default()
        };
        let checkpoint = self
            .store
            .garden
            .garden_get::<serde_json::Value>("checkpoint")
            .ok()
            .flatten()
            .is_some();
        for mut c in interrupted.clone() {
            c.status = crate::store::garden::CycleStatus::Interrupted;
            c.ended_at = Some(now);
            if c.summary.is_empty() {
                c.summary = "interrupted: the bot stopped during this cycle".into();
            }
            self.saved("the interrupted cycle", self.store.garden.cycle_save(&c));
            let left = c.todos.iter().filter(|t| !t.done).count();
            let mut next = Vec::new();
            if checkpoint {
                next.push("the next cycle resumes the memory pass from its checkpoint".to_string());
            }
            if left > 0 && c.guild.is_some() {
                next.push(format!(
                    "the next cycle for this server is shown the {left} unfinished planned item(s)"
                ));
            }
            if next.is_empty() {
                next.push("nothing was left half-done".into());
            }
            self.journal.record(
                Entry::new(
                    Kind::Garden,
                    format!("garden cycle {} was interrupted", c.id),
                )
                .guild(c.guild)
                .reason(format!("the bot stopped during it; {}", next.join("; "))),
            );
        }
        // A pass that rested left no row: the last look is the later of the two.
        let last_at = self
            .store
            .garden
            .cycles(1)
            .ok()
            .and_then(|c| c.into_iter().next())
            .map(|c| c.started_at)
            .max(self.store.garden.garden_get("last_cycle_at").ok().flatten());
        let max = Duration::minutes(i64::from(
            self.settings.global().garden.max_interval_minutes,
        ));
        if !interrupted.is_empty() {
            self.wake_early(
                now,
                if checkpoint {
                    "restart after a crash: resume the memory pass from its checkpoint"
                } else {
                    "restart after a crash"
                },
            );
        } else if last_at.is_some_and(|t| now - t > max) {
            self.wake_early(now, "catch-up after downtime (one cycle, nothing replayed)");
        } else {
            if self.status().next_wake.is_none_or(|t| t < now) {
                let plan = self.plan();
                let min = Duration::minutes(i64::from(
                    self.settings.global().garden.min_interval_minutes,
                ));
                self.schedule_wake(now + plan.wait.unwrap_or(min), plan.why.join("; "), false);
            }
            // A request the last process never served is still someone's
            // request: it wakes the garden as it did when it was made, not
            // one new interval after the restart.
            if let Some(asked) = self.requested(None, now) {
                let (at, _) = self.earliest(now);
                if self.status().next_wake.is_none_or(|t| t > at) {
                    self.wake_early(now, &format!("{}, made before a restart", asked.context));
                }
            }
        }
    }

    /// `/ambient garden`: tend this server's memory next — still within budget.
    /// One request per server waits in the queue; asking again while it
    /// waits says it is on its way only if a wake is set for it (a cycle
    /// runs or is queued, or the wake comes no later than a new request's
    /// would), and when, if the budget holds it — otherwise, as after a
    /// failed model part, the request is woken again.
    pub fn request(&self, guild: GuildId, by: &str) -> String {
        let _deciding = self.deciding();
        let now = self.clock.now();
        if self.requested(Some(guild), now).is_some() {
            match self.on_its_way(now) {
                Some(at) if at > now => {
                    return format!(
                        "A garden cycle for this server is already on its way: {}",
                        held_until(at)
                    );
                }
                Some(_) => return "A garden cycle for this server is already on its way.".into(),
                None => {}
            }
        } else {
            let item = QueueItem {
                id: uuid::Uuid::new_v4().simple().to_string(),
                guild: Some(guild),
                scheduled_for: now,
                context: format!("{by} asked for a garden cycle {REQUESTED}"),
                priority: Priority::High,
                created_by: by.to_string(),
                created_at: now,
                done_at: None,
            };
            if let Err(e) = self.store.garden.queue_insert(&item) {
                return format!("Could not queue it: {e}");
            }
        }
        self.journal.record(
            Entry::new(Kind::Garden, "a garden cycle was requested")
                .guild(Some(guild))
                .reason(format!("by {by}")),
        );
        match self.wake_early(now, &format!("requested by {by}")) {
            None => "The garden is tending memory right now; this server comes next, as soon as the budget allows.".into(),
            Some(at) if at > now => {
                format!("The garden will tend this server's memory {}", held_until(at))
            }
            Some(_) => "The garden will tend this server's memory next.".into(),
        }
    }

    /// The oldest open `/ambient garden` request due by `now` (of `guild`, if given).
    fn requested(&self, guild: Option<GuildId>, now: DateTime<Utc>) -> Option<QueueItem> {
        self.store
            .garden
            .queue_open()
            .unwrap_or_default()
            .into_iter()
            .find(|q| {
                q.scheduled_for <= now
                    && q.context.ends_with(REQUESTED)
                    && guild.is_none_or(|g| q.guild == Some(g))
            })
    }

    /// When a cycle that serves a waiting request comes, if one is coming:
    /// now, when one runs or is queued in this process, else when the wake
    /// set no later than a new request would get comes — no earlier than
    /// the budget allows (a wake due sooner is held to then when it comes).
    /// A queue row alone is not enough — it outlives the process that woke
    /// the garden for it.
    fn on_its_way(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if self.cycle_running() || self.in_flight.load(Ordering::SeqCst) {
            return Some(now);
        }
        let (at, _) = self.earliest(now);
        let wake = self.status().next_wake?;
        (wake <= at).then_some(at)
    }

    /// Whether someone's `/ambient garden` request is due (not held back by people talking).
    fn requested_due(&self, now: DateTime<Utc>) -> bool {
        self.requested(None, now).is_some()
    }

    /// A wake that comes due while people talk with the bot was planned
    /// without the seed's "× 3–5 while the user is active": it moves to that
    /// stretched interval after the last cycle. The anchor is the last
    /// cycle, so it moves once, not again and again while they talk.
    fn held_for_talk(&self, plan: &Plan, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let last = self
            .store
            .garden
            .garden_get::<DateTime<Utc>>("last_cycle_at")
            .ok()
            .flatten()?;
        let at = last + plan.wait?;
        (at > now).then_some(at)
    }

    /// The scheduler's inputs, from real data: usage records, the provider's
    /// rate-limit headers, the last cycles' cost, who is talking.
    pub(crate) fn inputs(&self) -> scheduler::Inputs {
        let now = self.clock.now();
        let snap = self.executive.snapshot();
        let settings = self.settings.global();
        // The snapshot drops a window once it has reset: its stale "10 % left"
        // must not hold the interval at the maximum any longer.
        let window = match (snap.tokens_remaining, snap.tokens_limit, snap.window_reset) {
            (Some(remaining), Some(limit), Some(reset)) => Some(scheduler::Window {
                tokens_remaining: remaining,
                tokens_limit: limit,
                resets_at: reset,
            }),
            _ => None,
        };
        // This process's share of the bot's cap, as the budget check counts it.
        let cap = crate::settings::Role::Ambient.daily_budget(&settings);
        let daily_used = match (cap, snap.ambient_budget_remaining) {
            (0, _) | (_, None) => 0.0,
            (cap, Some(left)) => 1.0 - left as f64 / cap as f64,
        };
        let window_used = window.map_or(0.0, |w| {
            if w.tokens_limit == 0 {
                0.0
            } else {
                1.0 - w.tokens_remaining as f64 / w.tokens_limit as f64
            }
        });
        let mut unread = snap.unread;
        let recent = self
            .store
            .garden
            .recent_cycle_tokens(5)
            .unwrap_or_else(|e| {
                unread.get_or_insert(format!("store read failed: the last cycles' cost: {e}"));
                Vec::new()
            });
        let last_human = self.last_human(&mut unread);
        // An unreadable last cycle is no licence to wake early: it holds the
        // garden at its longest interval, as an unreadable spend does.
        let last_cycle = self
            .store
            .garden
            .garden_get::<DateTime<Utc>>("last_cycle_at")
            .unwrap_or_else(|e| {
                unread.get_or_insert(format!("store read failed: when the last cycle ran: {e}"));
                None
            });
        scheduler::Inputs {
            now,
            people_active: self.spine.active.any_active(now),
            idle_for: last_human.map(|t| now - t),
            window,
            user_tokens_per_minute: snap.user_tokens_per_minute,
            tokens_per_cycle: (!recent.is_empty())
                .then(|| recent.iter().sum::<u64>() as f64 / recent.len() as f64),
            budget_used: daily_used.max(window_used),
            talk_since_last_cycle: last_human.is_some_and(|t| last_cycle.is_none_or(|c| t > c)),
            unread,
        }
    }

    /// When a person last posted in any server; a read that fails is
    /// noted in `unread` (and the garden waits) rather than taken as quiet.
    fn last_human(&self, unread: &mut Option<String>) -> Option<DateTime<Utc>> {
        let mut failed = |e: crate::store::StoreError| {
            unread.get_or_insert(format!("store read failed: when people last posted: {e}"));
        };
        let guilds = self.store.messages.known_guilds().unwrap_or_else(|e| {
            failed(e);
            Vec::new()
        });
        let mut last = None;
        for (g, _) in guilds {
            match self.store.impulses.last_human_message(g) {
                Ok(t) => last = last.max(t),
                Err(e) => failed(e),
            }
        }
        last
    }

    pub fn plan(&self) -> Plan {
        scheduler::plan(
            &self.inputs(),
            &self.scheduler_state(),
            &self.settings.global().garden,
        )
    }

    fn guild_name(&self, g: GuildId) -> String {
        self.store
            .messages
            .guild_name(g)
            .ok()
            .flatten()
            .unwrap_or_else(|| g.to_string())
    }

    /// Notices conversations that just ended (event trigger: wake early, still budget-gated).
    pub fn notice_conversations_ending(&self) {
        let _deciding = self.deciding();
        let now = self.clock.now();
        let active: HashSet<ChannelId> = self
            .spine
            .active
            .active_channels(None, now)
            .into_iter()
            .collect();
        let ended = {
            let mut was = self.was_active.lock().unwrap_or_else(|p| p.into_inner());
            let ended = !was.difference(&active).collect::<Vec<_>>().is_empty();
            *was = active;
            ended
        };
        if ended && self.cycle_running() {
            *self.early.lock().unwrap_or_else(|p| p.into_inner()) =
                Some("a conversation just ended".into());
            return;
        }
        if ended && self.status().next_wake.is_none_or(|t| t > now) {
            let (at, _) = self.earliest(now);
            if self.status().next_wake.is_none_or(|t| t > at) {
                self.wake_early(now, "a conversation just ended");
            }
        }
    }

    fn clear_in_flight(&self) {
        self.in_flight.store(false, Ordering::SeqCst);
        *self
            .in_flight_since
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
        self.cycle_done.notify_waiters();
    }

    /// The loop: sleeps until the next wake (or an event), then hands a
    /// `GardenDue` impulse to attention and waits for its cycle.
    /// One look at the garden's wake: queues a cycle that is due (or holds
    /// it while people talk with the bot, or while a budget says wait) and
    /// says when to look again. `run` calls it in its loop; a front end on
    /// simulated time (replay) calls it once per step.
    pub fn look(&self, settings: &Settings, now: DateTime<Utc>) -> Look {
        let _deciding = self.deciding();
        let unsaved = self.unsaved_lock().clone();
        if let Some(s) = unsaved {
            self.save_status(s);
        }
        let status = self.status();
        let mut wait = StdDuration::from_secs(60);
        match status.next_wake {
            Some(at) if settings.garden.enabled && at <= now => {
                let inputs = self.inputs();
                let plan = scheduler::plan(&inputs, &self.scheduler_state(), &settings.garden);
                // Someone asked: people talking do not hold it back (the budget still does).
                let asked = self.requested_due(now);
                let talk = (inputs.people_active && !asked)
                    .then(|| self.held_for_talk(&plan, now))
                    .flatten();
                if plan.wait.is_none() && !asked {
                    // Paused while people talk: look again in a minute.
                    self.set_status(|s| {
                        s.state = "paused".into();
                        s.detail = plan.why.last().cloned().unwrap_or_default();
                    });
                } else if let Some(later) = talk {
                    self.schedule_wake(
                        later,
                        format!(
                            "{}; held while people talk with the bot: {}",
                            status.next_reason,
                            plan.why.join("; ")
                        ),
                        true,
                    );
                    return Look::Again;
                } else if let (at, Some(why)) = self.earliest(at) {
                    self.schedule_wake(at, format!("{}; held: {why}", status.next_reason), true);
                    return Look::Again;
                } else {
                    self.in_flight.store(true, Ordering::SeqCst);
                    *self
                        .in_flight_since
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                    let mut i = Impulse::new(ImpulseKind::GardenDue, None, now);
                    i.priority = Priority::Low;
                    i.detail = status.next_reason.clone();
                    self.spine.submit(Input::Impulse(i));
                    return Look::Again;
                }
            }
            Some(at) => {
                wait = (at - now)
                    .to_std()
                    .unwrap_or_default()
                    .clamp(StdDuration::from_secs(1), wait)
            }
            None => {}
        }
        Look::Wait(wait)
    }

    /// Until when a look at the garden's wake would do nothing, for a front
    /// end on simulated time (replay) that skips the stretches where nothing
    /// can happen: no cycle queued or due, no status waiting to be saved, and
    /// no conversation that could end (nobody talks with the bot now, and
    /// none did at the last look — without messages, none can start).
    /// `None`: a look may do something now; `Some(t)`: none before `t` will.
    pub(crate) fn idle_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let was_active = !self
            .was_active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty();
        if self.in_flight.load(Ordering::SeqCst)
            || self.unsaved_lock().is_some()
            || was_active
            || self.spine.active.any_active(now)
        {
            return None;
        }
        match self.status().next_wake {
            Some(at) if at <= now => None,
            Some(at) => Some(at),
            None => Some(DateTime::<Utc>::MAX_UTC),
        }
    }

    /// The loop, after [`Garden::recover`] (which `App::start` calls first).
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut changes = self.settings.changes();
        loop {
            let settings = self.settings.global();
            let now = self.clock.now();
            self.notice_conversations_ending();
            // Listening before looking: a cycle that ends between the look
            // at `in_flight` and the wait below is still heard (its end
            // notifies only the `Notified`s that exist by then).
            let done = self.cycle_done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.in_flight.load(Ordering::SeqCst) {
                // A long cycle is waited for, never queued again: a second
                // impulse would only be declined. Only one that never started
                // (lost on the way) is queued again.
                let stuck = !self.cycle_running()
                    && self
                        .in_flight_since
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .is_some_and(|t| t.elapsed() > CYCLE_WAIT);
                if stuck {
                    tracing::warn!("a queued garden cycle never started; queueing again");
                    self.in_flight.store(false, Ordering::SeqCst);
                }
                tokio::select! {
                    _ = done => {}
                    _ = tokio::time::sleep(StdDuration::from_secs(60)) => {}
                    _ = shutdown.changed() => return,
                }
                continue;
            }
            let wait = match self.look(&settings, now) {
                Look::Again => continue,
                Look::Wait(wait) => wait,
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.wake.notified() => {}
                // Reloaded intervals: look again with them.
                _ = changes.next() => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// What one look at the garden's wake concluded.
pub enum Look {
    /// Something changed (a cycle queued, a wake moved): look again now.
    Again,
    /// Nothing to do before this much time has passed.
    Wait(StdDuration),
}

/// The router's view of the garden: runs the cycle a `GardenDue` impulse asks for.
pub(crate) struct GardenHandler {
    pub garden: Arc<Garden>,
}

#[async_trait]
impl Handler for GardenHandler {
    fn name(&self) -> String {
        "garden".into()
    }

    fn order(&self) -> i32 {
        ORDER_IMPULSE
    }

    fn wants(&self, item: &Attended) -> Option<String> {
        match &item.input {
            Input::Impulse(i) if i.kind == ImpulseKind::GardenDue => {
                Some("the garden is due".into())
            }
            _ => None,
        }
    }

    async fn handle(&self, item: &Attended) -> Outcome {
        let trigger = match &item.input {
            Input::Impulse(i) if !i.detail.is_empty() => i.detail.clone(),
            _ => "scheduled".into(),
        };
        // The cycle clears the loop's in-flight mark when it ends; one declined
        // because another runs leaves it, so the loop waits for that one.
        let result = self.garden.cycle(&trigger).await;
        match result {
            Ok(_) => Outcome::Done,
            Err(e) => Outcome::Declined(e.to_string()),
        }
    }
}

/// What the garden is built from: the services it tends memory with, the
/// tables it reads and writes, and who the bot is.
pub struct Services {
    pub store: Stores,
    pub settings: Arc<SettingsService>,
    pub journal: Journal,
    pub clock: SharedClock,
    pub executive: Arc<Executive>,
    pub memory: Arc<Memory>,
    pub impulses: Arc<Impulses>,
    pub spine: Arc<Spine>,
    pub me: UserId,
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub messages: MessageStore,
    pub memory: MemoryStore,
    pub journal: JournalStore,
    pub usage: UsageStore,
    pub initiative: InitiativeStore,
    pub impulses: ImpulseStore,
    pub garden: GardenStore,
}
