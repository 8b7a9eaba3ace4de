//! Servers that removed the bot, and when.
//!
//! Discord says a server removed the bot (kicked, banned, or the bot left)
//! with a GUILD_DELETE that has no `unavailable` field; one with
//! `unavailable: true` is an outage and is never recorded here. A recorded
//! server keeps its data for `storage.retention.departedGuildDays` in case
//! it invites the bot back (its GUILD_CREATE takes the row away and nothing
//! else); after that its rows go exactly as `ambient guild remove` takes
//! them ([`super::guild_io`]) — the tables that grow with use in short
//! batches first, each batch checking that the server is still departed,
//! so a year of a busy server never holds the writer for long. The row is
//! in the store, not in memory, so a bot restarted after the grace period
//! still removes the data; it is one of the guild's tables
//! ([`super::partition::TABLES`]), so it goes with them.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::guild_io::{End, GuildIoError, Removal};
use super::retention::Pace;
use super::{GuildStore, Result, from_ms, to_ms};
use crate::ids::GuildId;

/// A server the bot was removed from and whose data is still here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Departure {
    pub guild: GuildId,
    /// The name the bot last saw, if it ever saw one.
    pub name: Option<String>,
    /// When Discord said the bot was removed.
    pub at: DateTime<Utc>,
}

impl Departure {
    /// "Name (id)", or the id alone for a server never named.
    pub(crate) fn shown(&self) -> String {
        match &self.name {
            Some(n) => format!("{n} ({})", self.guild),
            None => self.guild.to_string(),
        }
    }
}

/// A WHERE term keeping the rows of no server or of one the bot is still
/// in: a departed server's due tasks, schedules and garden work wait (for
/// its return, or go with its data).
pub(crate) const STILL_THERE: &str =
    "(guild_id IS NULL OR guild_id NOT IN (SELECT guild_id FROM departed_guilds))";

/// The day (UTC) the data of a server that removed the bot at `at` goes,
/// after `days` of grace: as the journal and `ambient status` say it.
pub(crate) fn removal_date(at: DateTime<Utc>, days: u32) -> String {
    (at + chrono::Duration::days(i64::from(days)))
        .format("%Y-%m-%d")
        .to_string()
}

impl GuildStore {
    /// Records that `guild` removed the bot at `at`; `false` when it was
    /// already recorded (a GUILD_DELETE delivered again keeps the first time,
    /// so a replay cannot push the removal back).
    pub(crate) fn record_departure(&self, guild: GuildId, at: DateTime<Utc>) -> Result<bool> {
        let added = self.0.lock().execute(
            "INSERT INTO departed_guilds (guild_id, departed_at) VALUES (?1, ?2)
             ON CONFLICT (guild_id) DO NOTHING",
            params![guild.to_sql(), to_ms(at)],
        )?;
        Ok(added > 0)
    }

    /// The bot is in `guild` again: its departure is cancelled. Returns
    /// when it had departed, if it had.
    pub(crate) fn cancel_departure(&self, guild: GuildId) -> Result<Option<DateTime<Utc>>> {
        let at: Option<i64> = self
            .0
            .lock()
            .query_row(
                "DELETE FROM departed_guilds WHERE guild_id = ?1 RETURNING departed_at",
                [guild.to_sql()],
                |r| r.get(0),
            )
            .optional()?;
        Ok(at.map(from_ms))
    }

