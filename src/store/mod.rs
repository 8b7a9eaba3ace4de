//! The store: one SQLite file in `storage.dataDir`, the only place with SQL.
//!
//! Opened in WAL mode with `synchronous=NORMAL`: a committed transaction
//! survives the process being killed (only a power cut could lose the last
//! few), which is what "an acknowledged message is never lost" needs. The
//! schema is versioned (`PRAGMA user_version`) and migrated at open; a
//! database written by a newer binary is refused rather than damaged.
//!
//! Writes whose loss in a crash the platform can make good (the messages
//! nobody addressed, and the routing lines saying they were let pass) may be
//! grouped instead: see [`group_commit`].
//!
//! Each table family has its own module and its own handle (see
//! [`handles`]): a caller is given a [`MessageStore`] and writes
//! `messages.insert_message(..)`, never sees SQL, and cannot reach
//! another family's tables.

pub mod access;
pub mod backup;
pub mod boundaries;
pub(crate) mod channels;
pub(crate) mod conditions;
pub mod departed;
pub mod discovery;
pub mod feeds;
pub(crate) mod forget;
pub mod garden;
pub(crate) mod group_commit;
pub mod guild_io;
pub(crate) mod guild_settings;
mod handles;
pub(crate) mod hushes;
pub mod impulses;
pub(crate) mod initiative;
pub(crate) mod journal;
pub(crate) mod lock;
pub mod memory;
pub mod messages;
pub mod migrations;
pub mod pairing;
pub mod partition;
pub mod people;
pub mod retention;
pub mod shared;
pub mod stream;
pub mod unanswered;
pub mod usage;
pub(crate) mod voice;

use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{Connection, ErrorCode};

pub(crate) use handles::cut;
pub use handles::{
    DiscoveryStore, FeedStore, FileStore, GardenStore, GuildStore, ImpulseStore, InitiativeStore,
    JournalStore, MemoryStore, MessageStore, OverrideStore, PeopleStore, UsageStore, VoiceStore,
};

pub const DB_FILE: &str = "ambient.db";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Left exactly as it was: see [`migrations::refuse_newer_file`].
    #[error(
        "the database {path} has schema version {found}, but this ambient only knows up to version {known}: \
         it was written by a newer ambient, and was left as it was. Run that ambient (or a newer one) on it; \
         to go back to this version, restore the backup taken before upgrading (README, \"Upgrading\"), \
         or point {setting} at another directory."
    )]
    TooNew {
        path: PathBuf,
        found: u32,
        known: u32,
        /// The setting that names where the file is.
        setting: &'static str,
    },
    #[error("migration to schema version {version} failed: {source}")]
    Migration {
        version: u32,
        source: rusqlite::Error,
    },
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored data is malformed: {0}")]
    Corrupt(String),
    #[error("cannot search for the forgotten texts: {0}")]
    Forget(String),
    /// The people ledger in `storage.sharedDir` could not be read or written.
    #[error(
        "the people ledger {path} (storage.sharedDir), which passes boundaries and forget-me to the bot's \
         other processes, failed: {source}"
    )]
    Ledger {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The people ledger in PostgreSQL (`storage.sharedUrl`) could not be read or written.
    #[error(
        "the people ledger in PostgreSQL (storage.sharedUrl), which passes boundaries and \
         forget-me to the bot's other processes, failed: {0}"
    )]
    SharedLedger(String),
    #[error("the last group of writes could not be committed ({0}); they were lost")]
    GroupLost(String),
}

pub(crate) type Result<T> = std::result::Result<T, StoreError>;

/// A handle to the database; cheap to clone, safe to share between tasks.
///
/// Queries are short (indexed lookups, single-row writes), so they run on
/// the calling task under a mutex rather than hopping to a blocking pool.
#[derive(Clone)]
pub struct Store {
    shared: Arc<group_commit::Shared>,
    path: Option<PathBuf>,
    /// Where boundaries and forget-me are passed on to other processes (`people`).
    ledger: Option<people::SharedLedger>,
}

/// The connection, locked; see [`Store::lock`] and [`Store::lock_grouped`].
pub(crate) struct Conn<'a>(MutexGuard<'a, group_commit::Db>);

impl std::ops::Deref for Conn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.0.conn
    }
}

impl std::ops::DerefMut for Conn<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.0.conn
    }
}

impl Drop for Conn<'_> {
    /// A write made while grouping rests is committed as it is let go.
    fn drop(&mut self) {
        if self.0.alone {
            self.0.commit_group();
        }
    }
}

