//! A real small filesystem for a bot's data directory (a tmpfs, mounted
//! by the test as root): for what a nearly full or full disk does to the
//! bot (`ambient doctor`'s disk check, `/readyz`). Where this machine
//! refuses `mount`, [`Tmpfs::mount`] says so and the test skips.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted on a directory for as long as this lives: a real small
/// filesystem for the data directory, with as much free space as a test says.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts one on `dir` (made if missing); `None`, said on stderr, where
    /// this machine refuses `mount` (not root, or a container without the right).
    pub fn mount(dir: &Path) -> Option<Self> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"])
            .arg(dir)
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Self(dir.to_path_buf())),
            Ok(out) => {
                let why = String::from_utf8_lossy(&out.stderr);
                eprintln!("cannot mount a tmpfs on {}: {}", dir.display(), why.trim());
                None
            }
            Err(e) => {
                eprintln!("cannot run mount: {e}");
                None
            }
        }
    }

    /// Resizes it so that exactly `free` bytes (a multiple of 4 KiB) are free
    /// beside what its files already take.
    pub fn leave_free(&self, free: u64) {
        let stat = Command::new("stat")
            .args(["-f", "-c", "%b %a %S"])
            .arg(&self.0)
            .output()
            .unwrap();
        let numbers: Vec<u64> = String::from_utf8_lossy(&stat.stdout)
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        let [blocks, available, block] = numbers[..] else {
            panic!("stat -f said {numbers:?}");
        };
        let used = (blocks - available) * block;
        let resized = Command::new("mount")
            .args(["-o", &format!("remount,size={}", used + free)])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(resized.success(), "cannot resize the tmpfs");
        assert_eq!(ambient::doctor::local::statvfs_free(&self.0).unwrap(), free);
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a test that failed may have left the bot's files open there.
        let unmounted = Command::new("umount").arg("-l").arg(&self.0).status();
        if !unmounted.is_ok_and(|s| s.success()) {
            eprintln!("could not unmount the tmpfs on {}", self.0.display());
        }
    }
}