    /// Every departed server whose data is still here, the earliest first.
    pub fn departures(&self) -> Result<Vec<Departure>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT d.guild_id, g.name, d.departed_at
             FROM departed_guilds d LEFT JOIN guilds g ON g.id = d.guild_id
             ORDER BY d.departed_at, d.guild_id",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Departure {
                    guild: GuildId::from_sql(r.get(0)?),
                    name: r.get(1)?,
                    at: from_ms(r.get(2)?),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Removes `guild`'s rows as [`GuildStore::remove_guild`] does, if it departed
    /// at or before `departed_by` and has not come back — the bulk tables in
    /// batches paced by `pace`, then the rest and the departure in one
    /// transaction ([`GuildStore::remove_paced`]). That it is still departed and
    /// due is checked in every one of those transactions, so a server that
    /// invited the bot back meanwhile keeps what had not gone yet. `go_on`
    /// is asked between them. None: nothing was removed.
    pub(crate) fn remove_departed(
        &self,
        guild: GuildId,
        departed_by: DateTime<Utc>,
        pace: Pace,
        go_on: &dyn Fn() -> bool,
    ) -> std::result::Result<Option<Removal>, GuildIoError> {
        let due = |conn: &Connection| -> std::result::Result<bool, GuildIoError> {
            Ok(conn
                .query_row(
                    "SELECT 1 FROM departed_guilds WHERE guild_id = ?1 AND departed_at <= ?2",
                    params![guild.to_sql(), to_ms(departed_by)],
                    |_| Ok(()),
                )
                .optional()?
                .is_some())
        };
        let removal = self.remove_paced(guild, pace, &due, go_on)?;
        let nothing = removal.end != End::Complete && removal.counts.is_empty();
        Ok((!nothing).then_some(removal))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use chrono::Duration;
    use std::cell::{Cell, RefCell};

    /// Guilds 7 and 8, each with a name, a channel, a message and a fact.
    fn store() -> Store {
        let s = Store::open_in_memory().unwrap();
        s.lock()
            .execute_batch(
                "INSERT INTO guilds (id, name, updated_at) VALUES (7, 'Seven', 0), (8, 'Eight', 0);
                 INSERT INTO channels (id, guild_id, name, updated_at) VALUES (70, 7, 'general', 0), (80, 8, 'eight', 0);
                 INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at)
                     VALUES (700, 7, 70, 1, 'ada', 'seven says hi', 1), (800, 8, 80, 1, 'ada', 'eight says hi', 1);
                 INSERT INTO facts (id, guild_id, scope, kind, importance, content, created_at, updated_at, last_seen_at, tags)
                     VALUES ('f7', 7, 'guild', 'fact', 'high', 'Seven plays chess', 0, 0, 0, 'g7 active'),
                            ('f8', 8, 'guild', 'fact', 'high', 'Eight plays go', 0, 0, 0, 'g8 active');",
            )
            .unwrap();
        s
    }

    fn at(days: i64) -> DateTime<Utc> {
        from_ms(1_700_000_000_000) + Duration::days(days)
    }