/// Whether other processes may use the database while this one has it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sharing {
    /// The bot and its commands (`ambient status`, the dashboard, a forget-me
    /// from the console) read and write it side by side.
    #[default]
    Shared,
    /// This process alone until it closes it (SQLite's exclusive locking
    /// mode): no file lock taken and released around every transaction, a
    /// third of a replay's time; and no write waits for the disk. For a
    /// store nobody else can reach and nobody needs after a crash (the
    /// replay's own data directory, held by its lock).
    Private,
}

impl Store {
    /// Opens (creating if needed) `<data_dir>/ambient.db` and migrates it.
    pub fn open(data_dir: &Path) -> Result<Self> {
        Self::open_as(data_dir, Sharing::Shared)
    }

    /// [`Store::open`], shared with other processes or not.
    pub(crate) fn open_as(data_dir: &Path, sharing: Sharing) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::DataDir {
            path: data_dir.to_path_buf(),
            source,
        })?;
        let path = data_dir.join(DB_FILE);
        migrations::refuse_newer_file(&path, migrations::latest(), migrations::DATA_DIR)?;
        let conn = Connection::open(&path)?;
        if sharing == Sharing::Private {
            // Before the switch to WAL: then SQLite keeps the log's index in
            // this process's memory, not in a file others map.
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
        }
        let store = Self::prepare(conn, Some(path), migrations::latest())?;
        if sharing == Sharing::Private {
            // A private store is a simulation's (the replay's): what a crash
            // would lose is rerun in seconds, so no write waits for the disk,
            // and a commit writes its pages once, into the file, with the
            // rollback journal in memory — not a frame each into the
            // write-ahead log and then again into the file at a checkpoint
            // (half a replay's system time, most of it those writes).
            let conn = store.lock();
            conn.pragma_update(None, "synchronous", "OFF")?;
            conn.pragma_update(None, "journal_mode", "MEMORY")?;
        }
        Ok(store)
    }

    /// A private in-memory database, for tests.
    pub fn open_in_memory() -> Result<Self> {
        Self::prepare(Connection::open_in_memory()?, None, migrations::latest())
    }

    /// Opens a database migrated only up to `version` (for upgrade tests).
    pub fn open_at_version(data_dir: &Path, version: u32) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::DataDir {
            path: data_dir.to_path_buf(),
            source,
        })?;
        let path = data_dir.join(DB_FILE);
        migrations::refuse_newer_file(&path, migrations::latest(), migrations::DATA_DIR)?;
        Self::prepare(Connection::open(&path)?, Some(path), version)
    }

    fn prepare(mut conn: Connection, path: Option<PathBuf>, up_to: u32) -> Result<Self> {
        // Set first: a command (`ambient status`) may open the store while
        // the bot is creating it or writing.
        conn.busy_handler(Some(wait_for_the_lock))?;
        // Before the first write (the switch to WAL): a newer ambient's file
        // is refused untouched.
        migrations::refuse_newer(
            &conn,
            migrations::latest(),
            path.as_deref(),
            migrations::DATA_DIR,
        )?;
        // A new database gives freed pages back to the disk when asked
        // (`retention`); before its first table is made is the only time
        // this can be chosen without rewriting the file, and on a database
        // that has tables it changes nothing.
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
        write_ahead(&conn)?;
        writers_wait(&mut conn);
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Deleted rows are zeroed on disk, not left in free space: what
        // forget-me removes must not be recoverable from the file.
        conn.pragma_update(None, "secure_delete", "ON")?;
        // The same few dozen queries run every tick: parsing them once each
        // matters more than the memory a statement holds.
        conn.set_prepared_statement_cache_capacity(64);
        steady_plans(&conn)?;
        migrations::apply(&conn, up_to, path.as_deref())?;
        Ok(Self {
            shared: group_commit::Shared::new(group_commit::Db::new(conn)),
            path,
            ledger: None,
        })
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The connection, for this module's table-family files only. Grouped
    /// writes are committed first, so whatever is done with it is ordered
    /// after them on disk too, and it is in autocommit mode.
    pub(crate) fn lock(&self) -> Conn<'_> {
        let mut db = self.shared.lock_db();
        db.commit_group();
        Conn(db)
    }

    /// The connection for a plain read that leaves the open group of writes
    /// open: the group is this connection's own transaction, so its rows are
    /// seen without committing them. For the reads asked of every message
    /// (a guild's or channel's name) and before every answer or reaction
    /// (the hourly cap's count) — committing there would commit each
    /// message alone and undo the grouping. Never for a write: it would join
    /// the group unawares.
    pub(crate) fn read(&self) -> Conn<'_> {
        Conn(self.shared.lock_db())
    }

    /// The connection inside the open group of writes (see [`group_commit`]):
    /// what is written with it is committed within [`group_commit::WINDOW`],
    /// and lost if the process dies before that.
    pub(crate) fn lock_grouped(&self) -> Result<Conn<'_>> {
        Ok(Conn(self.shared.lock_grouped()?))
    }

    /// This store with grouped writes waiting up to `window` (tests that
    /// need a group to stay open).
    #[cfg(test)]
    pub(crate) fn with_group_window(mut self, window: std::time::Duration) -> Self {
        Arc::get_mut(&mut self.shared)
            .expect("set before the store is shared")
            .window = window;
        self
    }

    /// This store resting `rest` after each group (tests that need a rest to last).
    #[cfg(test)]
    pub(crate) fn with_group_rest(self, rest: std::time::Duration) -> Self {
        self.shared.lock_db().rest = rest;
        self
    }
}

