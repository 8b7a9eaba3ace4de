//! Channel message history: everything the bot has seen, its own words included.
//!
//! Inserts are idempotent on the message id, and report whether the row is
//! new: after a gateway resume Discord may deliver a message again, and only
//! a new row is handed to attention, so nothing is answered twice.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::{MessageStore, Result, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};

/// A file on a message, as the platform describes it (stored as JSON in the
/// message row; rows written before the optional fields existed read as `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub name: String,
    pub url: String,
    /// Size in bytes, as the platform says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// MIME type, as the platform says (`image/png`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// An image's pixels, as the platform says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

/// Where a line of channel history came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Typed in a text channel.
    Text,
    /// Said in a linked voice channel and transcribed.
    Vc,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Text => "text",
            Source::Vc => "vc",
        }
    }
}

/// A channel whose recent messages have not been through memory extraction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unextracted {
    pub guild: Option<GuildId>,
    pub channel: ChannelId,
    pub count: u64,
    pub last_at: DateTime<Utc>,
    /// The bot took part: a conversation, not just talk it listened to.
    pub bot_spoke: bool,
    pub last_run_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StoredMessage {
    pub id: MessageId,
    pub guild: Option<GuildId>,
    pub channel: ChannelId,
    pub author_id: UserId,
    pub author_name: String,
    pub author_is_bot: bool,
    /// Written by this bot.
    pub is_self: bool,
    pub content: String,
    pub attachments: Vec<Attachment>,
    pub reply_to: Option<MessageId>,
    pub source: Source,
    pub created_at: DateTime<Utc>,
    pub edited_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
}

impl StoredMessage {
    /// A person's message as first said in text: no files, not a reply,
    /// never edited or deleted. What differs (a bot's, a reply, words said
    /// in voice) is set on the result with `..StoredMessage::said(…)`.
    pub fn said(
        id: MessageId,
        guild: Option<GuildId>,
        channel: ChannelId,
        author_id: UserId,
        author_name: impl Into<String>,
        content: impl Into<String>,
        created_at: DateTime<Utc>,
    ) -> Self {
        StoredMessage {
            id,
            guild,
            channel,
            author_id,
            author_name: author_name.into(),
            author_is_bot: false,
            is_self: false,
            content: content.into(),
            attachments: Vec::new(),
            reply_to: None,
            source: Source::Text,
            created_at,
            edited_at: None,
            deleted_at: None,
        }
    }
}

/// The columns of a stored message, in [`from_row`]'s order; a macro so the
/// statements prepared for every message can be written out at compile time.
macro_rules! columns {
    () => {
        "id, guild_id, channel_id, author_id, author_name, author_is_bot, is_self, \
         content, attachments, reply_to_id, source, created_at, edited_at, deleted_at"
    };
}
const COLUMNS: &str = columns!();

fn from_row(row: &Row<'_>) -> rusqlite::Result<StoredMessage> {
    let attachments: String = row.get(8)?;
    let source: String = row.get(10)?;
    Ok(StoredMessage {
        id: MessageId::from_sql(row.get(0)?),
        guild: row.get::<_, Option<i64>>(1)?.map(GuildId::from_sql),
        channel: ChannelId::from_sql(row.get(2)?),
        author_id: UserId::from_sql(row.get(3)?),
        author_name: row.get(4)?,
        author_is_bot: row.get(5)?,
        is_self: row.get(6)?,
        content: row.get(7)?,
        attachments: serde_json::from_str(&attachments).unwrap_or_default(),
        reply_to: row.get::<_, Option<i64>>(9)?.map(MessageId::from_sql),
        source: if source == "vc" {
            Source::Vc
        } else {
            Source::Text
        },
        created_at: from_ms(row.get(11)?),
        edited_at: row.get::<_, Option<i64>>(12)?.map(from_ms),
        deleted_at: row.get::<_, Option<i64>>(13)?.map(from_ms),
    })
}

/// The bot's messages in a channel since a time (asked before every answer:
/// a seek in the partial index `messages_self_time`).
const COUNT_SELF: &str =
    "SELECT count(*) FROM messages WHERE channel_id = ?1 AND is_self = 1 AND created_at >= ?2";

