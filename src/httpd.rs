//! One small HTTP server, for the dashboard and for `/metrics`, `/healthz`
//! and `/readyz`: its listener, its connections, and the bounds that keep a
//! slow or hostile client from holding the process's sockets. Each front
//! end gives its own [`Bounds`].
//!
//! `axum::serve` waits for a request's head as long as a client takes and
//! keeps every connection it is offered: 2,000 half-sent requests stayed
//! open, and inside `ambient run` 1,100 of them took every file the process
//! could open, so a mention went unanswered (its model call could not
//! connect). Here each connection is hyper's HTTP/1, and:
//!
//! - its request head must arrive within [`Bounds::head_within`] (hyper's
//!   header read timeout, which also ends a kept-alive connection idle that
//!   long), and be at most [`Bounds::max_head_bytes`] (431 past that), so a
//!   connection buffers kilobytes, not hyper's default 400 KiB;
//! - at most [`Bounds::most`] connections are open at once; one past it is
//!   closed as soon as it is accepted;
//! - at most [`Bounds::per_client`] of those come from one client (one IPv4
//!   address, one IPv6 /64: [`Clients`]), so a client that keeps its
//!   connections busy cannot keep every slot: others still get in;
//! - accepting that fails (the process out of files) is tried again after a
//!   pause, not at once, so it does not spin.
//!
//! Bodies are the front end's to bound (the dashboard's `read_body_within`):
//! `/metrics` and the health endpoints take none.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::{Service as _, service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Connections the kernel holds until they are accepted. The default (128,
/// std's and tokio's) turned connections away in a burst of a few hundred
/// even while each was accepted, and closed at once, as it came.
const BACKLOG: u32 = 1024;
/// How often the log says that connections are being closed at a cap.
const SAY_FULL_EVERY: Duration = Duration::from_secs(60);
/// The pause before accepting again after accepting failed.
const ACCEPT_AGAIN_AFTER: Duration = Duration::from_secs(1);

/// What one front end lets its clients hold.
#[derive(Clone, Copy)]
pub(crate) struct Bounds {
    /// Who serves, in log lines ("dashboard", "metrics").
    pub name: &'static str,
    /// How long a request's head (its line and headers) may take to arrive.
    pub head_within: Duration,
    /// The largest request head read (hyper takes no less than 8 KiB).
    pub max_head_bytes: usize,
    /// The most connections open at once, asked as each arrives.
    pub most: fn() -> usize,
    /// Why `most` is what it is, for the log line when it is reached
    /// (" (a quarter of the open-file limit)"), or "".
    pub most_why: &'static str,
    /// The most one client may keep open, given `most`.
    pub per_client: fn(usize) -> usize,
}

/// Listens on `addr`, with room for a burst of connections ([`BACKLOG`]).
pub(crate) fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // As std and tokio do: a restarted server binds its port at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Serves `app` on `listener` within `bounds` until `stop`; then each
/// connection finishes the request it is in, and the task ends when they
/// all have.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    bounds: Bounds,
    stop: impl std::future::Future<Output = ()>,
) {
    let (closing, _) = watch::channel(false);
    let mut open = JoinSet::new();
    let clients = Clients::default();
    let mut full = Full::default();
    let mut crowded = Full::default();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = accept(&listener, bounds.name) => accepted,
            () = &mut stop => break,
        };
        while open.try_join_next().is_some() {}
        let cap = (bounds.most)();
        if open.len() >= cap {
            full.closed(|n| {
                format!(
                    "{}: {cap} connections open, the most it keeps{}; closed {n} more as they came",
                    bounds.name, bounds.most_why
                )
            });
            drop(stream);
            continue;
        }
        let most = (bounds.per_client)(cap);
        let Some(slot) = clients.take(peer.ip(), most) else {
            crowded.closed(|n| {
                format!(
                    "{}: one client ({}) has {most} connections open, the most one client \
                     may keep; closed {n} more of its as they came",
                    bounds.name,
                    client_of(peer.ip())
                )
            });
            drop(stream);
            continue;
        };
        open.spawn(connection(
            stream,
            peer,
            app.clone(),
            bounds,
            closing.subscribe(),
            slot,
        ));
    }
    // Harmless: with no connection open there is nobody to tell.
    let _ = closing.send(true);
    while open.join_next().await.is_some() {}
}

