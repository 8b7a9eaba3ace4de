//! Backups of a live data directory, and restoring one.
//!
//! A backup is one SQLite file. It is a copy of `ambient.db` made with
//! SQLite's online backup API inside one read transaction: in WAL mode a
//! reader never blocks a writer, so the bot goes on storing messages while
//! the copy is made, and the copy is the database exactly as it was when the
//! backup began (every message acknowledged by then, none half-written).
//! The pages are copied a few hundred at a time. Beside the copied tables it
//! holds the state folders' files (`ambient_backup_files`) and what it is
//! (`ambient_backup`), and SQLite's `application_id` marks it as ours: one
//! file, checked whole by `PRAGMA integrity_check`, readable with any
//! SQLite tool.
//!
//! A file to restore is untrusted: it must be a SQLite file with our mark,
//! a schema no newer than this binary's and exactly the tables, indexes and
//! triggers our own migrations make at its version (nothing of its own that
//! would run in the bot), pass `integrity_check`, and hold state files
//! within [`MAX_FILES`] and [`MAX_FILES_BYTES`] whose paths stay inside
//! `state/`. It is restored into a new directory beside the data directory,
//! which then takes the data directory's place in one rename.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::forget::{
    Erasure, Forgotten, erase, latest_per_person, merge_fact_index, read_erasures,
};
use super::{DB_FILE, migrations, to_ms};
use crate::ids::UserId;

/// What marks a SQLite file as an ambient backup (`PRAGMA application_id`): "ambk".
pub(crate) const APPLICATION_ID: i32 = 0x616d_626b;

/// The layout of a backup file; a newer one is refused by name.
pub(crate) const FORMAT: u32 = 1;

/// The state files a backup carries: at most this many, and bytes of them.
pub(crate) const MAX_FILES: usize = 100_000;
pub(crate) const MAX_FILES_BYTES: u64 = 1024 * 1024 * 1024;
/// The longest state file path (relative to `state/`) a backup may name.
const MAX_PATH_CHARS: usize = 1024;

/// Pages copied per step (4 KiB each): small enough that the copy can be
/// followed and stopped, large enough that stepping costs nothing.
const PAGES_PER_STEP: i32 = 256;

/// The tables a backup adds to the copied database, as created: a restore
/// accepts them only exactly so.
const BACKUP_TABLES: [(&str, &str); 2] = [
    (
        "ambient_backup",
        "CREATE TABLE ambient_backup (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    (
        "ambient_backup_files",
        "CREATE TABLE ambient_backup_files (path TEXT PRIMARY KEY, bytes BLOB NOT NULL)",
    ),
];

/// The folder of the data directory that goes into a backup with the database.
pub(crate) const STATE_DIR: &str = "state";
/// The dashboard's token hash: this host's, kept from the directory a restore replaces.
const KEPT_FILES: [&str; 1] = ["dashboard-token.sha256"];

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("there is no database to back up at {0} (storage.dataDir)")]
    NoDatabase(PathBuf),
    #[error("{0} already exists; name a new file (a backup never overwrites one)")]
    Exists(PathBuf),
    #[error(
        "{file} is inside the data directory {dir}: a backup there is lost with what it backs up; \
         put it somewhere else"
    )]
    InsideDataDir { file: PathBuf, dir: PathBuf },
    #[error("{file} is not an ambient backup: {why}")]
    NotABackup { file: PathBuf, why: String },
    #[error(
        "{file} is a backup of schema version {found}, but this ambient only knows up to version {known}: \
         it was made by a newer ambient. Restore it with that version (or a newer one) of ambient; \
         nothing was changed"
    )]
    TooNew {
        file: PathBuf,
        found: u32,
        known: u32,
    },
    #[error("{file}: {why}; nothing was restored")]
    Damaged { file: PathBuf, why: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("database error in {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{0}")]
    Store(#[from] super::StoreError),
    #[error("the backup was given up: the bot is stopping")]
    Stopped,
}

