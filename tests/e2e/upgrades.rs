//! Upgrades: a database written at every earlier schema version opens with
//! this ambient and keeps every row, each still read by the code's own reads;
//! a database (or people ledger) from a newer ambient is refused by every
//! command that opens it, and left byte for byte as it was.
//!
//! The rows are not kept by hand per version. At each version of
//! `migrations::MIGRATIONS`, every table that exists then gets rows made from
//! its own columns (`PRAGMA table_info`: typed, NOT NULL honoured, its
//! foreign keys and CHECK lists satisfied), with [`HINTS`] for the columns the
//! code reads as JSON or as one of a few words, plus a few realistic rows
//! ([`REALISTIC`]) for the tables that matter most. A migration added later is
//! covered without touching this file; one that loses rows fails naming the
//! table, the versions it loses them from and so the migration. A migration
//! that drops or changes rows on purpose says so in [`CHANGED`], with why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ambient::ids::{ChannelId, GuildId, MessageId, UserId};
use ambient::store::boundaries::Boundary;
use ambient::store::usage::UsageFilter;
use ambient::store::{Store, migrations};
use ambient::vocab::journal::Filter;
use chrono::DateTime;
use rusqlite::Connection;
use rusqlite::types::Value;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::support::home::Home;

/// 2025-06-01 00:00 UTC, in Unix ms: when the rows were written.
const T0: i64 = 1_748_736_000_000;
const HOUR: i64 = 3_600_000;

