//! Persistence for the initiative engine: pending thoughts, per-guild state
//! (when the model was last consulted), and the post outbox (a post is
//! written here before it is sent, so a crash cannot lose track of it).

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, params};

use super::{InitiativeStore, Result, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::vocab::pending::{MediaDirective, PendingThought};

const PENDING: &str =
    "guild_id, draft, channel_id, revision, created_at, updated_at, expires_at, last_reason, media";

fn pending_from_row(r: &Row<'_>) -> rusqlite::Result<PendingThought> {
    let media: Option<String> = r.get(8)?;
    Ok(PendingThought {
        guild: GuildId::from_sql(r.get(0)?),
        draft: r.get(1)?,
        channel: r.get::<_, Option<i64>>(2)?.map(ChannelId::from_sql),
        revision: r.get(3)?,
        created_at: from_ms(r.get(4)?),
        updated_at: from_ms(r.get(5)?),
        expires_at: from_ms(r.get(6)?),
        last_reason: r.get(7)?,
        media: media.and_then(|m| serde_json::from_str::<MediaDirective>(&m).ok()),
    })
}

#[derive(Clone, Debug, PartialEq)]
pub struct OutboxPost {
    pub nonce: String,
    pub guild: GuildId,
    pub channel: ChannelId,
    pub text: String,
    pub created_at: DateTime<Utc>,
    pub message: Option<MessageId>,
}

impl InitiativeStore {
    pub fn pending_thought(&self, guild: GuildId) -> Result<Option<PendingThought>> {
        Ok(self
            .0
            .lock()
            .query_row(
                &format!("SELECT {PENDING} FROM pending_thoughts WHERE guild_id = ?1"),
                [guild.to_sql()],
                pending_from_row,
            )
            .optional()?)
    }

    pub(crate) fn pending_thoughts(&self) -> Result<Vec<PendingThought>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {PENDING} FROM pending_thoughts ORDER BY guild_id"
        ))?;
        let rows = stmt
            .query_map([], pending_from_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub fn save_pending_thought(&self, p: &PendingThought) -> Result<()> {
        let media = p
            .media
            .as_ref()
            .map(|m| serde_json::to_string(m).unwrap_or_default());
        self.0.lock().execute(
            &format!(
                "INSERT OR REPLACE INTO pending_thoughts ({PENDING}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ),
            params![
                p.guild.to_sql(),
                p.draft,
                p.channel.map(ChannelId::to_sql),
                p.revision,
                to_ms(p.created_at),
                to_ms(p.updated_at),
                to_ms(p.expires_at),
                p.last_reason,
                media,
            ],
        )?;
        Ok(())
    }

    pub(crate) fn delete_pending_thought(&self, guild: GuildId) -> Result<bool> {
        Ok(self.0.lock().execute(
            "DELETE FROM pending_thoughts WHERE guild_id = ?1",
            [guild.to_sql()],
        )? > 0)
    }

    pub fn last_considered(&self, guild: GuildId) -> Result<Option<DateTime<Utc>>> {
        Ok(self
            .0
            .lock()
            .query_row(
                "SELECT last_considered_at FROM initiative_state WHERE guild_id = ?1",
                [guild.to_sql()],
                |r| r.get::<_, Option<i64>>(0),
            )
            .optional()?
            .flatten()
            .map(from_ms))
    }

    pub(crate) fn set_last_considered(&self, guild: GuildId, at: DateTime<Utc>) -> Result<()> {
        self.0.lock().execute(
            "INSERT INTO initiative_state (guild_id, last_considered_at) VALUES (?1, ?2)
             ON CONFLICT (guild_id) DO UPDATE SET last_considered_at = excluded.last_considered_at",
            params![guild.to_sql(), to_ms(at)],
        )?;
        Ok(())
    }

    /// Records a post before it is sent; `false` if this nonce is already there.
    pub fn outbox_insert(
        &self,
        nonce: &str,
        guild: GuildId,
        channel: ChannelId,
        text: &str,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        Ok(self.0.lock().execute(
            "INSERT OR IGNORE INTO initiative_outbox (nonce, guild_id, channel_id, text, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![nonce, guild.to_sql(), channel.to_sql(), text, to_ms(at)],
        )? == 1)
    }

    /// A post Discord took: its outbox row marked sent with the message's
    /// id and its guild's held thought (what was posted) deleted, in one
    /// transaction. Apart, a crash between the two left the thought held
    /// while the row said "sent": the next start found nothing to settle,
    /// and the model was shown the thought again and posted it twice.
    pub fn outbox_settle(&self, nonce: &str, guild: GuildId, message: MessageId) -> Result<()> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE initiative_outbox SET message_id = ?2 WHERE nonce = ?1",
            params![nonce, message.to_sql()],
        )?;
        tx.execute(
            "DELETE FROM pending_thoughts WHERE guild_id = ?1",
            [guild.to_sql()],
        )?;
        tx.commit()?;
        Ok(())
    }

    pub(crate) fn outbox_delete(&self, nonce: &str) -> Result<()> {
        self.0
            .lock()
            .execute("DELETE FROM initiative_outbox WHERE nonce = ?1", [nonce])?;
        Ok(())
    }

    /// Posts recorded but never confirmed sent (a crash between the two).
    pub fn outbox_unsent(&self) -> Result<Vec<OutboxPost>> {
        self.unsent_where("1", [])
    }

    /// [`InitiativeStore::outbox_unsent`](Self::outbox_unsent) for one guild: asked before each of its
    /// looks, since a post whose fate is unknown must be settled before the
    /// model is shown the thought it carried.
    pub fn outbox_unsent_in(&self, guild: GuildId) -> Result<Vec<OutboxPost>> {
        self.unsent_where("guild_id = ?1", [guild.to_sql()])
    }

    fn unsent_where(&self, filter: &str, args: impl rusqlite::Params) -> Result<Vec<OutboxPost>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT nonce, guild_id, channel_id, text, created_at, message_id FROM initiative_outbox
             WHERE message_id IS NULL AND {filter} ORDER BY created_at"
        ))?;
        let rows = stmt
            .query_map(args, |r| {
                Ok(OutboxPost {
                    nonce: r.get(0)?,
                    guild: GuildId::from_sql(r.get(1)?),
                    channel: ChannelId::from_sql(r.get(2)?),
                    text: r.get(3)?,
                    created_at: from_ms(r.get(4)?),
                    message: r.get::<_, Option<i64>>(5)?.map(MessageId::from_sql),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}
