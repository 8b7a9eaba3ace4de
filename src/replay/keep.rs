//! The replay's own data directory (`--keep DIR`, else a temporary one):
//! empty or new, locked while the replay runs, and marked as a replay's.
//!
//! - A directory that holds anything is refused before anything is
//!   written, saying what is in it: a bot's store or lock (so no bot's data
//!   is ever written), an earlier replay's data (two replays' records mixed
//!   in one store would be read as one), or anything else (`--keep .`
//!   would have put a store among a person's files).
//! - The replay holds the directory's lock while it runs, so no bot starts
//!   on it meanwhile, and leaves [`MARKER`] there: a directory kept from an
//!   earlier replay is recognised as one (its lock names a process long gone).

use std::path::{Path, PathBuf};

use crate::settings::load::read_limited;
use crate::store::DB_FILE;
use crate::store::lock::{DataLock, LOCK_FILE};

/// The file that says a directory holds a replay's data.
pub(crate) const MARKER: &str = "replay.txt";

/// Names of a directory's entries shown in a refusal, at most.
const SHOWN: usize = 3;

const ONLY: &str = "a replay keeps its data only in an empty or new directory";

/// Why a directory cannot hold a replay's data.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeepError {
    #[error(
        "{dir}: it holds a bot's store ({file}): {ONLY}, so that no bot's store is ever \
         written; name another one"
    )]
    Store { dir: String, file: String },
    #[error(
        "{dir}: it holds the lock of a bot's data directory ({LOCK_FILE}{holder}): {ONLY}, \
         so that no bot's store is ever written; name another one"
    )]
    Locked { dir: String, holder: String },
    #[error(
        "{dir}: it holds the data an earlier replay kept ({found}): {ONLY}, so that two \
         replays' records are never mixed; remove it first, or name another one"
    )]
    EarlierReplay { dir: String, found: String },
    #[error("{dir}: it is not empty (it holds {holds}): {ONLY}; name another one")]
    NotEmpty { dir: String, holds: String },
    #[error("{dir}: it is a file, not a directory: {ONLY}")]
    NotADirectory { dir: String },
    #[error("{dir}: cannot be read ({why}): {ONLY}")]
    Unreadable { dir: String, why: String },
}

/// Refuses a directory that holds anything, saying what; a missing one is fine.
pub(crate) fn refuse_unless_empty(dir: &Path) -> Result<(), KeepError> {
    let shown = dir.display().to_string();
    let unreadable = |e: std::io::Error| KeepError::Unreadable {
        dir: shown.clone(),
        why: e.to_string(),
    };
    let names = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(KeepError::NotADirectory { dir: shown });
        }
        Err(e) => return Err(unreadable(e)),
        Ok(entries) => {
            let mut names = Vec::new();
            for entry in entries {
                names.push(entry.map_err(unreadable)?.file_name());
            }
            names.sort();
            names
        }
    };
    if names.is_empty() {
        return Ok(());
    }
    if let Some(found) = earlier_replay(dir, &names) {
        return Err(KeepError::EarlierReplay { dir: shown, found });
    }
    if dir.join(LOCK_FILE).exists() {
        let holder = lock_holder(&dir.join(LOCK_FILE));
        return Err(KeepError::Locked {
            dir: shown,
            holder: holder.map_or_else(String::new, |pid| format!(", pid {pid}")),
        });
    }
    let suffixes = ["", "-wal", "-shm", "-journal"];
    if let Some(file) = suffixes
        .iter()
        .map(|s| format!("{DB_FILE}{s}"))
        .find(|f| dir.join(f).exists())
    {
        return Err(KeepError::Store { dir: shown, file });
    }
    Err(KeepError::NotEmpty {
        dir: shown,
        holds: listing(&names),
    })
}

/// Where `dir` shows an earlier replay's [`MARKER`]: in it, or (a sweep,
/// `--eagerness 0,50`, keeps one directory per run) in its subdirectories.
fn earlier_replay(dir: &Path, names: &[std::ffi::OsString]) -> Option<String> {
    if dir.join(MARKER).is_file() {
        return Some(MARKER.to_string());
    }
    let marked: Vec<String> = names
        .iter()
        .filter(|n| dir.join(n).join(MARKER).is_file())
        .map(|n| format!("{}/{MARKER}", n.to_string_lossy()))
        .collect();
    (!marked.is_empty()).then(|| listing_of(marked))
}

