//! `ambient status`: the status widget from the store, for the operator
//! (every known server's initiative), without a running bot.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use super::out::outln;
use crate::clock::{Chance, SystemClock};
use crate::commands::status;
use crate::executive::{Executive, Prompts};
use crate::journal::Journal;
use crate::settings::{Secrets, SettingsService, retention};
use crate::store::Store;

pub(crate) async fn status(settings: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let data_dir = PathBuf::from(&loaded.settings.storage.data_dir);
    let prompts_dir = PathBuf::from(&loaded.settings.executive.prompts_dir);
    let store = Store::open(&data_dir)?;
    let clock = Arc::new(SystemClock);
    let service = Arc::new(SettingsService::new(
        loaded.settings,
        store.overrides(),
        clock.clone(),
    ));
    let exec = Executive::new(crate::executive::Services {
        settings: service.clone(),
        secrets: Secrets::from_env(),
        store: (&store).into(),
        journal: Journal::new(store.journal(), clock.clone()),
        clock,
        chance: Chance::from_entropy(),
        prompts: Prompts::load(&prompts_dir)?,
        stand_in: None,
    })
    .await;
    outln!(
        "ambient {} — settings from {}, data in {}",
        env!("CARGO_PKG_VERSION"),
        loaded.source,
        data_dir.display()
    )?;
    let sources = status::Sources {
        store: (&store).into(),
        settings: &service,
        executive: &exec,
        now: chrono::Utc::now(),
        // No running bot here: what only it knows (a consideration in flight) is not shown.
        running: None,
    };
    for line in status::widget(&sources, None) {
        outln!("{line}")?;
    }
    for line in kept(&store, &service)? {
        outln!("{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What is kept and for how long, per kind, with each server's own shorter
/// values, and whether freed space goes back to the disk.
fn kept(store: &Store, service: &SettingsService) -> anyhow::Result<Vec<String>> {
    let operator = service.global().storage.retention.clone();
    let mut lines = vec!["What is kept (0 days in the settings keeps a kind forever):".to_string()];
    lines.extend(
        retention::kept_lines(&operator)
            .into_iter()
            .map(|l| format!("  {l}")),
    );
    let names: std::collections::HashMap<_, _> =
        store.messages().known_guilds()?.into_iter().collect();
    for guild in store.overrides().guilds_overriding(retention::PREFIX)? {
        let theirs = &service.for_guild(Some(guild)).storage.retention;
        if let Some(less) = retention::shorter_here(&operator, theirs) {
            let name = names
                .get(&guild)
                .map_or(String::new(), |n| format!(" ({n})"));
            lines.push(format!("  server {guild}{name} keeps less: {less}"));
        }
    }
    let space = store.file().space()?;
    lines.push(format!(
        "  database: {} MiB, {} MiB free inside it; {}",
        space.bytes / (1024 * 1024),
        space.free_bytes / (1024 * 1024),
        if space.gives_back {
            "freed space goes back to the disk after each hourly sweep"
        } else {
            "freed space is reused by new rows (made before incremental vacuum; see the README to convert it)"
        }
    ));
    Ok(lines)
}
