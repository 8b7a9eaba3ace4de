//! `ambient replay`: the thin front end over `replay::run`. Reads the
//! flags, asks before a live replay spends money, runs one replay (or one
//! per eagerness, side by side), and prints the report as text or JSON,
//! and the HTML page if asked.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use crate::replay::export::ExportLimits;
use crate::replay::keep::refuse_unless_empty;
use crate::replay::run::{Models, Options, Outcome, Progress, replay};
use crate::replay::text::{self, SweepRow};
use crate::settings::diff::mask;
use crate::settings::{Secret, Secrets};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// DiscordChatExporter JSON exports (one per channel of one server) or JSONL files ({ts, channel, author, content} per line)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where answers come from: offline (placeholders; nothing is sent anywhere), live (the configured providers), or an OpenAI-compatible URL (e.g. http://127.0.0.1:11434/v1)
    #[arg(long, default_value = "offline", value_name = "offline|live|URL")]
    pub model: String,
    /// Offline: the share (0–1) of initiative and chime-in decisions that post
    #[arg(long, default_value_t = 0.3)]
    pub post_rate: f64,
    /// Seeds the bot's dice and the offline stand-in's: the same seed gives the same report
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Replay once per eagerness (0–100, comma-separated) and print one table (--sweep eagerness=…)
    #[arg(long, value_delimiter = ',', value_name = "N,N,…")]
    pub eagerness: Vec<u32>,
    /// Replay once per value of one setting and print one table: eagerness=0,25,50, maxPostsPerDay=2,4,6, or unsolicitedReplyThreshold=0.4,0.6,0.8 (the chime-in bar)
    #[arg(long, value_name = "SETTING=V,V,…")]
    pub sweep: Option<String>,
    /// Offline: answer for a typical set-up (an Anthropic key for replies, a local Ollama for the rest) whatever this one has — a what-if, labelled as such
    #[arg(long)]
    pub assume_providers: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the report as one self-contained HTML page with the timeline
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Keep the replay's data here to inspect it (ambient journal --settings …): an empty or new directory [default: a temporary one]
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// The bot's user id in the export, if it was there [default: recognised by its name]
    #[arg(long, value_name = "ID")]
    pub bot_id: Option<u64>,
    /// Live or URL: start without asking about the worst-case spend
    #[arg(long)]
    pub yes: bool,
    /// URL only: the environment variable holding the key for that endpoint [default: no key is sent]
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

