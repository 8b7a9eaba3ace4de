//! The garden cycle's prompt (seed: "System Prompt"): real data about one
//! server — its queue, recent conversations, the memory's health, what the
//! pass did there, the candidates that need judgment, feedback, tasks and
//! ideas, the budget. Nothing about any other server reaches it.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::{Garden, feedback, pass, scheduler};
use crate::executive::Role;
use crate::executive::prompts::PromptLine;
use crate::ids::{ChannelId, GuildId};
use crate::journal::stream;
use crate::journal::summary::Audience;
use crate::memory::fact::Fact;
use crate::store::garden::{CycleStatus, QueueItem};

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
            .garden_get("judged")
            .ok()
            .flatten()
            .unwrap_or_default();
        all.extend(pairs.iter().cloned());
        let skip = all.len().saturating_sub(5_000);
        all.drain(..skip);
        // Harmless if lost: these pairs are only shown to the model once more.
        let _ = self.store.garden_set("judged", &all);
    }

    /// The prompt for one guild's cycle, and what it showed (the queue items
    /// and candidate memories the model may act on).
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
        let when = |t: DateTime<Utc>| t.with_timezone(&tz).format("%Y-%m-%d %H:%M").to_string();
        // The last cycle that tended this guild — never another guild's summary.
        let last = self
            .store
            .cycles(200)
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.guild == Some(guild) && c.ended_at.is_some());
        let since = self
            .tended_at()
            .get(&guild.get())
            .copied()
            .unwrap_or(now - Duration::hours(24));
        // Like the rest of the prompt, only what anyone in the bot's open
        // channels could read: talk in a private channel stays there.
        let public = Audience::public(&settings, guild);
        let mut recent: Vec<_> = self
            .store
            .recent_guild_messages(guild, since, 500)
            .unwrap_or_default()
            .into_iter()
            .filter(|m| public.sees(Some(guild), Some(m.channel)))
            .collect();
        recent.drain(..recent.len().saturating_sub(60));
        let talk: String = recent
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let judged = self.judged();
        let cands = pass::candidates(&self.store, g, guild, &talk, now, &judged);
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
        let (total, active) = self.store.fact_counts(Some(guild)).unwrap_or((0, 0));
        let active_facts = self
            .store
            .list_facts(&crate::store::memory::FactFilter {
                guild: Some(Some(guild)),
                ..Default::default()
            })
            .unwrap_or_default();
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
        let queue: Vec<QueueItem> = self
            .store
            .queue_open()
            .unwrap_or_default()
            .into_iter()
            .filter(|q| q.guild == Some(guild))
            .take(10)
            .collect();
        let max = Duration::minutes(i64::from(g.max_interval_minutes));
        let downtime = match &last {
            Some(c) if c.ended_at.is_some_and(|e| now - e > max) => {
                format!(
                    "{} (the last cycle here)",
                    when(c.ended_at.unwrap_or(c.started_at))
                )
            }
            _ => String::new(),
        };
        // A cycle here that stopped before its end: its plan's open items.
        let leftover: Vec<String> = last
            .as_ref()
            .filter(|c| matches!(c.status, CycleStatus::Interrupted | CycleStatus::Incomplete))
            .map(|c| {
                c.todos
                    .iter()
                    .filter(|t| !t.done)
                    .map(|t| t.text.clone())
                    .collect()
            })
            .unwrap_or_default();
        let shown = Shown {
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
        };
        let prompt = GardenPrompt {
            bot_name: settings.bot.name.clone(),
            guild_name: self.guild_name(guild),
            context: stream::prefix_for(&self.store, &settings, Role::Ambient, &public, now)
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
            downtime,
            leftover,
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
                total,
                active,
                inactive: total - active,
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
                &public,
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
        };
        (prompt, shown)
    }
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