impl FileStore {
    pub fn schema_version(&self) -> Result<u32> {
        Ok(migrations::current_version(&self.0.lock())?)
    }

    /// Whether the store can take a write now (`/readyz`): its last group
    /// of writes was committed, and SQLite's write lock can be taken (and is
    /// let go, writing nothing). Taking the lock alone says nothing of a
    /// full disk: that shows only when a commit needs room.
    pub(crate) fn writable(&self) -> Result<()> {
        let conn = self.0.lock();
        // Taking the connection commits the open group: its failure counts.
        if let Some(why) = &conn.0.lost {
            return Err(StoreError::GroupLost(why.clone()));
        }
        conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK")?;
        Ok(())
    }

    /// Bytes on disk: the database and its write-ahead log (0 in memory).
    pub(crate) fn bytes_on_disk(&self) -> u64 {
        let Some(db) = self.0.path() else { return 0 };
        let wal = db.with_extension("db-wal");
        [db.to_path_buf(), wal]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Times this store's connection into the process's metrics from now
    /// on: each use's wait for it, and each group of writes.
    pub(crate) fn time_into(&self, timings: crate::metrics::StoreTimings) {
        self.0.shared.time_into(timings);
    }

    /// Commits grouped writes now.
    pub fn flush(&self) {
        self.0.shared.lock_db().commit_group();
    }
}

/// The steps SQLite plans for `sql` on a new, migrated store: for tests of
/// which index a query reads.
#[cfg(test)]
pub(crate) fn query_plan(sql: &str, params: impl rusqlite::Params) -> Vec<String> {
    let store = Store::open_in_memory().unwrap();
    let conn = store.lock();
    conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map(params, |r| r.get(3))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// How long opening a database waits for other processes' locks.
const PATIENCE: Duration = Duration::from_secs(5);

/// How often a connection waiting for a lock looks again.
const LOOK_AGAIN: Duration = Duration::from_millis(2);

/// SQLite's busy handler: while another process holds the lock, look again
/// every [`LOOK_AGAIN`] for up to [`PATIENCE`]. SQLite's own timeout sleeps
/// longer and longer (up to 100 ms a time), and so misses the moment a busy
/// bot leaves free between two groups of writes (`group_commit::REST`);
/// looking often finds it. `n` is how many times it has already waited.
fn wait_for_the_lock(n: i32) -> bool {
    let waited = LOOK_AGAIN * u32::try_from(n).unwrap_or(u32::MAX);
    if waited >= PATIENCE {
        return false;
    }
    std::thread::sleep(LOOK_AGAIN);
    true
}

/// Puts a database in WAL mode. Processes opening a new file together each
/// read its header and then try to rewrite it; SQLite refuses the later ones
/// at once instead of calling the busy handler (waiting while holding a read
/// lock could deadlock), so a refused switch is tried again, within the same
/// patience as any other lock.
fn write_ahead(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            done => return done,
        }
    }
}

/// Makes every transaction take the write lock when it begins (`BEGIN
/// IMMEDIATE`), waiting for it within the busy timeout. SQLite's default, a
/// deferred transaction, reads first and asks for the write lock only at its
/// first write; if another process committed in between, its snapshot is
/// stale and SQLite refuses the write at once ("database is locked") without
/// waiting — which is how `ambient remember` or the dashboard's forget-me
/// failed beside a bot storing messages. A transaction that only reads asks
/// for [`rusqlite::TransactionBehavior::Deferred`] by name.
fn writers_wait(conn: &mut Connection) {
    conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
}

/// Turns on SQLite's query-planner stability guarantee. Without it, a plan
/// that looked at a bound value (a `LIMIT ?`, any term of a table with a
/// partial index) makes SQLite prepare the statement again whenever that
/// value changes, and rusqlite clears a statement's values when it caches
/// it: each cached query was parsed afresh on every use, a fifth of an
/// answer's instructions. Our partial indexes are matched by literal terms
/// (`is_self = 1`, `kind != 'route'`) or by `= ?` (which implies NOT NULL),
/// so no plan needs to see a value.
fn steady_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// Timestamps are stored as Unix milliseconds (INTEGER): compact, ordered, unambiguous.
pub(crate) fn to_ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_ms(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}
