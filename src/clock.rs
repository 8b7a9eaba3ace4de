//! Time and chance, passed in rather than reached for.
//!
//! Everything that depends on "now" (gates, expiry, backoff, cooldowns) or on
//! a dice roll (the eagerness gate, retry jitter) takes a [`Clock`] and a
//! [`Chance`], so tests can drive the bot exactly: a [`ManualClock`] moves only
//! when told to (or when something sleeps on it), and a seeded [`Chance`]
//! rolls the same numbers every run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[async_trait]
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;

    /// Waits for `d`. The system clock really waits; the manual clock moves
    /// its own time forward instead, so a test of a 2 s backoff takes no time.
    async fn sleep(&self, d: Duration);
}

pub(crate) type SharedClock = Arc<dyn Clock>;

/// Wall-clock time.
pub struct SystemClock;

#[async_trait]
impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    async fn sleep(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }
}

/// Wall-clock time plus an offset that only grows: the console's `/wait`
/// moves it forward so a newcomer can see what the next minutes bring
/// (ticks, reminders) without waiting for them.
#[derive(Default)]
pub(crate) struct ShiftedClock {
    ahead: Mutex<chrono::Duration>,
}

impl ShiftedClock {
    pub(crate) fn advance(&self, d: chrono::Duration) {
        *self.ahead.lock().unwrap_or_else(|p| p.into_inner()) += d;
    }
}

#[async_trait]
impl Clock for ShiftedClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + *self.ahead.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn sleep(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }
}

/// Time that moves only when a test (or a sleeper) moves it.
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
    slept: Mutex<Vec<Duration>>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Arc<Self> {
        Arc::new(Self {
            now: Mutex::new(start),
            slept: Mutex::new(Vec::new()),
        })
    }

    /// A fixed, readable starting point for tests: 2026-01-05 12:00 UTC (a Monday).
    pub fn at_test_epoch() -> Arc<Self> {
        Self::new(
            DateTime::parse_from_rfc3339("2026-01-05T12:00:00Z")
                .expect("valid literal")
                .with_timezone(&Utc),
        )
    }

    pub fn advance(&self, d: chrono::Duration) {
        let mut now = self.now.lock().expect("clock lock");
        *now += d;
    }

    pub fn set(&self, t: DateTime<Utc>) {
        *self.now.lock().expect("clock lock") = t;
    }

    /// Every sleep requested so far, in order.
    pub fn slept(&self) -> Vec<Duration> {
        self.slept.lock().expect("clock lock").clone()
    }
}

#[async_trait]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().expect("clock lock")
    }

    async fn sleep(&self, d: Duration) {
        self.slept.lock().expect("clock lock").push(d);
        self.advance(chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX));
        tokio::task::yield_now().await;
    }
}

/// A seeded source of randomness, shared by everything that rolls dice.
pub struct Chance {
    rng: Mutex<StdRng>,
}

impl Chance {
    pub fn seeded(seed: u64) -> Arc<Self> {
        Arc::new(Self {
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
        })
    }

    pub(crate) fn from_entropy() -> Arc<Self> {
        Arc::new(Self {
            rng: Mutex::new(StdRng::from_os_rng()),
        })
    }

    /// True with probability `percent` / 100. 0 never passes, 100 always does.
    pub(crate) fn roll_percent(&self, percent: u8) -> bool {
        if percent == 0 {
            return false;
        }
        if percent >= 100 {
            return true;
        }
        let roll: u8 = self.rng.lock().expect("rng lock").random_range(0..100);
        roll < percent
    }

    /// A uniform fraction in [0, 1), for jitter.
    pub(crate) fn fraction(&self) -> f64 {
        self.rng.lock().expect("rng lock").random::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn manual_clock_moves_only_when_told_or_slept_on() {
        let clock = ManualClock::at_test_epoch();
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.sleep(Duration::from_secs(2)).await;
        assert_eq!(clock.now() - t0, chrono::Duration::seconds(2));
        assert_eq!(clock.slept(), vec![Duration::from_secs(2)]);
    }

    #[test]
    fn eagerness_extremes_are_exact_and_seeds_repeat() {
        let c = Chance::seeded(7);
        assert!((0..1000).all(|_| !c.roll_percent(0)));
        assert!((0..1000).all(|_| c.roll_percent(100)));
        let a: Vec<bool> = {
            let c = Chance::seeded(42);
            (0..50).map(|_| c.roll_percent(30)).collect()
        };
        let b: Vec<bool> = {
            let c = Chance::seeded(42);
            (0..50).map(|_| c.roll_percent(30)).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().any(|x| *x) && a.iter().any(|x| !*x));
    }
}
