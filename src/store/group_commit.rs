//! Group commit: writes whose loss in a crash costs nothing that cannot be
//! had again share one transaction, committed at most [`WINDOW`] later.
//!
//! Committing is what a stored message costs most (the WAL frames and their
//! locks), and a busy bot stores many. The messages Discord delivers (and
//! the routing lines about them, and the platform's id for a message the
//! bot sent) are written with [`Store::lock_grouped`](super::Store::lock_grouped):
//! the first opens a transaction, the next ones join it, and it is
//! committed when it is [`WINDOW`] old (a thread of the store's waits for
//! that), when it holds [`MAX_WRITES`], or as soon as anything else writes
//! or reads — [`Store::lock`](super::Store::lock) commits the group before
//! it hands the connection out (but for [`Store::read`](super::Store::read),
//! the names looked up for every message and the hourly cap's count, which
//! see the group's rows on the same connection and leave it open). So writes reach the disk in the order they
//! were made: a crash loses at most the last [`WINDOW`] of grouped writes,
//! never one made after them (the row of the bot's words, written before
//! they are sent) while keeping an earlier one. What is lost the platform
//! still has: Discord's backfill reads a channel again from a little before
//! its newest stored message on (the gateway's events are stored in the
//! order their tasks run, not always the order they came), and takes a sent
//! message's real id over its provisional row.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::Histogram;
use rusqlite::Connection;

use crate::metrics::StoreTimings;

/// The longest a grouped write waits to be committed.
pub(crate) const WINDOW: Duration = Duration::from_millis(100);

/// A group is committed once it holds this many writes, whatever its age.
const MAX_WRITES: usize = 1_000;

/// After a group is committed, no new one opens for this long: the writes
/// of that moment are committed each on its own. A group holds the
/// database's one write lock for its whole window, and on a busy bot the
/// next message would open the next group at once; another process
/// (`ambient remember`, the dashboard's forget-me) waiting for the lock
/// would find it free only between two groups, if ever. The rest gives it
/// that moment, every [`WINDOW`] at the latest.
pub(crate) const REST: Duration = Duration::from_millis(10);

/// The connection and the group open on it, if any.
pub(super) struct Db {
    pub(super) conn: Connection,
    /// When the open group's transaction began, and how many writes it holds.
    group: Option<(Instant, usize)>,
    /// No group opens before then (see [`REST`]).
    rest_until: Option<Instant>,
    /// [`REST`], but for tests that need a rest to last.
    pub(super) rest: Duration,
    /// The open transaction holds one write made during a rest: it is
    /// committed as soon as that write's connection is let go.
    pub(super) alone: bool,
    /// Where each group's time holding the write lock is observed, once
    /// the process's metrics are made ([`Shared::time_into`]).
    held: Option<Histogram>,
    /// Why the last group failed to commit, until one commits again: the
    /// store is not taking writes (a full disk), whatever its lock says.
    pub(super) lost: Option<String>,
}

impl Db {
    pub(super) fn new(conn: Connection) -> Self {
        Self {
            conn,
            group: None,
            rest_until: None,
            rest: REST,
            alone: false,
            held: None,
            lost: None,
        }
    }

    /// Commits the open group, if any. A failure is logged: the writes in it
    /// are the kind whose loss was accepted when they were grouped.
    pub(super) fn commit_group(&mut self) {
        let was_group = !std::mem::take(&mut self.alone);
        let Some((opened, _)) = self.group.take() else {
            return;
        };
        if self.conn.is_autocommit() {
            return;
        }
        if was_group {
            self.rest_until = Some(Instant::now() + self.rest);
        }
        match self.conn.execute_batch("COMMIT") {
            Ok(()) => self.lost = None,
            Err(e) => {
                tracing::error!(error = %e, "could not commit a group of writes; they are lost");
                self.lost = Some(e.to_string());
                // Harmless if it fails: it only fails when SQLite already rolled back.
                let _ = self.conn.execute_batch("ROLLBACK");
            }
        }
        if let Some(held) = &self.held {
            held.observe(opened.elapsed().as_secs_f64());
        }
    }

