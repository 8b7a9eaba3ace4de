//! `ambient remember` and `ambient memories …`: the seed's memory verbs for
//! the operator, over the same store the bot uses.

use std::io::{BufRead, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};

use super::out::{OutputError, outln};
use crate::clock::{Chance, SystemClock};
use crate::executive::{Executive, Prompts};
use crate::ids::{ChannelId, GuildId};
use crate::journal::Journal;
use crate::memory::search::Reader;
use crate::memory::{Memory, manual, portable};
use crate::settings::{Secrets, SettingsService};
use crate::store::Store;
use crate::store::memory::FactFilter;
use crate::vocab::fact::{Fact, FactKind, Importance, Scope};

pub(crate) struct Ctx {
    pub memory: Arc<Memory>,
    pub store: Store,
    pub data_dir: PathBuf,
}

async fn open(settings: Option<&Path>) -> anyhow::Result<Ctx> {
    let loaded = super::load_lenient(settings)?;
    let data_dir = PathBuf::from(&loaded.settings.storage.data_dir);
    let prompts = Prompts::load(Path::new(&loaded.settings.executive.prompts_dir))?;
    let store = Store::open(&data_dir)
        .with_context(|| format!("cannot open the store in {}", data_dir.display()))?;
    let clock = Arc::new(SystemClock);
    let service = Arc::new(SettingsService::new(
        loaded.settings,
        store.overrides(),
        clock.clone(),
    ));
    let journal = Journal::new(store.journal(), clock.clone());
    let exec = Arc::new(
        Executive::new(crate::executive::Services {
            settings: service.clone(),
            secrets: Secrets::from_env(),
            store: (&store).into(),
            journal: journal.clone(),
            clock: clock.clone(),
            chance: Chance::from_entropy(),
            prompts,
            stand_in: None,
        })
        .await,
    );
    let memory = Memory::new((&store).into(), service, journal, clock, exec);
    Ok(Ctx {
        memory,
        store,
        data_dir,
    })
}

