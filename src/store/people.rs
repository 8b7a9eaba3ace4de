//! The people ledger: what belongs to a *person* across every process of a
//! sharded bot — their boundaries and their forget-me — as an append-only
//! log ([`PeopleLog`]): here, one SQLite file, `<storage.sharedDir>/people.db`;
//! across hosts, a PostgreSQL table (`store::shared::people`).
//!
//! Each process keeps its guilds' data in its own store; a person spans
//! them. So where a boundary is set or lifted, or forget-me runs, the store
//! first appends the event here ([`Store::with_ledger`] makes `set_boundary`
//! and `forget_person` do so), and every process applies the events other
//! processes wrote to its own store (`courtesy::people`), remembering how
//! far it got in a cursor of its own store (migration 15). An event holds
//! ids and a boundary's name, never anyone's words.
//!
//! Several processes write it at once: WAL, a busy timeout, and each append
//! its own short transaction. That needs one host, or a filesystem whose
//! locks work (not NFS). Rows are never changed or deleted (triggers refuse
//! it), so a sequence number, once read, means the same event forever.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::boundaries::{Boundary, write_boundary};
use super::{PeopleStore, Result, Store, StoreError, from_ms, to_ms};
use crate::ids::UserId;

/// The ledger's file in `storage.sharedDir`.
pub(crate) const LEDGER_FILE: &str = "people.db";

/// The ledger file's own schema version (`PRAGMA user_version`).
const LEDGER_VERSION: u32 = 1;

/// The setting that names the ledger's directory.
const SHARED_DIR: &str = "storage.sharedDir";

/// Events read per batch when catching up.
pub(crate) const BATCH: usize = 500;

const LEDGER_SCHEMA: &str = r#"
    CREATE TABLE IF NOT EXISTS ledger (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        ledger_id  TEXT    NOT NULL,     -- names this ledger in each store's cursor
        created_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS events (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        at       INTEGER NOT NULL,       -- Unix ms
        user_id  INTEGER NOT NULL,
        kind     TEXT    NOT NULL CHECK (kind IN ('boundary_set', 'boundary_cleared', 'forget_me')),
        boundary TEXT    CHECK (boundary IN ('no_ping', 'no_unprompted', 'no_memory', 'no_voice')),
        messages INTEGER NOT NULL DEFAULT 0,   -- forget-me: the text of what they said too
        writer   TEXT    NOT NULL        -- the writing process's shard plan, e.g. "0-1/4"
    );
    CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'the people ledger is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'the people ledger is append-only'); END;
"#;

/// Something a person asked that holds on every server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersonEvent {
    /// A boundary set (`on`) or lifted.
    Boundary {
        user: UserId,
        boundary: Boundary,
        on: bool,
    },
    /// Forget-me; with `messages`, the text of what they said too.
    ForgetMe { user: UserId, messages: bool },
}

/// One event as the ledger holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerEntry {
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// The shard plan of the process that wrote it.
    pub writer: String,
    pub event: PersonEvent,
}

/// An append-only list of [`PersonEvent`]s every process of the bot shares,
/// whichever database holds it.
pub trait PeopleLog: Send + Sync + std::fmt::Debug {
    /// This ledger's id (a store's cursor belongs to one ledger).
    fn id(&self) -> &str;
    /// The shard plan this process writes under.
    fn writer(&self) -> &str;
    /// Appends `event`; its sequence number. An event appended after
    /// another has a larger one, and no reader sees it before the earlier.
    fn append(&self, event: &PersonEvent, at: DateTime<Utc>) -> Result<i64>;
    /// Up to `limit` events after `seq`, in order.
    fn after(&self, seq: i64, limit: usize) -> Result<Vec<LedgerEntry>>;
    /// Wakes its receiver soon after another process appends, where the
    /// database can say so (PostgreSQL's `LISTEN`); `None`: poll only.
    fn subscribe(&self) -> Option<tokio::sync::mpsc::Receiver<()>> {
        None
    }
}

/// The ledger one store passes its people's events on to; cheap to clone.
pub(crate) type SharedLedger = Arc<dyn PeopleLog>;

/// The shared ledger in `storage.sharedDir`; cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
    id: String,
    writer: String,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ledger({})", self.path.display())
    }
}