/// Columns the code reads as JSON or as one of a few words: the values made
/// rows take there (SQL literals, one per row in turn). Any other column gets
/// a value of its declared type.
const HINTS: &[(&str, &str, &[&str])] = &[
    (
        "messages",
        "attachments",
        &[
            r#"'[{"name":"map.png","url":"https://cdn.discordapp.com/attachments/1/2/map.png"}]'"#,
            "'[]'",
        ],
    ),
    ("journal", "kind", &["'reply'", "'gate'", "'memory'"]),
    ("journal", "data", &[r#"'{"tokens":12}'"#, "'{}'"]),
    (
        "guild_settings",
        "path",
        &["'initiative.text.eagerness'", "'bot.name'"],
    ),
    (
        "guild_settings",
        "value",
        &["'5'", r#"'"Ambient"'"#, "'true'"],
    ),
    (
        "pending_thoughts",
        "media",
        &[
            r#"'{"kind":"image","prompt":"fog over the harbour"}'"#,
            "NULL",
        ],
    ),
    ("facts", "kind", &["'decision'", "'fact'", "'preference'"]),
    ("facts", "sources", &["'[1001,1002]'", "'[]'"]),
    ("usage", "role", &["'reply'", "'ambient'", "'extract'"]),
    ("usage", "source", &["'user'", "'ambient'", "'reflex'"]),
    ("usage", "outcome", &["'ok'", "'rate_limited'", "'timeout'"]),
    (
        "garden_state",
        "value",
        &[r#"'{"next_wake_at":1748736000000}'"#, "3", r#"'"resting"'"#],
    ),
    ("schedules", "cron", &["'0 9 * * *'", "'*/30 * * * *'"]),
    ("shard_plan", "first_shard", &["0"]),
    ("shard_plan", "last_shard", &["1"]),
    ("shard_plan", "total", &["4"]),
];

/// Rows as people and the bot wrote them, for the tables that matter most;
/// each statement runs at every version where its table exists.
const REALISTIC: &[(&str, &str)] = &[
    (
        "guilds",
        "INSERT INTO guilds (id, name, updated_at) VALUES (100, 'Lighthouse Keepers', 1748736000000)",
    ),
    (
        "channels",
        "INSERT INTO channels (id, guild_id, name, updated_at) VALUES (200, 100, 'general', 1748736000000)",
    ),
    (
        "messages",
        r#"INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, attachments, created_at)
           VALUES (5001, 100, 200, 42, 'ada', 'the lighthouse on the point is painted red now',
                   '[{"name":"lighthouse.jpg","url":"https://cdn.discordapp.com/attachments/200/1/lighthouse.jpg"}]',
                   1748736000000)"#,
    ),
    (
        "messages",
        "INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, author_is_bot, is_self, content, reply_to_id, created_at, edited_at)
         VALUES (5002, 100, 200, 7, 'ambient', 1, 1, 'Red suits it. Was it white before?', 5001, 1748736060000, 1748736070000)",
    ),
    (
        "messages",
        "INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, source, created_at)
         VALUES (5003, 100, 300, 42, 'ada', 'can everyone hear me', 'vc', 1748736120000)",
    ),
    (
        "messages",
        "INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at, deleted_at)
         VALUES (5004, NULL, 400, 43, 'bob', 'a word in a direct message', 1748736180000, 1748736190000)",
    ),
    (
        "journal",
        r#"INSERT INTO journal (ts, kind, guild_id, channel_id, message_id, summary, reason, salience, data)
           VALUES (1748736060000, 'reply', 100, 200, 5001, 'answered ada about the lighthouse',
                   'addressed by name', 0.9, '{"model":"claude-sonnet","tokens_in":1200}')"#,
    ),
    (
        "journal",
        "INSERT INTO journal (ts, kind, guild_id, channel_id, message_id, summary)
         VALUES (1748736180000, 'route', 100, 200, 5003, 'let pass: nobody addressed')",
    ),
    (
        "usage",
        "INSERT INTO usage (ts, role, source, guild_id, provider, model, pay_per_token, tokens_in, tokens_out, latency_ms, outcome)
         VALUES (1748736060000, 'reply', 'user', 100, 'anthropic', 'claude-sonnet', 1, 1200, 80, 950, 'ok')",
    ),
    (
        "pending_thoughts",
        r#"INSERT INTO pending_thoughts (guild_id, draft, channel_id, created_at, updated_at, expires_at, last_reason, media)
           VALUES (100, 'ask whether the fog horn still works', 200, 1748736000000, 1748736000000, 1748822400000,
                   'quiet evening', '{"kind":"image","prompt":"fog over a lighthouse"}')"#,
    ),
    (
        "initiative_outbox",
        "INSERT INTO initiative_outbox (nonce, guild_id, channel_id, text, created_at)
         VALUES ('n-unsent', 100, 200, 'anyone seen the fog today?', 1748736000000)",
    ),
    (
        "initiative_outbox",
        "INSERT INTO initiative_outbox (nonce, guild_id, channel_id, text, created_at, message_id)
         VALUES ('n-sent', 100, 200, 'the lamp is lit', 1748736000000, 5002)",
    ),
    (
        "facts",
        "INSERT INTO facts (id, guild_id, scope, kind, importance, subject, content, sources, author_id, author_name,
                            created_at, updated_at, last_seen_at, tags)
         VALUES ('f-lighthouse', 100, 'guild', 'fact', 'high', 'lighthouse', 'The lighthouse on the point is painted red',
                 '[5001]', 42, 'ada', 1748736000000, 1748736000000, 1748736000000, 'g100 u0')",
    ),
    (
        "voice_optout",
        "INSERT INTO voice_optout (guild_id, user_id, at) VALUES (100, 42, 1748736000000), (101, 42, 1748735000000)",
    ),
    (
        "context_stream",
        "INSERT INTO context_stream (guild_id, channel_id, ts, kind, content)
         VALUES (100, 200, 1748736000000, 'user_message', 'ada: the lighthouse on the point is painted red now'),
                (100, 200, 1748736060000, 'decision', 'answered ada')",
    ),
    (
        "tasks",
        "INSERT INTO tasks (id, guild_id, channel_id, text, message, due_at, created_by, created_at, owner_id)
         VALUES ('t-lamp', 100, 200, 'remind ada to check the lamp', 'Ada, the lamp!', 1748822400000, 'user:42',
                 1748736000000, 42)",
    ),
    (
        "boundaries",
        "INSERT INTO boundaries (user_id, kind, at) VALUES (43, 'no_ping', 1748736000000)",
    ),
];

/// How a migration changes a table's rows on purpose.
struct Changed {
    table: &'static str,
    /// The migration that does it.
    by: u32,
    /// The rows it removes (a WHERE clause), or `None`: the whole table goes.
    rows: Option<&'static str>,
    why: &'static str,
    /// Where what the rows said is found after it, read by the code.
    carried: Option<Reader>,
}

const CHANGED: &[Changed] = &[
    Changed {
        table: "voice_optout",
        by: 12,
        rows: None,
        why: "a voice opt-out became the person's no_voice boundary, on every server",
        carried: Some(opt_outs_became_boundaries),
    },
    Changed {
        table: "context_stream",
        by: 17,
        rows: Some("kind = 'user_message'"),
        why: "the context stream reads people's messages from messages; its copies of them went",
        carried: None,
    },
];

/// Problems found reading a table's rows back through the store.
type Reader = fn(&Store, &Table) -> Vec<String>;

/// Every table's rows, read back through the store's own reads after the
/// upgrade. A table that exists at an earlier version and is not here must
/// be in [`NOT_READ`], saying why.
const READERS: &[(&str, Reader)] = &[
    ("messages", read_messages),
    ("guilds", read_guilds),
    ("channels", read_channels),
    ("journal", read_journal),
    ("guild_settings", read_guild_settings),
    ("usage", read_usage),
    ("erasures", read_erasures),
    ("usage_daily", read_usage_daily),
    ("pending_thoughts", read_pending_thoughts),
    ("initiative_state", read_initiative_state),
    ("initiative_outbox", read_outbox),
    ("discovery_sources", read_sources),
    ("guild_sources", read_guild_sources),
    ("feed_items", read_feed_items),
    ("facts", read_facts),
    ("fact_reinforcements", read_reinforcements),
    ("extraction_state", read_extraction_state),
    ("tasks", read_tasks),
    ("ideas", read_ideas),
    ("schedules", read_schedules),
    ("reflex_stats", read_reflex_stats),
    ("reflex_disabled", read_reflex_disabled),
    ("garden_cycles", read_cycles),
    ("garden_queue", read_garden_queue),
    ("garden_state", read_garden_state),
    ("fact_links", read_fact_links),
    ("voice_utterances", read_utterances),
    ("boundaries", read_boundaries),
    ("hushes", read_hushes),
    ("shard_plan", read_shard_plan),
    ("people_cursor", read_people_cursor),
    ("departed_guilds", read_departures),
    ("access_notices", read_access_notices),
    ("dm_pairing_codes", read_dm_pairing_codes),
    ("dm_paired", read_dm_paired),
    ("feed_subscriptions", read_feed_subscriptions),
    ("feed_deliveries", read_feed_deliveries),
];

/// Tables whose rows no read of the store returns one by one; their rows are
/// still checked, column by column, to be there after the upgrade.
const NOT_READ: &[(&str, &str)] = &[
    (
        "feed_shares",
        "read only inside the feed ranking's and stats' counts",
    ),
    (
        "reactions",
        "read only as counts of reactions to the bot's own posts (the garden's feedback)",
    ),
    (
        "context_stream",
        "read by server and time window with people's messages merged in; the stream's rows are checked raw",
    ),
    ("voice_optout", "dropped by migration 12 (see CHANGED)"),
];

/// One table's rows: the columns it had and each row's values.
#[derive(Clone, Debug)]
struct Table {
    name: String,
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
}

impl Table {
    fn col(&self, name: &str) -> usize {
        self.columns
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("{} has no column {name}", self.name))
    }

    fn each(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(move |values| Row {
            table: self,
            values,
        })
    }
}

#[derive(Clone, Copy)]
struct Row<'a> {
    table: &'a Table,
    values: &'a [Value],
}

impl Row<'_> {
    fn get(&self, column: &str) -> &Value {
        &self.values[self.table.col(column)]
    }
    fn int(&self, column: &str) -> i64 {
        match self.get(column) {
            Value::Integer(i) => *i,
            other => panic!("{}.{column}: not an integer: {other:?}", self.table.name),
        }
    }
    fn opt_int(&self, column: &str) -> Option<i64> {
        match self.get(column) {
            Value::Null => None,
            _ => Some(self.int(column)),
        }
    }
    fn text(&self, column: &str) -> String {
        match self.get(column) {
            Value::Text(t) => t.clone(),
            other => panic!("{}.{column}: not text: {other:?}", self.table.name),
        }
    }
    fn json(&self, column: &str) -> serde_json::Value {
        serde_json::from_str(&self.text(column)).unwrap_or_else(|e| {
            panic!(
                "{}.{column}: not JSON ({e}): add a value to HINTS",
                self.table.name
            )
        })
    }
}

