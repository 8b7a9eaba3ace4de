//! Persistence for discovery: sources and their fetch state, the items they
//! yielded (de-duplicated across sources), per-guild added sources, which
//! items were shared where, and reactions (for engagement).

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, params};

use super::{DiscoveryStore, Result, from_ms, to_ms};
use crate::backoff::{self, Setback};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};

#[derive(Clone, Debug, PartialEq)]
pub struct SourceRow {
    pub id: i64,
    pub kind: String,
    pub target: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub last_fetch_at: Option<DateTime<Utc>>,
    pub last_ok_at: Option<DateTime<Utc>>,
    pub last_status: String,
    pub failures: u32,
    pub next_fetch_at: DateTime<Utc>,
}

const SOURCE: &str = "id, kind, target, etag, last_modified, last_fetch_at, last_ok_at, last_status, failures, next_fetch_at";

fn source_row(r: &Row<'_>) -> rusqlite::Result<SourceRow> {
    Ok(SourceRow {
        id: r.get(0)?,
        kind: r.get(1)?,
        target: r.get(2)?,
        etag: r.get(3)?,
        last_modified: r.get(4)?,
        last_fetch_at: r.get::<_, Option<i64>>(5)?.map(from_ms),
        last_ok_at: r.get::<_, Option<i64>>(6)?.map(from_ms),
        last_status: r.get(7)?,
        failures: r.get(8)?,
        next_fetch_at: from_ms(r.get(9)?),
    })
}

/// An item ready to store, already normalised and keyed.
#[derive(Clone, Debug, PartialEq)]
pub struct NewItem {
    pub url: String,
    pub canonical_url: String,
    pub title: String,
    pub title_key: String,
    pub summary: String,
    pub published_at: Option<DateTime<Utc>>,
    pub media: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FeedItem {
    pub id: i64,
    pub source_id: i64,
    pub url: String,
    pub canonical_url: String,
    pub title: String,
    pub summary: String,
    pub published_at: Option<DateTime<Utc>>,
    pub fetched_at: DateTime<Utc>,
    pub media: Option<String>,
}

/// How a source has done for one guild.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SourceStats {
    pub items: u64,
    pub shared: u64,
    pub reactions: u64,
    pub replies: u64,
}

/// What happened when a source was fetched.
#[derive(Clone, Debug, PartialEq)]
pub enum FetchOutcome {
    Ok {
        etag: Option<String>,
        last_modified: Option<String>,
        status: String,
    },
    NotModified,
    Failed(String),
}

impl DiscoveryStore {
    /// The id of a source, creating its row the first time.
    pub fn upsert_source(&self, kind: &str, target: &str) -> Result<i64> {
        let conn = self.0.lock();
        conn.execute(
            "INSERT OR IGNORE INTO discovery_sources (kind, target) VALUES (?1, ?2)",
            params![kind, target],
        )?;
        Ok(conn.query_row(
            "SELECT id FROM discovery_sources WHERE kind = ?1 AND target = ?2",
            params![kind, target],
            |r| r.get(0),
        )?)
    }

    pub fn source(&self, id: i64) -> Result<Option<SourceRow>> {
        Ok(self
            .0
            .lock()
            .query_row(
                &format!("SELECT {SOURCE} FROM discovery_sources WHERE id = ?1"),
                [id],
                source_row,
            )
            .optional()?)
    }