/// "a, b, c and 4 more".
fn listing(names: &[std::ffi::OsString]) -> String {
    listing_of(
        names
            .iter()
            .map(|n| n.to_string_lossy().into_owned())
            .collect(),
    )
}

fn listing_of(mut names: Vec<String>) -> String {
    let more = names.len().saturating_sub(SHOWN);
    names.truncate(SHOWN);
    let shown = names.join(", ");
    match more {
        0 => shown,
        n => format!("{shown} and {n} more"),
    }
}

/// The pid a bot wrote into its lock file, if it reads as one (a lock that
/// is not a small plain file only makes the refusal say less).
fn lock_holder(lock: &Path) -> Option<u32> {
    read_limited(lock, 32).ok()?.trim().parse().ok()
}

/// Takes `dir` for a replay of `files`: refused unless empty or new, then
/// locked for the replay's run and marked as a replay's.
pub(crate) fn take(dir: &Path, files: &[PathBuf]) -> anyhow::Result<DataLock> {
    refuse_unless_empty(dir).map_err(|e| anyhow::anyhow!("the replay's data directory {e}"))?;
    let lock = DataLock::acquire(dir)?;
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let text = format!(
        "This directory holds what `ambient replay` did with {}: its store, journal and \
         usage records. Read them with `ambient journal` or `ambient usage` and a settings \
         file naming this directory as storage.dataDir. A replay does not keep its data \
         here again: remove the directory first.\n",
        names.join(", ")
    );
    let (marker, written) = (dir.join(MARKER), dir.join(format!("{MARKER}.tmp")));
    std::fs::write(&written, text)
        .and_then(|()| std::fs::rename(&written, &marker))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", marker.display()))?;
    Ok(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(dir: &Path) -> String {
        refuse_unless_empty(dir).unwrap_err().to_string()
    }

    #[test]
    fn a_new_or_empty_directory_is_taken_and_marked() {
        let home = tempfile::tempdir().unwrap();
        let new = home.path().join("new");
        refuse_unless_empty(&new).unwrap();
        std::fs::create_dir(home.path().join("empty")).unwrap();
        refuse_unless_empty(&home.path().join("empty")).unwrap();

        let held = take(&new, &[PathBuf::from("general.json")]).unwrap();
        let marker = std::fs::read_to_string(new.join(MARKER)).unwrap();
        assert!(marker.contains("`ambient replay` did with general.json"));
        drop(held);
        assert_eq!(
            refusal(&new),
            format!(
                "{}: it holds the data an earlier replay kept (replay.txt): a replay keeps \
                 its data only in an empty or new directory, so that two replays' records \
                 are never mixed; remove it first, or name another one",
                new.display()
            )
        );
    }

    #[test]
    fn anything_in_a_directory_is_named_in_its_refusal() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path();
        for name in ["notes.txt", "settings.json", "a.json", "b.json", "c.json"] {
            std::fs::write(dir.join(name), "x").unwrap();
        }
        assert_eq!(
            refusal(dir),
            format!(
                "{}: it is not empty (it holds a.json, b.json, c.json and 2 more): a replay \
                 keeps its data only in an empty or new directory; name another one",
                dir.display()
            )
        );
        assert!(refusal(&dir.join("a.json")).ends_with("it is a file, not a directory: a replay keeps its data only in an empty or new directory"));
        // A sweep's runs, one directory each, are an earlier replay's too.
        let sweep = dir.join("sweep");
        for run in ["eagerness-0", "eagerness-50"] {
            std::fs::create_dir_all(sweep.join(run)).unwrap();
            std::fs::write(sweep.join(run).join(MARKER), "x").unwrap();
        }
        assert!(
            refusal(&sweep)
                .contains("earlier replay kept (eagerness-0/replay.txt, eagerness-50/replay.txt)"),
            "{}",
            refusal(&sweep)
        );
    }
}