/// A column as `PRAGMA table_info` describes it.
struct Column {
    name: String,
    kind: String,
    not_null: bool,
    default: Option<String>,
    pk: bool,
}

/// The ordinary tables of the database (not SQLite's own, not the full-text
/// index and its shadow tables, which its triggers fill), each with its
/// CREATE statement.
fn table_names(conn: &Connection) -> Vec<(String, String)> {
    let mut stmt = conn
        .prepare(
            "SELECT s.name, s.sql FROM sqlite_schema s
             JOIN pragma_table_list l ON l.name = s.name AND l.schema = 'main'
             WHERE s.type = 'table' AND l.type = 'table' AND s.name NOT LIKE 'sqlite_%'
             ORDER BY s.name",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn columns(conn: &Connection, table: &str) -> Vec<Column> {
    let mut stmt = conn
        .prepare("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)")
        .unwrap();
    stmt.query_map([table], |r| {
        Ok(Column {
            name: r.get(0)?,
            kind: r.get::<_, String>(1)?.to_uppercase(),
            not_null: r.get(2)?,
            default: r.get(3)?,
            pk: r.get::<_, i64>(4)? > 0,
        })
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

/// The table each column refers to by a declared foreign key: column → (table, column).
fn foreign_keys(conn: &Connection, table: &str) -> BTreeMap<String, (String, String)> {
    let mut stmt = conn
        .prepare("SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?1)")
        .unwrap();
    stmt.query_map([table], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// The values a column's CHECK allows, when its definition lists them
/// (`kind TEXT CHECK (kind IN ('a', 'b'))`, `id INTEGER CHECK (id = 1)`).
fn allowed(create: &str, column: &str) -> Option<Vec<String>> {
    let line = create
        .lines()
        .map(str::trim)
        .find(|l| l.split_whitespace().next() == Some(column) && l.contains("CHECK"))?;
    let check = &line[line.find("CHECK")?..];
    if let Some(at) = check.find(" IN (") {
        let list = &check[at + 5..];
        let list = &list[..list.find(')')?];
        return Some(list.split(',').map(|v| v.trim().to_string()).collect());
    }
    let pinned = format!("({column} = ");
    let at = check.find(&pinned)?;
    let rest = &check[at + pinned.len()..];
    Some(vec![rest[..rest.find(')')?].trim().to_string()])
}

/// The value row `i` of `table` takes in `column`, as an SQL literal.
fn literal(
    conn: &Connection,
    (table, create, salt): (&str, &str, i64),
    c: &Column,
    fks: &BTreeMap<String, (String, String)>,
    i: usize,
) -> String {
    let pick = |values: &[String]| values[i % values.len()].clone();
    if let Some((_, _, values)) = HINTS.iter().find(|h| h.0 == table && h.1 == c.name) {
        return values[i % values.len()].to_string();
    }
    if let Some((parent, key)) = fks.get(&c.name) {
        let keys: Vec<String> = conn
            .prepare(&format!("SELECT {key} FROM {parent} ORDER BY {key}"))
            .unwrap()
            .query_map([], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|k| k.unwrap().to_string())
            .collect();
        assert!(
            !keys.is_empty(),
            "{table}.{} refers to empty {parent}",
            c.name
        );
        return pick(&keys);
    }
    if let Some(values) = allowed(create, &c.name) {
        return pick(&values);
    }
    if !c.not_null && !c.pk && i % 3 == 2 {
        return "NULL".into();
    }
    let n = i as i64;
    let name = c.name.as_str();
    if c.kind.contains("INT") {
        let time = name.ends_with("_at") || matches!(name, "ts" | "at" | "until" | "scheduled_for");
        let id = c.pk || name == "id" || name.ends_with("_id");
        return if time {
            (T0 + n * HOUR + salt * 60_000).to_string()
        } else if id {
            (1_300_000_000_000_000_000 + salt * 1_000 + n).to_string()
        } else {
            (n + 1).to_string()
        };
    }
    if c.kind.contains("REAL") {
        return format!("{}", 0.25 * (n + 1) as f64);
    }
    match c.default.as_deref() {
        // A JSON column's empty value, as the code writes it.
        Some(d @ ("'[]'" | "'{}'")) => d.to_string(),
        _ => format!("'{table}.{name} #{i}: it''s ✓'"),
    }
}

/// How many foreign-key hops lead up from `table` to a table with none.
fn fk_depth(conn: &Connection, table: &str, hops: usize) -> usize {
    // A cycle (a self-reference) would never end; no schema here is that deep.
    if hops > 8 {
        return hops;
    }
    foreign_keys(conn, table)
        .values()
        .filter(|(parent, _)| parent != table)
        .map(|(parent, _)| 1 + fk_depth(conn, parent, hops + 1))
        .max()
        .unwrap_or(0)
}

/// Fills every table of the database at its version `v`: the realistic rows
/// first, then rows made from each table's columns, parents before children.
fn fill(conn: &Connection, v: u32) {
    let tables = table_names(conn);
    let present: BTreeSet<&str> = tables.iter().map(|(n, _)| n.as_str()).collect();
    for (table, sql) in REALISTIC {
        if present.contains(table) {
            conn.execute_batch(sql)
                .unwrap_or_else(|e| panic!("version {v}: a realistic row of {table}: {e}"));
        }
    }
    let mut order: Vec<&(String, String)> = tables.iter().collect();
    // A table whose foreign keys name another goes after it, and after
    // that table's own parents (a delivery → its subscription → its source).
    order.sort_by_key(|(name, _)| fk_depth(conn, name, 0));
    for (salt, (table, create)) in order.into_iter().enumerate() {
        let cols = columns(conn, table);
        let fks = foreign_keys(conn, table);
        let pinned_key = cols
            .iter()
            .any(|c| c.pk && allowed(create, &c.name).is_some_and(|a| a.len() == 1));
        let present_rows: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        let rows = if pinned_key {
            1 - present_rows.min(1)
        } else {
            3
        };
        for i in 0..rows as usize {
            let values: Vec<String> = cols
                .iter()
                .map(|c| literal(conn, (table, create, salt as i64 + 1), c, &fks, i))
                .collect();
            let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
            let sql = format!(
                "INSERT INTO {table} ({}) VALUES ({})",
                names.join(", "),
                values.join(", ")
            );
            conn.execute_batch(&sql).unwrap_or_else(|e| {
                panic!(
                    "version {v}: cannot make a row of {table} ({e}): {sql}\n\
                     add the values this column takes to HINTS in tests/e2e/upgrades.rs"
                )
            });
        }
    }
}

/// Every table's rows, as they are now, and the rows a migration after `v`
/// removes on purpose left out.
fn snapshot(conn: &Connection, v: u32) -> Vec<Table> {
    table_names(conn)
        .into_iter()
        .map(|(name, _)| {
            let columns: Vec<String> = columns(conn, &name).into_iter().map(|c| c.name).collect();
            let removed = CHANGED
                .iter()
                .filter(|c| c.table == name && c.by > v)
                .filter_map(|c| c.rows)
                .map(|w| format!(" AND NOT ({w})"))
                .collect::<String>();
            let rows = select(conn, &name, &columns, &removed).unwrap();
            Table {
                name,
                columns,
                rows,
            }
        })
        .collect()
}

fn select(
    conn: &Connection,
    table: &str,
    columns: &[String],
    and: &str,
) -> rusqlite::Result<Vec<Vec<Value>>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {} FROM {table} WHERE 1{and}",
        columns.join(", ")
    ))?;
    let n = columns.len();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())?
        .collect()
}

/// A row as text, so rows compare and sort whatever their values.
fn shown(row: &[Value]) -> String {
    format!("{row:?}")
}

/// What went wrong for one table, migrating from one version.
struct Loss {
    table: String,
    from: u32,
    what: String,
}

/// The rows of every table at `v` compared with the same columns after the
/// upgrade, and each read back through the store.
fn check(conn: &Connection, store: &Store, before: &[Table], v: u32) -> Vec<Loss> {
    let mut losses = Vec::new();
    let mut lost = |table: &str, what: String| {
        losses.push(Loss {
            table: table.to_string(),
            from: v,
            what,
        })
    };
    for t in before {
        let changed: Vec<&Changed> = CHANGED
            .iter()
            .filter(|c| c.table == t.name && c.by > v)
            .collect();
        for c in &changed {
            if let Some(carried) = c.carried {
                for p in carried(store, t) {
                    lost(
                        &t.name,
                        format!("migration {} did not carry it over ({}): {p}", c.by, c.why),
                    );
                }
            }
        }
        if changed.iter().any(|c| c.rows.is_none()) {
            continue;
        }
        let after = match select(conn, &t.name, &t.columns, "") {
            Ok(rows) => rows,
            Err(e) => {
                lost(
                    &t.name,
                    format!("its rows cannot be read as they were: {e}"),
                );
                continue;
            }
        };
        let mut expected: Vec<String> = t.rows.iter().map(|r| shown(r)).collect();
        let mut found: Vec<String> = after.iter().map(|r| shown(r)).collect();
        expected.sort();
        found.sort();
        if expected != found {
            let missing: Vec<&String> = expected.iter().filter(|r| !found.contains(r)).collect();
            let extra: Vec<&String> = found.iter().filter(|r| !expected.contains(r)).collect();
            lost(
                &t.name,
                format!(
                    "{} row(s) before, {} after; gone or changed: {:?}; new or changed: {:?}",
                    expected.len(),
                    found.len(),
                    missing.iter().take(3).collect::<Vec<_>>(),
                    extra.iter().take(3).collect::<Vec<_>>()
                ),
            );
        }
        match READERS.iter().find(|(name, _)| *name == t.name) {
            Some((_, read)) => {
                for p in read(store, t) {
                    lost(&t.name, format!("not read back by the store: {p}"));
                }
            }
            None if NOT_READ.iter().any(|(name, _)| *name == t.name) => {}
            None => lost(&t.name, UNREAD.into()),
        }
    }
    losses
}

/// What is said of a table nothing reads back.
const UNREAD: &str = "no read of the store checks its rows: add one to READERS in \
                      tests/e2e/upgrades.rs, or the table to NOT_READ with why";

/// Each version's losses, grouped by table, naming the migration that loses
/// them: the one after the last version that loses them.
fn explain(losses: &[Loss]) -> String {
    let mut by_table: BTreeMap<&str, Vec<&Loss>> = BTreeMap::new();
    for l in losses {
        by_table.entry(&l.table).or_default().push(l);
    }
    let mut out = String::new();
    for (table, ls) in by_table {
        if ls.iter().all(|l| l.what == UNREAD) {
            out.push_str(&format!("\ntable {table}: {UNREAD}\n"));
            continue;
        }
        let from: BTreeSet<u32> = ls.iter().map(|l| l.from).collect();
        let last = *from.iter().max().unwrap();
        let culprit = migrations::MIGRATIONS
            .iter()
            .find(|m| m.version == last + 1)
            .map_or("?".to_string(), |m| format!("{} ({})", m.version, m.name));
        out.push_str(&format!(
            "\ntable {table}: lost migrating from version(s) {from:?} to {} — migration {culprit}. \
             If it drops or changes these rows on purpose, say so in CHANGED in tests/e2e/upgrades.rs.\n",
            migrations::latest()
        ));
        for l in ls.iter().take(4) {
            out.push_str(&format!("  from {}: {}\n", l.from, l.what));
        }
    }
    out
}

/// Every earlier schema version, filled with rows, opens as `ambient run`
/// opens it and keeps every table's rows, each read back by the store.
#[test]
fn every_earlier_schema_version_migrates_with_all_its_rows() {
    let mut losses = Vec::new();
    let mut tables_seen = BTreeSet::new();
    for v in 1..migrations::latest() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open_at_version(dir.path(), v).unwrap());
        let before = {
            let conn = Connection::open(dir.path().join("ambient.db")).unwrap();
            assert_eq!(migrations::current_version(&conn).unwrap(), v);
            fill(&conn, v);
            snapshot(&conn, v)
        };
        tables_seen.extend(before.iter().map(|t| t.name.clone()));
        let store = Store::open(dir.path())
            .unwrap_or_else(|e| panic!("a database at version {v} does not open: {e}"));
        assert_eq!(store.file().schema_version().unwrap(), migrations::latest());
        let conn = Connection::open(dir.path().join("ambient.db")).unwrap();
        losses.extend(check(&conn, &store, &before, v));
    }
    assert!(losses.is_empty(), "{}", explain(&losses));
    // The lists name only tables that exist, so they cannot hide a typo.
    for name in READERS
        .iter()
        .map(|r| r.0)
        .chain(NOT_READ.iter().map(|r| r.0))
    {
        assert!(
            tables_seen.contains(name),
            "READERS or NOT_READ names {name}, no table of any earlier version"
        );
    }
    assert!(
        tables_seen.len() > 30,
        "the earlier versions had {} tables",
        tables_seen.len()
    );
}