pub(crate) async fn run(settings: Option<&Path>, args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let models = models(&args)?;
    let loaded = match super::load_valid(settings)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    let sweep = Sweep::of(&args)?;
    // Before anything is written: only an empty or new directory is a replay's.
    if let Some(dir) = &args.keep {
        refuse_unless_empty(dir).map_err(|e| anyhow::anyhow!("--keep {e}"))?;
    }
    let secrets = Secrets::from_env();
    let temp = tempfile::tempdir().context("cannot make a temporary data directory")?;
    let base = args
        .keep
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    let runs: Vec<Option<&str>> = match &sweep {
        None => vec![None],
        Some(sweep) => sweep.values.iter().map(|v| Some(v.as_str())).collect(),
    };
    // The wall clock, read here at the edge: the replay runs on the export's
    // time, and only refuses messages later than a day from now.
    let limits = ExportLimits::at(chrono::Utc::now());
    let mut tasks = Vec::new();
    let mut asked = matches!(models, Models::Offline { .. } | Models::Assumed { .. });
    for value in &runs {
        let mut opts = Options {
            files: args.files.clone(),
            settings: loaded.settings.clone(),
            secrets: secrets.clone(),
            data_dir: base.clone(),
            seed: args.seed,
            models: models.clone(),
            eagerness: None,
            bot: args.bot_id,
            limits: limits.clone(),
        };
        if let (Some(sweep), Some(value)) = (&sweep, value) {
            sweep.knob.set(&mut opts, value);
            if runs.len() > 1 {
                opts.data_dir = base.join(format!("{}-{value}", sweep.name));
            }
        }
        if !asked {
            asked = true;
            if !confirmed(&args, &opts).await? {
                eprintln!("Nothing was replayed.");
                return Ok(ExitCode::FAILURE);
            }
        }
        // Only the first run reports progress: side by side, they move together.
        let show = tasks.is_empty() && std::io::stderr().is_terminal();
        tasks.push(tokio::spawn(async move {
            replay(opts, &|n| {
                if show {
                    progress(n)
                }
            })
            .await
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.context("a replay stopped")??);
    }
    if std::io::stderr().is_terminal() {
        eprintln!();
    }
    print(&args, sweep.as_ref(), &outcomes)?;
    if let Some(dir) = &args.keep {
        eprintln!(
            "The replay's data is in {} (read it with ambient journal or ambient usage and a settings file naming it as storage.dataDir).",
            dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn models(args: &ReplayArgs) -> anyhow::Result<Models> {
    if !(0.0..=1.0).contains(&args.post_rate) {
        anyhow::bail!(
            "--post-rate {}: a share between 0 and 1 (0.3 posts three decisions in ten)",
            args.post_rate
        );
    }
    if args.assume_providers && args.model != "offline" {
        anyhow::bail!(
            "--assume-providers goes with --model offline: live and URL replays send to real models"
        );
    }
    let models = match args.model.as_str() {
        "offline" if args.assume_providers => Models::Assumed {
            post_rate: args.post_rate,
        },
        "offline" => Models::Offline {
            post_rate: args.post_rate,
        },
        "live" => Models::Live,
        url if url.starts_with("http://") || url.starts_with("https://") => Models::Pinned {
            url: url.trim_end_matches('/').to_string(),
            key: None,
        },
        other => anyhow::bail!(
            "--model {:?}: offline, live, or the URL of an OpenAI-compatible endpoint (http://…/v1)",
            mask(other)
        ),
    };
    let Some(name) = &args.api_key_env else {
        return Ok(models);
    };
    let Models::Pinned { url, .. } = models else {
        anyhow::bail!(
            "--api-key-env goes with --model URL: live sends the environment's keys \
             (ANTHROPIC_API_KEY …) only to their own providers, and offline sends nothing"
        );
    };
    let key = std::env::var(name)
        .ok()
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty());
    let Some(key) = key else {
        anyhow::bail!(
            "--api-key-env {name}: the environment has no {name}; set it to the key for {}, \
             or leave --api-key-env out to send no key",
            mask(&url)
        );
    };
    Ok(Models::Pinned {
        url,
        key: Some(Secret::new(key)),
    })
}

/// The setting a sweep changes from one replay to the next.
#[derive(Clone, Copy, Debug)]
enum Knob {
    Eagerness,
    MaxPostsPerDay,
    ChimeInBar,
}

impl Knob {
    const NAMES: [(&'static str, Knob); 3] = [
        ("eagerness", Knob::Eagerness),
        ("maxPostsPerDay", Knob::MaxPostsPerDay),
        ("unsolicitedReplyThreshold", Knob::ChimeInBar),
    ];

    /// Whether `value` is one this setting takes, and if not, what would be.
    fn check(self, value: &str) -> Result<(), String> {
        match self {
            Knob::Eagerness => match value.parse::<u32>() {
                Ok(n) if n <= 100 => Ok(()),
                _ => Err("an eagerness is a percent, 0 to 100".into()),
            },
            Knob::MaxPostsPerDay => match value.parse::<u32>() {
                Ok(_) => Ok(()),
                Err(_) => Err("a number of posts, 0 or more".into()),
            },
            Knob::ChimeInBar => match value.parse::<f64>() {
                Ok(v) if (0.0..=1.0).contains(&v) => Ok(()),
                _ => Err("a salience between 0 and 1, like 0.6".into()),
            },
        }
    }

    /// Sets a value `check` accepted.
    fn set(self, opts: &mut Options, value: &str) {
        match self {
            Knob::Eagerness => opts.eagerness = value.parse().ok(),
            Knob::MaxPostsPerDay => {
                if let Ok(n) = value.parse() {
                    opts.settings.initiative.text.max_posts_per_day = n;
                }
            }
            Knob::ChimeInBar => {
                if let Ok(v) = value.parse() {
                    opts.settings.attention.unsolicited_reply_threshold = v;
                }
            }
        }
    }
}

/// One setting replayed at several values, side by side.
struct Sweep {
    name: &'static str,
    knob: Knob,
    values: Vec<String>,
}

impl Sweep {
    /// The sweep asked for (`--sweep NAME=V,V` or `--eagerness V,V`), checked.
    fn of(args: &ReplayArgs) -> anyhow::Result<Option<Sweep>> {
        let asked = match (&args.sweep, args.eagerness.is_empty()) {
            (Some(_), false) => {
                anyhow::bail!(
                    "--eagerness and --sweep: one sweep at a time (--sweep eagerness=… is --eagerness)"
                )
            }
            (Some(s), true) => s.clone(),
            (None, false) => {
                let values: Vec<String> = args.eagerness.iter().map(u32::to_string).collect();
                format!("eagerness={}", values.join(","))
            }
            (None, true) => return Ok(None),
        };
        let names = || {
            Knob::NAMES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some((name, values)) = asked.split_once('=') else {
            anyhow::bail!(
                "--sweep {asked:?}: SETTING=V,V,… with a setting of {}, e.g. maxPostsPerDay=2,4,6",
                names()
            );
        };
        let Some((name, knob)) = Knob::NAMES.iter().find(|(n, _)| *n == name.trim()) else {
            anyhow::bail!(
                "--sweep {name:?}: not a setting a sweep can change; one of {}",
                names()
            );
        };
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        for v in &values {
            if let Err(valid) = knob.check(v) {
                anyhow::bail!("--sweep {name}={v}: {valid}");
            }
        }
        Ok(Some(Sweep {
            name,
            knob: *knob,
            values,
        }))
    }
}

fn print(args: &ReplayArgs, sweep: Option<&Sweep>, outcomes: &[Outcome]) -> anyhow::Result<()> {
    if let Some(path) = &args.html {
        let page = crate::replay::html::page(&outcomes[0].report, &outcomes[0].timeline);
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("Wrote {}.", path.display());
    }
    // Through `out::stream`: a reader gone (`| head`) ends the verb quietly.
    super::out::stream(|out| -> std::io::Result<()> {
        match (args.format, sweep) {
            (Format::Json, None) => writeln!(out, "{}", outcomes[0].report.json()),
            (Format::Json, Some(_)) => {
                let reports: Vec<_> = outcomes.iter().map(|o| &o.report).collect();
                let json = serde_json::to_string_pretty(&reports)?;
                writeln!(out, "{json}")
            }
            (Format::Text, None) => write!(out, "{}", text::report(&outcomes[0].report)),
            (Format::Text, Some(sweep)) => {
                let rows: Vec<SweepRow<'_>> = sweep
                    .values
                    .iter()
                    .zip(outcomes)
                    .map(|(value, o)| SweepRow {
                        value: value.clone(),
                        report: &o.report,
                    })
                    .collect();
                write!(out, "{}", text::sweep(sweep.name, &rows))
            }
        }
    })
}

/// A bar by the share of the files read, with the messages replayed so far.
fn progress(p: Progress) {
    const WIDTH: usize = 30;
    let done = ((p.fraction * WIDTH as f64).round() as usize).min(WIDTH);
    eprint!(
        "\r[{}{}] {:>3.0}%  {} messages",
        "#".repeat(done),
        "-".repeat(WIDTH - done),
        p.fraction * 100.0,
        p.messages
    );
}

/// A live replay sends the export to the configured models: say what that
/// could cost at most, and go on only when the person says so.
async fn confirmed(args: &ReplayArgs, opts: &Options) -> anyhow::Result<bool> {
    let worst = crate::replay::run::worst_case(opts).await?;
    eprintln!("{worst}");
    if args.yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        eprintln!("Add --yes to replay with real models without this question.");
        return Ok(false);
    }
    eprint!("Go on? [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
