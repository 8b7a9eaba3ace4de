//! `ambient reflexes check [DIR]`, `stats`, `disable NAME`, `enable NAME`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::out::{OutputError, outln};
use crate::reflexes;
use crate::store::impulses::ReflexStats;

/// Parses every reflex file offline, printing each good one and every problem
/// as `file:line: reason`; exits 1 when there is a problem.
pub(crate) fn check(settings: Option<&Path>, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let dir = match dir {
        Some(d) if !d.is_dir() => {
            anyhow::bail!("{} is not a directory of reflex files", d.display())
        }
        Some(d) => d.to_path_buf(),
        None => PathBuf::from(&super::load_lenient(settings)?.settings.reflexes.dir),
    };
    let files = if dir.is_dir() {
        reflexes::read_dir(&dir)?
    } else {
        outln!(
            "{} does not exist: checking the built-in defaults",
            dir.display()
        )?;
        reflexes::built_in()
    };
    let (good, problems) = reflexes::parse_all(&files);
    for r in &good {
        outln!(
            "ok   {:<24} level {} priority {:>3}  {}",
            r.name,
            r.level,
            r.priority,
            r.description
        )?;
    }
    for p in &problems {
        outln!("FAIL {p}")?;
    }
    outln!(
        "{} reflex(es) ok, {} problem(s)",
        good.len(),
        problems.len()
    )?;
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// How each reflex has done: fired, succeeded, failed, passed, escalated, mean latency.
pub(crate) fn stats(settings: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let store = super::journal::open_existing(&loaded.settings.storage.data_dir)?;
    let mut rows: BTreeMap<String, ReflexStats> = store
        .impulses()
        .reflex_stats()?
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    // Reflexes that never fired are worth seeing too: maybe nobody needs them.
    for key in defined(&loaded.settings) {
        rows.entry(key.clone()).or_insert_with(|| ReflexStats {
            name: key,
            ..Default::default()
        });
    }
    let disabled = store.impulses().disabled_reflexes()?;
    outln!(
        "{:<28} {:>6} {:>9} {:>6} {:>6} {:>9} {:>10}",
        "reflex",
        "fired",
        "succeeded",
        "failed",
        "passed",
        "escalated",
        "mean ms"
    )?;
    let mut sorted: Vec<&ReflexStats> = rows.values().collect();
    sorted.sort_by(|a, b| b.fired.cmp(&a.fired).then(a.name.cmp(&b.name)));
    for s in sorted {
        print_row(s, &disabled)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every reflex defined: the operator's (the folder, else the built-in
/// ones) and the ones the executive wrote for a server (`name@server`).
fn defined(settings: &crate::settings::Settings) -> Vec<String> {
    let dir = PathBuf::from(&settings.reflexes.dir);
    let files = if dir.is_dir() {
        reflexes::read_dir(&dir).unwrap_or_default()
    } else {
        reflexes::built_in()
    };
    let mut defined: Vec<String> = reflexes::parse_all(&files)
        .0
        .into_iter()
        .map(|r| r.key())
        .collect();
    let created = PathBuf::from(&settings.storage.data_dir)
        .join("state")
        .join("reflexes");
    for guild_dir in std::fs::read_dir(&created)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
    {
        let Some(guild) = guild_dir
            .file_name()
            .to_str()
            .and_then(|g| g.parse::<u64>().ok())
        else {
            continue;
        };
        for mut r in
            reflexes::parse_all(&reflexes::read_dir(&guild_dir.path()).unwrap_or_default()).0
        {
            r.guild = Some(crate::ids::GuildId(guild));
            defined.push(r.key());
        }
    }
    defined
}

/// One reflex's line of the table, with where it is disabled and why.
fn print_row(
    s: &ReflexStats,
    disabled: &[(Option<crate::ids::GuildId>, String, String)],
) -> Result<(), OutputError> {
    let mean = if s.fired == 0 {
        "-".to_string()
    } else {
        format!("{:.1}", s.total_us as f64 / s.fired as f64 / 1000.0)
    };
    // A key is `name` (the operator's) or `name@server` (written for one server).
    let (name, only) = match s.name.split_once('@') {
        Some((n, g)) => (n, g.parse::<u64>().ok()),
        None => (s.name.as_str(), None),
    };
    let off: Vec<String> = disabled
        .iter()
        .filter(|(g, n, _)| {
            n == name && (g.is_none() || only.is_none() || g.map(|g| g.get()) == only)
        })
        .map(|(g, _, why)| match g {
            Some(g) => format!(" (disabled in {g}: {why})"),
            None => format!(" (disabled: {why})"),
        })
        .collect();
    outln!(
        "{:<28} {:>6} {:>9} {:>6} {:>6} {:>9} {:>10}{}",
        s.name,
        s.fired,
        s.succeeded,
        s.failed,
        s.passed,
        s.escalated,
        mean,
        off.join("")
    )
}

/// Disables (or enables again) a reflex everywhere; the running bot picks it up on its next start.
pub(crate) fn set_disabled(
    settings: Option<&Path>,
    name: &str,
    disabled: bool,
    reason: &str,
) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let store = super::journal::open_existing(&loaded.settings.storage.data_dir)?;
    if disabled {
        store
            .impulses()
            .disable_reflex(None, name, reason, chrono::Utc::now())?;
        outln!("disabled the reflex {name} everywhere")?;
    } else if store.impulses().enable_reflex(None, name)? {
        outln!("enabled the reflex {name} again")?;
    } else {
        outln!("the reflex {name} was not disabled")?;
    }
    Ok(ExitCode::SUCCESS)
}