/// The realistic rows, found by what a person would ask for after an upgrade
/// from an early version (the first with facts): the message, the fact
/// recalled by a word, the journal line, the spend, the unsent post, the
/// pending thought.
#[test]
fn an_early_database_keeps_what_people_would_look_for() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open_at_version(dir.path(), 6).unwrap());
    fill(&Connection::open(dir.path().join("ambient.db")).unwrap(), 6);
    let store = Store::open(dir.path()).unwrap();
    let m = store
        .messages()
        .message(MessageId(5001))
        .unwrap()
        .expect("ada's message");
    assert_eq!(m.content, "the lighthouse on the point is painted red now");
    assert_eq!(m.attachments[0].name, "lighthouse.jpg");
    let own = store
        .messages()
        .message(MessageId(5002))
        .unwrap()
        .expect("the bot's reply");
    assert!(own.is_self);
    assert_eq!(own.reply_to, Some(MessageId(5001)));
    let recalled = store.memory().search_facts("lighthouse", 5).unwrap();
    assert_eq!(
        recalled.first().map(|(f, _)| f.content.as_str()),
        Some("The lighthouse on the point is painted red"),
        "the fact is recalled through the full-text index"
    );
    let lines = store
        .journal()
        .journal_query(&Filter {
            message: Some(MessageId(5001)),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(lines[0].summary, "answered ada about the lighthouse");
    assert_eq!(lines[0].data["tokens_in"], 1200);
    let spend = store
        .usage()
        .usage_tokens(&UsageFilter {
            guild: Some(GuildId(100)),
            ..UsageFilter::default()
        })
        .unwrap();
    assert!(spend >= 1280, "the reply's tokens are counted: {spend}");
    let unsent: Vec<String> = store
        .initiative()
        .outbox_unsent_in(GuildId(100))
        .unwrap()
        .into_iter()
        .map(|p| p.text)
        .collect();
    assert_eq!(unsent, ["anyone seen the fog today?"]);
    let thought = store
        .initiative()
        .pending_thought(GuildId(100))
        .unwrap()
        .unwrap();
    assert_eq!(thought.draft, "ask whether the fog horn still works");
    assert!(thought.media.is_some(), "its media directive is read");
}

// ---- a newer file ---------------------------------------------------------

/// How a newer ambient left its file.
#[derive(Clone, Copy, Debug)]
enum Left {
    /// Closed cleanly, in WAL mode.
    Wal,
    /// In rollback-journal mode: opening it the usual way would switch it to WAL.
    Rollback,
    /// Its migration still in the WAL, not yet in the file (it stopped before
    /// a checkpoint): closing the file the usual way would fold it in.
    InWal,
}

/// Makes the SQLite file at `path` one a newer ambient wrote, left as `left` says.
fn make_newer(path: &Path, found: u32, left: Left) {
    let conn = Connection::open(path).unwrap();
    match left {
        Left::Wal => {}
        Left::Rollback => {
            conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
        }
        Left::InWal => {
            conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
            conn.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )
            .unwrap();
        }
    }
    conn.pragma_update(None, "user_version", found).unwrap();
}

