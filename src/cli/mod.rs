//! The command line: verbs, global flags, logging, and dispatch.
//!
//! Each verb family has its own file; each stays thin and calls into the
//! core. Exit codes: 0 success, 1 failure (bad settings, errors), 2 usage.
//! A verb whose standard output is closed by its reader (`ambient journal |
//! head`) stops there, quietly, with 0 (see `out`).

mod backup;
mod console;
mod dashboard;
mod discovery;
mod doctor;
mod garden;
mod guild;
mod journal;
mod memory;
pub(crate) mod out;
mod reflexes;
mod replay;
mod run;
pub mod runtime;
mod settings;
mod shards;
mod shared;
mod status;
mod stores;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::settings::{Loaded, load};

#[derive(Parser, Debug)]
#[command(
    name = "ambient",
    version,
    about = "A Discord companion that is present: it listens, remembers, and now and then speaks on its own."
)]
pub struct Cli {
    /// Settings file [default: settings.json if present, else built-in defaults]
    #[arg(long, global = true, value_name = "FILE")]
    pub settings: Option<PathBuf>,

    /// Log format on stderr (RUST_LOG sets the level)
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the bot on Discord (needs DISCORD_TOKEN)
    Run {
        /// Do not watch the settings file and the reflexes folder; reload only
        /// on SIGHUP or `/settings reload`
        #[arg(long)]
        no_watch: bool,
        /// Run only these gateway shards, e.g. 0-3 (overrides discord.shards)
        #[arg(long, value_name = "RANGE")]
        shards: Option<String>,
        /// How many shards the whole bot runs (overrides discord.totalShards)
        #[arg(long, value_name = "N")]
        total_shards: Option<u32>,
    },
    /// Run the whole bot against a simulated guild in this terminal
    Console {
        /// One JSON object per output line, for scripts
        #[arg(long)]
        json: bool,
        /// Channel to start in
        #[arg(long, default_value = "general")]
        channel: String,
        /// Your name in the simulated guild [default: $USER, else your login name, else "operator"]
        #[arg(long)]
        user: Option<String>,
    },
    /// Check the settings file, or print the defaults
    Settings {
        #[command(subcommand)]
        command: SettingsCommand,
    },
    /// What the bot decided, and why
    Journal {
        /// Time window: 30m, 24h, 7d, or a date (2026-01-31)
        #[arg(long, default_value = "24h")]
        since: String,
        /// Only these types, comma-separated (route, reply, gate, initiative_post, …)
        #[arg(long = "type", value_name = "TYPES")]
        kinds: Option<String>,
        /// Only this guild (id)
        #[arg(long)]
        guild: Option<u64>,
        /// Only the newest N entries
        #[arg(long)]
        limit: Option<usize>,
        /// One JSON object per line
        #[arg(long)]
        json: bool,
    },
    /// Every model call: tokens, latency, outcome
    Usage {
        /// Time window: 30m, 24h, 7d, or a date
        #[arg(long, default_value = "24h")]
        since: String,
        /// Only this role (reply, ambient, reflex, extract)
        #[arg(long)]
        role: Option<String>,
        /// One JSON object per line
        #[arg(long)]
        json: bool,
    },
    /// Which models serve which role, and what has been spent
    Status,
    /// Check this setup: token, intents, channel permissions, commands, models, feeds, disk, database, clock
    Doctor {
        /// One JSON document (checks with name, status, detail, fix)
        #[arg(long)]
        json: bool,
        /// Skip the one tiny tool call per model (each shown as !)
        #[arg(long)]
        no_model: bool,
    },
    /// Remember something (a decision, high importance, unless told otherwise)
    Remember {
        text: String,
        /// decision, fact, preference, error-resolution, task-update, session-summary, behavior-guidance, feedback
        #[arg(long = "type")]
        kind: Option<String>,
        /// high, medium or low [default: by type]
        #[arg(long)]
        importance: Option<String>,
        /// Server id or name [default: the only one the bot knows]
        #[arg(long)]
        guild: Option<String>,
        /// Remember it for this channel only (id)
        #[arg(long)]
        channel: Option<u64>,
    },
    /// Browse, search and manage memories (newest 20 without a verb)
    Memories {
        #[command(subcommand)]
        command: Option<MemoriesCommand>,
        /// Server id or name; before or after the verb (`memories --guild G search x`)
        #[arg(long, global = true)]
        guild: Option<String>,
        #[arg(long = "type")]
        kind: Option<String>,
        /// 7d, 24h, or a date (2026-01-31)
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        importance: Option<String>,
        /// Show all, not just the newest 20
        #[arg(long)]
        all: bool,
    },
    /// Feed sources: check one, or list them
    Discovery {
        #[command(subcommand)]
        command: DiscoveryCommand,
    },
    /// Reflex definitions: check them, see how they do, turn one off
    Reflexes {
        #[command(subcommand)]
        command: ReflexesCommand,
    },
    /// The garden's cycles: plans, transcripts, results
    Garden {
        #[command(subcommand)]
        command: GardenCommand,
    },
    /// Live a chat export through the whole bot: how chatty and how costly it would be there
    Replay(replay::ReplayArgs),
    /// A web page of what the bot did and why, what it costs and what it remembers
    Dashboard {
        /// Address and port to listen on [default: dashboard.bind, 127.0.0.1:8377]
        #[arg(long, value_name = "ADDR")]
        bind: Option<String>,
        /// Make a new access token (beyond loopback), replacing the old one
        #[arg(long)]
        new_token: bool,
    },
    /// One server's data out of this data directory and into another (a reshard, a backup, a move)
    Guild {
        #[command(subcommand)]
        command: GuildCommand,
    },
    /// Copy the database and state folders into one file, while the bot runs
    Backup {
        /// The backup file to make (never overwritten; not inside the data directory)
        file: PathBuf,
    },
    /// Replace the data directory with a backup (the bot must not be running)
    Restore {
        /// A file `ambient backup` made
        file: PathBuf,
    },
    /// Which shard each stored server is on, and which must move for a shard range
    Shards {
        #[command(subcommand)]
        command: ShardsCommand,
    },
    /// The PostgreSQL database the bot's processes share (storage.sharedUrl)
    Shared {
        #[command(subcommand)]
        command: SharedCommand,
    },
    /// A server's context stream: recent messages, decisions, observations, errors
    Context {
        /// Server id or name [default: the only one the bot knows]
        #[arg(long)]
        guild: Option<String>,
        /// Time window: 5m, 1h, 24h
        #[arg(long, default_value = "5m")]
        since: String,
        /// Only these types, comma-separated: user_message, observation, decision, error, delegation
        #[arg(long)]
        types: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum GuildCommand {
    /// Every table's rows and the state files of one server, as JSON on stdout
    Export {
        /// Server id or stored name
        guild: String,
    },
    /// A server from an export file, in one transaction (the bot must not be running here)
    Import {
        file: PathBuf,
        /// Delete the server's rows and files already here first (same transaction)
        #[arg(long)]
        replace: bool,
        /// The largest file read, in MB
        #[arg(long, default_value_t = 256, value_name = "MB")]
        max_mb: u64,
    },
    /// Delete one server's rows and state files (after it moved); prints what it would remove without --yes
    Remove {
        /// Server id or stored name
        guild: String,
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum SharedCommand {
    /// Apply the shared schema's missing migrations (the bot also does when it starts)
    Migrate,
    /// Reach the shared database and say its schema version and the ledger's size
    Check,
    /// Copy a storage.sharedDir's people.db into the shared database's empty ledger
    Import {
        /// The people.db file
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum ShardsCommand {
    /// Each stored server's shard under --total, and with --shards which must move out
    Plan {
        /// How many shards the whole bot would run
        #[arg(long, value_name = "N")]
        total: u32,
        /// The range this data directory's process would run, e.g. 0-3
        #[arg(long, value_name = "RANGE")]
        shards: Option<String>,
        /// One JSON object
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum GardenCommand {
    /// The newest cycles (status, summary, plan); --cycle ID adds its whole transcript
    Log {
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long)]
        cycle: Option<i64>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ReflexesCommand {
    /// Parse every reflex file and report problems with file and line [default: reflexes.dir]
    Check { dir: Option<PathBuf> },
    /// Fired, succeeded, failed, passed, escalated and mean latency per reflex
    Stats,
    /// Stop a reflex everywhere (takes effect when the bot next starts)
    Disable {
        name: String,
        #[arg(long, default_value = "disabled by the operator")]
        reason: String,
    },
    /// Let a disabled reflex act again
    Enable { name: String },
}

#[derive(Subcommand, Debug)]
pub enum MemoriesCommand {
    /// Full-text search, recent and important first
    Search {
        query: String,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Counts by type and importance, date range, disk use
    Stats,
    /// Delete one memory (asks first)
    Delete {
        id: String,
        #[arg(long)]
        force: bool,
    },
    /// Change a memory's text (in $EDITOR without --content)
    Edit {
        id: String,
        #[arg(long)]
        content: Option<String>,
    },
    /// Every memory as JSON on stdout (one server's with --guild)
    Export {
        #[arg(long)]
        pretty: bool,
    },
    /// Memories from an export file (existing ids are skipped; a bad file changes nothing)
    Import { file: PathBuf },
}

impl MemoriesCommand {
    fn verb(&self) -> &'static str {
        match self {
            Self::Search { .. } => "search",
            Self::Stats => "stats",
            Self::Delete { .. } => "delete",
            Self::Edit { .. } => "edit",
            Self::Export { .. } => "export",
            Self::Import { .. } => "import",
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum DiscoveryCommand {
    /// Fetch one source once and print its items (to check a feed before adding it)
    Fetch {
        /// A feed URL, or a subreddit / YouTube channel id / X handle with --type
        url: String,
        /// rss, atom, reddit, youtube, x or hn [default: rss]
        #[arg(long = "type")]
        kind: Option<String>,
    },
    /// The sources of every server, with their last fetch, status and item counts
    List,
}

#[derive(Subcommand, Debug)]
pub enum SettingsCommand {
    /// Validate a settings file and list every problem [default: the --settings file or settings.json]
    Check { file: Option<PathBuf> },
    /// Print every setting with its default (the content of settings.example.json)
    Example,
}

pub fn init_logging(cli: &Cli) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::prelude::*;
    // The bot itself logs at info; one-shot verbs and the console stay quiet
    // unless asked, so their output is not buried in logs.
    let default = match cli.command {
        Command::Run { .. } => "info",
        // The replayed bot's own warnings (a garden cycle without a next wake,
        // a budget reached) are part of what the report counts, not news.
        Command::Replay(_) => "error",
        _ => "warn",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // Colour codes only for a person at a terminal; in a file or a pipe they
    // are noise that breaks grep.
    // A log line that cannot be written (stderr closed: a pipe's reader gone)
    // is lost; reporting that on the same stderr would panic whichever task
    // logged — the attention spine's dispatcher included, which stalls the bot.
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .log_internal_errors(false);
    let log = match cli.log_format {
        LogFormat::Text => log.boxed(),
        LogFormat::Json => log.json().boxed(),
    };
    // `RUST_LOG` filters the log only: Discord refusing a shard is heard
    // from serenity's own log events whatever it says (`discord::refusals`).
    // Harmless: it fails only if a subscriber is already set (tests), which then logs.
    let _ = tracing_subscriber::registry()
        .with(log.with_filter(filter))
        .with(crate::discord::refusals::layer())
        .try_init();
}

/// Runs the verb `cli` names. One whose reader went away has done what was
/// asked of it: it ends with success and says nothing.
pub async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match verb(cli).await {
        Err(e) if out::closed(&e) => Ok(ExitCode::SUCCESS),
        ran => ran,
    }
}

// Whole on purpose: one flat arm per verb, each handing its flags to the
// verb's module; split, the table of what `ambient` can do would be in pieces.
async fn verb(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run {
            no_watch,
            shards,
            total_shards,
        } => {
            let shards = run::ShardFlags {
                shards,
                total_shards,
            };
            run::run(cli.settings.as_deref(), no_watch, shards).await
        }
        Command::Console {
            json,
            channel,
            user,
        } => console::console(cli.settings.as_deref(), json, channel, user).await,
        Command::Settings { command } => settings_verb(cli.settings.as_deref(), command),
        Command::Journal {
            since,
            kinds,
            guild,
            limit,
            json,
        } => journal::journal(
            cli.settings.as_deref(),
            &since,
            kinds.as_deref(),
            guild,
            limit,
            json,
        ),
        Command::Usage { since, role, json } => {
            usage::usage(cli.settings.as_deref(), &since, role.as_deref(), json)
        }
        Command::Status => status::status(cli.settings.as_deref()).await,
        Command::Doctor { json, no_model } => {
            doctor::doctor(cli.settings.as_deref(), json, no_model).await
        }
        Command::Remember {
            text,
            kind,
            importance,
            guild,
            channel,
        } => {
            memory::remember(
                cli.settings.as_deref(),
                &text,
                kind.as_deref(),
                importance.as_deref(),
                guild.as_deref(),
                channel,
            )
            .await
        }
        Command::Memories {
            command,
            kind,
            since,
            importance,
            all,
            guild,
        } => {
            let list = memory::ListArgs {
                kind: kind.as_deref(),
                since: since.as_deref(),
                importance: importance.as_deref(),
                all,
                guild: guild.as_deref(),
            };
            memories(cli.settings.as_deref(), command, list).await
        }
        Command::Discovery { command } => match command {
            DiscoveryCommand::Fetch { url, kind } => {
                discovery::fetch(cli.settings.as_deref(), &url, kind.as_deref()).await
            }
            DiscoveryCommand::List => discovery::list(cli.settings.as_deref()),
        },
        Command::Garden { command } => match command {
            GardenCommand::Log { limit, cycle } => {
                garden::log(cli.settings.as_deref(), limit, cycle)
            }
        },
        Command::Context {
            guild,
            since,
            types,
        } => garden::context(
            cli.settings.as_deref(),
            guild.as_deref(),
            &since,
            types.as_deref(),
        ),
        Command::Replay(args) => replay::run(cli.settings.as_deref(), args).await,
        Command::Dashboard { bind, new_token } => {
            dashboard::dashboard(cli.settings.as_deref(), bind.as_deref(), new_token).await
        }
        Command::Reflexes { command } => reflexes_verb(cli.settings.as_deref(), command),
        Command::Guild { command } => guild_verb(cli.settings.as_deref(), command),
        Command::Backup { file } => backup::backup(cli.settings.as_deref(), &file),
        Command::Restore { file } => backup::restore(cli.settings.as_deref(), &file),
        Command::Shards {
            command:
                ShardsCommand::Plan {
                    total,
                    shards,
                    json,
                },
        } => shards::plan(cli.settings.as_deref(), total, shards.as_deref(), json),
        Command::Shared { command } => match command {
            SharedCommand::Migrate => shared::migrate(cli.settings.as_deref()).await,
            SharedCommand::Check => shared::check(cli.settings.as_deref()).await,
            SharedCommand::Import { file } => shared::import(cli.settings.as_deref(), &file),
        },
    }
}

/// `ambient settings check | example`.
fn settings_verb(
    s: Option<&std::path::Path>,
    command: SettingsCommand,
) -> anyhow::Result<ExitCode> {
    match command {
        SettingsCommand::Check { file } => settings::check(file.as_deref().or(s)),
        SettingsCommand::Example => {
            out::outln!("{}", crate::settings::example_json().trim_end_matches('\n'))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `ambient memories [VERB]`: the list with its filters, or one verb (which
/// takes none of the list's filters, and `--guild` only where it applies).
async fn memories(
    s: Option<&std::path::Path>,
    command: Option<MemoriesCommand>,
    list: memory::ListArgs<'_>,
) -> anyhow::Result<ExitCode> {
    // The list's filters with a verb would be ignored; say so instead.
    // (clap's args_conflicts_with_subcommands would also refuse the
    // global `--guild` before the verb.)
    if let Some(verb) = &command
        && (list.kind.is_some() || list.since.is_some() || list.importance.is_some() || list.all)
    {
        anyhow::bail!(
            "--type, --since, --importance and --all filter the list \
             (`ambient memories` without a verb), not `ambient memories {}`",
            verb.verb()
        );
    }
    let guild = list.guild;
    match command {
        None => memory::list(s, list).await,
        Some(MemoriesCommand::Search { query, limit }) => {
            memory::search(s, &query, limit, guild).await
        }
        Some(MemoriesCommand::Export { pretty }) => memory::export(s, pretty, guild).await,
        // `--guild` is global to the family, so clap accepts it here
        // too; these verbs act on ids or on everything, and saying so
        // beats ignoring the flag.
        Some(other) if guild.is_some() => Err(anyhow::anyhow!(
            "--guild does not apply to `ambient memories {}` (it works with ids or every server); \
             it applies to the list, `search` and `export`",
            other.verb()
        )),
        Some(MemoriesCommand::Stats) => memory::stats(s).await,
        Some(MemoriesCommand::Delete { id, force }) => memory::delete(s, &id, force).await,
        Some(MemoriesCommand::Edit { id, content }) => {
            memory::edit(s, &id, content.as_deref()).await
        }
        Some(MemoriesCommand::Import { file }) => memory::import(s, &file).await,
    }
}

/// `ambient guild export | import | remove`.
fn guild_verb(s: Option<&std::path::Path>, command: GuildCommand) -> anyhow::Result<ExitCode> {
    match command {
        GuildCommand::Export { guild } => guild::export(s, &guild),
        GuildCommand::Import {
            file,
            replace,
            max_mb,
        } => guild::import(s, &file, replace, max_mb),
        GuildCommand::Remove { guild, yes } => guild::remove(s, &guild, yes),
    }
}

/// `ambient reflexes check | stats | disable | enable`.
fn reflexes_verb(
    s: Option<&std::path::Path>,
    command: ReflexesCommand,
) -> anyhow::Result<ExitCode> {
    match command {
        ReflexesCommand::Check { dir } => reflexes::check(s, dir.as_deref()),
        ReflexesCommand::Stats => reflexes::stats(s),
        ReflexesCommand::Disable { name, reason } => {
            reflexes::set_disabled(s, &name, true, &reason)
        }
        ReflexesCommand::Enable { name } => reflexes::set_disabled(s, &name, false, ""),
    }
}

/// Loads settings for a verb that runs the bot: every problem is printed and is fatal.
fn load_valid(path: Option<&std::path::Path>) -> anyhow::Result<Result<Loaded, ExitCode>> {
    Ok(refuse_problems(load_once(path)?))
}

/// Settings the bot can run with, or its problems said on stderr and a failing exit.
fn refuse_problems(loaded: Loaded) -> Result<Loaded, ExitCode> {
    warn_about_ignored(&loaded);
    if loaded.problems.is_empty() {
        return Ok(loaded);
    }
    eprintln!(
        "{}: {} problem(s) in the settings:",
        loaded.source,
        loaded.problems.len()
    );
    for p in loaded.problems.iter().take(settings::MAX_SHOWN) {
        eprintln!("  {p}");
    }
    if loaded.problems.len() > settings::MAX_SHOWN {
        eprintln!(
            "  … and {} more",
            loaded.problems.len() - settings::MAX_SHOWN
        );
    }
    eprintln!("Fix them (ambient settings check lists them again) and start again.");
    Err(ExitCode::FAILURE)
}

/// Loads settings for a read-only verb: problems are warnings.
fn load_lenient(path: Option<&std::path::Path>) -> anyhow::Result<Loaded> {
    let loaded = load_once(path)?;
    for p in &loaded.problems {
        tracing::warn!("{}: {p}", loaded.source);
    }
    Ok(loaded)
}

/// Loads settings with the error said once: a `LoadError`'s message already
/// contains its cause, and `main` prints an error's whole chain.
fn load_once(path: Option<&std::path::Path>) -> anyhow::Result<Loaded> {
    load(path).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Settings that are valid but do nothing as written, for the verbs that run the bot.
fn warn_about_ignored(loaded: &Loaded) {
    for w in crate::settings::validate::warnings(&loaded.settings) {
        eprintln!("{}: warning: {w}", loaded.source);
    }
}
