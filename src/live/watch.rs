//! Noticing that the settings file or the reflexes folder changed on disk.
//!
//! A poll, not file-system events: every [`POLL_EVERY`] the settings file is
//! read again by its path and the reflexes folder is listed (names, sizes,
//! modification times). Reading by path follows an editor that writes a
//! temporary file and renames it over the original (an inotify watch on
//! the old file would go on watching the replaced inode), works the same on
//! bind mounts and network file systems where events are not delivered, and
//! needs no watcher limits. The settings file is compared by its whole
//! content (at most 1 MiB, read with the settings loader's limits), so even
//! an edit that keeps the size and the second is seen.
//!
//! A change counts once it has settled: two polls in a row saw the same
//! thing ([`Settle`]), so a file caught half-written is not acted on while
//! it is still being written. A file that stays broken is then checked and
//! refused as a whole, and the settings in effect stay.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::settings::load::{MAX_SETTINGS_BYTES, open_limited};

/// How often the files are looked at.
pub(crate) const POLL_EVERY: Duration = Duration::from_secs(2);

/// What one poll saw of the settings file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FileLook {
    Missing,
    /// Not readable now (too large, not a plain file, no permission): the reload says why.
    Unreadable(String),
    Content(Vec<u8>),
}

/// The settings file at `path`, read whole (within the loader's limits).
pub(crate) fn look_file(path: &Path) -> FileLook {
    let file = match open_limited(path, MAX_SETTINGS_BYTES) {
        Ok(f) => f,
        Err(crate::settings::load::FileError::Io(e))
            if e.kind() == std::io::ErrorKind::NotFound =>
        {
            return FileLook::Missing;
        }
        Err(e) => return FileLook::Unreadable(e.to_string()),
    };
    let mut bytes = Vec::new();
    match file.take(MAX_SETTINGS_BYTES + 1).read_to_end(&mut bytes) {
        Ok(_) => FileLook::Content(bytes),
        Err(e) => FileLook::Unreadable(e.to_string()),
    }
}

/// What one poll saw of a folder: its path and each entry's name, size and modification time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FolderLook {
    pub dir: PathBuf,
    pub entries: Result<Vec<(String, u64, Option<SystemTime>)>, String>,
}

/// The reflexes folder's listing (a missing folder is an empty listing's
/// error, so creating it is a change too).
pub(crate) fn look_folder(dir: &Path) -> FolderLook {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())
        .map(|read| {
            let mut entries: Vec<_> = read
                .filter_map(Result::ok)
                .map(|e| {
                    let meta = e.metadata().ok();
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        meta.as_ref().map_or(0, |m| m.len()),
                        meta.and_then(|m| m.modified().ok()),
                    )
                })
                .collect();
            entries.sort();
            entries
        });
    FolderLook {
        dir: dir.to_path_buf(),
        entries,
    }
}

/// Lets a look through once it stopped changing: the same at two polls in a row.
#[derive(Debug)]
pub(crate) struct Settle<T> {
    last: Option<T>,
}

impl<T> Default for Settle<T> {
    fn default() -> Self {
        Self { last: None }
    }
}

impl<T: PartialEq> Settle<T> {
    /// Feeds this poll's look; returns it once it equals the previous poll's.
    pub(crate) fn feed(&mut self, look: T) -> Option<&T> {
        let settled = self.last.as_ref() == Some(&look);
        self.last = Some(look);
        if settled { self.last.as_ref() } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_counts_once_two_polls_agree() {
        let mut s = Settle::default();
        assert_eq!(s.feed("half"), None, "first sight: may still be written");
        assert_eq!(s.feed("half-written"), None, "still changing");
        assert_eq!(s.feed("half-written"), Some(&"half-written"));
        assert_eq!(s.feed("half-written"), Some(&"half-written"));
        assert_eq!(s.feed("new"), None);
    }

    #[test]
    fn a_file_replaced_by_rename_is_read_anew() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        assert_eq!(look_file(&path), FileLook::Missing);
        std::fs::write(&path, "{\"a\": 1}").unwrap();
        assert_eq!(look_file(&path), FileLook::Content(b"{\"a\": 1}".to_vec()));
        // An editor's save: a temporary file renamed over the original.
        let tmp = dir.path().join(".settings.json.swp");
        std::fs::write(&tmp, "{\"a\": 2}").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_eq!(look_file(&path), FileLook::Content(b"{\"a\": 2}".to_vec()));
        let folder = dir.path().join("folder.json");
        std::fs::create_dir(&folder).unwrap();
        assert!(matches!(look_file(&folder), FileLook::Unreadable(why) if why.contains("folder")));
    }

    #[test]
    fn a_folder_look_changes_with_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let before = look_folder(dir.path());
        std::fs::write(dir.path().join("greeting.yaml"), "x").unwrap();
        let after = look_folder(dir.path());
        assert_ne!(before, after);
        assert_eq!(after, look_folder(dir.path()));
        assert!(look_folder(&dir.path().join("none")).entries.is_err());
    }
}
