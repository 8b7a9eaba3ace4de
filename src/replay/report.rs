//! What a replay found, for the server's owner: what the bot did (per
//! channel, per day), what it asked the models and what that would cost,
//! how often a cheap path was enough, which gates said no, and whether any
//! answer was paid for and then not delivered.
//!
//! Built from what the replay's own store and the simulation hold after the
//! run, so it shows what the bot recorded, not what the replay assumed. The
//! same export, settings and seed give the same report, byte for byte: no
//! wall-clock time, path or map order gets in.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::sim::Simulation;
use super::transport::{Act, Doing};
use crate::executive::prices::cost;
use crate::ids::ChannelId;
use crate::replay::Stores;
use crate::settings::Price;
use crate::store::UsageStore;
use crate::store::usage::UsageFilter;

/// What the report says about the run itself.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// The exports read, by file name.
    pub files: Vec<String>,
    pub guild: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// Days between the first and the last message (at least one, so rates are never inflated).
    pub days: f64,
    /// `offline`, `live` or the pinned endpoint's URL (a user and password in it masked).
    pub model: String,
    /// The role models were assumed (an Anthropic key and a local Ollama),
    /// not what the settings and environment here pick.
    pub models_assumed: bool,
    /// …because `--assume-providers` asked (else: because nothing here serves any role).
    pub models_assumed_on_request: bool,
    /// Roles no model served: the bot did none of their work.
    pub roles_without_model: Vec<String>,
    /// Why those roles had no model (each reason once).
    pub no_model_because: Vec<String>,
    pub seed: u64,
    /// Offline only: how often the stand-in posts or speaks when asked.
    pub post_rate: Option<f64>,
    pub eagerness: u32,
    /// Export messages of a type that is not chat (joins, pins …), skipped.
    pub skipped: u64,
    /// The bot's own messages in the export, left out (the replay's bot speaks for itself).
    pub bot_messages_left_out: u64,
}

/// How often the bot did each thing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub replies: u64,
    pub chime_ins: u64,
    pub ambient_posts: u64,
    pub reactions: u64,
    pub reminders: u64,
    /// Anything else it said (the garden, memory upkeep).
    pub other: u64,
}

impl Counts {
    fn add(&mut self, act: &Act) {
        let n = match act {
            Act::Reacted { .. } => &mut self.reactions,
            Act::Said { doing, .. } => match doing {
                Doing::Reply => &mut self.replies,
                Doing::ChimeIn => &mut self.chime_ins,
                Doing::AmbientPost => &mut self.ambient_posts,
                Doing::Reminder => &mut self.reminders,
                Doing::Background => &mut self.other,
            },
        };
        *n += 1;
    }