type Result<T> = std::result::Result<T, BackupError>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn sql(path: &Path) -> impl FnOnce(rusqlite::Error) -> BackupError + '_ {
    move |source| BackupError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// A backup made: where, how big, of which schema, with how many state files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made {
    pub path: PathBuf,
    pub bytes: u64,
    pub schema: u32,
    pub files: usize,
}

/// Backs up `data_dir` (its database and `state/`) into the new file `out`,
/// without taking the data lock: the bot may be running and writing.
pub fn create(data_dir: &Path, out: &Path, now: DateTime<Utc>) -> Result<Made> {
    create_until(data_dir, out, now, &AtomicBool::new(false))
}

/// [`create`], given up (its partial file removed) once `stop` is set: a
/// bot stopping does not wait for a long backup to end.
pub(crate) fn create_until(
    data_dir: &Path,
    out: &Path,
    now: DateTime<Utc>,
    stop: &AtomicBool,
) -> Result<Made> {
    let db = data_dir.join(DB_FILE);
    if !db.is_file() {
        return Err(BackupError::NoDatabase(data_dir.to_path_buf()));
    }
    if out.exists() {
        return Err(BackupError::Exists(out.to_path_buf()));
    }
    if inside(out, data_dir) {
        return Err(BackupError::InsideDataDir {
            file: out.to_path_buf(),
            dir: data_dir.to_path_buf(),
        });
    }
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    // Written beside `out` and renamed: a backup cut short is never taken for one.
    let partial = tempfile::Builder::new()
        .prefix(PARTIAL_PREFIX)
        .suffix(PARTIAL_SUFFIX)
        .tempfile_in(dir)
        .map_err(io(dir))?;
    let schema = copy_database(&db, partial.path(), stop)?;
    let files = seal(data_dir, partial.path(), schema, now)?;
    partial.as_file().sync_all().map_err(io(partial.path()))?;
    partial
        .persist_noclobber(out)
        .map_err(|e| BackupError::Io {
            path: out.to_path_buf(),
            source: e.error,
        })?;
    sync_dir(dir);
    let bytes = std::fs::metadata(out).map_err(io(out))?.len();
    Ok(Made {
        path: out.to_path_buf(),
        bytes,
        schema,
        files,
    })
}

/// What a partly written backup's name starts and ends with.
pub(crate) const PARTIAL_PREFIX: &str = ".ambient-backup-";
pub(crate) const PARTIAL_SUFFIX: &str = ".partial";

/// Copies the live database at `db` into the empty file `to`, as of one
/// moment, and returns its schema version then.
fn copy_database(db: &Path, to: &Path, stop: &AtomicBool) -> Result<u32> {
    let src = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql(db))?;
    src.busy_timeout(Duration::from_secs(5)).map_err(sql(db))?;
    let mut dst = Connection::open(to).map_err(sql(to))?;
    // One read transaction over every step: each step reads the same
    // snapshot, so the bot's commits meanwhile neither enter the copy nor
    // make SQLite start it again (as it would between separate reads).
    let snapshot = src.unchecked_transaction().map_err(sql(db))?;
    let schema = migrations::current_version(&snapshot).map_err(sql(db))?;
    {
        let backup = Backup::new(&snapshot, &mut dst).map_err(sql(to))?;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(BackupError::Stopped);
            }
            match backup.step(PAGES_PER_STEP).map_err(sql(db))? {
                StepResult::Done => break,
                StepResult::More => {}
                // Only a writer on the copy itself would lock it (none does),
                // or a checkpoint on the source's first read: wait a little.
                StepResult::Busy | StepResult::Locked => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
    snapshot.finish().map_err(sql(db))?;
    Ok(schema)
}

