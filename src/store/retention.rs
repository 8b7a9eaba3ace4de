//! Retention: each kind of record is kept only as long as the operator set
//! (`storage.retention.*`) — or a server set shorter for itself — and then
//! removed by one sweep in small batches, the space it held given back.
//!
//! A batch is one short write transaction of at most [`Pace::batch`] rows.
//! Between batches the connection is let go and the sweep rests, so an
//! answer waiting on the store, and another process waiting for SQLite's
//! write lock (every transaction is `BEGIN IMMEDIATE`; see `writers_wait`),
//! gets it: the sweep never holds the writer for long, however much it has
//! to remove. Rows are found through the tables' (server, time) indexes, so
//! a batch reads what it removes and little else.
//!
//! What stays when a kind's rows go:
//! - messages: the facts learned from them (a message's routing line goes
//!   with it, whatever journalDays says). A fact names its sources by
//!   message id, a snowflake that still says when the words were said, so
//!   recall, `/ambient why` on the fact and forget-me's erasure bounded by
//!   time do not need the message rows. A voice span goes with its message.
//! - usage: each row is added to the daily totals per role, model, source
//!   and server (`usage_daily`) in the batch that removes it, so spend
//!   history and `ambient usage` say the same as before.
//! - discovery: a feed item never shared goes; one shared in any server
//!   stays (one row per post the bot made, no one's words), with its share,
//!   so the same link is never shared there again.
//! - garden: finished cycles and done queue items go; a running or
//!   interrupted cycle stays (it is continued at the next start).
//!
//! Space: a new database is created with `auto_vacuum = INCREMENTAL`, and
//! [`FileStore::give_back_space`] returns freed pages to the disk a few at a
//! time. An older database (created without it) reuses freed pages for new
//! rows instead — it stops growing but does not shrink; see the README.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::params_from_iter;

use super::{FileStore, Result, to_ms};
use crate::ids::GuildId;
use crate::words::thousands;

/// The kinds of record with a retention of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Messages,
    Journal,
    Usage,
    Reactions,
    Voice,
    Discovery,
    Garden,
}

impl Kind {
    pub(crate) const ALL: [Kind; 7] = [
        Kind::Messages,
        Kind::Journal,
        Kind::Usage,
        Kind::Reactions,
        Kind::Voice,
        Kind::Discovery,
        Kind::Garden,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// What the rows are called in the sweep's journal line.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Messages => "messages",
            Kind::Journal => "journal lines",
            Kind::Usage => "usage rows (kept as daily totals)",
            Kind::Reactions => "reactions",
            Kind::Voice => "voice spans",
            Kind::Discovery => "feed items",
            Kind::Garden => "garden records",
        }
    }
}

/// Days each kind is kept; 0: forever.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keep([u32; Kind::ALL.len()]);

impl Keep {
    pub(crate) fn new(days: impl Fn(Kind) -> u32) -> Self {
        Self(Kind::ALL.map(days))
    }

    pub(crate) fn days(&self, kind: Kind) -> u32 {
        self.0[kind.index()]
    }
}

/// The shorter of two retentions, where 0 is forever.
pub(crate) fn shorter(a: u32, b: u32) -> u32 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

/// What the sweep applies: the operator's retention, and the servers that
/// keep some kind for less (each server's value is only ever the shorter).
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub operator: Keep,
    pub guilds: HashMap<GuildId, Keep>,
}

impl Policy {
    /// Days `kind` is kept for rows of `guild` (`None`: of no server).
    pub(crate) fn days(&self, kind: Kind, guild: Option<GuildId>) -> u32 {
        let operator = self.operator.days(kind);
        match guild.and_then(|g| self.guilds.get(&g)) {
            Some(theirs) => shorter(operator, theirs.days(kind)),
            None => operator,
        }
    }

    /// Rows of `kind` and `guild` older than this (Unix ms) go; `None`: none go.
    fn cutoff(&self, kind: Kind, guild: Option<GuildId>, now: DateTime<Utc>) -> Option<i64> {
        match self.days(kind, guild) {
            0 => None,
            days => Some(to_ms(now) - i64::from(days) * 86_400_000),
        }
    }
}

/// How the sweep shares the writer: at most `batch` rows per transaction,
/// fewer when a transaction held the writer longer than `hold`, and the
/// rest between two transactions.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    pub batch: usize,
    pub hold: Duration,
    pub rest: Duration,
}