/// A channel's latest messages: read for every answer's prompt.
static RECENT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM messages
         WHERE channel_id = ?1 AND deleted_at IS NULL
         ORDER BY created_at DESC, id DESC LIMIT ?2"
    )
});

/// Whether a message id is stored, and a provisional row taking its
/// platform id: asked for every message the bot sends, so prepared once.
const EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM messages WHERE id = ?1)";
const TAKE_ID: &str = "UPDATE messages SET id = ?2 WHERE id = ?1";

/// The bit that marks a provisional id: the row of the bot's own words
/// written before they are sent. No platform id has it (Discord's would need
/// a timestamp past the year 2150), and in SQL such ids are negative.
const PROVISIONAL: u64 = 1 << 63;

/// An id for the bot's own words before the platform has given them one,
/// made from the nonce they are sent with. A part sent again under its
/// nonce (a post settled after a crash before its delivery) finds the row
/// recorded the first time instead of adding a second one, as the platform
/// answers a repeated nonce with the message it already made.
pub fn provisional_id(nonce: &str) -> MessageId {
    MessageId(crate::ids::stable_id("provisional", nonce) | PROVISIONAL)
}

pub(crate) fn is_provisional(id: MessageId) -> bool {
    id.get() & PROVISIONAL != 0
}

impl MessageStore {
    /// Stores a message; returns `false` if a message with this id was already stored.
    ///
    /// The bot's own message arriving under its platform id (the gateway's
    /// echo, or backfill after a restart) takes over the oldest provisional
    /// row with the same channel and text instead of adding a second: if the
    /// bot stopped between sending and confirming, that row is this message.
    pub fn insert_message(&self, m: &StoredMessage) -> Result<bool> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let new = insert(&tx, m)?;
        tx.commit()?;
        Ok(new)
    }

    /// Stores a message someone sent with what comes with it (the names of
    /// its server and channel) in one transaction, or in the open group of
    /// writes (see [`super::group_commit`]) with [`Commit::Grouped`];
    /// returns `false` if it was already stored.
    pub fn insert_seen(&self, seen: &Seen<'_>, commit: Commit) -> Result<bool> {
        match commit {
            Commit::Now => {
                let mut conn = self.0.lock();
                let tx = conn.transaction()?;
                let new = insert_seen(&tx, seen)?;
                tx.commit()?;
                Ok(new)
            }
            Commit::Grouped => insert_seen(&*self.0.lock_grouped()?, seen),
        }
    }

    /// Applies an edit; returns `false` if the message is unknown or deleted.
    pub(crate) fn edit_message(
        &self,
        id: MessageId,
        content: &str,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        let n = self.0.lock().execute(
            "UPDATE messages SET content = ?2, edited_at = ?3 WHERE id = ?1 AND deleted_at IS NULL",
            params![id.to_sql(), content, to_ms(at)],
        )?;
        Ok(n == 1)
    }

    /// Marks a message deleted and removes its content and attachments.
    pub(crate) fn delete_message(&self, id: MessageId, at: DateTime<Utc>) -> Result<bool> {
        let n = self.0.lock().execute(
            "UPDATE messages SET content = '', attachments = '[]', deleted_at = ?2
             WHERE id = ?1 AND deleted_at IS NULL",
            params![id.to_sql(), to_ms(at)],
        )?;
        Ok(n == 1)
    }

    /// Asked for every answer (who is answered, may they be pinged), so prepared once.
    pub fn message(&self, id: MessageId) -> Result<Option<StoredMessage>> {
        Ok(self
            .0
            .lock()
            .prepare_cached(concat!(
                "SELECT ",
                columns!(),
                " FROM messages WHERE id = ?1"
            ))?
            .query_row([id.to_sql()], from_row)
            .optional()?)
    }

    /// A row written before its message was sent now has the platform's id.
    /// If that id is already stored (the gateway's echo came first), the
    /// provisional row goes; either way one row remains. Grouped (see
    /// [`super::group_commit`]): if a crash loses it, backfill gives the
    /// message's id to the provisional row as it does for the echo.
    pub(crate) fn confirm_message(&self, provisional: MessageId, id: MessageId) -> Result<()> {
        let conn = self.0.lock_grouped()?;
        let echoed: bool = conn
            .prepare_cached(EXISTS)?
            .query_row([id.to_sql()], |r| r.get(0))?;
        if echoed {
            conn.execute("DELETE FROM messages WHERE id = ?1", [provisional.to_sql()])?;
        } else {
            conn.prepare_cached(TAKE_ID)?
                .execute(params![provisional.to_sql(), id.to_sql()])?;
        }
        Ok(())
    }

    /// Removes a provisional row whose message was never sent.
    pub(crate) fn forget_unsent(&self, provisional: MessageId) -> Result<()> {
        self.0
            .lock()
            .execute("DELETE FROM messages WHERE id = ?1", [provisional.to_sql()])?;
        Ok(())
    }

    /// The newest message id stored for a channel (where to catch up from).
    pub(crate) fn last_message_id(&self, channel: ChannelId) -> Result<Option<MessageId>> {
        Ok(self
            .0
            .lock()
            .query_row(
                "SELECT max(id) FROM messages WHERE channel_id = ?1 AND id > 0",
                [channel.to_sql()],
                |r| r.get::<_, Option<i64>>(0),
            )?
            .map(MessageId::from_sql))
    }

    /// The name `user` last wrote under, if the bot has seen them write.
    pub(crate) fn author_name(&self, user: UserId) -> Result<Option<String>> {
        Ok(self
            .0.lock()
            .query_row(
                "SELECT author_name FROM messages WHERE author_id = ?1 ORDER BY created_at DESC LIMIT 1",
                [user.to_sql()],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The last `limit` messages of a channel that still have content, oldest first.
    pub fn recent_messages(&self, channel: ChannelId, limit: usize) -> Result<Vec<StoredMessage>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&RECENT)?;
        let mut rows: Vec<StoredMessage> = stmt
            .query_map(params![channel.to_sql(), limit as i64], from_row)?
            .collect::<rusqlite::Result<_>>()?;
        rows.reverse();
        Ok(rows)
    }

    /// A guild's messages since `since` that still have content, oldest first (at most `limit`, the newest).
    pub(crate) fn recent_guild_messages(
        &self,
        guild: GuildId,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<StoredMessage>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages
             WHERE guild_id = ?1 AND created_at >= ?2 AND deleted_at IS NULL
             ORDER BY created_at DESC, id DESC LIMIT ?3"
        ))?;
        let mut rows: Vec<StoredMessage> = stmt
            .query_map(
                params![guild.to_sql(), to_ms(since), limit as i64],
                from_row,
            )?
            .collect::<rusqlite::Result<_>>()?;
        rows.reverse();
        Ok(rows)
    }

    /// Channels with messages after their extraction checkpoint: (guild, channel,
    /// how many, when the last was said, whether the bot spoke among them, checkpoint time).
    pub(crate) fn unextracted_channels(&self) -> Result<Vec<Unextracted>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            // The channels first, one index seek each (a loose index scan),
            // then only each channel's messages past its checkpoint: the
            // minute's look costs the new messages, not the whole history.
            "WITH RECURSIVE ch(id) AS (
                 SELECT min(channel_id) FROM messages
                 UNION ALL
                 SELECT (SELECT min(channel_id) FROM messages WHERE channel_id > ch.id)
                 FROM ch WHERE ch.id IS NOT NULL
             )
             SELECT m.guild_id, m.channel_id, count(*), max(m.created_at), max(m.is_self), e.last_run_at
             FROM ch
             LEFT JOIN extraction_state e ON e.channel_id = ch.id
             JOIN messages m INDEXED BY messages_channel_id
               ON m.channel_id = ch.id AND m.id > COALESCE(e.last_message_id, 0)
             WHERE ch.id IS NOT NULL AND m.deleted_at IS NULL
             GROUP BY m.guild_id, m.channel_id",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Unextracted {
                    guild: r.get::<_, Option<i64>>(0)?.map(GuildId::from_sql),
                    channel: ChannelId::from_sql(r.get(1)?),
                    count: r.get::<_, i64>(2)? as u64,
                    last_at: from_ms(r.get(3)?),
                    bot_spoke: r.get::<_, i64>(4)? != 0,
                    last_run_at: r.get::<_, Option<i64>>(5)?.map(from_ms),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// A channel's messages after `after` (exclusive), oldest first, at most `limit`.
    pub(crate) fn messages_after(
        &self,
        channel: ChannelId,
        after: Option<MessageId>,
        limit: usize,
    ) -> Result<Vec<StoredMessage>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages WHERE channel_id = ?1 AND id > ?2 AND deleted_at IS NULL
             ORDER BY id LIMIT ?3"
        ))?;
        let rows = stmt
            .query_map(
                params![
                    channel.to_sql(),
                    after.map_or(0, MessageId::to_sql),
                    limit as i64
                ],
                from_row,
            )?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// When the bot last said something in a channel, and when a person last did.
    #[allow(clippy::type_complexity)] // (bot, person): a pair the doc names
    pub(crate) fn channel_activity(
        &self,
        channel: ChannelId,
    ) -> Result<(Option<DateTime<Utc>>, Option<DateTime<Utc>>)> {
        let conn = self.0.lock();
        let last = |is_self: bool| -> rusqlite::Result<Option<DateTime<Utc>>> {
            conn.query_row(
                "SELECT max(created_at) FROM messages WHERE channel_id = ?1 AND is_self = ?2 AND author_is_bot = ?2",
                params![channel.to_sql(), is_self],
                |r| r.get::<_, Option<i64>>(0),
            )
            .map(|v| v.map(from_ms))
        };
        Ok((last(true)?, last(false)?))
    }

    /// When a person last posted in a channel: newest first down the
    /// channel-and-time index, stopping at the first person (asked every tick).
    pub(crate) fn last_human_in(&self, channel: ChannelId) -> Result<Option<DateTime<Utc>>> {
        Ok(self
            .0
            .lock()
            .prepare_cached(
                "SELECT created_at FROM messages WHERE channel_id = ?1 AND author_is_bot = 0
                 ORDER BY created_at DESC LIMIT 1",
            )?
            .query_row([channel.to_sql()], |r| r.get::<_, i64>(0))
            .optional()?
            .map(from_ms))
    }

    /// How many messages the bot itself sent in a channel since `since`.
    pub(crate) fn count_self_messages_since(
        &self,
        channel: ChannelId,
        since: DateTime<Utc>,
    ) -> Result<u64> {
        // Asked before every answer and reaction: a read inside the open
        // group sees its rows and leaves it open, where a commit here would
        // commit each message that fires a reflex alone.
        Ok(self
            .0
            .read()
            .prepare_cached(COUNT_SELF)?
            .query_row(params![channel.to_sql(), to_ms(since)], |r| {
                r.get::<_, i64>(0)
            })? as u64)
    }
}