/// Each file of `dir` and the SHA-256 of its bytes.
fn hashes(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = std::fs::read(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                format!("{:x}", Sha256::digest(&bytes)),
            )
        })
        .collect()
}

/// `cmd` run to its end, stdin closed; killed and failed after a minute
/// (a command that did not refuse may serve until stopped).
fn bounded(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            // Harmless: it is failed next either way.
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{cmd:?} did not end: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Every command that opens the store, with what each needs to get there.
const OPENERS: &[&[&str]] = &[
    &["run"],
    &["console"],
    &["status"],
    &["journal"],
    &["usage"],
    &["memories"],
    &["memories", "search", "lighthouse"],
    &["memories", "stats"],
    &["memories", "export"],
    &["remember", "the lamp is lit at dusk"],
    &["discovery", "list"],
    &["garden", "log"],
    &["context", "--guild", "100"],
    &["reflexes", "stats"],
    &["reflexes", "disable", "greet"],
    &["dashboard", "--bind", "127.0.0.1:0"],
    &["guild", "export", "100"],
    &["guild", "import", "100.json"],
    &["guild", "remove", "100", "--yes"],
    &["shards", "plan", "--total", "2"],
];

/// A home whose settings let every command reach its store (and no further:
/// nothing answers at Discord's address).
fn home_for_openers() -> Home {
    let home = Home::new(json!({ "discord": { "apiBaseUrl": "http://127.0.0.1:9" } }));
    std::fs::write(home.path().join("100.json"), "{}").unwrap();
    home
}

fn opener(home: &Home, args: &[&str]) -> Command {
    let mut cmd = home.command(args);
    // Not a real token: `ambient run` refuses before it logs in.
    cmd.env("DISCORD_TOKEN", "upgrade-test-token-not-real");
    cmd
}

/// What a refusal of a newer file must say: both versions, that the file
/// was left alone, and what to do.
fn says_newer(err: &str, path: &Path, found: u32, known: u32, setting: &str) -> bool {
    err.contains(&format!(
        "{} has schema version {found}, but this ambient only knows up to version {known}",
        path.display()
    )) && err.contains("written by a newer ambient, and was left as it was")
        && err.contains("restore the backup taken before upgrading")
        && err.contains(setting)
}

/// A database from a newer ambient, however it was left, is refused by
/// every command that opens the store, with both versions and what to do,
/// and stays byte for byte as it was: no switch to WAL, no checkpoint of
/// the newer ambient's WAL into it, no -wal or -shm file left behind.
#[test]
fn a_newer_database_is_refused_by_every_command_and_left_untouched() {
    let found = migrations::latest() + 1;
    for left in [Left::Wal, Left::Rollback, Left::InWal] {
        let home = home_for_openers();
        let data = home.data_dir();
        drop(Store::open(&data).unwrap());
        make_newer(&data.join("ambient.db"), found, left);
        let before = hashes(&data);
        for args in OPENERS {
            let out = bounded(opener(&home, args));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success(),
                "{left:?}: ambient {args:?} did not refuse: {err}"
            );
            assert!(
                says_newer(
                    &err,
                    &data.join("ambient.db"),
                    found,
                    migrations::latest(),
                    "storage.dataDir"
                ),
                "{left:?}: ambient {args:?} said: {err}"
            );
            let mut after = hashes(&data);
            // The lock a bot takes on its data directory is the directory's, not the store's.
            after.remove("ambient.lock");
            let (mut was, mut now) = (before.clone(), after);
            if matches!(left, Left::InWal) {
                // SQLite's shared-memory index of the WAL is rebuilt by whoever reads it;
                // it holds nothing of the data.
                was.remove("ambient.db-shm");
                now.remove("ambient.db-shm");
            }
            assert_eq!(
                now, was,
                "{left:?}: ambient {args:?} changed the data directory"
            );
        }
        // And the newer ambient finds its file as it left it.
        let conn = Connection::open(data.join("ambient.db")).unwrap();
        assert_eq!(
            migrations::current_version(&conn).unwrap(),
            found,
            "{left:?}"
        );
    }
}

