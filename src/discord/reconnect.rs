//! Reconnecting to the gateway with back-off and jitter.
//!
//! Serenity 0.12.5 resumes at once after a close (`ShardRunner::run` →
//! `Shard::resume`), in a loop inside its shard runner with no pause and no
//! event: against a server that accepts the websocket and closes it cleanly,
//! the bot reconnected ~21,000 times in 14 s, logging nothing.
//!
//! Why this mechanism: every connection attempt — a resume, a re-identify,
//! a restarted shard — first reads the gateway URL from the client's shared
//! `ws_url` mutex (`Shard::new`, `Shard::initialize`). That lock is the one
//! door we own on serenity's loop, so the [`Gate`] holds it and lets one
//! attempt through per back-off step. Tokio's mutex is fair: releasing it
//! hands it to the first waiter, so a `try_lock` right after the release
//! fails exactly when a shard was waiting to connect. A connection that
//! reaches READY or RESUMED resets the steps, so the first reconnect after a
//! healthy session is immediate, and so is the first after a gateway that
//! refused connections accepts them again (see [`Gate`]'s probe: a long
//! step is not waited out once the server is back). The alternatives see less: a loop around
//! `client.start()` never sees the resume loop (it does not return), and
//! `shard_stage_update` does not fire in it (the stage stays `Resuming`); a
//! relay of our own in front of the gateway URL would be a websocket proxy.
//!
//! Real time, not the app's `Clock`: this paces sockets, it decides nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration as StdDuration;

use chrono::Duration;
use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::backoff;

/// The first wait after a failed connection; each failure in a row doubles it.
const BASE: Duration = Duration::seconds(1);
/// The longest wait between two attempts.
const CEILING: Duration = Duration::seconds(120);
/// How often the gate looks for a waiting attempt; the most a first
/// (re)connect is held back.
const LOOK: StdDuration = StdDuration::from_millis(100);
/// How often, during a step, a gateway that refused connections is asked
/// again whether it accepts one (jittered, like the steps).
const PROBE_EVERY: Duration = Duration::seconds(2);
/// How long one probe waits for the gateway to accept.
const PROBE_WITHIN: StdDuration = StdDuration::from_secs(2);

/// Whether the gateway at a URL accepts a connection now (see [`tcp_accepts`]).
type Probe = Arc<dyn Fn(&str) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// Paces serenity's gateway connection attempts (see the file comment).
pub(crate) struct Gate {
    base: Duration,
    ceiling: Duration,
    connected: AtomicBool,
    /// Connected since the last attempt went through: false from an
    /// attempt (a shard connecting, or reconnecting after a drop) until a
    /// READY or RESUMED, for `/readyz` (serenity's own stage of a shard
    /// stays `Connected` while it resumes).
    up: AtomicBool,
    probe: Probe,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new(BASE, CEILING)
    }
}

impl Gate {
    /// Waits `base`, 2×, 4×, … (each jittered) up to `ceiling` between attempts in a row.
    pub(crate) fn new(base: Duration, ceiling: Duration) -> Self {
        Self {
            base,
            ceiling,
            connected: AtomicBool::new(false),
            up: AtomicBool::new(false),
            probe: Arc::new(|url: &str| Box::pin(tcp_accepts(url.to_string()))),
        }
    }

    /// This gate asking `probe`, not the network, whether the gateway is back.
    #[cfg(test)]
    fn probing(mut self, probe: Probe) -> Self {
        self.probe = probe;
        self
    }

    /// The connection reached READY or RESUMED: the next failure starts over
    /// at the first back-off step.
    pub(crate) fn connected(&self) {
        self.connected.store(true, Ordering::Relaxed);
        self.up.store(true, Ordering::Relaxed);
    }

    /// Whether every attempt that went through reached READY or RESUMED.
    pub(crate) fn up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// Holds `ws_url` (the client's gateway URL) from now on and lets one
    /// attempt through per back-off step. Abort the task to open the door for good.
    /// Returns once the gate holds it, so no attempt starts before the gate.
    pub(crate) async fn spawn(self: Arc<Self>, ws_url: Arc<Mutex<String>>) -> JoinHandle<()> {
        let guard = ws_url.clone().lock_owned().await;
        tokio::spawn(async move { self.run(ws_url, guard).await })
    }

