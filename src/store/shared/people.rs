//! The people ledger in PostgreSQL (`storage.sharedUrl`): the same events,
//! read and written the same way as the SQLite ledger in
//! `storage.sharedDir` (`store::people`), for processes on any hosts.
//!
//! Sequence numbers come from a `bigserial`, and an append holds a
//! transaction-scoped advisory lock: appends commit one at a time in
//! sequence order, so a reader that has seen event `n` can never later
//! find a smaller one committed behind it (a cursor past a gap would skip
//! that event forever). Each append notifies [`CHANNEL`] in the same
//! transaction — delivered at commit — and the other processes' listeners
//! catch up at once; the periodic catch-up stays as the fallback.

use chrono::{DateTime, Utc};

use super::{SharedDb, SharedError};
use crate::store::people::{LedgerEntry, PeopleLog, PersonEvent};
use crate::store::{StoreError, from_ms, to_ms};

/// The `NOTIFY` channel appends announce themselves on.
pub(crate) const CHANNEL: &str = "ambient_people";

/// The advisory lock an append holds until it commits.
const APPEND_LOCK: i64 = 0x616d_6269_656e_7402;

/// Migration 1 of the shared schema.
pub(super) const SCHEMA: &str = r#"
    CREATE TABLE people_ledger (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        ledger_id  TEXT    NOT NULL,     -- names this ledger in each store's cursor
        created_at BIGINT  NOT NULL
    );
    CREATE TABLE people_events (
        seq      BIGSERIAL PRIMARY KEY,
        at       BIGINT  NOT NULL,       -- Unix ms
        user_id  BIGINT  NOT NULL,
        kind     TEXT    NOT NULL CHECK (kind IN ('boundary_set', 'boundary_cleared', 'forget_me')),
        boundary TEXT    CHECK (boundary IN ('no_ping', 'no_unprompted', 'no_memory', 'no_voice')),
        messages BOOLEAN NOT NULL DEFAULT false,   -- forget-me: the text of what they said too
        writer   TEXT    NOT NULL        -- the writing process's shard plan, e.g. "0-1/4"
    );
    CREATE FUNCTION people_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the people ledger is append-only'; END $$;
    CREATE TRIGGER people_events_no_change BEFORE UPDATE OR DELETE ON people_events
        FOR EACH ROW EXECUTE FUNCTION people_events_append_only();
    CREATE TRIGGER people_events_no_truncate BEFORE TRUNCATE ON people_events
        FOR EACH STATEMENT EXECUTE FUNCTION people_events_append_only();
"#;

/// The people ledger in the shared database.
#[derive(Clone, Debug)]
pub struct PgLedger {
    db: SharedDb,
    id: String,
    writer: String,
}

impl PgLedger {
    /// Migrates the shared schema if it is behind, and reads (or, the first
    /// time, makes) the ledger's id; `writer` names this process.
    pub fn open(db: SharedDb, writer: &str) -> super::Result<Self> {
        let d = db.clone();
        let id = db.block_on(async move {
            d.migrate().await?;
            let this = d.clone();
            d.with_client(async move |c| {
                c.execute(
                    "INSERT INTO people_ledger (id, ledger_id, created_at) VALUES (1, $1, $2)
                     ON CONFLICT (id) DO NOTHING",
                    &[&uuid::Uuid::new_v4().to_string(), &to_ms(Utc::now())],
                )
                .await
                .map_err(|e| this.failed(e))?;
                let row = c
                    .query_one("SELECT ledger_id FROM people_ledger WHERE id = 1", &[])
                    .await
                    .map_err(|e| this.failed(e))?;
                Ok(row.get::<_, String>(0))
            })
            .await
        })?;
        Ok(Self {
            db,
            id,
            writer: writer.to_string(),
        })
    }

    pub(crate) fn db(&self) -> &SharedDb {
        &self.db
    }

