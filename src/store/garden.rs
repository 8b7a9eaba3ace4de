//! Persistence for the garden: cycle transcripts, the scheduled queue, the
//! scheduler's state (a few JSON values by key), links between facts, and
//! the feedback on the bot's ambient posts. (The context stream is the
//! journal's: `stream`.)

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, params};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use super::{GardenStore, Result, StoreError, from_ms, to_ms};
use crate::ids::GuildId;
use crate::vocab::Priority;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CycleStatus {
    Running,
    Completed,
    /// The model stopped twice without `end_ambient_cycle`, or its provider failed.
    Incomplete,
    /// The process stopped (or was stopped) in the middle; the next cycle resumes.
    Interrupted,
}

impl CycleStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CycleStatus::Running => "running",
            CycleStatus::Completed => "completed",
            CycleStatus::Incomplete => "incomplete",
            CycleStatus::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> CycleStatus {
        match s {
            "running" => CycleStatus::Running,
            "completed" => CycleStatus::Completed,
            "incomplete" => CycleStatus::Incomplete,
            _ => CycleStatus::Interrupted,
        }
    }
}

/// One item of a cycle's plan (the `todos` tool).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Todo {
    pub text: String,
    #[serde(default)]
    pub done: bool,
}

/// One line of a cycle's transcript: what the pass did, a tool call and its result, a note.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub at: DateTime<Utc>,
    pub kind: String,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cycle {
    pub id: i64,
    pub guild: Option<GuildId>,
    pub trigger: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub status: CycleStatus,
    pub todos: Vec<Todo>,
    pub steps: Vec<Step>,
    pub summary: String,
    pub memories_modified: u64,
    pub compactions: u64,
    pub proactive_work: Option<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub rate_limited: bool,
    pub next_wake_at: Option<DateTime<Utc>>,
}

/// The seed's `ScheduledItem`: work a cycle (or a person) asked for later.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueItem {
    pub id: String,
    pub guild: Option<GuildId>,
    pub scheduled_for: DateTime<Utc>,
    pub context: String,
    pub priority: Priority,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub done_at: Option<DateTime<Utc>>,
}

/// Someone's reaction or reply to one of the bot's ambient posts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PostFeedback {
    pub guild: GuildId,
    pub channel: crate::ids::ChannelId,
    pub post: crate::ids::MessageId,
    pub post_text: String,
    pub who: String,
    /// The emoji, for a reaction.
    pub emoji: Option<String>,
    /// The reply's text, for a reply.
    pub reply: Option<String>,
    pub at: DateTime<Utc>,
}

const CYCLE: &str = "id, guild_id, trigger, started_at, ended_at, status, todos, steps, summary, memories_modified, \
                     compactions, proactive_work, tokens_in, tokens_out, rate_limited, next_wake_at";

fn cycle_row(r: &Row<'_>) -> rusqlite::Result<Cycle> {
    let status: String = r.get(5)?;
    let todos: String = r.get(6)?;
    let steps: String = r.get(7)?;
    Ok(Cycle {
        id: r.get(0)?,
        guild: r.get::<_, Option<i64>>(1)?.map(GuildId::from_sql),
        trigger: r.get(2)?,
        started_at: from_ms(r.get(3)?),
        ended_at: r.get::<_, Option<i64>>(4)?.map(from_ms),
        status: CycleStatus::parse(&status),
        todos: serde_json::from_str(&todos).unwrap_or_default(),
        steps: serde_json::from_str(&steps).unwrap_or_default(),
        summary: r.get(8)?,
        memories_modified: r.get::<_, i64>(9)? as u64,
        compactions: r.get::<_, i64>(10)? as u64,
        proactive_work: r.get(11)?,
        tokens_in: r.get::<_, i64>(12)? as u64,
        tokens_out: r.get::<_, i64>(13)? as u64,
        rate_limited: r.get(14)?,
        next_wake_at: r.get::<_, Option<i64>>(15)?.map(from_ms),
    })
}