    async fn run(&self, ws_url: Arc<Mutex<String>>, mut guard: OwnedMutexGuard<String>) {
        let mut attempts: u32 = 0;
        loop {
            drop(guard);
            match ws_url.clone().try_lock_owned() {
                Ok(free) => {
                    // Nobody was waiting to connect.
                    guard = free;
                    tokio::time::sleep(LOOK).await;
                    continue;
                }
                // A shard took the URL: one attempt went through. Take the
                // lock back once it has read it.
                Err(_) => {
                    self.up.store(false, Ordering::Relaxed);
                    guard = ws_url.clone().lock_owned().await;
                }
            }
            if self.connected.swap(false, Ordering::Relaxed) {
                attempts = 0;
            }
            attempts += 1;
            let wait = jittered(backoff::delay(self.base, self.ceiling, attempts));
            if attempts == 1 {
                tracing::info!("connecting to the Discord gateway");
            } else {
                tracing::warn!(
                    attempt = attempts,
                    "the Discord gateway connection keeps failing: attempt {attempts}, \
                     the next {:.1} s from now (sooner if the gateway, refusing \
                     connections, accepts them again)",
                    wait.as_secs_f64()
                );
            }
            if self.back_within(wait, &guard).await {
                tracing::info!("the Discord gateway accepts connections again: connecting now");
                attempts = 0;
            }
        }
    }

    /// Waits out a step of `wait`, unless the gateway at `url` refused
    /// connections when the step began and accepts one before it ends:
    /// then the server is back, and the rest of the step would only hold
    /// the reconnect back (a 60 s step held one back 64.7 s); it returns
    /// true when that ended the step. A gateway that accepts at once is
    /// up and failing in some other way (closing the websocket, refusing the
    /// session), and its step is waited out whole, so it is not hammered.
    async fn back_within(&self, wait: StdDuration, url: &str) -> bool {
        let until = Instant::now() + wait;
        let back = async {
            if (self.probe)(url).await {
                return std::future::pending().await;
            }
            loop {
                tokio::time::sleep(jittered(PROBE_EVERY)).await;
                if (self.probe)(url).await {
                    return;
                }
            }
        };
        tokio::select! {
            () = tokio::time::sleep_until(until) => false,
            () = back => true,
        }
    }
}