impl Default for Pace {
    /// 500 rows: on a store of a few servers a batch holds the writer a few
    /// milliseconds; on a large one, whose pages are mostly not in memory,
    /// tens (`benches/retention.rs`), and the batch shrinks to hold it
    /// about 25 ms. 10 ms apart, as the group commit rests
    /// (`group_commit::REST`).
    fn default() -> Self {
        Self {
            batch: 500,
            hold: Duration::from_millis(25),
            rest: Duration::from_millis(10),
        }
    }
}

/// The size of the next batch: halved after a batch that held the writer
/// longer than `Pace::hold`, doubled back (up to `Pace::batch`) after one
/// that held it less than a third of that. The sweep's, and a departed
/// server's removal's (`guild_io`): both share the writer the same way.
pub(super) struct Batch {
    size: usize,
    pace: Pace,
}

impl Batch {
    /// The fewest rows a batch takes, however slow: a sweep always moves.
    const MIN: usize = 10;

    pub(super) fn new(pace: Pace) -> Self {
        Self {
            size: pace.batch.max(1),
            pace,
        }
    }

    /// Rows the next batch takes at most.
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// How long to let go of the writer between two batches.
    pub(super) fn rest(&self) -> Duration {
        self.pace.rest
    }

    pub(super) fn held(&mut self, held: Duration) {
        if held > self.pace.hold {
            self.size = (self.size / 2).max(Self::MIN.min(self.pace.batch));
        } else if held * 3 < self.pace.hold {
            self.size = (self.size * 2).min(self.pace.batch.max(1));
        }
    }
}

/// How long each of a pass's transactions held the writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holds(Vec<Duration>);

impl Holds {
    pub(crate) fn push(&mut self, held: Duration) {
        self.0.push(held);
    }

    pub fn extend(&mut self, other: Holds) {
        self.0.extend(other.0);
    }

    pub fn count(&self) -> usize {
        self.0.len()
    }

    pub fn longest(&self) -> Duration {
        self.0.iter().copied().max().unwrap_or_default()
    }

    /// The hold below which a share `q` (0–1) of them fall.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        let at = ((sorted.len() as f64 - 1.0) * q.clamp(0.0, 1.0)).round() as usize;
        sorted.get(at).copied().unwrap_or_default()
    }
}

/// How many rows of each kind one sweep removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    removed: [u64; Kind::ALL.len()],
    /// Routing lines removed with the messages they were about.
    routing_lines: u64,
    /// Each batch's hold of the writer.
    pub holds: Holds,
    /// The sweep was asked to stop before it was done.
    pub stopped: bool,
}

impl Swept {
    pub fn removed(&self, kind: Kind) -> u64 {
        self.removed[kind.index()]
    }

    pub(crate) fn total(&self) -> u64 {
        self.removed.iter().sum::<u64>() + self.routing_lines
    }

    /// "1,204 messages older than 30 days, 310 journal lines older than 90
    /// days": the kinds that lost rows, with the operator's retention (and
    /// a note when some server keeps that kind for less).
    pub(crate) fn describe(&self, policy: &Policy) -> String {
        let mut parts = Vec::new();
        for k in Kind::ALL {
            if self.removed(k) > 0 {
                parts.push(self.part(k, policy));
            }
            if k == Kind::Messages && self.routing_lines > 0 {
                parts.push(format!(
                    "{} routing lines with their messages",
                    thousands(self.routing_lines)
                ));
            }
        }
        parts.join(", ")
    }

    fn part(&self, k: Kind, policy: &Policy) -> String {
        let mut part = format!("{} {}", thousands(self.removed(k)), k.noun());
        match policy.operator.days(k) {
            0 => part.push_str(" (kept for less by some servers)"),
            days => {
                part.push_str(&format!(" older than {days} days"));
                if policy
                    .guilds
                    .keys()
                    .any(|g| policy.days(k, Some(*g)) != days)
                {
                    part.push_str(" (fewer in servers that asked)");
                }
            }
        }
        part
    }
}

/// Which rows of a table one pass looks at.
#[derive(Clone, Copy)]
enum Scope {
    /// The whole table (it has no server column).
    All,
    /// Rows of no server (direct messages, the bot's own work).
    NoGuild,
    Guild(i64),
}