/// People's replies to the bot's ambient posts: a seek per post on
/// `messages_reply_to`, which holds only replies (migration 17).
const REPLIES_TO_POSTS: &str =
    "SELECT o.guild_id, o.channel_id, o.message_id, o.text, m.author_name, NULL, m.content, m.created_at
     FROM messages m JOIN initiative_outbox o ON o.message_id = m.reply_to_id
     WHERE m.created_at > ?1 AND m.author_is_bot = 0 AND m.deleted_at IS NULL";

/// The cost of the newest cycles that called a model, read from the index
/// of those alone (migration 20): its `WHERE` is the index's, word for word,
/// or SQLite would not use it.
const RECENT_CYCLE_TOKENS: &str = "SELECT tokens_in + tokens_out FROM garden_cycles \
     WHERE tokens_in + tokens_out > 0 ORDER BY id DESC LIMIT ?1";

const QUEUE: &str =
    "id, guild_id, scheduled_for, context, priority, created_by, created_at, done_at";

fn queue_row(r: &Row<'_>) -> rusqlite::Result<QueueItem> {
    let priority: String = r.get(4)?;
    Ok(QueueItem {
        id: r.get(0)?,
        guild: r.get::<_, Option<i64>>(1)?.map(GuildId::from_sql),
        scheduled_for: from_ms(r.get(2)?),
        context: r.get(3)?,
        priority: match priority.as_str() {
            "high" => Priority::High,
            "low" => Priority::Low,
            _ => Priority::Normal,
        },
        created_by: r.get(5)?,
        created_at: from_ms(r.get(6)?),
        done_at: r.get::<_, Option<i64>>(7)?.map(from_ms),
    })
}

fn priority_str(p: Priority) -> &'static str {
    match p {
        Priority::High => "high",
        Priority::Normal => "normal",
        Priority::Low => "low",
    }
}

impl GardenStore {
    pub fn cycle_begin(&self, trigger: &str, at: DateTime<Utc>) -> Result<i64> {
        let conn = self.0.lock();
        conn.execute(
            "INSERT INTO garden_cycles (trigger, started_at, status) VALUES (?1, ?2, 'running')",
            params![trigger, to_ms(at)],
        )?;
        Ok(conn.last_insert_rowid())
    }

    pub fn cycle_save(&self, c: &Cycle) -> Result<()> {
        self.0.lock().execute(
            "UPDATE garden_cycles SET guild_id = ?2, trigger = ?3, ended_at = ?4, status = ?5, todos = ?6, steps = ?7,
             summary = ?8, memories_modified = ?9, compactions = ?10, proactive_work = ?11, tokens_in = ?12,
             tokens_out = ?13, rate_limited = ?14, next_wake_at = ?15 WHERE id = ?1",
            params![
                c.id,
                c.guild.map(GuildId::to_sql),
                c.trigger,
                c.ended_at.map(to_ms),
                c.status.as_str(),
                to_json(&c.todos),
                to_json(&c.steps),
                c.summary,
                c.memories_modified as i64,
                c.compactions as i64,
                c.proactive_work,
                c.tokens_in as i64,
                c.tokens_out as i64,
                c.rate_limited,
                c.next_wake_at.map(to_ms),
            ],
        )?;
        Ok(())
    }

    /// Removes a cycle that turned out to have done nothing (the garden's
    /// rest): the log keeps only cycles that did something.
    pub(crate) fn cycle_discard(&self, id: i64) -> Result<()> {
        self.0
            .lock()
            .execute("DELETE FROM garden_cycles WHERE id = ?1", [id])?;
        Ok(())
    }

    pub fn cycle(&self, id: i64) -> Result<Option<Cycle>> {
        Ok(self
            .0
            .lock()
            .query_row(
                &format!("SELECT {CYCLE} FROM garden_cycles WHERE id = ?1"),
                [id],
                cycle_row,
            )
            .optional()?)
    }

