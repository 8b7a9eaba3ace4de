//! `ambient doctor [--json] [--no-model]`: runs `crate::doctor`'s checks and prints one
//! line per check (✓ / ! / ✗, what was seen, and for ! and ✗ the fix), or
//! the whole report as one JSON document. Exit 1 when any check is ✗.

use std::path::Path;
use std::process::ExitCode;

use super::out::outln;
use crate::doctor::{self, Options, Report};
use crate::settings::Secrets;
use crate::settings::check::check;

pub(crate) async fn doctor(
    settings: Option<&Path>,
    json: bool,
    no_model: bool,
) -> anyhow::Result<ExitCode> {
    let checked = check(settings);
    let options = Options {
        commands: crate::discord::command_names(),
        free_space: &doctor::local::statvfs_free,
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