/// One table a kind's rows live in, and how a batch finds and removes them.
struct Target {
    kind: Kind,
    /// FROM clause; `id`, `guild` and `time` name columns in it.
    from: &'static str,
    id: &'static str,
    /// The server column, if rows belong to servers.
    guild: Option<&'static str>,
    time: &'static str,
    /// Further conditions a removable row meets (`AND …`).
    also: &'static str,
    /// Run for each chosen id, in order; each counts its changes.
    each: &'static [(&'static str, Tally)],
}

/// What one statement of a batch removes, for the sweep's count.
#[derive(Clone, Copy)]
enum Tally {
    Rows(Kind),
    /// Routing lines gone with their message (journal lines, but not
    /// because of journalDays).
    RoutingLines,
    /// Removes nothing (the usage roll-up).
    Nothing,
}

/// Adds one usage row to its day's totals.
const ROLL_UP: &str = "INSERT INTO usage_daily
        (day, role, source, guild_id, provider, model, pay_per_token,
         calls, ok, refused, tokens_in, tokens_out, latency_ms)
    SELECT date(ts / 1000, 'unixepoch'), role, source, coalesce(guild_id, 0), provider, model, pay_per_token,
           1, outcome = 'ok', outcome = 'refused', tokens_in, tokens_out, latency_ms
    FROM usage WHERE id = ?1
    ON CONFLICT (day, role, source, guild_id, provider, model, pay_per_token) DO UPDATE SET
        calls = calls + excluded.calls, ok = ok + excluded.ok, refused = refused + excluded.refused,
        tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
        latency_ms = latency_ms + excluded.latency_ms";

const TARGETS: &[Target] = &[
    Target {
        kind: Kind::Messages,
        from: "messages",
        id: "id",
        guild: Some("guild_id"),
        time: "created_at",
        also: "",
        each: &[
            // When someone spoke aloud goes with what they said.
            (
                "DELETE FROM voice_utterances WHERE message_id = ?1",
                Tally::Rows(Kind::Voice),
            ),
            // So does how it was routed: nearly every message has a routing
            // line, the bulk of the journal, and once the message is gone
            // there is nothing left for the line to explain (`/ambient why`
            // asks about a message). Every other line keeps journalDays.
            (
                "DELETE FROM journal WHERE message_id = ?1 AND kind = 'route'",
                Tally::RoutingLines,
            ),
            (
                "DELETE FROM messages WHERE id = ?1",
                Tally::Rows(Kind::Messages),
            ),
        ],
    },
    Target {
        kind: Kind::Journal,
        from: "journal",
        id: "id",
        guild: Some("guild_id"),
        time: "ts",
        also: "",
        each: &[(
            "DELETE FROM journal WHERE id = ?1",
            Tally::Rows(Kind::Journal),
        )],
    },
    Target {
        kind: Kind::Usage,
        from: "usage",
        id: "id",
        guild: Some("guild_id"),
        time: "ts",
        also: "",
        each: &[
            (ROLL_UP, Tally::Nothing),
            ("DELETE FROM usage WHERE id = ?1", Tally::Rows(Kind::Usage)),
        ],
    },
    Target {
        kind: Kind::Reactions,
        from: "reactions",
        id: "rowid",
        guild: Some("guild_id"),
        time: "at",
        also: "",
        each: &[(
            "DELETE FROM reactions WHERE rowid = ?1",
            Tally::Rows(Kind::Reactions),
        )],
    },
    Target {
        kind: Kind::Voice,
        // A span's server is its message's; one whose message is gone
        // belongs to none (and goes by the operator's retention).
        from: "voice_utterances v LEFT JOIN messages m ON m.id = v.message_id",
        id: "v.message_id",
        guild: Some("m.guild_id"),
        time: "v.ended_at",
        also: "",
        each: &[(
            "DELETE FROM voice_utterances WHERE message_id = ?1",
            Tally::Rows(Kind::Voice),
        )],
    },
    Target {
        kind: Kind::Discovery,
        from: "feed_items f",
        id: "f.id",
        guild: None,
        time: "f.fetched_at",
        // A shared item stays: it is what keeps the link from being shared again.
        also: "AND NOT EXISTS (SELECT 1 FROM feed_shares s WHERE s.item_id = f.id)",
        each: &[(
            "DELETE FROM feed_items WHERE id = ?1",
            Tally::Rows(Kind::Discovery),
        )],
    },
    Target {
        kind: Kind::Garden,
        from: "garden_cycles",
        id: "id",
        guild: Some("guild_id"),
        time: "coalesce(ended_at, started_at)",
        also: "AND status IN ('completed', 'incomplete')",
        each: &[(
            "DELETE FROM garden_cycles WHERE id = ?1",
            Tally::Rows(Kind::Garden),
        )],
    },
    Target {
        kind: Kind::Garden,
        from: "garden_queue",
        id: "rowid",
        guild: Some("guild_id"),
        time: "done_at",
        also: "",
        each: &[(
            "DELETE FROM garden_queue WHERE rowid = ?1",
            Tally::Rows(Kind::Garden),
        )],
    },
];