/// Turns the copied database at `file` into a backup: one file (no
/// write-ahead log), the state folders inside, marked and checked.
/// Returns how many state files went in.
fn seal(data_dir: &Path, file: &Path, schema: u32, now: DateTime<Utc>) -> Result<usize> {
    let mut conn = Connection::open(file).map_err(sql(file))?;
    let e = sql(file);
    let run = |conn: &mut Connection| -> rusqlite::Result<()> {
        conn.pragma_update(None, "journal_mode", "DELETE")?;
        for (_, create) in BACKUP_TABLES {
            conn.execute_batch(create)?;
        }
        Ok(())
    };
    run(&mut conn).map_err(e)?;
    let files = state_files(data_dir)?;
    let tx = conn.transaction().map_err(sql(file))?;
    let put = |key: &str, value: String| {
        tx.execute(
            "INSERT INTO ambient_backup (key, value) VALUES (?1, ?2)",
            params![key, value],
        )
    };
    let manifest = [
        ("format", FORMAT.to_string()),
        ("schema", schema.to_string()),
        ("madeAt", now.to_rfc3339()),
        ("ambient", env!("CARGO_PKG_VERSION").to_string()),
    ];
    for (k, v) in manifest {
        put(k, v).map_err(sql(file))?;
    }
    for (rel, path) in &files {
        let bytes = std::fs::read(path).map_err(io(path))?;
        tx.execute(
            "INSERT INTO ambient_backup_files (path, bytes) VALUES (?1, ?2)",
            params![rel, bytes],
        )
        .map_err(sql(file))?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(sql(file))?;
    tx.commit().map_err(sql(file))?;
    let ok = integrity(&conn).map_err(sql(file))?;
    if ok != "ok" {
        return Err(BackupError::Damaged {
            file: file.to_path_buf(),
            why: format!("the copy failed its integrity check ({ok})"),
        });
    }
    Ok(files.len())
}

/// `PRAGMA integrity_check`'s first line: `ok`, or the first problem.
fn integrity(conn: &Connection) -> rusqlite::Result<String> {
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
}

/// Every regular file under `<data_dir>/state/`, as (path relative to
/// `state/` with `/` between parts, path on disk), bounded. A symlink is not
/// followed: what it points at is not the bot's data.
fn state_files(data_dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let root = data_dir.join(STATE_DIR);
    let mut out = Vec::new();
    if !root.is_dir() {
        return Ok(out);
    }
    let mut bytes = 0u64;
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(io(&dir))?
            .collect::<std::io::Result<_>>()
            .map_err(io(&dir))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let kind = entry.file_type().map_err(io(&path))?;
            if kind.is_dir() {
                dirs.push(path);
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            bytes += entry.metadata().map_err(io(&path))?.len();
            if out.len() >= MAX_FILES || bytes > MAX_FILES_BYTES {
                return Err(BackupError::Damaged {
                    file: root.clone(),
                    why: format!(
                        "the state files exceed {MAX_FILES} files or {MAX_FILES_BYTES} bytes, \
                         the most a backup carries"
                    ),
                });
            }
            let rel = path
                .strip_prefix(&root)
                .map_err(|_| BackupError::Damaged {
                    file: path.clone(),
                    why: "a state file outside state/".into(),
                })?
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push((rel, path));
        }
    }
    Ok(out)
}

/// Whether `path` is `dir` or inside it, by their absolute, resolved forms.
pub(crate) fn inside(path: &Path, dir: &Path) -> bool {
    let (path, dir) = (resolved(path), resolved(dir));
    path.starts_with(&dir)
}

/// `path` made absolute, its `.` and `..` taken out, and its longest
/// existing ancestor's symlinks resolved.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf());
    let mut clean = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    let mut existing = clean.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => rest.push(name.to_owned()),
            None => break,
        }
        existing.pop();
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    out.extend(rest.iter().rev());
    out
}

/// Flushes a directory's entries (a rename into it) to disk; a platform
/// that cannot is left as it is.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        // Harmless: the rename is done; only its surviving a power cut is at stake.
        let _ = d.sync_all();
    }
}

/// What a backup file says it is (its `ambient_backup` table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub schema: u32,
    pub made_at: String,
    pub ambient: String,
    pub files: usize,
}