/// The guild `--guild` names (id or name), or the only one the bot knows.
pub(super) fn guild(store: &Store, given: Option<&str>) -> anyhow::Result<GuildId> {
    let known = store.messages().known_guilds()?;
    let list = || {
        known
            .iter()
            .map(|(id, n)| format!("{n} ({id})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match given {
        Some(g) => known
            .iter()
            .find(|(id, name)| id.to_string() == g || name.eq_ignore_ascii_case(g))
            .map(|(id, _)| *id)
            .or_else(|| g.parse().ok().map(GuildId))
            .ok_or_else(|| {
                anyhow!(
                    "--guild {g:?} is not a server the bot knows; known: {}",
                    list()
                )
            }),
        None => match known.as_slice() {
            [(id, _)] => Ok(*id),
            [] => bail!("the bot has not seen any server yet; pass --guild <id>"),
            _ => bail!("--guild is needed: the bot knows {}", list()),
        },
    }
}

fn line(f: &Fact, store: &Store) -> String {
    let place = match (f.scope.guild, f.scope.channel, f.scope.user) {
        (_, Some(c), _) => format!(
            "#{}",
            store
                .messages()
                .channel_name(c)
                .ok()
                .flatten()
                .unwrap_or_else(|| c.to_string())
        ),
        (_, _, Some(u)) => format!("user {u}"),
        (Some(g), _, _) => store
            .messages()
            .guild_name(g)
            .ok()
            .flatten()
            .unwrap_or_else(|| g.to_string()),
        (None, None, None) => "-".into(),
    };
    let state = if f.superseded_by.is_some() {
        " (superseded)"
    } else if f.archived_at.is_some() {
        " (archived)"
    } else {
        ""
    };
    format!(
        "{}  {}  {:<17} {:<6} {:<14} {}{state}",
        f.short_id(),
        f.updated_at.format("%Y-%m-%d"),
        f.kind.as_str(),
        f.importance.as_str(),
        place,
        f.content
    )
}

pub(crate) async fn remember(
    settings: Option<&Path>,
    text: &str,
    kind: Option<&str>,
    importance: Option<&str>,
    guild_arg: Option<&str>,
    channel: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let ctx = open(settings).await?;
    let kind = kind
        .map(FactKind::parse)
        .transpose()
        .map_err(|e| anyhow!("--type: {e}"))?
        .unwrap_or(FactKind::Decision);
    let importance = importance
        .map(Importance::parse)
        .transpose()
        .map_err(|e| anyhow!("--importance: {e}"))?;
    let g = guild(&ctx.store, guild_arg)?;
    let scope = match channel {
        Some(c) => Scope::channel(Some(g), ChannelId(c)),
        None => Scope::guild(g),
    };
    let fact = manual(scope, kind, importance, text, None, ctx.memory.now());
    let stored = ctx.memory.remember(fact, None).map_err(|e| anyhow!(e))?;
    outln!("{}", stored.describe())?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) struct ListArgs<'a> {
    pub kind: Option<&'a str>,
    pub since: Option<&'a str>,
    pub importance: Option<&'a str>,
    pub all: bool,
    pub guild: Option<&'a str>,
}

pub(crate) async fn list(settings: Option<&Path>, a: ListArgs<'_>) -> anyhow::Result<ExitCode> {
    let ctx = open(settings).await?;
    let filter = FactFilter {
        guild: a
            .guild
            .map(|g| guild(&ctx.store, Some(g)))
            .transpose()?
            .map(Some),
        kind: a
            .kind
            .map(FactKind::parse)
            .transpose()
            .map_err(|e| anyhow!("--type: {e}"))?,
        importance: a
            .importance
            .map(Importance::parse)
            .transpose()
            .map_err(|e| anyhow!("--importance: {e}"))?,
        since: a
            .since
            .map(|s| crate::when::parse_since(s, ctx.memory.now()))
            .transpose()
            .map_err(|e| anyhow!("--since: {e}"))?,
        limit: (!a.all).then_some(20),
        ..Default::default()
    };
    let facts = ctx.store.memory().list_facts(&filter)?;
    if facts.is_empty() {
        outln!("No memories match.")?;
    }
    for f in &facts {
        outln!("{}", line(f, &ctx.store))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn search(
    settings: Option<&Path>,
    query: &str,
    limit: usize,
    guild_arg: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let ctx = open(settings).await?;
    let guilds: Vec<GuildId> = match guild_arg {
        Some(g) => vec![guild(&ctx.store, Some(g))?],
        None => ctx
            .store
            .memory()
            .fact_guilds()?
            .into_iter()
            .flatten()
            .collect(),
    };
    // The operator may search every server; results keep their server.
    let mut found: Vec<_> = guilds
        .into_iter()
        .flat_map(|g| ctx.memory.search(Reader::Guild(g), query, limit))
        .collect();
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    found.truncate(limit);
    if found.is_empty() {
        outln!("Nothing remembered about {query:?}.")?;
    }
    for s in &found {
        outln!("{:>7.3}  {}", s.score, line(&s.fact, &ctx.store))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn stats(settings: Option<&Path>) -> anyhow::Result<ExitCode> {
    let ctx = open(settings).await?;
    let (counts, range, inactive) = ctx.store.memory().fact_stats()?;
    let total: u64 = counts.iter().map(|(_, _, n)| n).sum();
    outln!("{total} active memories ({inactive} superseded or archived)")?;
    for (kind, importance, n) in &counts {
        outln!("  {kind:<18} {importance:<6} {n}")?;
    }
    if let Some((first, last)) = range {
        outln!(
            "from {} to {}",
            first.format("%Y-%m-%d"),
            last.format("%Y-%m-%d")
        )?;
    }
    let db = ctx.data_dir.join(crate::store::DB_FILE);
    let size: u64 = ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    outln!(
        "database on disk: {:.1} MB ({})",
        size as f64 / 1_000_000.0,
        db.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

fn one(store: &Store, prefix: &str) -> anyhow::Result<Fact> {
    let found = store.memory().facts_by_prefix(prefix)?;
    match found.as_slice() {
        [] => bail!("no memory with an id starting {prefix:?}"),
        [f] => Ok(store.memory().fact(&f.id)?.unwrap_or_else(|| f.clone())),
        many => bail!(
            "{} memories start with {prefix:?}; give more of the id: {}",
            many.len(),
            many.iter()
                .map(|f| f.short_id().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub(crate) async fn delete(
    settings: Option<&Path>,
    prefix: &str,
    force: bool,
) -> anyhow::Result<ExitCode> {
    let ctx = open(settings).await?;
    let f = one(&ctx.store, prefix)?;
    if !force {
        match super::out::prompt(format_args!("Delete {}? [y/N] ", line(&f, &ctx.store))) {
            // A question nobody can read is not a yes: nothing is deleted.
            Err(OutputError::Closed) => {
                // Harmless if lost: stderr closed too leaves nobody to tell.
                let _ = writeln!(
                    std::io::stderr(),
                    "ambient memories delete: nothing deleted: the question could not be shown \
                     (standard output is closed); --force deletes without asking"
                );
                return Ok(ExitCode::FAILURE);
            }
            asked => asked?,
        }
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !answer.trim().eq_ignore_ascii_case("y") {
            outln!("Kept.")?;
            return Ok(ExitCode::FAILURE);
        }
    }
    ctx.store.memory().delete_fact(&f.id)?;
    outln!("Deleted {}.", f.short_id())?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn edit(
    settings: Option<&Path>,
    prefix: &str,
    content: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let ctx = open(settings).await?;
    let mut f = one(&ctx.store, prefix)?;
    let new = match content {
        Some(c) => c.to_string(),
        None => edit_in_editor(&f.content)?,
    };
    if new.trim().is_empty() {
        bail!(
            "the new content is empty; nothing changed (use `ambient memories delete` to delete)"
        );
    }
    f.content = new.trim().to_string();
    f.updated_at = ctx.memory.now();
    ctx.store.memory().save_facts(&[], &[&f])?;
    outln!("{}", line(&f, &ctx.store))?;
    Ok(ExitCode::SUCCESS)
}

/// `$VISUAL`, `$EDITOR` or `vi` on a temp file holding `current`. The editor
/// runs through the shell as git runs it, so `EDITOR="code --wait"` works:
/// `sh -c '$EDITOR "$@"' editor FILE` lets the shell split the editor's
/// words while the file name stays one argument whatever it contains.
fn edit_in_editor(current: &str) -> anyhow::Result<String> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".into());
    let file = tempfile::Builder::new().suffix(".txt").tempfile()?;
    std::fs::write(file.path(), current)?;
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(&editor)
        .arg(file.path())
        .status()
        .with_context(|| format!("cannot run the editor {editor:?} (through sh)"))?;
    if !status.success() {
        bail!("the editor {editor:?} exited with {status}; nothing changed");
    }
    Ok(std::fs::read_to_string(file.path())?)
}

pub(crate) async fn export(
    settings: Option<&Path>,
    pretty: bool,
    guild_arg: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let ctx = open(settings).await?;
    let mut facts = ctx.store.memory().all_facts()?;
    if let Some(g) = guild_arg {
        let g = guild(&ctx.store, Some(g))?;
        facts.retain(|f| f.scope.guild == Some(g));
    }
    let doc = portable::export(&facts, ctx.memory.now());
    let text = if pretty {
        serde_json::to_string_pretty(&doc)?
    } else {
        serde_json::to_string(&doc)?
    };
    outln!("{text}")?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn import(settings: Option<&Path>, file: &Path) -> anyhow::Result<ExitCode> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let facts = portable::parse(&text)
        .map_err(|e| anyhow!("{}: {e}; nothing was imported", file.display()))?;
    let ctx = open(settings).await?;
    let (inserted, skipped) = ctx.store.memory().import_facts(&facts)?;
    outln!("Imported {inserted} memories ({skipped} already present, skipped).")?;
    Ok(ExitCode::SUCCESS)
}
