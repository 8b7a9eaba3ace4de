//! The garden cycle's prompt (seed: "System Prompt"): real data about one
//! server — its queue, recent conversations, the memory's health, what the
//! pass did there, the candidates that need judgment, feedback, tasks and
//! ideas, the budget. Nothing about any other server reaches it.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use super::{Garden, feedback, pass, scheduler};
use crate::executive::prompts::PromptLine;
use crate::ids::{ChannelId, GuildId};
use crate::journal::stream;
use crate::journal::summary::Audience;
use crate::settings::Role;
use crate::store::garden::{Cycle, CycleStatus, QueueItem};
use crate::store::messages::StoredMessage;
use crate::vocab::fact::Fact;

/// What a prompt showed the model, so the cycle acts only on that.
#[derive(Clone, Debug, Default)]
pub(super) struct Shown {
    /// Due queue items the model was given (done when the cycle completes).
    pub queue: Vec<String>,
    /// Contradiction pairs it was asked to judge (not asked again unless one changes).
    pub pairs: Vec<String>,
    /// The memories its judgment tools may touch.
    pub facts: HashSet<String>,
}

/// A contradiction pair, as judged: both ids and both versions.
pub(super) fn pair_key(a: &Fact, b: &Fact) -> String {
    format!(
        "{}@{}|{}@{}",
        a.id,
        a.updated_at.timestamp_millis(),
        b.id,
        b.updated_at.timestamp_millis()
    )
}

impl Garden {
    /// Contradiction pairs already put to the model.
    pub(super) fn judged(&self) -> HashSet<String> {
        self.store
            .garden
            .garden_get::<Vec<String>>("judged")
            .ok()
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .collect()
    }

    pub(super) fn mark_judged(&self, pairs: &[String]) {
        let mut all: Vec<String> = self
            .store
            .garden
            .garden_get("judged")
            .ok()
            .flatten()
            .unwrap_or_default();
        all.extend(pairs.iter().cloned());
        let skip = all.len().saturating_sub(5_000);
        all.drain(..skip);
        // Harmless if lost: these pairs are only shown to the model once more.
        let _ = self.store.garden.garden_set("judged", &all);
    }