impl FileStore {
    /// Removes every row older than its kind's retention under `policy`,
    /// in batches paced by `pace`; `go_on` is asked between batches, and a
    /// `false` ends the sweep where it is (what was removed stays removed).
    pub fn sweep(
        &self,
        policy: &Policy,
        now: DateTime<Utc>,
        pace: Pace,
        go_on: &dyn Fn() -> bool,
    ) -> Result<Swept> {
        let mut swept = Swept::default();
        let mut batch = Batch::new(pace);
        for t in TARGETS {
            let done = match t.guild {
                None => self.sweep_scope(
                    t,
                    Scope::All,
                    policy.cutoff(t.kind, None, now),
                    &mut batch,
                    go_on,
                    &mut swept,
                )?,
                Some(_) => self.sweep_by_guild(t, policy, now, &mut batch, go_on, &mut swept)?,
            };
            if !done {
                swept.stopped = true;
                break;
            }
        }
        Ok(swept)
    }

    /// One table, server by server: rows of no server by the operator's
    /// retention, each server's by its own. Returns false when stopped.
    fn sweep_by_guild(
        &self,
        t: &Target,
        policy: &Policy,
        now: DateTime<Utc>,
        batch: &mut Batch,
        go_on: &dyn Fn() -> bool,
        swept: &mut Swept,
    ) -> Result<bool> {
        if !self.sweep_scope(
            t,
            Scope::NoGuild,
            policy.cutoff(t.kind, None, now),
            batch,
            go_on,
            swept,
        )? {
            return Ok(false);
        }
        let mut after = i64::MIN;
        while let Some(guild) = self.next_guild(t, after)? {
            let cutoff = policy.cutoff(t.kind, Some(GuildId::from_sql(guild)), now);
            if !self.sweep_scope(t, Scope::Guild(guild), cutoff, batch, go_on, swept)? {
                return Ok(false);
            }
            after = guild;
        }
        Ok(true)
    }

    /// The next server with rows in `t` after `after`: a seek on the
    /// table's (server, time) index, so walking the servers costs one look
    /// each, not a read of the table.
    fn next_guild(&self, t: &Target, after: i64) -> Result<Option<i64>> {
        let Some(column) = t.guild else {
            return Ok(None);
        };
        let sql = format!("SELECT min({column}) FROM {} WHERE {column} > ?1", t.from);
        Ok(self
            .0
            .lock()
            .prepare_cached(&sql)?
            .query_row([after], |r| r.get(0))?)
    }

    /// Batches until one comes back short. Returns false when stopped.
    fn sweep_scope(
        &self,
        t: &Target,
        scope: Scope,
        cutoff: Option<i64>,
        batch: &mut Batch,
        go_on: &dyn Fn() -> bool,
        swept: &mut Swept,
    ) -> Result<bool> {
        let Some(cutoff) = cutoff else {
            return Ok(true);
        };
        loop {
            let limit = batch.size;
            let (chosen, held) = self.sweep_batch(t, scope, cutoff, limit, swept)?;
            batch.held(held);
            swept.holds.push(held);
            if chosen < limit {
                return Ok(true);
            }
            // Let go of the writer: what waits for it runs now.
            std::thread::sleep(batch.pace.rest);
            if !go_on() {
                return Ok(false);
            }
        }
    }

