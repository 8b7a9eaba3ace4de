//! `ambient backup FILE` and `ambient restore FILE`: the whole data
//! directory (database and `state/`) into one file while the bot runs, and
//! back. The work is the store's (`store::backup`); this verb adds the
//! settings, the data lock a restore takes, and what is said.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};

use super::out::outln;
use crate::store::backup::{self, Restored};
use crate::store::lock::DataLock;
use crate::store::migrations;

fn data_dir(settings: Option<&Path>) -> anyhow::Result<PathBuf> {
    let loaded = super::load_lenient(settings)?;
    Ok(PathBuf::from(&loaded.settings.storage.data_dir))
}

/// `ambient backup FILE`: no lock is taken, so a running bot goes on.
pub(crate) fn backup(settings: Option<&Path>, file: &Path) -> anyhow::Result<ExitCode> {
    let dir = data_dir(settings)?;
    let made = backup::create(&dir, file, chrono::Utc::now())?;
    outln!(
        "Backed up {} to {}: {}, schema version {}, {} state file(s).",
        dir.display(),
        made.path.display(),
        size(made.bytes),
        made.schema,
        made.files
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `ambient restore FILE`: refused while a bot runs on the data directory.
pub(crate) fn restore(settings: Option<&Path>, file: &Path) -> anyhow::Result<ExitCode> {
    let dir = data_dir(settings)?;
    let _lock = DataLock::acquire(&dir).map_err(|e| anyhow!("{e}; nothing was restored"))?;
    let restored = backup::restore(file, &dir, chrono::Utc::now())
        .with_context(|| format!("cannot restore {}", file.display()))?;
    tell(file, &dir, &restored)?;
    Ok(ExitCode::SUCCESS)
}

fn tell(file: &Path, dir: &Path, r: &Restored) -> anyhow::Result<()> {
    let m = &r.manifest;
    outln!(
        "Restored {} (made {} by ambient {}) into {}: schema version {}, {} state file(s).",
        file.display(),
        m.made_at,
        m.ambient,
        dir.display(),
        m.schema,
        m.files
    )?;
    if m.schema < migrations::latest() {
        outln!(
            "Its schema was brought from version {} to {}, this ambient's.",
            m.schema,
            migrations::latest()
        )?;
    }
    if r.erasures > 0 {
        let g = &r.forgotten;
        outln!(
            "Forgotten again, as people asked after the backup was made: {} forget-me(s); {} fact(s), \
             the text of {} message(s), {} quote(s).",
            r.erasures,
            g.facts,
            g.messages,
            g.redacted
        )?;
    }
    if let Some(why) = &r.unreadable {
        eprintln!(
            "warning: the database it replaced could not be read ({why}): forget-mes and boundaries \
             set there since the backup are not carried over; ask those people again"
        );
    }
    if let Some(previous) = &r.previous {
        outln!(
            "The data directory it replaced is kept at {}; delete it once the bot runs as you expect.",
            previous.display()
        )?;
    }
    Ok(())
}

/// Bytes in the unit a person reads.
fn size(bytes: u64) -> String {
    const MB: f64 = 1024.0 * 1024.0;
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / MB)
    } else {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    }
}
