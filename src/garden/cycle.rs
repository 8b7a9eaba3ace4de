//! One garden cycle: the memory pass, the model part for one server, and
//! the record — transcript, next wake, the adaptive interval's lesson.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, Utc};

use super::prompt::Shown;
use super::scheduler::{self, Ended};
use super::tools::{self, CycleShared, EndCycle};
use super::{CONTINUATION, Garden, feedback, pass};
use crate::executive::prompts::Rendered;
use crate::executive::tools::{FinalTool, parse_args};
use crate::executive::wire::{Part, Speaker};
use crate::executive::{Message, Turn, TurnOutcome};
use crate::ids::GuildId;
use crate::memory::search::Reader;
use crate::settings::Role;
use crate::settings::Settings;
use crate::store::StoreError;
use crate::store::garden::{Cycle, CycleStatus, QueueItem, Step};
use crate::store::usage::UsageFilter;
use crate::vocab::Priority;
use crate::vocab::journal::{Entry, Kind};
use pass::Tended;

/// How a cycle went, for callers and tests.
#[derive(Clone, Debug)]
pub struct CycleReport {
    pub id: i64,
    pub status: CycleStatus,
    pub guild: Option<GuildId>,
    pub summary: String,
    pub next_wake: DateTime<Utc>,
    pub tended: Tended,
    /// The pass picked up where an interrupted one stopped.
    pub resumed: bool,
    /// It found nothing to do, so it left no row in the log and no journal
    /// line: the garden rests (and `id` names no cycle).
    pub rested: bool,
}

impl Garden {
    /// Runs one cycle now (the handler's job; tests call it directly).
    pub async fn cycle(&self, trigger: &str) -> Result<CycleReport, CycleError> {
        self.cycle_until(trigger, Arc::new(|| false)).await
    }

    /// One cycle, whose memory pass also stops when `stop` says so. Declined
    /// while another runs (that one's end accounts for what was asked meanwhile).
    pub async fn cycle_until(
        &self,
        trigger: &str,
        stop: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> Result<CycleReport, CycleError> {
        let Ok(one) = self.running.try_lock() else {
            return Err(CycleError::Busy);
        };
        let started = self.clock.now();
        // Whatever was asked before now is what this cycle is about to do.
        self.early.lock().unwrap_or_else(|p| p.into_inner()).take();
        let mut result = self.run_cycle(trigger, stop).await;
        drop(one);
        let _deciding = self.deciding();
        let now = self.clock.now();
        match &mut result {
            Ok(r) => {
                self.backoff.succeeded(&None);
                // The cycle scheduled its own next wake; what was asked for
                // while it ran must not be lost behind it.
                if let Some(why) = self.asked_meanwhile(r, started) {
                    let (at, held) = self.earliest(now);
                    if at < r.next_wake {
                        self.schedule_held(at, held, &why);
                        r.next_wake = at;
                        if let Ok(Some(mut c)) = self.store.garden.cycle(r.id) {
                            c.next_wake_at = Some(at);
                            self.saved("the cycle's next wake", self.store.garden.cycle_save(&c));
                        }
                    }
                }
            }
            Err(e) => {
                // No next wake was scheduled: retry after a back-off that
                // doubles with each failure in a row, not at once (and again).
                let setback = self.set_back(&None, now);
                self.schedule_wake(
                    setback.until,
                    format!("the last cycle failed: {e}; {}", setback.describe()),
                    false,
                );
            }
        }
        self.clear_in_flight();
        result
    }

    /// What was asked for while a cycle ran and still waits: a conversation
    /// that ended, or a due queue item (a `/ambient garden`) it did not reach.
    /// An item it was shown and failed on waits for the normal wake instead,
    /// so a failing provider is not retried every few minutes.
    fn asked_meanwhile(&self, r: &CycleReport, started: DateTime<Utc>) -> Option<String> {
        if let Some(why) = self.early.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Some(why);
        }
        if self.executive.unavailable(Role::Ambient).is_some()
            || !self.settings.global().garden.enabled
        {
            return None;
        }
        let now = self.clock.now();
        let mine = format!("cycle {}", r.id);
        self.store
            .garden
            .queue_open()
            .unwrap_or_default()
            .into_iter()
            .find(|q| {
                q.scheduled_for <= now
                    && q.created_by != mine
                    // A server backing off waits for its back-off, not the next early wake.
                    && q.guild.is_none_or(|g| self.ready(g, now))
                    && (q.created_at >= started
                        || (r.status == CycleStatus::Completed && q.guild != r.guild))
            })
            .map(|q| format!("due while the last cycle ran: {}", q.context))
    }