/// Opens the untrusted backup `file` (a private copy of it) and checks it
/// is one of ours, whole, of a schema this binary knows: see the module's
/// documentation. Nothing in it runs: its schema must be our migrations'.
pub(crate) fn check(file: &Path, conn: &Connection) -> Result<Manifest> {
    let not = |why: &str| BackupError::NotABackup {
        file: file.to_path_buf(),
        why: why.into(),
    };
    let damaged = |why: String| BackupError::Damaged {
        file: file.to_path_buf(),
        why,
    };
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(|e| not(&format!("SQLite cannot read it ({e})")))?;
    if app != APPLICATION_ID {
        return Err(not(
            "it is a SQLite database without an ambient backup's mark (make one with `ambient backup FILE`)",
        ));
    }
    let found = migrations::current_version(conn).map_err(sql(file))?;
    let known = migrations::latest();
    if found > known {
        return Err(BackupError::TooNew {
            file: file.to_path_buf(),
            found,
            known,
        });
    }
    let mut expected = schema_at(found)?;
    expected.extend(
        BACKUP_TABLES.map(|(name, create)| ("table".into(), name.into(), Some(create.into()))),
    );
    let have = schema_of(conn).map_err(sql(file))?;
    if let Some(odd) = have.iter().find(|o| !expected.contains(o)) {
        return Err(damaged(format!(
            "it holds {} {:?}, which ambient's schema version {found} does not have",
            odd.0, odd.1
        )));
    }
    if let Some(missing) = expected.iter().find(|o| !have.contains(o)) {
        return Err(damaged(format!(
            "it lacks {} {:?} of ambient's schema version {found}",
            missing.0, missing.1
        )));
    }
    let ok = integrity(conn).map_err(sql(file))?;
    if ok != "ok" {
        return Err(damaged(format!("it fails SQLite's integrity check: {ok}")));
    }
    manifest(file, conn, found)
}

/// The manifest of a checked backup: its format and schema as this binary reads them.
fn manifest(file: &Path, conn: &Connection, found: u32) -> Result<Manifest> {
    let damaged = |why: String| BackupError::Damaged {
        file: file.to_path_buf(),
        why,
    };
    let get = |key: &str| -> Result<String> {
        conn.query_row(
            "SELECT value FROM ambient_backup WHERE key = ?1",
            [key],
            |r| r.get::<_, String>(0),
        )
        .optional()
        .map_err(sql(file))?
        .ok_or_else(|| damaged(format!("its manifest has no {key:?}")))
    };
    let format = get("format")?;
    if format != FORMAT.to_string() {
        return Err(damaged(format!(
            "it is in backup format {format:?}, and this ambient reads format {FORMAT}; \
             restore it with the ambient that made it"
        )));
    }
    if get("schema")? != found.to_string() {
        return Err(damaged(
            "its manifest's schema version is not the database's".into(),
        ));
    }
    let files: i64 = conn
        .query_row("SELECT count(*) FROM ambient_backup_files", [], |r| {
            r.get(0)
        })
        .map_err(sql(file))?;
    Ok(Manifest {
        schema: found,
        made_at: get("madeAt")?,
        ambient: get("ambient")?,
        files: usize::try_from(files).unwrap_or(usize::MAX),
    })
}

/// (type, name, sql) of every table, index, trigger and view but SQLite's own.
type SchemaObject = (String, String, Option<String>);

fn schema_of(conn: &Connection) -> rusqlite::Result<Vec<SchemaObject>> {
    let mut stmt = conn.prepare(
        "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
         ORDER BY name",
    )?;
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
}

/// What our own migrations make at `version`.
fn schema_at(version: u32) -> super::Result<Vec<SchemaObject>> {
    let conn = Connection::open_in_memory()?;
    migrations::apply(&conn, version, None)?;
    Ok(schema_of(&conn)?)
}

/// Opens a private copy of an untrusted backup with SQLite's defences on:
/// no schema-defined function or virtual table runs unless SQLite trusts
/// it, and the file cannot be made to corrupt itself through us.
pub(crate) fn open_untrusted(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql(path))?;
    let guard = |conn: &Connection| -> rusqlite::Result<()> {
        use rusqlite::config::DbConfig;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
        Ok(())
    };
    guard(&conn).map_err(sql(path))?;
    Ok(conn)
}

