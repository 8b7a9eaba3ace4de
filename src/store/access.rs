//! Who was told they may not talk to the bot, and when.
//!
//! A person refused by `permissions.roles` or `discord.dms` is told why at
//! most once a day, wherever they ask; the time is kept here so a restart
//! does not tell them again. One row per person, replaced when told again.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{PeopleStore, Result, from_ms, to_ms};
use crate::ids::UserId;

/// How long after one explanation the next may be given.
pub(crate) const NOTICE_EVERY: chrono::Duration = chrono::Duration::days(1);

impl PeopleStore {
    /// Records that `user` is told now unless they were told within
    /// [`NOTICE_EVERY`]; whether to tell them. One statement, so two
    /// messages handled at once cannot both claim it.
    pub(crate) fn claim_access_notice(&self, user: UserId, now: DateTime<Utc>) -> Result<bool> {
        let changed = self.0.lock().execute(
            "INSERT INTO access_notices (user_id, told_at) VALUES (?1, ?2)
             ON CONFLICT (user_id) DO UPDATE SET told_at = excluded.told_at
             WHERE told_at <= ?3",
            params![user.to_sql(), to_ms(now), to_ms(now - NOTICE_EVERY)],
        )?;
        Ok(changed == 1)
    }

    /// When `user` was last told they may not talk to the bot.
    pub fn access_notice_at(&self, user: UserId) -> Result<Option<DateTime<Utc>>> {
        Ok(self
            .0
            .lock()
            .prepare_cached("SELECT told_at FROM access_notices WHERE user_id = ?1")?
            .query_row(params![user.to_sql()], |r| r.get::<_, i64>(0))
            .optional()?
            .map(from_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_person_is_told_once_a_day() {
        let store = Store::open_in_memory().unwrap();
        let t0 = DateTime::from_timestamp(1_750_000_000, 0).unwrap();
        let ada = UserId(5);
        assert!(store.people().claim_access_notice(ada, t0).unwrap());
        assert!(
            !store
                .people()
                .claim_access_notice(ada, t0 + chrono::Duration::hours(23))
                .unwrap()
        );
        assert!(
            store.people().claim_access_notice(UserId(6), t0).unwrap(),
            "per person"
        );
        assert_eq!(store.people().access_notice_at(ada).unwrap(), Some(t0));
        let next_day = t0 + NOTICE_EVERY;
        assert!(store.people().claim_access_notice(ada, next_day).unwrap());
        assert_eq!(
            store.people().access_notice_at(ada).unwrap(),
            Some(next_day)
        );
    }
}
