//! The per-guild context stream: lines the journal writes about what
//! happened in a server, read back (with people's messages, read from their
//! own rows) for the initiative's and the garden's prompts. Part of the
//! journal's family ([`JournalStore`]): the journal writes a line with the
//! entry it is about, in one transaction.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::{JournalStore, Result, from_ms, to_ms};
use crate::ids::GuildId;

/// A line to append to a guild's context stream: its kind, its text, and
/// how long an identical line keeps it from being written again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamLine<'a> {
    pub kind: &'a str,
    pub content: String,
    pub repeat_window: chrono::Duration,
}

/// One line of a guild's context stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEvent {
    pub at: DateTime<Utc>,
    pub kind: String,
    pub content: String,
    /// Where it happened, when in one channel.
    pub channel: Option<crate::ids::ChannelId>,
}

/// "This line, in this server's stream, in the window": a seek on
/// `context_stream_repeat` (migration 13), asked for every journal entry
/// the stream shows.
const REPEAT_CHECK: &str = "SELECT EXISTS (SELECT 1 FROM context_stream \
     WHERE guild_id = ?1 AND ts >= ?2 AND kind = ?3 AND content = ?4)";

impl JournalStore {
    /// Appends to a guild's stream unless the same event was written in the
    /// last `repeat_window` (the seed: no repeats).
    pub fn stream_append(
        &self,
        guild: GuildId,
        channel: Option<crate::ids::ChannelId>,
        kind: &str,
        content: &str,
        at: DateTime<Utc>,
        repeat_window: chrono::Duration,
    ) -> Result<bool> {
        let line = StreamLine {
            kind,
            content: content.to_string(),
            repeat_window,
        };
        stream_append(&self.0.lock(), guild, channel, &line, at)
    }

    /// One guild's events since `since`, oldest first, of the given kinds
    /// (all when empty), newest `limit` — kinds and limit in the query, so a
    /// busy stream is not loaded whole. A `user_message` is a person's
    /// message read from its own row as `name: text`, as it stands now (an
    /// edit shows, a deleted or forgotten one is gone): it is never copied
    /// into `context_stream`, so storing a message costs one row, not two.
    /// Uncut and with repeats: the stream's rules are `journal::stream`'s.
    pub fn stream_read(
        &self,
        guild: GuildId,
        since: DateTime<Utc>,
        kinds: &[String],
        limit: usize,
    ) -> Result<Vec<StreamEvent>> {
        let conn = self.0.lock();
        let people = kinds.is_empty() || kinds.iter().any(|k| k == USER_MESSAGE);
        let written = kinds.is_empty() || kinds.iter().any(|k| k != USER_MESSAGE);
        let mut rows = Vec::new();
        // `context_stream` holds no people's messages (migration 17).
        if written {
            rows = stream_lines(&conn, guild, since, kinds, limit)?;
        }
        if people {
            rows.extend(people_lines(&conn, guild, since, limit)?);
        }
        rows.sort_by_key(|(e, order)| (e.at, *order));
        let skip = rows.len().saturating_sub(limit);
        Ok(rows.into_iter().skip(skip).map(|(e, _)| e).collect())
    }

    pub(crate) fn stream_cleanup(&self, before: DateTime<Utc>) -> Result<usize> {
        Ok(self
            .0
            .lock()
            .execute("DELETE FROM context_stream WHERE ts < ?1", [to_ms(before)])?)
    }
}

/// The kind of a person's message in the stream (read from `messages`).
pub(crate) const USER_MESSAGE: &str = "user_message";

/// A stream event with where it sorts among those of the same instant: a
/// person's message (0) before the lines written about it (1), each kind
/// by its row id.
type Ordered = (StreamEvent, (u8, i64));