/// Whether the first bytes of `file` are a SQLite database's.
pub(crate) fn looks_like_sqlite(file: &Path) -> Result<bool> {
    use std::io::Read as _;
    let mut head = [0u8; 16];
    let mut f = std::fs::File::open(file).map_err(io(file))?;
    let mut read = 0;
    while read < head.len() {
        match f.read(&mut head[read..]).map_err(io(file))? {
            0 => break,
            n => read += n,
        }
    }
    Ok(read == head.len() && &head == b"SQLite format 3\0")
}

/// Writes the state files of a checked backup (`conn`) under `to`'s
/// `state/`, each path checked first: relative, plain names only (no `..`,
/// no root), within [`MAX_PATH_CHARS`], the whole within [`MAX_FILES`] and
/// [`MAX_FILES_BYTES`]. `to` is a new directory: nothing in it can lead out.
pub(crate) fn unpack_files(file: &Path, conn: &Connection, to: &Path) -> Result<usize> {
    let damaged = |why: String| BackupError::Damaged {
        file: file.to_path_buf(),
        why,
    };
    let mut stmt = conn
        .prepare("SELECT path, length(bytes) FROM ambient_backup_files ORDER BY path")
        .map_err(sql(file))?;
    let listed: Vec<(String, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(sql(file))?
        .collect::<rusqlite::Result<_>>()
        .map_err(sql(file))?;
    if listed.len() > MAX_FILES {
        return Err(damaged(format!(
            "it holds {} state files; at most {MAX_FILES} are restored",
            listed.len()
        )));
    }
    let total: u64 = listed.iter().map(|(_, n)| *n as u64).sum();
    if total > MAX_FILES_BYTES {
        return Err(damaged(format!(
            "its state files hold {total} bytes; at most {MAX_FILES_BYTES} are restored"
        )));
    }
    for (rel, _) in &listed {
        safe_relative(rel).map_err(|why| damaged(format!("state file {rel:?}: {why}")))?;
    }
    let root = to.join(STATE_DIR);
    let mut read = conn
        .prepare("SELECT bytes FROM ambient_backup_files WHERE path = ?1")
        .map_err(sql(file))?;
    for (rel, _) in &listed {
        let bytes: Vec<u8> = read.query_row([rel], |r| r.get(0)).map_err(sql(file))?;
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io(&path))?;
        f.write_all(&bytes).map_err(io(&path))?;
    }
    Ok(listed.len())
}

/// Why `rel` may not be written under `state/`, if it may not.
fn safe_relative(rel: &str) -> std::result::Result<(), String> {
    if rel.is_empty() || rel.chars().count() > MAX_PATH_CHARS {
        return Err(format!("a path must have 1 to {MAX_PATH_CHARS} characters"));
    }
    if rel.contains('\0') || rel.contains('\\') {
        return Err("a path may not hold NUL or a backslash".into());
    }
    for part in rel.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(
                "a path is plain names joined by `/`: no `..`, `.`, empty part or leading `/`"
                    .into(),
            );
        }
    }
    Ok(())
}

/// A backup restored: what it was, and what of the directory it replaced
/// went into it.
#[derive(Debug)]
pub(crate) struct Restored {
    pub manifest: Manifest,
    /// Where the directory it replaced now is, if that held a database.
    pub previous: Option<PathBuf>,
    /// Forget-mes carried out in the replaced database after the backup was
    /// made, carried out again in the restored one.
    pub erasures: usize,
    pub forgotten: Forgotten,
    /// Why the replaced database could not be read for them, if it could not.
    pub unreadable: Option<String>,
}