/// `ambient replay --keep` never opens a store it did not make: a data
/// directory holding one, a newer one included, is refused untouched.
#[test]
fn replay_keep_refuses_a_directory_holding_a_newer_database_untouched() {
    let home = home_for_openers();
    let data = home.data_dir();
    drop(Store::open(&data).unwrap());
    make_newer(
        &data.join("ambient.db"),
        migrations::latest() + 1,
        Left::Rollback,
    );
    let before = hashes(&data);
    std::fs::write(
        home.path().join("general.jsonl"),
        "{\"ts\":\"2025-06-01T10:00:00Z\",\"channel\":\"general\",\"author\":\"ada\",\"content\":\"hi\"}\n",
    )
    .unwrap();
    let keep = data.to_string_lossy().into_owned();
    let out = bounded(home.command(&["replay", "general.jsonl", "--keep", &keep]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("--keep") && err.contains("ambient.db"),
        "{err}"
    );
    assert_eq!(hashes(&data), before);
}

/// The people ledger has its own schema version: one from a newer ambient
/// is refused by the commands that open it, naming storage.sharedDir, and
/// left untouched (here in rollback mode, which the usual open would switch
/// to WAL).
#[test]
fn a_newer_people_ledger_is_refused_and_left_untouched() {
    let home = Home::new(json!({ "storage": { "sharedDir": "shared" } }));
    let shared = home.path().join("shared");
    drop(ambient::store::people::Ledger::open(&shared, "all").unwrap());
    let ledger = shared.join("people.db");
    let found: u32 = Connection::open(&ledger)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    make_newer(&ledger, found + 1, Left::Rollback);
    std::fs::write(home.path().join("100.json"), "{}").unwrap();
    let before = hashes(&shared);
    for args in [
        &["console"][..],
        &["dashboard", "--bind", "127.0.0.1:0"],
        &["guild", "import", "100.json"],
    ] {
        let out = bounded(home.command(args));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "ambient {args:?} did not refuse: {err}"
        );
        assert!(
            says_newer(
                &err,
                Path::new("shared/people.db"),
                found + 1,
                found,
                "storage.sharedDir"
            ),
            "ambient {args:?} said: {err}"
        );
        assert_eq!(
            hashes(&shared),
            before,
            "ambient {args:?} changed the ledger"
        );
    }
}

/// The README's "Upgrading" section quotes the refusal as `ambient status`
/// prints it (versions and path as there).
#[test]
fn the_readme_quotes_the_refusal_of_a_newer_database() {
    let home = home_for_openers();
    let data = home.data_dir();
    drop(Store::open(&data).unwrap());
    let found = migrations::latest() + 1;
    make_newer(&data.join("ambient.db"), found, Left::Wal);
    let out = bounded(home.command(&["status"]));
    let said = String::from_utf8_lossy(&out.stderr)
        .replace(&data.display().to_string(), "./data")
        .replace(&format!("version {found}"), "version 19")
        .replace(&format!("version {}", migrations::latest()), "version 18");
    let quoted = crate::support::readme::block("A database from a newer ambient", "text");
    assert!(
        said.contains(quoted.trim()),
        "the README quotes:\n{quoted}\nambient status said:\n{said}"
    );
}

// ---- the reads -------------------------------------------------------------

fn ms(ms: i64) -> DateTime<chrono::Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

/// One problem per row `ok` says was not read back as stored.
fn each_row(t: &Table, mut ok: impl FnMut(Row<'_>) -> Result<(), String>) -> Vec<String> {
    t.each()
        .filter_map(|r| ok(r).err().map(|e| format!("{e} (row {:?})", r.values)))
        .collect()
}

fn same<T: PartialEq + std::fmt::Debug>(what: &str, read: T, stored: T) -> Result<(), String> {
    if read == stored {
        Ok(())
    } else {
        Err(format!("{what}: read {read:?}, stored {stored:?}"))
    }
}

fn read_messages(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let m = store
            .messages()
            .message(MessageId::from_sql(r.int("id")))
            .map_err(|e| e.to_string())?
            .ok_or("no such message")?;
        same("content", m.content, r.text("content"))?;
        same("author", m.author_name, r.text("author_name"))?;
        same("channel", m.channel.to_sql(), r.int("channel_id"))?;
        let attachments: Vec<String> = m.attachments.iter().map(|a| a.url.clone()).collect();
        let stored: Vec<String> = r
            .json("attachments")
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["url"].as_str().unwrap().to_string())
            .collect();
        same("attachments", attachments, stored)
    })
}

