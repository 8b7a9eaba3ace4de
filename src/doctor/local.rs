//! Checks of this machine: the settings, the data directory, free disk and
//! the database's own quick check.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{Check, FreeSpace};
use crate::settings::check::Checked;
use crate::store::DB_FILE;

/// Below this the bot cannot be trusted to write (a message stored, a backup): ✗.
pub(crate) const DISK_FLOOR: u64 = 256 * 1024 * 1024;
/// Below this, a warning: a busy year of messages is a few hundred MiB.
pub(crate) const DISK_WARN: u64 = 2 * 1024 * 1024 * 1024;

/// What `ambient settings check` says, as one line.
pub(crate) fn settings(checked: &Checked) -> Check {
    let source = checked
        .loaded
        .as_ref()
        .map_or_else(|| "the settings".to_string(), |l| l.source.to_string());
    if let Some(first) = checked.problems.first() {
        let more = checked.problems.len() - 1;
        let detail = match more {
            0 => first.clone(),
            n => format!("{first} (and {n} more)"),
        };
        return Check::fail(
            "settings",
            detail,
            "run `ambient settings check` and correct every problem it lists",
        );
    }
    match checked.warnings.len() {
        0 => Check::ok("settings", format!("{source}: valid")),
        n => Check::warn(
            "settings",
            format!("{source}: valid, {n} warning(s): {}", checked.warnings[0]),
            "run `ambient settings check` to see what is ignored as written",
        ),
    }
}

/// The data directory exists and a file can be made in it.
pub(crate) fn data_dir(dir: &Path) -> Check {
    let name = "data directory";
    if !dir.exists() {
        return Check::warn(
            name,
            format!("{} does not exist yet", dir.display()),
            "nothing to do: the bot makes it when it first starts",
        );
    }
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    match std::fs::write(&probe, b"ambient doctor") {
        Ok(()) => {
            // Harmless: a probe left behind is a few bytes with a name that says what it is.
            let _ = std::fs::remove_file(&probe);
            Check::ok(name, format!("{} is writable", dir.display()))
        }
        Err(e) => Check::fail(
            name,
            format!("cannot write in {}: {e}", dir.display()),
            "give the user the bot runs as write access to it (or set storage.dataDir to a directory it owns)",
        ),
    }
}

/// Free space on the data directory's filesystem (its nearest existing
/// ancestor's, before the bot made it).
pub(crate) fn disk(dir: &Path, free_space: FreeSpace) -> Check {
    let name = "free disk";
    let existing = dir.ancestors().find(|p| p.exists()).unwrap_or(dir);
    let free = match free_space(existing) {
        Ok(free) => free,
        Err(e) => {
            return Check::warn(
                name,
                format!("cannot read the free space of {}: {e}", existing.display()),
                "check it yourself with `df -h`",
            );
        }
    };
    let detail = format!("{} free for {}", mib(free), existing.display());
    if free < DISK_FLOOR {
        Check::fail(
            name,
            detail,
            format!(
                "free space on that filesystem (at least {}; `ambient status` shows what the bot keeps)",
                mib(DISK_FLOOR)
            ),
        )
    } else if free < DISK_WARN {
        Check::warn(
            name,
            detail,
            format!(
                "free space on that filesystem before it falls under {}",
                mib(DISK_FLOOR)
            ),
        )
    } else {
        Check::ok(name, detail)
    }
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes / (1024 * 1024))
}

/// The filesystem's free bytes for an unprivileged user, from `statvfs`.
pub fn statvfs_free(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut s = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a valid NUL-terminated path and `s` is written whole on success.
    let rc = unsafe { libc::statvfs(c.as_ptr(), s.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled `s`.
    let s = unsafe { s.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    Ok((s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
}

/// `PRAGMA quick_check` of the database, opened read-only (never made or migrated here).
pub(crate) fn database(dir: &Path) -> Check {
    let name = "database";
    let path = dir.join(DB_FILE);
    if !path.exists() {
        return Check::warn(
            name,
            format!("{} does not exist yet", path.display()),
            "nothing to do: the bot makes it when it first starts",
        );
    }
    let fix = "stop the bot and restore the newest backup with `ambient restore FILE`";
    let checked = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0)));
    match checked {
        Ok(ok) if ok == "ok" => Check::ok(name, format!("{}: quick check ok", path.display())),
        Ok(problem) => Check::fail(
            name,
            format!("{}: quick check found: {problem}", path.display()),
            fix,
        ),
        Err(e) => Check::fail(name, format!("{}: {e}", path.display()), fix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn free(bytes: u64) -> impl Fn(&Path) -> std::io::Result<u64> {
        move |_| Ok(bytes)
    }

    /// The line a person reads: mark, name and detail, then the fix under it.
    fn shown(c: &Check) -> String {
        let line = format!("{} {}: {}", c.status.mark(), c.name, c.detail);
        match &c.fix {
            Some(fix) => format!("{line}\n    → {fix}"),
            None => line,
        }
    }

    #[test]
    fn free_space_under_the_floor_fails_under_the_warning_level_warns() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().display();
        let nearly_full = disk(dir.path(), &free(10 * 1024 * 1024));
        assert_eq!(nearly_full.status, Status::Fail);
        assert_eq!(
            shown(&nearly_full),
            format!(
                "✗ free disk: 10 MiB free for {at}\n    → free space on that filesystem \
                 (at least 256 MiB; `ambient status` shows what the bot keeps)"
            )
        );
        let low = disk(dir.path(), &free(DISK_WARN - 1));
        assert_eq!(
            shown(&low),
            format!(
                "! free disk: 2047 MiB free for {at}\n    → free space on that filesystem \
                 before it falls under 256 MiB"
            )
        );
        assert_eq!(disk(dir.path(), &free(DISK_FLOOR - 1)).status, Status::Fail);
        assert_eq!(disk(dir.path(), &free(DISK_FLOOR)).status, Status::Warn);
        let plenty = disk(dir.path(), &free(50 * 1024 * 1024 * 1024));
        assert_eq!(
            shown(&plenty),
            format!("✓ free disk: 51200 MiB free for {at}")
        );
    }

    #[test]
    fn a_directory_not_made_yet_is_read_on_its_nearest_existing_parent() {
        let dir = tempfile::tempdir().unwrap();
        let asked = std::cell::RefCell::new(Vec::new());
        let reading = |p: &Path| -> std::io::Result<u64> {
            asked.borrow_mut().push(p.to_path_buf());
            Ok(DISK_WARN)
        };
        let check = disk(&dir.path().join("not/yet"), &reading);
        assert_eq!(asked.into_inner(), vec![dir.path().to_path_buf()]);
        assert_eq!(check.status, Status::Ok, "{check:?}");
    }

    #[test]
    fn a_reading_that_fails_is_a_warning_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let broken =
            |_: &Path| -> std::io::Result<u64> { Err(std::io::Error::other("statvfs: I/O error")) };
        let check = disk(dir.path(), &broken);
        assert_eq!(check.status, Status::Warn);
        assert_eq!(
            check.detail,
            format!(
                "cannot read the free space of {}: statvfs: I/O error",
                dir.path().display()
            )
        );
        assert_eq!(check.fix.as_deref(), Some("check it yourself with `df -h`"));
    }

    #[test]
    fn the_real_reading_is_of_the_filesystem() {
        let dir = tempfile::tempdir().unwrap();
        assert!(statvfs_free(dir.path()).unwrap() > 0);
    }
}