    /// Joins the open group, or opens one; whether a new group was opened
    /// (during a rest, a transaction of its own, committed on release).
    fn join_group(&mut self) -> rusqlite::Result<bool> {
        let full = self.group.is_some_and(|(_, n)| n >= MAX_WRITES);
        // SQLite may have rolled the transaction back itself (a full disk).
        if full || self.conn.is_autocommit() {
            self.commit_group();
        }
        match &mut self.group {
            Some((_, n)) => {
                *n += 1;
                Ok(false)
            }
            None => {
                self.conn.execute_batch("BEGIN IMMEDIATE")?;
                self.group = Some((Instant::now(), 1));
                self.alone = self.rest_until.is_some_and(|until| Instant::now() < until);
                Ok(!self.alone)
            }
        }
    }
}

impl Drop for Db {
    /// The last handle to the store is gone: what is grouped is committed,
    /// not rolled back with the connection.
    fn drop(&mut self) {
        self.commit_group();
    }
}

/// The connection behind its lock, with the committer's wake-up.
pub(super) struct Shared {
    db: Mutex<Db>,
    timer: Arc<Timer>,
    committer: OnceLock<()>,
    /// Where each wait for the connection is observed, once set.
    waits: OnceLock<Histogram>,
    /// [`WINDOW`], but for tests that need a group to stay open.
    pub(super) window: Duration,
}

/// When the committer thread must next look at the group.
#[derive(Default)]
struct Timer {
    due: Mutex<Due>,
    wake: Condvar,
}

#[derive(Default)]
struct Due {
    at: Option<Instant>,
    /// The store is gone: the thread ends.
    closed: bool,
}

impl Shared {
    pub(super) fn new(db: Db) -> Arc<Self> {
        Arc::new(Self {
            db: Mutex::new(db),
            timer: Arc::default(),
            committer: OnceLock::new(),
            waits: OnceLock::new(),
            window: WINDOW,
        })
    }

    pub(super) fn lock_db(&self) -> MutexGuard<'_, Db> {
        let asked = Instant::now();
        // A panic while holding the lock cannot leave SQLite inconsistent
        // (transactions roll back on drop), so a poisoned lock is still usable.
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(waits) = self.waits.get() {
            waits.observe(asked.elapsed().as_secs_f64());
        }
        db
    }

    /// Observes each wait for the connection and each group's hold of the
    /// write lock into `timings` from now on (a second call changes nothing).
    pub(super) fn time_into(&self, timings: StoreTimings) {
        if self.waits.set(timings.wait).is_ok() {
            self.lock_db().held = Some(timings.group);
        }
    }

    /// The connection inside the open group (opened if none is).
    pub(super) fn lock_grouped(self: &Arc<Self>) -> rusqlite::Result<MutexGuard<'_, Db>> {
        let mut db = self.lock_db();
        if db.join_group()? {
            self.committer.get_or_init(|| spawn_committer(self));
            let mut due = self.timer.lock();
            due.at = Some(Instant::now() + self.window);
            self.timer.wake.notify_one();
        }
        Ok(db)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.timer.lock().closed = true;
        self.timer.wake.notify_one();
    }
}

