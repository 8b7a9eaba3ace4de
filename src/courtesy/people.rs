//! What a person asked of the bot, kept in every process of a sharded bot.
//!
//! A person's boundaries and forget-me hold on every server, but each
//! process stores only its own guilds. With `storage.sharedDir` (one host)
//! or `storage.sharedUrl` (PostgreSQL, any hosts) set, the store passes each
//! boundary change and forget-me on to the people ledger (`store::people`,
//! `store::shared::people`) before making it; this module applies, in this
//! process's store, the events *other* processes wrote there: at start
//! (before the gateway connects), at once when PostgreSQL notifies of a new
//! one, and every [`POLL`] (the fallback for a missed notification). Each applied
//! event moves the store's cursor in the same transaction and is journaled
//! with ids only (who, which boundary, which event), never anyone's words.

use std::path::Path;
use std::time::Duration;

use crate::courtesy::Stores;
use crate::journal::Journal;
use crate::settings::{Secrets, Settings, StorageSettings};
use crate::store::StoreError;
use crate::store::people::{BATCH, LedgerEntry, PersonEvent, SharedLedger};
use crate::store::shared::SharedDb;
use crate::vocab::journal::{Entry, Kind};

/// How often a running process looks for other processes' events.
pub(crate) const POLL: Duration = Duration::from_secs(2);

/// The name a process writes under: its shard plan ("0-1/4"), or "all".
pub(crate) fn writer(settings: &Settings) -> String {
    settings
        .discord
        .shard_plan()
        .map_or_else(|| "all".into(), |p| format!("{}/{}", p.range, p.total))
}

/// The database `storage.sharedUrl` names, when it names one.
pub(crate) fn shared_db_if_set(
    storage: &StorageSettings,
    secrets: &Secrets,
) -> Result<Option<SharedDb>, StoreError> {
    if storage.shared_url.trim().is_empty() {
        return Ok(None);
    }
    shared_db(storage, secrets)
        .map(Some)
        .map_err(|e| StoreError::SharedLedger(e.to_string()))
}

/// The shared database `storage.sharedUrl` names, with the password from
/// the environment and TLS trusting `storage.sharedCaFile` when set.
pub(crate) fn shared_db(
    storage: &StorageSettings,
    secrets: &Secrets,
) -> crate::store::shared::Result<SharedDb> {
    let password = secrets.shared_password.as_ref().map(|p| p.expose());
    let ca_file = storage.shared_ca_file.trim();
    let ca_file = (!ca_file.is_empty()).then(|| Path::new(ca_file));
    SharedDb::new(crate::store::shared::config(
        storage.shared_url.trim(),
        password,
        ca_file,
    )?)
}

/// Applies other processes' events to this process's store.
#[derive(Clone)]
pub(crate) struct People {
    store: Stores,
    journal: Journal,
    ledger: SharedLedger,
}

impl People {
    /// `None` when `store` has no ledger (no `storage.sharedDir`): nothing to apply.
    pub(crate) fn new(store: &Stores, journal: &Journal) -> Option<Self> {
        Some(Self {
            ledger: store.people.ledger()?.clone(),
            store: store.clone(),
            journal: journal.clone(),
        })
    }

    /// Applies every event after this store's cursor that another process
    /// wrote, in order; the events applied. This process's own events were
    /// applied when written: the cursor just passes them.
    pub(crate) fn catch_up(&self) -> Result<Vec<PersonEvent>, StoreError> {
        let id = self.ledger.id();
        let mut applied = Vec::new();
        loop {
            let after = self.store.people.people_cursor(id)?;
            let batch = self.ledger.after(after, BATCH)?;
            let Some(last) = batch.last().map(|e| e.seq) else {
                return Ok(applied);
            };
            for entry in &batch {
                if entry.writer == self.ledger.writer() {
                    continue;
                }
                self.apply(entry)?;
                applied.push(entry.event);
            }
            // Own events at the end of the batch: nothing left to apply up to `last`.
            self.store.people.advance_people_cursor(id, last)?;
        }
    }

