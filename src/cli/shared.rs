//! `ambient shared migrate | check | import FILE`: the PostgreSQL database
//! the bot's processes share (`storage.sharedUrl`). The work is in
//! `store::shared` and `doctor::shared`; this only prints.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use super::out::outln;
use crate::doctor::Status;
use crate::settings::{Secrets, Settings};
use crate::store::people::{BATCH, LEDGER_FILE, Ledger, PeopleLog as _};
use crate::store::shared::people::PgLedger;

/// The settings' `storage.sharedUrl`, or why a verb cannot run without it.
fn url(settings: &Settings) -> anyhow::Result<&str> {
    let url = settings.storage.shared_url.trim();
    if url.is_empty() {
        bail!("storage.sharedUrl is not set: there is no shared database to work on");
    }
    Ok(url)
}

pub(crate) async fn migrate(settings: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    url(&loaded.settings)?;
    let db = crate::courtesy::people::shared_db(&loaded.settings.storage, &Secrets::from_env())?;
    let (from, to) = db.migrate().await?;
    if from == to {
        outln!("{}: shared schema already at version {to}", db.place())?;
    } else {
        outln!(
            "{}: shared schema migrated from version {from} to {to}",
            db.place()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn check(settings: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    url(&loaded.settings)?;
    let Some(c) = crate::doctor::shared::check(&loaded.settings, &Secrets::from_env()).await else {
        return Ok(ExitCode::FAILURE);
    };
    outln!("{} {}: {}", c.status.mark(), c.name, c.detail)?;
    if let Some(fix) = &c.fix {
        outln!("  → {fix}")?;
    }
    Ok(if c.status == Status::Fail {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Copies the SQLite ledger `file` into the shared database's (empty)
/// ledger: its events with their sequence numbers and its id, so each
/// process's cursor is as true after the switch as before.
pub(crate) fn import(settings: Option<&Path>, file: &Path) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    url(&loaded.settings)?;
    if file.file_name().is_none_or(|n| n != LEDGER_FILE) || !file.is_file() {
        bail!(
            "{}: expected an existing {LEDGER_FILE} from a storage.sharedDir",
            file.display()
        );
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    let from = Ledger::open(dir, "import")
        .with_context(|| format!("cannot read the people ledger {}", file.display()))?;
    let mut entries = Vec::new();
    loop {
        let batch = from.after(
            entries
                .last()
                .map_or(0, |e: &crate::store::people::LedgerEntry| e.seq),
            BATCH,
        )?;
        if batch.is_empty() {
            break;
        }
        entries.extend(batch);
    }
    let last = entries.last().map_or(0, |e| e.seq);
    let db = crate::courtesy::people::shared_db(&loaded.settings.storage, &Secrets::from_env())?;
    let to = PgLedger::open(db, "import")?;
    let copied = to.import(from.id(), entries)?;
    outln!(
        "copied {copied} event(s) (the last {last}) and the ledger's id from {} into {}",
        file.display(),
        to.db().place()
    )?;
    Ok(ExitCode::SUCCESS)
}
