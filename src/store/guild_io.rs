//! One guild's rows, out of this store and into another: `ambient guild
//! export / import / remove`, so a reshard (or a backup, or a move to
//! another host) is two commands.
//!
//! The document is JSON: a format name and version, the schema version of
//! the store that wrote it, the guild, every table of [`partition::TABLES`](super::partition::TABLES)
//! as rows of column → value (integers, reals, text, null; no column holds a
//! blob, and a blob found is refused rather than guessed at), and the
//! guild's state files (read and written by the caller, through the
//! reflexes' path guard). Export writes it as it reads, in one read
//! transaction, so the tables are one moment's.
//!
//! Import is one transaction: a file from another schema, a guild that
//! already has rows here (unless replaced), a row that is not the guild's,
//! or one that cannot be stored leaves the store as it was. Ids this store
//! assigns (AUTOINCREMENT columns, the facts' rowid that the full-text index
//! is keyed on) are given anew and the columns that refer to them rewritten;
//! facts go in through their table, so the triggers index them.
//!
//! Remove is one transaction (the CLI's runs only while no bot holds the
//! data directory: all or nothing). A departed server's removal runs beside
//! the bot, so [`GuildStore::remove_paced`] thins the tables that grow with use
//! in short batches first, at the retention sweep's pace, and removes the
//! rest in one transaction, as remove does.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{Connection, params, params_from_iter};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::forget::{
    Erasure, Forgotten, erase, latest_per_person, merge_fact_index, read_erasures,
};
use super::partition::{Link, TABLES, Table};
use super::people::PersonEvent;
use super::retention::{Batch, Holds, Pace};
use super::{GuildStore, StoreError, migrations};
use crate::ids::GuildId;

pub(crate) const FORMAT: &str = "ambient-guild";
pub(crate) const VERSION: u32 = 1;

/// The state folders a server has, under `<dataDir>/state/`: what its
/// reflexes keep (`guilds`) and the reflexes written for it (`reflexes`).
pub(crate) const FOLDERS: [&str; 2] = ["guilds", "reflexes"];

/// `<dataDir>/state/<name>/<guild>`, one of the server's [`FOLDERS`].
pub(crate) fn state_folder(data_dir: &Path, name: &str, guild: GuildId) -> PathBuf {
    data_dir.join("state").join(name).join(guild.to_string())
}

/// Deletes the server's state folders, the half of removing a server that
/// is not rows ([`GuildStore::remove_guild`] is the other).
pub(crate) fn remove_state_folders(data_dir: &Path, guild: GuildId) -> Res<()> {
    for name in FOLDERS {
        let dir = state_folder(data_dir, name, guild);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|source| GuildIoError::Folder {
                path: dir.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

/// Rows of one table, as exported: column → value.
pub(crate) type Row = Map<String, Value>;

/// A file of the guild's state folders: `folder` is `guilds` (what its
/// reflexes read and write) or `reflexes` (the reflexes written for it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuildFile {
    pub folder: String,
    pub path: String,
    pub text: String,
}

/// A whole export file, as read back.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    pub format: String,
    pub version: u32,
    pub schema: u32,
    pub guild: u64,
    pub exported_at: i64,
    pub tables: BTreeMap<String, Vec<Row>>,
    #[serde(default)]
    pub files: Vec<GuildFile>,
}

/// Rows per table, in [`TABLES`] order, tables without rows left out.
pub(crate) type Counts = Vec<(&'static str, usize)>;

#[derive(Debug, thiserror::Error)]
pub enum GuildIoError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
    #[error(
        "{table}.{column} holds a blob, which the export format does not carry; nothing was exported"
    )]
    Blob { table: String, column: String },
    #[error("the file is not valid JSON of a guild export: {0}")]
    Json(String),
    #[error("the file's format is {0:?}; a guild export says \"{FORMAT}\"")]
    Format(String),
    #[error("the file is format version {0}; this ambient reads version {VERSION}")]
    Version(u32),
    #[error(
        "the file was written by a store at schema version {file}, this data directory is at version {here}: \
         export again with the same ambient version as the one that will import"
    )]
    Schema { file: u32, here: u32 },
    #[error("{at}: {problem}")]
    Malformed { at: String, problem: String },
    #[error(
        "this data directory already holds rows of guild {guild} ({rows}); \
         add --replace to delete them first (in the same transaction)"
    )]
    Exists { guild: GuildId, rows: String },
    #[error("{at} is not guild {guild}'s: {why}")]
    NotTheGuilds {
        at: String,
        guild: GuildId,
        why: String,
    },
    #[error("{at}: cannot store it here: {source}")]
    Insert { at: String, source: rusqlite::Error },
    #[error("cannot remove {}: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<rusqlite::Error> for GuildIoError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Store(e.into())
    }
}

type Res<T> = std::result::Result<T, GuildIoError>;

/// Counts as `messages 12, facts 3`.
pub(crate) fn describe(counts: &Counts) -> String {
    if counts.is_empty() {
        return "no rows".into();
    }
    counts
        .iter()
        .map(|(t, n)| format!("{t} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads an export file's text; errors name the JSON path that is wrong.
pub(crate) fn parse(bytes: &[u8]) -> Res<Document> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        GuildIoError::Json(if path == "." {
            e.inner().to_string()
        } else {
            format!("at {path}: {}", e.inner())
        })
    })
}