    /// The prompt for one guild's cycle, and what it showed (the queue items
    /// and candidate memories the model may act on). Each section of the
    /// garden prompt is gathered by its own function below.
    // Whole on purpose: what is left is the prompt's table of sections (one
    // struct literal, each field a section or a named helper's result); it
    // reads in the template's order, and splitting it would scatter that.
    pub(super) fn prompt(
        &self,
        guild: GuildId,
        pass_lines: &[String],
        proactive: bool,
        now: DateTime<Utc>,
    ) -> (GardenPrompt, Shown) {
        let settings = self.settings.for_guild(Some(guild));
        let g = &settings.garden;
        let tz = settings.zone();
        let when = |t: DateTime<Utc>| stamp(t, tz);
        // The last cycle that tended this guild — never another guild's summary.
        let last = self
            .store
            .garden
            .cycles(200)
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.guild == Some(guild) && c.ended_at.is_some());
        // Like the rest of the prompt, only what anyone in the bot's open
        // channels could read: talk in a private channel stays there.
        let public = Audience::public(&settings, guild);
        let recent = self.recent_talk(guild, &public, now);
        let talk: String = recent
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let cands = pass::candidates(&self.store.memory, g, guild, &talk, now, &self.judged());
        let queue: Vec<QueueItem> = self
            .store
            .garden
            .queue_open()
            .unwrap_or_default()
            .into_iter()
            .filter(|q| q.guild == Some(guild))
            .take(10)
            .collect();
        let shown = shown(&queue, &cands, now);
        let max = Duration::minutes(i64::from(g.max_interval_minutes));
        let (tasks, ideas) = self.prepared_work(guild, tz);
        let prompt = GardenPrompt {
            bot_name: settings.bot.name.clone(),
            guild_name: self.guild_name(guild),
            context: stream::prefix_for(
                &self.store.journal,
                &settings,
                Role::Ambient,
                &public,
                now,
            )
            .unwrap_or_default(),
            now: format!("{} {}", when(now), tz),
            downtime: downtime(last.as_ref(), now, max, tz),
            leftover: leftover(last.as_ref()),
            last_cycle: last.map_or("never".into(), |c| {
                format!(
                    "{} ({}): {}",
                    when(c.started_at),
                    crate::when::ago(c.started_at, now),
                    c.summary
                )
            }),
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
            queue: queue
                .into_iter()
                .map(|q| QueueLine {
                    priority: format!("{:?}", q.priority).to_lowercase(),
                    when: when(q.scheduled_for),
                    context: q.context,
                })
                .collect(),
            conversations: self.conversation_lines(&recent, tz),
            health: self.health(guild, now, g.confidence_half_life_days),
            pass_lines: pass_lines.to_vec(),
            contradictions: contradiction_lines(&cands, tz),
            stale: stale_lines(&cands, tz),
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
            feedback: self.feedback_lines(guild),
            // What the bot did lately, as anyone in its public channels could read it.
            deeds: crate::journal::summary::what_i_did(
                &self.journal,
                &self.store.messages,
                &public,
                now - Duration::hours(24),
                tz,
                12,
            ),
            proactive,
            tasks,
            ideas,
            budget: self.budget_line(tz),
        };
        (prompt, shown)
    }

    /// The last 60 messages since this guild was last tended (a day when
    /// never), from channels anyone could read.
    fn recent_talk(
        &self,
        guild: GuildId,
        public: &Audience,
        now: DateTime<Utc>,
    ) -> Vec<StoredMessage> {
        let since = self
            .tended_at()
            .get(&guild.get())
            .copied()
            .unwrap_or(now - Duration::hours(24));
        let mut recent: Vec<_> = self
            .store
            .messages
            .recent_guild_messages(guild, since, 500)
            .unwrap_or_default()
            .into_iter()
            .filter(|m| public.sees(Some(guild), Some(m.channel)))
            .collect();
        recent.drain(..recent.len().saturating_sub(60));
        recent
    }

    /// One line per channel talked in: how much, how lately, and whether
    /// extraction has read it yet.
    fn conversation_lines(&self, recent: &[StoredMessage], tz: Tz) -> Vec<ConversationLine> {
        let mut conversations: HashMap<ChannelId, (usize, DateTime<Utc>)> = HashMap::new();
        for m in recent {
            let e = conversations.entry(m.channel).or_insert((0, m.created_at));
            e.0 += 1;
            e.1 = e.1.max(m.created_at);
        }
        let checkpoints: HashSet<ChannelId> = self
            .store
            .messages
            .unextracted_channels()
            .unwrap_or_default()
            .into_iter()
            .map(|u| u.channel)
            .collect();
        let mut v: Vec<ConversationLine> = conversations
            .into_iter()
            .map(|(c, (n, last))| ConversationLine {
                channel: self
                    .store
                    .messages
                    .channel_name(c)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| c.to_string()),
                messages: n,
                last: stamp(last, tz),
                extraction: if checkpoints.contains(&c) {
                    "pending".into()
                } else {
                    "done".into()
                },
            })
            .collect();
        v.sort_by(|a, b| a.channel.cmp(&b.channel));
        v
    }

    /// The memory's health in numbers: how many facts, how many still
    /// active, how many faded below a tenth of their confidence, how many links.
    fn health(&self, guild: GuildId, now: DateTime<Utc>, half_life_days: u32) -> Health {
        let (total, active) = self.store.memory.fact_counts(Some(guild)).unwrap_or((0, 0));
        let active_facts = self
            .store
            .memory
            .list_facts(&crate::store::memory::FactFilter {
                guild: Some(Some(guild)),
                ..Default::default()
            })
            .unwrap_or_default();
        let low = active_facts
            .iter()
            .filter(|f| pass::decayed_confidence(f, now, half_life_days) < 0.1)
            .count();
        Health {
            total,
            active,
            inactive: total - active,
            low_confidence: low as u64,
            links: self.store.garden.link_count(guild).unwrap_or(0),
        }
    }

    /// The open tasks and ideas already prepared here (ten of each), so the
    /// model does not prepare them twice.
    fn prepared_work(&self, guild: GuildId, tz: Tz) -> (Vec<String>, Vec<String>) {
        let tasks = self
            .store
            .impulses
            .tasks(Some(guild), false)
            .unwrap_or_default()
            .into_iter()
            .take(10)
            .map(|t| format!("{} (due {})", t.text, stamp(t.due, tz)))
            .collect();
        let ideas = self
            .store
            .impulses
            .ideas(Some(guild), false)
            .unwrap_or_default()
            .into_iter()
            .take(10)
            .map(|i| i.text)
            .collect();
        (tasks, ideas)
    }

    /// What the rate-limit window and the day's ambient budget leave.
    fn budget_line(&self, tz: Tz) -> String {
        let snap = self.executive.snapshot();
        match (snap.tokens_remaining, snap.window_reset) {
            (Some(left), Some(reset)) => format!(
                "- Tokens remaining in the window: {left}\n- Window resets: {}\n- People's usage: {:.0} tokens/min",
                stamp(reset, tz),
                snap.user_tokens_per_minute
            ),
            _ => format!(
                "- No rate-limit headers yet\n- People's usage: {:.0} tokens/min\n- Ambient budget left today: {}",
                snap.user_tokens_per_minute,
                snap.ambient_budget_remaining
                    .map_or("no cap".to_string(), |l| l.to_string())
            ),
        }
    }

    /// How people took the bot's posts here lately (reinforced ones counted).
    fn feedback_lines(&self, guild: GuildId) -> Vec<String> {
        feedback::history(&self.store.memory, guild, 12)
            .into_iter()
            .map(|f| {
                if f.strength > 1 {
                    format!("{} (×{})", f.content, f.strength)
                } else {
                    f.content
                }
            })
            .collect()
    }
}