impl Ledger {
    /// Opens (creating if needed) `<shared_dir>/people.db`; `writer` names
    /// this process (its shard plan) in what it appends.
    pub fn open(shared_dir: &Path, writer: &str) -> Result<Self> {
        std::fs::create_dir_all(shared_dir).map_err(|source| StoreError::DataDir {
            path: shared_dir.to_path_buf(),
            source,
        })?;
        let path = shared_dir.join(LEDGER_FILE);
        super::migrations::refuse_newer_file(&path, LEDGER_VERSION, SHARED_DIR)?;
        let fail = |source: rusqlite::Error| StoreError::Ledger {
            path: path.clone(),
            source,
        };
        let mut conn = Connection::open(&path).map_err(fail)?;
        // Set first: another process may be creating the file this moment.
        conn.busy_handler(Some(super::wait_for_the_lock))
            .map_err(fail)?;
        // Before the first write (the switch to WAL): a newer ambient's
        // ledger is refused untouched.
        match super::migrations::refuse_newer(&conn, LEDGER_VERSION, Some(&path), SHARED_DIR) {
            Err(StoreError::Sqlite(source)) => return Err(fail(source)),
            checked => checked?,
        }
        super::write_ahead(&conn).map_err(fail)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
        super::steady_plans(&conn).map_err(fail)?;
        let id = create(&mut conn).map_err(fail)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            path,
            id,
            writer: writer.to_string(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fail(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Ledger {
            path: self.path.clone(),
            source,
        }
    }
}

impl PeopleLog for Ledger {
    fn id(&self) -> &str {
        &self.id
    }

    fn writer(&self) -> &str {
        &self.writer
    }

    /// SQLite writes one transaction at a time: sequence order is commit order.
    fn append(&self, event: &PersonEvent, at: DateTime<Utc>) -> Result<i64> {
        let (user, kind, boundary, messages) = event.columns();
        let conn = self.lock();
        conn.execute(
            "INSERT INTO events (at, user_id, kind, boundary, messages, writer)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                to_ms(at),
                user.to_sql(),
                kind,
                boundary,
                messages,
                self.writer
            ],
        )
        .map_err(|e| self.fail(e))?;
        Ok(conn.last_insert_rowid())
    }

    fn after(&self, seq: i64, limit: usize) -> Result<Vec<LedgerEntry>> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, at, user_id, kind, boundary, messages, writer FROM events
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map(params![seq, limit as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, bool>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.fail(e))?;
        rows.into_iter()
            .map(|(seq, at, user, kind, boundary, messages, writer)| {
                let event = PersonEvent::from_columns(seq, user, &kind, boundary, messages)?;
                Ok(LedgerEntry {
                    seq,
                    at: from_ms(at),
                    writer,
                    event,
                })
            })
            .collect()
    }
}

impl PersonEvent {
    /// As a ledger row holds it: user, kind, boundary, messages.
    pub(crate) fn columns(&self) -> (UserId, &'static str, Option<&'static str>, bool) {
        match *self {
            PersonEvent::Boundary { user, boundary, on } => (
                user,
                if on {
                    "boundary_set"
                } else {
                    "boundary_cleared"
                },
                Some(boundary.as_str()),
                false,
            ),
            PersonEvent::ForgetMe { user, messages } => (user, "forget_me", None, messages),
        }
    }

    /// From a ledger row's columns; a row no ambient writes is `Corrupt`,
    /// named by its sequence number.
    pub(crate) fn from_columns(
        seq: i64,
        user: i64,
        kind: &str,
        boundary: Option<String>,
        messages: bool,
    ) -> Result<PersonEvent> {
        let user = UserId::from_sql(user);
        let boundary = || {
            boundary
                .as_deref()
                .and_then(Boundary::parse)
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "people ledger event {seq}: {kind} without a known boundary"
                    ))
                })
        };
        match kind {
            "boundary_set" | "boundary_cleared" => Ok(PersonEvent::Boundary {
                user,
                boundary: boundary()?,
                on: kind == "boundary_set",
            }),
            "forget_me" => Ok(PersonEvent::ForgetMe { user, messages }),
            other => Err(StoreError::Corrupt(format!(
                "people ledger event {seq}: unknown kind {other:?}"
            ))),
        }
    }
}

