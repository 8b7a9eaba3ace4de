//! Each person's boundaries: what they asked the bot not to do with them.
//!
//! A boundary belongs to the person, not to a server: set once, it holds in
//! every server and DM the bot shares with them. Speech reads `NoPing`,
//! the reply path `NoUnprompted`, memory extraction `NoMemory`, voice
//! `NoVoice` (which replaced the per-server voice opt-out, migration 12)
//! and spoken answers `NoVoiceAnswers`.
//! Forget-me leaves them in place: they protect the person, they say
//! nothing about them.
//!
//! This file is the table; setting one is a person's change, passed on to
//! the bot's other processes first, so `Store::set_boundary` is the
//! ledger's (`people`), which writes here.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::{PeopleStore, Result, StoreError, from_ms, to_ms};
use crate::ids::UserId;

/// One thing a person asked the bot not to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Boundary {
    /// Never @mention me: my name is written instead, and replies to me do not ping.
    NoPing,
    /// Never join in after my messages unasked (no chime-ins on them).
    NoUnprompted,
    /// Never extract memories from my messages.
    NoMemory,
    /// Never record or transcribe my voice.
    NoVoice,
    /// Never answer aloud in a voice channel while I am in it.
    NoVoiceAnswers,
}

impl Boundary {
    pub(crate) const ALL: [Boundary; 5] = [
        Boundary::NoPing,
        Boundary::NoUnprompted,
        Boundary::NoMemory,
        Boundary::NoVoice,
        Boundary::NoVoiceAnswers,
    ];

    /// As stored.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Boundary::NoPing => "no_ping",
            Boundary::NoUnprompted => "no_unprompted",
            Boundary::NoMemory => "no_memory",
            Boundary::NoVoice => "no_voice",
            Boundary::NoVoiceAnswers => "no_voice_answers",
        }
    }

    /// As people type it (`/ambient me no-ping on`).
    pub(crate) fn word(self) -> &'static str {
        match self {
            Boundary::NoPing => "no-ping",
            Boundary::NoUnprompted => "no-unprompted",
            Boundary::NoMemory => "no-memory",
            Boundary::NoVoice => "no-voice",
            Boundary::NoVoiceAnswers => "no-voice-answers",
        }
    }

    /// What it means, in the person's words.
    pub(crate) fn meaning(self) -> &'static str {
        match self {
            Boundary::NoPing => "don't ping me",
            Boundary::NoUnprompted => "don't reply to me unprompted",
            Boundary::NoMemory => "don't remember me",
            Boundary::NoVoice => "don't transcribe me in voice",
            Boundary::NoVoiceAnswers => "don't answer aloud while I'm in voice",
        }
    }

    /// From its stored name or its typed word.
    pub fn parse(text: &str) -> Option<Boundary> {
        let t = text.trim().to_ascii_lowercase().replace('_', "-");
        Boundary::ALL.into_iter().find(|b| b.word() == t)
    }
}

