//! `ambient settings check [FILE]`.

use std::path::Path;
use std::process::ExitCode;

use crate::settings::load::{LoadError, load};
use crate::settings::{SettingsSource, paths, validate::defaults_tree};

pub fn check(file: Option<&Path>) -> ExitCode {
    match load(file) {
        Ok(loaded) if loaded.problems.is_empty() => {
            let count = paths::leaf_paths(&defaults_tree()).len();
            match loaded.source {
                SettingsSource::File(p) => println!("{}: OK ({count} settings known)", p.display()),
                SettingsSource::Defaults => println!(
                    "no settings.json here: the built-in defaults apply, and they are valid"
                ),
            }
            ExitCode::SUCCESS
        }
        Ok(loaded) => {
            for p in &loaded.problems {
                println!("{}: {p}", loaded.source);
            }
            println!("{} problem(s) found", loaded.problems.len());
            ExitCode::FAILURE
        }
        Err(e @ (LoadError::Read { .. } | LoadError::Syntax { .. })) => {
            println!("{e}");
            ExitCode::FAILURE
        }
    }
}
