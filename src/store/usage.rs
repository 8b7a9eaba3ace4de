//! Model usage records: one row per request attempt (and per refusal), the
//! raw material for budgets, `ambient usage`, the status widget and the
//! garden's adaptive scheduler.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use rusqlite::{Row, params, params_from_iter};

use super::conditions::Conditions;
use super::{Result, UsageStore, from_ms, to_ms};
use crate::ids::GuildId;

#[derive(Clone, Debug, PartialEq)]
pub struct UsageRecord {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub role: String,
    pub source: String,
    pub guild: Option<GuildId>,
    pub provider: String,
    pub model: String,
    pub pay_per_token: bool,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub latency_ms: u64,
    pub outcome: String,
    /// Why the call failed, if it did; stored cut to
    /// [`MAX_REASON_BYTES`](super::journal::MAX_REASON_BYTES).
    pub detail: String,
}

impl UsageRecord {
    pub(crate) fn tokens(&self) -> u64 {
        self.tokens_in + self.tokens_out
    }
}

#[derive(Clone, Debug, Default)]
pub struct UsageFilter {
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub roles: Vec<String>,
    pub sources: Vec<String>,
    pub guild: Option<GuildId>,
    pub pay_per_token: Option<bool>,
    pub outcome: Option<String>,
    pub provider: Option<String>,
}

impl UsageFilter {
    fn conditions(&self) -> Conditions {
        let mut c = Conditions::default();
        c.cmp("ts", ">=", self.since.map(to_ms))
            .cmp("ts", "<", self.until.map(to_ms))
            .cmp("guild_id", "=", self.guild.map(GuildId::to_sql))
            .cmp("pay_per_token", "=", self.pay_per_token)
            .cmp("outcome", "=", self.outcome.clone())
            .cmp("provider", "=", self.provider.clone())
            .any_of("role", &self.roles)
            .any_of("source", &self.sources);
        c
    }
}

/// One role's calls and tokens on one day (UTC), for the dashboard's spend chart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DailyUsage {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub role: String,
    /// Requests sent (whatever came back); refusals are not sent.
    pub calls: u64,
    /// Calls refused before sending (a budget).
    pub refused: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
}

/// One day's usage rows of one role, source, server, provider, model and
/// billing, rolled up by retention once the rows expired.
#[derive(Clone, Debug, PartialEq)]
pub struct DailyTotal {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub role: String,
    pub source: String,
    pub guild: Option<GuildId>,
    pub provider: String,
    pub model: String,
    pub pay_per_token: bool,
    /// Rows rolled up, refusals included (as `ambient usage` counts records).
    pub calls: u64,
    pub ok: u64,
    pub refused: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Summed over the calls.
    pub latency_ms: u64,
}

const COLUMNS: &str = "id, ts, role, source, guild_id, provider, model, pay_per_token, tokens_in, tokens_out, \
                       latency_ms, outcome, detail";

/// A model call's record: one per answer, so prepared once.
static INSERT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO usage ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        COLUMNS.trim_start_matches("id, ")
    )
});

fn from_row(r: &Row<'_>) -> rusqlite::Result<UsageRecord> {
    Ok(UsageRecord {
        id: r.get(0)?,
        at: from_ms(r.get(1)?),
        role: r.get(2)?,
        source: r.get(3)?,
        guild: r.get::<_, Option<i64>>(4)?.map(GuildId::from_sql),
        provider: r.get(5)?,
        model: r.get(6)?,
        pay_per_token: r.get(7)?,
        tokens_in: r.get::<_, i64>(8)? as u64,
        tokens_out: r.get::<_, i64>(9)? as u64,
        latency_ms: r.get::<_, i64>(10)? as u64,
        outcome: r.get(11)?,
        detail: r.get(12)?,
    })
}

impl UsageStore {
    pub fn usage_append(&self, u: &UsageRecord) -> Result<i64> {
        let conn = self.0.lock();
        conn.prepare_cached(&INSERT)?.execute(params![
            to_ms(u.at),
            u.role,
            u.source,
            u.guild.map(GuildId::to_sql),
            u.provider,
            u.model,
            u.pay_per_token,
            u.tokens_in as i64,
            u.tokens_out as i64,
            u.latency_ms as i64,
            u.outcome,
            // A provider's error text, quoted: bounded like every stored reason.
            super::journal::bounded(&u.detail),
        ])?;
        Ok(conn.last_insert_rowid())
    }

