//! The garden: background memory consolidation with an adaptive,
//! budget-aware scheduler (seed: ambient-mode-garden-and-scheduler.md).
//!
//! ```text
//! run loop: wake at the scheduled time, on /ambient garden, when a
//!           conversation ends, or after a crash ─► Impulse(GardenDue)
//! attention (people first) ─► GardenHandler ─► one cycle:
//!   1. the memory pass (code, no model; checkpointed per server):
//!      feedback harvest, duplicates merged, decayed facts pruned, links;
//!      conversations missed while the bot was down extracted
//!   2. for one server that needs it: a model turn (the `ambient` role)
//!      with todos / schedule_ambient / memory_resolve|confirm|retire and,
//!      past the warm-up, add_task / add_idea / propose_thought; it must end
//!      with end_ambient_cycle (else the seed's continuation once, then a
//!      forced end: incomplete, default wake)
//!   3. the transcript is stored; the next wake is the agent's proposal,
//!      pushed later or pulled earlier by the adaptive interval (scheduler.rs)
//! ```
//!
//! One cycle at a time: a mutex inside the process, and the data-directory
//! lock (`store::lock`) between processes. For this bot "proactive work" is
//! preparing tasks, ideas and pending thoughts — never posting: every post
//! still goes through the initiative gates.

pub mod feedback;
pub mod pass;
pub mod scheduler;
pub mod similar;
pub mod tools;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};

use crate::attention::router::ORDER_IMPULSE;
use crate::attention::{Attended, Handler, Impulse, ImpulseKind, Input, Outcome, Priority, Spine};
use crate::clock::SharedClock;
use crate::executive::prompts::PromptLine;
use crate::executive::tools::{FinalTool, parse_args};
use crate::executive::wire::{Part, Speaker};
use crate::executive::{Executive, Message, Role, Turn, TurnOutcome};
use crate::ids::{ChannelId, GuildId, UserId};
use crate::impulses::Impulses;
use crate::journal::{Entry, Journal, Kind, stream};
use crate::memory::Memory;
use crate::memory::search::Reader;
use crate::settings::SettingsService;
use crate::store::Store;
use crate::store::garden::{Cycle, CycleStatus, QueueItem, Step};
use crate::store::usage::UsageFilter;
use pass::{Checkpoint, Tended};
use scheduler::{Ended, Plan};
use tools::{CycleShared, EndCycle};

/// The seed's continuation message, sent once when the model stops without the final call.
pub const CONTINUATION: &str = "You stopped unexpectedly without calling end_ambient_cycle.\n\
If you are done with your work, call end_ambient_cycle with a\n\
summary of what you accomplished and schedule your next wake.\n\
If you are not done, continue what you were doing.";

/// How long the run loop waits for a cycle it queued before looking again.
const CYCLE_WAIT: StdDuration = StdDuration::from_secs(15 * 60);

/// What `ambient status` and `/ambient status` show (kept in the store, so
/// another process can read it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// idle, running, scheduled or paused.
    pub state: String,
    pub detail: String,
    pub next_wake: Option<DateTime<Utc>>,
    /// Why then.
    pub next_reason: String,
    /// Whether the adaptive interval moved the agent's requested wake.
    pub adaptive_moved: bool,
}

/// How a cycle went, for callers and tests.
#[derive(Clone, Debug)]
pub struct CycleReport {
    pub id: i64,
    pub status: CycleStatus,
    pub guild: Option<GuildId>,
    pub summary: String,
    pub next_wake: DateTime<Utc>,
    pub tended: Tended,
    /// The server the pass resumed after, when it picked up an interrupted one.
    pub resumed: bool,
}

pub struct Garden {
    store: Store,
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
    /// Channels with a conversation at the last look (to notice one ending).
    was_active: Mutex<HashSet<ChannelId>>,
}

