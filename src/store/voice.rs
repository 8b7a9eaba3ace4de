//! Persistence for voice: who opted out of being transcribed (a person's
//! boundary, see `boundaries`), and when each transcribed utterance began and
//! ended (its row in `messages` holds the text).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::boundaries::Boundary;
use super::{Result, Store, from_ms, to_ms};
use crate::ids::{ChannelId, MessageId, UserId};

impl Store {
    /// Who never wants to be transcribed (`/voice optout`, `/ambient me no-voice`):
    /// a listener keeps this in memory, as it is asked every 20 ms.
    pub fn voice_opted_out_users(&self) -> Result<HashSet<UserId>> {
        self.everyone_with(Boundary::NoVoice)
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
    #[allow(clippy::type_complexity)] // a row's three columns, named in the doc
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