/// Restores the backup `file` as the data directory `data_dir`. The caller
/// holds the data lock. Everything is made in a new directory beside
/// `data_dir` — the backup checked, its state files written, its database
/// migrated to this binary's schema, and the forget-mes and boundaries of
/// the database it replaces carried over (a restore never brings back what
/// a person asked to be forgotten) — which then takes `data_dir`'s place in
/// one rename. Refused or failed, nothing of `data_dir` has changed.
pub(crate) fn restore(file: &Path, data_dir: &Path, now: DateTime<Utc>) -> Result<Restored> {
    let meta = std::fs::metadata(file).map_err(io(file))?;
    if !meta.is_file() || !looks_like_sqlite(file)? {
        return Err(BackupError::NotABackup {
            file: file.to_path_buf(),
            why: "it does not begin as a SQLite database does (a backup is the SQLite file \
                  `ambient backup FILE` makes)"
                .into(),
        });
    }
    let parent = match data_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = data_dir
        .file_name()
        .map_or("data".into(), |n| n.to_string_lossy().into_owned());
    // Removed with everything in it if anything below fails.
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.restoring-"))
        .tempdir_in(parent)
        .map_err(io(parent))?;
    let db = staging.path().join(DB_FILE);
    std::fs::copy(file, &db).map_err(io(&db))?;
    let manifest = {
        let conn = open_untrusted(&db)?;
        let manifest = check(file, &conn)?;
        unpack_files(file, &conn, staging.path())?;
        conn.execute_batch(
            "DROP TABLE ambient_backup; DROP TABLE ambient_backup_files; PRAGMA application_id = 0;",
        )
        .map_err(sql(&db))?;
        manifest
    };
    let carried = carry_over(&data_dir.join(DB_FILE), staging.path())?;
    for kept in KEPT_FILES {
        let from = data_dir.join(kept);
        if from.is_file() {
            let to = staging.path().join(kept);
            std::fs::copy(&from, &to).map_err(io(&to))?;
        }
    }
    let had_database = data_dir.join(DB_FILE).exists();
    let staged = staging.keep();
    // A failed swap has left `staged` holding the restore, not the data directory.
    let previous = swap(&staged, data_dir, had_database, now).inspect_err(|_| {
        // Harmless if it fails: a leftover staging folder is a hidden copy of the backup.
        let _ = std::fs::remove_dir_all(&staged);
    })?;
    Ok(Restored {
        manifest,
        previous,
        erasures: carried.0,
        forgotten: carried.1,
        unreadable: carried.2,
    })
}

/// Opens the restored database in `staged` (migrating an older schema) and
/// carries over from the database it replaces (`current`, if there is one)
/// the forget-mes made since the backup and every boundary set there.
/// Returns how many forget-mes were carried, what they took, and why
/// `current` could not be read if it could not (then nothing is carried).
fn carry_over(current: &Path, staged: &Path) -> Result<(usize, Forgotten, Option<String>)> {
    let store = super::Store::open(staged)?;
    let (erasures, boundaries) = match read_people(current) {
        Ok(found) => found,
        Err(e) => return Ok((0, Forgotten::default(), Some(e.to_string()))),
    };
    let path = staged.join(DB_FILE);
    let mut conn = store.lock();
    let tx = conn.transaction().map_err(sql(&path))?;
    let mut carried = Vec::new();
    for e in erasures {
        let logged: bool = tx
            .query_row(
                "SELECT count(*) > 0 FROM erasures WHERE user_id = ?1 AND messages = ?2 AND at = ?3",
                params![e.user.to_sql(), e.messages, to_ms(e.at)],
                |r| r.get(0),
            )
            .map_err(sql(&path))?;
        if !logged {
            tx.execute(
                "INSERT INTO erasures (user_id, messages, at) VALUES (?1, ?2, ?3)",
                params![e.user.to_sql(), e.messages, to_ms(e.at)],
            )
            .map_err(sql(&path))?;
            carried.push(e);
        }
    }
    let people: HashSet<_> = carried.iter().map(|e| e.user).collect();
    let mut gone = Forgotten::default();
    let all = read_erasures(&tx, 0)?;
    for e in latest_per_person(all)
        .into_iter()
        .filter(|e| people.contains(&e.user))
    {
        let took = erase(&tx, &e, Some(to_ms(e.at)))?;
        gone.facts += took.facts;
        gone.messages += took.messages;
        gone.redacted += took.redacted;
    }
    if gone.facts > 0 {
        merge_fact_index(&tx)?;
    }
    for (user, kind, at) in boundaries {
        tx.execute(
            // Only "already set" is ignored: a kind the table refuses is an error, not a boundary lost.
            "INSERT INTO boundaries (user_id, kind, at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (user_id, kind) DO NOTHING",
            params![user, kind, at],
        )
        .map_err(sql(&path))?;
    }
    tx.commit().map_err(sql(&path))?;
    // As after a forget-me: the log's copies of the erased pages go.
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(sql(&path))?;
    Ok((carried.len(), gone, None))
}

