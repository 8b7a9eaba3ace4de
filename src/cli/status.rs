//! `ambient status`: which models serve which role, and what was spent.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

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
    )
    .await;
    println!(
        "ambient {} — settings from {}, data in {}",
        env!("CARGO_PKG_VERSION"),
        loaded.source,
        data_dir.display()
    );
    println!("models:");
    for line in status::model_lines(&exec) {
        println!("  {line}");
    }
    let snapshot = exec.snapshot();
    println!("usage: {}", status::usage_line(&snapshot));
    let cap = service.global().budget.daily_tokens.ambient;
    let ambient_used = cap.saturating_sub(snapshot.ambient_budget_remaining.unwrap_or(cap));
    println!(
        "ambient budget: {}",
        status::budget_bar(0, ambient_used, cap)
    );
    let (user, ambient, whole) = status::budget_shares(&snapshot, &service.global());
    println!("garden:");
    let enabled = service.global().garden.enabled;
    for line in crate::commands::garden::widget(&store, None, enabled, chrono::Utc::now()) {
        println!("  {line}");
    }
    println!("  budget: {}", status::budget_bar(user, ambient, whole));
    Ok(ExitCode::SUCCESS)
}