impl PeopleStore {
    pub fn has_boundary(&self, user: UserId, boundary: Boundary) -> Result<bool> {
        Ok(self
            .0
            .lock()
            .prepare_cached("SELECT 1 FROM boundaries WHERE user_id = ?1 AND kind = ?2")?
            .query_row(params![user.to_sql(), boundary.as_str()], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// A person's boundaries, with when each was set.
    pub fn boundaries(&self, user: UserId) -> Result<Vec<(Boundary, DateTime<Utc>)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached("SELECT kind, at FROM boundaries WHERE user_id = ?1")?;
        let rows = stmt
            .query_map([user.to_sql()], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut found = rows
            .into_iter()
            .map(|(kind, at)| {
                Boundary::parse(&kind)
                    .map(|b| (b, from_ms(at)))
                    .ok_or_else(|| StoreError::Corrupt(format!("unknown boundary {kind:?}")))
            })
            .collect::<Result<Vec<_>>>()?;
        found.sort();
        Ok(found)
    }

    /// Of `users`, those who set `boundary` (one query, however many).
    pub(crate) fn with_boundary(
        &self,
        users: &[UserId],
        boundary: Boundary,
    ) -> Result<HashSet<UserId>> {
        let conn = self.0.lock();
        let mut stmt =
            conn.prepare_cached("SELECT 1 FROM boundaries WHERE user_id = ?1 AND kind = ?2")?;
        let mut found = HashSet::new();
        for u in users {
            if stmt
                .query_row(params![u.to_sql(), boundary.as_str()], |_| Ok(()))
                .optional()?
                .is_some()
            {
                found.insert(*u);
            }
        }
        Ok(found)
    }

    /// Everyone who set `boundary` (voice keeps this in memory: it is asked every 20 ms).
    pub(crate) fn everyone_with(&self, boundary: Boundary) -> Result<HashSet<UserId>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached("SELECT user_id FROM boundaries WHERE kind = ?1")?;
        let users = stmt
            .query_map([boundary.as_str()], |r| r.get::<_, i64>(0))?
            .map(|id| id.map(UserId::from_sql))
            .collect::<rusqlite::Result<_>>()?;
        Ok(users)
    }
}

/// Sets or lifts a boundary on `conn` (a transaction's, when applying a
/// ledger event with its cursor); `true` if that changed anything.
pub(super) fn write_boundary(
    conn: &Connection,
    user: UserId,
    boundary: Boundary,
    on: bool,
    at: DateTime<Utc>,
) -> rusqlite::Result<bool> {
    // ON CONFLICT, not OR IGNORE: only "already set" is ignored. OR IGNORE
    // also swallows a CHECK failure — a kind the table does not allow was
    // once dropped that way while the person was told "Done".
    let changed = if on {
        conn.execute(
            "INSERT INTO boundaries (user_id, kind, at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (user_id, kind) DO NOTHING",
            params![user.to_sql(), boundary.as_str(), to_ms(at)],
        )?
    } else {
        conn.execute(
            "DELETE FROM boundaries WHERE user_id = ?1 AND kind = ?2",
            params![user.to_sql(), boundary.as_str()],
        )?
    };
    Ok(changed == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_kind_the_table_does_not_allow_is_an_error_not_a_silent_done() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE boundaries (user_id INTEGER NOT NULL, \
             kind TEXT NOT NULL CHECK (kind IN ('no_ping')), at INTEGER NOT NULL, \
             PRIMARY KEY (user_id, kind))",
        )
        .unwrap();
        let now = Utc::now();
        assert!(write_boundary(&conn, UserId(1), Boundary::NoPing, true, now).unwrap());
        assert!(
            !write_boundary(&conn, UserId(1), Boundary::NoPing, true, now).unwrap(),
            "set twice: nothing changed, no error"
        );
        let refused = write_boundary(&conn, UserId(1), Boundary::NoVoiceAnswers, true, now);
        assert!(refused.is_err(), "{refused:?}");
    }

    #[test]
    fn a_boundary_is_the_persons_everywhere_and_can_be_lifted() {
        let store = Store::open_in_memory().unwrap();
        let (ada, bob) = (UserId(1), UserId(2));
        let now = Utc::now();
        assert!(
            store
                .people()
                .set_boundary(ada, Boundary::NoPing, true, now)
                .unwrap()
        );
        assert!(
            !store
                .people()
                .set_boundary(ada, Boundary::NoPing, true, now)
                .unwrap(),
            "already set"
        );
        store
            .people()
            .set_boundary(ada, Boundary::NoMemory, true, now)
            .unwrap();
        assert!(store.people().has_boundary(ada, Boundary::NoPing).unwrap());
        assert!(!store.people().has_boundary(bob, Boundary::NoPing).unwrap());
        let kinds: Vec<Boundary> = store
            .people()
            .boundaries(ada)
            .unwrap()
            .into_iter()
            .map(|(b, _)| b)
            .collect();
        assert_eq!(kinds, vec![Boundary::NoPing, Boundary::NoMemory]);
        assert_eq!(
            store
                .people()
                .with_boundary(&[ada, bob], Boundary::NoPing)
                .unwrap(),
            HashSet::from([ada])
        );
        assert!(
            store
                .people()
                .set_boundary(ada, Boundary::NoPing, false, now)
                .unwrap()
        );
        assert!(!store.people().has_boundary(ada, Boundary::NoPing).unwrap());
        assert_eq!(
            Boundary::parse("no_unprompted"),
            Some(Boundary::NoUnprompted)
        );
        assert_eq!(Boundary::parse(" No-Voice "), Some(Boundary::NoVoice));
        assert_eq!(Boundary::parse("no-fun"), None);
    }
}
