//! `ambient guild export | import | remove`: one server's data out of this
//! data directory and into another's, for a reshard, a backup or a move to
//! another host. The rows are the store's (`store::guild_io`); this verb
//! adds the server's state files (`state/guilds/<id>/`, what its reflexes
//! keep, and `state/reflexes/<id>/`, the reflexes written for it), read and
//! written through the reflexes' path guard, and the checks that need the
//! settings: the data lock and the shard plan.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};

use super::out::outln;
use crate::ids::GuildId;
use crate::reflexes::state::{MAX_FILE_BYTES, StateDir};
use crate::store::Store;
use crate::store::guild_io::{self, FOLDERS, GuildFile, state_folder as folder};
use crate::store::lock::DataLock;
use crate::vocab::shards::shard_of;

/// At most this many state files, and bytes of them, go with one server.
const MAX_FILES: usize = 10_000;
const MAX_FILES_BYTES: usize = 64 * 1024 * 1024;

fn open(settings: Option<&Path>) -> anyhow::Result<(crate::settings::Settings, Store)> {
    let loaded = super::load_lenient(settings)?;
    let dir = PathBuf::from(&loaded.settings.storage.data_dir);
    let store =
        Store::open(&dir).with_context(|| format!("cannot open the store in {}", dir.display()))?;
    Ok((loaded.settings, store))
}

pub(crate) fn export(settings: Option<&Path>, guild: &str) -> anyhow::Result<ExitCode> {
    let (settings, store) = open(settings)?;
    let guild = super::memory::guild(&store, Some(guild))?;
    if store.guilds().guild_row_counts(guild)?.is_empty() {
        bail!("this data directory holds no rows of server {guild}; nothing was exported");
    }
    let files = read_files(Path::new(&settings.storage.data_dir), guild)?;
    let now = chrono::Utc::now().timestamp_millis();
    let counts = super::out::stream(|out| store.guilds().export_guild(guild, &files, now, out))?;
    eprintln!(
        "Exported server {guild}: {}; {} state file(s).",
        guild_io::describe(&counts),
        files.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Every file of the server's state folders, bounded; a symlink is not followed.
fn read_files(data_dir: &Path, guild: GuildId) -> anyhow::Result<Vec<GuildFile>> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for name in FOLDERS {
        let root = folder(data_dir, name, guild);
        if !root.is_dir() {
            continue;
        }
        let guard = StateDir::new(data_dir, &format!("{name}/{guild}"));
        let mut rels = Vec::new();
        walk(&root, &root, &mut rels)?;
        for rel in rels {
            let path = guard.resolve(&rel)?;
            let shown = format!("state/{name}/{guild}/{rel}");
            let len = std::fs::metadata(&path)?.len() as usize;
            if len > MAX_FILE_BYTES {
                bail!("{shown} is {len} bytes, over the {MAX_FILE_BYTES} a state file may hold");
            }
            bytes += len;
            if out.len() >= MAX_FILES || bytes > MAX_FILES_BYTES {
                bail!(
                    "server {guild}'s state files exceed {MAX_FILES} files or {MAX_FILES_BYTES} bytes"
                );
            }
            let text = String::from_utf8(std::fs::read(&path)?).map_err(|_| {
                anyhow!("{shown} is not UTF-8 text; state files are text, and the export carries only text")
            })?;
            out.push(GuildFile {
                folder: name.into(),
                path: rel,
                text,
            });
        }
    }
    Ok(out)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> anyhow::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let kind = e.file_type()?;
        if kind.is_dir() {
            walk(root, &e.path(), out)?;
        } else if kind.is_file() {
            let rel = e.path().strip_prefix(root)?.to_string_lossy().into_owned();
            out.push(rel);
        }
        // Symlinks and other kinds are not the server's data: not followed.
    }
    Ok(())
}