    pub fn sources(&self) -> Result<Vec<SourceRow>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {SOURCE} FROM discovery_sources ORDER BY kind, target"
        ))?;
        let rows = stmt
            .query_map([], source_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Records a fetch; failures push the next fetch back exponentially
    /// (2×, 4×, 8× … the interval, at most a day: [`crate::backoff::delay`]).
    /// Returns the back-off a failure started.
    pub fn record_fetch(
        &self,
        id: i64,
        outcome: &FetchOutcome,
        now: DateTime<Utc>,
        interval: chrono::Duration,
    ) -> Result<Option<Setback>> {
        let conn = self.0.lock();
        match outcome {
            FetchOutcome::Ok { etag, last_modified, status } => conn.execute(
                "UPDATE discovery_sources SET etag = ?2, last_modified = ?3, last_fetch_at = ?4, last_ok_at = ?4,
                 last_status = ?5, failures = 0, next_fetch_at = ?6 WHERE id = ?1",
                params![id, etag, last_modified, to_ms(now), status, to_ms(now + interval)],
            )?,
            FetchOutcome::NotModified => conn.execute(
                "UPDATE discovery_sources SET last_fetch_at = ?2, last_ok_at = ?2, last_status = 'not modified (304)',
                 failures = 0, next_fetch_at = ?3 WHERE id = ?1",
                params![id, to_ms(now), to_ms(now + interval)],
            )?,
            FetchOutcome::Failed(why) => {
                let failures: u32 = conn.query_row("SELECT failures FROM discovery_sources WHERE id = ?1", [id], |r| r.get(0))?;
                let failures = failures.saturating_add(1);
                let wait = backoff::delay(interval * 2, chrono::Duration::hours(24), failures);
                conn.execute(
                    "UPDATE discovery_sources SET last_fetch_at = ?2, last_status = ?3, failures = ?4,
                     next_fetch_at = ?5 WHERE id = ?1",
                    params![id, to_ms(now), format!("failed: {why}"), failures, to_ms(now + wait)],
                )?;
                return Ok(Some(Setback { failures, wait, until: now + wait }));
            }
        };
        Ok(None)
    }

    /// Stores new items in one transaction, skipping any whose canonical URL
    /// or title key was seen since `dedupe_since`. Returns (stored, duplicates).
    pub fn insert_feed_items(
        &self,
        source: i64,
        items: &[NewItem],
        now: DateTime<Utc>,
        dedupe_since: DateTime<Utc>,
    ) -> Result<(usize, usize)> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let (mut stored, mut dupes) = (0, 0);
        {
            let mut seen = tx.prepare_cached(
                "SELECT 1 FROM feed_items WHERE (canonical_url = ?1 OR title_key = ?2) AND fetched_at >= ?3 LIMIT 1",
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO feed_items (source_id, url, canonical_url, title, title_key, summary, published_at, fetched_at, media)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for item in items {
                if seen.exists(params![
                    item.canonical_url,
                    item.title_key,
                    to_ms(dedupe_since)
                ])? {
                    dupes += 1;
                    continue;
                }
                insert.execute(params![
                    source,
                    item.url,
                    item.canonical_url,
                    item.title,
                    item.title_key,
                    item.summary,
                    item.published_at.map(to_ms),
                    to_ms(now),
                    item.media,
                ])?;
                stored += 1;
            }
        }
        tx.commit()?;
        Ok((stored, dupes))
    }

    /// Fresh items from `sources` not yet shared in `guild`, newest first. An
    /// item is the same as one shared when its address or title key is: a
    /// feed that lists a link again after its first row was stored long ago
    /// (or expired, `retention`) gives it a new row, never a second share.
    pub fn feed_candidates(
        &self,
        sources: &[i64],
        guild: GuildId,
        fresh_since: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<FeedItem>> {
        if sources.is_empty() {
            return Ok(Vec::new());
        }
        let ids = sources
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT id, source_id, url, canonical_url, title, summary, published_at, fetched_at, media FROM feed_items f
             WHERE source_id IN ({ids}) AND COALESCE(published_at, fetched_at) >= ?1
               AND NOT EXISTS (SELECT 1 FROM feed_shares s JOIN feed_items shared ON shared.id = s.item_id
                               WHERE s.guild_id = ?2
                                 AND (shared.canonical_url = f.canonical_url OR shared.title_key = f.title_key))
             ORDER BY COALESCE(published_at, fetched_at) DESC LIMIT ?3"
        ))?;
        let rows = stmt
            .query_map(
                params![to_ms(fresh_since), guild.to_sql(), limit as i64],
                |r| {
                    Ok(FeedItem {
                        id: r.get(0)?,
                        source_id: r.get(1)?,
                        url: r.get(2)?,
                        canonical_url: r.get(3)?,
                        title: r.get(4)?,
                        summary: r.get(5)?,
                        published_at: r.get::<_, Option<i64>>(6)?.map(from_ms),
                        fetched_at: from_ms(r.get(7)?),
                        media: r.get(8)?,
                    })
                },
            )?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub fn feed_item_by_canonical(&self, canonical: &str) -> Result<Option<(i64, i64)>> {
        Ok(self
            .0.lock()
            .query_row(
                "SELECT id, source_id FROM feed_items WHERE canonical_url = ?1 ORDER BY fetched_at DESC LIMIT 1",
                [canonical],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    pub(crate) fn count_feed_items(&self, source: i64) -> Result<u64> {
        Ok(self.0.lock().query_row(
            "SELECT count(*) FROM feed_items WHERE source_id = ?1",
            [source],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    pub fn record_share(
        &self,
        item: i64,
        guild: GuildId,
        channel: ChannelId,
        message: MessageId,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.0.lock().execute(
            "INSERT OR IGNORE INTO feed_shares (item_id, guild_id, channel_id, message_id, shared_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![item, guild.to_sql(), channel.to_sql(), message.to_sql(), to_ms(at)],
        )?;
        Ok(())
    }

    /// Items stored from a source, items shared in a guild, and the reactions
    /// and replies those shared posts drew within a day.
    pub(crate) fn source_stats(&self, source: i64, guild: GuildId) -> Result<SourceStats> {
        let conn = self.0.lock();
        let items: i64 = conn.query_row(
            "SELECT count(*) FROM feed_items WHERE source_id = ?1",
            [source],
            |r| r.get(0),
        )?;
        let (shared, reactions, replies): (i64, i64, i64) = conn.query_row(
            "SELECT count(*),
                    COALESCE(SUM((SELECT count(*) FROM reactions r WHERE r.message_id = s.message_id AND r.at <= s.shared_at + 86400000)), 0),
                    COALESCE(SUM((SELECT count(*) FROM messages m WHERE m.reply_to_id = s.message_id AND m.is_self = 0
                                  AND m.created_at <= s.shared_at + 86400000)), 0)
             FROM feed_shares s JOIN feed_items i ON i.id = s.item_id
             WHERE i.source_id = ?1 AND s.guild_id = ?2",
            params![source, guild.to_sql()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        Ok(SourceStats {
            items: items as u64,
            shared: shared as u64,
            reactions: reactions as u64,
            replies: replies as u64,
        })
    }

    pub fn add_guild_source(
        &self,
        guild: GuildId,
        kind: &str,
        target: &str,
        added_by: &str,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        Ok(self.0.lock().execute(
            "INSERT OR IGNORE INTO guild_sources (guild_id, kind, target, added_by, added_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![guild.to_sql(), kind, target, added_by, to_ms(at)],
        )? == 1)
    }

    pub(crate) fn remove_guild_source(
        &self,
        guild: GuildId,
        kind: &str,
        target: &str,
    ) -> Result<bool> {
        Ok(self.0.lock().execute(
            "DELETE FROM guild_sources WHERE guild_id = ?1 AND kind = ?2 AND target = ?3",
            params![guild.to_sql(), kind, target],
        )? == 1)
    }

    /// (kind, target, added_by) of the sources added for a guild at runtime.
    pub fn guild_sources(&self, guild: GuildId) -> Result<Vec<(String, String, String)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT kind, target, added_by FROM guild_sources WHERE guild_id = ?1 ORDER BY kind, target",
        )?;
        let rows = stmt
            .query_map([guild.to_sql()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub fn record_reaction(
        &self,
        message: MessageId,
        user: UserId,
        emoji: &str,
        guild: Option<GuildId>,
        channel: ChannelId,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.0.lock().execute(
            "INSERT OR IGNORE INTO reactions (message_id, user_id, emoji, guild_id, channel_id, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![message.to_sql(), user.to_sql(), emoji, guild.map(GuildId::to_sql), channel.to_sql(), to_ms(at)],
        )?;
        Ok(())
    }

    pub(crate) fn remove_reaction(
        &self,
        message: MessageId,
        user: UserId,
        emoji: &str,
    ) -> Result<()> {
        self.0.lock().execute(
            "DELETE FROM reactions WHERE message_id = ?1 AND user_id = ?2 AND emoji = ?3",
            params![message.to_sql(), user.to_sql(), emoji],
        )?;
        Ok(())
    }
}