    /// Messages the bot sent (reactions are not messages).
    pub fn messages(&self) -> u64 {
        self.replies + self.chime_ins + self.ambient_posts + self.reminders + self.other
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ChannelRow {
    pub channel: String,
    /// People's messages replayed here.
    pub messages: u64,
    pub did: Counts,
}

#[derive(Clone, Debug, Serialize)]
pub struct DayRow {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub messages: u64,
    pub did: Counts,
}

/// One hour of the replay: people's messages and the bot's.
#[derive(Clone, Debug, Serialize)]
pub struct HourRow {
    /// `YYYY-MM-DDTHH`, UTC.
    pub hour: String,
    pub people: u64,
    pub bot: u64,
}

/// One role's model use.
#[derive(Clone, Debug, Serialize)]
pub struct RoleRow {
    pub role: String,
    /// `model (provider)` for each model that served the role.
    pub models: Vec<String>,
    pub calls: u64,
    /// Calls a budget refused before anything was sent.
    pub refused: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// US$; `None` when a model's price is unknown.
    pub cost: Option<f64>,
    /// Output tokens a real model would likely have answered: offline, the
    /// typical answer of each call's kind; otherwise what it answered.
    pub likely_output_tokens: u64,
    /// Output tokens at worst: every call answering the role's `maxOutputTokens`.
    pub worst_output_tokens: u64,
    /// US$ with the likely output; `None` when a model's price is unknown.
    pub likely_cost: Option<f64>,
    /// US$ with the worst-case output.
    pub worst_cost: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub run: Run,
    /// People's messages handled.
    pub messages: u64,
    pub did: Counts,
    pub per_channel: Vec<ChannelRow>,
    pub per_day: Vec<DayRow>,
    pub per_hour: Vec<HourRow>,
    pub roles: Vec<RoleRow>,
    pub calls: u64,
    /// Offline only: calls by what they were for (initiative, garden,
    /// extraction, answer …), as the stand-in told them apart.
    pub calls_by_purpose: BTreeMap<String, u64>,
    /// Offline only: the tools the model was offered for each purpose (what a
    /// call could have done, e.g. `decide` for the initiative).
    pub tools_by_purpose: BTreeMap<String, BTreeSet<String>>,
    pub tokens: u64,
    /// US$ for the whole replay; `None` when some model's price is unknown.
    pub cost: Option<f64>,
    pub cost_per_day: Option<f64>,
    /// Days on which people spoke (UTC); the per-active-day figures divide by these.
    pub active_days: u64,
    /// US$ per calendar day and per active day, with each call's likely
    /// answer and with its longest (the roles' `RoleRow` estimates).
    pub likely_cost_per_day: Option<f64>,
    pub worst_cost_per_day: Option<f64>,
    pub likely_cost_per_active_day: Option<f64>,
    pub worst_cost_per_active_day: Option<f64>,
    /// The caps that stopped the bot's own posts, most often first
    /// (`initiative.text.maxPostsPerDay`, `budget`, `permissions.replies.maxMessagesPerHour`);
    /// empty when only the dice (eagerness) and the room held it back.
    pub binding_limits: Vec<String>,
    /// Models without a price (`executive.prices`).
    pub unpriced_models: Vec<String>,
    /// Percepts whose handling made no reply- or ambient-role call.
    pub without_strong_call: u64,
    /// Which gate said no, how often: the initiative's gates once per server
    /// per tick they stopped (`closed` is its hourly cap), the budget also
    /// once per call the executive refused, the hourly cap also once per
    /// addressed message left unanswered.
    pub gates: BTreeMap<String, u64>,
    /// Texts a model was paid to make and then not delivered: must be 0.
    pub undeliverable: u64,
    /// All texts turned away at the door (a reflex's or a reminder's too:
    /// those cost nothing, but someone may have missed them).
    pub turned_away: u64,
    /// Ticks on which a gate said no to every server and a model was called anyway: must be 0.
    pub calls_past_a_gate: u64,
    /// Initiative ticks (one per server per tick).
    pub ticks: u64,
    /// Ambient posts that came straight after the bot's previous ambient
    /// post with no person posting in the server in between: the bot
    /// talking to itself. 0 at the defaults (`maxUnansweredPosts` 1).
    pub consecutive_unanswered: u64,
}

/// Tallies people's messages as they are replayed (the store keeps the
/// bot's acts; these only the replay sees).
#[derive(Clone, Debug, Default)]
pub(crate) struct Seen {
    pub per_channel: BTreeMap<u64, u64>,
    pub per_day: BTreeMap<String, u64>,
    pub per_hour: BTreeMap<String, u64>,
}

impl Seen {
    pub(crate) fn message(&mut self, channel: u64, at: DateTime<Utc>) {
        *self.per_channel.entry(channel).or_default() += 1;
        *self.per_day.entry(day(at)).or_default() += 1;
        *self.per_hour.entry(hour(at)).or_default() += 1;
    }
}

fn day(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}

fn hour(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H").to_string()
}

impl Report {
    /// The report of a finished simulation.
    pub(crate) fn gather(
        sim: &Simulation,
        run: Run,
        seen: &Seen,
        prices: &BTreeMap<String, Price>,
        offline: &[super::offline::Call],
    ) -> anyhow::Result<Report> {
        let acts = Did::tally(&sim.acts());
        let per_channel = channel_rows(sim, seen, &acts.per_channel);
        let per_day = day_rows(seen, &acts.per_day);
        let per_hour = hours(&run, &seen.per_hour, &acts.bot_hours);
        let usage = sim
            .app
            .stores::<UsageStore>()
            .usage_list(&UsageFilter::default(), None)?;
        let settings = sim.app.settings.global();
        let mut roles = role_rows(&usage, prices);
        estimate(&mut roles, &usage, offline, prices, &settings);
        let calls = roles.iter().map(|r| r.calls).sum();
        let (calls_by_purpose, tools_by_purpose) = purposes(offline);
        let tokens = roles.iter().map(|r| r.input_tokens + r.output_tokens).sum();
        let cost = roles.iter().try_fold(0.0, |sum, r| r.cost.map(|c| sum + c));
        let unpriced_models = unpriced(&usage, prices);
        let gates = gate_counts(sim, &roles)?;
        let consecutive_unanswered = consecutive_unanswered(sim)?;
        let tally = sim.tally();
        let days = run.days;
        let active_days = per_day.iter().filter(|d| d.messages > 0).count() as u64;
        let likely = roles
            .iter()
            .try_fold(0.0, |sum, r| r.likely_cost.map(|c| sum + c));
        let worst = roles
            .iter()
            .try_fold(0.0, |sum, r| r.worst_cost.map(|c| sum + c));
        let active = active_days.max(1) as f64;
        let binding_limits = binding(&gates);
        Ok(Report {
            messages: tally.percepts,
            did: acts.all,
            per_channel,
            per_day,
            per_hour,
            roles,
            calls,
            calls_by_purpose,
            tools_by_purpose,
            tokens,
            cost,
            cost_per_day: cost.map(|c| c / days),
            active_days,
            likely_cost_per_day: likely.map(|c| c / days),
            worst_cost_per_day: worst.map(|c| c / days),
            likely_cost_per_active_day: likely.map(|c| c / active),
            worst_cost_per_active_day: worst.map(|c| c / active),
            binding_limits,
            unpriced_models,
            without_strong_call: tally.percepts - tally.percepts_with_strong_call,
            gates,
            undeliverable: tally.paid_but_undelivered,
            turned_away: sim.app.speech.turned_away(),
            calls_past_a_gate: tally.calls_past_a_gate,
            ticks: tally.ticks,
            consecutive_unanswered,
            run,
        })
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes")
    }
}

/// The bot's acts, counted overall, per channel and per day, and its
/// messages per hour (the chart's bot line).
#[derive(Default)]
struct Did {
    all: Counts,
    per_channel: BTreeMap<u64, Counts>,
    per_day: BTreeMap<String, Counts>,
    bot_hours: BTreeMap<String, u64>,
}

impl Did {
    fn tally(acts: &[Act]) -> Did {
        let mut did = Did::default();
        for act in acts {
            let (at, channel) = match act {
                Act::Said { at, channel, .. } | Act::Reacted { at, channel, .. } => (*at, *channel),
            };
            did.all.add(act);
            did.per_channel.entry(channel.get()).or_default().add(act);
            did.per_day.entry(day(at)).or_default().add(act);
            if matches!(act, Act::Said { .. }) {
                *did.bot_hours.entry(hour(at)).or_default() += 1;
            }
        }
        did
    }
}

/// One row per channel where people spoke or the bot acted, by name.
fn channel_rows(sim: &Simulation, seen: &Seen, did: &BTreeMap<u64, Counts>) -> Vec<ChannelRow> {
    let store: Stores = sim.app.stores();
    let name = |c: ChannelId| {
        store
            .messages
            .channel_name(c)
            .ok()
            .flatten()
            .map_or_else(|| c.to_string(), |n| format!("#{n}"))
    };
    let channels = seen.per_channel.keys().chain(did.keys());
    let mut channel_ids: Vec<u64> = channels.copied().collect();
    channel_ids.sort_unstable();
    channel_ids.dedup();
    channel_ids
        .into_iter()
        .map(|c| ChannelRow {
            channel: name(ChannelId(c)),
            messages: seen.per_channel.get(&c).copied().unwrap_or(0),
            did: did.get(&c).copied().unwrap_or_default(),
        })
        .collect()
}

/// One row per day on which people spoke or the bot acted.
fn day_rows(seen: &Seen, did: &BTreeMap<String, Counts>) -> Vec<DayRow> {
    let days: BTreeSet<&String> = seen.per_day.keys().chain(did.keys()).collect();
    days.into_iter()
        .map(|d| DayRow {
            day: d.clone(),
            messages: seen.per_day.get(d).copied().unwrap_or(0),
            did: did.get(d).copied().unwrap_or_default(),
        })
        .collect()
}

/// The stand-in's calls by purpose, and the tools each purpose was offered.
fn purposes(
    offline: &[super::offline::Call],
) -> (BTreeMap<String, u64>, BTreeMap<String, BTreeSet<String>>) {
    let mut calls_by_purpose = BTreeMap::new();
    let mut tools_by_purpose: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for call in offline {
        *calls_by_purpose
            .entry(call.purpose.to_string())
            .or_default() += 1;
        tools_by_purpose
            .entry(call.purpose.to_string())
            .or_default()
            .extend(call.tools.iter().cloned());
    }
    (calls_by_purpose, tools_by_purpose)
}

/// How often each gate stopped something: the initiative gates' own count,
/// plus the budget's refusals and the texts left unanswered at the hourly cap.
fn gate_counts(sim: &Simulation, roles: &[RoleRow]) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut gates: BTreeMap<String, u64> = sim
        .tally()
        .gates
        .iter()
        .map(|(g, n)| ((*g).to_string(), *n))
        .collect();
    let refused = roles.iter().map(|r| r.refused).sum::<u64>();
    *gates.entry("budget".into()).or_default() += refused;
    *gates.entry("hourly_cap".into()).or_default() += unanswered_at_hourly_cap(sim)?;
    for gate in refused_people(sim)? {
        *gates.entry(gate).or_default() += 1;
    }
    Ok(gates)
}

/// Every hour from the first message to the last, empty ones too (the chart's x axis).
fn hours(run: &Run, people: &BTreeMap<String, u64>, bot: &BTreeMap<String, u64>) -> Vec<HourRow> {
    let mut rows = Vec::new();
    let mut t = run.from;
    let end = run.to.max(run.from);
    while t <= end + chrono::Duration::hours(1) {
        let h = hour(t);
        rows.push(HourRow {
            people: people.get(&h).copied().unwrap_or(0),
            bot: bot.get(&h).copied().unwrap_or(0),
            hour: h,
        });
        t += chrono::Duration::hours(1);
    }
    rows
}

fn role_rows(
    usage: &[crate::store::usage::UsageRecord],
    prices: &BTreeMap<String, Price>,
) -> Vec<RoleRow> {
    let mut rows: BTreeMap<&str, RoleRow> = BTreeMap::new();
    for u in usage {
        let row = rows.entry(u.role.as_str()).or_insert_with(|| RoleRow {
            role: u.role.clone(),
            models: Vec::new(),
            calls: 0,
            refused: 0,
            input_tokens: 0,
            output_tokens: 0,
            cost: Some(0.0),
            likely_output_tokens: 0,
            worst_output_tokens: 0,
            likely_cost: Some(0.0),
            worst_cost: Some(0.0),
        });
        let model = format!("{} ({})", u.model, u.provider);
        if !row.models.contains(&model) {
            row.models.push(model);
        }
        if u.outcome == "refused" {
            row.refused += 1;
            continue;
        }
        row.calls += 1;
        row.input_tokens += u.tokens_in;
        row.output_tokens += u.tokens_out;
        let price = cost(
            prices,
            &u.model,
            !u.pay_per_token,
            u.tokens_in,
            u.tokens_out,
        );
        row.cost = row.cost.zip(price).map(|(a, b)| a + b);
    }
    rows.into_values().collect()
}

/// Each role's likely and worst-case output and cost. Offline, from the
/// stand-in's calls: its placeholders are a few tokens, so each call is
/// priced with the typical answer of its kind and with the most it could
/// have answered. Otherwise from the usage records: what the model answered,
/// and the role's `maxOutputTokens` per call.
fn estimate(
    roles: &mut [RoleRow],
    usage: &[crate::store::usage::UsageRecord],
    offline: &[super::offline::Call],
    prices: &BTreeMap<String, Price>,
    settings: &crate::settings::Settings,
) {
    struct One<'a> {
        role: &'a str,
        model: &'a str,
        local: bool,
        input: u64,
        likely: u64,
        worst: u64,
    }
    let calls: Vec<One<'_>> = if offline.is_empty() {
        usage
            .iter()
            .filter(|u| u.outcome != "refused")
            .map(|u| One {
                role: &u.role,
                model: &u.model,
                local: !u.pay_per_token,
                input: u.tokens_in,
                likely: u.tokens_out,
                worst: crate::settings::Role::ALL
                    .iter()
                    .find(|r| r.as_str() == u.role)
                    .map_or(u.tokens_out, |r| {
                        u64::from(r.settings(settings).max_output_tokens)
                    }),
            })
            .collect()
    } else {
        offline
            .iter()
            .map(|c| One {
                role: c.role.as_str(),
                model: &c.model,
                local: c.local,
                input: c.input_tokens,
                likely: super::offline::typical_output_tokens(c.purpose).min(c.max_output_tokens),
                worst: c.max_output_tokens,
            })
            .collect()
    };
    for row in roles.iter_mut() {
        for c in calls.iter().filter(|c| c.role == row.role) {
            row.likely_output_tokens += c.likely;
            row.worst_output_tokens += c.worst;
            let likely = cost(prices, c.model, c.local, c.input, c.likely);
            let worst = cost(prices, c.model, c.local, c.input, c.worst);
            row.likely_cost = row.likely_cost.zip(likely).map(|(a, b)| a + b);
            row.worst_cost = row.worst_cost.zip(worst).map(|(a, b)| a + b);
        }
    }
}

