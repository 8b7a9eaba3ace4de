//! `ambient garden log` (the cycles and their transcripts) and
//! `ambient context` (a guild's context stream).

use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;

use super::out::outln;
use crate::journal::stream;

pub(crate) fn log(
    settings: Option<&Path>,
    limit: usize,
    cycle: Option<i64>,
) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let store = super::journal::open_existing(&loaded.settings.storage.data_dir)?;
    // The shared text ends without a newline when it is one line (Discord
    // wants none); a terminal prompt must not land after it.
    let text = crate::commands::garden::log(&(&store).into(), limit, cycle, cycle.is_some());
    outln!("{}", text.trim_end_matches('\n'))?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn context(
    settings: Option<&Path>,
    guild: Option<&str>,
    since: &str,
    types: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let store = super::journal::open_existing(&loaded.settings.storage.data_dir)?;
    let now = chrono::Utc::now();
    let start = crate::when::parse_since(since, now).map_err(|e| anyhow!("--since: {e}"))?;
    let kinds = types
        .map(stream::parse_kinds)
        .transpose()
        .map_err(|e| anyhow!("--types: {e}"))?
        .unwrap_or_default();
    let guild = super::memory::guild(&store, guild)?;
    let tz = loaded
        .settings
        .impulses
        .timezone
        .parse()
        .unwrap_or(chrono_tz::Tz::UTC);
    let events = stream::read(&store.journal(), guild, start, &kinds, 10_000)?;
    if events.is_empty() {
        outln!("nothing in the context stream of that server in that window")?;
    }
    for e in &events {
        outln!("{}", stream::line(e, tz))?;
    }
    Ok(ExitCode::SUCCESS)
}
