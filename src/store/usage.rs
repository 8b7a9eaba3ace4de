//! Model usage records: one row per request attempt (and per refusal), the
//! raw material for budgets, `ambient usage`, the status widget and the
//! garden's adaptive scheduler.

use chrono::{DateTime, Utc};
use rusqlite::{Row, params, params_from_iter};

use super::conditions::Conditions;
use super::{Result, Store, from_ms, to_ms};
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
    pub detail: String,
}

impl UsageRecord {
    pub fn tokens(&self) -> u64 {
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

const COLUMNS: &str = "id, ts, role, source, guild_id, provider, model, pay_per_token, tokens_in, tokens_out, \
                       latency_ms, outcome, detail";

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

impl Store {
    pub fn usage_append(&self, u: &UsageRecord) -> Result<i64> {
        let conn = self.lock();
        conn.execute(
            &format!(
                "INSERT INTO usage ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                COLUMNS.trim_start_matches("id, ")
            ),
            params![
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
                u.detail,
            ],
        )?;
        Ok(conn.last_insert_rowid())
    }

    /// Total tokens (in + out) of the records matching `f`.
    pub fn usage_tokens(&self, f: &UsageFilter) -> Result<u64> {
        let (filter, args) = f.conditions().finish();
        let conn = self.lock();
        let total: i64 = conn
            .prepare_cached(&format!(
                "SELECT COALESCE(SUM(tokens_in + tokens_out), 0) FROM usage{filter}"
            ))?
            .query_row(params_from_iter(args), |r| r.get(0))?;
        Ok(total as u64)
    }

    pub fn usage_count(&self, f: &UsageFilter) -> Result<u64> {
        let (filter, args) = f.conditions().finish();
        let conn = self.lock();
        let n: i64 = conn
            .prepare_cached(&format!("SELECT count(*) FROM usage{filter}"))?
            .query_row(params_from_iter(args), |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Records stored after record `after` (all when `None`), in the order
    /// they were stored: a seek on the id, however large the table.
    pub fn usage_after(&self, after: Option<i64>) -> Result<Vec<UsageRecord>> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM usage WHERE id > ?1 ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([after.unwrap_or(i64::MIN)], from_row)?
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
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows: Vec<UsageRecord> = stmt
            .query_map(params_from_iter(args), from_row)?
            .collect::<rusqlite::Result<_>>()?;
        rows.reverse();
        Ok(rows)
    }
}
