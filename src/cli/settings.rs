//! `ambient settings check [FILE]`: every problem (exit 1), and warnings
//! about settings that are valid but ignored as written (exit 0).

use std::path::Path;
use std::process::ExitCode;

use crate::settings::load::load;
use crate::settings::validate::{defaults_tree, warnings};
use crate::settings::{SettingsSource, paths};

/// The most problems printed: a file with thousands of mistakes is fixed from the first ones.
pub(super) const MAX_SHOWN: usize = 50;

pub fn check(file: Option<&Path>) -> ExitCode {
    let loaded = match load(file) {
        Ok(loaded) => loaded,
        Err(e) => {
            println!("{e}");
            return ExitCode::FAILURE;
        }
    };
    for w in warnings(&loaded.settings) {
        println!("{}: warning: {w}", loaded.source);
    }
    if !loaded.problems.is_empty() {
        for p in loaded.problems.iter().take(MAX_SHOWN) {
            println!("{}: {p}", loaded.source);
        }
        if loaded.problems.len() > MAX_SHOWN {
            println!("… and {} more", loaded.problems.len() - MAX_SHOWN);
        }
        println!("{} problem(s) found", loaded.problems.len());
        return ExitCode::FAILURE;
    }
    let count = paths::leaf_paths(&defaults_tree()).len();
    match loaded.source {
        SettingsSource::File(p) => println!("{}: OK ({count} settings known)", p.display()),
        SettingsSource::Defaults => {
            println!("no settings.json here: the built-in defaults apply, and they are valid")
        }
    }
    ExitCode::SUCCESS
}