    /// The newest `limit` cycles, newest first.
    pub fn cycles(&self, limit: usize) -> Result<Vec<Cycle>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {CYCLE} FROM garden_cycles ORDER BY id DESC LIMIT ?1"
        ))?;
        let rows = stmt
            .query_map([limit as i64], cycle_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Tokens of the newest `n` cycles that made model calls (for the cost
    /// per cycle): `n` entries of the index that holds only those
    /// (migration 20), however many cycles made none.
    pub(crate) fn recent_cycle_tokens(&self, n: usize) -> Result<Vec<u64>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(RECENT_CYCLE_TOKENS)?;
        let rows = stmt
            .query_map([n as i64], |r| r.get::<_, i64>(0).map(|t| t as u64))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub(crate) fn cycles_with_status(&self, status: CycleStatus) -> Result<Vec<Cycle>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {CYCLE} FROM garden_cycles WHERE status = ?1 ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([status.as_str()], cycle_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub(crate) fn queue_insert(&self, q: &QueueItem) -> Result<()> {
        self.0.lock().execute(
            &format!("INSERT INTO garden_queue ({QUEUE}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
            params![
                q.id,
                q.guild.map(GuildId::to_sql),
                to_ms(q.scheduled_for),
                q.context,
                priority_str(q.priority),
                q.created_by,
                to_ms(q.created_at),
                q.done_at.map(to_ms),
            ],
        )?;
        Ok(())
    }

    /// Open items, most urgent first: priority, then scheduled time (the seed's order).
    pub fn queue_open(&self) -> Result<Vec<QueueItem>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {QUEUE} FROM garden_queue WHERE done_at IS NULL AND {}
             ORDER BY CASE priority WHEN 'high' THEN 0 WHEN 'normal' THEN 1 ELSE 2 END, scheduled_for",
            super::departed::STILL_THERE
        ))?;
        let rows = stmt
            .query_map([], queue_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub(crate) fn queue_done(&self, ids: &[String], cycle: i64, at: DateTime<Utc>) -> Result<()> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        for id in ids {
            tx.execute(
                "UPDATE garden_queue SET done_at = ?2, done_in_cycle = ?3 WHERE id = ?1 AND done_at IS NULL",
                params![id, to_ms(at), cycle],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    pub fn garden_get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let raw: Option<String> = self
            .0
            .lock()
            .query_row(
                "SELECT value FROM garden_state WHERE key = ?1",
                [key],
                |r| r.get(0),
            )
            .optional()?;
        raw.map(|v| {
            serde_json::from_str(&v)
                .map_err(|e| StoreError::Corrupt(format!("garden_state {key}: {e}")))
        })
        .transpose()
    }

    pub fn garden_set<T: Serialize>(&self, key: &str, value: &T) -> Result<()> {
        let v = serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.0.lock().execute(
            "INSERT INTO garden_state (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![key, v],
        )?;
        Ok(())
    }

    pub(crate) fn garden_clear(&self, key: &str) -> Result<()> {
        self.0
            .lock()
            .execute("DELETE FROM garden_state WHERE key = ?1", [key])?;
        Ok(())
    }

    /// Links facts (each pair once, in a stable order); returns how many were new.
    pub(crate) fn link_facts(
        &self,
        pairs: &[(String, String)],
        relation: &str,
        at: DateTime<Utc>,
    ) -> Result<usize> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let mut added = 0;
        {
            let mut stmt =
                tx.prepare_cached("INSERT OR IGNORE INTO fact_links (a, b, relation, created_at) VALUES (?1, ?2, ?3, ?4)")?;
            for (x, y) in pairs {
                let (a, b) = if x < y { (x, y) } else { (y, x) };
                added += stmt.execute(params![a, b, relation, to_ms(at)])?;
            }
        }
        tx.commit()?;
        Ok(added)
    }

    /// Links between a guild's facts.
    pub(crate) fn link_count(&self, guild: GuildId) -> Result<u64> {
        Ok(self.0.lock().query_row(
            "SELECT count(*) FROM fact_links l JOIN facts f ON f.id = l.a WHERE f.guild_id = ?1",
            [guild.to_sql()],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    /// The facts linked to `id`.
    pub fn fact_links(&self, id: &str) -> Result<Vec<String>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT b FROM fact_links WHERE a = ?1 UNION SELECT a FROM fact_links WHERE b = ?1",
        )?;
        let rows = stmt
            .query_map([id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Reactions and replies to the bot's ambient posts after `since`, oldest
    /// first, leaving out the bot's own (`me`).
    pub(crate) fn ambient_post_feedback(
        &self,
        since: DateTime<Utc>,
        me: crate::ids::UserId,
    ) -> Result<Vec<PostFeedback>> {
        let conn = self.0.lock();
        let row = |r: &Row<'_>| -> rusqlite::Result<PostFeedback> {
            Ok(PostFeedback {
                guild: GuildId::from_sql(r.get(0)?),
                channel: crate::ids::ChannelId::from_sql(r.get(1)?),
                post: crate::ids::MessageId::from_sql(r.get(2)?),
                post_text: r.get(3)?,
                who: r
                    .get::<_, Option<String>>(4)?
                    .unwrap_or_else(|| "someone".into()),
                emoji: r.get(5)?,
                reply: r.get(6)?,
                at: from_ms(r.get(7)?),
            })
        };
        let mut out: Vec<PostFeedback> = conn
            .prepare_cached(
                "SELECT o.guild_id, o.channel_id, o.message_id, o.text,
                        (SELECT author_name FROM messages WHERE author_id = r.user_id ORDER BY created_at DESC LIMIT 1),
                        r.emoji, NULL, r.at
                 FROM reactions r JOIN initiative_outbox o ON o.message_id = r.message_id
                 WHERE r.at > ?1 AND r.user_id != ?2",
            )?
            .query_map(params![to_ms(since), me.to_sql()], row)?
            .collect::<rusqlite::Result<_>>()?;
        let replies: Vec<PostFeedback> = conn
            .prepare_cached(REPLIES_TO_POSTS)?
            .query_map(params![to_ms(since)], row)?
            .collect::<rusqlite::Result<_>>()?;
        out.extend(replies);
        out.sort_by_key(|f| f.at);
        Ok(out)
    }
}

fn to_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    use crate::store::query_plan as plan;

    #[test]
    fn the_cost_per_cycle_reads_the_index_of_cycles_that_spent_tokens_alone() {
        let plan = plan(RECENT_CYCLE_TOKENS, params![5]);
        assert_eq!(
            plan,
            ["SCAN garden_cycles USING COVERING INDEX garden_cycles_spent"],
            "a walk of the cycles that called a model, newest first, stopped after five: no row read, none dropped"
        );
    }

    #[test]
    fn the_cost_per_cycle_is_the_newest_cycles_that_spent_tokens() {
        let store = Store::open_in_memory().unwrap();
        let t = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        for tokens in [100, 0, 200, 0, 0, 300] {
            let id = store.garden().cycle_begin("test", t).unwrap();
            let mut c = store.garden().cycle(id).unwrap().unwrap();
            c.status = CycleStatus::Completed;
            c.tokens_in = tokens;
            c.tokens_out = tokens / 10;
            store.garden().cycle_save(&c).unwrap();
        }
        assert_eq!(store.garden().recent_cycle_tokens(2).unwrap(), [330, 220]);
        assert_eq!(
            store.garden().recent_cycle_tokens(5).unwrap(),
            [330, 220, 110]
        );
    }

    #[test]
    fn replies_to_posts_seek_the_index_that_holds_only_replies() {
        let plan = plan(REPLIES_TO_POSTS, params![0]);
        assert!(
            plan.iter()
                .any(|step| step.contains("USING INDEX messages_reply_to (reply_to_id=?)")),
            "{plan:#?}"
        );
    }
}