/// A message someone sent, as the senses store it: with the names it came
/// with. (Its line in the context stream is read from its row: see
/// `Store::stream_read`.)
pub struct Seen<'a> {
    pub message: &'a StoredMessage,
    pub guild_name: Option<&'a str>,
    pub channel_name: Option<&'a str>,
    /// When the names were seen.
    pub now: DateTime<Utc>,
}

/// When a write reaches the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// Before the call returns.
    Now,
    /// With the open group, within [`super::group_commit::WINDOW`].
    Grouped,
}

fn insert_seen(conn: &Connection, seen: &Seen<'_>) -> Result<bool> {
    let m = seen.message;
    let names = (|| {
        if let (Some(g), Some(name)) = (m.guild, seen.guild_name) {
            super::channels::upsert_guild(conn, g, name, seen.now)?;
        }
        if let Some(name) = seen.channel_name {
            super::channels::upsert_channel(conn, m.channel, m.guild, name, seen.now)?;
        }
        Ok::<_, super::StoreError>(())
    })();
    if let Err(e) = names {
        // Only the names are missing: prompts say the channel's id instead.
        tracing::warn!(error = %e, "could not record guild/channel names");
    }
    insert(conn, m)
}

/// Inserts `m` on a locked connection (see [`MessageStore::insert_message`]); whether it is new.
fn insert(conn: &Connection, m: &StoredMessage) -> Result<bool> {
    if m.is_self && !is_provisional(m.id) && claim_provisional(conn, m)? {
        return Ok(false);
    }
    let attachments = serde_json::to_string(&m.attachments).unwrap_or_else(|_| "[]".into());
    // Prepared once: every message seen is stored.
    let n = conn
        .prepare_cached(concat!(
            "INSERT INTO messages (",
            columns!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             ON CONFLICT (id) DO NOTHING"
        ))?
        .execute(params![
            m.id.to_sql(),
            m.guild.map(GuildId::to_sql),
            m.channel.to_sql(),
            m.author_id.to_sql(),
            m.author_name,
            m.author_is_bot,
            m.is_self,
            m.content,
            attachments,
            m.reply_to.map(MessageId::to_sql),
            m.source.as_str(),
            to_ms(m.created_at),
            m.edited_at.map(to_ms),
            m.deleted_at.map(to_ms),
        ])?;
    Ok(n == 1)
}

