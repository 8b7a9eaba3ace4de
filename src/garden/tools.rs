//! The garden cycle's tools (seed: "Ambient Agent Tools").
//!
//! - `todos` — the cycle's plan, saved at once so an interrupted cycle shows
//!   what was left;
//! - `schedule_ambient` — queue work for a later cycle (a proposal: the
//!   scheduler may move the wake);
//! - `memory_resolve`, `memory_confirm`, `memory_retire` — the judgment calls
//!   the deterministic pass left: a contradiction, a stale fact;
//! - once proactive work is unlocked: `add_task`, `add_idea`,
//!   `propose_thought` — prepared work, never a post (a thought still goes
//!   through the initiative gates), and refused when people rejected similar
//!   posts before;
//! - `end_ambient_cycle` — the required final call.
//!
//! Every tool acts on the one guild the cycle tends; ids from elsewhere are
//! not found.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::Deserialize;

use super::feedback;
use crate::clock::SharedClock;
use crate::executive::tools::{Tool, ToolError, TypedTool, typed};
use crate::garden::Stores;
use crate::ids::GuildId;
use crate::impulses::{Impulses, NewTask};
use crate::journal::Journal;
use crate::settings::SettingsService;
use crate::store::garden::{QueueItem, Todo};
use crate::vocab::Priority;
use crate::vocab::fact::Fact;
use crate::vocab::journal::{Entry, Kind};
use crate::vocab::pending::PendingThought;

/// When to wake, as the model says it.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Wake {
    /// Minutes from now.
    #[serde(default)]
    pub wake_in_minutes: Option<u32>,
    /// Or an RFC 3339 time, e.g. "2026-02-08T15:30:00Z".
    #[serde(default)]
    pub wake_at: Option<String>,
    /// What to do then.
    #[serde(default)]
    pub context: String,
}

impl Wake {
    pub(crate) fn resolve(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, JudgeError> {
        match (&self.wake_at, self.wake_in_minutes) {
            (Some(at), _) => DateTime::parse_from_rfc3339(at.trim())
                .map(|t| Some(t.with_timezone(&Utc)))
                .map_err(|_| JudgeError::BadWakeAt(at.clone())),
            (None, Some(m)) => Ok(Some(now + Duration::minutes(i64::from(m)))),
            (None, None) => Ok(None),
        }
    }
}

/// The required final call.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EndCycle {
    /// What you did, for people to read (the status widget shows it).
    pub summary: String,
    /// Memories created, merged, pruned or updated in this cycle.
    pub memories_modified: u32,
    /// Compactions during this cycle.
    pub compactions: u32,
    /// Work you prepared (tasks, ideas, thoughts), if any.
    #[serde(default)]
    pub proactive_work: Option<String>,
    /// When to wake next, and why.
    #[serde(default)]
    pub next_schedule: Option<Wake>,
}

/// High-importance memories and behaviour guidance are people's word: the
/// garden never retires or replaces them.
fn protected(f: &Fact) -> Result<(), JudgeError> {
    if f.importance == crate::vocab::fact::Importance::High
        || f.kind == crate::vocab::fact::FactKind::BehaviorGuidance
    {
        return Err(JudgeError::Protected {
            id: f.short_id().to_string(),
            what: if f.kind == crate::vocab::fact::FactKind::BehaviorGuidance {
                "behaviour guidance"
            } else {
                "high importance"
            },
        });
    }
    Ok(())
}

/// Why a cycle tool refused what the model asked; the text is the tool's
/// error result, for the model to correct its call.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JudgeError {
    #[error("wake_at {0:?} is not an RFC 3339 time like 2026-02-08T15:30:00Z")]
    BadWakeAt(String),
    /// `id` is the memory's short id.
    #[error("{id} is {what} — only people change that (/memory)")]
    Protected { id: String, what: &'static str },
    #[error("{0:?}: give at least the first 8 characters of the memory's id")]
    ShortId(String),
    #[error("{0} is not one of the memories this cycle was asked to judge")]
    NotAsked(String),
    #[error("no active memory of this server has the id {0}")]
    NoSuchMemory(String),
    #[error("{0} matches several memories; give more of the id")]
    Ambiguous(String),
}

// The tools' results are text for the model (executive's `TypedTool`), so a
// refusal becomes its message there.
impl From<JudgeError> for ToolError {
    fn from(e: JudgeError) -> ToolError {
        ToolError(e.to_string())
    }
}

