//! Persistence for voice: who opted out of being transcribed (a person's
//! boundary, see `boundaries`), when each transcribed utterance began and
//! ended (its row in `messages` holds the text), and how much each server
//! was answered aloud today (`voice.speech.maxSecondsPerDay`).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::boundaries::Boundary;
use super::{Result, VoiceStore, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};

impl VoiceStore {
    /// Milliseconds of spoken answers played in `guild` on `day` (UTC).
    pub(crate) fn speech_spent(&self, guild: GuildId, day: &str) -> Result<u64> {
        let spent: Option<i64> = self
            .0
            .lock()
            .prepare_cached(
                "SELECT spent_ms FROM voice_speech_spent WHERE guild_id = ?1 AND day = ?2",
            )?
            .query_row(params![guild.to_sql(), day], |r| r.get(0))
            .optional()?;
        Ok(spent.unwrap_or(0).max(0) as u64)
    }

    /// Takes up to `want_ms` of `guild`'s `cap_ms` for `day` and returns
    /// what was granted (0 when the day's allowance is spent). Read and
    /// written under one hold of the connection: two answers at once
    /// cannot both take the last seconds.
    pub(crate) fn speech_take(
        &self,
        guild: GuildId,
        day: &str,
        want_ms: u64,
        cap_ms: u64,
    ) -> Result<u64> {
        let conn = self.0.lock();
        let spent: u64 = conn
            .prepare_cached(
                "SELECT spent_ms FROM voice_speech_spent WHERE guild_id = ?1 AND day = ?2",
            )?
            .query_row(params![guild.to_sql(), day], |r| r.get::<_, i64>(0))
            .optional()?
            .unwrap_or(0)
            .max(0) as u64;
        let granted = want_ms.min(cap_ms.saturating_sub(spent));
        if granted > 0 {
            // One row a server: another day's count is replaced, not kept.
            conn.execute(
                "INSERT OR REPLACE INTO voice_speech_spent (guild_id, day, spent_ms) VALUES (?1, ?2, ?3)",
                params![guild.to_sql(), day, (spent + granted) as i64],
            )?;
        }
        Ok(granted)
    }

    /// Who never wants to be transcribed (`/voice optout`, `/ambient me no-voice`):
    /// a listener keeps this in memory, as it is asked every 20 ms.
    pub fn voice_opted_out_users(&self) -> Result<HashSet<UserId>> {
        self.0.people().everyone_with(Boundary::NoVoice)
    }

    pub(crate) fn record_utterance(
        &self,
        message: MessageId,
        voice: ChannelId,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<()> {
        self.0.lock().execute(
            "INSERT OR REPLACE INTO voice_utterances (message_id, voice_channel_id, started_at, ended_at) VALUES (?1, ?2, ?3, ?4)",
            params![message.to_sql(), voice.to_sql(), to_ms(start), to_ms(end)],
        )?;
        Ok(())
    }

    /// (voice channel, start, end) of a transcribed message.
    #[allow(clippy::type_complexity)] // a row's three columns, named in the doc
    pub fn utterance(
        &self,
        message: MessageId,
    ) -> Result<Option<(ChannelId, DateTime<Utc>, DateTime<Utc>)>> {
        Ok(self
            .0.lock()
            .query_row(
                "SELECT voice_channel_id, started_at, ended_at FROM voice_utterances WHERE message_id = ?1",
                [message.to_sql()],
                |r| Ok((ChannelId::from_sql(r.get(0)?), from_ms(r.get(1)?), from_ms(r.get(2)?))),
            )
            .optional()?)
    }
}
