//! Persistence for the journal (see `crate::journal` for what goes in it).

use rusqlite::{Connection, Row, params_from_iter};

use super::conditions::Conditions;
use super::garden::StreamLine;
use super::messages::Commit;
use super::{Result, Store, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::vocab::journal::{Entry, Filter, Kind};

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

impl Store {
    /// Appends an entry and returns its id.
    pub fn journal_append(&self, e: &Entry) -> Result<i64> {
        append(&self.lock(), e)
    }

    /// Appends an entry and, when it is one the context stream shows, its
    /// stream line (`guild`'s), together: in one transaction, or in the open
    /// group of writes with [`Commit::Grouped`] (see [`super::group_commit`]).
    pub fn journal_append_with(
        &self,
        e: &Entry,
        stream: Option<(GuildId, &StreamLine<'_>)>,
        commit: Commit,
    ) -> Result<i64> {
        match commit {
            Commit::Now => {
                let mut conn = self.lock();
                let tx = conn.transaction()?;
                let id = append_with(&tx, e, stream)?;
                tx.commit()?;
                Ok(id)
            }
            Commit::Grouped => append_with(&*self.lock_grouped()?, e, stream),
        }
    }

    /// Entries matching `f`, oldest first (the newest `f.limit` when limited).
    pub fn journal_query(&self, f: &Filter) -> Result<Vec<Entry>> {
        let kinds: Vec<String> = f.kinds.iter().map(|k| k.as_str().to_string()).collect();
        let mut c = Conditions::default();
        c.cmp("ts", ">=", f.since.map(to_ms))
            .cmp("ts", "<", f.until.map(to_ms))
            .cmp("guild_id", "=", f.guild.map(GuildId::to_sql))
            .cmp("channel_id", "=", f.channel.map(ChannelId::to_sql))
            .cmp("message_id", "=", f.message.map(MessageId::to_sql))
            .any_of("kind", &kinds)
            .contains(&["summary", "reason"], f.text.as_deref());
        let (filter, args) = c.finish();
        let mut sql = format!(
            "SELECT id, ts, kind, guild_id, channel_id, message_id, model_call_id, summary, reason, salience, data
             FROM journal{filter} ORDER BY ts DESC, id DESC"
        );
        if let Some(limit) = f.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows: Vec<Entry> = stmt
            .query_map(params_from_iter(args), from_row)?
            .collect::<rusqlite::Result<_>>()?;
        rows.reverse();
        Ok(rows)
    }
}

fn append_with(
    conn: &Connection,
    e: &Entry,
    stream: Option<(GuildId, &StreamLine<'_>)>,
) -> Result<i64> {
    if let Some((guild, line)) = stream {
        // Harmless if lost: the stream is a rolling view; the entry itself is in the journal.
        let _ = super::garden::stream_append(conn, guild, e.channel, line, e.at);
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
        e.summary,
        e.reason,
        e.salience,
        e.data.to_string(),
    ])?;
    Ok(conn.last_insert_rowid())
}
