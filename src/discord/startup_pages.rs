//! Gives the kernel back the pages of the binary that only start-up ran.
//!
//! Start-up runs a great deal of code once: the migrations, the settings
//! and their schema, the reflexes' YAML, TLS set-up, logging in, command
//! registration, each server's arrival and backfill. The kernel maps a
//! binary's code around every page touched (fault-around, 64 KiB at a
//! time), so start-up leaves about 20 MB of the binary's 28 MB of code
//! resident, while the idle bot runs only a few hundred KiB of it and a
//! busy one about 10 MB.
//!
//! Once start-up has settled (a shard said READY, and [`SETTLE`] passed
//! with no other READY and no server arriving), [`Settler`] asks the kernel
//! once to page out the binary's code and read-only data (`MADV_PAGEOUT`,
//! Linux 5.4+). Quiet, not "every server arrived": a server in an outage
//! when the bot connects arrives only when it is over, maybe never, and a
//! bot in no server has none to wait for; waiting for them kept the pages
//! resident for good. What it guarantees:
//!
//! - nothing is lost: only the binary's read-only mappings are advised, and
//!   their pages are clean copies of the file, read back on their next use
//!   (a page also mapped by another process is left alone by the kernel);
//! - once per process: a server joining later does not evict the code the
//!   running bot uses;
//! - never fatal: an older kernel or another platform only logs why not.
//!
//! At the same moment it has the allocator (mimalloc) give back the heap
//! start-up used and freed: mimalloc returns freed pages to the kernel only
//! a second after, and only when it next allocates, which an idle bot
//! hardly does. Measured, 0.3–0.5 MB at 10 and 1,000 servers (README,
//! "Performance"); purging at every free (`MIMALLOC_PURGE_DELAY=0`) gave
//! 2.3 MB, but at the price of a system call for each page freed.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// How long start-up must have been quiet (no READY, no server arriving)
/// before its pages are given back: longer than serenity's 5 s between two
/// shards of one process, so a range's later shards count as start-up too.
pub(crate) const SETTLE: Duration = Duration::from_secs(10);

/// Waits for start-up to settle, then releases its pages, once.
#[derive(Clone, Default)]
pub(crate) struct Settler {
    arrived: Arc<Notify>,
}

impl Settler {
    /// Start-up goes on: a shard said READY, or one of its servers arrived.
    pub(crate) fn arrived(&self) {
        self.arrived.notify_one();
    }

    /// Runs until the pages are released: the first READY, then [`SETTLE`]
    /// without another READY or server.
    pub(crate) fn spawn(&self) -> tokio::task::JoinHandle<()> {
        let arrived = self.arrived.clone();
        tokio::spawn(async move {
            arrived.notified().await;
            while tokio::time::timeout(SETTLE, arrived.notified())
                .await
                .is_ok()
            {}
            let heap = release_heap();
            match release() {
                Ok(r) => tracing::info!(
                    "start-up settled: gave back {:.1} MB of code only start-up ran \
                     (resident {:.1} → {:.1} MB; it is read back from the binary if needed) \
                     and {:.1} MB of heap it freed",
                    r.released_kib() as f64 / 1024.0,
                    r.before_kib as f64 / 1024.0,
                    r.after_kib as f64 / 1024.0,
                    heap as f64 / 1024.0,
                ),
                Err(e) => tracing::debug!(error = %e, "start-up pages not given back"),
            }
        })
    }
}

/// The process's resident memory before and after, in KiB (`VmRSS`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Released {
    pub before_kib: u64,
    pub after_kib: u64,
}

impl Released {
    pub(crate) fn released_kib(&self) -> u64 {
        self.before_kib.saturating_sub(self.after_kib)
    }
}

/// Has mimalloc return to the kernel now every page it holds freed, rather
/// than at its next allocations; returns the resident KiB given back (0
/// where /proc cannot say). Where mimalloc is not the global allocator
/// (the library's tests) it has little to give.
pub(crate) fn release_heap() -> u64 {
    let before = resident_kib().unwrap_or(0);
    // SAFETY: mi_collect only frees memory mimalloc holds with nothing in
    // it; it is safe from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
    before.saturating_sub(resident_kib().unwrap_or(before))
}