    /// One cycle in its seed's three parts: the memory pass, the model part
    /// for one server, then the record (transcript, next wake, the adaptive
    /// interval's lesson).
    async fn run_cycle(
        &self,
        trigger: &str,
        stop: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> Result<CycleReport, CycleError> {
        let settings = self.settings.global();
        let started = self.clock.now();
        let asked = self.asked_since_the_last_pass(started);
        let id = self.store.garden.cycle_begin(trigger, started)?;
        self.set_status(|s| {
            s.state = "running".into();
            s.detail = "memory pass".into();
        });
        let mut cycle = self.store.garden.cycle(id)?.ok_or(CycleError::RowGone)?;

        // 1. The memory pass.
        let (run, feedback) = self
            .memory_pass(&mut cycle, started, stop, &settings)
            .await?;
        let (tended, resumed) = (run.tended.clone(), run.resumed);
        if !run.finished {
            return Ok(self.interrupted(cycle, tended, resumed, &settings));
        }
        let (read, extracted) = self.extraction_pass(&mut cycle).await;

        // 2. The model part, for one server that needs it.
        let guild = self.choose_guild(started);
        let part = self.tend(&mut cycle, guild, &run, started, &settings).await;

        // 3. Record, adapt, schedule — or rest, when there was nothing to do.
        let did_nothing = !part.model_ran
            && !asked
            && !resumed
            && feedback == 0
            && read == 0
            && tended.modified() + tended.linked == 0
            && cycle.tokens_in + cycle.tokens_out == 0;
        if did_nothing {
            return Ok(self.rest(cycle, tended, &settings));
        }
        let modified = tended.modified() as u64 + extracted as u64 + part.modified;
        let next_wake = self.record(&mut cycle, part, modified, started, &settings);
        Ok(CycleReport {
            id,
            status: cycle.status,
            guild: cycle.guild,
            summary: cycle.summary,
            next_wake,
            tended,
            resumed,
            rested: false,
        })
    }

    /// Whether someone asked for a cycle (`/ambient garden`) since the last
    /// cycle logged began: the cycle that answers them is logged, whatever
    /// it found, so they can see it ran and why its model part waited, if
    /// it did (one asked for while a cycle ran is answered by the next).
    fn asked_since_the_last_pass(&self, now: DateTime<Utc>) -> bool {
        let last = self
            .store
            .garden
            .cycles(1)
            .ok()
            .and_then(|c| c.into_iter().next())
            .map(|c| c.started_at);
        self.requested(None, now)
            .is_some_and(|q| last.is_none_or(|t| q.created_at >= t))
    }

    /// A pass that found nothing to do: no request, no feedback, no change to memory, no
    /// conversation to read, no server whose model part could run. It leaves
    /// no row in the log and no journal line — a quiet bot's garden would
    /// otherwise write one every few minutes, forever — and the garden
    /// rests: each such pass in a row doubles the interval (scheduler.rs)
    /// until something happens. The status says why the next wake is late.
    fn rest(&self, cycle: Cycle, tended: Tended, settings: &Settings) -> CycleReport {
        self.saved("the empty pass", self.store.garden.cycle_discard(cycle.id));
        let now = self.clock.now();
        let nothing = Tending::pass_only("nothing to tend".into());
        let (next, reason, moved) = self.next_wake(Ended::Idle, &nothing, false, now, settings);
        self.saved(
            "the last cycle's time",
            self.store.garden.garden_set("last_cycle_at", &now),
        );
        self.schedule_wake(next, format!("nothing to tend: {reason}"), moved);
        CycleReport {
            id: cycle.id,
            status: CycleStatus::Completed,
            guild: None,
            summary: nothing.summary,
            next_wake: next,
            tended,
            resumed: false,
            rested: true,
        }
    }

    /// Adds a line to the cycle's transcript.
    fn note(&self, cycle: &mut Cycle, kind: &str, text: String) {
        cycle.steps.push(Step {
            at: self.clock.now(),
            kind: kind.into(),
            text,
        });
    }

    /// The memory pass: reactions to ambient posts kept as feedback, then
    /// the store's tending, off the async workers, until `stop` or
    /// `garden.maxPassSeconds` (it resumes from its checkpoint next time).
    async fn memory_pass(
        &self,
        cycle: &mut Cycle,
        started: DateTime<Utc>,
        stop: Arc<dyn Fn() -> bool + Send + Sync>,
        settings: &Settings,
    ) -> Result<(pass::Run, usize), CycleError> {
        let feedback = feedback::harvest(&self.store, &self.memory, self.me, started);
        if feedback > 0 {
            self.note(
                cycle,
                "pass",
                format!(
                    "kept {feedback} reaction(s)/reply(ies) to ambient posts as feedback memories"
                ),
            );
        }
        // The pass is plain blocking work on the store: off the async workers.
        let deadline =
            Instant::now() + StdDuration::from_secs(u64::from(settings.garden.max_pass_seconds));
        let (store, journal, g) = (
            self.store.clone(),
            self.journal.clone(),
            settings.garden.clone(),
        );
        let id = cycle.id;
        let run = tokio::task::spawn_blocking(move || {
            pass::run(&store, &journal, &g, id, started, &|| {
                stop() || Instant::now() > deadline
            })
        })
        .await
        .map_err(CycleError::Pass)?;
        for (g, l) in &run.lines {
            let text = match g {
                Some(g) => format!("{}: {l}", self.guild_name(*g)),
                None => l.clone(),
            };
            self.note(cycle, "pass", text);
        }
        Ok((run, feedback))
    }

    /// A pass stopped at its checkpoint: the cycle ends there, and the next
    /// one (after the minimum interval) resumes it.
    fn interrupted(
        &self,
        mut cycle: Cycle,
        tended: Tended,
        resumed: bool,
        settings: &Settings,
    ) -> CycleReport {
        let id = cycle.id;
        cycle.status = CycleStatus::Interrupted;
        cycle.summary = format!(
            "stopped at a checkpoint after {}; the next cycle resumes there",
            pass::describe(&tended)
        );
        cycle.memories_modified = tended.modified() as u64;
        cycle.ended_at = Some(self.clock.now());
        let next =
            self.clock.now() + Duration::minutes(i64::from(settings.garden.min_interval_minutes));
        cycle.next_wake_at = Some(next);
        self.saved(
            "the interrupted cycle",
            self.store.garden.cycle_save(&cycle),
        );
        self.journal.record(
            Entry::new(
                Kind::Garden,
                format!("garden cycle {id} stopped at a checkpoint"),
            )
            .reason(cycle.summary.clone()),
        );
        self.schedule_wake(next, "resume the interrupted memory pass", false);
        CycleReport {
            id,
            status: cycle.status,
            guild: None,
            summary: cycle.summary,
            next_wake: next,
            tended,
            resumed,
            rested: false,
        }
    }

    /// Extraction of conversations not yet read, its tokens counted in the
    /// cycle's; returns how many conversations it read and facts it stored.
    async fn extraction_pass(&self, cycle: &mut Cycle) -> (usize, usize) {
        let extract_tokens = |since| {
            self.store
                .usage
                .usage_list(
                    &UsageFilter {
                        since: Some(since),
                        roles: vec![Role::Extract.as_str().into()],
                        ..Default::default()
                    },
                    None,
                )
                .unwrap_or_default()
                .iter()
                .fold((0, 0), |(i, o), u| (i + u.tokens_in, o + u.tokens_out))
        };
        let before_extraction = self.clock.now();
        let (channels, extracted) = self.memory.extract_due().await;
        let (ei, eo) = extract_tokens(before_extraction);
        cycle.tokens_in += ei;
        cycle.tokens_out += eo;
        if channels > 0 {
            self.note(
                cycle,
                "pass",
                format!(
                    "extracted {extracted} fact(s) from {channels} conversation(s) not yet read"
                ),
            );
        }
        (channels, extracted)
    }

    /// The model part for `guild`, when the ambient role has a model and
    /// the garden is on; otherwise the cycle is the memory pass alone.
    async fn tend(
        &self,
        cycle: &mut Cycle,
        guild: Option<GuildId>,
        run: &pass::Run,
        started: DateTime<Utc>,
        settings: &Settings,
    ) -> Tending {
        let tended = &run.tended;
        let Some(g) = guild else {
            return Tending::pass_only(format!("memory pass: {}", pass::describe(tended)));
        };
        if let Some(why) = self
            .executive
            .unavailable(Role::Ambient)
            .or_else(|| (!settings.garden.enabled).then(|| "the garden is off".into()))
        {
            let waits = format!("the model part for {} waits: {why}", self.guild_name(g));
            self.note(cycle, "note", waits);
            let summary = format!("memory pass only ({why}): {}", pass::describe(tended));
            return Tending::pass_only(summary);
        }
        cycle.guild = Some(g);
        self.set_status(|s| s.detail = format!("tending {}", self.guild_name(g)));
        self.saved("the cycle", self.store.garden.cycle_save(cycle));
        let lines: Vec<String> = run
            .lines
            .iter()
            .filter(|(lg, _)| *lg == Some(g))
            .map(|(_, l)| l.clone())
            .collect();
        let out = self.model_part(cycle, g, tended, &lines, started).await;
        cycle.compactions = out.compactions;
        cycle.proactive_work = out.proactive;
        if out.status == CycleStatus::Completed {
            // Only what the model was shown is done; the rest waits.
            self.saved(
                "the done queue items",
                self.store
                    .garden
                    .queue_done(&out.shown.queue, cycle.id, self.clock.now()),
            );
            self.mark_judged(&out.shown.pairs);
            self.mark_tended(g, started);
        }
        Tending {
            status: out.status,
            summary: out.summary,
            requested: out.requested,
            forced: out.forced,
            ended: out.ended,
            modified: out.modified,
            model_ran: true,
        }
    }

    /// The record: how the cycle ended (a 429 is the scheduler's lesson, a
    /// failed model part its server's back-off), the next wake, the saved
    /// cycle and its journal line. Returns the next wake.
    fn record(
        &self,
        cycle: &mut Cycle,
        part: Tending,
        modified: u64,
        started: DateTime<Utc>,
        settings: &Settings,
    ) -> DateTime<Utc> {
        let id = cycle.id;
        let status = part.status;
        let (ended, rate_limited) = self.how_it_ended(cycle.guild, &part, started);
        let now = self.clock.now();
        // A failing model part backs off for its server (a 429 is the scheduler's to handle).
        let setback = match (cycle.guild, ended, status) {
            (Some(g), Ended::Failed, _) => Some(self.set_back(&Some(g), now)),
            (Some(g), _, CycleStatus::Completed) => {
                self.backoff.succeeded(&Some(g));
                None
            }
            _ => None,
        };
        let tended_a_server = cycle.guild.is_some() && status == CycleStatus::Completed;
        let (next, reason, moved) = self.next_wake(ended, &part, tended_a_server, now, settings);
        cycle.status = status;
        cycle.summary = part.summary;
        cycle.memories_modified = cycle.memories_modified.max(modified);
        cycle.rate_limited = rate_limited;
        cycle.ended_at = Some(now);
        cycle.next_wake_at = Some(next);
        self.saved("the cycle", self.store.garden.cycle_save(cycle));
        self.saved(
            "the last cycle's time",
            self.store.garden.garden_set("last_cycle_at", &now),
        );
        self.journal.record(
            Entry::new(
                Kind::Garden,
                format!("garden cycle {id} {}", status.as_str()),
            )
            .guild(cycle.guild)
            .reason(format!(
                "{} — next wake {} ({reason}){}",
                cycle.summary,
                next.format("%H:%M UTC"),
                setback.map_or(String::new(), |s| format!(
                    "; this server's model part backs off: {}",
                    s.describe()
                ))
            ))
            .data(serde_json::json!({ "cycle": id, "tokens": cycle.tokens_in + cycle.tokens_out })),
        );
        self.schedule_wake(next, reason, moved);
        next
    }

    /// How the cycle ended for the scheduler, and whether the ambient role
    /// met a rate limit since it started.
    fn how_it_ended(
        &self,
        guild: Option<GuildId>,
        part: &Tending,
        started: DateTime<Utc>,
    ) -> (Ended, bool) {
        let rate_limited = self
            .store
            .usage
            .usage_count(&UsageFilter {
                since: Some(started),
                roles: vec![Role::Ambient.as_str().into()],
                outcome: Some("rate_limited".into()),
                ..Default::default()
            })
            .unwrap_or(0)
            > 0;
        let ended = if rate_limited {
            Ended::RateLimited
        } else if part.status != CycleStatus::Completed
            && part.ended != Ended::Failed
            && guild.is_some()
        {
            Ended::Failed
        } else {
            part.ended
        };
        (ended, rate_limited)
    }

    /// The next wake and why: the scheduler learns from how the cycle
    /// ended, then the model's wish is kept within what is safe (a forced
    /// end takes the default interval, a tended server that asked for
    /// nothing the maximum). Returns (when, why, whether the wish moved).
    fn next_wake(
        &self,
        ended: Ended,
        part: &Tending,
        tended_a_server: bool,
        now: DateTime<Utc>,
        settings: &Settings,
    ) -> (DateTime<Utc>, String, bool) {
        let garden = &settings.garden;
        let mut state = scheduler::after_cycle(self.scheduler_state(), ended, garden);
        let plan = scheduler::plan(&self.inputs(), &state, garden);
        let safe = plan
            .wait
            .unwrap_or(Duration::minutes(i64::from(garden.min_interval_minutes)));
        // The scheduler's interval in use (the agent's wish aside): what the next 429 doubles.
        state.last_interval_minutes = Some(scheduler::minutes(safe));
        self.saved(
            "the scheduler's state",
            self.store.garden.garden_set("scheduler", &state),
        );
        if part.forced {
            let d = Duration::minutes(i64::from(garden.default_interval_minutes));
            (
                now + d,
                "the default wake after a forced end".to_string(),
                false,
            )
        } else if let Some(at) = part.requested {
            let (wait, moved) = scheduler::settle(at - now, safe, garden);
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
        } else if tended_a_server {
            tracing::warn!(
                "the garden cycle did not schedule its next wake; using the maximum interval"
            );
            let d = Duration::minutes(i64::from(garden.max_interval_minutes));
            (
                now + d,
                "no wake was scheduled: the maximum interval".to_string(),
                false,
            )
        } else {
            (now + safe, plan.why.join("; "), false)
        }
    }

    pub(super) fn tended_at(&self) -> HashMap<u64, DateTime<Utc>> {
        self.store
            .garden
            .garden_get("tended")
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn mark_tended(&self, g: GuildId, at: DateTime<Utc>) {
        let mut m = self.tended_at();
        m.insert(g.get(), at);
        // Harmless if lost: it only orders which server is tended next.
        let _ = self.store.garden.garden_set("tended", &m);
    }

    /// A failure's back-off, with bounds from the garden settings in effect now.
    fn set_back(&self, key: &Option<GuildId>, now: DateTime<Utc>) -> crate::backoff::Setback {
        let (base, ceiling) = super::backoff_bounds(&self.settings.global().garden);
        self.backoff.failed_within(key, now, base, ceiling)
    }

    /// Whether a server's model part may run (it is not backing off after a failure).
    fn ready(&self, g: GuildId, now: DateTime<Utc>) -> bool {
        self.backoff.ready(&Some(g), now)
    }

    /// The server the model part tends: the one with the most urgent due
    /// queue item; else the one longest untended among those people have
    /// talked in since.
    fn choose_guild(&self, now: DateTime<Utc>) -> Option<GuildId> {
        if let Some(g) = self
            .store
            .garden
            .queue_open()
            .unwrap_or_default()
            .into_iter()
            .find(|q| q.scheduled_for <= now && q.guild.is_some_and(|g| self.ready(g, now)))
            .and_then(|q| q.guild)
        {
            return Some(g);
        }
        let tended = self.tended_at();
        self.store
            .messages
            .known_guilds()
            .unwrap_or_default()
            .into_iter()
            .filter(|(g, _)| self.ready(*g, now))
            .filter_map(|(g, _)| {
                let last = self.store.impulses.last_human_message(g).ok().flatten()?;
                let since = tended.get(&g.get()).copied();
                since.is_none_or(|t| last > t).then_some((since, g))
            })
            .min_by_key(|(since, _)| since.map_or(0, |t| t.timestamp_millis()))
            .map(|(_, g)| g)
    }

    /// The model part: the garden prompt for one server, the tool loop
    /// that tends it, and what its end (`end_ambient_cycle`, or none) says.
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
        let (prompt, shown) = self.prompt(guild, pass_lines, proactive, started);
        let shared = Arc::new(CycleShared {
            cycle: cycle.id,
            guild,
            store: self.store.clone(),
            journal: self.journal.clone(),
            clock: self.clock.clone(),
            allowed: shown.facts.clone(),
            requested: Mutex::new(None),
            modified: Mutex::new(0),
            prepared: Mutex::new(Vec::new()),
        });
        let rendered = match self.executive.prompts.render("garden", &prompt) {
            Ok(r) => r,
            Err(e) => {
                return ModelPart::failed(
                    format!("the garden prompt failed to render: {e}"),
                    shown,
                );
            }
        };
        let turn = self.cycle_turn(&settings, &shared, rendered, proactive);
        let result = self.executive.run_turn(turn).await;
        cycle.tokens_in += result.tokens.input;
        cycle.tokens_out += result.tokens.output;
        cycle
            .steps
            .extend(transcript(&result.messages, self.clock.now()));
        if let Ok(Some(saved)) = self.store.garden.cycle(cycle.id) {
            cycle.todos = saved.todos;
        }
        let did = ToolsDid::of(&shared);
        match result.outcome {
            Ok(TurnOutcome::Final(v)) => match parse_args::<EndCycle>(&v) {
                Ok(end) => self.ended_cycle(cycle.id, guild, end, did, shown),
                Err(e) => ModelPart::failed(e.to_string(), shown),
            },
            Ok(TurnOutcome::Incomplete(why)) => {
                tracing::warn!(cycle = cycle.id, reason = %why, "garden cycle ended without end_ambient_cycle");
                let left = cycle.todos.iter().filter(|t| !t.done).count();
                ModelPart::incomplete(&why, tended.modified() as u64, left, did, shown)
            }
            Ok(TurnOutcome::Answer(_)) => ModelPart::failed(
                "the model answered in prose instead of ending the cycle".into(),
                shown,
            ),
            Err(e) => ModelPart::failed(format!("the model call failed: {e}"), shown),
        }
    }

    /// The cycle's one model turn: the garden's tools (and memory search when
    /// memory is on), ended by `end_ambient_cycle`, with twice the initiative's
    /// step and call allowance (a cycle does more than one post).
    fn cycle_turn(
        &self,
        settings: &Settings,
        shared: &Arc<CycleShared>,
        rendered: Rendered,
        proactive: bool,
    ) -> Turn {
        let guild = shared.guild;
        let mut turn = Turn::new(
            Role::Ambient,
            Some(guild),
            format!("garden cycle {}", shared.cycle),
        );
        turn.system = rendered.system;
        turn.messages = vec![Message::user(rendered.user)];
        turn.tools = tools::for_cycle(shared, &self.impulses, &self.settings, proactive);
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
        turn
    }

    /// The model ended the cycle: the wake it asked for is queued with its
    /// context, and the earlier of that and a `schedule` call's wish is the
    /// one the scheduler weighs.
    fn ended_cycle(
        &self,
        cycle: i64,
        guild: GuildId,
        end: EndCycle,
        did: ToolsDid,
        shown: Shown,
    ) -> ModelPart {
        let now = self.clock.now();
        let asked = end
            .next_schedule
            .as_ref()
            .and_then(|w| w.resolve(now).ok().flatten());
        if let Some(w) = end
            .next_schedule
            .as_ref()
            .filter(|w| !w.context.trim().is_empty())
            && let Some(at) = asked
        {
            let queued = self.store.garden.queue_insert(&QueueItem {
                id: uuid::Uuid::new_v4().simple().to_string(),
                guild: Some(guild),
                scheduled_for: at,
                context: w.context.trim().chars().take(500).collect(),
                priority: Priority::Normal,
                created_by: format!("cycle {cycle}"),
                created_at: now,
                done_at: None,
            });
            self.saved("the wake the model asked for", queued);
        }
        let proactive_work = end
            .proactive_work
            .filter(|p| !p.trim().is_empty())
            .or_else(|| (!did.prepared.is_empty()).then(|| did.prepared.join("; ")));
        ModelPart {
            status: CycleStatus::Completed,
            summary: end.summary,
            modified: u64::from(end.memories_modified).max(did.modified),
            compactions: u64::from(end.compactions),
            proactive: proactive_work,
            requested: match (asked, did.requested) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            forced: false,
            ended: Ended::Clean,
            shown,
        }
    }
}

/// What the cycle's tools did during the turn, read once it ended.
struct ToolsDid {
    modified: u64,
    prepared: Vec<String>,
    requested: Option<DateTime<Utc>>,
}

impl ToolsDid {
    fn of(shared: &CycleShared) -> Self {
        Self {
            modified: u64::from(*shared.modified.lock().unwrap_or_else(|p| p.into_inner())),
            prepared: shared
                .prepared
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            requested: *shared.requested.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }
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

/// What the model part (or the lack of one) leaves for the record.
struct Tending {
    status: CycleStatus,
    summary: String,
    requested: Option<DateTime<Utc>>,
    forced: bool,
    ended: Ended,
    /// Memories the model part changed.
    modified: u64,
    /// The model part ran (whatever it did): a cycle with one is never an empty pass.
    model_ran: bool,
}

impl Tending {
    /// A cycle that was the memory pass alone.
    fn pass_only(summary: String) -> Self {
        Self {
            status: CycleStatus::Completed,
            summary,
            requested: None,
            forced: false,
            // A memory pass alone says nothing about rate limits or readiness.
            ended: Ended::Neutral,
            modified: 0,
            model_ran: false,
        }
    }
}

/// Why a cycle did not run or could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum CycleError {
    /// Declined: another cycle runs (that one's end serves what was asked).
    #[error("{}", super::BUSY)]
    Busy,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the cycle row is gone")]
    RowGone,
    #[error("the memory pass failed: {0}")]
    Pass(tokio::task::JoinError),
}

struct ModelPart {
    shown: Shown,
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
    /// The turn ran out without `end_ambient_cycle`, even after the
    /// continuation: a forced end, with what the pass and the tools did.
    fn incomplete(why: &str, pass_modified: u64, left: usize, did: ToolsDid, shown: Shown) -> Self {
        Self {
            status: CycleStatus::Incomplete,
            summary: format!(
                "incomplete ({why}); {} memories changed by the pass; {left} planned item(s) left",
                pass_modified + did.modified
            ),
            modified: did.modified,
            compactions: 0,
            proactive: (!did.prepared.is_empty()).then(|| did.prepared.join("; ")),
            requested: None,
            forced: true,
            ended: Ended::Failed,
            shown,
        }
    }

    fn failed(why: String, shown: Shown) -> Self {
        Self {
            shown,
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
