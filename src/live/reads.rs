//! The file-system reads of live reload — the settings file, checked, and
//! the reflexes folder's listing — with the file system's patience bounded.
//!
//! A read runs on the blocking pool and is waited for at most `within`. A
//! read that outlives its wait cannot be stopped (its thread is stuck in a
//! system call on a file system that stopped answering): it is kept, and no
//! other read starts until it has ended. Else every poll after a hung mount
//! would strand one more thread, every few seconds, until tokio's blocking
//! threads ran out and nothing else in the bot could touch the store.
//!
//! The reads go through [`Disk`], the local file system in the bot; tests
//! put one that stops answering in its place.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::watch::{self, FileLook, FolderLook};
use crate::settings::check::{Checked, check};

/// What live reload reads.
pub(crate) trait Disk: Send + Sync + 'static {
    /// The settings file's bytes, as the watcher compares them.
    fn look_file(&self, path: &Path) -> FileLook;
    /// A folder's listing.
    fn look_folder(&self, dir: &Path) -> FolderLook;
    /// The settings file read and checked as `settings check` does.
    fn check(&self, file: Option<&Path>) -> Checked;
}

/// The local file system.
pub(crate) struct FileSystem;

impl Disk for FileSystem {
    fn look_file(&self, path: &Path) -> FileLook {
        watch::look_file(path)
    }

    fn look_folder(&self, dir: &Path) -> FolderLook {
        watch::look_folder(dir)
    }

    fn check(&self, file: Option<&Path>) -> Checked {
        check(file)
    }
}

/// Why a read gave nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotRead {
    /// It did not end within its time; it goes on, and is waited for.
    #[error("not read within {} (the file system did not answer)", shown(*.0))]
    Late(Duration),
    /// An earlier read has not ended: no other starts until it has.
    #[error(
        "not read: a read started {} ago has not ended (the file system does not answer); \
         it is read again once that one ends",
        shown(*.0)
    )]
    Waiting(Duration),
}

/// "10 s", or "50 ms" under a second.
fn shown(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The reads, one stuck read at most (see the module comment).
pub(crate) struct Reads {
    disk: Arc<dyn Disk>,
    within: Duration,
    /// The reads that outlived their wait, with when they started.
    stuck: Mutex<Vec<(AbortHandle, Instant)>>,
}

impl Reads {
    pub(crate) fn new(disk: Arc<dyn Disk>, within: Duration) -> Self {
        Self {
            disk,
            within,
            stuck: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` on the disk off the async threads, unless an earlier read
    /// is still stuck; waits for it at most `within`.
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Disk) -> T + Send + 'static,
    ) -> Result<T, NotRead> {
        if let Some(since) = self.still_stuck() {
            return Err(NotRead::Waiting(since.elapsed()));
        }
        let (disk, started) = (self.disk.clone(), Instant::now());
        let mut read = tokio::task::spawn_blocking(move || f(&*disk));
        match tokio::time::timeout(self.within, &mut read).await {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled: only the runtime's end does that, and nothing reads after it.
            Ok(Err(_)) => Err(NotRead::Late(self.within)),
            Err(_) => {
                self.lock().push((read.abort_handle(), started));
                Err(NotRead::Late(self.within))
            }
        }
    }

    /// When the oldest read still stuck started, forgetting those that ended.
    fn still_stuck(&self) -> Option<Instant> {
        let mut stuck = self.lock();
        stuck.retain(|(read, _)| !read.is_finished());
        stuck.first().map(|(_, since)| *since)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(AbortHandle, Instant)>> {
        self.stuck.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Condvar;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The local file system, but every read waits while the disk is held:
    /// a mount that stopped answering, until it is let go.
    #[derive(Default)]
    pub(crate) struct HeldDisk {
        held: Mutex<bool>,
        let_go: Condvar,
        /// Reads started.
        pub(crate) reads: AtomicUsize,
    }

    /// The disk held until this is dropped (a failing test lets its reads
    /// go too, or the runtime's end would wait for them for ever).
    pub(crate) struct Held(Arc<HeldDisk>);

    impl Drop for Held {
        fn drop(&mut self) {
            *self.0.held.lock().unwrap_or_else(|p| p.into_inner()) = false;
            self.0.let_go.notify_all();
        }
    }

    impl HeldDisk {
        pub(crate) fn hold(self: &Arc<Self>) -> Held {
            *self.held.lock().unwrap() = true;
            Held(self.clone())
        }

        fn wait(&self) {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let mut held = self.held.lock().unwrap();
            while *held {
                held = self.let_go.wait(held).unwrap();
            }
        }
    }

    impl Disk for HeldDisk {
        fn look_file(&self, path: &Path) -> FileLook {
            self.wait();
            watch::look_file(path)
        }

        fn look_folder(&self, dir: &Path) -> FolderLook {
            self.wait();
            watch::look_folder(dir)
        }

        fn check(&self, file: Option<&Path>) -> Checked {
            check(file)
        }
    }

    /// Reads again (for up to 10 s) until one is let through.
    async fn until_read<T: Send + 'static>(
        reads: &Reads,
        f: impl Fn(&dyn Disk) -> T + Send + Sync + Clone + 'static,
    ) -> T {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match reads.read(f.clone()).await {
                Ok(t) => return t,
                Err(NotRead::Waiting(_)) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => panic!("the read never went through: {e}"),
            }
        }
    }

    #[tokio::test]
    async fn a_stuck_read_is_waited_for_and_no_other_starts_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let disk = Arc::new(HeldDisk::default());
        let reads = Reads::new(disk.clone(), Duration::from_millis(50));
        let look = {
            let dir = dir.path().to_path_buf();
            move |d: &dyn Disk| d.look_folder(&dir)
        };
        let held = disk.hold();
        assert_eq!(
            reads.read(look.clone()).await.unwrap_err(),
            NotRead::Late(Duration::from_millis(50))
        );
        for _ in 0..20 {
            let e = reads.read(look.clone()).await.unwrap_err();
            assert!(matches!(e, NotRead::Waiting(_)), "{e}");
        }
        assert_eq!(
            disk.reads.load(Ordering::SeqCst),
            1,
            "a read started while one was stuck"
        );
        drop(held);
        let listing = until_read(&reads, look).await;
        assert_eq!(listing.dir, dir.path());
        assert_eq!(
            disk.reads.load(Ordering::SeqCst),
            2,
            "the stuck read, then one more"
        );
    }

    #[test]
    fn the_reasons_say_how_long() {
        assert_eq!(
            NotRead::Late(Duration::from_secs(10)).to_string(),
            "not read within 10 s (the file system did not answer)"
        );
        assert!(
            NotRead::Waiting(Duration::from_millis(12_300))
                .to_string()
                .starts_with("not read: a read started 12 s ago has not ended")
        );
    }
}