pub(crate) fn import(
    settings: Option<&Path>,
    file: &Path,
    replace: bool,
    max_mb: u64,
) -> anyhow::Result<ExitCode> {
    let (settings, store) = open(settings)?;
    // The forget-mes other processes passed on are applied to what comes in too.
    let store = crate::app::attach(store, &settings)?;
    let data_dir = PathBuf::from(&settings.storage.data_dir);
    let _lock = DataLock::acquire(&data_dir)?;
    let bytes = read_bounded(file, max_mb)?;
    let nothing =
        |e: &dyn std::fmt::Display| anyhow!("{}: {e}; nothing was imported", file.display());
    let doc = guild_io::parse(&bytes).map_err(|e| nothing(&e))?;
    let guild = GuildId(doc.guild);
    check_owner(&store, &settings, guild).map_err(|e| nothing(&e))?;
    let existing = store.guilds().guild_row_counts(guild)?;
    if !replace && !existing.is_empty() {
        let rows = guild_io::describe(&existing);
        return Err(nothing(&guild_io::GuildIoError::Exists { guild, rows }));
    }
    check_files(&data_dir, guild, &doc.files, replace).map_err(|e| nothing(&e))?;
    let staged = stage(&data_dir, guild, &doc.files).map_err(|e| nothing(&e))?;
    let imported = match store.guilds().import_guild(&doc, replace) {
        Ok(c) => c,
        Err(e) => {
            // Harmless if it fails: a leftover staging folder holds only this file's texts.
            let _ = std::fs::remove_dir_all(&staged);
            return Err(nothing(&e));
        }
    };
    place(&data_dir, guild, &staged).with_context(|| {
        format!(
            "the rows of server {guild} are imported, but its state files could not be put in place \
             (they are in {}); import again with --replace",
            staged.display()
        )
    })?;
    outln!(
        "Imported server {guild}: {}; {} state file(s).",
        guild_io::describe(&imported.counts),
        doc.files.len()
    )?;
    let gone = &imported.forgotten;
    if gone.facts + gone.messages + gone.redacted > 0 {
        outln!(
            "Forgotten again, as people asked before this export was imported: {} fact(s), the text of {} \
             message(s), {} quote(s).",
            gone.facts,
            gone.messages,
            gone.redacted
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn read_bounded(file: &Path, max_mb: u64) -> anyhow::Result<Vec<u8>> {
    let limit = max_mb.saturating_mul(1024 * 1024);
    let f = std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut bytes = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", file.display()))?;
    if bytes.len() as u64 > limit {
        bail!(
            "{} is over {max_mb} MB, the most `ambient guild import` reads (--max-mb raises it); \
             nothing was imported",
            file.display()
        );
    }
    Ok(bytes)
}

/// Refuses a server that this data directory's shard plan (recorded when
/// the bot last started here, or the settings' own) leaves to another process.
fn check_owner(
    store: &Store,
    settings: &crate::settings::Settings,
    guild: GuildId,
) -> anyhow::Result<()> {
    // The plan this directory runs under next: a reshard writes the new one
    // into the settings before moving servers, so the settings' plan wins;
    // without one (a plan given by `--shards` flags), the one recorded at
    // the last start stands for it.
    let configured = settings
        .discord
        .shard_plan()
        .map(|p| (p, "discord.shards and discord.totalShards"));
    let recorded = || -> anyhow::Result<_> {
        Ok(store
            .guilds()
            .recorded_plan()?
            .map(|p| (p, "recorded when the bot last started here")))
    };
    let plan = match configured {
        Some(c) => Some(c),
        None => recorded()?,
    };
    if let Some((plan, whence)) = plan.filter(|(p, _)| !p.owns(guild)) {
        bail!(
            "server {guild} is on shard {} of {}, which this data directory's plan ({plan}, {whence}) \
             does not own; import it on the data directory of the process that runs shard {0}",
            shard_of(guild, plan.total),
            plan.total
        );
    }
    Ok(())
}

/// Refuses files that could not be written where they belong.
fn check_files(
    data_dir: &Path,
    guild: GuildId,
    files: &[GuildFile],
    replace: bool,
) -> anyhow::Result<()> {
    if files.len() > MAX_FILES
        || files.iter().map(|f| f.text.len()).sum::<usize>() > MAX_FILES_BYTES
    {
        bail!("files: more than {MAX_FILES} files or {MAX_FILES_BYTES} bytes");
    }
    for (i, f) in files.iter().enumerate() {
        if !FOLDERS.contains(&f.folder.as_str()) {
            bail!(
                "files[{i}].folder: {:?} is not a state folder; the folders are guilds and reflexes",
                f.folder
            );
        }
        if f.text.len() > MAX_FILE_BYTES {
            bail!(
                "files[{i}] ({}) is over the {MAX_FILE_BYTES} bytes a state file may hold",
                f.path
            );
        }
    }
    for name in FOLDERS {
        let dir = folder(data_dir, name, guild);
        if !replace && std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
            bail!(
                "state/{name}/{guild} already holds files here; add --replace to replace them with the file's"
            );
        }
    }
    Ok(())
}

/// Writes the files, through the path guard, into a staging folder beside
/// `state/`, so a refused import leaves the state folders untouched.
fn stage(data_dir: &Path, guild: GuildId, files: &[GuildFile]) -> anyhow::Result<PathBuf> {
    let scope = format!(".import-{guild}-{}", std::process::id());
    let staged = data_dir.join("state").join(&scope);
    if staged.exists() {
        std::fs::remove_dir_all(&staged)?;
    }
    for (i, f) in files.iter().enumerate() {
        let guard = StateDir::new(data_dir, &format!("{scope}/{}", f.folder));
        if let Err(e) = guard.write(&f.path, &f.text) {
            // Harmless if it fails: the staging folder is never read.
            let _ = std::fs::remove_dir_all(&staged);
            bail!("files[{i}].path: {e}");
        }
    }
    Ok(staged)
}

/// Moves the staged folders into place, replacing what was there.
fn place(data_dir: &Path, guild: GuildId, staged: &Path) -> anyhow::Result<()> {
    for name in FOLDERS {
        let target = folder(data_dir, name, guild);
        if target.exists() {
            std::fs::remove_dir_all(&target)?;
        }
        let from = staged.join(name);
        if from.exists() {
            std::fs::create_dir_all(target.parent().unwrap_or(data_dir))?;
            std::fs::rename(&from, &target)?;
        }
    }
    if staged.exists() {
        std::fs::remove_dir_all(staged)?;
    }
    Ok(())
}

pub(crate) fn remove(settings: Option<&Path>, guild: &str, yes: bool) -> anyhow::Result<ExitCode> {
    let (settings, store) = open(settings)?;
    let data_dir = PathBuf::from(&settings.storage.data_dir);
    let _lock = DataLock::acquire(&data_dir)?;
    let guild = super::memory::guild(&store, Some(guild))?;
    let rows = store.guilds().guild_row_counts(guild)?;
    let folders: Vec<String> = FOLDERS
        .iter()
        .filter(|n| folder(&data_dir, n, guild).exists())
        .map(|n| format!("state/{n}/{guild}/"))
        .collect();
    if rows.is_empty() && folders.is_empty() {
        outln!("This data directory holds nothing of server {guild}.")?;
        return Ok(ExitCode::SUCCESS);
    }
    let what = format!(
        "{}{}",
        guild_io::describe(&rows),
        if folders.is_empty() {
            String::new()
        } else {
            format!("; the folders {}", folders.join(", "))
        }
    );
    if !yes {
        outln!(
            "Would remove server {guild}: {what}.\nNothing removed: add --yes to remove it \
             (after importing it where it moves: `ambient guild export {guild} > {guild}.json`)."
        )?;
        return Ok(ExitCode::FAILURE);
    }
    // The same two steps as a departed server's removal (`discord::departed`).
    store.guilds().remove_guild(guild)?;
    guild_io::remove_state_folders(&data_dir, guild)?;
    outln!("Removed server {guild}: {what}.")?;
    Ok(ExitCode::SUCCESS)
}