impl Timer {
    fn lock(&self) -> MutexGuard<'_, Due> {
        self.due.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The thread that commits a group once it is [`WINDOW`] old. It holds the
/// store weakly, so it ends with the store.
fn spawn_committer(shared: &Arc<Shared>) {
    let (store, timer) = (Arc::downgrade(shared), shared.timer.clone());
    let spawned = std::thread::Builder::new()
        .name("store-commit".into())
        .spawn(move || commit_when_due(&store, &timer));
    if let Err(e) = spawned {
        // Groups are then committed only by the next other use of the store.
        tracing::error!(error = %e, "could not start the store's commit thread");
    }
}

fn commit_when_due(store: &Weak<Shared>, timer: &Timer) {
    let mut due = timer.lock();
    loop {
        if due.closed {
            return;
        }
        let now = Instant::now();
        due = match due.at {
            None => timer.wake.wait(due).unwrap_or_else(|p| p.into_inner()),
            Some(at) if at > now => {
                timer
                    .wake
                    .wait_timeout(due, at - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
            Some(_) => {
                due.at = None;
                drop(due);
                let Some(shared) = store.upgrade() else {
                    return;
                };
                commit_if_old(&mut shared.lock_db(), shared.window);
                drop(shared);
                timer.lock()
            }
        };
    }
}

/// Commits the open group if it is `window` old; a younger one (opened
/// since the timer was set) set the timer again when it was opened.
fn commit_if_old(db: &mut Db, window: Duration) {
    if db
        .group
        .is_some_and(|(opened, _)| opened.elapsed() >= window)
    {
        db.commit_group();
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use crate::ids::{ChannelId, GuildId, MessageId};
    use crate::store::Store;
    use crate::store::messages::{Commit, Seen, StoredMessage, sample};

    fn chatter(id: u64) -> StoredMessage {
        let at = chrono::Utc.with_ymd_and_hms(2025, 3, 1, 12, 0, 0).unwrap();
        sample(id, 5, &format!("chatter {id}"), at)
    }

    fn seen(m: &StoredMessage) -> Seen<'_> {
        Seen {
            message: m,
            guild_name: Some("the harbour"),
            channel_name: Some("general"),
            now: m.created_at,
        }
    }

    /// A store in a fresh directory whose group only the store's own uses
    /// commit: its window is one no test outlasts, and it never rests.
    fn held_open() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path())
            .unwrap()
            .with_group_window(std::time::Duration::from_secs(3600))
            .with_group_rest(std::time::Duration::ZERO);
        (dir, store)
    }

    /// Messages in the file as another process sees it.
    fn on_disk(dir: &std::path::Path) -> i64 {
        rusqlite::Connection::open(dir.join(crate::store::DB_FILE))
            .unwrap()
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn grouped_writes_reach_the_disk_with_the_next_other_use_and_in_order() {
        let (dir, store) = held_open();
        for id in 1..=3 {
            assert!(
                store
                    .messages()
                    .insert_seen(&seen(&chatter(id)), Commit::Grouped)
                    .unwrap()
            );
        }
        assert_eq!(on_disk(dir.path()), 0, "grouped writes wait");
        // The names looked up for every message see the group and leave it open.
        assert_eq!(
            store.messages().guild_name(GuildId(1)).unwrap().as_deref(),
            Some("the harbour")
        );
        assert_eq!(
            store
                .messages()
                .channel_name(ChannelId(5))
                .unwrap()
                .as_deref(),
            Some("general")
        );
        assert_eq!(on_disk(dir.path()), 0, "a name lookup commits nothing");
        // Any other use of the store commits the group first.
        assert!(store.messages().message(MessageId(3)).unwrap().is_some());
        assert_eq!(on_disk(dir.path()), 3);

        store
            .messages()
            .insert_seen(&seen(&chatter(4)), Commit::Grouped)
            .unwrap();
        assert_eq!(on_disk(dir.path()), 3, "a grouped write waits");
        store
            .messages()
            .insert_seen(&seen(&chatter(5)), Commit::Now)
            .unwrap();
        assert_eq!(
            on_disk(dir.path()),
            5,
            "a write made now takes the group with it"
        );
    }

    #[test]
    fn an_answers_memory_search_leaves_the_group_open() {
        use crate::vocab::fact::{Fact, FactKind, Importance, Scope};
        let (dir, store) = held_open();
        let then = chrono::Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
        let fact = Fact::new(
            Scope::guild(GuildId(1)),
            FactKind::Fact,
            Importance::Medium,
            "the ferry leaves at nine",
            then,
        );
        store.memory().insert_fact(&fact).unwrap();
        let question = chatter(1);
        store
            .messages()
            .insert_seen(&seen(&question), Commit::Grouped)
            .unwrap();

        // A search that found nothing touches nothing.
        store
            .memory()
            .touch_facts(&[], question.created_at)
            .unwrap();
        assert_eq!(on_disk(dir.path()), 0, "the question is still grouped");
        // What a search found is marked used in the group, with the question.
        store
            .memory()
            .touch_facts(std::slice::from_ref(&fact.id), question.created_at)
            .unwrap();
        assert_eq!(on_disk(dir.path()), 0, "the question is still grouped");
        store.file().flush();
        assert_eq!(on_disk(dir.path()), 1);
        let seen_at = store.memory().fact(&fact.id).unwrap().unwrap().last_seen_at;
        assert_eq!(seen_at, question.created_at);
    }

    #[test]
    fn a_group_left_alone_is_committed_by_the_stores_thread() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .messages()
            .insert_seen(&seen(&chatter(1)), Commit::Grouped)
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while on_disk(dir.path()) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the group was never committed"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn the_last_handle_going_commits_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .messages()
            .insert_seen(&seen(&chatter(1)), Commit::Grouped)
            .unwrap();
        store
            .journal()
            .journal_append_with(
                &crate::vocab::journal::Entry::new(crate::vocab::journal::Kind::Route, "→ pass")
                    .place(Some(GuildId(1)), Some(ChannelId(5))),
                None,
                Commit::Grouped,
            )
            .unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert!(store.messages().message(MessageId(1)).unwrap().is_some());
        assert_eq!(
            store
                .journal()
                .journal_query(&crate::vocab::journal::Filter::default())
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn a_private_store_is_read_by_others_once_it_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_as(dir.path(), super::super::Sharing::Private).unwrap();
        store
            .messages()
            .insert_seen(&seen(&chatter(1)), Commit::Grouped)
            .unwrap();
        drop(store);
        assert!(
            !dir.path().join("ambient.db-shm").exists(),
            "the log's index was kept in memory"
        );
        let store = Store::open(dir.path()).unwrap();
        assert!(store.messages().message(MessageId(1)).unwrap().is_some());
    }

    /// A private store's commits write their pages into the file once: no
    /// write-ahead log is kept beside it (each frame written there, then
    /// copied into the file at a checkpoint, was most of a replay's system
    /// time), and what it committed is there for the next open.
    #[test]
    fn a_private_store_keeps_no_write_ahead_log() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_as(dir.path(), super::super::Sharing::Private).unwrap();
        for i in 1..=50 {
            store
                .messages()
                .insert_seen(&seen(&chatter(i)), Commit::Grouped)
                .unwrap();
            store.lock();
        }
        let wal = dir.path().join("ambient.db-wal");
        let mode: String = store
            .lock()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "memory");
        assert!(
            std::fs::metadata(&wal).map_or(0, |m| m.len()) == 0,
            "50 commits went through a write-ahead log"
        );
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert!(store.messages().message(MessageId(50)).unwrap().is_some());
    }

    /// After a group, the store rests: a grouped write of that moment is
    /// committed on its own, at once, so the write lock is free between
    /// writes and another process finds it (without the rest, a busy bot
    /// opens the next group as the last one closes).
    #[test]
    fn after_a_group_the_store_rests_and_another_process_can_write() {
        let (dir, store) = held_open();
        let store = store.with_group_rest(std::time::Duration::from_secs(3600));
        store
            .messages()
            .insert_seen(&seen(&chatter(1)), Commit::Grouped)
            .unwrap();
        assert_eq!(on_disk(dir.path()), 0, "the first group waits");
        store.file().flush();
        store
            .messages()
            .insert_seen(&seen(&chatter(2)), Commit::Grouped)
            .unwrap();
        assert_eq!(
            on_disk(dir.path()),
            2,
            "resting, a grouped write is committed alone"
        );
        let other = rusqlite::Connection::open(dir.path().join(crate::store::DB_FILE)).unwrap();
        other.busy_timeout(std::time::Duration::ZERO).unwrap();
        other
            .execute_batch("BEGIN IMMEDIATE; DELETE FROM messages WHERE id = 2; COMMIT")
            .expect("the write lock is free while the bot rests");
    }
}