    fn apply(&self, entry: &LedgerEntry) -> Result<(), StoreError> {
        let id = self.ledger.id();
        let from = format!(
            "people ledger event {} from the process running shards {}",
            entry.seq, entry.writer
        );
        let line = match entry.event {
            PersonEvent::Boundary { user, boundary, on } => {
                let changed = self
                    .store
                    .people
                    .apply_boundary_event(id, entry, user, boundary, on)?;
                Entry::new(
                    Kind::Settings,
                    format!(
                        "member {user} {} a boundary on another server: {}",
                        if on { "set" } else { "lifted" },
                        boundary.meaning()
                    ),
                )
                .reason(if changed {
                    from
                } else {
                    format!("{from}; it already held here")
                })
            }
            PersonEvent::ForgetMe { user, messages } => {
                let gone = self
                    .store
                    .people
                    .apply_forget_event(id, entry, user, messages)?;
                Entry::new(
                    Kind::Memory,
                    format!("forgot everything about member {user}, asked on another server"),
                )
                .reason(format!(
                    "{} fact(s), {} message(s) erased, {} quote(s) redacted; {from}",
                    gone.facts, gone.messages, gone.redacted
                ))
            }
        };
        self.journal.record(line);
        Ok(())
    }

    /// Applies new events when the ledger says there are some and every
    /// [`POLL`], until shutdown; `applied` hears of each (voice lets go of a
    /// person at once). A failure is logged and tried again at the next
    /// poll: the cursor has not passed the event.
    pub(crate) async fn run(
        self,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
        applied: impl Fn(&PersonEvent) + Send + 'static,
    ) {
        let mut failing = None::<String>;
        let mut news = self.ledger.subscribe();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = heard(&mut news) => {}
                _ = shutdown.changed() => return,
            }
            let this = self.clone();
            // SQLite waits on another process's lock: off the async workers.
            match tokio::task::spawn_blocking(move || this.catch_up()).await {
                Ok(Ok(events)) => {
                    failing = None;
                    events.iter().for_each(&applied);
                }
                Ok(Err(e)) => {
                    let e = e.to_string();
                    // Once per distinct failure, not every poll.
                    if failing.as_deref() != Some(e.as_str()) {
                        tracing::warn!(error = %e, "cannot apply the people ledger; trying again");
                        failing = Some(e);
                    }
                }
                Err(e) => tracing::error!(error = %e, "applying the people ledger panicked"),
            }
        }
    }
}

/// Waits for the ledger's next wake-up; forever when it sends none.
async fn heard(news: &mut Option<tokio::sync::mpsc::Receiver<()>>) {
    match news {
        Some(rx) => {
            if rx.recv().await.is_none() {
                *news = None;
            }
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::UserId;
    use crate::store::Store;
    use crate::store::boundaries::Boundary;

    use crate::store::people::Ledger;

    fn process(shared: &Path, plan: &str) -> (Store, People) {
        let mut s = Settings::default();
        s.discord.shards = plan.into();
        s.discord.total_shards = 2;
        s.storage.shared_dir = shared.display().to_string();
        let ledger = Ledger::open(shared, &writer(&s)).unwrap();
        let store = Store::open_in_memory().unwrap().with_ledger(ledger);
        let journal = Journal::new(store.journal(), ManualClock::new(chrono::Utc::now()));
        let people = People::new(&(&store).into(), &journal).unwrap();
        (store, people)
    }

    #[test]
    fn another_processs_events_are_applied_once_and_its_own_are_passed() {
        let dir = tempfile::tempdir().unwrap();
        let (a, a_people) = process(dir.path(), "0");
        let (b, b_people) = process(dir.path(), "1");
        let ada = UserId(7);
        let now = chrono::Utc::now();
        a.people()
            .set_boundary(ada, Boundary::NoPing, true, now)
            .unwrap();
        a.people()
            .set_boundary(ada, Boundary::NoMemory, true, now)
            .unwrap();
        a.people()
            .set_boundary(ada, Boundary::NoMemory, false, now)
            .unwrap();
        b.people()
            .set_boundary(ada, Boundary::NoVoice, true, now)
            .unwrap();

        assert_eq!(b_people.catch_up().unwrap().len(), 3);
        let held: Vec<Boundary> = b
            .people()
            .boundaries(ada)
            .unwrap()
            .into_iter()
            .map(|(b, _)| b)
            .collect();
        assert_eq!(held, vec![Boundary::NoPing, Boundary::NoVoice]);
        assert!(b_people.catch_up().unwrap().is_empty(), "nothing twice");
        assert_eq!(
            a_people.catch_up().unwrap(),
            vec![PersonEvent::Boundary {
                user: ada,
                boundary: Boundary::NoVoice,
                on: true
            }]
        );
        assert!(a.people().has_boundary(ada, Boundary::NoVoice).unwrap());
        let people = a.people();
        let ledger = people.ledger().unwrap();
        assert_eq!(a.people().people_cursor(ledger.id()).unwrap(), 4);
        assert_eq!(b.people().people_cursor(ledger.id()).unwrap(), 4);
    }
}