fn read_guilds(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let name = store
            .messages()
            .guild_name(GuildId::from_sql(r.int("id")))
            .map_err(|e| e.to_string())?;
        same("name", name, Some(r.text("name")))
    })
}

fn read_channels(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let name = store
            .messages()
            .channel_name(ChannelId::from_sql(r.int("id")))
            .map_err(|e| e.to_string())?;
        same("name", name, Some(r.text("name")))
    })
}

fn read_journal(store: &Store, t: &Table) -> Vec<String> {
    let all = store.journal().journal_query(&Filter::default()).unwrap();
    each_row(t, |r| {
        let e = all
            .iter()
            .find(|e| e.id == r.int("id"))
            .ok_or("not listed")?;
        same("summary", e.summary.clone(), r.text("summary"))?;
        same("kind", e.kind.as_str().to_string(), r.text("kind"))?;
        same("data", e.data.clone(), r.json("data"))
    })
}

fn read_guild_settings(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let all = store
            .overrides()
            .guild_overrides(GuildId::from_sql(r.int("guild_id")))
            .map_err(|e| e.to_string())?;
        let value = all
            .into_iter()
            .find(|(p, _)| *p == r.text("path"))
            .ok_or("no override")?;
        same("value", value.1, r.json("value"))
    })
}

fn read_usage(store: &Store, t: &Table) -> Vec<String> {
    let all = store
        .usage()
        .usage_list(&UsageFilter::default(), None)
        .unwrap();
    each_row(t, |r| {
        let u = all
            .iter()
            .find(|u| u.id == r.int("id"))
            .ok_or("not listed")?;
        same("model", u.model.clone(), r.text("model"))?;
        same("tokens_in", u.tokens_in as i64, r.int("tokens_in"))
    })
}

fn read_erasures(store: &Store, t: &Table) -> Vec<String> {
    let all = store.people().erasures_after(0).unwrap();
    each_row(t, |r| {
        let e = all
            .iter()
            .find(|e| e.user == UserId::from_sql(r.int("user_id")) && e.at == ms(r.int("at")))
            .ok_or("not listed")?;
        same("messages", e.messages, r.int("messages") != 0)
    })
}

fn read_usage_daily(store: &Store, t: &Table) -> Vec<String> {
    let all = store
        .usage()
        .usage_daily_totals(&UsageFilter::default())
        .unwrap();
    each_row(t, |r| {
        let d = all
            .iter()
            .find(|d| d.day == r.text("day") && d.model == r.text("model"))
            .ok_or("not listed")?;
        same("tokens_in", d.tokens_in as i64, r.int("tokens_in"))
    })
}

fn read_pending_thoughts(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let p = store
            .initiative()
            .pending_thought(GuildId::from_sql(r.int("guild_id")))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("draft", p.draft, r.text("draft"))?;
        same("media", p.media.is_some(), *r.get("media") != Value::Null)
    })
}

fn read_initiative_state(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let at = store
            .initiative()
            .last_considered(GuildId::from_sql(r.int("guild_id")))
            .map_err(|e| e.to_string())?;
        same(
            "last considered",
            at,
            r.opt_int("last_considered_at").map(ms),
        )
    })
}

fn read_outbox(store: &Store, t: &Table) -> Vec<String> {
    let unsent = store.initiative().outbox_unsent().unwrap();
    each_row(t, |r| {
        // A settled post (sent, its message id known) is read only by its nonce
        // as it settles; the unsent are what a start looks for.
        if r.opt_int("message_id").is_some() {
            return Ok(());
        }
        let p = unsent
            .iter()
            .find(|p| p.nonce == r.text("nonce"))
            .ok_or("not among the unsent")?;
        same("text", p.text.clone(), r.text("text"))
    })
}

fn read_sources(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let s = store
            .discovery()
            .source(r.int("id"))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("target", s.target, r.text("target"))
    })
}

fn read_guild_sources(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let all = store
            .discovery()
            .guild_sources(GuildId::from_sql(r.int("guild_id")))
            .map_err(|e| e.to_string())?;
        let row = (r.text("kind"), r.text("target"), r.text("added_by"));
        all.contains(&row)
            .then_some(())
            .ok_or(format!("not among {all:?}"))
    })
}

fn read_feed_items(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let found = store
            .discovery()
            .feed_item_by_canonical(&r.text("canonical_url"))
            .map_err(|e| e.to_string())?;
        same("item", found, Some((r.int("id"), r.int("source_id"))))
    })
}

fn read_facts(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let f = store
            .memory()
            .fact(&r.text("id"))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("content", f.content, r.text("content"))?;
        same(
            "importance",
            f.importance.as_str().to_string(),
            r.text("importance"),
        )
    })
}

fn read_reinforcements(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let id = r.text("fact_id");
        let stored = t.each().filter(|o| o.text("fact_id") == id).count() as u64;
        same(
            "count",
            store
                .memory()
                .reinforcement_count(&id)
                .map_err(|e| e.to_string())?,
            stored,
        )
    })
}

fn read_extraction_state(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let at = store
            .memory()
            .extraction_checkpoint(ChannelId::from_sql(r.int("channel_id")))
            .map_err(|e| e.to_string())?;
        same(
            "checkpoint",
            at.map(|(m, _)| m.to_sql()),
            Some(r.int("last_message_id")),
        )
    })
}

fn read_tasks(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let task = store
            .impulses()
            .task(&r.text("id"))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("text", task.text, r.text("text"))?;
        same("due", task.due, ms(r.int("due_at")))
    })
}

fn read_ideas(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let idea = store
            .impulses()
            .idea(&r.text("id"))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("text", idea.text, r.text("text"))
    })
}

