//! Persistence for the journal (see `crate::journal` for what goes in it).

use rusqlite::{Row, params_from_iter, types::Value as SqlValue};

use super::{Result, Store, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::journal::{Entry, Filter, Kind};

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
        let conn = self.lock();
        conn.execute(
            "INSERT INTO journal (ts, kind, guild_id, channel_id, message_id, model_call_id,
                                  summary, reason, salience, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            rusqlite::params![
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
            ],
        )?;
        Ok(conn.last_insert_rowid())
    }

    /// Entries matching `f`, oldest first (the newest `f.limit` when limited).
    pub fn journal_query(&self, f: &Filter) -> Result<Vec<Entry>> {
        let mut sql = String::from(
            "SELECT id, ts, kind, guild_id, channel_id, message_id, model_call_id, summary, reason, salience, data
             FROM journal WHERE 1 = 1",
        );
        let mut args: Vec<SqlValue> = Vec::new();
        let mut arg = |sql: &mut String, clause: &str, v: SqlValue| {
            args.push(v);
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        };
        if let Some(since) = f.since {
            arg(&mut sql, " AND ts >= ?", SqlValue::Integer(to_ms(since)));
        }
        if let Some(until) = f.until {
            arg(&mut sql, " AND ts < ?", SqlValue::Integer(to_ms(until)));
        }
        if let Some(g) = f.guild {
            arg(&mut sql, " AND guild_id = ?", SqlValue::Integer(g.to_sql()));
        }
        if let Some(c) = f.channel {
            arg(
                &mut sql,
                " AND channel_id = ?",
                SqlValue::Integer(c.to_sql()),
            );
        }
        if let Some(m) = f.message {
            arg(
                &mut sql,
                " AND message_id = ?",
                SqlValue::Integer(m.to_sql()),
            );
        }
        if !f.kinds.is_empty() {
            let placeholders: Vec<String> = f
                .kinds
                .iter()
                .map(|k| {
                    args.push(SqlValue::Text(k.as_str().into()));
                    format!("?{}", args.len())
                })
                .collect();
            sql.push_str(&format!(" AND kind IN ({})", placeholders.join(", ")));
        }
        if let Some(text) = &f.text {
            args.push(SqlValue::Text(format!(
                "%{}%",
                text.replace('%', "\\%").replace('_', "\\_")
            )));
            let n = args.len();
            sql.push_str(&format!(
                " AND (summary LIKE ?{n} ESCAPE '\\' OR reason LIKE ?{n} ESCAPE '\\')"
            ));
        }
        sql.push_str(" ORDER BY ts DESC, id DESC");
        if let Some(limit) = f.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let conn = self.lock();
        let mut stmt = conn.prepare(&sql)?;
        let mut rows: Vec<Entry> = stmt
            .query_map(params_from_iter(args), from_row)?
            .collect::<rusqlite::Result<_>>()?;
        rows.reverse();
        Ok(rows)
    }
}
