//! Names of guilds and channels, so prompts, the journal and the CLI can say
//! `#memes` instead of a snowflake. Updated whenever a front end sees them.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::{MessageStore, Result, to_ms};
use crate::ids::{ChannelId, GuildId};

impl MessageStore {
    /// Asked for every message seen (a rename shows on the next one), so
    /// prepared once; an unchanged name writes nothing.
    pub fn upsert_guild(&self, id: GuildId, name: &str, at: DateTime<Utc>) -> Result<()> {
        upsert_guild(&self.0.lock(), id, name, at)
    }

    pub fn upsert_channel(
        &self,
        id: ChannelId,
        guild: Option<GuildId>,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        upsert_channel(&self.0.lock(), id, guild, name, at)
    }

    pub fn channel_name(&self, id: ChannelId) -> Result<Option<String>> {
        Ok(self
            .0
            .read()
            .prepare_cached("SELECT name FROM channels WHERE id = ?1")?
            .query_row([id.to_sql()], |r| r.get(0))
            .optional()?)
    }

    /// The guild a known channel belongs to: `None` if the channel is unknown,
    /// `Some(None)` for a DM channel.
    pub fn channel_guild(&self, id: ChannelId) -> Result<Option<Option<GuildId>>> {
        Ok(self
            .0
            .lock()
            .query_row(
                "SELECT guild_id FROM channels WHERE id = ?1",
                [id.to_sql()],
                |r| r.get::<_, Option<i64>>(0),
            )
            .optional()?
            .map(|g| g.map(GuildId::from_sql)))
    }

    /// Asked for every answer's prompt, so prepared once.
    pub fn guild_name(&self, id: GuildId) -> Result<Option<String>> {
        Ok(self
            .0
            .read()
            .prepare_cached("SELECT name FROM guilds WHERE id = ?1")?
            .query_row([id.to_sql()], |r| r.get(0))
            .optional()?)
    }

    /// Every guild the bot has seen and is still in, by id: a server that
    /// removed the bot (`departed`) gets no ticks, garden or feeds while
    /// its data waits out the grace period.
    pub fn known_guilds(&self) -> Result<Vec<(GuildId, String)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT id, name FROM guilds
             WHERE id NOT IN (SELECT guild_id FROM departed_guilds) ORDER BY id",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((GuildId::from_sql(r.get(0)?), r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Every channel the bot has seen in `guild`.
    pub fn guild_channels(&self, guild: GuildId) -> Result<Vec<ChannelId>> {
        let conn = self.0.lock();
        let mut stmt =
            conn.prepare_cached("SELECT id FROM channels WHERE guild_id = ?1 ORDER BY id")?;
        let rows = stmt
            .query_map([guild.to_sql()], |r| Ok(ChannelId::from_sql(r.get(0)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// The channel named `name` in `guild`, if the bot has seen one.
    pub(crate) fn channel_by_name(&self, guild: GuildId, name: &str) -> Result<Option<ChannelId>> {
        Ok(self
            .0
            .lock()
            .query_row(
                "SELECT id FROM channels WHERE guild_id = ?1 AND name = ?2",
                params![guild.to_sql(), name],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .map(ChannelId::from_sql))
    }
}

/// A guild's name, on a locked connection (the senses write it with the message).
pub(super) fn upsert_guild(
    conn: &Connection,
    id: GuildId,
    name: &str,
    at: DateTime<Utc>,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO guilds (id, name, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at
         WHERE guilds.name <> excluded.name",
    )?
    .execute(params![id.to_sql(), name, to_ms(at)])?;
    Ok(())
}

/// A channel's name, on a locked connection.
pub(super) fn upsert_channel(
    conn: &Connection,
    id: ChannelId,
    guild: Option<GuildId>,
    name: &str,
    at: DateTime<Utc>,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO channels (id, guild_id, name, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, guild_id = excluded.guild_id,
                                        updated_at = excluded.updated_at
         WHERE channels.name <> excluded.name",
    )?
    .execute(params![
        id.to_sql(),
        guild.map(GuildId::to_sql),
        name,
        to_ms(at)
    ])?;
    Ok(())
}