/// Creates the schema and the ledger's id once, whoever comes first; the id.
fn create(conn: &mut Connection) -> rusqlite::Result<String> {
    // IMMEDIATE: two processes creating the file at once take turns.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(LEDGER_SCHEMA)?;
    tx.execute(
        "INSERT OR IGNORE INTO ledger (id, ledger_id, created_at) VALUES (1, ?1, ?2)",
        params![uuid::Uuid::new_v4().to_string(), to_ms(Utc::now())],
    )?;
    tx.pragma_update(None, "user_version", LEDGER_VERSION)?;
    let id = tx.query_row("SELECT ledger_id FROM ledger WHERE id = 1", [], |r| {
        r.get(0)
    })?;
    tx.commit()?;
    Ok(id)
}

impl Store {
    /// This store, appending every boundary change and forget-me to `ledger`
    /// before making it here (so a change the other processes would miss is
    /// refused, and the person is told). Clones made after share it.
    pub(crate) fn with_ledger(mut self, ledger: impl PeopleLog + 'static) -> Self {
        self.ledger = Some(Arc::new(ledger));
        self
    }
}

impl PeopleStore {
    /// Where boundaries and forget-me are passed on to the bot's other processes, if anywhere.
    pub(crate) fn ledger(&self) -> Option<&SharedLedger> {
        self.0.ledger.as_ref()
    }

    /// Sets (`on`) or lifts a boundary; `true` if that changed anything.
    /// With a people ledger, the change is passed on to the bot's other
    /// processes first: if it cannot be, nothing changes here.
    pub fn set_boundary(
        &self,
        user: UserId,
        boundary: Boundary,
        on: bool,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        self.pass_on(PersonEvent::Boundary { user, boundary, on }, at)?;
        Ok(write_boundary(&self.0.lock(), user, boundary, on, at)?)
    }

    /// Appends `event` to the ledger, if this store has one.
    pub(crate) fn pass_on(&self, event: PersonEvent, at: DateTime<Utc>) -> Result<()> {
        if let Some(ledger) = &self.0.ledger {
            ledger.append(&event, at)?;
        }
        Ok(())
    }

    /// The last ledger event this store has applied (0: none yet).
    pub fn people_cursor(&self, ledger_id: &str) -> Result<i64> {
        Ok(self
            .0
            .lock()
            .prepare_cached("SELECT seq FROM people_cursor WHERE ledger_id = ?1")?
            .query_row([ledger_id], |r| r.get(0))
            .optional()?
            .unwrap_or(0))
    }

    /// Moves the cursor on to `seq` without applying anything (the events
    /// up to it were this process's own, already applied when written).
    pub(crate) fn advance_people_cursor(&self, ledger_id: &str, seq: i64) -> Result<()> {
        set_cursor(&self.0.lock(), ledger_id, seq)?;
        Ok(())
    }

    /// Applies another process's boundary event here and moves the cursor
    /// to it, in one transaction; `true` if the boundary changed. Applying
    /// it again changes nothing.
    pub(crate) fn apply_boundary_event(
        &self,
        ledger_id: &str,
        entry: &LedgerEntry,
        user: UserId,
        boundary: Boundary,
        on: bool,
    ) -> Result<bool> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let changed = write_boundary(&tx, user, boundary, on, entry.at)?;
        set_cursor(&tx, ledger_id, entry.seq)?;
        tx.commit()?;
        Ok(changed)
    }
}