/// A stored boundary as it is: (user_id, kind, at).
type BoundaryRow = (i64, String, i64);

/// The erasure log and the boundaries of the database at `db` (none when
/// there is no database, or it is older than those tables).
fn read_people(db: &Path) -> rusqlite::Result<(Vec<Erasure>, Vec<BoundaryRow>)> {
    if !db.exists() {
        return Ok((Vec::new(), Vec::new()));
    }
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let has = |table: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
    };
    let erasures = if has("erasures")? {
        let mut stmt = conn.prepare("SELECT user_id, messages, at FROM erasures ORDER BY seq")?;
        stmt.query_map([], |r| {
            Ok(Erasure {
                user: UserId::from_sql(r.get(0)?),
                messages: r.get(1)?,
                at: super::from_ms(r.get(2)?),
            })
        })?
        .collect::<rusqlite::Result<_>>()?
    } else {
        Vec::new()
    };
    let boundaries = if has("boundaries")? {
        let mut stmt = conn.prepare("SELECT user_id, kind, at FROM boundaries")?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?
    } else {
        Vec::new()
    };
    Ok((erasures, boundaries))
}

/// Puts `staged` in `data_dir`'s place. On Linux the two directories are
/// exchanged in one rename (no moment without a data directory); elsewhere,
/// or on a file system that cannot, `data_dir` is moved aside first. The
/// replaced directory is kept beside it as `<name>.before-restore-<time>`
/// when it held a database, else removed; returns where it was kept.
fn swap(
    staged: &Path,
    data_dir: &Path,
    had_database: bool,
    now: DateTime<Utc>,
) -> Result<Option<PathBuf>> {
    let name = data_dir
        .file_name()
        .map_or("data".into(), |n| n.to_string_lossy().into_owned());
    let mut aside = unused(data_dir.with_file_name(format!(
        "{name}.before-restore-{}",
        now.format("%Y%m%d-%H%M%S")
    )));
    if !data_dir.exists() {
        std::fs::rename(staged, data_dir).map_err(io(data_dir))?;
    } else if exchange(staged, data_dir).is_ok() {
        // From here `staged` holds the replaced directory: it is never removed
        // on a failure; at worst it stays under the staging name.
        if std::fs::rename(staged, &aside).is_err() {
            aside = staged.to_path_buf();
        }
    } else {
        std::fs::rename(data_dir, &aside).map_err(io(data_dir))?;
        if let Err(source) = std::fs::rename(staged, data_dir) {
            // Put the old one back: a failed restore changes nothing.
            // Harmless if this fails too: the error below names where it is.
            let _ = std::fs::rename(&aside, data_dir);
            return Err(BackupError::Io {
                path: data_dir.to_path_buf(),
                source,
            });
        }
    }
    if let Some(parent) = data_dir.parent() {
        sync_dir(parent);
    }
    if had_database {
        return Ok(Some(aside));
    }
    // Harmless if it fails: an empty old data directory (a lock file) stays beside the new one.
    let _ = std::fs::remove_dir_all(&aside);
    Ok(None)
}

/// `path`, or `path-2`, `path-3` … whichever does not exist yet.
fn unused(path: PathBuf) -> PathBuf {
    let mut n = 1;
    let mut candidate = path.clone();
    while candidate.exists() {
        n += 1;
        let mut name = path.as_os_str().to_owned();
        name.push(format!("-{n}"));
        candidate = PathBuf::from(name);
    }
    candidate
}

