//! One daily budget for the whole bot across hosts (`storage.sharedUrl`).
//!
//! Without it, each process may spend its shards' share of a role's daily
//! cap (`Settings::process_cap`), and a quiet process leaves its share
//! unspent while a busy one is refused. With it, a process leases the
//! role's day in chunks of [`CHUNK_PERCENT`] of the whole cap from
//! PostgreSQL (`store::shared::budget`) as it needs them, and a call fits
//! when what the role spent here since UTC midnight plus the call's
//! estimate fits in what it was granted. Unspent grants are given back at
//! shutdown and expire after a crash. When PostgreSQL cannot be reached
//! the process falls back to its static share, says so once in the log and
//! the journal, and in status while it lasts.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};

use crate::journal::Journal;
use crate::settings::Role;
use crate::store::UsageStore;
use crate::store::shared::SharedDb;
use crate::store::shared::budget::{LEASE_TTL, LeaseAsk};
use crate::store::usage::UsageFilter;
use crate::vocab::journal::{Entry, Kind};

/// A lease's size: this part of the day's whole cap, in percent.
pub const CHUNK_PERCENT: u64 = 5;

/// How long an answer of "unreachable" or "the day is all leased" stands
/// before the next call asks PostgreSQL again (so a refused or falling-back
/// call costs no round trip, and an outage ends within this).
pub const ASK_AGAIN: Duration = Duration::from_secs(5);

/// What [`Leases::fits`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Leased {
    /// The call fits in what this process holds.
    Fits,
    /// It does not, and the bot's day has no more to lease.
    Spent { used: u64, granted: u64 },
    /// PostgreSQL cannot be reached: the static share decides.
    Unreachable,
}

/// This process's leases of the bot's daily budgets.
pub struct Leases {
    db: SharedDb,
    /// This process's start, as the shared table names it.
    holder: String,
    journal: Journal,
    granted: Mutex<HashMap<(Role, NaiveDate), Held>>,
    trips: AtomicU64,
    /// Why PostgreSQL could not be reached, while it cannot, and when it was last tried.
    fallback: Mutex<Option<(String, Instant)>>,
}

/// What this process holds of a role's day.
#[derive(Clone, Copy, Default)]
struct Held {
    granted: u64,
    /// When a lease last could not cover a call, and the total it was
    /// asked for: a smaller call may still fit (a reply asks first whether
    /// a tool round fits, then for its own, smaller call).
    spent_out: Option<(Instant, u64)>,
    /// When it was last leased (or renewed).
    leased_at: Option<Instant>,
}

impl Leases {
    pub fn new(db: SharedDb, journal: Journal) -> Self {
        Self {
            db,
            holder: uuid::Uuid::new_v4().to_string(),
            journal,
            granted: Mutex::default(),
            trips: AtomicU64::new(0),
            fallback: Mutex::default(),
        }
    }

