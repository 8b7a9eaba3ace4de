//! One running bot per data directory.
//!
//! Two processes on the same data would both run garden cycles, both post
//! initiative thoughts and both answer every message. The running bot holds
//! an exclusive OS lock on `<dataDir>/ambient.lock` (released by the OS when
//! the process ends, however it ends), with its pid inside so the refusal
//! can say who holds it. Read-only verbs (`ambient journal`, `status`, …)
//! do not take the lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

pub(crate) const LOCK_FILE: &str = "ambient.lock";

#[derive(Debug)]
pub(crate) struct DataLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    #[error(
        "another ambient process{holder} is already running on the data directory {dir}; \
         stop it first, or point storage.dataDir somewhere else"
    )]
    Held { dir: String, holder: String },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl DataLock {
    pub(crate) fn acquire(data_dir: &Path) -> Result<DataLock, LockError> {
        let path = data_dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(data_dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut pid = String::new();
                // Harmless: an unreadable pid only makes the message vaguer.
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(LockError::Held {
                    dir: data_dir.display().to_string(),
                    holder: if pid.is_empty() {
                        String::new()
                    } else {
                        format!(" (pid {pid})")
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(DataLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataLock::acquire(dir.path()).unwrap();
        let err = DataLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains(&format!("(pid {})", std::process::id())),
            "{err}"
        );
        assert!(
            err.contains("already running on the data directory"),
            "{err}"
        );
        drop(first);
        assert!(DataLock::acquire(dir.path()).is_ok());
    }
}