/// A time as the guild reads it.
fn stamp(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz).format("%Y-%m-%d %H:%M").to_string()
}

/// What the model is shown and may act on: the due queue items and the
/// candidate memories (only these may its judgment tools touch).
fn shown(queue: &[QueueItem], cands: &pass::Candidates, now: DateTime<Utc>) -> Shown {
    Shown {
        queue: queue
            .iter()
            .filter(|q| q.scheduled_for <= now)
            .map(|q| q.id.clone())
            .collect(),
        pairs: cands
            .contradictions
            .iter()
            .map(|(a, b)| pair_key(a, b))
            .collect(),
        facts: cands
            .contradictions
            .iter()
            .flat_map(|(a, b)| [a.id.clone(), b.id.clone()])
            .chain(cands.stale.iter().map(|f| f.id.clone()))
            .collect(),
    }
}

/// When the last cycle here ended, if longer ago than the maximum interval
/// (the bot was down); empty otherwise.
fn downtime(last: Option<&Cycle>, now: DateTime<Utc>, max: Duration, tz: Tz) -> String {
    match last {
        Some(c) if c.ended_at.is_some_and(|e| now - e > max) => {
            format!(
                "{} (the last cycle here)",
                stamp(c.ended_at.unwrap_or(c.started_at), tz)
            )
        }
        _ => String::new(),
    }
}

/// A cycle here that stopped before its end: its plan's open items.
fn leftover(last: Option<&Cycle>) -> Vec<String> {
    last.filter(|c| matches!(c.status, CycleStatus::Interrupted | CycleStatus::Incomplete))
        .map(|c| {
            c.todos
                .iter()
                .filter(|t| !t.done)
                .map(|t| t.text.clone())
                .collect()
        })
        .unwrap_or_default()
}

fn contradiction_lines(cands: &pass::Candidates, tz: Tz) -> Vec<ContradictionLine> {
    cands
        .contradictions
        .iter()
        .map(|(a, b)| ContradictionLine {
            a_id: a.short_id().into(),
            a: a.content.clone(),
            a_when: stamp(a.updated_at, tz),
            b_id: b.short_id().into(),
            b: b.content.clone(),
            b_when: stamp(b.updated_at, tz),
        })
        .collect()
}

fn stale_lines(cands: &pass::Candidates, tz: Tz) -> Vec<StaleLine> {
    cands
        .stale
        .iter()
        .map(|f| StaleLine {
            id: f.short_id().into(),
            content: f.content.clone(),
            when: stamp(f.last_seen_at, tz),
        })
        .collect()
}

#[derive(Serialize)]
pub(super) struct GardenPrompt {
    bot_name: String,
    guild_name: String,
    context: String,
    now: String,
    last_cycle: String,
    downtime: String,
    /// Unfinished todos of the last cycle here, when it was interrupted or incomplete.
    leftover: Vec<String>,
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