    #[test]
    fn the_removal_date_is_the_departure_plus_the_grace_in_utc() {
        let at = DateTime::parse_from_rfc3339("2026-01-30T23:30:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(removal_date(at, 30), "2026-03-01");
        assert_eq!(removal_date(at, 0), "2026-01-30");
    }

    #[test]
    fn a_departure_is_kept_once_at_its_first_time_and_listed_with_its_name() {
        let s = store();
        assert!(s.guilds().record_departure(GuildId(7), at(0)).unwrap());
        assert!(
            !s.guilds().record_departure(GuildId(7), at(5)).unwrap(),
            "delivered again"
        );
        assert!(s.guilds().record_departure(GuildId(9), at(1)).unwrap());
        let shown: Vec<(String, DateTime<Utc>)> = s
            .guilds()
            .departures()
            .unwrap()
            .iter()
            .map(|d| (d.shown(), d.at))
            .collect();
        assert_eq!(
            shown,
            vec![("Seven (7)".to_string(), at(0)), ("9".to_string(), at(1))]
        );
    }

    #[test]
    fn only_a_departure_old_enough_is_removed_with_all_its_rows() {
        let s = store();
        s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        let before = s.guilds().guild_row_counts(GuildId(7)).unwrap();
        assert_eq!(
            s.guilds()
                .remove_departed(GuildId(7), at(-1), Pace::default(), &|| true)
                .unwrap(),
            None,
            "departed after the cutoff"
        );
        assert_eq!(s.guilds().guild_row_counts(GuildId(7)).unwrap(), before);
        assert_eq!(
            s.guilds()
                .remove_departed(GuildId(8), at(1), Pace::default(), &|| true)
                .unwrap(),
            None,
            "never left"
        );
        let removed = s
            .guilds()
            .remove_departed(GuildId(7), at(0), Pace::default(), &|| true)
            .unwrap()
            .unwrap();
        assert!(
            removed.counts.contains(&("departed_guilds", 1)),
            "{removed:?}"
        );
        assert!(removed.counts.contains(&("facts", 1)), "{removed:?}");
        assert_eq!(removed.end, End::Complete);
        assert!(s.guilds().guild_row_counts(GuildId(7)).unwrap().is_empty());
        assert!(s.guilds().departures().unwrap().is_empty());
        assert_eq!(s.guilds().guild_row_counts(GuildId(8)).unwrap().len(), 4);
    }

    #[test]
    fn a_departed_server_is_not_among_the_known_ones_until_it_is_back() {
        let s = store();
        s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        let known = |s: &Store| -> Vec<u64> {
            s.messages()
                .known_guilds()
                .unwrap()
                .iter()
                .map(|(g, _)| g.get())
                .collect()
        };
        assert_eq!(known(&s), vec![8]);
        s.guilds().cancel_departure(GuildId(7)).unwrap();
        assert_eq!(known(&s), vec![7, 8]);
    }

    #[test]
    fn a_departed_servers_tasks_schedules_and_garden_work_wait_for_its_return() {
        let s = store();
        s.lock()
            .execute_batch(
                "INSERT INTO tasks (id, guild_id, text, due_at, created_by, created_at)
                     VALUES ('t7', 7, 'remind', 0, 'model', 0), ('t8', 8, 'remind', 0, 'model', 0),
                            ('dm', NULL, 'remind', 0, 'model', 0);
                 INSERT INTO schedules (id, guild_id, name, cron, action, created_by, created_at)
                     VALUES ('s7', 7, 'daily', '0 9 * * *', 'say hi', 'model', 0),
                            ('s8', 8, 'daily', '0 9 * * *', 'say hi', 'model', 0);
                 INSERT INTO garden_queue (id, guild_id, scheduled_for, context, priority, created_by, created_at)
                     VALUES ('q7', 7, 0, 'tidy', 'high', 'garden', 0), ('q8', 8, 0, 'tidy', 'low', 'garden', 0),
                            ('qall', NULL, 0, 'tidy', 'low', 'garden', 0);",
            )
            .unwrap();
        s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        let mut tasks: Vec<String> = s
            .impulses()
            .claim_due_tasks(at(1))
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        tasks.sort();
        assert_eq!(tasks, vec!["dm", "t8"]);
        let schedules: Vec<String> = s
            .impulses()
            .schedules(None)
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(schedules, vec!["s8"]);
        assert_eq!(
            s.impulses().schedules(Some(GuildId(7))).unwrap().len(),
            1,
            "asked by name, still there"
        );
        let queue: Vec<String> = s
            .garden()
            .queue_open()
            .unwrap()
            .into_iter()
            .map(|q| q.id)
            .collect();
        assert_eq!(queue, vec!["q8", "qall"]);
        s.guilds().cancel_departure(GuildId(7)).unwrap();
        let tasks: Vec<String> = s
            .impulses()
            .claim_due_tasks(at(1))
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(tasks, vec!["t7"], "due once the server is back");
        assert_eq!(s.impulses().schedules(None).unwrap().len(), 2);
        assert_eq!(s.garden().queue_open().unwrap()[0].id, "q7");
    }

    #[test]
    fn a_server_back_before_the_removal_keeps_everything() {
        let s = store();
        s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        let before = s.guilds().guild_row_counts(GuildId(7)).unwrap();
        assert_eq!(
            s.guilds().cancel_departure(GuildId(7)).unwrap(),
            Some(at(0))
        );
        assert_eq!(s.guilds().cancel_departure(GuildId(7)).unwrap(), None);
        assert_eq!(
            s.guilds()
                .remove_departed(GuildId(7), at(60), Pace::default(), &|| true)
                .unwrap(),
            None
        );
        let mut after = s.guilds().guild_row_counts(GuildId(7)).unwrap();
        after.push(("departed_guilds", 1));
        let mut expected = before;
        expected.sort();
        after.sort();
        assert_eq!(after, expected, "only the departure went");
    }

    /// `n` messages of `guild` in one of its channels, each with what a
    /// busy server's message leaves: a routing line and a reaction.
    fn busy(s: &Store, guild: i64, n: i64) {
        let mut conn = s.lock();
        let tx = conn.transaction().unwrap();
        for i in 0..n {
            let id = guild * 1_000_000 + i;
            tx.execute(
                "INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at)
                 VALUES (?1, ?2, ?2 * 10, 1, 'ada', 'words', 1)",
                params![id, guild],
            )
            .unwrap();
            tx.execute(
                "INSERT INTO journal (ts, kind, guild_id, message_id, summary) VALUES (1, 'route', ?2, ?1, 'let pass')",
                params![id, guild],
            )
            .unwrap();
            tx.execute(
                "INSERT INTO reactions (message_id, user_id, emoji, guild_id, channel_id, at)
                 VALUES (?1, 2, '👍', ?2, ?2 * 10, 1)",
                params![id, guild],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }

    fn messages_of(s: &Store, guild: i64) -> i64 {
        s.lock()
            .query_row(
                "SELECT count(*) FROM messages WHERE guild_id = ?1",
                [guild],
                |r| r.get(0),
            )
            .unwrap()
    }

    /// 100 rows a batch however long it holds the writer, and no rest: a
    /// test's pace, the same batches on any machine.
    fn small() -> Pace {
        Pace {
            batch: 100,
            hold: std::time::Duration::MAX,
            rest: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn a_departed_server_larger_than_a_batch_goes_in_several_transactions_and_no_other_servers_rows_do()
     {
        let s = store();
        busy(&s, 7, 450);
        busy(&s, 8, 30);
        let eight = s.guilds().guild_row_counts(GuildId(8)).unwrap();
        s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        let removed = s
            .guilds()
            .remove_departed(GuildId(7), at(0), small(), &|| true)
            .unwrap()
            .unwrap();
        assert_eq!(removed.end, End::Complete);
        assert_eq!(
            removed.counts,
            vec![
                ("guilds", 1),
                ("channels", 1),
                ("messages", 451),
                ("reactions", 450),
                ("journal", 450),
                ("facts", 1),
                ("departed_guilds", 1),
            ]
        );
        // Five batches of each of the three tables (the last one short);
        // one look at each of the three empty ones; the final transaction.
        assert_eq!(removed.holds.count(), 3 * 5 + 3 + 1, "{:?}", removed.holds);
        assert!(s.guilds().guild_row_counts(GuildId(7)).unwrap().is_empty());
        assert_eq!(s.guilds().guild_row_counts(GuildId(8)).unwrap(), eight);
        assert!(s.guilds().departures().unwrap().is_empty());
    }

    #[test]
    fn a_server_back_between_batches_keeps_what_had_not_gone_and_loses_nothing_more() {
        let s = store();
        busy(&s, 7, 450);
        s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        let before = s.guilds().guild_row_counts(GuildId(7)).unwrap();
        // Invited back while the first batch's rest lets go of the writer.
        let back = Cell::new(false);
        let removed = s
            .guilds()
            .remove_departed(GuildId(7), at(0), small(), &|| {
                if !back.replace(true) {
                    s.guilds().cancel_departure(GuildId(7)).unwrap();
                }
                true
            })
            .unwrap()
            .unwrap();
        assert_eq!(removed.end, End::NoLongerDue);
        assert_eq!(removed.counts, vec![("journal", 100)], "one batch went");
        let mut expected: Vec<(&str, usize)> = before
            .into_iter()
            .filter(|(t, _)| *t != "departed_guilds")
            .map(|(t, n)| (t, if t == "journal" { n - 100 } else { n }))
            .collect();
        expected.sort();
        let mut after = s.guilds().guild_row_counts(GuildId(7)).unwrap();
        after.sort();
        assert_eq!(after, expected, "the rest stays, its name and facts too");
        assert_eq!(
            s.guilds()
                .remove_departed(GuildId(7), at(60), small(), &|| true)
                .unwrap(),
            None,
            "no longer departed: nothing more goes"
        );
        assert_eq!(messages_of(&s, 7), 451);
    }

    #[test]
    fn a_removal_stopped_between_batches_keeps_the_departure_and_finishes_next_time() {
        let s = store();
        busy(&s, 7, 450);
        s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        let stopped = s
            .guilds()
            .remove_departed(GuildId(7), at(0), small(), &|| false)
            .unwrap()
            .unwrap();
        assert_eq!(stopped.end, End::Stopped);
        assert_eq!(stopped.counts, vec![("journal", 100)]);
        assert_eq!(
            s.guilds().departures().unwrap().len(),
            1,
            "still to be removed"
        );
        let rest = s
            .guilds()
            .remove_departed(GuildId(7), at(0), small(), &|| true)
            .unwrap()
            .unwrap();
        assert_eq!(rest.end, End::Complete);
        assert!(rest.counts.contains(&("journal", 350)), "{rest:?}");
        assert!(s.guilds().guild_row_counts(GuildId(7)).unwrap().is_empty());
    }

    #[test]
    fn one_batch_of_a_large_server_holds_the_writer_for_a_small_part_of_it() {
        let s = store();
        busy(&s, 7, 20_000);
        s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        let pace = Pace {
            rest: std::time::Duration::ZERO,
            ..Pace::default()
        };
        // Between two transactions: how many messages were left.
        let left = RefCell::new(vec![messages_of(&s, 7)]);
        let removed = s
            .guilds()
            .remove_departed(GuildId(7), at(0), pace, &|| {
                left.borrow_mut().push(messages_of(&s, 7));
                true
            })
            .unwrap()
            .unwrap();
        assert_eq!(removed.end, End::Complete);
        assert!(removed.counts.contains(&("messages", 20_001)));
        let left = left.into_inner();
        let most = left.windows(2).map(|w| w[0] - w[1]).max().unwrap();
        assert!(
            (1..=500).contains(&most),
            "messages in one batch, at most: {left:?}"
        );
        assert!(
            removed.holds.count() >= 3 * 20_000 / 500,
            "{} transactions",
            removed.holds.count()
        );
        assert!(s.guilds().guild_row_counts(GuildId(7)).unwrap().is_empty());
    }

    /// A measurement, not a check (run by hand: `cargo test --lib
    /// measure_a_busy_year -- --ignored --nocapture`): a server with 200,000
    /// messages and as many routing lines, removed in one transaction as
    /// before, and in batches. Each on its own copy of the same file.
    #[test]
    #[ignore]
    fn measure_a_busy_year_removed_at_once_and_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let (once, paced) = (dir.path().join("once"), dir.path().join("paced"));
        {
            let s = Store::open(&once).unwrap();
            busy(&s, 7, 200_000);
            busy(&s, 8, 50_000);
            s.lock()
                .execute_batch("UPDATE messages SET content = printf('%.200c', 'w')")
                .unwrap();
            s.guilds().record_departure(GuildId(7), at(0)).unwrap();
        }
        std::fs::create_dir_all(&paced).unwrap();
        std::fs::copy(once.join("ambient.db"), paced.join("ambient.db")).unwrap();
        let s = Store::open(&once).unwrap();
        let began = std::time::Instant::now();
        let all = s.guilds().remove_guild(GuildId(7)).unwrap();
        let at_once = began.elapsed();
        let s = Store::open(&paced).unwrap();
        let began = std::time::Instant::now();
        let removal = s
            .guilds()
            .remove_departed(GuildId(7), at(0), Pace::default(), &|| true)
            .unwrap()
            .unwrap();
        let wall = began.elapsed();
        assert_eq!(removal.counts, all);
        eprintln!(
            "{}\none transaction: {at_once:?}\nbatches: {} transactions, longest {:?}, p50 {:?}, p99 {:?}, \
             all of it {wall:?}",
            crate::store::guild_io::describe(&all),
            removal.holds.count(),
            removal.holds.longest(),
            removal.holds.quantile(0.5),
            removal.holds.quantile(0.99),
        );
    }
}