    /// Total tokens (in + out) of the records matching `f`.
    pub fn usage_tokens(&self, f: &UsageFilter) -> Result<u64> {
        let (filter, args) = f.conditions().finish();
        let conn = self.0.lock();
        let total: i64 = conn
            .prepare_cached(&format!(
                "SELECT COALESCE(SUM(tokens_in + tokens_out), 0) FROM usage{filter}"
            ))?
            .query_row(params_from_iter(args), |r| r.get(0))?;
        Ok(total as u64)
    }

    /// The mean prompt of `role`'s last `last` answered calls, in tokens (0
    /// with none): what its next call will likely send. Asked every tick,
    /// so summed in SQL rather than read row by row.
    pub(crate) fn recent_prompt_tokens(&self, role: &str, last: usize) -> Result<u64> {
        let conn = self.0.lock();
        let mean: i64 = conn
            .prepare_cached(
                "SELECT COALESCE(SUM(tokens_in) / COUNT(*), 0) FROM (
                     SELECT tokens_in FROM usage WHERE role = ?1 AND outcome = 'ok'
                     ORDER BY ts DESC, id DESC LIMIT ?2)",
            )?
            .query_row(rusqlite::params![role, last as i64], |r| r.get(0))?;
        Ok(mean as u64)
    }

    pub fn usage_count(&self, f: &UsageFilter) -> Result<u64> {
        let (filter, args) = f.conditions().finish();
        let conn = self.0.lock();
        let n: i64 = conn
            .prepare_cached(&format!("SELECT count(*) FROM usage{filter}"))?
            .query_row(params_from_iter(args), |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Records stored after record `after` (all when `None`), in the order
    /// they were stored: a seek on the id, however large the table.
    pub(crate) fn usage_after(&self, after: Option<i64>) -> Result<Vec<UsageRecord>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM usage WHERE id > ?1 ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([after.unwrap_or(i64::MIN)], from_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Calls and tokens per UTC day and role since `since`, oldest day first:
    /// one grouped read, however many rows the month holds. Days whose rows
    /// were rolled up by retention are read from their totals.
    pub(crate) fn usage_by_day(&self, since: DateTime<Utc>) -> Result<Vec<DailyUsage>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT day, role, SUM(calls), SUM(refused), SUM(tokens_in), SUM(tokens_out) FROM (
                 SELECT date(ts / 1000, 'unixepoch') AS day, role,
                        outcome <> 'refused' AS calls, outcome = 'refused' AS refused,
                        tokens_in, tokens_out
                 FROM usage WHERE ts >= ?1
                 UNION ALL
                 SELECT day, role, calls - refused, refused, tokens_in, tokens_out
                 FROM usage_daily WHERE day >= date(?1 / 1000, 'unixepoch')
             ) GROUP BY day, role ORDER BY day, role",
        )?;
        let rows = stmt
            .query_map([to_ms(since)], |r| {
                Ok(DailyUsage {
                    day: r.get(0)?,
                    role: r.get(1)?,
                    calls: r.get::<_, i64>(2)? as u64,
                    refused: r.get::<_, i64>(3)? as u64,
                    tokens_in: r.get::<_, i64>(4)? as u64,
                    tokens_out: r.get::<_, i64>(5)? as u64,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// The daily totals of rows retention rolled up (`storage.retention.usageDays`)
    /// matching `f`'s time, roles, sources, server, billing and provider,
    /// oldest day first. A day counts when it begins at or after `f.since`
    /// (and before `f.until`); an outcome filter matches none, as the
    /// totals keep only how many calls were ok or refused.
    pub fn usage_daily_totals(&self, f: &UsageFilter) -> Result<Vec<DailyTotal>> {
        if f.outcome.is_some() {
            return Ok(Vec::new());
        }
        let day_ms = "CAST(strftime('%s', day) AS INTEGER) * 1000";
        let mut c = Conditions::default();
        c.cmp(day_ms, ">=", f.since.map(to_ms))
            .cmp(day_ms, "<", f.until.map(to_ms))
            .cmp("guild_id", "=", f.guild.map(GuildId::to_sql))
            .cmp("pay_per_token", "=", f.pay_per_token)
            .cmp("provider", "=", f.provider.clone())
            .any_of("role", &f.roles)
            .any_of("source", &f.sources);
        let (filter, args) = c.finish();
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT day, role, source, guild_id, provider, model, pay_per_token,
                    calls, ok, refused, tokens_in, tokens_out, latency_ms
             FROM usage_daily{filter} ORDER BY day, role, source, guild_id, provider, model"
        ))?;
        let rows = stmt
            .query_map(params_from_iter(args), |r| {
                Ok(DailyTotal {
                    day: r.get(0)?,
                    role: r.get(1)?,
                    source: r.get(2)?,
                    guild: Some(r.get::<_, i64>(3)?)
                        .filter(|g| *g != 0)
                        .map(GuildId::from_sql),
                    provider: r.get(4)?,
                    model: r.get(5)?,
                    pay_per_token: r.get(6)?,
                    calls: r.get::<_, i64>(7)? as u64,
                    ok: r.get::<_, i64>(8)? as u64,
                    refused: r.get::<_, i64>(9)? as u64,
                    tokens_in: r.get::<_, i64>(10)? as u64,
                    tokens_out: r.get::<_, i64>(11)? as u64,
                    latency_ms: r.get::<_, i64>(12)? as u64,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Records matching `f`, oldest first (the newest `limit` if given).
    pub fn usage_list(&self, f: &UsageFilter, limit: Option<usize>) -> Result<Vec<UsageRecord>> {
        let (filter, args) = f.conditions().finish();
        let mut sql = format!("SELECT {COLUMNS} FROM usage{filter} ORDER BY ts DESC, id DESC");
        if let Some(n) = limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows: Vec<UsageRecord> = stmt
            .query_map(params_from_iter(args), from_row)?
            .collect::<rusqlite::Result<_>>()?;
        rows.reverse();
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use chrono::TimeZone;

    fn record(at: DateTime<Utc>, role: &str, outcome: &str, tokens: u64) -> UsageRecord {
        UsageRecord {
            id: 0,
            at,
            role: role.into(),
            source: "user".into(),
            guild: None,
            provider: "openai".into(),
            model: "m".into(),
            pay_per_token: false,
            tokens_in: tokens,
            tokens_out: 1,
            latency_ms: 5,
            outcome: outcome.into(),
            detail: String::new(),
        }
    }

    #[test]
    fn the_likely_prompt_is_the_mean_of_the_roles_last_answered_calls() {
        let store = Store::open_in_memory().unwrap();
        assert_eq!(store.usage().recent_prompt_tokens("reply", 20).unwrap(), 0);
        let at = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
        for (minute, role, outcome, tokens) in [
            (0, "reply", "ok", 1_000),
            (1, "reply", "ok", 101),
            (2, "reply", "refused", 50_000),
            (3, "ambient", "ok", 70_000),
            (4, "reply", "ok", 200),
        ] {
            let r = record(
                at + chrono::Duration::minutes(minute),
                role,
                outcome,
                tokens,
            );
            store.usage().usage_append(&r).unwrap();
        }
        assert_eq!(
            store.usage().recent_prompt_tokens("reply", 20).unwrap(),
            433
        );
        assert_eq!(
            store.usage().recent_prompt_tokens("reply", 2).unwrap(),
            150,
            "the last two: 101 and 200, rounded down"
        );
    }

    #[test]
    fn a_huge_detail_is_stored_cut_with_a_marker() {
        let store = Store::open_in_memory().unwrap();
        let at = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
        let mut refused = record(at, "ambient", "client_error", 0);
        refused.detail = format!("refused (400): {}", "x".repeat(30_000_000));
        store.usage().usage_append(&refused).unwrap();
        let rows = store
            .usage()
            .usage_list(&UsageFilter::default(), None)
            .unwrap();
        assert_eq!(
            rows[0].detail,
            format!(
                "refused (400): {}… [cut: 30,000,015 bytes, showing the first 1,968]",
                "x".repeat(1_968 - 15)
            )
        );
    }

    #[test]
    fn usage_by_day_groups_by_utc_day_and_role_and_counts_refusals_apart() {
        let store = Store::open_in_memory().unwrap();
        let day1 = Utc.with_ymd_and_hms(2026, 3, 1, 23, 59, 0).unwrap();
        let day2 = Utc.with_ymd_and_hms(2026, 3, 2, 0, 1, 0).unwrap();
        for r in [
            record(day1 - chrono::Duration::days(40), "reply", "ok", 999),
            record(day1, "reply", "ok", 10),
            record(day1, "reply", "rate_limited", 0),
            record(day1, "ambient", "refused", 0),
            record(day2, "reply", "ok", 20),
        ] {
            store.usage().usage_append(&r).unwrap();
        }
        let days = store
            .usage()
            .usage_by_day(day1 - chrono::Duration::days(30))
            .unwrap();
        let got: Vec<(&str, &str, u64, u64, u64)> = days
            .iter()
            .map(|d| {
                (
                    d.day.as_str(),
                    d.role.as_str(),
                    d.calls,
                    d.refused,
                    d.tokens_in + d.tokens_out,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("2026-03-01", "ambient", 0, 1, 1),
                ("2026-03-01", "reply", 2, 0, 12),
                ("2026-03-02", "reply", 1, 0, 21),
            ]
        );
    }
}