    /// One transaction: up to `limit` rows of `t` in `scope` older than
    /// `cutoff` removed. Returns how many were chosen, and how long the
    /// transaction held the writer.
    fn sweep_batch(
        &self,
        t: &Target,
        scope: Scope,
        cutoff: i64,
        limit: usize,
        swept: &mut Swept,
    ) -> Result<(usize, Duration)> {
        let (filter, mut args) = match (scope, t.guild) {
            (Scope::Guild(g), Some(col)) => (format!("{col} = ?"), vec![g]),
            (Scope::NoGuild, Some(col)) => (format!("{col} IS NULL"), vec![]),
            _ => ("1".to_string(), vec![]),
        };
        args.extend([cutoff, limit as i64]);
        let select = format!(
            "SELECT {} FROM {} WHERE {filter} AND {} < ? {} LIMIT ?",
            t.id, t.from, t.time, t.also
        );
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let began = std::time::Instant::now();
        let ids: Vec<i64> = tx
            .prepare_cached(&select)?
            .query_map(params_from_iter(args), |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for id in &ids {
            for (sql, kind) in t.each {
                let n = tx.prepare_cached(sql)?.execute([id])? as u64;
                match kind {
                    Tally::Rows(k) => swept.removed[k.index()] += n,
                    Tally::RoutingLines => swept.routing_lines += n,
                    Tally::Nothing => {}
                }
            }
        }
        tx.commit()?;
        Ok((ids.len(), began.elapsed()))
    }

    /// Returns freed pages to the disk, `step` pages per transaction with
    /// `rest` between (a database created without incremental vacuum keeps
    /// them for reuse: nothing to do). Returns how many pages went back;
    /// each step's hold of the writer goes into `holds`.
    pub(crate) fn give_back_space(
        &self,
        step: u32,
        rest: Duration,
        go_on: &dyn Fn() -> bool,
        holds: &mut Holds,
    ) -> Result<u64> {
        let mut returned = 0u64;
        loop {
            let free = {
                let conn = self.0.lock();
                if !incremental(&conn)? {
                    return Ok(returned);
                }
                let before: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
                if before == 0 {
                    return Ok(returned);
                }
                let began = std::time::Instant::now();
                conn.execute_batch(&format!("PRAGMA incremental_vacuum({step})"))?;
                holds.push(began.elapsed());
                let after: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
                returned += (before - after).max(0) as u64;
                after
            };
            if free == 0 || !go_on() {
                return Ok(returned);
            }
            std::thread::sleep(rest);
        }
    }

    /// Copies the write-ahead log into the database, then empties the log
    /// file if no reader still needs it — without waiting for one: a
    /// reader of another process (`ambient status`) is not waited on while
    /// this process's writers wait behind the store. Returns whether the
    /// log was emptied (false: someone was reading; next time).
    pub(crate) fn checkpoint(&self) -> Result<bool> {
        let mut conn = self.0.lock();
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        conn.busy_handler(None::<fn(i32) -> bool>)?;
        let busy = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        });
        conn.busy_handler(Some(super::wait_for_the_lock))?;
        Ok(busy? == 0)
    }

    /// The database's size and how its freed space is handled.
    pub fn space(&self) -> Result<Space> {
        let conn = self.0.lock();
        let get = |pragma: &str| -> Result<i64> {
            Ok(conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))?)
        };
        Ok(Space {
            page_size: get("page_size")? as u64,
            bytes: (get("page_count")? * get("page_size")?) as u64,
            free_bytes: (get("freelist_count")? * get("page_size")?) as u64,
            gives_back: get("auto_vacuum")? == 2,
        })
    }
}

/// Whether the database returns freed pages on `incremental_vacuum`.
fn incremental(conn: &rusqlite::Connection) -> Result<bool> {
    Ok(conn.query_row("PRAGMA auto_vacuum", [], |r| r.get::<_, i64>(0))? == 2)
}

