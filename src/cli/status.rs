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
use crate::settings::{Secrets, SettingsService};
use crate::store::Store;

pub async fn status(settings: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let data_dir = PathBuf::from(&loaded.settings.storage.data_dir);
    let prompts_dir = PathBuf::from(&loaded.settings.executive.prompts_dir);
    let store = Store::open(&data_dir)?;
    let clock = Arc::new(SystemClock);
    let service = Arc::new(SettingsService::new(
        loaded.settings,
        store.clone(),
        clock.clone(),
    ));
    let exec = Executive::new(
        service.clone(),
        Secrets::from_env(),
        store.clone(),
        Journal::new(store.clone(), clock.clone()),
        clock,
        Chance::from_entropy(),
        Prompts::load(&prompts_dir)?,
        None,
    )
    .await;
    outln!(
        "ambient {} — settings from {}, data in {}",
        env!("CARGO_PKG_VERSION"),
        loaded.source,
        data_dir.display()
    )?;
    let sources = status::Sources {
        store: &store,
        settings: &service,
        executive: &exec,
        now: chrono::Utc::now(),
        // No running bot here: what only it knows (a consideration in flight) is not shown.
        running: None,
    };
    for line in status::widget(&sources, None) {
        outln!("{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}