impl GuildStore {
    /// Writes `guild`'s export document (with `files`) to `w`.
    pub(crate) fn export_guild(
        &self,
        guild: GuildId,
        files: &[GuildFile],
        exported_at: i64,
        w: &mut dyn Write,
    ) -> Res<Counts> {
        let mut conn = self.0.lock();
        // A read transaction: every table as of one moment, even beside a
        // running bot, without taking its write lock.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Deferred)?;
        let schema = migrations::current_version(&tx)?;
        write!(
            w,
            "{{\"format\":\"{FORMAT}\",\"version\":{VERSION},\"schema\":{schema},\"guild\":{},\
             \"exported_at\":{exported_at},\"tables\":{{",
            guild.get()
        )?;
        let mut counts = Counts::new();
        for (i, t) in TABLES.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write!(
                w,
                "\n{}:[",
                serde_json::to_string(t.name).unwrap_or_default()
            )?;
            let n = export_table(&tx, t, guild, w)?;
            w.write_all(b"]")?;
            if n > 0 {
                counts.push((t.name, n));
            }
        }
        w.write_all(b"},\n\"files\":")?;
        serde_json::to_writer(&mut *w, files).map_err(std::io::Error::from)?;
        w.write_all(b"}\n")?;
        w.flush()?;
        tx.commit()?;
        Ok(counts)
    }

    /// How many rows of `guild` each of its own tables holds (shared feed
    /// rows left out: they stay when the guild goes).
    pub fn guild_row_counts(&self, guild: GuildId) -> Res<Counts> {
        own_counts(&self.0.lock(), guild)
    }

    /// Deletes `guild`'s rows (shared feed rows stay); returns what went.
    pub(crate) fn remove_guild(&self, guild: GuildId) -> Res<Counts> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let removed = remove_in(&tx, guild)?;
        tx.commit()?;
        Ok(removed)
    }

    /// Stores `doc`'s rows in one transaction; with `replace`, the guild's
    /// rows already here are deleted first, in the same transaction. Every
    /// forget-me this store carried out (its erasure log) and every one the
    /// people ledger holds is applied again to what came in, in the same
    /// transaction: an export taken before someone asked to be forgotten
    /// cannot bring them back.
    pub(crate) fn import_guild(&self, doc: &Document, replace: bool) -> Res<Imported> {
        check_header(doc, migrations::current_version(&self.0.lock())?)?;
        for name in doc.tables.keys() {
            if !TABLES.iter().any(|t| t.name == name) {
                return Err(GuildIoError::Malformed {
                    at: format!("tables.{name}"),
                    problem: format!(
                        "not a table of a guild's data; the tables are {}",
                        TABLES.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
        }
        let guild = GuildId(doc.guild);
        let shared = self.ledger_erasures()?;
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let existing = own_counts(&tx, guild)?;
        if !existing.is_empty() {
            if !replace {
                return Err(GuildIoError::Exists {
                    guild,
                    rows: describe(&existing),
                });
            }
            delete_rows(&tx, guild)?;
        }
        let mut import = Import {
            conn: &tx,
            guild,
            ids: HashMap::new(),
            added: Vec::new(),
        };
        let mut counts = Counts::new();
        for t in TABLES {
            let rows = doc.tables.get(t.name).map_or(&[][..], Vec::as_slice);
            let n = import.table(t, rows)?;
            if n > 0 {
                counts.push((t.name, n));
            }
        }
        import.check_owned()?;
        let forgotten = forget_again(&tx, shared)?;
        tx.commit()?;
        if forgotten.facts + forgotten.messages + forgotten.redacted > 0 {
            // As after a forget-me: the log's earlier versions of the pages
            // the import wrote still hold what was then taken out.
            let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
            if busy != 0 {
                tracing::warn!("the database log was busy; it is emptied at the next checkpoint");
            }
        }
        Ok(Imported { counts, forgotten })
    }

    /// The forget-mes in the people ledger, if this store has one.
    fn ledger_erasures(&self) -> Res<Vec<Erasure>> {
        let Some(ledger) = self.0.ledger.as_ref() else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        let mut after = 0;
        loop {
            let batch = ledger.after(after, super::people::BATCH)?;
            let Some(last) = batch.last() else {
                return Ok(found);
            };
            after = last.seq;
            found.extend(batch.iter().filter_map(|e| match e.event {
                PersonEvent::ForgetMe { user, messages } => Some(Erasure {
                    user,
                    messages,
                    at: e.at,
                }),
                PersonEvent::Boundary { .. } => None,
            }));
        }
    }
}

/// What an import brought in, and what of it went again because the
/// person had asked to be forgotten before.
#[derive(Debug, Default)]
pub(crate) struct Imported {
    pub counts: Counts,
    pub forgotten: Forgotten,
}

/// Applies every erasure of the log and of `shared` (the ledger's) to the
/// rows just imported — for each person, their latest one, bounded by when
/// it was asked: what a person said after their forget-me is theirs to keep.
fn forget_again(tx: &rusqlite::Transaction<'_>, shared: Vec<Erasure>) -> Res<Forgotten> {
    let mut all = read_erasures(tx, 0)?;
    all.extend(shared);
    let mut total = Forgotten::default();
    for e in latest_per_person(all) {
        let gone = erase(tx, &e, Some(super::to_ms(e.at)))?;
        total.facts += gone.facts;
        total.messages += gone.messages;
        total.redacted += gone.redacted;
    }
    if total.facts > 0 {
        merge_fact_index(tx)?;
    }
    Ok(total)
}

fn check_header(doc: &Document, here: u32) -> Res<()> {
    if doc.format != FORMAT {
        return Err(GuildIoError::Format(doc.format.chars().take(60).collect()));
    }
    if doc.version != VERSION {
        return Err(GuildIoError::Version(doc.version));
    }
    if doc.schema != here {
        return Err(GuildIoError::Schema {
            file: doc.schema,
            here,
        });
    }
    if doc.guild == 0 || doc.guild > i64::MAX as u64 {
        return Err(GuildIoError::Malformed {
            at: "guild".into(),
            problem: format!("{} is not a server id", doc.guild),
        });
    }
    Ok(())
}

fn export_table(conn: &Connection, t: &Table, guild: GuildId, w: &mut dyn Write) -> Res<usize> {
    let mut stmt = conn.prepare(&format!("SELECT * FROM {} WHERE {}", t.name, t.rows_of()))?;
    let columns: Vec<String> = stmt.column_names().map(str::to_string).collect();
    let mut rows = stmt.query([guild.to_sql()])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let mut row = Row::new();
        for (i, c) in columns.iter().enumerate() {
            let v = match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(x) => x.into(),
                ValueRef::Real(x) => x.into(),
                ValueRef::Text(s) => String::from_utf8_lossy(s).into_owned().into(),
                ValueRef::Blob(_) => {
                    return Err(GuildIoError::Blob {
                        table: t.name.into(),
                        column: c.clone(),
                    });
                }
            };
            row.insert(c.clone(), v);
        }
        if n > 0 {
            w.write_all(b",")?;
        }
        w.write_all(b"\n")?;
        serde_json::to_writer(&mut *w, &row).map_err(std::io::Error::from)?;
        n += 1;
    }
    Ok(n)
}

fn own_counts(conn: &Connection, guild: GuildId) -> Res<Counts> {
    let mut out = Counts::new();
    for t in TABLES {
        let Some(rows) = t.removed() else { continue };
        let n: i64 = conn.query_row(
            &format!("SELECT count(*) FROM {} WHERE {rows}", t.name),
            [guild.to_sql()],
            |r| r.get(0),
        )?;
        if n > 0 {
            out.push((t.name, n as usize));
        }
    }
    Ok(out)
}

/// [`GuildStore::remove_guild`] inside the caller's transaction (a departed
/// server's removal checks, in the same one, that it is still departed).
pub(super) fn remove_in(tx: &rusqlite::Transaction<'_>, guild: GuildId) -> Res<Counts> {
    let removed = delete_rows(tx, guild)?;
    // As forget-me does: merged, the full-text index keeps no segment
    // with the removed facts' words (secure_delete zeroes what is freed).
    tx.execute("INSERT INTO facts_fts (facts_fts) VALUES ('optimize')", [])?;
    Ok(removed)
}

/// Deletes the guild's own rows; a row that names another goes first.
fn delete_rows(conn: &Connection, guild: GuildId) -> Res<Counts> {
    let mut out = Counts::new();
    for t in TABLES.iter().rev() {
        let Some(rows) = t.removed() else { continue };
        let n = conn.execute(
            &format!("DELETE FROM {} WHERE {rows}", t.name),
            [guild.to_sql()],
        )?;
        if n > 0 {
            out.push((t.name, n));
        }
    }
    out.reverse();
    Ok(out)
}

/// A table that grows with a server's use — hundreds of thousands of rows
/// in a year of a busy server — and so is thinned in short transactions
/// ([`GuildStore::remove_paced`]) before the rest of the server's rows go in one.
struct Bulk {
    /// Up to ?2 of server ?1's rows, found through an index: each row's id,
    /// and the channel it was in where that matters (else NULL).
    pick: &'static str,
    /// Run for each picked id (?1), in order; each counts under its table.
    each: &'static [(&'static str, &'static str)],
    /// Run once for each channel of the batch (?1 the server, ?2 the channel).
    per_channel: Option<(&'static str, &'static str)>,
}

/// In the order [`delete_rows`] takes them (`TABLES` backwards): a row
/// that names another goes before it. Every row these remove is one
/// [`delete_rows`] would remove, and no other. Left to the final
/// transaction: the facts (their full-text index is merged there once, as
/// forget-me does, so no segment keeps a removed fact's words), and tables
/// that stay small or that no index finds by server (garden cycles and
/// queue, daily usage totals, feed shares), which a batch could find only
/// by reading the whole table.
const BULK: &[Bulk] = &[
    // One each time a fact came up again.
    Bulk {
        pick: "SELECT r.rowid, NULL FROM facts f JOIN fact_reinforcements r ON r.fact_id = f.id
               WHERE f.guild_id = ?1 LIMIT ?2",
        each: &[(
            "fact_reinforcements",
            "DELETE FROM fact_reinforcements WHERE rowid = ?1",
        )],
        per_channel: None,
    },
    Bulk {
        pick: "SELECT id, NULL FROM context_stream WHERE guild_id = ?1 LIMIT ?2",
        each: &[("context_stream", "DELETE FROM context_stream WHERE id = ?1")],
        per_channel: None,
    },
    // Nearly every message's routing line, and every other line.
    Bulk {
        pick: "SELECT id, NULL FROM journal WHERE guild_id = ?1 LIMIT ?2",
        each: &[("journal", "DELETE FROM journal WHERE id = ?1")],
        per_channel: None,
    },
    Bulk {
        pick: "SELECT id, NULL FROM usage WHERE guild_id = ?1 LIMIT ?2",
        each: &[("usage", "DELETE FROM usage WHERE id = ?1")],
        per_channel: None,
    },
    Bulk {
        pick: "SELECT rowid, NULL FROM reactions WHERE guild_id = ?1 LIMIT ?2",
        each: &[("reactions", "DELETE FROM reactions WHERE rowid = ?1")],
        per_channel: None,
    },
    Bulk {
        pick: "SELECT id, channel_id FROM messages WHERE guild_id = ?1 LIMIT ?2",
        each: &[
            (
                "voice_utterances",
                "DELETE FROM voice_utterances WHERE message_id = ?1",
            ),
            ("messages", "DELETE FROM messages WHERE id = ?1"),
        ],
        // A channel's extraction checkpoint is the server's through the
        // channel's row or its messages: once the last of them is gone it
        // goes too, or the final transaction could no longer find it.
        per_channel: Some((
            "extraction_state",
            "DELETE FROM extraction_state WHERE channel_id = ?2
               AND ?2 NOT IN (SELECT id FROM channels WHERE guild_id = ?1)
               AND NOT EXISTS (SELECT 1 FROM messages WHERE channel_id = ?2 AND guild_id = ?1)",
        )),
    },
];

/// How a paced removal ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Every row of the server is gone.
    Complete,
    /// A transaction found the condition no longer held (a departed server
    /// invited the bot back): what had gone stays gone, the rest stays.
    NoLongerDue,
    /// Asked to stop between two transactions (the bot is stopping).
    Stopped,
}

