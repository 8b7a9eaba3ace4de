//! Scheduled backups (`storage.backup.*`): the running bot backs its data
//! directory up every `everyHours` into `storage.backup.dir`, keeps the
//! newest `keep`, and journals each with its size. The backup itself is the
//! store's (`store::backup`), made on a connection of its own on a blocking
//! thread, so the bot's writes go on meanwhile.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::clock::SharedClock;
use crate::journal::Journal;
use crate::settings::SettingsService;
use crate::store::backup;
use crate::vocab::journal::{Entry, Kind};

/// How often the schedule is looked at again: a changed setting counts
/// within this, and so does a backup removed by hand.
const LOOK_AGAIN: Duration = Duration::from_secs(60);

/// After a failed backup, the next try waits this long (not the whole interval).
const RETRY: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

pub(super) struct Backups {
    pub settings: Arc<SettingsService>,
    pub journal: Journal,
    pub clock: SharedClock,
    pub data_dir: PathBuf,
}

impl Backups {
    /// Until `stop`: a backup whenever one is due, then a look again.
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut retry_at = None;
        loop {
            let s = self.settings.global();
            let b = &s.storage.backup;
            let now = self.clock.now();
            if b.every_hours > 0 && !b.dir.trim().is_empty() && retry_at.is_none_or(|t| now >= t) {
                let dir = PathBuf::from(b.dir.trim());
                let every = chrono::TimeDelta::hours(i64::from(b.every_hours));
                if backup::next_due(&dir, every, now) <= now {
                    let Some(failed) = self.make(dir, b.keep as usize, &mut stop).await else {
                        return;
                    };
                    retry_at = failed.then_some(now + RETRY);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(LOOK_AGAIN) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// One backup, journaled; returns whether it failed, or `None` when
    /// `stop` came first (the backup is given up within one step).
    async fn make(
        &self,
        dir: PathBuf,
        keep: usize,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<bool> {
        let (data_dir, now) = (self.data_dir.clone(), self.clock.now());
        let shown = dir.display().to_string();
        let given_up = Arc::new(AtomicBool::new(false));
        let flag = given_up.clone();
        let mut task = tokio::task::spawn_blocking(move || {
            backup::scheduled(&data_dir, &dir, keep, now, &flag)
        });
        let made = tokio::select! {
            made = &mut task => made,
            _ = stop.changed() => {
                given_up.store(true, Ordering::Relaxed);
                // Harmless: given up, it has nothing to say; it ends within one step.
                let _ = task.await;
                return None;
            }
        };
        let entry = match made {
            Ok(Ok((made, removed))) => Entry::new(
                Kind::System,
                format!(
                    "backup made: {} ({} bytes)",
                    made.path.display(),
                    made.bytes
                ),
            )
            .reason(format!(
                "scheduled (storage.backup.everyHours); schema version {}, {} state file(s); \
                 {} older backup(s) removed to keep {keep}",
                made.schema,
                made.files,
                removed.len()
            )),
            Ok(Err(e)) => Entry::new(Kind::Error, format!("scheduled backup into {shown} failed"))
                .reason(format!("{e}; tried again in 10 minutes")),
            Err(e) => Entry::new(Kind::Error, format!("scheduled backup into {shown} failed"))
                .reason(format!("{e}; tried again in 10 minutes")),
        };
        let failed = entry.kind == Kind::Error;
        self.journal.record(entry);
        Some(failed)
    }
}
