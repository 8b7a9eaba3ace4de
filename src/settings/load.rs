//! Reading the settings file.
//!
//! An explicitly named file must exist; the default `settings.json` is
//! optional, and without it the built-in defaults apply. JSON syntax errors
//! name the file, line and column; everything else is a validation
//! [`Problem`] collected by `validate`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::schema::Settings;
use super::validate::{Problem, validate};

pub const DEFAULT_FILE: &str = "settings.json";

#[derive(Clone, Debug, PartialEq)]
pub enum SettingsSource {
    File(PathBuf),
    /// No file: `settings.json` was absent and none was named.
    Defaults,
}

impl std::fmt::Display for SettingsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsSource::File(p) => write!(f, "{}", p.display()),
            SettingsSource::Defaults => write!(f, "built-in defaults (no {DEFAULT_FILE})"),
        }
    }
}

#[derive(Debug)]
pub struct Loaded {
    pub settings: Settings,
    pub source: SettingsSource,
    pub problems: Vec<Problem>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read the settings file: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: not valid JSON: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

/// Loads `explicit` if given (it must exist), else `settings.json` if present, else defaults.
pub fn load(explicit: Option<&Path>) -> Result<Loaded, LoadError> {
    match explicit {
        Some(path) => load_file(path),
        None if Path::new(DEFAULT_FILE).exists() => load_file(Path::new(DEFAULT_FILE)),
        None => Ok(Loaded {
            settings: Settings::default(),
            source: SettingsSource::Defaults,
            problems: Vec::new(),
        }),
    }
}

pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let (settings, problems) = parse_str(&text).map_err(|e| LoadError::Syntax {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column().max(1),
        message: strip_position(&e.to_string()),
    })?;
    Ok(Loaded {
        settings,
        source: SettingsSource::File(path.to_path_buf()),
        problems,
    })
}

/// Parses and validates settings text (a leading byte-order mark is allowed).
pub fn parse_str(text: &str) -> Result<(Settings, Vec<Problem>), serde_json::Error> {
    let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))?;
    Ok(validate(&value))
}

/// serde_json appends " at line X column Y"; we print the position up front instead.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_name_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, "{\n  \"bot\": {\n    \"name\": \"x\",\n  }\n}\n").unwrap();
        let err = load(Some(&path)).unwrap_err().to_string();
        assert!(err.contains("bad.json:4:3: not valid JSON"), "{err}");
    }

    #[test]
    fn a_named_file_must_exist() {
        let err = load(Some(Path::new("/nonexistent/settings.json"))).unwrap_err();
        assert!(
            err.to_string().contains("cannot read the settings file"),
            "{err}"
        );
    }
}
