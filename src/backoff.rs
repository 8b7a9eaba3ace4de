//! Exponential back-off for failing background work, per scope.
//!
//! A background path that fails (memory extraction for a channel, a garden
//! cycle for a server, a discovery source, an idea exploration for a server)
//! must not try again on every loop turn: each failure in a row doubles the
//! wait — `base`, 2×, 4×, … — up to a `ceiling`, and one success resets it.
//! Each failure starts one back-off, so a caller that journals a failure
//! journals once per back-off, not once per loop turn.
//!
//! Time is an input (the caller's clock), so tests drive it with the manual
//! clock. It sits with `clock` at the lowest layer: it only needs time.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// The wait after `failures` failures in a row: `base × 2^(failures−1)`, at
/// most `ceiling` (and no wait before the first failure).
pub(crate) fn delay(base: Duration, ceiling: Duration, failures: u32) -> Duration {
    if failures == 0 {
        return Duration::zero();
    }
    // 2^20 × any sane base is past any sane ceiling; the cap keeps the product finite.
    let factor = 1i32 << (failures - 1).min(20);
    base.checked_mul(factor).unwrap_or(ceiling).min(ceiling)
}

/// One failure's consequence: how many in a row, and when to try again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setback {
    pub failures: u32,
    pub wait: Duration,
    pub until: DateTime<Utc>,
}

impl Setback {
    /// "trying again in 4 minutes (failure 3 in a row)", for journal reasons.
    pub(crate) fn describe(&self) -> String {
        format!(
            "trying again in {} (failure {} in a row)",
            human(self.wait),
            self.failures
        )
    }
}

fn human(d: Duration) -> String {
    let m = d.num_minutes();
    match m {
        0 => format!("{} seconds", d.num_seconds()),
        1 => "1 minute".into(),
        m if m < 120 => format!("{m} minutes"),
        m => format!("{} hours", m / 60),
    }
}

/// Back-off state for many scopes (channels, servers, sources), in memory.
pub(crate) struct Backoff<K> {
    base: Duration,
    ceiling: Duration,
    failing: Mutex<HashMap<K, Setback>>,
}

impl<K: Eq + Hash + Clone> Backoff<K> {
    pub(crate) fn new(base: Duration, ceiling: Duration) -> Self {
        Self {
            base,
            ceiling,
            failing: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `key` may be tried at `now` (it is not backing off).
    pub(crate) fn ready(&self, key: &K, now: DateTime<Utc>) -> bool {
        self.until(key).is_none_or(|t| now >= t)
    }

    /// When `key` may be tried again, if it is backing off.
    pub(crate) fn until(&self, key: &K) -> Option<DateTime<Utc>> {
        self.lock().get(key).map(|s| s.until)
    }

    /// Records a failure at `now` and starts the next, longer back-off.
    pub(crate) fn failed(&self, key: &K, now: DateTime<Utc>) -> Setback {
        self.failed_within(key, now, self.base, self.ceiling)
    }

    /// Like [`Backoff::failed`], with bounds from settings that may have
    /// changed since this back-off was made (a live reload).
    pub(crate) fn failed_within(
        &self,
        key: &K,
        now: DateTime<Utc>,
        base: Duration,
        ceiling: Duration,
    ) -> Setback {
        let mut failing = self.lock();
        let failures = failing.get(key).map_or(0, |s| s.failures) + 1;
        let wait = delay(base, ceiling, failures);
        let setback = Setback {
            failures,
            wait,
            until: now + wait,
        };
        failing.insert(key.clone(), setback);
        setback
    }

    /// Records a success: the back-off is over. Returns how many failures
    /// in a row it ends (`None` if `key` was not failing).
    pub(crate) fn succeeded(&self, key: &K) -> Option<u32> {
        self.lock().remove(key).map(|s| s.failures)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Setback>> {
        // The map holds plain values: a panic elsewhere cannot leave it half-written.
        self.failing.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap() + Duration::minutes(minutes)
    }

    #[test]
    fn waits_double_up_to_the_ceiling() {
        let (base, ceiling) = (Duration::minutes(1), Duration::minutes(60));
        let waits: Vec<i64> = (0..10)
            .map(|n| delay(base, ceiling, n).num_minutes())
            .collect();
        assert_eq!(waits, vec![0, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(delay(base, ceiling, u32::MAX), ceiling);
    }

    #[test]
    fn a_failing_scope_waits_and_others_do_not_and_success_resets() {
        let b = Backoff::new(Duration::minutes(1), Duration::minutes(60));
        assert!(b.ready(&"a", at(0)));
        assert_eq!(b.failed(&"a", at(0)).until, at(1));
        assert!(!b.ready(&"a", at(0)));
        assert!(b.ready(&"b", at(0)), "another scope is not held back");
        assert!(b.ready(&"a", at(1)));
        let second = b.failed(&"a", at(1));
        assert_eq!((second.failures, second.until), (2, at(3)));
        assert_eq!(
            second.describe(),
            "trying again in 2 minutes (failure 2 in a row)"
        );
        assert_eq!(b.succeeded(&"a"), Some(2));
        assert!(b.ready(&"a", at(1)));
        assert_eq!(b.failed(&"a", at(5)).wait, Duration::minutes(1));
        assert_eq!(b.succeeded(&"b"), None);
    }
}
