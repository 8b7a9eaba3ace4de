//! Upkeep: the store kept to what the retention settings allow, and small.
//!
//! Once soon after start and then every hour, one pass: the retention sweep
//! (`store::retention`) removes every kind of record older than the
//! operator's `storage.retention.*` — or a server's own shorter values —
//! in short transactions; the pages they held go back to the disk a few at
//! a time; and the write-ahead log is checkpointed and emptied when no one
//! is reading it; the context stream's lines older than
//! `executive.contextStream.retentionHours` go too. A pass that removed something says so in the journal,
//! with counts per kind; a quiet one leaves no line.
//!
//! The pass runs on a blocking thread (SQLite work is synchronous) and
//! stops between two batches when the bot stops.

use crate::store::{FileStore, JournalStore, OverrideStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::clock::SharedClock;
use crate::journal::{Journal, stream};
use crate::settings::SettingsService;
use crate::settings::retention::PREFIX;
use crate::store::StoreError;
use crate::store::retention::{Holds, Pace, Policy, Swept};
use crate::vocab::journal::{Entry, Kind};

/// The first pass, this long after start: soon, but after the start's own
/// burst of work (backfill, the first ticks).
pub(crate) const FIRST_AFTER: Duration = Duration::from_secs(60);

/// Then one pass this often.
pub(crate) const EVERY: Duration = Duration::from_secs(60 * 60);

/// Pages given back per step of the vacuum (4 MiB of 4 KiB pages).
const VACUUM_STEP_PAGES: u32 = 1024;

pub struct Upkeep {
    store: Stores,
    settings: Arc<SettingsService>,
    journal: Journal,
    clock: SharedClock,
    pace: Pace,
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    pub swept: Swept,
    /// Pages returned to the disk.
    pub pages_returned: u64,
    /// The write-ahead log was emptied (false: a reader held it).
    pub log_emptied: bool,
    /// How long each of the pass's transactions (sweep batches, vacuum
    /// steps) held the writer.
    pub holds: Holds,
}

impl Upkeep {
    pub fn new(
        store: Stores,
        settings: Arc<SettingsService>,
        journal: Journal,
        clock: SharedClock,
    ) -> Self {
        Self {
            store,
            settings,
            journal,
            clock,
            pace: Pace::default(),
        }
    }

    /// The same upkeep sharing the writer at another pace (a benchmark
    /// that measures each batch without the rests between them).
    pub fn with_pace(mut self, pace: Pace) -> Self {
        self.pace = pace;
        self
    }

    /// What the sweep applies now: the operator's retention, and each
    /// server's that set its own (already no longer than the operator's).
    pub(crate) fn policy(&self) -> Result<Policy, StoreError> {
        let mut policy = Policy {
            operator: self.settings.global().storage.retention.keep(),
            ..Default::default()
        };
        for guild in self.store.overrides.guilds_overriding(PREFIX)? {
            let theirs = self
                .settings
                .for_guild(Some(guild))
                .storage
                .retention
                .keep();
            policy.guilds.insert(guild, theirs);
        }
        Ok(policy)
    }

    /// One pass, on the calling thread; `go_on` is asked between batches.
    pub fn pass(&self, go_on: &dyn Fn() -> bool) -> Result<Pass, StoreError> {
        let policy = self.policy()?;
        let now = self.clock.now();
        let swept = self.store.file.sweep(&policy, now, self.pace, go_on)?;
        // The context stream's own lines: a day's worth at most, one short delete.
        stream::cleanup(&self.store.journal, &self.settings.global(), now);
        let mut holds = swept.holds.clone();
        let pages_returned = self.store.file.give_back_space(
            VACUUM_STEP_PAGES,
            self.pace.rest,
            go_on,
            &mut holds,
        )?;
        let log_emptied = self.store.file.checkpoint()?;
        if swept.total() > 0 {
            self.journal.record(
                Entry::new(
                    Kind::System,
                    format!("retention: removed {}", swept.describe(&policy)),
                )
                .reason(self.reason(&swept, pages_returned, log_emptied, &holds)),
            );
        }
        Ok(Pass {
            swept,
            pages_returned,
            log_emptied,
            holds,
        })
    }

    fn reason(
        &self,
        swept: &Swept,
        pages_returned: u64,
        log_emptied: bool,
        holds: &Holds,
    ) -> String {
        let mut parts = vec!["storage.retention.* (0 keeps a kind forever)".to_string()];
        parts.push(format!(
            "{} short transactions, the longest holding the writer {} ms",
            holds.count(),
            holds.longest().as_millis()
        ));
        if swept.stopped {
            parts.push("stopped with the bot; the rest goes next time".into());
        }
        if let Ok(space) = self.store.file.space() {
            if space.gives_back {
                parts.push(format!(
                    "{} KiB given back to the disk, the database is {} KiB",
                    pages_returned * space.page_size / 1024,
                    space.bytes / 1024
                ));
            } else {
                parts.push(
                    "freed space is reused by new rows (a database made before incremental vacuum)"
                        .into(),
                );
            }
        }
        if !log_emptied {
            parts.push("the write-ahead log was in use and is emptied next time".into());
        }
        parts.join("; ")
    }

    /// Passes until `shutdown`: the first after [`FIRST_AFTER`], then every [`EVERY`].
    pub(crate) async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let stopping = Arc::new(AtomicBool::new(false));
        let mut wait = FIRST_AFTER;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => return,
            }
            wait = EVERY;
            let (me, stop) = (self.clone(), stopping.clone());
            let work =
                tokio::task::spawn_blocking(move || me.pass(&|| !stop.load(Ordering::Relaxed)));
            tokio::pin!(work);
            let done = tokio::select! {
                done = &mut work => done,
                _ = shutdown.changed() => {
                    // Ends at the next batch; what was removed stays removed.
                    stopping.store(true, Ordering::Relaxed);
                    // Harmless: the bot is stopping; a failure of the pass's
                    // last batch is found again by the next start's pass.
                    let _ = work.await;
                    return;
                }
            };
            match done {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    self.journal.record(
                        Entry::new(Kind::Error, "retention sweep failed")
                            .reason(format!("{e}; tried again in an hour")),
                    );
                }
                Err(e) => tracing::error!(error = %e, "the retention sweep panicked"),
            }
        }
    }
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub journal: JournalStore,
    pub overrides: OverrideStore,
    pub file: FileStore,
}