/// The newest `limit` lines written to a guild's `context_stream` since
/// `since`, of `kinds` (all when empty), sorting after people's messages.
fn stream_lines(
    conn: &Connection,
    guild: GuildId,
    since: DateTime<Utc>,
    kinds: &[String],
    limit: usize,
) -> Result<Vec<Ordered>> {
    let kind_filter = if kinds.is_empty() {
        String::new()
    } else {
        // ?4, ?5, … after guild, since and limit.
        let marks: Vec<String> = (0..kinds.len()).map(|i| format!("?{}", i + 4)).collect();
        format!(" AND kind IN ({})", marks.join(", "))
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT ts, kind, content, channel_id, id FROM context_stream WHERE guild_id = ?1 AND ts >= ?2{kind_filter}
         ORDER BY ts DESC, id DESC LIMIT ?3"
    ))?;
    let mut values: Vec<rusqlite::types::Value> = vec![
        guild.to_sql().into(),
        to_ms(since).into(),
        i64::try_from(limit).unwrap_or(i64::MAX).into(),
    ];
    values.extend(kinds.iter().map(|k| k.clone().into()));
    let rows = stmt
        .query_map(rusqlite::params_from_iter(values), |r| {
            let event = StreamEvent {
                at: from_ms(r.get(0)?),
                kind: r.get(1)?,
                content: r.get(2)?,
                channel: r
                    .get::<_, Option<i64>>(3)?
                    .map(crate::ids::ChannelId::from_sql),
            };
            Ok((event, (1, r.get(4)?)))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The newest `limit` messages people sent in a guild since `since`, still
/// standing, as `user_message` lines (on `messages_guild_time`).
fn people_lines(
    conn: &Connection,
    guild: GuildId,
    since: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<Ordered>> {
    let rows = conn
        .prepare_cached(
            "SELECT created_at, author_name || ': ' || content, channel_id, id FROM messages
             WHERE guild_id = ?1 AND created_at >= ?2 AND author_is_bot = 0 AND is_self = 0
               AND deleted_at IS NULL
             ORDER BY created_at DESC, id DESC LIMIT ?3",
        )?
        .query_map(
            params![
                guild.to_sql(),
                to_ms(since),
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            |r| {
                let event = StreamEvent {
                    at: from_ms(r.get(0)?),
                    kind: USER_MESSAGE.to_string(),
                    content: r.get(1)?,
                    channel: Some(crate::ids::ChannelId::from_sql(r.get(2)?)),
                };
                Ok((event, (0, r.get(3)?)))
            },
        )?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Appends `line` on a locked connection unless it is a repeat; whether it was written.
pub(super) fn stream_append(
    conn: &Connection,
    guild: GuildId,
    channel: Option<crate::ids::ChannelId>,
    line: &StreamLine<'_>,
    at: DateTime<Utc>,
) -> Result<bool> {
    let repeated: bool = conn.prepare_cached(REPEAT_CHECK)?.query_row(
        params![
            guild.to_sql(),
            to_ms(at - line.repeat_window),
            line.kind,
            line.content
        ],
        |r| r.get(0),
    )?;
    if repeated {
        return Ok(false);
    }
    conn.prepare_cached(
        "INSERT INTO context_stream (guild_id, channel_id, ts, kind, content) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        guild.to_sql(),
        channel.map(|c| c.to_sql()),
        to_ms(at),
        line.kind,
        line.content
    ])?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::Store;
    use crate::store::query_plan as plan;

    #[test]
    fn the_repeat_check_seeks_its_index_instead_of_reading_the_window() {
        let plan = plan(REPEAT_CHECK, params![1, 0, "decision", "answered ada"]);
        assert!(
            plan.iter()
                .any(|step| step.contains("context_stream_repeat")),
            "{plan:#?}"
        );
    }

    #[test]
    fn a_read_by_kind_reads_only_the_source_that_holds_it() {
        let store = Store::open_in_memory().unwrap();
        let t = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        let window = chrono::Duration::minutes(10);
        store
            .journal()
            .stream_append(GuildId(1), None, "decision", "answered ada", t, window)
            .unwrap();
        let said = crate::store::messages::sample(1, 5, "hi", t);
        store.messages().insert_message(&said).unwrap();
        let kinds = |kinds: &[&str]| -> Vec<String> {
            let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
            store
                .journal()
                .stream_read(GuildId(1), t, &kinds, 10)
                .unwrap()
                .into_iter()
                .map(|e| e.kind)
                .collect()
        };
        assert_eq!(kinds(&[]), [USER_MESSAGE, "decision"]);
        assert_eq!(kinds(&[USER_MESSAGE]), [USER_MESSAGE]);
        assert_eq!(kinds(&["decision"]), ["decision"]);
    }

    #[test]
    fn a_line_is_kept_once_per_window() {
        let store = Store::open_in_memory().unwrap();
        let t = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        let window = chrono::Duration::minutes(10);
        let append = |at| {
            store
                .journal()
                .stream_append(GuildId(1), None, "decision", "answered ada", at, window)
        };
        assert!(append(t).unwrap());
        assert!(!append(t + chrono::Duration::minutes(9)).unwrap());
        assert!(append(t + chrono::Duration::minutes(11)).unwrap());
        let other_server =
            store
                .journal()
                .stream_append(GuildId(2), None, "decision", "answered ada", t, window);
        assert!(other_server.unwrap());
    }
}