/// Gives `m`'s id to the oldest provisional row of the same channel and
/// text, unless `m` is stored already; whether one was claimed. Runs inside
/// the caller's transaction.
fn claim_provisional(conn: &Connection, m: &StoredMessage) -> Result<bool> {
    let known: bool = conn
        .prepare_cached(EXISTS)?
        .query_row([m.id.to_sql()], |r| r.get(0))?;
    if known {
        return Ok(false);
    }
    // Provisional ids are negative in SQL (see `PROVISIONAL`).
    let provisional: Option<i64> = conn
        .query_row(
            "SELECT id FROM messages
             WHERE channel_id = ?1 AND is_self = 1 AND id < 0 AND content = ?2
             ORDER BY created_at, id LIMIT 1",
            params![m.channel.to_sql(), m.content],
            |r| r.get(0),
        )
        .optional()?;
    let Some(provisional) = provisional else {
        return Ok(false);
    };
    conn.prepare_cached(TAKE_ID)?
        .execute(params![provisional, m.id.to_sql()])?;
    Ok(true)
}

#[cfg(test)]
pub(crate) fn sample(id: u64, channel: u64, content: &str, at: DateTime<Utc>) -> StoredMessage {
    StoredMessage::said(
        MessageId(id),
        Some(GuildId(1)),
        ChannelId(channel),
        UserId(42),
        "ada",
        content,
        at,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn the_hourly_count_reads_only_the_bots_own_messages() {
        let plan = crate::store::query_plan(COUNT_SELF, params![1, 0]);
        assert!(
            plan.iter().any(|step| step.contains("messages_self_time")),
            "{plan:#?}"
        );
    }

    #[test]
    fn a_cached_query_runs_again_without_being_prepared_again() {
        // SQLite re-prepares a statement whose bound values the planner
        // looked at (a LIMIT, a term beside a partial index) each time the
        // values change, and rusqlite clears them when it caches the
        // statement: without the planner's stability guarantee, every
        // answer parsed its queries afresh.
        let store = Store::open_in_memory().unwrap();
        let t = Utc::now();
        store
            .messages()
            .insert_message(&mine(MessageId(1), "hi", t))
            .unwrap();
        for _ in 0..3 {
            store.messages().recent_messages(ChannelId(5), 20).unwrap();
            store
                .messages()
                .count_self_messages_since(ChannelId(5), t)
                .unwrap();
        }
        let conn = store.lock();
        for sql in [RECENT.as_str(), COUNT_SELF] {
            let stmt = conn.prepare_cached(sql).unwrap();
            // The statement the store ran, not a fresh one.
            assert!(
                stmt.get_status(rusqlite::StatementStatus::VmStep) > 0,
                "{sql}"
            );
            assert_eq!(
                stmt.get_status(rusqlite::StatementStatus::RePrepare),
                0,
                "{sql}"
            );
        }
    }

    fn mine(id: MessageId, content: &str, at: DateTime<Utc>) -> StoredMessage {
        StoredMessage {
            id,
            is_self: true,
            author_is_bot: true,
            ..sample(0, 5, content, at)
        }
    }

    #[test]
    fn the_bots_message_under_its_real_id_takes_over_its_provisional_row() {
        let store = Store::open_in_memory().unwrap();
        let t = Utc::now();
        // Said "ok" twice; the first is confirmed, the second was left
        // provisional by a crash, and a third "ok" is still on its way.
        assert!(
            store
                .messages()
                .insert_message(&mine(MessageId(100), "ok", t))
                .unwrap()
        );
        let crashed = provisional_id("nonce-2");
        let pending = provisional_id("nonce-3");
        assert!(is_provisional(crashed) && !is_provisional(MessageId(100)));
        store
            .messages()
            .insert_message(&mine(crashed, "ok", t))
            .unwrap();
        store
            .messages()
            .insert_message(&mine(pending, "ok", t + chrono::Duration::seconds(1)))
            .unwrap();

        // Backfill brings the crashed one under its real id: the oldest provisional row takes it.
        assert!(
            !store
                .messages()
                .insert_message(&mine(MessageId(200), "ok", t))
                .unwrap()
        );
        assert!(store.messages().message(crashed).unwrap().is_none());
        assert!(store.messages().message(MessageId(200)).unwrap().is_some());
        assert!(store.messages().message(pending).unwrap().is_some());
        assert!(
            store.messages().message(MessageId(100)).unwrap().is_some(),
            "a confirmed row is never taken"
        );
        // Redelivered: nothing changes.
        assert!(
            !store
                .messages()
                .insert_message(&mine(MessageId(200), "ok", t))
                .unwrap()
        );
        assert!(store.messages().message(pending).unwrap().is_some());
        // The third one's confirm finds its echo already stored: one row.
        assert!(
            !store
                .messages()
                .insert_message(&mine(MessageId(300), "ok", t))
                .unwrap()
        );
        store
            .messages()
            .confirm_message(pending, MessageId(300))
            .unwrap();
        let rows = store.messages().recent_messages(ChannelId(5), 10).unwrap();
        let mut ids: Vec<u64> = rows.iter().map(|m| m.id.get()).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![100, 200, 300]);
        assert_eq!(
            store.messages().last_message_id(ChannelId(5)).unwrap(),
            Some(MessageId(300))
        );
    }

    #[test]
    fn attachments_stored_before_their_details_existed_still_read() {
        let old: Vec<Attachment> =
            serde_json::from_str(r#"[{"name": "cat.png", "url": "https://cdn/cat.png"}]"#).unwrap();
        assert_eq!(old[0].name, "cat.png");
        assert_eq!((old[0].size, old[0].width), (None, None));
        assert_eq!(
            serde_json::to_string(&old).unwrap(),
            r#"[{"name":"cat.png","url":"https://cdn/cat.png"}]"#,
            "unknown details are not written"
        );
    }

    #[test]
    fn insert_is_idempotent_and_edits_and_deletes_apply() {
        let store = Store::open_in_memory().unwrap();
        let t = Utc::now();
        let mut m = sample(10, 5, "hello", t);
        m.attachments = vec![Attachment {
            name: "cat.png".into(),
            url: "https://cdn/cat.png".into(),
            size: Some(1_234),
            content_type: Some("image/png".into()),
            width: Some(640),
            height: Some(480),
        }];
        assert!(store.messages().insert_message(&m).unwrap());
        assert!(
            !store.messages().insert_message(&m).unwrap(),
            "a redelivered message is not new"
        );

        assert!(
            store
                .messages()
                .edit_message(MessageId(10), "hello there", t)
                .unwrap()
        );
        let got = store.messages().message(MessageId(10)).unwrap().unwrap();
        assert_eq!(got.content, "hello there");
        assert_eq!(got.attachments, m.attachments);
        assert!(got.edited_at.is_some());

        assert!(store.messages().delete_message(MessageId(10), t).unwrap());
        let got = store.messages().message(MessageId(10)).unwrap().unwrap();
        assert_eq!(got.content, "");
        assert!(got.attachments.is_empty());
        assert!(
            !store
                .messages()
                .edit_message(MessageId(10), "ghost", t)
                .unwrap(),
            "deleted stays deleted"
        );
        assert!(
            store
                .messages()
                .recent_messages(ChannelId(5), 10)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn recent_messages_are_the_latest_oldest_first() {
        let store = Store::open_in_memory().unwrap();
        let t = Utc::now();
        for i in 0..5 {
            store
                .messages()
                .insert_message(&sample(
                    100 + i,
                    7,
                    &format!("m{i}"),
                    t + chrono::Duration::seconds(i as i64),
                ))
                .unwrap();
        }
        store
            .messages()
            .insert_message(&sample(999, 8, "elsewhere", t))
            .unwrap();
        let got: Vec<String> = store
            .messages()
            .recent_messages(ChannelId(7), 3)
            .unwrap()
            .into_iter()
            .map(|m| m.content)
            .collect();
        assert_eq!(got, vec!["m2", "m3", "m4"]);
    }
}
