//! One replay from start to end: the exports streamed through a fresh
//! simulation, then the report. The command line is a thin front end over
//! this; tests call it directly.
//!
//! - The replay's data directory is its own (temporary unless kept, and
//!   then empty or new: see `keep`): the live store is never opened.
//! - A pinned endpoint (`--model URL`) is sent its own key, if one is
//!   given, and never a provider's from the environment; its URL is shown
//!   with any user and password masked.
//! - Roles no model serves are named, with what that means for the bot; a
//!   live replay with no model at all is refused, not reported as $0.
//! - Every exported channel is opened to the bot (its initiative pool and
//!   its reply channels) unless the settings already name channels there:
//!   the question is how the bot would be in *these* channels.
//! - People's messages are kept for the timeline as they stream by (all of
//!   the first `TIMELINE_PEOPLE`, then only the few before each of the
//!   bot's acts), so a 100,000-message export stays in bounded memory.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use super::export::{ExportLimits, ExportedMessage, read_exports};
use super::keep;
use super::offline::Offline;
use super::report::{Report, Run, Seen};
use super::sim::{Setup, Simulation};
use super::timeline::{Line, Timeline};
use crate::executive::endpoints::{Offer, Resolution, default_model, resolve};
use crate::executive::prices::cost;
use crate::executive::{StandIn, ollama_answers};
use crate::settings::Role;
use crate::settings::diff::mask;
use crate::settings::{ProviderKind, Secret, Secrets, Settings};
use crate::store::MessageStore;

/// People's messages kept whole in the timeline before it keeps only context.
const TIMELINE_PEOPLE: usize = 2_000;
/// People's messages kept before each act of the bot, per channel.
const CONTEXT: usize = 3;

/// Where the models' answers come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Models {
    /// The deterministic stand-in, for the models the settings and
    /// environment pick (with none at all, a typical set-up's, said so);
    /// nothing of the chat is sent anywhere.
    Offline { post_rate: f64 },
    /// The stand-in for a typical set-up whatever this one has (an Anthropic
    /// key for replies, a local Ollama for the rest): a what-if, labelled.
    Assumed { post_rate: f64 },
    /// The providers the settings and environment configure.
    Live,
    /// Every role pinned to one OpenAI-compatible endpoint, sent `key` if
    /// one is given and no provider's key from the environment.
    Pinned { url: String, key: Option<Secret> },
}

pub struct Options {
    pub files: Vec<PathBuf>,
    /// The bot's settings (their data directory is replaced by `data_dir`).
    pub settings: Settings,
    pub secrets: Secrets,
    pub data_dir: PathBuf,
    pub seed: u64,
    pub models: Models,
    /// Overrides `initiative.text.eagerness` for this replay.
    pub eagerness: Option<u32>,
    /// The bot's user id in the export, if known (else it is recognised by name).
    pub bot: Option<u64>,
    pub limits: ExportLimits,
}

pub struct Outcome {
    pub report: Report,
    pub timeline: Timeline,
    /// Ticks of silent stretches skipped rather than run (the report is the same either way).
    pub skipped_ticks: u64,
    /// Ticks run: what a replay's time follows, with the messages.
    pub ticks_run: u64,
    /// Memory upkeep rounds run inside skipped stretches.
    pub upkeep_runs: u64,
}

/// How far a replay is: messages replayed, and the share of the files read (0–1).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub messages: u64,
    pub fraction: f64,
}