impl Garden {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Store,
        settings: Arc<SettingsService>,
        journal: Journal,
        clock: SharedClock,
        executive: Arc<Executive>,
        memory: Arc<Memory>,
        impulses: Arc<Impulses>,
        spine: Arc<Spine>,
        me: UserId,
    ) -> Arc<Self> {
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
            was_active: Mutex::new(HashSet::new()),
        })
    }

    pub fn status(&self) -> Status {
        read_status(&self.store)
    }

    fn set_status(&self, f: impl FnOnce(&mut Status)) {
        let mut s = self.status();
        f(&mut s);
        let _ = self.store.garden_set("status", &s);
    }

    pub fn scheduler_state(&self) -> scheduler::State {
        self.store
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

    /// At start: a cycle left running was interrupted (a crash, a kill) —
    /// mark it and resume soon from its checkpoint; after a long downtime,
    /// one catch-up cycle (missed cycles are not replayed).
    pub fn recover(&self) {
        let now = self.clock.now();
        let interrupted = self
            .store
            .cycles_with_status(CycleStatus::Running)
            .unwrap_or_default();
        for mut c in interrupted.clone() {
            c.status = CycleStatus::Interrupted;
            c.ended_at = Some(now);
            if c.summary.is_empty() {
                c.summary = "interrupted: the bot stopped during this cycle".into();
            }
            let _ = self.store.cycle_save(&c);
            let left = c.todos.iter().filter(|t| !t.done).count();
            self.journal.record(
                Entry::new(Kind::Garden, format!("garden cycle {} was interrupted", c.id))
                    .guild(c.guild)
                    .reason(format!("the bot stopped during it; {left} planned item(s) were left; the next cycle resumes from the checkpoint")),
            );
        }
        let last = self.store.cycles(1).ok().and_then(|c| c.into_iter().next());
        let max = Duration::minutes(i64::from(
            self.settings.global().garden.max_interval_minutes,
        ));
        if !interrupted.is_empty() {
            self.schedule_wake(
                now,
                "restart after a crash: resume the interrupted cycle",
                false,
            );
        } else if last.as_ref().is_some_and(|c| now - c.started_at > max) {
            self.schedule_wake(
                now,
                "catch-up after downtime (one cycle, nothing replayed)",
                false,
            );
        } else if self.status().next_wake.is_none_or(|t| t < now) {
            let plan = self.plan();
            let at = now + plan.wait.unwrap_or(Duration::minutes(1));
            self.schedule_wake(at, plan.why.join("; "), false);
        }
    }

    /// `/ambient garden`: tend this server's memory next — still within budget.
    pub fn request(&self, guild: GuildId, by: &str) -> String {
        let now = self.clock.now();
        let item = QueueItem {
            id: uuid::Uuid::new_v4().simple().to_string(),
            guild: Some(guild),
            scheduled_for: now,
            context: format!("{by} asked for a garden cycle (/ambient garden)"),
            priority: Priority::High,
            created_by: by.to_string(),
            created_at: now,
            done_at: None,
        };
        if let Err(e) = self.store.queue_insert(&item) {
            return format!("Could not queue it: {e}");
        }
        self.journal.record(
            Entry::new(Kind::Garden, "a garden cycle was requested")
                .guild(Some(guild))
                .reason(format!("by {by}")),
        );
        self.schedule_wake(now, format!("requested by {by}"), false);
        let budget = match self.plan().why.first() {
            Some(w) if w.contains("budget is used") => {
                " The budget is nearly spent, so it may wait."
            }
            _ => "",
        };
        format!("The garden will tend this server's memory next.{budget}")
    }

    /// The scheduler's inputs, from real data: usage records, the provider's
    /// rate-limit headers, the last cycles' cost, who is talking.
    pub fn inputs(&self) -> scheduler::Inputs {
        let now = self.clock.now();
        let snap = self.executive.snapshot();
        let settings = self.settings.global();
        let window = match (snap.tokens_remaining, snap.tokens_limit, snap.window_reset) {
            (Some(remaining), Some(limit), Some(reset)) => Some(scheduler::Window {
                tokens_remaining: remaining,
                tokens_limit: limit,
                resets_at: reset,
            }),
            _ => None,
        };
        let cap = settings.budget.daily_tokens.ambient;
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
        let recent: Vec<u64> = self
            .store
            .cycles(20)
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.tokens_in + c.tokens_out)
            .filter(|t| *t > 0)
            .take(5)
            .collect();
        let last_human = self
            .store
            .known_guilds()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(g, _)| self.store.last_human_message(g).ok().flatten())
            .max();
        scheduler::Inputs {
            now,
            people_active: self.spine.active.any_active(now),
            idle_for: last_human.map(|t| now - t),
            window,
            user_tokens_per_minute: snap.user_tokens_per_minute,
            tokens_per_cycle: (!recent.is_empty())
                .then(|| recent.iter().sum::<u64>() as f64 / recent.len() as f64),
            budget_used: daily_used.max(window_used),
        }
    }

    pub fn plan(&self) -> Plan {
        scheduler::plan(
            &self.inputs(),
            &self.scheduler_state(),
            &self.settings.global().garden,
        )
    }

    /// Runs one cycle now (the handler's job; tests call it directly).
    pub async fn cycle(&self, trigger: &str) -> Result<CycleReport, String> {
        self.cycle_until(trigger, &|| false).await
    }

    /// One cycle, whose memory pass also stops when `stop` says so.
    pub async fn cycle_until(
        &self,
        trigger: &str,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<CycleReport, String> {
        let Ok(_one) = self.running.try_lock() else {
            return Err("a garden cycle is already running".into());
        };
        let settings = self.settings.global();
        let started = self.clock.now();
        let id = self
            .store
            .cycle_begin(trigger, started)
            .map_err(|e| e.to_string())?;
        self.set_status(|s| {
            s.state = "running".into();
            s.detail = "memory pass".into();
        });
        let mut cycle = self
            .store
            .cycle(id)
            .map_err(|e| e.to_string())?
            .ok_or("the cycle row is gone")?;
        let step = |cycle: &mut Cycle, kind: &str, text: String| {
            cycle.steps.push(Step {
                at: self.clock.now(),
                kind: kind.into(),
                text,
            });
        };

        // 1. The memory pass.
        let feedback = feedback::harvest(&self.store, &self.memory, self.me, started);
        if feedback > 0 {
            step(
                &mut cycle,
                "pass",
                format!(
                    "kept {feedback} reaction(s)/reply(ies) to ambient posts as feedback memories"
                ),
            );
        }
        let deadline =
            Instant::now() + StdDuration::from_secs(u64::from(settings.garden.max_pass_seconds));
        let (tended, resumed, finished, lines) =
            self.pass(id, &|| stop() || Instant::now() > deadline);
        for l in &lines {
            step(&mut cycle, "pass", l.clone());
        }
        if !finished {
            cycle.status = CycleStatus::Interrupted;
            cycle.summary = format!(
                "stopped at a checkpoint after {}; the next cycle resumes there",
                describe(&tended)
            );
            cycle.memories_modified = tended.modified() as u64;
            cycle.ended_at = Some(self.clock.now());
            let next = self.clock.now()
                + Duration::minutes(i64::from(settings.garden.min_interval_minutes));
            cycle.next_wake_at = Some(next);
            let _ = self.store.cycle_save(&cycle);
            self.journal.record(
                Entry::new(
                    Kind::Garden,
                    format!("garden cycle {id} stopped at a checkpoint"),
                )
                .reason(cycle.summary.clone()),
            );
            self.schedule_wake(next, "resume the interrupted memory pass", false);
            return Ok(CycleReport {
                id,
                status: cycle.status,
                guild: None,
                summary: cycle.summary,
                next_wake: next,
                tended,
                resumed,
            });
        }
        let (channels, extracted) = self.memory.extract_due().await;
        if channels > 0 {
            step(
                &mut cycle,
                "pass",
                format!(
                    "extracted {extracted} fact(s) from {channels} conversation(s) not yet read"
                ),
            );
        }

        // 2. The model part, for one server that needs it.
        let guild = self.choose_guild(started);
        let mut modified = tended.modified() as u64 + extracted as u64;
        let mut ended = Ended::Clean;
        let (status, summary, requested, forced) = match guild {
            Some(g)
                if self.executive.unavailable(Role::Ambient).is_none()
                    && settings.garden.enabled =>
            {
                cycle.guild = Some(g);
                self.set_status(|s| s.detail = format!("tending {}", self.guild_name(g)));
                let _ = self.store.cycle_save(&cycle);
                let out = self
                    .model_part(&mut cycle, g, &tended, &lines, started)
                    .await;
                modified += out.modified;
                cycle.compactions = out.compactions;
                cycle.proactive_work = out.proactive;
                ended = out.ended;
                if out.status == CycleStatus::Completed {
                    let due: Vec<String> = self
                        .store
                        .queue_open()
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|q| q.guild == Some(g) && q.scheduled_for <= started)
                        .map(|q| q.id)
                        .collect();
                    let _ = self.store.queue_done(&due, id, self.clock.now());
                    self.mark_tended(g, started);
                }
                (out.status, out.summary, out.requested, out.forced)
            }
            Some(g) => {
                let why = self
                    .executive
                    .unavailable(Role::Ambient)
                    .unwrap_or_else(|| "the garden is off".into());
                step(
                    &mut cycle,
                    "note",
                    format!("the model part for {} waits: {why}", self.guild_name(g)),
                );
                (
                    CycleStatus::Completed,
                    format!("memory pass only ({why}): {}", describe(&tended)),
                    None,
                    false,
                )
            }
            None => (
                CycleStatus::Completed,
                format!("memory pass: {}", describe(&tended)),
                None,
                false,
            ),
        };

        // 3. Record, adapt, schedule.
        let rate_limited = self
            .store
            .usage_count(&UsageFilter {
                since: Some(started),
                roles: vec![Role::Ambient.as_str().into()],
                outcome: Some("rate_limited".into()),
                ..Default::default()
            })
            .unwrap_or(0)
            > 0;
        if rate_limited {
            ended = Ended::RateLimited;
        } else if status != CycleStatus::Completed && ended == Ended::Clean {
            ended = Ended::Failed;
        }
        let state = scheduler::after_cycle(self.scheduler_state(), ended, &settings.garden);
        let _ = self.store.garden_set("scheduler", &state);
        let now = self.clock.now();
        let plan = self.plan();
        let safe = plan.wait.unwrap_or(Duration::minutes(1));
        let (next, reason, moved) = if forced {
            let d = Duration::minutes(i64::from(settings.garden.default_interval_minutes));
            (
                now + d,
                "the default wake after a forced end".to_string(),
                false,
            )
        } else if let Some(at) = requested {
            let (wait, moved) = scheduler::settle(at - now, safe, &settings.garden);
            let why = if moved {
                format!(
                    "asked for {}, moved: {}",
                    at.format("%H:%M"),
                    plan.why.join("; ")
                )
            } else {
                "as the garden asked".into()
            };
            (now + wait, why, moved)
        } else if cycle.guild.is_some() && status == CycleStatus::Completed {
            tracing::warn!(
                "the garden cycle did not schedule its next wake; using the maximum interval"
            );
            let d = Duration::minutes(i64::from(settings.garden.max_interval_minutes));
            (
                now + d,
                "no wake was scheduled: the maximum interval".to_string(),
                false,
            )
        } else {
            (now + safe, plan.why.join("; "), false)
        };
        cycle.status = status;
        cycle.summary = summary;
        cycle.memories_modified = cycle.memories_modified.max(modified);
        cycle.rate_limited = rate_limited;
        cycle.ended_at = Some(now);
        cycle.next_wake_at = Some(next);
        let _ = self.store.cycle_save(&cycle);
        let _ = self.store.garden_set("last_cycle_at", &now);
        self.journal.record(
            Entry::new(
                Kind::Garden,
                format!("garden cycle {id} {}", status.as_str()),
            )
            .guild(cycle.guild)
            .reason(format!(
                "{} — next wake {} ({reason})",
                cycle.summary,
                next.format("%H:%M UTC")
            ))
            .data(serde_json::json!({ "cycle": id, "tokens": cycle.tokens_in + cycle.tokens_out })),
        );
        self.schedule_wake(next, reason, moved);
        Ok(CycleReport {
            id,
            status,
            guild: cycle.guild,
            summary: cycle.summary,
            next_wake: next,
            tended,
            resumed,
        })
    }

    /// The memory pass over every guild, from the checkpoint.
    /// Returns (what it did, resumed?, finished?, transcript lines).
    fn pass(&self, cycle: i64, stop: &dyn Fn() -> bool) -> (Tended, bool, bool, Vec<String>) {
        let settings = self.settings.global();
        let now = self.clock.now();
        let mut cp: Checkpoint = self
            .store
            .garden_get("checkpoint")
            .ok()
            .flatten()
            .unwrap_or_default();
        let resumed = !cp.done.is_empty();
        let mut lines = Vec::new();
        if resumed {
            lines.push(format!(
                "resumed the pass of cycle {} after {} server(s)",
                cp.cycle,
                cp.done.len()
            ));
        }
        cp.cycle = cycle;
        let mut guilds = self.store.fact_guilds().unwrap_or_default();
        guilds.sort_by_key(|g| pass::guild_key(*g));
        let mut total = Tended::default();
        for g in guilds {
            if cp.done.contains(&pass::guild_key(g)) {
                continue;
            }
            if stop() {
                lines.push(format!(
                    "stopped after {} server(s); checkpoint kept",
                    cp.done.len()
                ));
                return (total, resumed, false, lines);
            }
            let t = pass::tend(&self.store, &self.journal, &settings.garden, g, now);
            if t.modified() + t.linked > 0 {
                lines.push(format!(
                    "{}: {}",
                    g.map_or("direct messages".to_string(), |g| self.guild_name(g)),
                    describe(&t)
                ));
            }
            total.add(&t);
            cp.done.push(pass::guild_key(g));
            let _ = self.store.garden_set("checkpoint", &cp);
        }
        let _ = self.store.garden_clear("checkpoint");
        lines.push(format!(
            "examined {} memories: {}",
            total.examined,
            describe(&total)
        ));
        (total, resumed, true, lines)
    }

    fn guild_name(&self, g: GuildId) -> String {
        self.store
            .guild_name(g)
            .ok()
            .flatten()
            .unwrap_or_else(|| g.to_string())
    }

    fn tended_at(&self) -> HashMap<u64, DateTime<Utc>> {
        self.store
            .garden_get("tended")
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn mark_tended(&self, g: GuildId, at: DateTime<Utc>) {
        let mut m = self.tended_at();
        m.insert(g.get(), at);
        let _ = self.store.garden_set("tended", &m);
    }

    /// The server the model part tends: the one with the most urgent due
    /// queue item; else the one longest untended among those people have
    /// talked in since.
    fn choose_guild(&self, now: DateTime<Utc>) -> Option<GuildId> {
        if let Some(g) = self
            .store
            .queue_open()
            .unwrap_or_default()
            .into_iter()
            .find(|q| q.scheduled_for <= now)
            .and_then(|q| q.guild)
        {
            return Some(g);
        }
        let tended = self.tended_at();
        self.store
            .known_guilds()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(g, _)| {
                let last = self.store.last_human_message(g).ok().flatten()?;
                let since = tended.get(&g.get()).copied();
                since.is_none_or(|t| last > t).then_some((since, g))
            })
            .min_by_key(|(since, _)| since.map_or(0, |t| t.timestamp_millis()))
            .map(|(_, g)| g)
    }

    async fn model_part(
        &self,
        cycle: &mut Cycle,
        guild: GuildId,
        tended: &Tended,
        pass_lines: &[String],
        started: DateTime<Utc>,
    ) -> ModelPart {
        let settings = self.settings.for_guild(Some(guild));
        let proactive = settings.garden.proactive_work
            && (settings.garden.skip_warmup
                || self.scheduler_state().good_cycles >= settings.garden.warmup_cycles);
        let shared = Arc::new(CycleShared {
            cycle: cycle.id,
            guild,
            store: self.store.clone(),
            journal: self.journal.clone(),
            clock: self.clock.clone(),
            requested: Mutex::new(None),
            modified: Mutex::new(0),
            prepared: Mutex::new(Vec::new()),
        });
        let prompt = self.prompt(guild, pass_lines, proactive, started);
        let rendered = match self.executive.prompts.render("garden", &prompt) {
            Ok(r) => r,
            Err(e) => return ModelPart::failed(format!("the garden prompt failed to render: {e}")),
        };
        let mut turn = Turn::new(
            Role::Ambient,
            Some(guild),
            format!("garden cycle {}", cycle.id),
        );
        turn.system = rendered.system;
        turn.messages = vec![Message::user(rendered.user)];
        turn.tools = tools::for_cycle(&shared, &self.impulses, &self.settings, proactive);
        if settings.memory.enabled {
            turn.tools.push(crate::memory::tools::memory_search(
                &self.memory,
                Reader::Guild(guild),
            ));
        }
        turn.final_tool = Some(FinalTool::of::<EndCycle>(
            "end_ambient_cycle",
            "End the cycle: what you did, and when to wake next.",
        ));
        turn.continuation = Some(CONTINUATION.into());
        turn.max_steps = settings.initiative.text.max_tool_steps.max(4) * 2;
        turn.max_calls = settings.initiative.text.max_tool_calls.max(4) * 2;
        let result = self.executive.run_turn(turn).await;
        cycle.tokens_in += result.tokens.input;
        cycle.tokens_out += result.tokens.output;
        cycle
            .steps
            .extend(transcript(&result.messages, self.clock.now()));
        if let Ok(Some(saved)) = self.store.cycle(cycle.id) {
            cycle.todos = saved.todos;
        }
        let modified = u64::from(*shared.modified.lock().unwrap_or_else(|p| p.into_inner()));
        let prepared = shared
            .prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let requested = *shared.requested.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.clock.now();
        match result.outcome {
            Ok(TurnOutcome::Final(v)) => match parse_args::<EndCycle>(&v) {
                Ok(end) => {
                    let asked = end
                        .next_schedule
                        .as_ref()
                        .and_then(|w| w.resolve(now).ok().flatten());
                    if let Some(w) = end
                        .next_schedule
                        .as_ref()
                        .filter(|w| !w.context.trim().is_empty())
                    {
                        if let Some(at) = asked {
                            let _ = self.store.queue_insert(&QueueItem {
                                id: uuid::Uuid::new_v4().simple().to_string(),
                                guild: Some(guild),
                                scheduled_for: at,
                                context: w.context.trim().chars().take(500).collect(),
                                priority: Priority::Normal,
                                created_by: format!("cycle {}", cycle.id),
                                created_at: now,
                                done_at: None,
                            });
                        }
                    }
                    let proactive_work = end
                        .proactive_work
                        .filter(|p| !p.trim().is_empty())
                        .or_else(|| (!prepared.is_empty()).then(|| prepared.join("; ")));
                    ModelPart {
                        status: CycleStatus::Completed,
                        summary: end.summary,
                        modified: u64::from(end.memories_modified).max(modified),
                        compactions: u64::from(end.compactions),
                        proactive: proactive_work,
                        requested: match (asked, requested) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        },
                        forced: false,
                        ended: Ended::Clean,
                    }
                }
                Err(e) => ModelPart::failed(e),
            },
            Ok(TurnOutcome::Incomplete(why)) => {
                tracing::warn!(cycle = cycle.id, reason = %why, "garden cycle ended without end_ambient_cycle");
                let left = cycle.todos.iter().filter(|t| !t.done).count();
                ModelPart {
                    status: CycleStatus::Incomplete,
                    summary: format!(
                        "incomplete ({why}); {} memories changed by the pass; {left} planned item(s) left",
                        tended.modified() as u64 + modified
                    ),
                    modified,
                    compactions: 0,
                    proactive: (!prepared.is_empty()).then(|| prepared.join("; ")),
                    requested: None,
                    forced: true,
                    ended: Ended::Failed,
                }
            }
            Ok(TurnOutcome::Answer(_)) => {
                ModelPart::failed("the model answered in prose instead of ending the cycle".into())
            }
            Err(e) => ModelPart::failed(format!("the model call failed: {e}")),
        }
    }

    fn prompt(
        &self,
        guild: GuildId,
        pass_lines: &[String],
        proactive: bool,
        now: DateTime<Utc>,
    ) -> GardenPrompt {
        let settings = self.settings.for_guild(Some(guild));
        let g = &settings.garden;
        let tz: chrono_tz::Tz = settings
            .impulses
            .timezone
            .parse()
            .unwrap_or(chrono_tz::Tz::UTC);
        let when = |t: DateTime<Utc>| t.with_timezone(&tz).format("%Y-%m-%d %H:%M").to_string();
        let last = self.store.cycles(2).unwrap_or_default().into_iter().nth(1);
        let since = self
            .tended_at()
            .get(&guild.get())
            .copied()
            .unwrap_or(now - Duration::hours(24));
        let recent = self
            .store
            .recent_guild_messages(guild, since, 60)
            .unwrap_or_default();
        let talk: String = recent
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let cands = pass::candidates(&self.store, g, guild, &talk, now);
        let mut conversations: HashMap<ChannelId, (usize, DateTime<Utc>)> = HashMap::new();
        for m in &recent {
            let e = conversations.entry(m.channel).or_insert((0, m.created_at));
            e.0 += 1;
            e.1 = e.1.max(m.created_at);
        }
        let checkpoints: HashSet<ChannelId> = self
            .store
            .unextracted_channels()
            .unwrap_or_default()
            .into_iter()
            .map(|u| u.channel)
            .collect();
        let all_facts = self
            .store
            .list_facts(&crate::store::memory::FactFilter {
                guild: Some(Some(guild)),
                include_inactive: true,
                ..Default::default()
            })
            .unwrap_or_default();
        let active_facts: Vec<&crate::memory::fact::Fact> =
            all_facts.iter().filter(|f| f.is_active()).collect();
        let low = active_facts
            .iter()
            .filter(|f| pass::decayed_confidence(f, now, g.confidence_half_life_days) < 0.1)
            .count();
        let links = self.store.link_count(guild).unwrap_or(0);
        let snap = self.executive.snapshot();
        let budget = match (snap.tokens_remaining, snap.window_reset) {
            (Some(left), Some(reset)) => format!(
                "- Tokens remaining in the window: {left}\n- Window resets: {}\n- People's usage: {:.0} tokens/min",
                when(reset),
                snap.user_tokens_per_minute
            ),
            _ => format!(
                "- No rate-limit headers yet\n- People's usage: {:.0} tokens/min\n- Ambient budget left today: {}",
                snap.user_tokens_per_minute,
                snap.ambient_budget_remaining
                    .map_or("no cap".to_string(), |l| l.to_string())
            ),
        };
        GardenPrompt {
            bot_name: settings.bot.name.clone(),
            guild_name: self.guild_name(guild),
            context: stream::prefix_for(&self.store, &settings, Role::Ambient, Some(guild), now)
                .unwrap_or_default(),
            now: format!("{} {}", when(now), tz),
            last_cycle: last.map_or("never".into(), |c| {
                format!(
                    "{} ({}): {}",
                    when(c.started_at),
                    crate::when::ago(c.started_at, now),
                    c.summary
                )
            }),
            downtime: String::new(),
            active: {
                let n = self.spine.active.active_channels(Some(guild), now).len();
                if n == 0 {
                    "none".into()
                } else {
                    format!("in {n} channel(s)")
                }
            },
            cycle_budget: self
                .inputs()
                .tokens_per_cycle
                .unwrap_or(scheduler::ASSUMED_TOKENS_PER_CYCLE)
                .round() as u64,
            queue: self
                .store
                .queue_open()
                .unwrap_or_default()
                .into_iter()
                .filter(|q| q.guild == Some(guild))
                .take(10)
                .map(|q| QueueLine {
                    priority: format!("{:?}", q.priority).to_lowercase(),
                    when: when(q.scheduled_for),
                    context: q.context,
                })
                .collect(),
            conversations: {
                let mut v: Vec<ConversationLine> = conversations
                    .into_iter()
                    .map(|(c, (n, last))| ConversationLine {
                        channel: self
                            .store
                            .channel_name(c)
                            .ok()
                            .flatten()
                            .unwrap_or_else(|| c.to_string()),
                        messages: n,
                        last: when(last),
                        extraction: if checkpoints.contains(&c) {
                            "pending".into()
                        } else {
                            "done".into()
                        },
                    })
                    .collect();
                v.sort_by(|a, b| a.channel.cmp(&b.channel));
                v
            },
            health: Health {
                total: all_facts.len() as u64,
                active: active_facts.len() as u64,
                inactive: (all_facts.len() - active_facts.len()) as u64,
                low_confidence: low as u64,
                links,
            },
            pass_lines: pass_lines.to_vec(),
            contradictions: cands
                .contradictions
                .iter()
                .map(|(a, b)| ContradictionLine {
                    a_id: a.short_id().into(),
                    a: a.content.clone(),
                    a_when: when(a.updated_at),
                    b_id: b.short_id().into(),
                    b: b.content.clone(),
                    b_when: when(b.updated_at),
                })
                .collect(),
            stale: cands
                .stale
                .iter()
                .map(|f| StaleLine {
                    id: f.short_id().into(),
                    content: f.content.clone(),
                    when: when(f.last_seen_at),
                })
                .collect(),
            recent: if cands.stale.is_empty() {
                Vec::new()
            } else {
                recent
                    .iter()
                    .rev()
                    .take(20)
                    .rev()
                    .map(PromptLine::from)
                    .collect()
            },
            feedback: feedback::history(&self.store, guild, 12)
                .into_iter()
                .map(|f| {
                    if f.strength > 1 {
                        format!("{} (×{})", f.content, f.strength)
                    } else {
                        f.content
                    }
                })
                .collect(),
            // What the bot did lately, as anyone in its public channels could read it.
            deeds: crate::journal::summary::what_i_did(
                &self.journal,
                &self.store,
                &crate::journal::summary::Audience::new(&settings, Some(guild), ChannelId(0)),
                now - Duration::hours(24),
                tz,
                12,
            ),
            proactive,
            tasks: self
                .store
                .tasks(Some(guild), false)
                .unwrap_or_default()
                .into_iter()
                .take(10)
                .map(|t| format!("{} (due {})", t.text, when(t.due)))
                .collect(),
            ideas: self
                .store
                .ideas(Some(guild), false)
                .unwrap_or_default()
                .into_iter()
                .take(10)
                .map(|i| i.text)
                .collect(),
            budget,
        }
    }

    /// Notices conversations that just ended (event trigger: wake early, still budget-gated).
    pub fn notice_conversations_ending(&self) {
        let now = self.clock.now();
        let active: HashSet<ChannelId> = self
            .spine
            .active
            .active_channels(None, now)
            .into_iter()
            .collect();
        let ended: Vec<ChannelId> = {
            let mut was = self.was_active.lock().unwrap_or_else(|p| p.into_inner());
            let ended = was.difference(&active).copied().collect();
            *was = active;
            ended
        };
        if ended.is_empty() {
            return;
        }
        let earliest = now
            + Duration::minutes(i64::from(
                self.settings.global().garden.min_interval_minutes,
            ));
        if self.status().next_wake.is_none_or(|t| t > earliest) {
            self.schedule_wake(earliest, "a conversation just ended", false);
        }
    }

    /// The loop: sleeps until the next wake (or an event), then hands a
    /// `GardenDue` impulse to attention and waits for the cycle.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        self.recover();
        loop {
            let settings = self.settings.global();
            let now = self.clock.now();
            stream::cleanup(&self.store, &settings, now);
            self.notice_conversations_ending();
            let status = self.status();
            let due = settings.garden.enabled && status.next_wake.is_some_and(|t| t <= now);
            if due {
                let plan = self.plan();
                match plan.wait {
                    None => self.set_status(|s| {
                        s.state = "paused".into();
                        s.detail = plan.why.last().cloned().unwrap_or_default();
                    }),
                    Some(_) => {
                        let mut i = Impulse::new(ImpulseKind::GardenDue, None, now);
                        i.priority = Priority::Low;
                        i.detail = status.next_reason.clone();
                        self.spine.submit(Input::Impulse(i));
                        tokio::select! {
                            _ = self.cycle_done.notified() => {}
                            _ = tokio::time::sleep(CYCLE_WAIT) => {}
                            _ = shutdown.changed() => return,
                        }
                        continue;
                    }
                }
            }
            let wait = status
                .next_wake
                .map(|t| (t - now).to_std().unwrap_or_default())
                .unwrap_or(StdDuration::from_secs(60))
                .clamp(StdDuration::from_secs(1), StdDuration::from_secs(60));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.wake.notified() => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// Reads the garden's status from a store (for `ambient status` in another process too).
pub fn read_status(store: &Store) -> Status {
    store
        .garden_get("status")
        .ok()
        .flatten()
        .unwrap_or_else(|| Status {
            state: "idle".into(),
            ..Default::default()
        })
}

fn describe(t: &Tended) -> String {
    format!(
        "merged {}, pruned {}, linked {}",
        t.merged, t.pruned, t.linked
    )
}

/// The turn's tool calls and results as transcript steps.
fn transcript(messages: &[Message], at: DateTime<Utc>) -> Vec<Step> {
    let mut steps = Vec::new();
    for m in messages.iter().skip(1) {
        for p in &m.parts {
            let (kind, text) = match (m.speaker, p) {
                (Speaker::Assistant, Part::ToolUse { name, input, .. }) => {
                    ("tool", format!("{name} {input}"))
                }
                (
                    Speaker::User,
                    Part::ToolResult {
                        content, is_error, ..
                    },
                ) => (
                    "result",
                    if *is_error {
                        format!("error: {content}")
                    } else {
                        content.clone()
                    },
                ),
                (Speaker::Assistant, Part::Text { text }) if !text.trim().is_empty() => {
                    ("said", text.clone())
                }
                (Speaker::User, Part::Text { text }) => ("system", text.clone()),
                _ => continue,
            };
            steps.push(Step {
                at,
                kind: kind.into(),
                text: text.chars().take(2_000).collect(),
            });
        }
    }
    steps
}

struct ModelPart {
    status: CycleStatus,
    summary: String,
    modified: u64,
    compactions: u64,
    proactive: Option<String>,
    requested: Option<DateTime<Utc>>,
    /// Ended without end_ambient_cycle after the continuation.
    forced: bool,
    ended: Ended,
}

impl ModelPart {
    fn failed(why: String) -> Self {
        Self {
            status: CycleStatus::Incomplete,
            summary: format!("incomplete: {why}"),
            modified: 0,
            compactions: 0,
            proactive: None,
            requested: None,
            forced: false,
            ended: Ended::Failed,
        }
    }
}

#[derive(Serialize)]
struct GardenPrompt {
    bot_name: String,
    guild_name: String,
    context: String,
    now: String,
    last_cycle: String,
    downtime: String,
    active: String,
    cycle_budget: u64,
    queue: Vec<QueueLine>,
    conversations: Vec<ConversationLine>,
    health: Health,
    pass_lines: Vec<String>,
    contradictions: Vec<ContradictionLine>,
    stale: Vec<StaleLine>,
    recent: Vec<PromptLine>,
    feedback: Vec<String>,
    deeds: Vec<String>,
    proactive: bool,
    tasks: Vec<String>,
    ideas: Vec<String>,
    budget: String,
}

#[derive(Serialize)]
struct QueueLine {
    priority: String,
    when: String,
    context: String,
}

#[derive(Serialize)]
struct ConversationLine {
    channel: String,
    messages: usize,
    last: String,
    extraction: String,
}

#[derive(Serialize)]
struct Health {
    total: u64,
    active: u64,
    inactive: u64,
    low_confidence: u64,
    links: u64,
}

#[derive(Serialize)]
struct ContradictionLine {
    a_id: String,
    a: String,
    a_when: String,
    b_id: String,
    b: String,
    b_when: String,
}

#[derive(Serialize)]
struct StaleLine {
    id: String,
    content: String,
    when: String,
}

/// The router's view of the garden: runs the cycle a `GardenDue` impulse asks for.
pub struct GardenHandler {
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
        let result = self.garden.cycle(&trigger).await;
        self.garden.cycle_done.notify_one();
        match result {
            Ok(_) => Outcome::Done,
            Err(e) => Outcome::Declined(e),
        }
    }
}
