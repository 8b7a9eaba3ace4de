//! Direct-message pairing (`discord.dms` `pairing`): the codes handed to
//! people who DM the bot unknown, and the people an owner approved.
//!
//! A person has at most one code at a time; approving it removes the code
//! and keeps the person, so their direct messages are answered from then on.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use super::{PeopleStore, Result, from_ms, to_ms};
use crate::ids::UserId;

/// A code handed to someone who asked to talk in direct messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairingCode {
    pub code: String,
    pub user: UserId,
    pub user_name: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// What became of a code an owner gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pairing {
    /// The person is approved now.
    Approved(PairingCode),
    /// The code was real but ran out at this time.
    Expired(PairingCode),
    /// No such code.
    Unknown,
}

impl PeopleStore {
    /// Keeps `code` as `user`'s, replacing any earlier code of theirs.
    pub(crate) fn save_pairing_code(&self, c: &PairingCode) -> Result<()> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "DELETE FROM dm_pairing_codes WHERE user_id = ?1",
            params![c.user.to_sql()],
        )?;
        tx.execute(
            "INSERT INTO dm_pairing_codes (code, user_id, user_name, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                c.code,
                c.user.to_sql(),
                c.user_name,
                to_ms(c.created_at),
                to_ms(c.expires_at)
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The code `user` holds, expired or not.
    pub fn pairing_code_of(&self, user: UserId) -> Result<Option<PairingCode>> {
        Ok(self
            .0
            .lock()
            .prepare_cached(
                "SELECT code, user_id, user_name, created_at, expires_at
                 FROM dm_pairing_codes WHERE user_id = ?1",
            )?
            .query_row(params![user.to_sql()], code_row)
            .optional()?)
    }

    /// An owner's `code`: approves its person if it has not run out, in one
    /// transaction (the code is used up either way it is found).
    pub(crate) fn approve_pairing(
        &self,
        code: &str,
        by: UserId,
        now: DateTime<Utc>,
    ) -> Result<Pairing> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let found = tx
            .query_row(
                "SELECT code, user_id, user_name, created_at, expires_at
                 FROM dm_pairing_codes WHERE code = ?1",
                params![code],
                code_row,
            )
            .optional()?;
        let Some(found) = found else {
            return Ok(Pairing::Unknown);
        };
        if found.expires_at <= now {
            return Ok(Pairing::Expired(found));
        }
        tx.execute(
            "DELETE FROM dm_pairing_codes WHERE code = ?1",
            params![code],
        )?;
        tx.execute(
            "INSERT OR REPLACE INTO dm_paired (user_id, approved_by, approved_at)
             VALUES (?1, ?2, ?3)",
            params![found.user.to_sql(), by.to_sql(), to_ms(now)],
        )?;
        tx.commit()?;
        Ok(Pairing::Approved(found))
    }

    /// Whether an owner approved `user`'s direct messages.
    pub fn is_paired(&self, user: UserId) -> Result<bool> {
        Ok(self
            .0
            .lock()
            .prepare_cached("SELECT 1 FROM dm_paired WHERE user_id = ?1")?
            .query_row(params![user.to_sql()], |_| Ok(()))
            .optional()?
            .is_some())
    }
}

fn code_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PairingCode> {
    Ok(PairingCode {
        code: r.get(0)?,
        user: UserId::from_sql(r.get(1)?),
        user_name: r.get(2)?,
        created_at: from_ms(r.get(3)?),
        expires_at: from_ms(r.get(4)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_code_approves_its_person_once_and_an_expired_one_does_not() {
        let store = Store::open_in_memory().unwrap();
        let t0 = DateTime::from_timestamp(1_750_000_000, 0).unwrap();
        let code = |c: &str, user: u64| PairingCode {
            code: c.into(),
            user: UserId(user),
            user_name: "gus".into(),
            created_at: t0,
            expires_at: t0 + chrono::Duration::hours(1),
        };
        store
            .people()
            .save_pairing_code(&code("AAAAAA", 5))
            .unwrap();
        store
            .people()
            .save_pairing_code(&code("BBBBBB", 5))
            .unwrap();
        assert_eq!(
            store
                .people()
                .approve_pairing("AAAAAA", UserId(1), t0)
                .unwrap(),
            Pairing::Unknown,
            "replaced"
        );
        assert!(!store.people().is_paired(UserId(5)).unwrap());
        let late = t0 + chrono::Duration::hours(2);
        assert!(matches!(
            store
                .people()
                .approve_pairing("BBBBBB", UserId(1), late)
                .unwrap(),
            Pairing::Expired(_)
        ));
        assert!(!store.people().is_paired(UserId(5)).unwrap());
        assert!(matches!(
            store
                .people()
                .approve_pairing("BBBBBB", UserId(1), t0)
                .unwrap(),
            Pairing::Approved(_)
        ));
        assert!(store.people().is_paired(UserId(5)).unwrap());
        assert_eq!(
            store.people().pairing_code_of(UserId(5)).unwrap(),
            None,
            "used up"
        );
    }

    #[test]
    fn forget_me_takes_a_pending_code_and_keeps_an_approval() {
        let store = Store::open_in_memory().unwrap();
        let t0 = DateTime::from_timestamp(1_750_000_000, 0).unwrap();
        let code = PairingCode {
            code: "CCCCCC".into(),
            user: UserId(6),
            user_name: "gus".into(),
            created_at: t0,
            expires_at: t0 + chrono::Duration::hours(1),
        };
        store.people().save_pairing_code(&code).unwrap();
        store.people().claim_access_notice(UserId(6), t0).unwrap();
        store
            .people()
            .save_pairing_code(&PairingCode {
                code: "DDDDDD".into(),
                user: UserId(7),
                ..code
            })
            .unwrap();
        store
            .people()
            .approve_pairing("DDDDDD", UserId(1), t0)
            .unwrap();
        store.people().forget_person(UserId(6), true, t0).unwrap();
        store.people().forget_person(UserId(7), true, t0).unwrap();
        assert_eq!(store.people().pairing_code_of(UserId(6)).unwrap(), None);
        assert_eq!(store.people().access_notice_at(UserId(6)).unwrap(), None);
        assert!(store.people().is_paired(UserId(7)).unwrap());
    }
}
