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
//! healthy session is immediate. The alternatives see less: a loop around
//! `client.start()` never sees the resume loop (it does not return), and
//! `shard_stage_update` does not fire in it (the stage stays `Resuming`); a
//! relay of our own in front of the gateway URL would be a websocket proxy.
//!
//! Real time, not the app's `Clock`: this paces sockets, it decides nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration as StdDuration;

use chrono::Duration;
use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio::task::JoinHandle;

use crate::backoff;

/// The first wait after a failed connection; each failure in a row doubles it.
const BASE: Duration = Duration::seconds(1);
/// The longest wait between two attempts.
const CEILING: Duration = Duration::seconds(120);
/// How often the gate looks for a waiting attempt; the most a first
/// (re)connect is held back.
const LOOK: StdDuration = StdDuration::from_millis(100);

/// Paces serenity's gateway connection attempts (see the file comment).
pub struct Gate {
    base: Duration,
    ceiling: Duration,
    connected: AtomicBool,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new(BASE, CEILING)
    }
}

impl Gate {
    /// Waits `base`, 2×, 4×, … (each jittered) up to `ceiling` between attempts in a row.
    pub fn new(base: Duration, ceiling: Duration) -> Self {
        Self {
            base,
            ceiling,
            connected: AtomicBool::new(false),
        }
    }

    /// The connection reached READY or RESUMED: the next failure starts over
    /// at the first back-off step.
    pub fn connected(&self) {
        self.connected.store(true, Ordering::Relaxed);
    }

    /// Holds `ws_url` (the client's gateway URL) from now on and lets one
    /// attempt through per back-off step. Abort the task to open the door for good.
    /// Returns once the gate holds it, so no attempt starts before the gate.
    pub async fn spawn(self: Arc<Self>, ws_url: Arc<Mutex<String>>) -> JoinHandle<()> {
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
                Err(_) => guard = ws_url.clone().lock_owned().await,
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
                     the next no sooner than {:.1} s from now",
                    wait.as_secs_f64()
                );
            }
            tokio::time::sleep(wait).await;
        }
    }
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

    /// On tokio's paused clock: time moves only when every task waits, so
    /// the gaps are exactly the gate's waits.
    #[tokio::test(start_paused = true)]
    async fn attempts_in_a_row_pass_one_per_step_and_a_connection_resets_the_steps() {
        let url = Arc::new(Mutex::new("ws://gateway".to_string()));
        let ms = Duration::milliseconds;
        let gate = Arc::new(Gate::new(ms(200), ms(60_000)));
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
        // The fourth attempt started an 800 ms step. A connection now means
        // the fifth passes when that step ends and the sixth waits only the
        // first step again (100–200 ms, plus at most one LOOK), not 0.8 s or more.
        gate.connected();
        drop(url.lock().await);
        let fifth = Instant::now();
        drop(url.lock().await);
        let sixth = fifth.elapsed();
        assert!(sixth >= StdDuration::from_millis(100), "{sixth:?}");
        assert!(sixth < StdDuration::from_millis(400), "{sixth:?}");
        door.abort();
    }
}