/// What a paced removal took, and how it shared the writer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Removal {
    /// Rows per table, batches and the final transaction together.
    pub counts: Counts,
    /// Each transaction's hold of the writer, the final one's included.
    pub holds: Holds,
    pub end: End,
}

/// Whether a removal may go on, asked inside each of its transactions.
pub(super) type Still<'a> = &'a dyn Fn(&Connection) -> Res<bool>;

impl GuildStore {
    /// Removes `guild`'s rows as [`GuildStore::remove_guild`] does, but the bulk
    /// tables first in batches paced by `pace` (each its own transaction,
    /// with a rest between), then the rest in one transaction. `still` is
    /// asked first in every transaction, `go_on` between them; either
    /// saying no ends the removal there.
    pub(super) fn remove_paced(
        &self,
        guild: GuildId,
        pace: Pace,
        still: Still<'_>,
        go_on: &dyn Fn() -> bool,
    ) -> Res<Removal> {
        let mut batch = Batch::new(pace);
        let mut tally: HashMap<&'static str, usize> = HashMap::new();
        let mut holds = Holds::default();
        let ended = |end, tally: &HashMap<_, _>, holds: Holds| Removal {
            counts: in_table_order(tally),
            holds,
            end,
        };
        for bulk in BULK {
            loop {
                let limit = batch.size();
                let Some((picked, held)) = self.thin(guild, bulk, limit, still, &mut tally)? else {
                    return Ok(ended(End::NoLongerDue, &tally, holds));
                };
                batch.held(held);
                holds.push(held);
                if picked < limit {
                    break;
                }
                // Let go of the writer: what waits for it runs now.
                std::thread::sleep(batch.rest());
                if !go_on() {
                    return Ok(ended(End::Stopped, &tally, holds));
                }
            }
        }
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let began = std::time::Instant::now();
        if !still(&tx)? {
            return Ok(ended(End::NoLongerDue, &tally, holds));
        }
        for (table, n) in remove_in(&tx, guild)? {
            *tally.entry(table).or_default() += n;
        }
        tx.commit()?;
        holds.push(began.elapsed());
        Ok(ended(End::Complete, &tally, holds))
    }

