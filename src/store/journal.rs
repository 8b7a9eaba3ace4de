//! Persistence for the journal (see `crate::journal` for what goes in it),
//! and the bound on every stored reason: a journal entry's summary and reason
//! and a usage row's detail are cut to [`MAX_REASON_BYTES`] here, where they
//! are written, so no caller can store a service's 30 MB refusal whole.

use std::borrow::Cow;

use rusqlite::{Connection, Row, params_from_iter};

use super::conditions::Conditions;
use super::messages::Commit;
use super::stream::StreamLine;
use super::{JournalStore, Result, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::vocab::journal::{Entry, Filter, Kind};
use crate::words::thousands;

/// The most of a reason (a journal entry's summary or reason, a usage row's
/// detail) that is stored, in bytes. A reason is read by a person; an error
/// text quotes whatever a service answered, and that has no bound of its own.
pub(crate) const MAX_REASON_BYTES: usize = 2_048;

/// Room the cut marker takes at most (the longest numbers included): a cut
/// reason, marker and all, still fits, so cutting it again changes nothing.
const MARKER_BYTES: usize = 80;

/// `text` cut at a character boundary, with a marker saying how long it
/// was, to at most [`MAX_REASON_BYTES`] bytes in all; unchanged when it fits.
pub(crate) fn bounded(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_REASON_BYTES {
        return Cow::Borrowed(text);
    }
    let end = text.floor_char_boundary(MAX_REASON_BYTES - MARKER_BYTES);
    Cow::Owned(format!(
        "{}… [cut: {} bytes, showing the first {}]",
        &text[..end],
        thousands(text.len()),
        thousands(end)
    ))
}

/// [`bounded`] in place: nothing is copied when `text` fits.
pub(crate) fn bound(text: &mut String) {
    if text.len() > MAX_REASON_BYTES {
        *text = bounded(text).into_owned();
    }
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<Entry> {
    let kind: String = row.get(2)?;
    let data: String = row.get(10)?;
    Ok(Entry {
        id: row.get(0)?,
        at: from_ms(row.get(1)?),
        kind: Kind::parse(&kind).unwrap_or(Kind::System),
        guild: row.get::<_, Option<i64>>(3)?.map(GuildId::from_sql),
        channel: row.get::<_, Option<i64>>(4)?.map(ChannelId::from_sql),
        message: row.get::<_, Option<i64>>(5)?.map(MessageId::from_sql),
        model_call: row.get(6)?,
        summary: row.get(7)?,
        reason: row.get(8)?,
        salience: row.get(9)?,
        data: serde_json::from_str(&data).unwrap_or(serde_json::Value::Null),
    })
}

impl JournalStore {
    /// Appends an entry and returns its id.
    pub fn journal_append(&self, e: &Entry) -> Result<i64> {
        append(&self.0.lock(), e)
    }

    /// Appends an entry and, when it is one the context stream shows, its
    /// stream line (`guild`'s), together: in one transaction, or in the open
    /// group of writes with [`Commit::Grouped`] (see [`super::group_commit`]).
    pub(crate) fn journal_append_with(
        &self,
        e: &Entry,
        stream: Option<(GuildId, &StreamLine<'_>)>,
        commit: Commit,
    ) -> Result<i64> {
        match commit {
            Commit::Now => {
                let mut conn = self.0.lock();
                let tx = conn.transaction()?;
                let id = append_with(&tx, e, stream)?;
                tx.commit()?;
                Ok(id)
            }
            Commit::Grouped => append_with(&*self.0.lock_grouped()?, e, stream),
        }
    }

    /// Entries matching `f`, oldest first (the newest `f.limit` when limited).
    pub fn journal_query(&self, f: &Filter) -> Result<Vec<Entry>> {
        let (sql, args) = query(f);
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows: Vec<Entry> = stmt
            .query_map(params_from_iter(args), from_row)?
            .collect::<rusqlite::Result<_>>()?;
        rows.reverse();
        Ok(rows)
    }

    /// How many entries match `f` (its `limit` aside): counted in SQL,
    /// without reading them (the daily cap asks every tick).
    pub(crate) fn journal_count(&self, f: &Filter) -> Result<u64> {
        let (filter, args) = filter(f);
        let n: i64 = self
            .0
            .lock()
            .prepare_cached(&format!("SELECT count(*) FROM journal{filter}"))?
            .query_row(params_from_iter(args), |r| r.get(0))?;
        Ok(n as u64)
    }
}

/// The SELECT for [`JournalStore::journal_query`] and its bound values.
fn query(f: &Filter) -> (String, Vec<rusqlite::types::Value>) {
    let (filter, args) = filter(f);
    let mut sql = format!(
        "SELECT id, ts, kind, guild_id, channel_id, message_id, model_call_id, summary, reason, salience, data
         FROM journal{filter} ORDER BY ts DESC, id DESC"
    );
    if let Some(limit) = f.limit {
        sql.push_str(&format!(" LIMIT {limit}"));
    }
    (sql, args)
}

/// The WHERE clause `f` makes, and its bound values.
fn filter(f: &Filter) -> (String, Vec<rusqlite::types::Value>) {
    let kinds: Vec<String> = f.kinds.iter().map(|k| k.as_str().to_string()).collect();
    let mut c = Conditions::default();
    c.cmp("ts", ">=", f.since.map(to_ms))
        .cmp("ts", "<", f.until.map(to_ms))
        .cmp("guild_id", "=", f.guild.map(GuildId::to_sql))
        .cmp("channel_id", "=", f.channel.map(ChannelId::to_sql))
        .cmp("message_id", "=", f.message.map(MessageId::to_sql))
        .any_of("kind", &kinds)
        .contains(&["summary", "reason"], f.text.as_deref());
    if !kinds.is_empty() && !f.kinds.contains(&Kind::Route) {
        // What lets SQLite use the indexes by kind, which leave out routing
        // lines (migration 17).
        c.fixed(NOT_ROUTE);
    }
    c.finish()
}

/// The WHERE of the journal's partial indexes by kind (migration 17):
/// routing lines, one for nearly every message, are found by time, server
/// or message instead.
const NOT_ROUTE: &str = "kind != 'route'";

fn append_with(
    conn: &Connection,
    e: &Entry,
    stream: Option<(GuildId, &StreamLine<'_>)>,
) -> Result<i64> {
    if let Some((guild, line)) = stream {
        // Harmless if lost: the stream is a rolling view; the entry itself is in the journal.
        let _ = super::stream::stream_append(conn, guild, e.channel, line, e.at);
    }
    append(conn, e)
}

fn append(conn: &Connection, e: &Entry) -> Result<i64> {
    // Prepared once: every routed message writes a line.
    conn.prepare_cached(
        "INSERT INTO journal (ts, kind, guild_id, channel_id, message_id, model_call_id,
                              summary, reason, salience, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(rusqlite::params![
        to_ms(e.at),
        e.kind.as_str(),
        e.guild.map(GuildId::to_sql),
        e.channel.map(ChannelId::to_sql),
        e.message.map(MessageId::to_sql),
        e.model_call,
        bounded(&e.summary),
        bounded(&e.reason),
        e.salience,
        e.data.to_string(),
    ])?;
    Ok(conn.last_insert_rowid())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// The indexes SQLite plans to read for `f`.
    fn indexes(f: &Filter) -> Vec<String> {
        let (sql, args) = query(f);
        crate::store::query_plan(&sql, params_from_iter(args))
    }

    #[test]
    fn a_query_by_kind_reads_an_index_by_kind_though_they_leave_routing_lines_out() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0);
        let posts = indexes(&Filter {
            since: at,
            kinds: vec![Kind::InitiativePost],
            guild: Some(GuildId(1)),
            ..Default::default()
        });
        assert!(
            posts.iter().any(|s| s.contains("journal_kind_guild_time")),
            "{posts:#?}"
        );
        let replies = indexes(&Filter {
            since: at,
            kinds: vec![Kind::Reply, Kind::Reflex],
            ..Default::default()
        });
        assert!(
            replies.iter().any(|s| s.contains("journal_kind_time")),
            "{replies:#?}"
        );
        let routes = indexes(&Filter {
            kinds: vec![Kind::Route],
            guild: Some(GuildId(1)),
            ..Default::default()
        });
        assert!(
            routes.iter().all(|s| !s.contains("journal_kind")),
            "a routing line is in neither: {routes:#?}"
        );
    }

    #[test]
    fn a_huge_summary_and_reason_are_stored_cut_at_a_character_boundary_with_a_marker() {
        let store = Store::open_in_memory().unwrap();
        // Three bytes a character after the first: the cut falls inside one.
        let huge = format!("a{}", "€".repeat(1_000_000));
        store
            .journal()
            .journal_append(&Entry::new(Kind::Error, huge.clone()).reason(huge.clone()))
            .unwrap();
        store
            .journal()
            .journal_append_with(
                &Entry::new(Kind::Error, "short").reason(huge),
                None,
                Commit::Now,
            )
            .unwrap();
        let rows = store.journal().journal_query(&Filter::default()).unwrap();
        let cut = format!(
            "a{}… [cut: 3,000,001 bytes, showing the first 1,966]",
            "€".repeat(655)
        );
        assert_eq!(rows[0].summary, cut);
        assert_eq!(rows[0].reason, cut);
        assert_eq!(rows[1].summary, "short");
        assert_eq!(rows[1].reason, cut);
    }

    #[test]
    fn a_reason_that_fits_is_stored_as_it_is() {
        let fits = "é".repeat(MAX_REASON_BYTES / 2);
        assert_eq!(bounded(&fits), fits);
        assert!(matches!(bounded(&fits), Cow::Borrowed(_)));
        let mut over = format!("{fits}!");
        bound(&mut over);
        assert_eq!(
            over,
            format!(
                "{}… [cut: 2,049 bytes, showing the first 1,968]",
                "é".repeat(984)
            )
        );
        assert!(over.len() <= MAX_REASON_BYTES);
        assert!(
            matches!(bounded(&over), Cow::Borrowed(_)),
            "cut once is cut"
        );
    }

    #[test]
    fn a_count_is_the_number_of_entries_the_query_finds() {
        let store = Store::open_in_memory().unwrap();
        for (kind, guild) in [
            (Kind::Reply, 1),
            (Kind::Reply, 2),
            (Kind::Route, 1),
            (Kind::Reply, 1),
        ] {
            store
                .journal()
                .journal_append(&Entry::new(kind, "line").guild(Some(GuildId(guild))))
                .unwrap();
        }
        let f = Filter {
            kinds: vec![Kind::Reply],
            guild: Some(GuildId(1)),
            limit: Some(1),
            ..Default::default()
        };
        assert_eq!(
            store.journal().journal_count(&f).unwrap(),
            2,
            "the limit aside"
        );
        assert_eq!(
            store.journal().journal_count(&Filter::default()).unwrap(),
            4
        );
    }

    #[test]
    fn routing_lines_are_found_by_kind_all_the_same() {
        let store = Store::open_in_memory().unwrap();
        for kind in [Kind::Route, Kind::Reply, Kind::Route] {
            store
                .journal()
                .journal_append(&Entry::new(kind, "line").guild(Some(GuildId(1))))
                .unwrap();
        }
        let kinds = |kinds: Vec<Kind>| {
            store
                .journal()
                .journal_query(&Filter {
                    kinds,
                    guild: Some(GuildId(1)),
                    ..Default::default()
                })
                .unwrap()
                .len()
        };
        assert_eq!(kinds(vec![Kind::Route]), 2);
        assert_eq!(kinds(vec![Kind::Reply]), 1);
        assert_eq!(kinds(vec![Kind::Route, Kind::Reply]), 3);
    }
}
