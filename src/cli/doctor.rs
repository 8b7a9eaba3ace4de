//! `ambient doctor [--json] [--no-model]`: runs `crate::doctor`'s checks and prints one
//! line per check (✓ / ! / ✗, what was seen, and for ! and ✗ the fix), or
//! the whole report as one JSON document. Exit 1 when any check is ✗.

use std::path::Path;
use std::process::ExitCode;

use super::out::outln;
use crate::doctor::{self, Options, Report};
use crate::settings::Secrets;
use crate::settings::check::check;

/// Pretends the data directory's filesystem has this many bytes free: the
/// tests' way to a nearly full disk (a tiny filesystem cannot be mounted there).
const FREE_BYTES_ENV: &str = "AMBIENT_DOCTOR_FREE_BYTES";

pub async fn doctor(
    settings: Option<&Path>,
    json: bool,
    no_model: bool,
) -> anyhow::Result<ExitCode> {
    let checked = check(settings);
    let pretend = std::env::var(FREE_BYTES_ENV).ok();
    let pretended = |_: &Path| -> std::io::Result<u64> {
        pretend
            .as_deref()
            .unwrap_or_default()
            .trim()
            .parse()
            .map_err(|e| std::io::Error::other(format!("{FREE_BYTES_ENV}: {e}")))
    };
    let options = Options {
        commands: crate::discord::command_names(),
        free_space: match pretend {
            Some(_) => &pretended,
            None => &doctor::local::statvfs_free,
        },
        no_model,
    };
    let report = doctor::examine(&checked, &Secrets::from_env(), &options).await;
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print(&report)?;
    }
    Ok(if report.healthy() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print(report: &Report) -> anyhow::Result<()> {
    for c in &report.checks {
        outln!("{} {}: {}", c.status.mark(), c.name, c.detail)?;
        if let Some(fix) = &c.fix {
            outln!("    → {fix}")?;
        }
    }
    Ok(())
}
