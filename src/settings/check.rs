//! Checking a settings file: the one place that turns a file into either
//! settings to use or the lines that say what is wrong with it. `ambient
//! settings check` prints these lines, and a live reload (`crate::live`)
//! refuses a file with exactly the same lines, so an operator reads the same
//! words in both places.

use std::path::Path;

use super::load::{Loaded, load};
use super::validate::warnings;

/// The most problems shown: a file with thousands of mistakes is fixed from the first ones.
pub(crate) const MAX_SHOWN: usize = 50;

/// What checking a file found.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The settings read; `None` when the file could not be read or parsed.
    pub loaded: Option<Loaded>,
    /// Each problem as `FILE: PATH: what is wrong` (or the read or syntax error):
    /// the file is refused while there is any.
    pub problems: Vec<String>,
    /// Valid settings that do nothing as written, as `FILE: warning: …`.
    pub warnings: Vec<String>,
}

impl Checked {
    /// Forgets the file's problems at `paths`: values laid over the file
    /// (the command line's) decide them, and are checked with it after.
    pub(crate) fn leave_to_the_command_line(&mut self, paths: &[&str]) {
        let Some(loaded) = self.loaded.as_mut() else {
            return;
        };
        loaded
            .problems
            .retain(|p| !paths.contains(&p.path.as_str()));
        let source = &loaded.source;
        self.problems = loaded
            .problems
            .iter()
            .map(|p| format!("{source}: {p}"))
            .collect();
    }

    /// The problems to show: the first [`MAX_SHOWN`], then a count of the rest.
    pub(crate) fn shown_problems(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.problems.iter().take(MAX_SHOWN).cloned().collect();
        if self.problems.len() > MAX_SHOWN {
            lines.push(format!("… and {} more", self.problems.len() - MAX_SHOWN));
        }
        lines
    }
}

/// Checks `file` (or `settings.json`, else the defaults, as [`load`] picks).
pub(crate) fn check(file: Option<&Path>) -> Checked {
    let loaded = match load(file) {
        Ok(loaded) => loaded,
        Err(e) => {
            return Checked {
                loaded: None,
                problems: vec![e.to_string()],
                warnings: Vec::new(),
            };
        }
    };
    let source = &loaded.source;
    Checked {
        problems: loaded
            .problems
            .iter()
            .map(|p| format!("{source}: {p}"))
            .collect(),
        warnings: warnings(&loaded.settings)
            .iter()
            .map(|w| format!("{source}: warning: {w}"))
            .collect(),
        loaded: Some(loaded),
    }
}