/// Whether `url`'s host accepts a TCP connection within [`PROBE_WITHIN`]:
/// the cheapest sign that a gateway that was unreachable is back (a SYN,
/// not a TLS and websocket handshake). A URL without a host cannot be
/// probed and counts as accepting, so its steps are waited out as before.
async fn tcp_accepts(url: String) -> bool {
    let Ok(parsed) = url::Url::parse(&url) else {
        return true;
    };
    let host = match parsed.host() {
        Some(url::Host::Domain(name)) => name.to_string(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return true,
    };
    let port = parsed.port_or_known_default().unwrap_or(443);
    let connect = tokio::net::TcpStream::connect((host.as_str(), port));
    matches!(tokio::time::timeout(PROBE_WITHIN, connect).await, Ok(Ok(_)))
}

/// Between half and all of `wait`, so many bots dropped at once do not
/// come back in step.
fn jittered(wait: Duration) -> StdDuration {
    let full = wait.to_std().unwrap_or(StdDuration::ZERO);
    full / 2 + full.mul_f64(rand::random::<f64>() / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[test]
    fn jitter_stays_between_half_and_all_of_the_wait() {
        for _ in 0..100 {
            let j = jittered(Duration::seconds(8));
            assert!(j >= StdDuration::from_secs(4) && j <= StdDuration::from_secs(8));
        }
        assert_eq!(jittered(Duration::zero()), StdDuration::ZERO);
    }

    /// A probe that answers what `up` holds, without the network.
    fn answering(up: Arc<AtomicBool>) -> Probe {
        Arc::new(move |_: &str| {
            let up = up.load(Ordering::Relaxed);
            Box::pin(async move { up })
        })
    }

    /// On tokio's paused clock: time moves only when every task waits, so
    /// the gaps are exactly the gate's waits. The gateway accepts
    /// connections and fails after (the probe says up): steps are waited out.
    #[tokio::test(start_paused = true)]
    async fn attempts_in_a_row_pass_one_per_step_and_a_connection_resets_the_steps() {
        let url = Arc::new(Mutex::new("ws://gateway".to_string()));
        let ms = Duration::milliseconds;
        let up = answering(Arc::new(AtomicBool::new(true)));
        let gate = Arc::new(Gate::new(ms(200), ms(60_000)).probing(up));
        let door = gate.clone().spawn(url.clone()).await;
        let mut passed = Vec::new();
        for _ in 0..4 {
            drop(url.lock().await);
            passed.push(Instant::now());
        }
        // Half a step at least between attempts: ≥100, ≥200, ≥400 ms.
        let gaps: Vec<StdDuration> = passed.windows(2).map(|w| w[1] - w[0]).collect();
        for (gap, least) in gaps.iter().zip([100, 200, 400]) {
            assert!(*gap >= StdDuration::from_millis(least), "{gaps:?}");
        }
        // The fourth attempt starts an 800 ms step once the gate has taken
        // the URL back (this task runs on until it waits, so it waits first:
        // a connection said before the gate saw the fourth attempt would
        // reset the steps before that one and make the sixth the second
        // step, 200–400 ms). A connection now means the fifth passes when
        // that step ends and the sixth waits only the first step again
        // (100–200 ms, plus at most one LOOK), not 0.8 s or more.
        tokio::time::sleep(StdDuration::from_millis(1)).await;
        gate.connected();
        drop(url.lock().await);
        let fifth = Instant::now();
        assert!(
            fifth - passed[3] >= StdDuration::from_millis(400),
            "{:?}",
            fifth - passed[3]
        );
        drop(url.lock().await);
        let sixth = fifth.elapsed();
        assert!(sixth >= StdDuration::from_millis(100), "{sixth:?}");
        assert!(sixth < StdDuration::from_millis(400), "{sixth:?}");
        door.abort();
    }

    /// A gateway that refused connections for long enough that a step is a
    /// minute long comes back 5 s into it: the next attempt passes within a
    /// probe (at most 2 s), not when the step ends (30–60 s; 64.7 s in the
    /// issue), and the steps start over.
    #[tokio::test(start_paused = true)]
    async fn a_gateway_that_comes_back_ends_a_long_step_at_once() {
        let url = Arc::new(Mutex::new("ws://gateway".to_string()));
        let up = Arc::new(AtomicBool::new(false));
        let gate = Arc::new(
            Gate::new(Duration::seconds(1), Duration::seconds(60)).probing(answering(up.clone())),
        );
        let door = gate.clone().spawn(url.clone()).await;
        // Eight failures in a row: the eighth starts a step of 60 s (2^7 s, capped).
        for _ in 0..8 {
            drop(url.lock().await);
        }
        tokio::time::sleep(StdDuration::from_secs(5)).await;
        up.store(true, Ordering::Relaxed);
        let back = Instant::now();
        drop(url.lock().await);
        let held = back.elapsed();
        assert!(held <= StdDuration::from_secs(2), "{held:?}");
        // The ninth attempt is the first of a new run: its step is the first one (0.5–1 s).
        let after_ninth = Instant::now();
        drop(url.lock().await);
        let step = after_ninth.elapsed();
        assert!(step >= StdDuration::from_millis(500), "{step:?}");
        assert!(step <= StdDuration::from_millis(1100), "{step:?}");
        door.abort();
    }

    /// The probe itself: a listening port accepts, a closed one does not,
    /// and a URL naming no host cannot be probed (so it counts as up).
    #[tokio::test]
    async fn the_probe_asks_the_gateways_host_over_tcp() {
        let open = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = open.local_addr().unwrap().port();
        assert!(tcp_accepts(format!("ws://127.0.0.1:{port}/gateway")).await);
        drop(open);
        assert!(!tcp_accepts(format!("ws://127.0.0.1:{port}/gateway")).await);
        assert!(tcp_accepts("not a url".into()).await);
    }
}
