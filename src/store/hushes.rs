//! Hushes: "be quiet here until …", for one channel or a whole server.
//!
//! One row per channel (channel 0: the server), replaced when hushed again.
//! A row whose `until` has passed means nothing; it is swept when the same
//! place is hushed or unhushed again, so the table stays as small as the
//! number of places ever hushed.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{PeopleStore, Result, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, UserId};

/// One hush in force (or past, when read back by [`PeopleStore::hush`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hush {
    pub guild: GuildId,
    /// `None`: the whole server.
    pub channel: Option<ChannelId>,
    pub until: DateTime<Utc>,
    pub by: UserId,
    pub by_name: String,
    pub at: DateTime<Utc>,
}

fn place(channel: Option<ChannelId>) -> i64 {
    channel.map_or(0, ChannelId::to_sql)
}

impl PeopleStore {
    /// Hushes a channel (or the server), replacing an earlier hush there.
    pub(crate) fn set_hush(&self, h: &Hush) -> Result<()> {
        self.0.lock().execute(
            "INSERT OR REPLACE INTO hushes (guild_id, channel_id, until, by_user, by_name, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                h.guild.to_sql(),
                place(h.channel),
                to_ms(h.until),
                h.by.to_sql(),
                h.by_name,
                to_ms(h.at)
            ],
        )?;
        Ok(())
    }

    /// Ends a hush; `true` if there was one in force.
    pub(crate) fn clear_hush(
        &self,
        guild: GuildId,
        channel: Option<ChannelId>,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let was = self.hush(guild, channel, now)?.is_some();
        self.0.lock().execute(
            "DELETE FROM hushes WHERE guild_id = ?1 AND channel_id = ?2",
            params![guild.to_sql(), place(channel)],
        )?;
        Ok(was)
    }

    /// The hush in force on exactly this place (a channel, or `None`: the server).
    pub fn hush(
        &self,
        guild: GuildId,
        channel: Option<ChannelId>,
        now: DateTime<Utc>,
    ) -> Result<Option<Hush>> {
        Ok(self
            .0
            .lock()
            .prepare_cached(
                "SELECT until, by_user, by_name, at FROM hushes
                 WHERE guild_id = ?1 AND channel_id = ?2 AND until > ?3",
            )?
            .query_row(params![guild.to_sql(), place(channel), to_ms(now)], |r| {
                Ok(Hush {
                    guild,
                    channel,
                    until: from_ms(r.get(0)?),
                    by: UserId::from_sql(r.get(1)?),
                    by_name: r.get(2)?,
                    at: from_ms(r.get(3)?),
                })
            })
            .optional()?)
    }

    /// Every hush in force in a server, the server's own first.
    pub fn hushes(&self, guild: GuildId, now: DateTime<Utc>) -> Result<Vec<Hush>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT channel_id, until, by_user, by_name, at FROM hushes
             WHERE guild_id = ?1 AND until > ?2 ORDER BY channel_id",
        )?;
        let rows = stmt
            .query_map(params![guild.to_sql(), to_ms(now)], |r| {
                let channel: i64 = r.get(0)?;
                Ok(Hush {
                    guild,
                    channel: (channel != 0).then(|| ChannelId::from_sql(channel)),
                    until: from_ms(r.get(1)?),
                    by: UserId::from_sql(r.get(2)?),
                    by_name: r.get(3)?,
                    at: from_ms(r.get(4)?),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_hush_holds_until_its_end_and_can_be_lifted() {
        let store = Store::open_in_memory().unwrap();
        // Stored to the millisecond.
        let now = crate::store::from_ms(crate::store::to_ms(Utc::now()));
        let h = Hush {
            guild: GuildId(1),
            channel: Some(ChannelId(2)),
            until: now + chrono::Duration::hours(2),
            by: UserId(3),
            by_name: "ada".into(),
            at: now,
        };
        store.people().set_hush(&h).unwrap();
        assert_eq!(
            store
                .people()
                .hush(GuildId(1), Some(ChannelId(2)), now)
                .unwrap(),
            Some(h.clone())
        );
        assert_eq!(
            store.people().hush(GuildId(1), None, now).unwrap(),
            None,
            "the server is not hushed"
        );
        assert_eq!(
            store.people().hushes(GuildId(1), now).unwrap(),
            vec![h.clone()]
        );
        let later = now + chrono::Duration::hours(2);
        assert_eq!(
            store
                .people()
                .hush(GuildId(1), Some(ChannelId(2)), later)
                .unwrap(),
            None,
            "over at its end"
        );
        assert!(
            store.people().hushes(GuildId(9), now).unwrap().is_empty(),
            "another server sees none"
        );
        assert!(
            store
                .people()
                .clear_hush(GuildId(1), Some(ChannelId(2)), now)
                .unwrap()
        );
        assert!(
            !store
                .people()
                .clear_hush(GuildId(1), Some(ChannelId(2)), now)
                .unwrap()
        );
    }
}