/// Pages out this binary's code and read-only data now.
#[cfg(target_os = "linux")]
pub(crate) fn release() -> std::io::Result<Released> {
    let before_kib = resident_kib()?;
    let text = std::fs::read_to_string("/proc/self/maps")?;
    let maps: Vec<Mapping<'_>> = text.lines().filter_map(Mapping::parse).collect();
    let here = release as *const () as usize;
    let binary = maps
        .iter()
        .find(|m| m.start <= here && here < m.end)
        .map(|m| m.path)
        .ok_or_else(|| std::io::Error::other("this code's mapping is not in /proc/self/maps"))?;
    for m in &maps {
        if m.path != binary || !m.read_only_image() {
            continue;
        }
        // SAFETY: MADV_PAGEOUT is advice: it changes no byte of the mapping
        // (clean file pages are read back from the file when next touched),
        // and the range is exactly one whole mapping of this process's own
        // binary, taken from /proc/self/maps.
        let advised = unsafe {
            libc::madvise(
                m.start as *mut libc::c_void,
                m.end - m.start,
                libc::MADV_PAGEOUT,
            )
        };
        if advised != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(Released {
        before_kib,
        after_kib: resident_kib()?,
    })
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn release() -> std::io::Result<Released> {
    Err(std::io::Error::other("only on Linux"))
}

/// One line of /proc/self/maps: `start-end perms offset dev inode path`.
struct Mapping<'a> {
    start: usize,
    end: usize,
    perms: &'a str,
    offset: &'a str,
    path: &'a str,
}

impl<'a> Mapping<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let perms = fields.next()?;
        let offset = fields.next()?;
        let path = fields.nth(2)?;
        Some(Self {
            start: usize::from_str_radix(start, 16).ok()?,
            end: usize::from_str_radix(end, 16).ok()?,
            perms,
            offset,
            path,
        })
    }

    /// The code, and the constants the file starts with. The relocated
    /// read-only data after the code was written at load (its pages are
    /// the process's own now), and the writable data is the program's.
    fn read_only_image(&self) -> bool {
        self.perms == "r-xp"
            || (self.perms == "r--p" && u64::from_str_radix(self.offset, 16) == Ok(0))
    }
}

/// Resident KiB (`VmRSS`); an error where there is no /proc.
fn resident_kib() -> std::io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(kib)
        .ok_or_else(|| std::io::Error::other("no VmRSS in /proc/self/status"))
}

/// A `/proc` size field's value, `"  1234 kB"`, in KiB.
fn kib(value: &str) -> Option<u64> {
    value.trim().strip_suffix("kB")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maps_line_is_read_and_only_the_code_and_leading_constants_are_advised() {
        let code =
            Mapping::parse("55589cd47000-55589e948000 r-xp 009b6000 fe:00 5360532   /srv/ambient")
                .unwrap();
        assert_eq!(
            (code.start, code.end, code.path),
            (0x55589cd47000, 0x55589e948000, "/srv/ambient")
        );
        assert!(code.read_only_image());
        let constants =
            Mapping::parse("55589c390000-55589cd47000 r--p 00000000 fe:00 5360532 /srv/ambient")
                .unwrap();
        assert!(constants.read_only_image());
        let relocated =
            Mapping::parse("55589e948000-55589eb56000 r--p 025b6000 fe:00 5360532 /srv/ambient")
                .unwrap();
        assert!(!relocated.read_only_image());
        let data =
            Mapping::parse("55589eb56000-55589eb5f000 rw-p 027c4000 fe:00 5360532 /srv/ambient")
                .unwrap();
        assert!(!data.read_only_image());
        assert!(
            Mapping::parse("7ffd1000-7ffd2000 rw-p 00000000 00:00 0").is_none(),
            "anonymous: no path"
        );
    }

    /// Resident KiB of this test binary's code, from /proc/self/smaps.
    #[cfg(target_os = "linux")]
    fn code_resident_kib() -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let here = code_resident_kib as *const () as usize;
        let mut in_code = false;
        for line in smaps.lines() {
            if let Some(m) = Mapping::parse(line) {
                in_code = m.start <= here && here < m.end;
            } else if in_code && let Some(rss) = line.strip_prefix("Rss:") {
                return kib(rss).unwrap();
            }
        }
        panic!("this code's mapping is not in /proc/self/smaps")
    }

    #[test]
    fn the_heap_freed_is_given_back_and_what_is_in_use_is_kept() {
        const BLOCKS: usize = 16 * 1024;
        // SAFETY: blocks of mimalloc's own, each written within its 1 KiB
        // and freed once; `kept` is read back before it is freed.
        unsafe {
            let kept = libmimalloc_sys::mi_malloc(64).cast::<u8>();
            assert!(!kept.is_null());
            kept.write_bytes(7, 64);
            let blocks: Vec<*mut u8> = (0..BLOCKS)
                .map(|_| {
                    let b = libmimalloc_sys::mi_malloc(1024).cast::<u8>();
                    assert!(!b.is_null());
                    b.write_bytes(1, 1024);
                    b
                })
                .collect();
            for b in blocks {
                libmimalloc_sys::mi_free(b.cast());
            }
            let given = release_heap();
            assert!(
                given >= (BLOCKS / 2) as u64,
                "16 MiB freed, {given} KiB given back"
            );
            assert_eq!(*kept.add(63), 7, "a block in use is untouched");
            libmimalloc_sys::mi_free(kept.cast());
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn releasing_pages_out_the_code_and_the_program_runs_on() {
        let before = code_resident_kib();
        release().expect("Linux 5.4+ pages out");
        let after = code_resident_kib();
        assert!(
            after < before,
            "code resident {before} KiB before, {after} KiB after"
        );
        // The code just paged out runs again, read back from the file.
        assert_eq!(
            Mapping::parse("1-2 r-xp 0 0 0 /x").map(|m| m.path),
            Some("/x")
        );
    }
}
