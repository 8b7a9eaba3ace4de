//! `ambient discovery fetch <url> [--type]` (check a feed before adding it)
//! and `ambient discovery list` (the sources and how they are doing).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::anyhow;

use super::out::outln;
use crate::clock::SystemClock;
use crate::discovery::sources::{SourceKind, SourceSpec};
use crate::discovery::{Discovery, curation, fetch_items};
use crate::journal::Journal;
use crate::net::Fetcher;
use crate::net::fetch::Validators;
use crate::settings::SettingsService;

pub(crate) async fn fetch(
    settings: Option<&Path>,
    target: &str,
    kind: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let kind = match kind {
        Some(k) => SourceKind::parse(k).ok_or_else(|| {
            anyhow!("--type: {k:?} is not one of rss, atom, reddit, youtube, x, hn")
        })?,
        None => SourceKind::Rss,
    };
    let d = &loaded.settings.initiative.discovery;
    // A full URL is fetched as given; otherwise the argument names a source of that kind.
    let url = if target.starts_with("http://") || target.starts_with("https://") {
        target.to_string()
    } else {
        SourceSpec::new(kind, target)
            .map_err(|e| anyhow!(e))?
            .url(d, d.source_fetch_limit)
            .map_err(|e| anyhow!(e))?
    };
    let fetcher = Fetcher::new(&loaded.settings.network);
    let (items, _, _) = fetch_items(
        &fetcher,
        kind,
        &url,
        &loaded.settings,
        &Validators::default(),
    )
    .await
    .map_err(|e| anyhow!("{url}: {e}"))?;
    if items.is_empty() {
        outln!("{url}: no items")?;
    }
    for item in &items {
        let when = item
            .published
            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_else(|| "undated".into());
        let media = item
            .media
            .map(|m| format!(" [{}]", m.as_str()))
            .unwrap_or_default();
        outln!("{when}  {}{media}\n    {}", item.title, item.url)?;
        if !item.summary.is_empty() {
            outln!("    {}", item.summary.chars().take(200).collect::<String>())?;
        }
    }
    outln!("{} item(s) from {url}", items.len())?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn list(settings: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let store = super::journal::open_existing(&loaded.settings.storage.data_dir)?;
    let clock = Arc::new(SystemClock);
    let service = Arc::new(SettingsService::new(
        loaded.settings,
        store.overrides(),
        clock.clone(),
    ));
    let discovery = Discovery::new(
        service,
        (&store).into(),
        Journal::new(store.journal(), clock.clone()),
        clock,
    );
    let guilds = store.messages().known_guilds()?;
    if guilds.is_empty() {
        outln!("The bot has not seen any server yet.")?;
    }
    for (guild, name) in guilds {
        outln!("{name} ({guild}):")?;
        for line in curation::list(&discovery, guild).lines() {
            outln!("  {line}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