/// The caps that stopped the bot's own posts, by the setting an owner
/// would change, most often first.
fn binding(gates: &BTreeMap<String, u64>) -> Vec<String> {
    const CAPS: [(&str, &str); 3] = [
        ("daily_cap", "initiative.text.maxPostsPerDay"),
        ("budget", "budget"),
        ("closed", "permissions.replies.maxMessagesPerHour"),
    ];
    let mut bound: Vec<(u64, &str)> = CAPS
        .iter()
        .filter_map(|(gate, setting)| {
            let n = gates.get(*gate).copied().unwrap_or(0);
            (n > 0).then_some((n, *setting))
        })
        .collect();
    bound.sort_by_key(|b| std::cmp::Reverse(b.0));
    bound.into_iter().map(|(_, s)| s.to_string()).collect()
}

fn unpriced(
    usage: &[crate::store::usage::UsageRecord],
    prices: &BTreeMap<String, Price>,
) -> Vec<String> {
    let mut models: Vec<String> = usage
        .iter()
        .filter(|u| u.outcome != "refused")
        .filter(|u| cost(prices, &u.model, !u.pay_per_token, 0, 0).is_none())
        .map(|u| u.model.clone())
        .collect();
    models.sort();
    models.dedup();
    models
}

/// Ambient posts whose previous ambient post (in the same server) nobody
/// answered: no person posted in the server between the two.
fn consecutive_unanswered(sim: &Simulation) -> anyhow::Result<u64> {
    let store: Stores = sim.app.stores();
    let mut last: BTreeMap<crate::ids::GuildId, DateTime<Utc>> = BTreeMap::new();
    let mut n = 0;
    for act in sim.acts() {
        let Act::Said {
            at,
            doing: Doing::AmbientPost,
            channel,
            ..
        } = act
        else {
            continue;
        };
        let Some(Some(guild)) = store.messages.channel_guild(channel)? else {
            continue;
        };
        if let Some(prev) = last.insert(guild, at)
            && !store.messages.people_spoke_between(guild, prev, at)?
        {
            n += 1;
        }
    }
    Ok(n)
}

/// Messages that addressed the bot where the hourly cap left no room: the
/// reply handler declines them before any model call and journals why.
/// The gate of each message not answered because of who sent it
/// (`permissions::refusal`: `roles`, `dms`); the initiative's gates are
/// counted by the simulation itself.
fn refused_people(sim: &Simulation) -> anyhow::Result<Vec<String>> {
    let entries = sim.app.journal.query(&crate::vocab::journal::Filter {
        kinds: vec![crate::vocab::journal::Kind::Gate],
        text: Some("did not answer".into()),
        ..Default::default()
    })?;
    Ok(entries
        .iter()
        .filter_map(|e| e.data.get("gate")?.as_str().map(str::to_string))
        .collect())
}

fn unanswered_at_hourly_cap(sim: &Simulation) -> anyhow::Result<u64> {
    let entries = sim.app.journal.query(&crate::vocab::journal::Filter {
        kinds: vec![crate::vocab::journal::Kind::Reply],
        text: Some("maxMessagesPerHour".into()),
        ..Default::default()
    })?;
    Ok(entries.len() as u64)
}
