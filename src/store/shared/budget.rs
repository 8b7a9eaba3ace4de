//! The bot's daily model budgets as one pool in PostgreSQL: each process
//! leases tokens of a role's day in chunks, one transaction per lease.
//!
//! A row per (role, day, holder) holds what the holder was granted and what
//! it said it had spent when it last leased. The tokens out are, for each
//! holder, its grant while the lease is live and only its reported spend
//! once it has expired (a crashed process's unspent grant comes back after
//! [`LEASE_TTL`]) or been given back (at shutdown). A lease grants at most a
//! chunk, and never past the cap: so what every process spends together
//! stays under the cap plus what a crashed process spent after its last
//! report — at most one chunk each.

use std::time::Duration;

use chrono::NaiveDate;

use super::{Result, SharedDb};

/// How long a lease holds without another lease from its holder.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(600);

/// Migration 2 of the shared schema.
pub(super) const SCHEMA: &str = r#"
    CREATE TABLE budget_leases (
        role       TEXT        NOT NULL,
        day        DATE        NOT NULL,     -- UTC
        holder     TEXT        NOT NULL,     -- one process's start
        granted    BIGINT      NOT NULL CHECK (granted >= 0),
        spent      BIGINT      NOT NULL DEFAULT 0 CHECK (spent >= 0),
        expires_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (role, day, holder)
    );
"#;

/// One lease asked for: a role's day, its whole-bot cap, the chunk, how
/// much the holder needs to hold in all (what it spent of the day and its
/// call's estimate), and what it has spent of that day so far.
#[derive(Clone, Debug)]
pub(crate) struct LeaseAsk<'a> {
    pub role: &'a str,
    pub day: NaiveDate,
    pub cap: u64,
    pub chunk: u64,
    pub total: u64,
    pub holder: &'a str,
    pub spent: u64,
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl SharedDb {
    /// Grants `ask.holder` what it lacks of `ask.total` in whole chunks,
    /// or what is left of the day when that is less but still enough —
    /// nothing when the day has less left than it lacks, so a call too big
    /// for what is left holds nothing back from the others — and renews
    /// its lease; the holder's whole grant for the day after it. A lease
    /// that expired is lost to its holder too: it keeps only what it spent.
    pub(crate) async fn lease(&self, ask: LeaseAsk<'_>) -> Result<u64> {
        let this = self.clone();
        let ttl = LEASE_TTL.as_secs_f64();
        self.with_client(async move |c| {
            let q = |e| this.failed(e);
            let tx = c.transaction().await.map_err(q)?;
            // One lease of a role's day at a time: what is out is read and grown together.
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtext($1 || $2::date::text))",
                &[&ask.role, &ask.day],
            )
            .await
            .map_err(q)?;
            let row = tx
                .query_one(
                    "SELECT coalesce(sum(CASE WHEN holder <> $3 AND expires_at > now()
                                               THEN greatest(granted, spent)
                                               WHEN holder <> $3 THEN spent ELSE 0 END), 0)::bigint,
                            coalesce(max(CASE WHEN holder = $3 AND expires_at > now() THEN granted
                                              WHEN holder = $3 THEN spent END), 0)::bigint
                     FROM budget_leases WHERE role = $1 AND day = $2",
                    &[&ask.role, &ask.day, &ask.holder],
                )
                .await
                .map_err(q)?;
            let (others, mine) = (u(row.get(0)), u(row.get(1)));
            let mine = mine.max(ask.spent);
            let room = ask.cap.saturating_sub(others).saturating_sub(mine);
            let need = ask.total.saturating_sub(mine);
            let want = need.div_ceil(ask.chunk) * ask.chunk;
            let granted = mine + if room >= need { room.min(want) } else { 0 };
            tx.execute(
                "INSERT INTO budget_leases (role, day, holder, granted, spent, expires_at)
                 VALUES ($1, $2, $3, $4, $5, now() + interval '1 second' * $6::float8)
                 ON CONFLICT (role, day, holder) DO UPDATE
                 SET granted = excluded.granted, spent = excluded.spent,
                     expires_at = excluded.expires_at",
                &[
                    &ask.role,
                    &ask.day,
                    &ask.holder,
                    &i(granted),
                    &i(ask.spent),
                    &ttl,
                ],
            )
            .await
            .map_err(q)?;
            tx.commit().await.map_err(q)?;
            Ok(granted)
        })
        .await
    }

    /// Gives back what `holder` was granted and did not spend (at
    /// shutdown): each of its rows keeps only `spent(role, day)`.
    pub(crate) async fn give_back(
        &self,
        holder: &str,
        spent: Vec<(String, NaiveDate, u64)>,
    ) -> Result<()> {
        let this = self.clone();
        let holder = holder.to_string();
        self.with_client(async move |c| {
            for (role, day, tokens) in &spent {
                c.execute(
                    "UPDATE budget_leases SET granted = $4, spent = $4, expires_at = now()
                     WHERE role = $1 AND day = $2 AND holder = $3",
                    &[role, day, &holder, &i(*tokens)],
                )
                .await
                .map_err(|e| this.failed(e))?;
            }
            Ok(())
        })
        .await
    }
}