    /// One transaction: up to `limit` rows of `bulk` removed, if `still`
    /// holds. Returns how many were picked and how long the writer was
    /// held; None when `still` said no (nothing removed).
    fn thin(
        &self,
        guild: GuildId,
        bulk: &Bulk,
        limit: usize,
        still: Still<'_>,
        tally: &mut HashMap<&'static str, usize>,
    ) -> Res<Option<(usize, Duration)>> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let began = std::time::Instant::now();
        if !still(&tx)? {
            return Ok(None);
        }
        let picked: Vec<(i64, Option<i64>)> = tx
            .prepare_cached(bulk.pick)?
            .query_map(params![guild.to_sql(), limit as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        for (id, _) in &picked {
            for (table, sql) in bulk.each {
                *tally.entry(table).or_default() += tx.prepare_cached(sql)?.execute([id])?;
            }
        }
        if let Some((table, sql)) = bulk.per_channel {
            let channels: BTreeSet<i64> = picked.iter().filter_map(|(_, c)| *c).collect();
            for channel in channels {
                *tally.entry(table).or_default() += tx
                    .prepare_cached(sql)?
                    .execute(params![guild.to_sql(), channel])?;
            }
        }
        tx.commit()?;
        Ok(Some((picked.len(), began.elapsed())))
    }
}

/// Counts gathered by table, in [`TABLES`] order, tables without rows left out.
fn in_table_order(tally: &HashMap<&'static str, usize>) -> Counts {
    TABLES
        .iter()
        .filter_map(|t| match tally.get(t.name) {
            Some(&n) if n > 0 => Some((t.name, n)),
            _ => None,
        })
        .collect()
}

/// A row's values to insert, by column.
type Values = Vec<(String, Sql)>;

/// One import in progress: the new id of every re-numbered row, by table.
struct Import<'c> {
    conn: &'c Connection,
    guild: GuildId,
    ids: HashMap<&'static str, HashMap<i64, i64>>,
    /// The rows this import added (rowid, index in the file) per table,
    /// checked to be the guild's once every row is in.
    added: Vec<(&'static Table, Vec<(i64, usize)>)>,
}

impl Import<'_> {
    fn table(&mut self, t: &'static Table, rows: &[Row]) -> Res<usize> {
        let columns = table_columns(self.conn, t.name)?;
        let mut added = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let at = format!("tables.{}[{i}]", t.name);
            let (old_id, values) = self.values(t, row, &columns, &at)?;
            if let Link::Shared(_) = t.link
                && let Some(found) = self.same_row(t, &values)?
            {
                if let Some(old) = old_id {
                    self.ids.entry(t.name).or_default().insert(old, found);
                }
                continue;
            }
            let names: Vec<&str> = values.iter().map(|(c, _)| c.as_str()).collect();
            let sql = format!(
                "INSERT INTO {} ({}) VALUES ({})",
                t.name,
                names.join(", "),
                vec!["?"; names.len()].join(", ")
            );
            self.conn
                .prepare_cached(&sql)?
                .execute(params_from_iter(values.iter().map(|(_, v)| v)))
                .map_err(|source| GuildIoError::Insert {
                    at: at.clone(),
                    source,
                })?;
            let new = self.conn.last_insert_rowid();
            added.push((new, i));
            if let Some(old) = old_id {
                self.ids.entry(t.name).or_default().insert(old, new);
            }
        }
        let stored = added.len();
        self.added.push((t, added));
        Ok(stored)
    }

    /// The row's values to insert, checked against the table's columns, with
    /// the re-numbered id taken out and references rewritten.
    fn values(
        &self,
        t: &Table,
        row: &Row,
        columns: &[String],
        at: &str,
    ) -> Res<(Option<i64>, Values)> {
        let mut old_id = None;
        let mut out = Vec::with_capacity(row.len());
        for (column, value) in row {
            let here = format!("{at}.{column}");
            if !columns.iter().any(|c| c == column) {
                return Err(GuildIoError::Malformed {
                    at: here,
                    problem: format!(
                        "{} has no such column; its columns are {}",
                        t.name,
                        columns.join(", ")
                    ),
                });
            }
            let mut v = to_sql(value, &here)?;
            if t.renumber == Some(column.as_str()) {
                old_id = Some(integer(&v, &here)?);
                continue;
            }
            if let Some(r) = t.refs.iter().find(|r| r.column == column)
                && !matches!(v, Sql::Null)
            {
                let old = integer(&v, &here)?;
                v = match self.ids.get(r.table).and_then(|m| m.get(&old)) {
                    Some(new) => Sql::Integer(*new),
                    None if !r.required => Sql::Null,
                    None => {
                        return Err(GuildIoError::Malformed {
                            at: here,
                            problem: format!(
                                "refers to {} id {old}, which the file does not hold",
                                r.table
                            ),
                        });
                    }
                };
            }
            out.push((column.clone(), v));
        }
        Ok((old_id, out))
    }

    /// The id of a shared row already here with the same key (a feed source
    /// another server here follows too).
    fn same_row(&self, t: &Table, values: &[(String, Sql)]) -> Res<Option<i64>> {
        let id = t.renumber.unwrap_or("rowid");
        let mut clauses = Vec::new();
        let mut args = Vec::new();
        for k in t.key {
            clauses.push(format!("{k} IS ?"));
            args.push(
                values
                    .iter()
                    .find(|(c, _)| c == k)
                    .map_or(Sql::Null, |(_, v)| v.clone()),
            );
        }
        let sql = format!(
            "SELECT {id} FROM {} WHERE {} LIMIT 1",
            t.name,
            clauses.join(" AND ")
        );
        use rusqlite::OptionalExtension as _;
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row(params_from_iter(args.iter()), |r| r.get(0))
            .optional()?)
    }

    /// Refuses a row that the guild's own query does not find once every
    /// row is in (a feed item is the guild's through a share stored after
    /// it): a file may carry only its guild's data. One query per table,
    /// not per row, so a large server's import stays linear.
    fn check_owned(&self) -> Res<()> {
        for (t, added) in &self.added {
            if added.is_empty() {
                continue;
            }
            let mut stmt = self.conn.prepare(&format!(
                "SELECT rowid FROM {} WHERE {}",
                t.name,
                t.rows_of()
            ))?;
            let owned = stmt
                .query_map([self.guild.to_sql()], |r| r.get::<_, i64>(0))?
                .collect::<rusqlite::Result<std::collections::HashSet<i64>>>()?;
            if let Some((_, i)) = added.iter().find(|(rowid, _)| !owned.contains(rowid)) {
                let why = match t.link {
                    Link::Guild(column) => format!("its {column} must be {}", self.guild),
                    Link::Owned(clause) | Link::Shared(clause) => format!(
                        "it must belong to one of the guild's rows ({})",
                        clause
                            .replace("?1", &self.guild.to_string())
                            .split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                };
                return Err(GuildIoError::NotTheGuilds {
                    at: format!("tables.{}[{i}]", t.name),
                    guild: self.guild,
                    why,
                });
            }
        }
        Ok(())
    }
}

