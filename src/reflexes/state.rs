//! The files reflexes may read and write: `<dataDir>/state/guilds/<guild>/`
//! (or `state/dm/<user>/` in direct messages).
//!
//! A reflex's `read_file` / `write_file` path is untrusted text (it may be
//! built from a message), so it is checked before any file is touched: no
//! absolute paths, no `..`, no drive prefixes, nothing that resolves (through
//! a symlink, say) outside the folder. Each guild has its own folder so one
//! guild's reflexes never see another's files. Writes are atomic (a temporary
//! file renamed into place), so a crash never leaves half a file.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

/// The largest file a reflex may read or write.
pub(crate) const MAX_FILE_BYTES: usize = 1_000_000;

pub(crate) struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// `data_dir/state/<scope>`, where scope is `guilds/<id>` or `dm/<id>`.
    pub(crate) fn new(data_dir: &Path, scope: &str) -> Self {
        Self {
            root: data_dir.join("state").join(scope),
        }
    }

    /// Where `rel` lives, if it stays inside the folder.
    pub(crate) fn resolve(&self, rel: &str) -> Result<PathBuf, StateError> {
        let rel = rel.trim();
        if rel.is_empty() {
            return Err(StateError::EmptyPath);
        }
        let path = Path::new(rel);
        for part in path.components() {
            match part {
                Component::Normal(_) | Component::CurDir => {}
                Component::ParentDir => return Err(StateError::LeavesFolder(rel.into())),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(StateError::Absolute(rel.into()));
                }
            }
        }
        let full = self.root.join(path);
        // A symlink planted inside the folder must not lead out of it.
        std::fs::create_dir_all(&self.root).map_err(StateError::CreateRoot)?;
        let root = self.root.canonicalize().map_err(StateError::ResolveRoot)?;
        let mut existing = full.clone();
        while !existing.exists() {
            if !existing.pop() {
                break;
            }
        }
        let resolved = existing
            .canonicalize()
            .map_err(|source| StateError::Resolve {
                rel: rel.into(),
                source,
            })?;
        if !resolved.starts_with(&root) {
            return Err(StateError::Outside(rel.into()));
        }
        Ok(full)
    }

    /// The file's text; a file that does not exist yet reads as empty, so a
    /// reflex can keep a counter or a list without creating it first.
    pub(crate) fn read(&self, rel: &str) -> Result<String, StateError> {
        let path = self.resolve(rel)?;
        let cannot = |source| StateError::Read {
            rel: rel.into(),
            source,
        };
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
            Err(e) => return Err(cannot(e)),
            Ok(m) if m.is_dir() => return Err(StateError::Folder(rel.into())),
            Ok(m) if m.len() as usize > MAX_FILE_BYTES => {
                return Err(StateError::TooLarge(rel.into()));
            }
            Ok(_) => {}
        }
        let bytes = std::fs::read(&path).map_err(cannot)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub(crate) fn write(&self, rel: &str, content: &str) -> Result<(), StateError> {
        if content.len() > MAX_FILE_BYTES {
            return Err(StateError::WriteTooLarge {
                bytes: content.len(),
                rel: rel.into(),
            });
        }
        let path = self.resolve(rel)?;
        let parent = path
            .parent()
            .ok_or_else(|| StateError::NoFolder(rel.into()))?;
        std::fs::create_dir_all(parent).map_err(|source| StateError::CreateFolder {
            rel: rel.into(),
            source,
        })?;
        // Created folders are re-checked: a symlinked parent could only be seen once it exists.
        self.resolve(rel)?;
        let cannot = |source| StateError::Write {
            rel: rel.into(),
            source,
        };
        let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(cannot)?;
        tmp.write_all(content.as_bytes()).map_err(cannot)?;
        tmp.persist(&path).map_err(|e| cannot(e.error))?;
        Ok(())
    }
}

/// Why a reflex's file could not be read or written; `rel` is the path as
/// the reflex gave it, so the failed step names what it asked for.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateError {
    #[error("the path is empty")]
    EmptyPath,
    #[error("{0:?} is refused: `..` would leave the reflex state folder")]
    LeavesFolder(String),
    #[error("{0:?} is refused: paths are relative to the reflex state folder, not absolute")]
    Absolute(String),
    #[error("{0:?} is refused: it resolves outside the reflex state folder")]
    Outside(String),
    #[error("cannot create the state folder: {0}")]
    CreateRoot(std::io::Error),
    #[error("cannot resolve the state folder: {0}")]
    ResolveRoot(std::io::Error),
    #[error("cannot resolve {rel:?}: {source}")]
    Resolve { rel: String, source: std::io::Error },
    #[error("cannot read {rel:?}: {source}")]
    Read { rel: String, source: std::io::Error },
    #[error("{0:?} is a folder, not a file")]
    Folder(String),
    #[error("{0:?} is larger than {max} bytes", max = MAX_FILE_BYTES)]
    TooLarge(String),
    #[error("refusing to write {bytes} bytes to {rel:?}: the limit is {max}", max = MAX_FILE_BYTES)]
    WriteTooLarge { bytes: usize, rel: String },
    #[error("{0:?} has no folder")]
    NoFolder(String),
    #[error("cannot create the folder for {rel:?}: {source}")]
    CreateFolder { rel: String, source: std::io::Error },
    #[error("cannot write {rel:?}: {source}")]
    Write { rel: String, source: std::io::Error },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_leave_the_folder_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path(), "guilds/1");
        for bad in ["../../etc/passwd", "/etc/passwd", "a/../../b", ""] {
            assert!(state.write(bad, "x").is_err(), "{bad} must be refused");
        }
        assert!(!dir.path().join("etc").exists());
        state.write("notes/today.txt", "hello").unwrap();
        assert_eq!(state.read("notes/today.txt").unwrap(), "hello");
        assert_eq!(state.read("never-written.txt").unwrap(), "");
        assert!(dir.path().join("state/guilds/1/notes/today.txt").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path(), "guilds/1");
        std::fs::create_dir_all(dir.path().join("state/guilds/1")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("state/guilds/1/escape"))
            .unwrap();
        let err = state.write("escape/x.txt", "x").unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
        assert!(!outside.path().join("x.txt").exists());
    }
}