/// Replays `opts.files`; `progress` hears how far it is every thousand messages and at the end.
pub async fn replay(
    opts: Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> anyhow::Result<Outcome> {
    replay_stepping(opts, progress, true).await
}

/// [`replay`] running every tick of silent stretches too: what shows that
/// skipping them changes nothing in the report.
pub async fn replay_every_tick(
    opts: Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> anyhow::Result<Outcome> {
    replay_stepping(opts, progress, false).await
}

async fn replay_stepping(
    opts: Options,
    progress: &(dyn Fn(Progress) + Sync),
    skip_idle: bool,
) -> anyhow::Result<Outcome> {
    let _held = keep::take(&opts.data_dir, &opts.files)?;
    let mut exports = read_exports(&opts.files, &opts.limits)?;
    let Some(first) = exports.next().transpose()? else {
        anyhow::bail!("{}: no messages to replay", names(&opts.files));
    };
    let (settings, secrets, assumed, stand_in) = prepare(&opts).await;
    let eagerness = settings.initiative.text.eagerness;
    let offline_calls = stand_in.clone();
    let offline = stand_in;
    let mut sim = Simulation::start(Setup {
        settings,
        secrets,
        start: first.at,
        seed: opts.seed,
        bot: opts.bot.unwrap_or(1),
        stand_in: offline.map(|o| o as Arc<dyn StandIn>),
    })
    .await?;
    let unserved = Unserved::of(|role| sim.app.executive.resolve(role));
    if opts.models == Models::Live && unserved.is_everything() {
        anyhow::bail!(unserved.refusal());
    }
    sim.open_exported_channels = opens_channels(&opts.settings);
    sim.skip_idle = skip_idle;

    let mut walk = Walk::new(first.at);
    walk.live(&mut sim, &first).await?;
    let mut read = 1;
    while let Some(m) = exports.next() {
        walk.live(&mut sim, &m?).await?;
        read += 1;
        if read % 1_000 == 0 {
            progress(Progress {
                messages: read,
                fraction: exports.fraction_read(),
            });
        }
    }
    progress(Progress {
        messages: read,
        fraction: 1.0,
    });
    // The last message's consequences (a reminder, a garden cycle) get an hour to happen.
    let end = walk.last + chrono::Duration::hours(1);
    sim.pass_until(end).await?;
    sim.finish().await;
    walk.catch_up(&sim);

    let guild = exports.guild().map(|g| g.name.clone()).unwrap_or_default();
    let run = Run {
        files: opts.files.iter().map(|p| file_name(p)).collect(),
        guild,
        from: first.at,
        to: walk.last,
        days: ((walk.last - first.at).num_seconds() as f64 / 86_400.0).max(1.0),
        model: match &opts.models {
            Models::Offline { .. } => "offline".into(),
            Models::Assumed { .. } => "offline, assumed providers".into(),
            Models::Live => "live".into(),
            Models::Pinned { url, .. } => mask(url),
        },
        models_assumed: assumed,
        models_assumed_on_request: matches!(opts.models, Models::Assumed { .. }),
        roles_without_model: unserved.roles.iter().map(|r| r.as_str().into()).collect(),
        no_model_because: unserved.reasons,
        seed: opts.seed,
        post_rate: match opts.models {
            Models::Offline { post_rate } | Models::Assumed { post_rate } => Some(post_rate),
            _ => None,
        },
        eagerness,
        skipped: exports.skipped().values().sum(),
        bot_messages_left_out: sim.own_messages_left_out,
    };
    let prices = sim.app.settings.global().executive.prices.clone();
    let calls = offline_calls.map(|o| o.calls()).unwrap_or_default();
    let report = Report::gather(&sim, run, &walk.seen, &prices, &calls)?;
    let timeline = walk.timeline.explained(&sim);
    Ok(Outcome {
        report,
        timeline,
        skipped_ticks: sim.skipped_ticks,
        ticks_run: sim.ticks_run,
        upkeep_runs: sim.upkeep_runs,
    })
}

/// The settings and secrets the replay runs with, whether the roles' models
/// were assumed, and the offline stand-in if any. Offline, the stand-in
/// answers for the models this set-up has: a local Ollama counts only if
/// it answers now, as the bot looks at start. Only with no model for any
/// role, or when asked (`Assumed`), is a typical set-up assumed.
async fn prepare(opts: &Options) -> (Settings, Secrets, bool, Option<Arc<Offline>>) {
    let settings = effective_settings(opts);
    let mut secrets = replay_secrets(opts);
    let post_rate = match &opts.models {
        Models::Offline { post_rate } | Models::Assumed { post_rate } => *post_rate,
        Models::Live | Models::Pinned { .. } => return (settings, secrets, false, None),
    };
    let mut ollama = ollama_answers(&settings).await;
    let offer = Offer {
        secrets: secrets.clone(),
        ollama_reachable: ollama,
    };
    let nothing = Role::ALL
        .iter()
        .all(|r| resolve(*r, &settings, &offer).endpoints.is_empty());
    let assumed = nothing || matches!(opts.models, Models::Assumed { .. });
    if assumed {
        // What a typical set-up has: see the report's note.
        if secrets.anthropic_api_key.is_none() {
            secrets.anthropic_api_key = Some(Secret::new("offline-replay"));
        }
        ollama = true;
    }
    let stand_in = Offline::new(post_rate, opts.seed).with_ollama(ollama);
    (settings, secrets, assumed, Some(Arc::new(stand_in)))
}

/// The secrets the replay may send: a pinned endpoint gets its own key and
/// none of the providers' (whose keys are for their own APIs).
fn replay_secrets(opts: &Options) -> Secrets {
    let mut secrets = opts.secrets.clone();
    if let Models::Pinned { key, .. } = &opts.models {
        // The image generator falls back to OPENAI_API_KEY: it keeps the key it was configured with.
        secrets.image_api_key = secrets
            .image_api_key
            .take()
            .or(secrets.openai_api_key.take());
        secrets.anthropic_api_key = None;
        secrets.openrouter_api_key = None;
        secrets.openai_base_url = None;
        secrets.openai_api_key = key.clone();
    }
    secrets
}

/// The bot's settings as the replay runs them: its own data directory, the
/// eagerness asked for, every role on the pinned endpoint if one is.
fn effective_settings(opts: &Options) -> Settings {
    let mut settings = opts.settings.clone();
    settings.storage.data_dir = opts.data_dir.display().to_string();
    // A replay must not tell the live bot's processes that someone asked to be forgotten.
    settings.storage.shared_dir = String::new();
    if let Some(e) = opts.eagerness {
        settings.initiative.text.eagerness = e;
    }
    if let Models::Pinned { url, .. } = &opts.models {
        let roles = &mut settings.executive.roles;
        for role in [
            &mut roles.reply,
            &mut roles.ambient,
            &mut roles.reflex,
            &mut roles.extract,
        ] {
            role.provider = ProviderKind::Openai;
            role.base_url = url.clone();
            if role.model.is_empty() {
                role.model = default_model(ProviderKind::Ollama, true).into();
            }
        }
    }
    settings
}

/// What a replay with real models could spend at most, in words: each
/// role's daily budget for every day of the export, and for the reply role
/// (which has no budget by default) one full answer per message; and the
/// roles no model would serve. A live replay with no model at all is refused.
pub(crate) async fn worst_case(opts: &Options) -> anyhow::Result<String> {
    let settings = effective_settings(opts);
    let offer = Offer {
        secrets: replay_secrets(opts),
        ollama_reachable: opts.models == Models::Live && ollama_answers(&settings).await,
    };
    let unserved = Unserved::of(|role| resolve(role, &settings, &offer));
    if opts.models == Models::Live && unserved.is_everything() {
        anyhow::bail!(unserved.refusal());
    }
    let (mut messages, mut chars) = (0u64, 0u64);
    let (mut first, mut last) = (None, None);
    for m in read_exports(&opts.files, &opts.limits)? {
        let m = m?;
        messages += 1;
        chars += m.content.len() as u64;
        first.get_or_insert(m.at);
        last = Some(m.at);
    }
    let days = match (first, last) {
        (Some(a), Some(b)) => ((b - a).num_seconds() as f64 / 86_400.0).max(1.0).ceil() as u64,
        _ => 1,
    };
    let per_reply_in = 2_000
        + u64::from(settings.executive.reply_history_messages) * (chars / messages.max(1) / 4 + 10);
    let mut lines = Vec::new();
    let mut total = Some(0.0);
    for role in Role::ALL {
        let Some(ep) = resolve(role, &settings, &offer)
            .endpoints
            .into_iter()
            .next()
        else {
            continue;
        };
        let out_max = u64::from(role.settings(&settings).max_output_tokens);
        let cap = role.daily_budget(&settings);
        let (tokens_in, tokens_out) = if cap > 0 {
            (cap * days, 0)
        } else {
            (messages * per_reply_in, messages * out_max)
        };
        // A budget counts input and output alike: price it all as output, the dearer.
        let spend = if cap > 0 {
            cost(
                &settings.executive.prices,
                &ep.model,
                !ep.pay_per_token,
                0,
                tokens_in,
            )
        } else {
            cost(
                &settings.executive.prices,
                &ep.model,
                !ep.pay_per_token,
                tokens_in,
                tokens_out,
            )
        };
        total = total.zip(spend).map(|(a, b)| a + b);
        lines.push(format!(
            "  {role:<8} {:<28} up to {:>12} tokens  {}",
            format!("{} ({})", ep.model, ep.provider_name()),
            tokens_in + tokens_out,
            super::text::money(spend)
        ));
    }
    let roles: Vec<String> = unserved.roles.iter().map(|r| r.as_str().into()).collect();
    let gap = super::text::unserved(&roles, &unserved.reasons)
        .map_or_else(String::new, |note| format!("\n{note}"));
    Ok(format!(
        "A replay with real models sends {messages} messages over {days} day(s) to:\n{}\n\
         Worst case: {} (each role's daily budget every day; replies, which have no budget, \
         one full answer per message). Budgets stop it there, as they would the bot.{gap}",
        lines.join("\n"),
        super::text::money(total)
    ))
}

/// The roles no model serves, and why (each reason once).
#[derive(Default)]
struct Unserved {
    roles: Vec<Role>,
    reasons: Vec<String>,
}

impl Unserved {
    fn of(resolve: impl Fn(Role) -> Resolution) -> Self {
        let mut unserved = Self::default();
        for role in Role::ALL {
            let r = resolve(role);
            if !r.endpoints.is_empty() {
                continue;
            }
            unserved.roles.push(role);
            let reason = r.reason();
            if !unserved.reasons.contains(&reason) {
                unserved.reasons.push(reason);
            }
        }
        unserved
    }

    fn is_everything(&self) -> bool {
        self.roles.len() == Role::ALL.len()
    }

    /// Why a live replay with no model at all does not run, and what would.
    fn refusal(&self) -> String {
        let roles: Vec<&str> = self.roles.iter().map(|r| r.as_str()).collect();
        format!(
            "--model live: no role has a model ({}), so the replayed bot would answer nobody \
             and post nothing, and cost $0: {}. Configure a model (see Models in the README), \
             or replay with --model offline (a stand-in that measures routing, gates and cost \
             and sends nothing) or --model URL (one OpenAI-compatible endpoint)",
            roles.join(", "),
            self.reasons.join("; ")
        )
    }
}

/// Whether the exported channels are opened to the bot: only when the
/// settings name no channel for its posts or its replies.
fn opens_channels(s: &Settings) -> bool {
    let r = &s.permissions.replies;
    r.discovery_channel_ids.is_empty() && r.reply_channel_ids.is_empty()
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn names(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The walk through the export: the simulation fed, people's messages
/// counted, the timeline kept.
struct Walk {
    last: chrono::DateTime<chrono::Utc>,
    seen: Seen,
    timeline: Timeline,
    /// The last few people's messages per channel not yet in the timeline.
    recent: HashMap<u64, VecDeque<Line>>,
    acts_seen: usize,
    people_kept: usize,
}

impl Walk {
    fn new(start: chrono::DateTime<chrono::Utc>) -> Self {
        Self {
            last: start,
            seen: Seen::default(),
            timeline: Timeline::default(),
            recent: HashMap::new(),
            acts_seen: 0,
            people_kept: 0,
        }
    }

    async fn live(&mut self, sim: &mut Simulation, m: &ExportedMessage) -> anyhow::Result<()> {
        sim.pass_until(m.at).await?;
        self.catch_up(sim);
        let before = sim.own_messages_left_out;
        sim.live(m).await?;
        self.last = m.at;
        if sim.own_messages_left_out > before {
            return Ok(());
        }
        self.seen.message(m.channel.id, m.at);
        let line = Line::person(m);
        if self.people_kept < TIMELINE_PEOPLE {
            self.people_kept += 1;
            self.timeline.lines.push(line);
        } else {
            let recent = self.recent.entry(m.channel.id).or_default();
            if recent.len() == CONTEXT {
                recent.pop_front();
                self.timeline.left_out += 1;
            }
            recent.push_back(line);
        }
        self.catch_up(sim);
        Ok(())
    }

    /// The bot's new acts into the timeline, each after the people's
    /// messages just before it in its channel.
    fn catch_up(&mut self, sim: &Simulation) {
        let acts = sim.acts_since(self.acts_seen);
        for act in &acts {
            let line = Line::act(act, &sim.app.stores::<MessageStore>());
            if let Some(recent) = self.recent.get_mut(&line.channel_id) {
                self.timeline.lines.extend(recent.drain(..));
            }
            self.timeline.lines.push(line);
        }
        self.acts_seen += acts.len();
    }
}