    /// How many lease transactions this process has run.
    pub fn round_trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }

    /// The status line: leased, or falling back and why.
    pub fn status_line(&self) -> String {
        match &*self.fallback.lock().unwrap_or_else(|p| p.into_inner()) {
            None => format!(
                "the whole bot's daily caps, leased from PostgreSQL in {CHUNK_PERCENT}% chunks"
            ),
            Some((why, _)) => {
                format!("PostgreSQL unreachable, this process's static share instead: {why}")
            }
        }
    }

    /// Whether a call of `estimate` tokens for `role`, whose whole-bot daily
    /// cap is `cap`, fits now; leases more chunks while it does not and the
    /// day has some left.
    pub fn fits(
        &self,
        store: &UsageStore,
        role: Role,
        cap: u64,
        estimate: u64,
        now: DateTime<Utc>,
    ) -> Result<Leased, crate::store::StoreError> {
        let day = now.date_naive();
        let used = store.usage_tokens(&UsageFilter {
            since: Some(day.and_time(NaiveTime::MIN).and_utc()),
            roles: vec![role.as_str().into()],
            ..Default::default()
        })?;
        let chunk = (cap * CHUNK_PERCENT / 100).max(1);
        let held = self.held(role, day);
        let falling_back = self.falling_back();
        if falling_back.is_some_and(|tried| tried.elapsed() < ASK_AGAIN) {
            return Ok(Leased::Unreachable);
        }
        let total = used + estimate;
        // Renewed while it lives (only a crashed process's lease expires),
        // and after a fallback: a lease says whether PostgreSQL is back.
        let due = falling_back.is_some()
            || held
                .leased_at
                .is_some_and(|at| at.elapsed() > LEASE_TTL / 2);
        if !due && total <= held.granted {
            return Ok(Leased::Fits);
        }
        if !due
            && held
                .spent_out
                .is_some_and(|(at, asked)| at.elapsed() < ASK_AGAIN && total >= asked)
        {
            return Ok(Leased::Spent {
                used,
                granted: held.granted,
            });
        }
        let ask = OwnedAsk {
            role: role.as_str().to_string(),
            day,
            cap,
            chunk,
            total,
            holder: self.holder.clone(),
            spent: used,
        };
        let db = self.db.clone();
        self.trips.fetch_add(1, Ordering::Relaxed);
        let granted = match self
            .db
            .block_on(async move { db.lease(ask.borrow()).await })
        {
            Ok(g) => g,
            Err(e) => {
                self.fell_back(e.to_string());
                return Ok(Leased::Unreachable);
            }
        };
        self.reached();
        let fits = total <= granted;
        self.hold(
            role,
            day,
            Held {
                granted,
                spent_out: (!fits).then(|| (Instant::now(), total)),
                leased_at: Some(Instant::now()),
            },
        );
        Ok(if fits {
            Leased::Fits
        } else {
            Leased::Spent { used, granted }
        })
    }

    fn held(&self, role: Role, day: NaiveDate) -> Held {
        let held = self.granted.lock().unwrap_or_else(|p| p.into_inner());
        held.get(&(role, day)).copied().unwrap_or_default()
    }

    fn hold(&self, role: Role, day: NaiveDate, now: Held) {
        let mut held = self.granted.lock().unwrap_or_else(|p| p.into_inner());
        // Yesterday's grants are over.
        held.retain(|(_, d), _| *d >= day);
        held.insert((role, day), now);
    }

    /// When PostgreSQL was last tried, while it cannot be reached.
    fn falling_back(&self) -> Option<Instant> {
        let fallback = self.fallback.lock().unwrap_or_else(|p| p.into_inner());
        fallback.as_ref().map(|(_, at)| *at)
    }

    fn fell_back(&self, why: String) {
        let mut fallback = self.fallback.lock().unwrap_or_else(|p| p.into_inner());
        if fallback.is_none() {
            tracing::warn!(error = %why, "budget leases unavailable; this process spends its static share");
            self.journal.record(
                Entry::new(Kind::Error, "budget leases unavailable: this process spends its static share of the daily caps")
                    .reason(why.clone()),
            );
        }
        *fallback = Some((why, Instant::now()));
    }

    fn reached(&self) {
        let mut fallback = self.fallback.lock().unwrap_or_else(|p| p.into_inner());
        if fallback.take().is_some() {
            tracing::info!("budget leases available again");
            self.journal.record(Entry::new(
                Kind::System,
                "budget leases available again: the whole bot's daily caps apply",
            ));
        }
    }

    /// Gives back what this process holds and has not spent (at shutdown).
    pub async fn give_back(&self, store: &UsageStore) {
        let held: Vec<(Role, NaiveDate)> = self
            .granted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect();
        let mut spent = Vec::new();
        for (role, day) in held {
            let used = store.usage_tokens(&UsageFilter {
                since: Some(day.and_time(NaiveTime::MIN).and_utc()),
                roles: vec![role.as_str().into()],
                ..Default::default()
            });
            match used {
                Ok(used) => spent.push((role.as_str().to_string(), day, used)),
                // Not given back: the lease expires on its own.
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read usage to give back a budget lease")
                }
            }
        }
        if let Err(e) = self.db.give_back(&self.holder, spent).await {
            tracing::warn!(error = %e, "could not give back the budget leases; they expire on their own");
        }
    }
}

/// A [`LeaseAsk`] that can move to the shared worker.
struct OwnedAsk {
    role: String,
    day: NaiveDate,
    cap: u64,
    chunk: u64,
    total: u64,
    holder: String,
    spent: u64,
}

impl OwnedAsk {
    fn borrow(&self) -> LeaseAsk<'_> {
        LeaseAsk {
            role: &self.role,
            day: self.day,
            cap: self.cap,
            chunk: self.chunk,
            total: self.total,
            holder: &self.holder,
            spent: self.spent,
        }
    }
}