/// What the tools share with the cycle while it runs.
pub(crate) struct CycleShared {
    pub cycle: i64,
    pub guild: GuildId,
    pub store: Stores,
    pub journal: Journal,
    pub clock: SharedClock,
    /// The memories the model was shown as needing judgment: the only ones
    /// its judgment tools may touch (text in the prompt cannot point them elsewhere).
    pub allowed: std::collections::HashSet<String>,
    /// The earliest wake the model asked for, through `schedule_ambient`.
    pub requested: Mutex<Option<DateTime<Utc>>>,
    /// Memories the tools changed.
    pub modified: Mutex<u32>,
    /// Prepared work, in a few words each.
    pub prepared: Mutex<Vec<String>>,
}

impl CycleShared {
    fn note(&self, summary: String, reason: String) {
        self.journal.record(
            Entry::new(Kind::Garden, summary)
                .guild(Some(self.guild))
                .reason(reason),
        );
    }

    /// An active fact of this guild, by id or its first 8+ characters.
    fn fact(&self, id: &str) -> Result<Fact, JudgeError> {
        let id = id.trim();
        if id.len() < 8 {
            return Err(JudgeError::ShortId(id.to_string()));
        }
        let found: Vec<Fact> = self
            .store
            .memory
            .facts_by_prefix(id)
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.scope.guild == Some(self.guild) && f.is_active())
            .collect();
        match found.as_slice() {
            [f] if !self.allowed.contains(&f.id) => Err(JudgeError::NotAsked(id.to_string())),
            [f] => Ok(f.clone()),
            [] => Err(JudgeError::NoSuchMemory(id.to_string())),
            _ => Err(JudgeError::Ambiguous(id.to_string())),
        }
    }

    fn touched(&self, n: u32) {
        *self.modified.lock().unwrap_or_else(|p| p.into_inner()) += n;
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TodosArgs {
    /// The whole plan, each item with whether it is done; send it again as you go.
    items: Vec<Todo>,
}

struct Todos(Arc<CycleShared>);

#[async_trait]
impl TypedTool for Todos {
    type Args = TodosArgs;
    fn name(&self) -> &'static str {
        "todos"
    }
    fn description(&self) -> String {
        "Plan this cycle: the list of what you will do, each marked done as you finish it. Call it first, and again as you go.".into()
    }
    async fn run(&self, args: TodosArgs) -> Result<String, ToolError> {
        let s = &self.0;
        let mut cycle = s
            .store
            .garden
            .cycle(s.cycle)
            .map_err(|e| e.to_string())?
            .ok_or("the cycle is gone")?;
        let done = args.items.iter().filter(|t| t.done).count();
        cycle.todos = args.items;
        s.store
            .garden
            .cycle_save(&cycle)
            .map_err(|e| e.to_string())?;
        Ok(format!(
            "plan saved: {} item(s), {done} done",
            cycle.todos.len()
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScheduleArgs {
    /// Minutes from now.
    #[serde(default)]
    wake_in_minutes: Option<u32>,
    /// Or an RFC 3339 time, e.g. "2026-02-08T15:30:00Z".
    #[serde(default)]
    wake_at: Option<String>,
    /// What the later cycle should do.
    context: String,
    /// low, normal or high (default normal).
    #[serde(default)]
    priority: Option<Priority>,
}

struct Schedule(Arc<CycleShared>);

#[async_trait]
impl TypedTool for Schedule {
    type Args = ScheduleArgs;
    fn name(&self) -> &'static str {
        "schedule_ambient"
    }
    fn description(&self) -> String {
        "Queue work for a later cycle: when (wake_in_minutes or wake_at) and what (context). The system may move the time to stay within budget.".into()
    }
    async fn run(&self, args: ScheduleArgs) -> Result<String, ToolError> {
        let s = &self.0;
        let now = s.clock.now();
        let wake = Wake {
            wake_in_minutes: args.wake_in_minutes,
            wake_at: args.wake_at,
            context: args.context,
        };
        let at = wake
            .resolve(now)?
            .ok_or("give wake_in_minutes or wake_at")?;
        if wake.context.trim().is_empty() {
            return Err("give the context: what the later cycle should do".into());
        }
        let item = QueueItem {
            id: uuid::Uuid::new_v4().simple().to_string(),
            guild: Some(s.guild),
            scheduled_for: at.max(now),
            context: wake.context.trim().chars().take(500).collect(),
            priority: args.priority.unwrap_or_default(),
            created_by: format!("cycle {}", s.cycle),
            created_at: now,
            done_at: None,
        };
        s.store
            .garden
            .queue_insert(&item)
            .map_err(|e| e.to_string())?;
        let mut req = s.requested.lock().unwrap_or_else(|p| p.into_inner());
        *req = Some(req.map_or(item.scheduled_for, |r| r.min(item.scheduled_for)));
        Ok(format!(
            "queued for {} (the scheduler may move it)",
            item.scheduled_for.format("%Y-%m-%d %H:%M UTC")
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveArgs {
    /// The memory that holds now.
    keep: String,
    /// The memory it replaces.
    supersede: String,
    reason: String,
}

struct Resolve(Arc<CycleShared>);

#[async_trait]
impl TypedTool for Resolve {
    type Args = ResolveArgs;
    fn name(&self) -> &'static str {
        "memory_resolve"
    }
    fn description(&self) -> String {
        "Resolve a contradiction: the memory `keep` holds now and replaces `supersede` (ids from the candidates).".into()
    }
    async fn run(&self, args: ResolveArgs) -> Result<String, ToolError> {
        let s = &self.0;
        let keep = s.fact(&args.keep)?;
        let mut old = s.fact(&args.supersede)?;
        protected(&old)?;
        if keep.id == old.id {
            return Err("keep and supersede are the same memory".into());
        }
        old.superseded_by = Some(keep.id.clone());
        old.updated_at = s.clock.now();
        s.store
            .memory
            .save_facts(&[], &[&old])
            .map_err(|e| e.to_string())?;
        s.touched(1);
        s.note(
            format!(
                "resolved a contradiction: {} replaces {}",
                keep.short_id(),
                old.short_id()
            ),
            format!(
                "{} — \"{}\" over \"{}\"",
                args.reason, keep.content, old.content
            ),
        );
        Ok(format!(
            "{} now replaces {}",
            keep.short_id(),
            old.short_id()
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IdReasonArgs {
    id: String,
    reason: String,
}

struct Confirm(Arc<CycleShared>);

#[async_trait]
impl TypedTool for Confirm {
    type Args = IdReasonArgs;
    fn name(&self) -> &'static str {
        "memory_confirm"
    }
    fn description(&self) -> String {
        "A stale memory still holds (recent conversation confirms it): restore its confidence and reinforce it.".into()
    }
    async fn run(&self, args: IdReasonArgs) -> Result<String, ToolError> {
        let s = &self.0;
        let mut f = s.fact(&args.id)?;
        let now = s.clock.now();
        f.strength += 1;
        f.confidence = 1.0;
        f.last_seen_at = now;
        f.updated_at = now;
        s.store
            .memory
            .save_facts(&[], &[&f])
            .map_err(|e| e.to_string())?;
        // Harmless if lost: the strength is saved above; the breadcrumb only dates it.
        let _ = s.store.memory.add_reinforcement(&f.id, None, now);
        s.touched(1);
        s.note(
            format!("re-checked memory {}: still holds", f.short_id()),
            format!("{} — \"{}\"", args.reason, f.content),
        );
        Ok(format!(
            "{} confirmed (strength {})",
            f.short_id(),
            f.strength
        ))
    }
}

struct Retire(Arc<CycleShared>);

#[async_trait]
impl TypedTool for Retire {
    type Args = IdReasonArgs;
    fn name(&self) -> &'static str {
        "memory_retire"
    }
    fn description(&self) -> String {
        "A memory no longer holds (recent conversation contradicts it, or it went stale): archive it.".into()
    }
    async fn run(&self, args: IdReasonArgs) -> Result<String, ToolError> {
        let s = &self.0;
        let mut f = s.fact(&args.id)?;
        protected(&f)?;
        let now = s.clock.now();
        f.archived_at = Some(now);
        f.updated_at = now;
        s.store
            .memory
            .save_facts(&[], &[&f])
            .map_err(|e| e.to_string())?;
        s.touched(1);
        s.note(
            format!("retired memory {}", f.short_id()),
            format!("{} — \"{}\"", args.reason, f.content),
        );
        Ok(format!("{} archived", f.short_id()))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskArgs {
    /// What you will do, e.g. "ask ada how the move went".
    text: String,
    /// When: "in 2 hours", "tomorrow 10:00", …
    due: String,
    /// The channel it is for (its name), if any.
    #[serde(default)]
    channel: Option<String>,
}

struct AddTask(Arc<CycleShared>, Arc<Impulses>);

#[async_trait]
impl TypedTool for AddTask {
    type Args = TaskArgs;
    fn name(&self) -> &'static str {
        "add_task"
    }
    fn description(&self) -> String {
        "Prepare a task for later (a follow-up someone would appreciate); when due you will be asked what to do, and any post still goes through the usual checks.".into()
    }
    async fn run(&self, args: TaskArgs) -> Result<String, ToolError> {
        let s = &self.0;
        if let Some(why) = feedback::rejected_before(&s.store.memory, s.guild, &args.text) {
            return Err(ToolError(format!("not this one: {why}")));
        }
        let channel = match args
            .channel
            .as_deref()
            .map(|c| c.trim().trim_start_matches('#'))
            .filter(|c| !c.is_empty())
        {
            Some(name) => Some(
                s.store
                    .messages
                    .channel_by_name(s.guild, name)
                    .ok()
                    .flatten()
                    .ok_or_else(|| format!("there is no #{name} here"))?,
            ),
            None => None,
        };
        let task = self
            .1
            .add_task(NewTask {
                guild: Some(s.guild),
                channel,
                text: args.text,
                due: args.due,
                message: None,
                context: format!("prepared by garden cycle {}", s.cycle),
                created_by: "the garden".into(),
                owner: None,
            })
            .map_err(|e| e.to_string())?;
        s.prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("task: {}", task.text));
        Ok(format!(
            "task {} due {}",
            task.short_id(),
            task.due.format("%Y-%m-%d %H:%M UTC")
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IdeaArgs {
    /// Something worth exploring when it is quiet.
    text: String,
    /// What sparked it.
    sparked_by: String,
}

struct AddIdea(Arc<CycleShared>, Arc<Impulses>);

#[async_trait]
impl TypedTool for AddIdea {
    type Args = IdeaArgs;
    fn name(&self) -> &'static str {
        "add_idea"
    }
    fn description(&self) -> String {
        "Note an idea to explore when the server is quiet.".into()
    }
    async fn run(&self, args: IdeaArgs) -> Result<String, ToolError> {
        let s = &self.0;
        if let Some(why) = feedback::rejected_before(&s.store.memory, s.guild, &args.text) {
            return Err(ToolError(format!("not this one: {why}")));
        }
        let idea = self
            .1
            .add_idea(Some(s.guild), &args.text, &args.sparked_by)
            .map_err(|e| e.to_string())?;
        s.prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("idea: {}", idea.text));
        Ok("idea noted".into())
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThoughtArgs {
    /// The thought, as you would post it.
    text: String,
    /// The channel it fits (its name), if one.
    #[serde(default)]
    channel: Option<String>,
    /// Why people here would care.
    why: String,
}

struct ProposeThought(Arc<CycleShared>, Arc<SettingsService>);

#[async_trait]
impl TypedTool for ProposeThought {
    type Args = ThoughtArgs;
    fn name(&self) -> &'static str {
        "propose_thought"
    }
    fn description(&self) -> String {
        "Leave a thought for the initiative cycle to consider posting later (it decides whether, when and where; nothing is posted now). Only one can wait at a time.".into()
    }
    async fn run(&self, args: ThoughtArgs) -> Result<String, ToolError> {
        let s = &self.0;
        if let Some(why) = feedback::rejected_before(&s.store.memory, s.guild, &args.text) {
            return Err(ToolError(format!("not this one: {why}")));
        }
        if s.store
            .initiative
            .pending_thought(s.guild)
            .map_err(|e| e.to_string())?
            .is_some()
        {
            return Err("a thought is already waiting for the initiative cycle here".into());
        }
        let channel = args
            .channel
            .as_deref()
            .map(|c| c.trim().trim_start_matches('#'))
            .filter(|c| !c.is_empty())
            .and_then(|name| {
                s.store
                    .messages
                    .channel_by_name(s.guild, name)
                    .ok()
                    .flatten()
            });
        let now = s.clock.now();
        let max_age = Duration::minutes(i64::from(
            self.1
                .for_guild(Some(s.guild))
                .initiative
                .text
                .pending_thought_max_age_minutes,
        ));
        let thought = PendingThought::new(
            s.guild,
            args.text.trim().to_string(),
            channel,
            format!("prepared by the garden: {}", args.why),
            None,
            now,
            max_age,
        );
        s.store
            .initiative
            .save_pending_thought(&thought)
            .map_err(|e| e.to_string())?;
        s.prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("thought: {}", thought.draft));
        s.note(
            "prepared a thought for the initiative cycle".into(),
            format!("{} — \"{}\"", args.why, thought.draft),
        );
        Ok("the thought waits for the initiative cycle".into())
    }
}

/// The tools for one cycle; the proactive ones only once proactive work is unlocked.
pub(crate) fn for_cycle(
    shared: &Arc<CycleShared>,
    impulses: &Arc<Impulses>,
    settings: &Arc<SettingsService>,
    proactive: bool,
) -> Vec<Arc<dyn Tool>> {
    let mut tools = vec![
        typed(Todos(shared.clone())),
        typed(Schedule(shared.clone())),
        typed(Resolve(shared.clone())),
        typed(Confirm(shared.clone())),
        typed(Retire(shared.clone())),
    ];
    if proactive {
        tools.push(typed(AddTask(shared.clone(), impulses.clone())));
        tools.push(typed(AddIdea(shared.clone(), impulses.clone())));
        tools.push(typed(ProposeThought(shared.clone(), settings.clone())));
    }
    tools
}
