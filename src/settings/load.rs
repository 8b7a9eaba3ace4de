//! Reading the settings file.
//!
//! An explicitly named file must exist; the default `settings.json` is
//! optional, and without it the built-in defaults apply. JSON syntax errors
//! name the file, line and column; everything else is a validation
//! [`Problem`] collected by `validate`.
//!
//! Files from outside are read through [`read_limited`]: only plain files, and
//! never more than a limit (a settings file is at most [`MAX_SETTINGS_BYTES`]),
//! so a FIFO cannot hang the reader and `/dev/zero` cannot fill memory.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::schema::Settings;
use super::validate::{Problem, validate};

pub(crate) const DEFAULT_FILE: &str = "settings.json";

/// The largest settings file read: the example is about 10 KiB, so this is
/// generous, and small enough that a mistaken file is refused at once.
pub(crate) const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// Why a file from outside was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("it is {0}, not a regular file; only plain files are read")]
    NotRegular(&'static str),
    #[error("it is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("it is not UTF-8 text (the first bad byte is at offset {0})")]
    NotUtf8(usize),
}

/// Reads a plain file of at most `limit` bytes as text. The kind and size are
/// checked before opening and again on the opened file (the open itself never
/// waits, see [`open_limited`]), and the read itself stops after `limit + 1`
/// bytes, so a file that grows or lies about its size is still refused
/// without being read whole.
pub(crate) fn read_limited(path: &Path, limit: u64) -> Result<String, FileError> {
    let file = open_limited(path, limit)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|e| FileError::NotUtf8(e.utf8_error().valid_up_to()))
}

/// Opens a plain file of at most `limit` bytes, for a reader that streams it
/// (and so must stop at `limit` itself): the checks of [`read_limited`].
///
/// The check before opening is not enough on its own: a FIFO renamed over
/// the path between it and the open made the open wait for a writer for
/// ever (a live reload wedged so, and with it every later reload and the
/// stop). So the open itself never waits ([`open_nonblocking`]), and what
/// was opened is what the second check looks at.
pub(crate) fn open_limited(path: &Path, limit: u64) -> Result<std::fs::File, FileError> {
    check_kind(&std::fs::metadata(path)?, limit)?;
    let file = open_nonblocking(path)?;
    check_kind(&file.metadata()?, limit)?;
    Ok(file)
}

/// Opens `path` for reading without waiting: `O_NONBLOCK` makes opening a
/// FIFO with no writer return at once. A regular file reads the same with
/// it (the flag changes nothing for regular files), and anything else is
/// refused by the caller's check on the opened file.
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

fn check_kind(meta: &std::fs::Metadata, limit: u64) -> Result<(), FileError> {
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(FileError::NotRegular(describe_kind(&kind)));
    }
    if meta.len() > limit {
        return Err(FileError::TooLarge { limit });
    }
    Ok(())
}

fn describe_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        } else if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        } else if kind.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

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
    Read { path: PathBuf, source: FileError },
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

pub(crate) fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let text = read_limited(path, MAX_SETTINGS_BYTES).map_err(|source| LoadError::Read {
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
pub(crate) fn parse_str(text: &str) -> Result<(Settings, Vec<Problem>), serde_json::Error> {
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

    #[test]
    fn files_over_the_limit_are_refused_without_being_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, "x".repeat(11)).unwrap();
        let err = read_limited(&path, 10).unwrap_err().to_string();
        assert_eq!(err, "it is larger than the limit of 10 bytes");
        assert_eq!(read_limited(&path, 11).unwrap().len(), 11);
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_fifos_are_refused_before_opening() {
        let err = read_limited(Path::new("/dev/zero"), 10).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is a device, not a regular file; only plain files are read"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        // Opening a FIFO with no writer would block: this returns only because it is not opened.
        let err = read_limited(&fifo, 10).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is a FIFO (named pipe), not a regular file; only plain files are read"
        );
    }

    /// What a FIFO renamed over the path after the first check meets: the
    /// open returns at once (a plain open would wait for a writer for ever)
    /// and the check on the opened file refuses it.
    #[cfg(unix)]
    #[test]
    fn a_fifo_that_slips_past_the_first_check_is_opened_without_waiting_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("settings.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let opened = open_nonblocking(&fifo).unwrap();
        let err = check_kind(&opened.metadata().unwrap(), 10).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is a FIFO (named pipe), not a regular file; only plain files are read"
        );
        let plain = dir.path().join("plain.json");
        std::fs::write(&plain, "{}").unwrap();
        let mut text = String::new();
        open_nonblocking(&plain)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "{}", "a regular file reads as without the flag");
    }

    #[test]
    fn text_that_is_not_utf8_names_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.json");
        std::fs::write(&path, b"{\"a\xff").unwrap();
        let err = read_limited(&path, 100).unwrap_err().to_string();
        assert_eq!(
            err,
            "it is not UTF-8 text (the first bad byte is at offset 3)"
        );
    }
}
