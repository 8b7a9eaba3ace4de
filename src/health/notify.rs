//! systemd's notification protocol (sd_notify(3)): a datagram such as
//! `READY=1` sent to the Unix socket named in `NOTIFY_SOCKET`, which
//! systemd sets for a `Type=notify` service. A path starting with `@` is in
//! the abstract namespace. Without the variable nothing is sent.

use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::time::Duration;

/// Sends to systemd's notification socket, when there is one.
#[derive(Clone)]
pub(crate) struct Notifier {
    to: Option<Arc<(UnixDatagram, std::os::unix::net::SocketAddr)>>,
}

impl Notifier {
    /// The socket `NOTIFY_SOCKET` names, if it is set and can be reached.
    pub(crate) fn from_env() -> Self {
        let to = std::env::var_os("NOTIFY_SOCKET").and_then(|path| {
            let addr = address(&path.to_string_lossy());
            match (UnixDatagram::unbound(), addr) {
                (Ok(socket), Ok(addr)) => Some(Arc::new((socket, addr))),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!(error = %e, "NOTIFY_SOCKET is set but cannot be used; systemd is not told when the bot is ready");
                    None
                }
            }
        });
        Self { to }
    }

    pub(crate) fn is_on(&self) -> bool {
        self.to.is_some()
    }

    /// Sends `state` ("READY=1"); a failure is logged, not fatal: systemd
    /// then judges the service by its own timeouts.
    pub(crate) fn send(&self, state: &str) {
        let Some(to) = &self.to else { return };
        if let Err(e) = to.0.send_to_addr(state.as_bytes(), &to.1) {
            tracing::warn!(error = %e, state, "cannot notify systemd");
        }
    }
}

fn address(path: &str) -> std::io::Result<std::os::unix::net::SocketAddr> {
    match path.strip_prefix('@') {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt as _;
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
        }
        None => std::os::unix::net::SocketAddr::from_pathname(path),
    }
}

/// How often to send WATCHDOG=1: half of `WATCHDOG_USEC`, when systemd
/// set it for this process (`WATCHDOG_PID`, if set, names it).
pub(crate) fn watchdog_every() -> Option<Duration> {
    if let Ok(pid) = std::env::var("WATCHDOG_PID")
        && pid.trim() != std::process::id().to_string()
    {
        return None;
    }
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.trim().parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}
