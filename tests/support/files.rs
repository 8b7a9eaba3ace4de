//! Looking through a directory as someone hunting for a leak would: every
//! file under it (the database, its `-wal` and `-shm`, anything else), as
//! raw bytes.

use std::path::Path;

/// The files under `dir` whose bytes hold `needle`.
pub fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    files_where(dir, &|bytes| {
        bytes.windows(needle.len()).any(|w| w == needle)
    })
}

/// The files under `dir` whose bytes hold `needle` in any (ASCII) letter
/// case: a full-text index may keep a word folded.
pub fn files_containing_any_case(dir: &Path, needle: &[u8]) -> Vec<String> {
    files_where(dir, &|bytes| {
        bytes
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
    })
}

fn files_where(dir: &Path, holds: &dyn Fn(&[u8]) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_where(&path, holds));
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) if holds(&bytes) => found.push(path.display().to_string()),
            Ok(_) => {}
            // SQLite removes its -shm and -wal files as a connection closes.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("cannot read {}: {e}", path.display()),
        }
    }
    found
}
