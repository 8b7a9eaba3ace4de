//! Persistence for voice: who opted out of being transcribed, and when each
//! transcribed utterance began and ended (its row in `messages` holds the text).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{Result, Store, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};

impl Store {
    /// Records an opt-out; `false` if it was already there.
    pub fn voice_opt_out(&self, guild: GuildId, user: UserId, at: DateTime<Utc>) -> Result<bool> {
        Ok(self.lock().execute(
            "INSERT OR IGNORE INTO voice_optout (guild_id, user_id, at) VALUES (?1, ?2, ?3)",
            params![guild.to_sql(), user.to_sql(), to_ms(at)],
        )? == 1)
    }

    pub fn voice_opt_in(&self, guild: GuildId, user: UserId) -> Result<bool> {
        Ok(self.lock().execute(
            "DELETE FROM voice_optout WHERE guild_id = ?1 AND user_id = ?2",
            params![guild.to_sql(), user.to_sql()],
        )? == 1)
    }

    pub fn voice_opted_out(&self, guild: GuildId, user: UserId) -> Result<bool> {
        Ok(self
            .lock()
            .query_row(
                "SELECT 1 FROM voice_optout WHERE guild_id = ?1 AND user_id = ?2",
                params![guild.to_sql(), user.to_sql()],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Everyone in `guild` who opted out (a listener keeps this in memory: it is asked every 20 ms).
    pub fn voice_opted_out_users(&self, guild: GuildId) -> Result<HashSet<UserId>> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached("SELECT user_id FROM voice_optout WHERE guild_id = ?1")?;
        let users = stmt
            .query_map([guild.to_sql()], |r| r.get::<_, i64>(0))?
            .map(|id| id.map(UserId::from_sql))
            .collect::<rusqlite::Result<_>>()?;
        Ok(users)
    }

    pub fn record_utterance(
        &self,
        message: MessageId,
        voice: ChannelId,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<()> {
        self.lock().execute(
            "INSERT OR REPLACE INTO voice_utterances (message_id, voice_channel_id, started_at, ended_at) VALUES (?1, ?2, ?3, ?4)",
            params![message.to_sql(), voice.to_sql(), to_ms(start), to_ms(end)],
        )?;
        Ok(())
    }

    /// (voice channel, start, end) of a transcribed message.
    pub fn utterance(
        &self,
        message: MessageId,
    ) -> Result<Option<(ChannelId, DateTime<Utc>, DateTime<Utc>)>> {
        Ok(self
            .lock()
            .query_row(
                "SELECT voice_channel_id, started_at, ended_at FROM voice_utterances WHERE message_id = ?1",
                [message.to_sql()],
                |r| Ok((ChannelId::from_sql(r.get(0)?), from_ms(r.get(1)?), from_ms(r.get(2)?))),
            )
            .optional()?)
    }
}
