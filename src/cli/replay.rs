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
    /// Replay once per eagerness (0–100, comma-separated) and print one table
    #[arg(long, value_delimiter = ',', value_name = "N,N,…")]
    pub eagerness: Vec<u32>,
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

pub async fn run(settings: Option<&Path>, args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let models = models(&args)?;
    let loaded = match super::load_valid(settings)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    if let Some(bad) = args.eagerness.iter().find(|e| **e > 100) {
        anyhow::bail!("--eagerness {bad}: an eagerness is a percent, 0 to 100");
    }
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
    let runs: Vec<Option<u32>> = if args.eagerness.is_empty() {
        vec![None]
    } else {
        args.eagerness.iter().copied().map(Some).collect()
    };
    // The wall clock, read here at the edge: the replay runs on the export's
    // time, and only refuses messages later than a day from now.
    let limits = ExportLimits::at(chrono::Utc::now());
    let mut tasks = Vec::new();
    let mut asked = matches!(models, Models::Offline { .. });
    for eagerness in &runs {
        let opts = Options {
            files: args.files.clone(),
            settings: loaded.settings.clone(),
            secrets: secrets.clone(),
            data_dir: match eagerness {
                Some(e) if runs.len() > 1 => base.join(format!("eagerness-{e}")),
                _ => base.clone(),
            },
            seed: args.seed,
            models: models.clone(),
            eagerness: *eagerness,
            bot: args.bot_id,
            limits: limits.clone(),
        };
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
    print(&args, &runs, &outcomes)?;
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
    let models = match args.model.as_str() {
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

fn print(args: &ReplayArgs, runs: &[Option<u32>], outcomes: &[Outcome]) -> anyhow::Result<()> {
    if let Some(path) = &args.html {
        let page = crate::replay::html::page(&outcomes[0].report, &outcomes[0].timeline);
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("Wrote {}.", path.display());
    }
    // Through `out::stream`: a reader gone (`| head`) ends the verb quietly.
    super::out::stream(|out| -> std::io::Result<()> {
        match (args.format, runs.len()) {
            (Format::Json, 1) => writeln!(out, "{}", outcomes[0].report.json()),
            (Format::Json, _) => {
                let reports: Vec<_> = outcomes.iter().map(|o| &o.report).collect();
                let json = serde_json::to_string_pretty(&reports)?;
                writeln!(out, "{json}")
            }
            (Format::Text, 1) => write!(out, "{}", text::report(&outcomes[0].report)),
            (Format::Text, _) => {
                let rows: Vec<SweepRow<'_>> = runs
                    .iter()
                    .zip(outcomes)
                    .map(|(e, o)| SweepRow {
                        eagerness: e.unwrap_or(o.report.run.eagerness),
                        report: &o.report,
                    })
                    .collect();
                write!(out, "{}", text::sweep(&rows))
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