/// The database file's size and how freed space is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Space {
    pub page_size: u64,
    pub bytes: u64,
    /// Pages freed and not yet given back (or kept for reuse).
    pub free_bytes: u64,
    /// Created with incremental vacuum: freed pages go back to the disk.
    /// Otherwise they are reused by new rows (the file stops growing but
    /// does not shrink).
    pub gives_back: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use chrono::TimeZone;

    const A: i64 = 1;
    const B: i64 = 2;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()
    }

    fn days_ago(d: i64) -> i64 {
        to_ms(now() - chrono::Duration::days(d))
    }

    /// One row of every kind in `guild`, `age` days old; `n` makes ids unique.
    fn rows_of_every_kind(store: &Store, guild: i64, age: i64, n: i64) {
        let at = days_ago(age);
        let id = (n << 22) + guild;
        store
            .lock()
            .execute_batch(&format!(
                "INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, source, created_at)
                     VALUES ({id}, {guild}, 10, 20, 'erin', 'words', 'vc', {at});
                 INSERT INTO voice_utterances (message_id, voice_channel_id, started_at, ended_at)
                     VALUES ({id}, 11, {at}, {at});
                 INSERT INTO journal (ts, kind, guild_id, message_id, summary) VALUES ({at}, 'route', {guild}, {id}, 'let pass');
                 INSERT INTO journal (ts, kind, guild_id, message_id, summary) VALUES ({at}, 'reply', {guild}, {id}, 'answered');
                 INSERT INTO usage (ts, role, source, guild_id, provider, model, tokens_in, tokens_out, outcome)
                     VALUES ({at}, 'reply', 'user', {guild}, 'p', 'm', 100, 10, 'ok');
                 INSERT INTO reactions (message_id, user_id, emoji, guild_id, channel_id, at)
                     VALUES ({id}, 21, '👍', {guild}, 10, {at});
                 INSERT OR IGNORE INTO discovery_sources (id, kind, target) VALUES (1, 'rss', 'https://example.com/feed');
                 INSERT INTO feed_items (source_id, url, canonical_url, title, title_key, fetched_at)
                     VALUES (1, 'https://example.com/{id}', 'https://example.com/{id}', 't', 'k{id}', {at});
                 INSERT INTO garden_cycles (guild_id, trigger, started_at, ended_at, status)
                     VALUES ({guild}, 'timer', {at}, {at}, 'completed');
                 INSERT INTO garden_queue (id, guild_id, scheduled_for, context, priority, created_by, created_at, done_at)
                     VALUES ('q{id}', {guild}, {at}, 'c', 'normal', 'bot', {at}, {at});"
            ))
            .unwrap();
    }

    fn routing_lines(store: &Store) -> i64 {
        store
            .lock()
            .query_row(
                "SELECT count(*) FROM journal WHERE kind = 'route'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    }

    /// How many rows each kind's tables hold (of the journal, the lines
    /// that are not routing lines: those go with their messages).
    fn counts(store: &Store) -> Vec<(Kind, i64)> {
        let conn = store.lock();
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        vec![
            (Kind::Messages, count("SELECT count(*) FROM messages")),
            (
                Kind::Journal,
                count("SELECT count(*) FROM journal WHERE kind != 'route'"),
            ),
            (Kind::Usage, count("SELECT count(*) FROM usage")),
            (Kind::Reactions, count("SELECT count(*) FROM reactions")),
            (Kind::Voice, count("SELECT count(*) FROM voice_utterances")),
            (Kind::Discovery, count("SELECT count(*) FROM feed_items")),
            (
                Kind::Garden,
                count(
                    "SELECT (SELECT count(*) FROM garden_cycles) + (SELECT count(*) FROM garden_queue)",
                ),
            ),
        ]
    }

    fn defaults() -> Policy {
        Policy {
            operator: Keep::new(|k| match k {
                Kind::Journal | Kind::Usage => 90,
                _ => 30,
            }),
            ..Default::default()
        }
    }

    fn sweep(store: &Store, policy: &Policy) -> Swept {
        store
            .file()
            .sweep(policy, now(), Pace::default(), &|| true)
            .unwrap()
    }

    #[test]
    fn each_kind_loses_its_rows_older_than_its_retention_and_keeps_the_newer() {
        let store = Store::open_in_memory().unwrap();
        // 29 days old: kept by every kind. 31: past the 30-day kinds only.
        // 91: past every kind.
        for (n, age) in [(1, 29), (2, 31), (3, 91)] {
            rows_of_every_kind(&store, A, age, n);
        }
        let swept = sweep(&store, &defaults());
        for (kind, left) in counts(&store) {
            // A garden's day leaves a cycle and a queue item.
            let rows = if kind == Kind::Garden { 2 } else { 1 };
            let kept = match kind {
                Kind::Journal | Kind::Usage => 2,
                _ => 1,
            };
            assert_eq!(left, kept * rows, "{kind:?}");
            assert_eq!(swept.removed(kind), ((3 - kept) * rows) as u64, "{kind:?}");
        }
        assert_eq!(
            routing_lines(&store),
            1,
            "a routing line goes with its message"
        );
        assert_eq!(
            swept.describe(&defaults()),
            "2 messages older than 30 days, 2 routing lines with their messages, 1 journal lines older than 90 days, \
             1 usage rows (kept as daily totals) older than 90 days, 2 reactions older than 30 days, \
             2 voice spans older than 30 days, 2 feed items older than 30 days, 4 garden records older than 30 days"
        );
        assert_eq!(
            sweep(&store, &defaults()).total(),
            0,
            "a second sweep finds nothing"
        );
    }

    #[test]
    fn zero_keeps_a_kind_forever() {
        let store = Store::open_in_memory().unwrap();
        rows_of_every_kind(&store, A, 3_000, 1);
        let forever = Policy::default();
        assert_eq!(sweep(&store, &forever).total(), 0);
        assert!(
            counts(&store).iter().all(|(_, n)| *n >= 1),
            "{:?}",
            counts(&store)
        );
    }

    #[test]
    fn a_server_that_keeps_less_loses_its_rows_sooner_and_no_other_server_does() {
        let store = Store::open_in_memory().unwrap();
        rows_of_every_kind(&store, A, 10, 1);
        rows_of_every_kind(&store, B, 10, 2);
        let mut policy = defaults();
        policy.guilds.insert(
            GuildId::from_sql(A),
            Keep::new(|k| if k == Kind::Messages { 7 } else { 0 }),
        );
        let swept = sweep(&store, &policy);
        assert_eq!(swept.removed(Kind::Messages), 1);
        assert_eq!(swept.removed(Kind::Voice), 1, "its voice span went with it");
        assert_eq!(routing_lines(&store), 1, "its routing line too");
        assert_eq!(
            swept.total(),
            3,
            "nothing else: 0 in a server's values never lengthens"
        );
        let left: Vec<i64> = store
            .lock()
            .prepare("SELECT guild_id FROM messages")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(left, vec![B]);
        assert!(
            swept
                .describe(&policy)
                .starts_with("1 messages older than 30 days (fewer in servers that asked)"),
            "{}",
            swept.describe(&policy)
        );
    }

    #[test]
    fn expired_usage_becomes_daily_totals_that_say_the_same_spend() {
        let store = Store::open_in_memory().unwrap();
        let since = now() - chrono::Duration::days(200);
        {
            let conn = store.lock();
            for (age, tokens, outcome) in [
                (100, 1_000, "ok"),
                (100, 0, "refused"),
                (100, 500, "timeout"),
                (5, 70, "ok"),
            ] {
                conn.execute(
                    "INSERT INTO usage (ts, role, source, guild_id, provider, model, tokens_in, tokens_out, outcome)
                     VALUES (?1, 'reply', 'user', ?2, 'p', 'm', ?3, 1, ?4)",
                    rusqlite::params![days_ago(age), A, tokens, outcome],
                )
                .unwrap();
            }
        }
        let before = store.usage().usage_by_day(since).unwrap();
        let swept = sweep(&store, &defaults());
        assert_eq!(swept.removed(Kind::Usage), 3);
        assert_eq!(
            store.usage().usage_by_day(since).unwrap(),
            before,
            "the spend chart says the same"
        );
        let totals = store
            .usage()
            .usage_daily_totals(&super::super::usage::UsageFilter::default())
            .unwrap();
        assert_eq!(totals.len(), 1);
        let t = &totals[0];
        assert_eq!(
            (t.calls, t.ok, t.refused, t.tokens_in, t.tokens_out, t.guild),
            (3, 1, 1, 1_500, 3, Some(GuildId::from_sql(A)))
        );
    }

    #[test]
    fn a_shared_feed_item_stays_when_the_unshared_go() {
        let store = Store::open_in_memory().unwrap();
        rows_of_every_kind(&store, A, 60, 1);
        rows_of_every_kind(&store, A, 60, 2);
        store
            .lock()
            .execute_batch(&format!(
                "INSERT INTO feed_shares (item_id, guild_id, channel_id, message_id, shared_at)
                 VALUES ((SELECT min(id) FROM feed_items), {A}, 10, 99, {})",
                days_ago(60)
            ))
            .unwrap();
        let swept = sweep(&store, &defaults());
        assert_eq!(swept.removed(Kind::Discovery), 1);
        let left: i64 = store
            .lock()
            .query_row(
                "SELECT count(*) FROM feed_items f JOIN feed_shares s ON s.item_id = f.id",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 1, "the shared one stays, with its share");
    }

    #[test]
    fn a_sweep_works_in_batches_and_stops_between_them() {
        let store = Store::open_in_memory().unwrap();
        {
            let conn = store.lock();
            for n in 0..25i64 {
                conn.execute(
                    "INSERT INTO journal (ts, kind, guild_id, summary) VALUES (?1, 'route', ?2, 'x')",
                    rusqlite::params![days_ago(200), A + n % 2],
                )
                .unwrap();
            }
        }
        let pace = Pace {
            batch: 10,
            rest: Duration::ZERO,
            ..Pace::default()
        };
        let asked = std::cell::Cell::new(0);
        let swept = store
            .file()
            .sweep(&defaults(), now(), pace, &|| {
                asked.set(asked.get() + 1);
                false
            })
            .unwrap();
        assert!(swept.stopped);
        assert_eq!(
            swept.removed(Kind::Journal),
            10,
            "one batch, then asked, then stopped"
        );
        assert_eq!(asked.get(), 1);
        let swept = store
            .file()
            .sweep(&defaults(), now(), pace, &|| true)
            .unwrap();
        assert_eq!(swept.removed(Kind::Journal), 15);
    }

    #[test]
    fn a_batch_that_held_the_writer_too_long_makes_the_next_smaller() {
        let mut b = Batch::new(Pace::default());
        let ms = Duration::from_millis;
        b.held(ms(60));
        assert_eq!(b.size, 250);
        b.held(ms(60));
        b.held(ms(60));
        assert_eq!(b.size, 62);
        b.held(ms(20));
        assert_eq!(b.size, 62, "about right: kept");
        for _ in 0..10 {
            b.held(ms(1_000));
        }
        assert_eq!(b.size, Batch::MIN, "never below the fewest");
        for _ in 0..10 {
            b.held(ms(2));
        }
        assert_eq!(b.size, 500, "and back up to the batch, no further");
    }

    #[test]
    fn holds_say_their_longest_and_their_quantiles() {
        let mut h = Holds::default();
        assert_eq!(h.longest(), Duration::ZERO);
        for ms in (1..=100).rev() {
            h.push(Duration::from_millis(ms));
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.longest(), Duration::from_millis(100));
        assert_eq!(h.quantile(0.0), Duration::from_millis(1));
        assert_eq!(h.quantile(0.99), Duration::from_millis(99));
    }

    #[test]
    fn a_slow_sweep_still_removes_everything_in_smaller_batches() {
        let store = Store::open_in_memory().unwrap();
        for n in 0..40 {
            rows_of_every_kind(&store, A, 100, n);
        }
        // Every batch "too long": the sweep shrinks to the fewest and goes on.
        let pace = Pace {
            hold: Duration::ZERO,
            rest: Duration::ZERO,
            ..Pace::default()
        };
        let swept = store
            .file()
            .sweep(&defaults(), now(), pace, &|| true)
            .unwrap();
        assert_eq!(swept.removed(Kind::Messages), 40);
        assert!(swept.holds.count() > 8, "{} batches", swept.holds.count());
        assert!(
            counts(&store).iter().all(|(_, n)| *n == 0),
            "{:?}",
            counts(&store)
        );
    }

    #[test]
    fn each_kind_finds_its_old_rows_by_an_index() {
        for (table, sql) in [
            (
                "messages",
                "SELECT id FROM messages WHERE guild_id = 1 AND created_at < 5 LIMIT 500",
            ),
            (
                "journal",
                "SELECT id FROM journal WHERE guild_id = 1 AND ts < 5 LIMIT 500",
            ),
            (
                "usage",
                "SELECT id FROM usage WHERE guild_id = 1 AND ts < 5 LIMIT 500",
            ),
            (
                "reactions",
                "SELECT rowid FROM reactions WHERE guild_id = 1 AND at < 5 LIMIT 500",
            ),
            (
                "messages",
                "SELECT min(guild_id) FROM messages WHERE guild_id > 1",
            ),
            (
                "journal",
                "DELETE FROM journal WHERE message_id = 1 AND kind = 'route'",
            ),
        ] {
            let plan = super::super::query_plan(sql, []).join(" | ");
            assert!(
                plan.contains("USING") && plan.contains("INDEX"),
                "{table}: {plan}"
            );
        }
    }
}
