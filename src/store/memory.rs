//! Persistence for memory: facts, their full-text index (kept in sync by
//! triggers), reinforcement breadcrumbs and extraction checkpoints.
//!
//! Each fact carries `tags` for the full-text index: its guild (`g<id>`,
//! `g0` for direct messages) and its user (`u<id>`), written so only
//! *active* facts carry them (inactive ones get `gx<id>`/`ux<id>`). A search
//! is thus confined to one guild's active facts inside the index itself —
//! not by trimming a global result list afterwards — and the filter token's
//! list is only as long as that guild's memory.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, Transaction, params, params_from_iter};

use super::conditions::Conditions;
use super::{MemoryStore, Result, StoreError, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::vocab::fact::{Fact, FactKind, Importance, Scope, ScopeKind};

const COLUMNS: &str = "id, guild_id, scope, channel_id, user_id, kind, importance, subject, content, sources, \
                       author_id, author_name, created_at, updated_at, last_seen_at, strength, confidence, \
                       superseded_by, archived_at";

/// Full-text search over facts, best first: asked for every answer.
static SEARCH: LazyLock<String> = LazyLock::new(|| {
    let cols = COLUMNS
        .split(", ")
        .map(|c| format!("f.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "SELECT {cols}, bm25(facts_fts, 1.0, 0.5, 0.0) AS rank
         FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid
         WHERE facts_fts MATCH ?1 ORDER BY rank LIMIT ?2"
    )
});

/// The full-text filter tokens of a fact.
pub(crate) fn tags(f: &Fact) -> String {
    let x = if f.is_active() { "" } else { "x" };
    format!(
        "g{x}{} u{x}{}",
        f.scope.guild.map_or(0, GuildId::get),
        f.scope.user.map_or(0, UserId::get)
    )
}

fn fact_row(r: &Row<'_>) -> rusqlite::Result<Fact> {
    let scope_kind: String = r.get(2)?;
    let kind: String = r.get(5)?;
    let importance: String = r.get(6)?;
    let sources: String = r.get(9)?;
    let author = match (
        r.get::<_, Option<i64>>(10)?,
        r.get::<_, Option<String>>(11)?,
    ) {
        (Some(id), Some(name)) => Some((UserId::from_sql(id), name)),
        _ => None,
    };
    Ok(Fact {
        id: r.get(0)?,
        scope: Scope {
            kind: ScopeKind::parse(&scope_kind).unwrap_or(ScopeKind::Guild),
            guild: r.get::<_, Option<i64>>(1)?.map(GuildId::from_sql),
            channel: r.get::<_, Option<i64>>(3)?.map(ChannelId::from_sql),
            user: r.get::<_, Option<i64>>(4)?.map(UserId::from_sql),
        },
        kind: FactKind::parse(&kind).unwrap_or(FactKind::Fact),
        importance: Importance::parse(&importance).unwrap_or(Importance::Medium),
        subject: r.get(7)?,
        content: r.get(8)?,
        sources: serde_json::from_str::<Vec<u64>>(&sources)
            .unwrap_or_default()
            .into_iter()
            .map(MessageId)
            .collect(),
        author,
        created_at: from_ms(r.get(12)?),
        updated_at: from_ms(r.get(13)?),
        last_seen_at: from_ms(r.get(14)?),
        strength: r.get(15)?,
        confidence: r.get(16)?,
        superseded_by: r.get(17)?,
        archived_at: r.get::<_, Option<i64>>(18)?.map(from_ms),
        reinforcements: Vec::new(),
    })
}

/// Which facts to list.
#[derive(Clone, Debug, Default)]
pub struct FactFilter {
    /// `Some(None)`: facts from direct messages.
    pub guild: Option<Option<GuildId>>,
    pub scope: Option<ScopeKind>,
    pub channel: Option<ChannelId>,
    pub user: Option<UserId>,
    pub kind: Option<FactKind>,
    pub importance: Option<Importance>,
    pub since: Option<DateTime<Utc>>,
    pub include_inactive: bool,
    /// Newest first, at most this many.
    pub limit: Option<usize>,
}

fn write_fact(tx: &Transaction<'_>, f: &Fact, insert: bool) -> rusqlite::Result<()> {
    let sources = serde_json::to_string(&f.sources.iter().map(|m| m.get()).collect::<Vec<_>>())
        .unwrap_or_else(|_| "[]".into());
    let values = params![
        f.id,
        f.scope.guild.map(GuildId::to_sql),
        f.scope.kind.as_str(),
        f.scope.channel.map(ChannelId::to_sql),
        f.scope.user.map(UserId::to_sql),
        f.kind.as_str(),
        f.importance.as_str(),
        f.subject,
        f.content,
        sources,
        f.author.as_ref().map(|(id, _)| id.to_sql()),
        f.author.as_ref().map(|(_, name)| name.clone()),
        to_ms(f.created_at),
        to_ms(f.updated_at),
        to_ms(f.last_seen_at),
        f.strength,
        f.confidence,
        f.superseded_by,
        f.archived_at.map(to_ms),
        tags(f),
    ];
    if insert {
        tx.execute(
            &format!("INSERT INTO facts ({COLUMNS}, tags) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"),
            values,
        )?;
        for (message, at) in &f.reinforcements {
            tx.execute(
                "INSERT INTO fact_reinforcements (fact_id, message_id, at) VALUES (?1, ?2, ?3)",
                params![f.id, message.map(MessageId::to_sql), to_ms(*at)],
            )?;
        }
    } else {
        tx.execute(
            "UPDATE facts SET guild_id = ?2, scope = ?3, channel_id = ?4, user_id = ?5, kind = ?6, importance = ?7,
             subject = ?8, content = ?9, sources = ?10, author_id = ?11, author_name = ?12, created_at = ?13,
             updated_at = ?14, last_seen_at = ?15, strength = ?16, confidence = ?17, superseded_by = ?18,
             archived_at = ?19, tags = ?20 WHERE id = ?1",
            values,
        )?;
    }
    Ok(())
}

/// The oldest marks expiry goes by (`None`: no such fact).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OldestFacts {
    pub seen: Option<DateTime<Utc>>,
    pub archived: Option<DateTime<Utc>>,
}

impl MemoryStore {
    pub fn insert_fact(&self, f: &Fact) -> Result<()> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        write_fact(&tx, f, true)?;
        tx.commit()?;
        Ok(())
    }

    /// Writes changed facts together (a supersede touches two).
    pub fn save_facts(&self, inserts: &[&Fact], updates: &[&Fact]) -> Result<()> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        for f in updates {
            write_fact(&tx, f, false)?;
        }
        for f in inserts {
            write_fact(&tx, f, true)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Folds duplicates into a survivor in one transaction: the survivor is
    /// written, each duplicate is marked superseded by it, and the
    /// duplicates' reinforcement breadcrumbs move to the survivor, plus one
    /// breadcrumb per merge — nothing of how the fact earned its strength is lost.
    pub(crate) fn merge_facts(
        &self,
        survivor: &Fact,
        merged: &[&Fact],
        at: DateTime<Utc>,
    ) -> Result<()> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        write_fact(&tx, survivor, false)?;
        for m in merged {
            write_fact(&tx, m, false)?;
            tx.execute(
                "UPDATE fact_reinforcements SET fact_id = ?2 WHERE fact_id = ?1",
                params![m.id, survivor.id],
            )?;
            tx.execute(
                "INSERT INTO fact_reinforcements (fact_id, message_id, at) VALUES (?1, ?2, ?3)",
                params![
                    survivor.id,
                    m.sources.first().map(|s| s.to_sql()),
                    to_ms(at)
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// (all facts, active facts) of a guild (`None`: direct messages).
    pub(crate) fn fact_counts(&self, guild: Option<GuildId>) -> Result<(u64, u64)> {
        Ok(self.0.lock().query_row(
            "SELECT count(*), count(*) FILTER (WHERE superseded_by IS NULL AND archived_at IS NULL) FROM facts WHERE guild_id IS ?1",
            [guild.map(GuildId::to_sql)],
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
        )?)
    }

    /// What changes whenever a guild's active memory changes: (count, newest update).
    pub(crate) fn fact_signature(&self, guild: Option<GuildId>) -> Result<(u64, i64)> {
        Ok(self.0.lock().query_row(
            "SELECT count(*), coalesce(max(updated_at), 0) FROM facts
             WHERE guild_id IS ?1 AND superseded_by IS NULL AND archived_at IS NULL",
            [guild.map(GuildId::to_sql)],
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
        )?)
    }

    /// Breadcrumbs of a fact (how many times, and by what, it was reinforced).
    pub fn reinforcement_count(&self, id: &str) -> Result<u64> {
        Ok(self.0.lock().query_row(
            "SELECT count(*) FROM fact_reinforcements WHERE fact_id = ?1",
            [id],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    pub fn add_reinforcement(
        &self,
        id: &str,
        message: Option<MessageId>,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.0.lock().execute(
            "INSERT INTO fact_reinforcements (fact_id, message_id, at) VALUES (?1, ?2, ?3)",
            params![id, message.map(MessageId::to_sql), to_ms(at)],
        )?;
        Ok(())
    }

    fn reinforcements(&self, id: &str) -> Result<Vec<(Option<MessageId>, DateTime<Utc>)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT message_id, at FROM fact_reinforcements WHERE fact_id = ?1 ORDER BY at, rowid",
        )?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    r.get::<_, Option<i64>>(0)?.map(MessageId::from_sql),
                    from_ms(r.get(1)?),
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// A fact by its full id, with its reinforcements.
    pub fn fact(&self, id: &str) -> Result<Option<Fact>> {
        let fact = self
            .0
            .lock()
            .query_row(
                &format!("SELECT {COLUMNS} FROM facts WHERE id = ?1"),
                [id],
                fact_row,
            )
            .optional()?;
        match fact {
            Some(mut f) => {
                f.reinforcements = self.reinforcements(&f.id)?;
                Ok(Some(f))
            }
            None => Ok(None),
        }
    }

    /// Facts whose id starts with `prefix` (for ids people abbreviate).
    pub(crate) fn facts_by_prefix(&self, prefix: &str) -> Result<Vec<Fact>> {
        let prefix: String = prefix
            .chars()
            .filter(|c| c.is_ascii_hexdigit())
            .collect::<String>()
            .to_lowercase();
        if prefix.is_empty() {
            return Ok(Vec::new());
        }
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM facts WHERE id LIKE ?1 || '%' ORDER BY created_at LIMIT 10"
        ))?;
        let rows = stmt
            .query_map([prefix], fact_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub(crate) fn delete_fact(&self, id: &str) -> Result<bool> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        tx.execute("DELETE FROM fact_reinforcements WHERE fact_id = ?1", [id])?;
        let n = tx.execute("DELETE FROM facts WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(n > 0)
    }

    /// Compaction's change as one transaction: `summary` (if any) is
    /// inserted and every fact in `replaced` deleted, or nothing happens —
    /// a summary that failed to land never costs the facts it summarises.
    pub(crate) fn compact_facts(&self, summary: Option<&Fact>, replaced: &[&str]) -> Result<()> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        if let Some(s) = summary {
            write_fact(&tx, s, true)?;
        }
        for id in replaced {
            tx.execute("DELETE FROM fact_reinforcements WHERE fact_id = ?1", [id])?;
            tx.execute("DELETE FROM facts WHERE id = ?1", [id])?;
        }
        tx.commit()?;
        Ok(())
    }

    pub fn list_facts(&self, f: &FactFilter) -> Result<Vec<Fact>> {
        let mut c = Conditions::default();
        if let Some(guild) = f.guild {
            c.cmp(
                "guild_id",
                "IS",
                Some(rusqlite::types::Value::from(guild.map(GuildId::to_sql))),
            );
        }
        c.cmp("scope", "=", f.scope.map(|s| s.as_str().to_string()))
            .cmp("channel_id", "=", f.channel.map(ChannelId::to_sql))
            .cmp("user_id", "=", f.user.map(UserId::to_sql))
            .cmp("kind", "=", f.kind.map(|k| k.as_str().to_string()))
            .cmp(
                "importance",
                "=",
                f.importance.map(|i| i.as_str().to_string()),
            )
            .cmp("updated_at", ">=", f.since.map(to_ms));
        let (mut filter, args) = c.finish();
        if !f.include_inactive {
            filter = if filter.is_empty() {
                " WHERE superseded_by IS NULL AND archived_at IS NULL".into()
            } else {
                format!("{filter} AND superseded_by IS NULL AND archived_at IS NULL")
            };
        }
        let mut sql =
            format!("SELECT {COLUMNS} FROM facts{filter} ORDER BY updated_at DESC, rowid DESC");
        if let Some(n) = f.limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt
            .query_map(params_from_iter(args), fact_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Active facts in exactly this scope, optionally of one kind (supersede candidates).
    pub fn facts_in_scope(&self, scope: &Scope, kind: Option<FactKind>) -> Result<Vec<Fact>> {
        self.list_facts(&FactFilter {
            guild: Some(scope.guild),
            scope: Some(scope.kind),
            channel: scope.channel,
            user: scope.user,
            kind,
            ..Default::default()
        })
    }

    /// Full-text matches for a MATCH expression, best BM25 first: (fact, bm25 relevance ≥ 0).
    pub fn search_facts(&self, match_expr: &str, limit: usize) -> Result<Vec<(Fact, f64)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&SEARCH)?;
        let rows = stmt
            .query_map(params![match_expr, limit as i64], |r| {
                Ok((fact_row(r)?, -r.get::<_, f64>(19)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Marks facts as just used (the TTL counts from here). Written in the
    /// open group of writes (see [`super::group_commit`]), or every answer's
    /// search would commit on its own: a crash in the 100 ms before the
    /// group is committed leaves those facts' TTL and search recency
    /// counting from their use before.
    pub(crate) fn touch_facts(&self, ids: &[String], at: DateTime<Utc>) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let conn = self.0.lock_grouped()?;
        let mut update = conn.prepare_cached("UPDATE facts SET last_seen_at = ?2 WHERE id = ?1")?;
        for id in ids {
            update.execute(params![id, to_ms(at)])?;
        }
        Ok(())
    }

    /// Deletes facts not seen since `before` (their reinforcements too); returns how many.
    pub(crate) fn expire_facts(&self, before: DateTime<Utc>) -> Result<usize> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "DELETE FROM fact_reinforcements WHERE fact_id IN (SELECT id FROM facts WHERE last_seen_at < ?1)",
            [to_ms(before)],
        )?;
        let n = tx.execute("DELETE FROM facts WHERE last_seen_at < ?1", [to_ms(before)])?;
        tx.commit()?;
        Ok(n)
    }

    /// The oldest `last_seen_at` of any fact and the oldest `archived_at`:
    /// when `expire_facts` and `purge_archived_facts` next find something.
    pub(crate) fn oldest_fact_marks(&self) -> Result<OldestFacts> {
        Ok(self.0.lock().query_row(
            "SELECT min(last_seen_at), min(archived_at) FROM facts",
            [],
            |r| {
                Ok(OldestFacts {
                    seen: r.get::<_, Option<i64>>(0)?.map(from_ms),
                    archived: r.get::<_, Option<i64>>(1)?.map(from_ms),
                })
            },
        )?)
    }

    /// Deletes facts archived before `before`.
    pub(crate) fn purge_archived_facts(&self, before: DateTime<Utc>) -> Result<usize> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "DELETE FROM fact_reinforcements WHERE fact_id IN (SELECT id FROM facts WHERE archived_at < ?1)",
            [to_ms(before)],
        )?;
        let n = tx.execute("DELETE FROM facts WHERE archived_at < ?1", [to_ms(before)])?;
        tx.commit()?;
        Ok(n)
    }

    pub fn extraction_checkpoint(
        &self,
        channel: ChannelId,
    ) -> Result<Option<(MessageId, DateTime<Utc>)>> {
        Ok(self
            .0
            .lock()
            .query_row(
                "SELECT last_message_id, last_run_at FROM extraction_state WHERE channel_id = ?1",
                [channel.to_sql()],
                |r| Ok((MessageId::from_sql(r.get(0)?), from_ms(r.get(1)?))),
            )
            .optional()?)
    }

    pub(crate) fn set_extraction_checkpoint(
        &self,
        channel: ChannelId,
        last: MessageId,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.0.lock().execute(
            "INSERT INTO extraction_state (channel_id, last_message_id, last_run_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (channel_id) DO UPDATE SET last_message_id = excluded.last_message_id, last_run_at = excluded.last_run_at",
            params![channel.to_sql(), last.to_sql(), to_ms(at)],
        )?;
        Ok(())
    }

    /// Every fact with its reinforcements, oldest first (for export).
    pub fn all_facts(&self) -> Result<Vec<Fact>> {
        let mut facts = self.list_facts(&FactFilter {
            include_inactive: true,
            ..Default::default()
        })?;
        facts.reverse();
        for f in &mut facts {
            f.reinforcements = self.reinforcements(&f.id)?;
        }
        Ok(facts)
    }

    /// Inserts facts whose ids are new, all or nothing; returns (inserted, skipped).
    pub fn import_facts(&self, facts: &[Fact]) -> Result<(usize, usize)> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let (mut inserted, mut skipped) = (0, 0);
        for f in facts {
            let exists: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM facts WHERE id = ?1)",
                [&f.id],
                |r| r.get(0),
            )?;
            if exists {
                skipped += 1;
                continue;
            }
            write_fact(&tx, f, true)
                .map_err(|e| StoreError::Corrupt(format!("fact {}: {e}", f.id)))?;
            inserted += 1;
        }
        tx.commit()?;
        Ok((inserted, skipped))
    }

    /// Number of active facts per (guild, scope, channel, user) group above `min`,
    /// for compaction: (scope of the group, count).
    pub(crate) fn crowded_scopes(&self, guild: Option<GuildId>) -> Result<Vec<(Scope, u64)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT scope, channel_id, user_id, count(*) FROM facts
             WHERE guild_id IS ?1 AND superseded_by IS NULL AND archived_at IS NULL
             GROUP BY scope, channel_id, user_id",
        )?;
        let rows = stmt
            .query_map([guild.map(GuildId::to_sql)], |r| {
                let kind: String = r.get(0)?;
                Ok((
                    Scope {
                        kind: ScopeKind::parse(&kind).unwrap_or(ScopeKind::Guild),
                        guild,
                        channel: r.get::<_, Option<i64>>(1)?.map(ChannelId::from_sql),
                        user: r.get::<_, Option<i64>>(2)?.map(UserId::from_sql),
                    },
                    r.get::<_, i64>(3)? as u64,
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Guilds (and `None` for DMs) that hold facts.
    pub(crate) fn fact_guilds(&self) -> Result<Vec<Option<GuildId>>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached("SELECT DISTINCT guild_id FROM facts")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(r.get::<_, Option<i64>>(0)?.map(GuildId::from_sql))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Counts by kind and importance, and the date range, for `ambient memories stats`.
    #[allow(clippy::type_complexity)] // one query's three results, named where `cli` reads them
    pub(crate) fn fact_stats(
        &self,
    ) -> Result<(
        Vec<(String, String, u64)>,
        Option<(DateTime<Utc>, DateTime<Utc>)>,
        u64,
    )> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT kind, importance, count(*) FROM facts WHERE superseded_by IS NULL AND archived_at IS NULL
             GROUP BY kind, importance ORDER BY kind, importance",
        )?;
        let counts = stmt
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let range: Option<(i64, i64)> = conn.query_row(
            "SELECT min(created_at), max(created_at) FROM facts",
            [],
            |r| {
                Ok(
                    match (r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?) {
                        (Some(a), Some(b)) => Some((a, b)),
                        _ => None,
                    },
                )
            },
        )?;
        let inactive: i64 = conn.query_row(
            "SELECT count(*) FROM facts WHERE superseded_by IS NOT NULL OR archived_at IS NOT NULL",
            [],
            |r| r.get(0),
        )?;
        Ok((
            counts,
            range.map(|(a, b)| (from_ms(a), from_ms(b))),
            inactive as u64,
        ))
    }
}