/// Sets the cursor; never moves it back.
pub(super) fn set_cursor(conn: &Connection, ledger_id: &str, seq: i64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO people_cursor (ledger_id, seq) VALUES (?1, ?2)
         ON CONFLICT (ledger_id) DO UPDATE SET seq = max(seq, excluded.seq)",
        params![ledger_id, seq],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boundary(user: u64, on: bool) -> PersonEvent {
        PersonEvent::Boundary {
            user: UserId(user),
            boundary: Boundary::NoPing,
            on,
        }
    }

    #[test]
    fn processes_starting_together_all_open_a_new_ledger() {
        // Each thread's connection locks the file as another process's would.
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let start = std::sync::Barrier::new(4);
            let ids: Vec<String> = std::thread::scope(|s| {
                let opens: Vec<_> = (0..4)
                    .map(|i| {
                        let (dir, start) = (dir.path(), &start);
                        s.spawn(move || {
                            start.wait();
                            Ledger::open(dir, &format!("{i}/4")).map(|l| l.id().to_string())
                        })
                    })
                    .collect();
                opens
                    .into_iter()
                    .map(|o| o.join().unwrap().expect("every process opens the ledger"))
                    .collect()
            });
            assert!(ids.iter().all(|id| *id == ids[0]), "one ledger: {ids:?}");
        }
    }

    #[test]
    fn two_processes_share_one_ledger_in_order_and_it_is_append_only() {
        let dir = tempfile::tempdir().unwrap();
        let a = Ledger::open(dir.path(), "0/2").unwrap();
        let b = Ledger::open(dir.path(), "1/2").unwrap();
        assert_eq!(a.id(), b.id(), "one ledger, one id");
        let now = Utc::now();
        assert_eq!(a.append(&boundary(7, true), now).unwrap(), 1);
        let forget = PersonEvent::ForgetMe {
            user: UserId(7),
            messages: true,
        };
        assert_eq!(b.append(&forget, now).unwrap(), 2);
        let seen = a.after(0, BATCH).unwrap();
        assert_eq!(
            seen.iter()
                .map(|e| (e.seq, e.writer.as_str(), e.event))
                .collect::<Vec<_>>(),
            vec![(1, "0/2", boundary(7, true)), (2, "1/2", forget)]
        );
        assert_eq!(a.after(1, BATCH).unwrap().len(), 1);
        let refused = a
            .lock()
            .execute("DELETE FROM events", [])
            .unwrap_err()
            .to_string();
        assert!(refused.contains("append-only"), "{refused}");
    }

    #[test]
    fn a_ledger_with_a_store_passes_boundaries_on_and_the_cursor_only_moves_forward() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path(), "0/2").unwrap();
        let store = Store::open_in_memory().unwrap().with_ledger(ledger.clone());
        let now = Utc::now();
        store
            .people()
            .set_boundary(UserId(7), Boundary::NoPing, true, now)
            .unwrap();
        store.people().forget_person(UserId(7), false, now).unwrap();
        let events: Vec<PersonEvent> = ledger
            .after(0, BATCH)
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect();
        assert_eq!(
            events,
            vec![
                boundary(7, true),
                PersonEvent::ForgetMe {
                    user: UserId(7),
                    messages: false
                }
            ]
        );

        let other = Store::open_in_memory().unwrap();
        assert_eq!(other.people().people_cursor(ledger.id()).unwrap(), 0);
        let first = &ledger.after(0, 1).unwrap()[0];
        for _ in 0..2 {
            other
                .people()
                .apply_boundary_event(ledger.id(), first, UserId(7), Boundary::NoPing, true)
                .unwrap();
        }
        assert!(
            other
                .people()
                .has_boundary(UserId(7), Boundary::NoPing)
                .unwrap()
        );
        assert_eq!(other.people().people_cursor(ledger.id()).unwrap(), 1);
        other
            .people()
            .advance_people_cursor(ledger.id(), 5)
            .unwrap();
        other
            .people()
            .advance_people_cursor(ledger.id(), 3)
            .unwrap();
        assert_eq!(other.people().people_cursor(ledger.id()).unwrap(), 5);
    }

    #[test]
    fn a_ledger_that_cannot_be_written_refuses_the_change_here_too() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path(), "0/2").unwrap();
        let store = Store::open_in_memory().unwrap().with_ledger(ledger.clone());
        // Another process holds the ledger's write lock past the busy timeout.
        ledger
            .lock()
            .busy_timeout(std::time::Duration::ZERO)
            .unwrap();
        let blocker = Connection::open(ledger.path()).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        let err = store
            .people()
            .set_boundary(UserId(7), Boundary::NoPing, true, Utc::now())
            .unwrap_err()
            .to_string();
        assert!(err.contains("people.db"), "{err}");
        assert!(
            !store
                .people()
                .has_boundary(UserId(7), Boundary::NoPing)
                .unwrap(),
            "nothing changed here either"
        );
    }
}