fn table_columns(conn: &Connection, table: &str) -> Res<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt
        .query_map([table], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(names)
}

fn to_sql(v: &Value, at: &str) -> Res<Sql> {
    Ok(match v {
        Value::Null => Sql::Null,
        Value::String(s) => Sql::Text(s.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Sql::Integer(i),
            (None, Some(_)) if n.is_u64() => {
                return Err(GuildIoError::Malformed {
                    at: at.into(),
                    problem: format!("{n} does not fit a 64-bit integer"),
                });
            }
            (None, Some(f)) => Sql::Real(f),
            (None, None) => {
                return Err(GuildIoError::Malformed {
                    at: at.into(),
                    problem: format!("{n} is not a number SQLite keeps"),
                });
            }
        },
        Value::Bool(_) | Value::Array(_) | Value::Object(_) => {
            return Err(GuildIoError::Malformed {
                at: at.into(),
                problem: "must be an integer, a real, a text or null".into(),
            });
        }
    })
}

fn integer(v: &Sql, at: &str) -> Res<i64> {
    match v {
        Sql::Integer(i) => Ok(*i),
        _ => Err(GuildIoError::Malformed {
            at: at.into(),
            problem: "must be an integer id".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// Guild 7's rows in every kind of table, beside guild 8's.
    const SEVEN: &str = "
        INSERT INTO guilds (id, name, updated_at) VALUES (7, 'Seven', 0), (8, 'Eight', 0);
        INSERT INTO channels (id, guild_id, name, updated_at) VALUES (70, 7, 'general', 0), (80, 8, 'eight', 0);
        INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at)
            VALUES (700, 7, 70, 1, 'ada', 'the moon is made of basalt', 1),
                   (701, 7, 70, 1, 'ada', 'said in voice', 2),
                   (800, 8, 80, 1, 'ada', 'eight says hi', 1);
        INSERT INTO voice_utterances (message_id, voice_channel_id, started_at, ended_at) VALUES (701, 71, 1, 2);
        INSERT INTO usage (ts, role, source, guild_id, provider, model, outcome) VALUES (1, 'reply', 'user', 7, 'p', 'm', 'ok');
        INSERT INTO journal (ts, kind, guild_id, model_call_id, summary) VALUES (1, 'reply', 7, last_insert_rowid(), 'answered');
        INSERT INTO journal (ts, kind, guild_id, summary) VALUES (1, 'route', 8, 'eight');
        INSERT INTO facts (id, guild_id, scope, kind, importance, content, created_at, updated_at, last_seen_at, tags)
            VALUES ('f1', 7, 'guild', 'fact', 'high', 'Movie night is every Sunday', 0, 0, 0, 'g7 active'),
                   ('f2', 7, 'guild', 'fact', 'low', 'The server mascot is a heron', 0, 0, 0, 'g7 active'),
                   ('f8', 8, 'guild', 'fact', 'low', 'Eight likes chess', 0, 0, 0, 'g8 active');
        INSERT INTO fact_reinforcements (fact_id, message_id, at) VALUES ('f1', 700, 1), ('f8', 800, 1);
        INSERT INTO fact_links (a, b, relation, created_at) VALUES ('f1', 'f2', 'related', 0);
        INSERT INTO discovery_sources (kind, target) VALUES ('rss', 'https://feeds.example/a');
        INSERT INTO feed_items (source_id, url, canonical_url, title, title_key, fetched_at)
            VALUES (last_insert_rowid(), 'https://a/1', 'https://a/1', 'One', 'one', 0);
        INSERT INTO feed_shares (item_id, guild_id, channel_id, message_id, shared_at) VALUES (last_insert_rowid(), 7, 70, 702, 0);
        INSERT INTO guild_sources (guild_id, kind, target, added_by, added_at) VALUES (7, 'rss', 'https://feeds.example/a', 'model', 0);
        INSERT INTO garden_cycles (guild_id, trigger, started_at, status) VALUES (7, 'timer', 0, 'completed');
        INSERT INTO garden_queue (id, guild_id, scheduled_for, context, priority, created_by, created_at, done_at, done_in_cycle)
            VALUES ('q1', 7, 0, 'tidy', 'low', 'garden', 0, 1, last_insert_rowid());
        INSERT INTO reflex_stats (name, fired) VALUES ('greet@7', 3), ('ping', 9);
        INSERT INTO extraction_state (channel_id, last_message_id, last_run_at) VALUES (70, 700, 0), (80, 800, 0);
    ";

    /// Rows already in the target, so its ids collide with the file's.
    const OTHER: &str = "
        INSERT INTO usage (ts, role, source, guild_id, provider, model, outcome) VALUES (1, 'reply', 'user', 9, 'p', 'm', 'ok');
        INSERT INTO journal (ts, kind, guild_id, summary) VALUES (1, 'route', 9, 'nine');
        INSERT INTO facts (id, guild_id, scope, kind, importance, content, created_at, updated_at, last_seen_at, tags)
            VALUES ('f9', 9, 'guild', 'fact', 'low', 'Nine likes tea', 0, 0, 0, 'g9 active');
        INSERT INTO discovery_sources (kind, target) VALUES ('rss', 'https://other.example/z');
        INSERT INTO discovery_sources (kind, target) VALUES ('rss', 'https://feeds.example/a');
        INSERT INTO garden_cycles (guild_id, trigger, started_at, status) VALUES (9, 'timer', 0, 'completed');
    ";

    fn store_with(sql: &str) -> Store {
        let s = Store::open_in_memory().unwrap();
        s.lock().execute_batch(sql).unwrap();
        s
    }

    fn exported(store: &Store, guild: u64) -> Vec<u8> {
        let files = [GuildFile {
            folder: "guilds".into(),
            path: "notes/today.txt".into(),
            text: "buy milk".into(),
        }];
        let mut out = Vec::new();
        store
            .guilds()
            .export_guild(GuildId(guild), &files, 5, &mut out)
            .unwrap();
        out
    }

    fn one<T: rusqlite::types::FromSql>(s: &Store, sql: &str) -> T {
        s.lock().query_row(sql, [], |r| r.get(0)).unwrap()
    }

    fn all_counts(s: &Store) -> Vec<(String, i64)> {
        let conn = s.lock();
        TABLES
            .iter()
            .map(|t| {
                let n = conn
                    .query_row(&format!("SELECT count(*) FROM {}", t.name), [], |r| {
                        r.get(0)
                    })
                    .unwrap();
                (t.name.to_string(), n)
            })
            .collect()
    }

    #[test]
    fn a_guild_moves_with_new_ids_and_its_references_rewritten() {
        let from = store_with(SEVEN);
        let bytes = exported(&from, 7);
        let doc = parse(&bytes).unwrap();
        assert_eq!(doc.files[0].text, "buy milk");
        let to = store_with(OTHER);
        let counts = to.guilds().import_guild(&doc, false).unwrap().counts;
        assert!(counts.contains(&("feed_items", 1)), "{counts:?}");
        assert!(
            !counts.iter().any(|(t, _)| *t == "discovery_sources"),
            "the feed already here is used, not copied: {counts:?}"
        );
        assert_eq!(
            to.guilds().guild_row_counts(GuildId(7)).unwrap(),
            from.guilds().guild_row_counts(GuildId(7)).unwrap()
        );
        // The journal's model call is the moved call, under its new id.
        let call: i64 = one(&to, "SELECT model_call_id FROM journal WHERE guild_id = 7");
        assert_eq!(
            one::<i64>(
                &to,
                &format!("SELECT guild_id FROM usage WHERE id = {call}")
            ),
            7
        );
        assert_ne!(call, 1, "id 1 was the target's own call");
        // The shared feed source is the one already here; the share names the moved item.
        assert_eq!(one::<i64>(&to, "SELECT count(*) FROM discovery_sources"), 2);
        let source: i64 = one(
            &to,
            "SELECT i.source_id FROM feed_shares s JOIN feed_items i ON i.id = s.item_id WHERE s.guild_id = 7",
        );
        assert_eq!(source, 2, "the target's existing source for the same feed");
        let cycle: i64 = one(
            &to,
            "SELECT done_in_cycle FROM garden_queue WHERE id = 'q1'",
        );
        assert_eq!(
            one::<i64>(
                &to,
                &format!("SELECT guild_id FROM garden_cycles WHERE id = {cycle}")
            ),
            7
        );
        // The full-text index found the facts through the triggers.
        let found: String = one(
            &to,
            "SELECT f.id FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid WHERE facts_fts MATCH 'heron'",
        );
        assert_eq!(found, "f2");
        assert_eq!(one::<String>(&to, "SELECT a || b FROM fact_links"), "f1f2");
        assert_eq!(
            one::<i64>(&to, "SELECT count(*) FROM messages WHERE guild_id = 8"),
            0
        );
        assert_eq!(
            one::<i64>(&to, "SELECT count(*) FROM reflex_stats WHERE name = 'ping'"),
            0
        );
        assert_eq!(one::<i64>(&to, "SELECT count(*) FROM extraction_state"), 1);
    }

    #[test]
    fn a_refused_import_leaves_the_store_as_it_was() {
        let from = store_with(SEVEN);
        let good = String::from_utf8(exported(&from, 7)).unwrap();
        let to = store_with(OTHER);
        let before = all_counts(&to);
        let refuse = |text: &str, replace: bool| -> String {
            let err = parse(text.as_bytes())
                .and_then(|doc| to.guilds().import_guild(&doc, replace))
                .unwrap_err()
                .to_string();
            assert_eq!(all_counts(&to), before, "{err}");
            err
        };
        let schema = good.replace(
            &format!("\"schema\":{}", migrations::latest()),
            "\"schema\":3",
        );
        assert!(refuse(&schema, false).contains("schema version 3"));
        let format = good.replace(FORMAT, "something-else");
        assert!(refuse(&format, false).contains("\"something-else\""));
        let foreign = good.replace(
            "\"guild_id\":7,\"channel_id\":70,\"author_id\"",
            "\"guild_id\":9,\"channel_id\":70,\"author_id\"",
        );
        let err = refuse(&foreign, false);
        assert!(
            err.starts_with("tables.messages[0] is not guild 7's: its guild_id must be 7"),
            "{err}"
        );
        let stray = good.replace("\"fact_id\":\"f1\"", "\"fact_id\":\"f9\"");
        let err = refuse(&stray, false);
        assert!(
            err.starts_with("tables.fact_reinforcements[0] is not guild 7's: it must belong to one of the guild's rows (fact_id IN (SELECT id FROM facts WHERE guild_id = 7))"),
            "{err}"
        );
        let bad_value = good.replace("\"content\":\"said in voice\"", "\"content\":true");
        assert_eq!(
            refuse(&bad_value, false),
            "tables.messages[1].content: must be an integer, a real, a text or null"
        );
        let bad_column = good.replace("\"content\":\"said in voice\"", "\"contnet\":\"x\"");
        assert!(
            refuse(&bad_column, false)
                .starts_with("tables.messages[1].contnet: messages has no such column")
        );
        assert!(refuse("{\"format\": 1}", false).contains("at format"));
        // Late in the file: everything before it is rolled back too.
        let late = good.replace("\"priority\":\"low\"", "\"priority\":\"urgent\"");
        assert!(refuse(&late, false).starts_with("tables.garden_queue[0]: cannot store it here"));
        to.guilds()
            .import_guild(&parse(good.as_bytes()).unwrap(), false)
            .unwrap();
        let once = all_counts(&to);
        let err = to
            .guilds()
            .import_guild(&parse(good.as_bytes()).unwrap(), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("already holds rows of guild 7 (guilds 1, channels 1, messages 2"),
            "{err}"
        );
        assert_eq!(all_counts(&to), once);
        to.guilds()
            .import_guild(&parse(good.as_bytes()).unwrap(), true)
            .unwrap();
        assert_eq!(all_counts(&to), once, "replaced, not doubled");
    }

    #[test]
    fn removing_a_guild_keeps_the_others_and_the_shared_feed() {
        let store = store_with(SEVEN);
        let removed = store.guilds().remove_guild(GuildId(7)).unwrap();
        assert!(removed.contains(&("messages", 2)), "{removed:?}");
        assert!(
            store
                .guilds()
                .guild_row_counts(GuildId(7))
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store.guilds().guild_row_counts(GuildId(8)).unwrap(),
            vec![
                ("guilds", 1),
                ("channels", 1),
                ("messages", 1),
                ("journal", 1),
                ("facts", 1),
                ("fact_reinforcements", 1),
                ("extraction_state", 1),
            ]
        );
        assert_eq!(one::<i64>(&store, "SELECT count(*) FROM feed_items"), 1);
        assert_eq!(one::<i64>(&store, "SELECT count(*) FROM reflex_stats"), 1);
        let left: i64 = one(
            &store,
            "SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'heron'",
        );
        assert_eq!(left, 0);
    }

    #[test]
    fn a_paced_removal_takes_exactly_what_removing_at_once_takes() {
        // Besides SEVEN: a voice span, a reinforcement, context, and a
        // message in a channel the store has no row of, whose extraction
        // checkpoint is the server's only through that message.
        let more = "
            INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at)
                VALUES (703, 7, 71, 1, 'ada', 'in a thread', 3);
            INSERT INTO extraction_state (channel_id, last_message_id, last_run_at) VALUES (71, 703, 0);
            INSERT INTO fact_reinforcements (fact_id, message_id, at) VALUES ('f2', 703, 3);
            INSERT INTO context_stream (guild_id, ts, kind, content) VALUES (7, 1, 'note', 'a'), (7, 2, 'note', 'b'), (8, 1, 'note', 'c');
            INSERT INTO reactions (message_id, user_id, emoji, guild_id, channel_id, at) VALUES (700, 2, 'x', 7, 70, 1);";
        let at_once = store_with(&format!("{SEVEN}{more}"));
        let paced = store_with(&format!("{SEVEN}{more}"));
        let all = at_once.guilds().remove_guild(GuildId(7)).unwrap();
        let one_a_batch = Pace {
            batch: 1,
            hold: Duration::MAX,
            rest: Duration::ZERO,
        };
        let removal = paced
            .guilds()
            .remove_paced(GuildId(7), one_a_batch, &|_| Ok(true), &|| true)
            .unwrap();
        assert_eq!(removal.end, End::Complete);
        assert_eq!(removal.counts, all);
        assert!(all.contains(&("extraction_state", 2)), "{all:?}");
        assert_eq!(all_counts(&paced), all_counts(&at_once));
        assert!(
            paced
                .guilds()
                .guild_row_counts(GuildId(7))
                .unwrap()
                .is_empty()
        );
        // Each bulk row in its own transaction (3 messages, a journal line,
        // 2 context lines, a usage row, a reaction, 2 reinforcements), each
        // of the 6 tables' last look finding none, and the final transaction.
        assert_eq!(removal.holds.count(), 10 + 6 + 1, "{:?}", removal.holds);
    }

    #[test]
    fn each_batch_finds_its_rows_by_an_index_not_by_reading_the_table() {
        for bulk in BULK {
            let plan = super::super::query_plan(bulk.pick, params![7, 500]);
            assert!(
                plan.iter()
                    .all(|step| step.starts_with("SEARCH") && step.contains("INDEX")),
                "{}: {plan:?}",
                bulk.pick
            );
        }
    }
}
