//! The process's open-file limit, in one place: the dashboard keeps a
//! quarter of it for its connections (`serve`), and `ambient run` raises it
//! to its hard limit when it starts, for a bot that serves many servers,
//! voice and a dashboard soon spends the usual 1,024.

/// The limit that was raised: from the soft limit to the hard one.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Raised {
    pub from: u64,
    pub to: u64,
}

/// The process's open-file limit (its soft limit); None when unlimited or unknown.
pub(crate) fn limit() -> Option<usize> {
    let (soft, _) = read()?;
    usize::try_from(soft).ok()
}

/// Raises the soft limit to the hard limit. `Ok(None)` when it is there
/// already (or the limits cannot be read); an error when the system refuses.
#[cfg(unix)]
pub(crate) fn raise() -> std::io::Result<Option<Raised>> {
    let Some((soft, hard)) = read() else {
        return Ok(None);
    };
    if soft >= hard {
        return Ok(None);
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every unix
    let raised = libc::rlimit {
        rlim_cur: hard as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit only reads `raised`, which lives through the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Some(Raised {
        from: soft,
        to: hard,
    }))
}

#[cfg(not(unix))]
pub(crate) fn raise() -> std::io::Result<Option<Raised>> {
    Ok(None)
}

/// The soft and hard limits; None when unknown, `u64::MAX` for unlimited
/// (then never a number of files to keep a quarter of).
#[cfg(unix)]
fn read() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes `limit`, which lives through the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every unix
    let n = |v: libc::rlim_t| {
        if v == libc::RLIM_INFINITY {
            u64::MAX
        } else {
            v as u64
        }
    };
    Some((n(limit.rlim_cur), n(limit.rlim_max)))
}

#[cfg(not(unix))]
fn read() -> Option<(u64, u64)> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// The "Max open files" soft limit in `/proc/self/limits`.
    fn soft_in_proc() -> Option<usize> {
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse().ok()
    }

    #[test]
    fn the_limit_is_the_one_the_system_reports_and_raising_reaches_the_hard_one() {
        assert_eq!(super::limit(), soft_in_proc());
        let (_, hard) = super::read().unwrap();
        super::raise().unwrap();
        assert_eq!(super::read().unwrap(), (hard, hard));
        assert_eq!(super::raise().unwrap(), None, "nothing left to raise");
    }
}