/// Exchanges two directories in one step (Linux's `renameat2`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt as _;
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both paths are NUL-terminated strings that live through the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// A scheduled backup's name: `ambient-<UTC time>.backup`, so they sort by age.
const SCHEDULED_PREFIX: &str = "ambient-";
const SCHEDULED_SUFFIX: &str = ".backup";
const SCHEDULED_TIME: &str = "%Y%m%d-%H%M%S";

/// The scheduled backups in `dir`, oldest first, by the time in their names
/// (other files are not ours and are left alone).
pub(crate) fn scheduled_in(dir: &Path) -> Vec<(DateTime<Utc>, PathBuf)> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stamp = name
                .strip_prefix(SCHEDULED_PREFIX)?
                .strip_suffix(SCHEDULED_SUFFIX)?;
            let at = chrono::NaiveDateTime::parse_from_str(stamp, SCHEDULED_TIME).ok()?;
            Some((at.and_utc(), e.path()))
        })
        .collect();
    found.sort();
    found
}

/// When the next scheduled backup is due: `every` after the newest in `dir`,
/// or now if there is none.
pub(crate) fn next_due(dir: &Path, every: chrono::Duration, now: DateTime<Utc>) -> DateTime<Utc> {
    scheduled_in(dir)
        .last()
        .map_or(now, |(newest, _)| *newest + every)
}

/// A scheduled backup: made into `dir` (created if missing), then the
/// oldest beyond `keep` removed, and any partial backup a stop cut short a
/// day or more ago. Returns the backup and what was removed.
pub(crate) fn scheduled(
    data_dir: &Path,
    dir: &Path,
    keep: usize,
    now: DateTime<Utc>,
    stop: &AtomicBool,
) -> Result<(Made, Vec<PathBuf>)> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let name = format!(
        "{SCHEDULED_PREFIX}{}{SCHEDULED_SUFFIX}",
        now.format(SCHEDULED_TIME)
    );
    let made = create_until(data_dir, &dir.join(name), now, stop)?;
    let all = scheduled_in(dir);
    let mut removed = Vec::new();
    for (_, old) in all.iter().take(all.len().saturating_sub(keep.max(1))) {
        std::fs::remove_file(old).map_err(io(old))?;
        removed.push(old.clone());
    }
    remove_stale_partials(dir);
    Ok((made, removed))
}

/// Removes partial backups older than a day from `dir`: a backup cut short
/// by a stop left them (a running one's is younger).
fn remove_stale_partials(dir: &Path) {
    let day = Duration::from_secs(24 * 3600);
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let stale = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > day);
        if stale && name.starts_with(PARTIAL_PREFIX) && name.ends_with(PARTIAL_SUFFIX) {
            // Harmless if it fails: the file is tried again after the next backup.
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_paths_stay_inside_state() {
        for bad in [
            "",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            "./a",
            "a\\..\\b",
            "a\0b",
        ] {
            assert!(safe_relative(bad).is_err(), "{bad:?} was let through");
        }
        assert!(safe_relative(&"a".repeat(MAX_PATH_CHARS + 1)).is_err());
        assert!(safe_relative("guilds/1/notes/today.txt").is_ok());
    }

    #[test]
    fn a_second_restore_in_the_same_second_keeps_both_replaced_directories() {
        let dir = tempfile::tempdir().unwrap();
        let taken = dir.path().join("data.before-restore-20260302-140511");
        std::fs::create_dir_all(&taken).unwrap();
        assert_eq!(
            unused(taken.clone()),
            dir.path().join("data.before-restore-20260302-140511-2")
        );
        assert_eq!(unused(dir.path().join("free")), dir.path().join("free"));
    }

    #[test]
    fn inside_sees_through_dots_and_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        assert!(inside(&data.join("backups/x"), &data));
        assert!(inside(&dir.path().join("other/../data/x"), &data));
        assert!(inside(&data, &data));
        assert!(!inside(&dir.path().join("data-backups"), &data));
        assert!(!inside(&dir.path().join("backups"), &data));
    }
}