/// The next connection. Accepting fails while the process (or the system)
/// is out of files: tried again after a pause; a connection reset before
/// it was accepted is skipped.
async fn accept(listener: &TcpListener, name: &str) -> (TcpStream, SocketAddr) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(e)
                if matches!(
                    e.kind(),
                    ConnectionAborted | ConnectionRefused | ConnectionReset
                ) => {}
            Err(e) => {
                tracing::warn!(error = %e, "{name}: cannot accept a connection; trying again in 1 s");
                tokio::time::sleep(ACCEPT_AGAIN_AFTER).await;
            }
        }
    }
}

/// One connection, served until it ends or the server stops; its client's
/// slot is given back when it ends.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    bounds: Bounds,
    mut closing: watch::Receiver<bool>,
    _slot: Slot,
) {
    let app = TowerToHyperService::new(app);
    let service = service_fn(move |mut req: hyper::Request<Incoming>| {
        // What axum's `ConnectInfo` extractor reads (the dashboard's guard logs refusals with it).
        req.extensions_mut().insert(ConnectInfo(peer));
        app.call(req)
    });
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(bounds.head_within)
        .max_buf_size(bounds.max_head_bytes);
    let conn = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let stopping = async {
        // Harmless: the server gone (the sender dropped) is a stop as well.
        let _ = closing.wait_for(|stop| *stop).await;
    };
    let ended = tokio::select! {
        ended = conn.as_mut() => ended,
        () = stopping => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = ended {
        // A client gone, or one too slow with its head: nothing to act on.
        tracing::debug!(%peer, error = %e, "{}: a connection ended", bounds.name);
    }
}

/// Who a connection is from, as the per-client cap counts: an IPv4 address
/// (an IPv4-mapped IPv6 one too), or the /64 of an IPv6 address — one
/// host is given a whole /64 and may pick any address in it.
fn client_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(Ipv6Addr::from(segments))
            }
        },
    }
}

/// The connections open per client.
#[derive(Clone, Default)]
struct Clients(Arc<Mutex<HashMap<IpAddr, usize>>>);

impl Clients {
    /// A slot for one more connection from `ip`, if its client has fewer than `most` open.
    fn take(&self, ip: IpAddr, most: usize) -> Option<Slot> {
        let client = client_of(ip);
        let mut open = self.lock();
        let n = open.entry(client).or_insert(0);
        if *n >= most {
            return None;
        }
        *n += 1;
        Some(Slot {
            clients: self.clone(),
            client,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One open connection of a client, given back when dropped (the
/// connection's task ended, however it ended).
struct Slot {
    clients: Clients,
    client: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.clients.lock();
        if let Some(n) = open.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// Connections closed at a cap, said in the log once a minute at most
/// (a flood would otherwise log a line per connection).
#[derive(Default)]
struct Full {
    closed: u64,
    said: Option<Instant>,
}

impl Full {
    /// One more closed; `say` words the log line from how many were since the last.
    fn closed(&mut self, say: impl FnOnce(u64) -> String) {
        self.closed += 1;
        if self.said.is_some_and(|at| at.elapsed() < SAY_FULL_EVERY) {
            return;
        }
        tracing::warn!("{}", say(self.closed));
        self.closed = 0;
        self.said = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_an_ipv4_address_or_an_ipv6_64() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(client_of(ip("192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(client_of(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(
            client_of(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd")),
            client_of(ip("2001:db8:1:2::1"))
        );
        assert_ne!(
            client_of(ip("2001:db8:1:2::1")),
            client_of(ip("2001:db8:1:3::1"))
        );
    }

    #[test]
    fn a_client_gets_its_slots_back_when_its_connections_end() {
        let clients = Clients::default();
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let slots: Vec<Slot> = (0..3).filter_map(|_| clients.take(ip, 3)).collect();
        assert_eq!(slots.len(), 3);
        assert!(clients.take(ip, 3).is_none(), "a fourth is refused");
        assert!(clients.take("192.0.2.8".parse().unwrap(), 3).is_some());
        drop(slots);
        assert!(clients.take(ip, 3).is_some());
    }
}