    /// Copies `entries` — a whole SQLite ledger, in order — into this
    /// ledger, which must be empty: the same sequence numbers and the same
    /// id, so every store's cursor stays true across the move. One
    /// transaction: on any failure nothing was copied.
    pub(crate) fn import(&self, id: &str, entries: Vec<LedgerEntry>) -> super::Result<usize> {
        let this = self.db.clone();
        let id = id.to_string();
        self.db.block_on(async move {
            let d = this.clone();
            this.with_client(async move |c| {
                let q = |e| d.failed(e);
                let tx = c.transaction().await.map_err(q)?;
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&APPEND_LOCK])
                    .await
                    .map_err(q)?;
                let held: i64 = tx
                    .query_one("SELECT count(*) FROM people_events", &[])
                    .await
                    .map_err(q)?
                    .get(0);
                if held > 0 {
                    return Err(SharedError::Refused(format!(
                        "the people ledger at {} already holds {held} event(s): import copies a \
                         ledger into an empty one only, so that sequence numbers stay the same",
                        d.place()
                    )));
                }
                let insert = tx
                    .prepare(
                        "INSERT INTO people_events (seq, at, user_id, kind, boundary, messages, writer)
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .await
                    .map_err(q)?;
                for e in &entries {
                    let (user, kind, boundary, messages) = e.event.columns();
                    tx.execute(
                        &insert,
                        &[
                            &e.seq,
                            &to_ms(e.at),
                            &user.to_sql(),
                            &kind,
                            &boundary,
                            &messages,
                            &e.writer,
                        ],
                    )
                    .await
                    .map_err(q)?;
                }
                tx.execute(
                    "SELECT setval(pg_get_serial_sequence('people_events', 'seq'),
                                   greatest((SELECT max(seq) FROM people_events), 1),
                                   (SELECT count(*) > 0 FROM people_events))",
                    &[],
                )
                .await
                .map_err(q)?;
                tx.execute("UPDATE people_ledger SET ledger_id = $1 WHERE id = 1", &[&id])
                    .await
                    .map_err(q)?;
                tx.execute("SELECT pg_notify($1, 'import')", &[&CHANNEL])
                    .await
                    .map_err(q)?;
                tx.commit().await.map_err(q)?;
                Ok(entries.len())
            })
            .await
        })
    }
}

/// One row of `people_events`; a column not of its type is `Corrupt`,
/// never a panic (the table is another host's to damage).
fn entry(r: &tokio_postgres::Row) -> crate::store::Result<LedgerEntry> {
    let bad = |e: tokio_postgres::Error| StoreError::Corrupt(format!("people_events row: {e}"));
    let seq: i64 = r.try_get(0).map_err(bad)?;
    let event = PersonEvent::from_columns(
        seq,
        r.try_get(2).map_err(bad)?,
        r.try_get(3).map_err(bad)?,
        r.try_get(4).map_err(bad)?,
        r.try_get(5).map_err(bad)?,
    )?;
    Ok(LedgerEntry {
        seq,
        at: from_ms(r.try_get(1).map_err(bad)?),
        writer: r.try_get(6).map_err(bad)?,
        event,
    })
}

fn lost(e: SharedError) -> StoreError {
    StoreError::SharedLedger(e.to_string())
}

impl PeopleLog for PgLedger {
    fn id(&self) -> &str {
        &self.id
    }

    fn writer(&self) -> &str {
        &self.writer
    }

    fn append(&self, event: &PersonEvent, at: DateTime<Utc>) -> crate::store::Result<i64> {
        let (user, kind, boundary, messages) = event.columns();
        let writer = self.writer.clone();
        let d = self.db.clone();
        self.db
            .block_on(async move {
                let this = d.clone();
                d.with_client(async move |c| {
                    let q = |e| this.failed(e);
                    let tx = c.transaction().await.map_err(q)?;
                    // Held to the commit: sequence order is commit order.
                    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&APPEND_LOCK])
                        .await
                        .map_err(q)?;
                    let seq: i64 = tx
                        .query_one(
                            "INSERT INTO people_events (at, user_id, kind, boundary, messages, writer)
                             VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
                            &[&to_ms(at), &user.to_sql(), &kind, &boundary, &messages, &writer],
                        )
                        .await
                        .map_err(q)?
                        .get(0);
                    tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &seq.to_string()])
                        .await
                        .map_err(q)?;
                    tx.commit().await.map_err(q)?;
                    Ok(seq)
                })
                .await
            })
            .map_err(lost)
    }

    fn after(&self, seq: i64, limit: usize) -> crate::store::Result<Vec<LedgerEntry>> {
        let d = self.db.clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .db
            .block_on(async move {
                let this = d.clone();
                d.with_client(async move |c| {
                    c.query(
                        "SELECT seq, at, user_id, kind, boundary, messages, writer FROM people_events
                         WHERE seq > $1 ORDER BY seq LIMIT $2",
                        &[&seq, &limit],
                    )
                    .await
                    .map_err(|e| this.failed(e))
                })
                .await
            })
            .map_err(lost)?;
        rows.iter().map(entry).collect()
    }

    fn subscribe(&self) -> Option<tokio::sync::mpsc::Receiver<()>> {
        self.db.listen(CHANNEL).ok()
    }
}