fn read_schedules(store: &Store, t: &Table) -> Vec<String> {
    let all = store.impulses().schedules(None).unwrap();
    each_row(t, |r| {
        let s = all
            .iter()
            .find(|s| s.id == r.text("id"))
            .ok_or("not listed")?;
        same("name", s.name.clone(), r.text("name"))?;
        same("cron", s.cron.clone(), r.text("cron"))
    })
}

fn read_reflex_stats(store: &Store, t: &Table) -> Vec<String> {
    let all = store.impulses().reflex_stats().unwrap();
    each_row(t, |r| {
        let s = all
            .iter()
            .find(|s| s.name == r.text("name"))
            .ok_or("not listed")?;
        same("fired", s.fired as i64, r.int("fired"))
    })
}

fn read_reflex_disabled(store: &Store, t: &Table) -> Vec<String> {
    let all = store.impulses().disabled_reflexes().unwrap();
    each_row(t, |r| {
        let guild = Some(r.int("guild_id"))
            .filter(|g| *g != 0)
            .map(GuildId::from_sql);
        let row = (guild, r.text("name"), r.text("reason"));
        all.contains(&row).then_some(()).ok_or("not listed".into())
    })
}

fn read_cycles(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let c = store
            .garden()
            .cycle(r.int("id"))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("summary", c.summary, r.text("summary"))?;
        same("status", c.status.as_str().to_string(), r.text("status"))
    })
}

fn read_garden_queue(store: &Store, t: &Table) -> Vec<String> {
    let open = store.garden().queue_open().unwrap();
    each_row(t, |r| {
        // Done work is read only as the cycle that did it.
        if r.opt_int("done_at").is_some() {
            return Ok(());
        }
        let q = open
            .iter()
            .find(|q| q.id == r.text("id"))
            .ok_or("not open")?;
        same("context", q.context.clone(), r.text("context"))
    })
}

fn read_garden_state(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let v: Option<serde_json::Value> = store
            .garden()
            .garden_get(&r.text("key"))
            .map_err(|e| e.to_string())?;
        same("value", v, Some(r.json("value")))
    })
}

fn read_fact_links(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let linked = store
            .garden()
            .fact_links(&r.text("a"))
            .map_err(|e| e.to_string())?;
        linked
            .contains(&r.text("b"))
            .then_some(())
            .ok_or(format!("links {linked:?}"))
    })
}

fn read_utterances(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let u = store
            .voice()
            .utterance(MessageId::from_sql(r.int("message_id")))
            .map_err(|e| e.to_string())?;
        same(
            "span",
            u.map(|(c, s, e)| (c.to_sql(), s, e)),
            Some((
                r.int("voice_channel_id"),
                ms(r.int("started_at")),
                ms(r.int("ended_at")),
            )),
        )
    })
}

fn read_boundaries(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let kind = Boundary::parse(&r.text("kind")).ok_or("unknown kind")?;
        let has = store
            .people()
            .has_boundary(UserId::from_sql(r.int("user_id")), kind)
            .map_err(|e| e.to_string())?;
        same("set", has, true)
    })
}

fn read_hushes(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let all = store
            .people()
            .hushes(GuildId::from_sql(r.int("guild_id")), ms(0))
            .map_err(|e| e.to_string())?;
        let h = all
            .iter()
            .find(|h| h.channel.map_or(0, |c| c.to_sql()) == r.int("channel_id"))
            .ok_or("none")?;
        same("by", h.by_name.clone(), r.text("by_name"))
    })
}

fn read_access_notices(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let at = store
            .people()
            .access_notice_at(UserId::from_sql(r.int("user_id")))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("told_at", at.timestamp_millis(), r.int("told_at"))
    })
}

fn read_dm_pairing_codes(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let c = store
            .people()
            .pairing_code_of(UserId::from_sql(r.int("user_id")))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("code", c.code, r.text("code"))?;
        same("user_name", c.user_name, r.text("user_name"))?;
        same(
            "expires_at",
            c.expires_at.timestamp_millis(),
            r.int("expires_at"),
        )
    })
}

fn read_dm_paired(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let paired = store
            .people()
            .is_paired(UserId::from_sql(r.int("user_id")))
            .map_err(|e| e.to_string())?;
        same("paired", paired, true)
    })
}

fn read_feed_subscriptions(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let sub = store
            .feeds()
            .feed_subscription(GuildId::from_sql(r.int("guild_id")), r.int("id"))
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("template", sub.made.template, r.text("template"))
    })
}

fn read_feed_deliveries(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let key = r.text("item_key");
        let known = store
            .feeds()
            .known_feed_items(r.int("subscription_id"), std::slice::from_ref(&key))
            .map_err(|e| e.to_string())?;
        same("item_key", known, vec![key])
    })
}

fn read_shard_plan(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let plan = store
            .guilds()
            .recorded_plan()
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        same("total", i64::from(plan.total), r.int("total"))
    })
}

fn read_people_cursor(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        same(
            "seq",
            store
                .people()
                .people_cursor(&r.text("ledger_id"))
                .map_err(|e| e.to_string())?,
            r.int("seq"),
        )
    })
}

fn read_departures(store: &Store, t: &Table) -> Vec<String> {
    let all = store.guilds().departures().unwrap_or_default();
    each_row(t, |r| {
        let found = all
            .iter()
            .find(|d| d.guild == GuildId::from_sql(r.int("guild_id")))
            .map(|d| d.at.timestamp_millis());
        same("departed_at", found, Some(r.int("departed_at")))
    })
}

/// Migration 12: each person who opted out of voice on any server has the
/// no_voice boundary, at the earliest time they opted out.
fn opt_outs_became_boundaries(store: &Store, t: &Table) -> Vec<String> {
    each_row(t, |r| {
        let user = r.int("user_id");
        let earliest = t
            .each()
            .filter(|o| o.int("user_id") == user)
            .map(|o| o.int("at"))
            .min();
        let set: Vec<_> = store
            .people()
            .boundaries(UserId::from_sql(user))
            .map_err(|e| e.to_string())?;
        let at = set
            .iter()
            .find(|(b, _)| *b == Boundary::NoVoice)
            .map(|(_, at)| at.timestamp_millis());
        same("no_voice since", at, earliest)
    })
}
