//! `ambient settings check [FILE]`: every problem (exit 1), and warnings
//! about settings that are valid but ignored as written (exit 0).

use std::path::Path;
use std::process::ExitCode;

use super::out::outln;
use crate::settings::check::check as check_file;
use crate::settings::validate::defaults_tree;
use crate::settings::{SettingsSource, paths};

pub(super) use crate::settings::check::MAX_SHOWN;

pub(crate) fn check(file: Option<&Path>) -> anyhow::Result<ExitCode> {
    let checked = check_file(file);
    for w in &checked.warnings {
        outln!("{w}")?;
    }
    let Some(loaded) = checked
        .loaded
        .as_ref()
        .filter(|_| checked.problems.is_empty())
    else {
        for line in checked.shown_problems() {
            outln!("{line}")?;
        }
        if checked.loaded.is_some() {
            outln!("{} problem(s) found", checked.problems.len())?;
        }
        return Ok(ExitCode::FAILURE);
    };
    let count = paths::leaf_paths(&defaults_tree()).len();
    match &loaded.source {
        SettingsSource::File(p) => outln!("{}: OK ({count} settings known)", p.display())?,
        SettingsSource::Defaults => {
            outln!("no settings.json here: the built-in defaults apply, and they are valid")?
        }
    }
    Ok(ExitCode::SUCCESS)
}
