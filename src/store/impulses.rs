//! Persistence for impulses (tasks, ideas, schedules) and reflex bookkeeping
//! (statistics, disabled reflexes).

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, params};

use super::departed::STILL_THERE;
use super::{ImpulseStore, Result, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, UserId};

#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub id: String,
    pub guild: Option<GuildId>,
    pub channel: Option<ChannelId>,
    pub text: String,
    /// Said as is when due (a reminder); without it the bot decides what to do.
    pub message: Option<String>,
    pub due: DateTime<Utc>,
    pub priority: u8,
    pub context: String,
    pub created_by: String,
    /// The person it belongs to (who may close it), when there is one.
    pub owner: Option<UserId>,
    pub created_at: DateTime<Utc>,
    pub fired_at: Option<DateTime<Utc>>,
    pub done_at: Option<DateTime<Utc>>,
}

impl Task {
    /// What people type to name it (`/task done 3f2a9c1b`).
    pub(crate) fn short_id(&self) -> &str {
        &self.id[..8.min(self.id.len())]
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Idea {
    pub id: String,
    pub guild: Option<GuildId>,
    pub text: String,
    pub sparked_by: String,
    pub created_at: DateTime<Utc>,
    pub explored_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleEntry {
    pub id: String,
    pub guild: GuildId,
    pub channel: Option<ChannelId>,
    pub name: String,
    pub cron: String,
    pub action: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub last_fired_at: Option<DateTime<Utc>>,
    /// Runs during the server's quiet hours too (`initiative.quietHours`).
    pub during_quiet_hours: bool,
    /// Posts even when nobody has answered the bot's last unprompted post
    /// (`initiative.text.maxUnansweredPosts`): a routine people rely on.
    pub even_if_unanswered: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReflexStats {
    pub name: String,
    pub fired: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub passed: u64,
    pub escalated: u64,
    pub total_us: u64,
}

const TASK: &str = "id, guild_id, channel_id, text, message, due_at, priority, context, created_by, created_at, fired_at, done_at, owner_id";

fn task_row(r: &Row<'_>) -> rusqlite::Result<Task> {
    Ok(Task {
        id: r.get(0)?,
        guild: r.get::<_, Option<i64>>(1)?.map(GuildId::from_sql),
        channel: r.get::<_, Option<i64>>(2)?.map(ChannelId::from_sql),
        text: r.get(3)?,
        message: r.get(4)?,
        due: from_ms(r.get(5)?),
        priority: r.get(6)?,
        context: r.get(7)?,
        created_by: r.get(8)?,
        created_at: from_ms(r.get(9)?),
        fired_at: r.get::<_, Option<i64>>(10)?.map(from_ms),
        done_at: r.get::<_, Option<i64>>(11)?.map(from_ms),
        owner: r.get::<_, Option<i64>>(12)?.map(UserId::from_sql),
    })
}

fn idea_row(r: &Row<'_>) -> rusqlite::Result<Idea> {
    Ok(Idea {
        id: r.get(0)?,
        guild: r.get::<_, Option<i64>>(1)?.map(GuildId::from_sql),
        text: r.get(2)?,
        sparked_by: r.get(3)?,
        created_at: from_ms(r.get(4)?),
        explored_at: r.get::<_, Option<i64>>(5)?.map(from_ms),
    })
}

const SCHEDULE: &str = "id, guild_id, channel_id, name, cron, action, created_by, created_at, last_fired_at, during_quiet_hours, even_if_unanswered";

fn schedule_row(r: &Row<'_>) -> rusqlite::Result<ScheduleEntry> {
    Ok(ScheduleEntry {
        id: r.get(0)?,
        guild: GuildId::from_sql(r.get(1)?),
        channel: r.get::<_, Option<i64>>(2)?.map(ChannelId::from_sql),
        name: r.get(3)?,
        cron: r.get(4)?,
        action: r.get(5)?,
        created_by: r.get(6)?,
        created_at: from_ms(r.get(7)?),
        last_fired_at: r.get::<_, Option<i64>>(8)?.map(from_ms),
        during_quiet_hours: r.get(9)?,
        even_if_unanswered: r.get(10)?,
    })
}

impl ImpulseStore {
    pub fn insert_task(&self, t: &Task) -> Result<()> {
        self.0.lock().execute(
            &format!("INSERT INTO tasks ({TASK}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"),
            params![
                t.id,
                t.guild.map(GuildId::to_sql),
                t.channel.map(ChannelId::to_sql),
                t.text,
                t.message,
                to_ms(t.due),
                t.priority,
                t.context,
                t.created_by,
                to_ms(t.created_at),
                t.fired_at.map(to_ms),
                t.done_at.map(to_ms),
                t.owner.map(UserId::to_sql),
            ],
        )?;
        Ok(())
    }

    /// Open tasks of a guild (`None`: DMs), soonest first.
    pub fn tasks(&self, guild: Option<GuildId>, include_done: bool) -> Result<Vec<Task>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {TASK} FROM tasks WHERE guild_id IS ?1 AND (?2 OR done_at IS NULL) ORDER BY due_at"
        ))?;
        let rows = stmt
            .query_map(params![guild.map(GuildId::to_sql), include_done], task_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub fn task(&self, id: &str) -> Result<Option<Task>> {
        Ok(self
            .0
            .lock()
            .query_row(
                &format!("SELECT {TASK} FROM tasks WHERE id = ?1"),
                [id],
                task_row,
            )
            .optional()?)
    }

    pub fn idea(&self, id: &str) -> Result<Option<Idea>> {
        Ok(self.ideas_where("id = ?1", id)?.into_iter().next())
    }

    fn ideas_where(&self, clause: &str, value: &str) -> Result<Vec<Idea>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT id, guild_id, text, sparked_by, created_at, explored_at FROM ideas WHERE {clause}"
        ))?;
        let rows = stmt
            .query_map([value], idea_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub(crate) fn task_by_prefix(&self, guild: Option<GuildId>, prefix: &str) -> Result<Vec<Task>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {TASK} FROM tasks WHERE guild_id IS ?1 AND id LIKE ?2 || '%'"
        ))?;
        let rows = stmt
            .query_map(
                params![guild.map(GuildId::to_sql), prefix.to_lowercase()],
                task_row,
            )?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Claims every task due by `now` that has not fired: marks it fired (in
    /// the same transaction) and returns it, so a task fires once, restarts included.
    /// Tasks claimed (fired) but never finished: the process stopped in between.
    pub(crate) fn interrupted_tasks(&self) -> Result<Vec<Task>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {TASK} FROM tasks WHERE fired_at IS NOT NULL AND done_at IS NULL ORDER BY fired_at"
        ))?;
        let rows = stmt
            .query_map([], task_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Open tasks one person has in a guild (or DMs).
    pub fn open_tasks_of(&self, guild: Option<GuildId>, owner: UserId) -> Result<u64> {
        Ok(self.0.lock().query_row(
            "SELECT count(*) FROM tasks WHERE guild_id IS ?1 AND owner_id = ?2 AND done_at IS NULL",
            params![guild.map(GuildId::to_sql), owner.to_sql()],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    pub fn claim_due_tasks(&self, now: DateTime<Utc>) -> Result<Vec<Task>> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let due: Vec<Task> = {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {TASK} FROM tasks WHERE fired_at IS NULL AND done_at IS NULL AND due_at <= ?1
                 AND {STILL_THERE} ORDER BY priority DESC, due_at"
            ))?;
            stmt.query_map([to_ms(now)], task_row)?
                .collect::<rusqlite::Result<_>>()?
        };
        for t in &due {
            tx.execute(
                "UPDATE tasks SET fired_at = ?2 WHERE id = ?1",
                params![t.id, to_ms(now)],
            )?;
        }
        tx.commit()?;
        Ok(due)
    }

    pub(crate) fn complete_task(&self, id: &str, at: DateTime<Utc>) -> Result<bool> {
        Ok(self.0.lock().execute(
            "UPDATE tasks SET done_at = ?2 WHERE id = ?1 AND done_at IS NULL",
            params![id, to_ms(at)],
        )? == 1)
    }

    pub(crate) fn insert_idea(&self, i: &Idea) -> Result<()> {
        self.0.lock().execute(
            "INSERT INTO ideas (id, guild_id, text, sparked_by, created_at, explored_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![i.id, i.guild.map(GuildId::to_sql), i.text, i.sparked_by, to_ms(i.created_at), i.explored_at.map(to_ms)],
        )?;
        Ok(())
    }

    pub(crate) fn ideas(
        &self,
        guild: Option<GuildId>,
        include_explored: bool,
    ) -> Result<Vec<Idea>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT id, guild_id, text, sparked_by, created_at, explored_at FROM ideas
             WHERE guild_id IS ?1 AND (?2 OR explored_at IS NULL) ORDER BY created_at",
        )?;
        let rows = stmt
            .query_map(
                params![guild.map(GuildId::to_sql), include_explored],
                idea_row,
            )?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Marks an idea explored; `false` if someone else already took it.
    pub(crate) fn last_idea_explored(&self, guild: GuildId) -> Result<Option<DateTime<Utc>>> {
        Ok(self
            .0
            .lock()
            .query_row(
                "SELECT max(explored_at) FROM ideas WHERE guild_id = ?1",
                [guild.to_sql()],
                |r| r.get::<_, Option<i64>>(0),
            )?
            .map(from_ms))
    }

    /// Gives a claimed task back, due again at `due_at` (it could not be said when it fired).
    pub(crate) fn postpone_task(&self, id: &str, due_at: DateTime<Utc>) -> Result<bool> {
        Ok(self.0.lock().execute(
            "UPDATE tasks SET fired_at = NULL, due_at = ?2 WHERE id = ?1 AND done_at IS NULL",
            params![id, to_ms(due_at)],
        )? == 1)
    }

    /// Gives a claimed idea back (its exploration failed): it waits to be explored again.
    pub(crate) fn release_idea(&self, id: &str) -> Result<bool> {
        Ok(self
            .0
            .lock()
            .execute("UPDATE ideas SET explored_at = NULL WHERE id = ?1", [id])?
            == 1)
    }

    pub(crate) fn claim_idea(&self, id: &str, at: DateTime<Utc>) -> Result<bool> {
        Ok(self.0.lock().execute(
            "UPDATE ideas SET explored_at = ?2 WHERE id = ?1 AND explored_at IS NULL",
            params![id, to_ms(at)],
        )? == 1)
    }

    pub(crate) fn insert_schedule(&self, s: &ScheduleEntry) -> Result<bool> {
        Ok(self.0.lock().execute(
            &format!("INSERT OR IGNORE INTO schedules ({SCHEDULE}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"),
            params![
                s.id,
                s.guild.to_sql(),
                s.channel.map(ChannelId::to_sql),
                s.name,
                s.cron,
                s.action,
                s.created_by,
                to_ms(s.created_at),
                s.last_fired_at.map(to_ms),
                s.during_quiet_hours,
                s.even_if_unanswered,
            ],
        )? == 1)
    }

    pub fn schedules(&self, guild: Option<GuildId>) -> Result<Vec<ScheduleEntry>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {SCHEDULE} FROM schedules WHERE (?1 IS NULL AND {STILL_THERE}) OR guild_id = ?1
             ORDER BY guild_id, name"
        ))?;
        let rows = stmt
            .query_map([guild.map(GuildId::to_sql)], schedule_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub(crate) fn remove_schedule(&self, guild: GuildId, name: &str) -> Result<bool> {
        Ok(self.0.lock().execute(
            "DELETE FROM schedules WHERE guild_id = ?1 AND name = ?2",
            params![guild.to_sql(), name],
        )? == 1)
    }

    /// Records a firing unless another check already recorded one since `previous`.
    pub(crate) fn mark_schedule_fired(
        &self,
        id: &str,
        previous: Option<DateTime<Utc>>,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        Ok(self.0.lock().execute(
            "UPDATE schedules SET last_fired_at = ?3 WHERE id = ?1 AND last_fired_at IS ?2",
            params![id, previous.map(to_ms), to_ms(at)],
        )? == 1)
    }

    pub(crate) fn record_reflex_run(&self, name: &str, outcome: &str, micros: u64) -> Result<()> {
        let column = match outcome {
            "succeeded" => "succeeded",
            "failed" => "failed",
            "passed" => "passed",
            _ => "escalated",
        };
        // One of four statements, kept prepared: this runs with every reflex.
        self.0.lock()
            .prepare_cached(&format!(
                "INSERT INTO reflex_stats (name, fired, {column}, total_us) VALUES (?1, 1, 1, ?2)
                 ON CONFLICT (name) DO UPDATE SET fired = fired + 1, {column} = {column} + 1, total_us = total_us + ?2"
            ))?
            .execute(params![name, micros as i64])?;
        Ok(())
    }

    pub fn reflex_stats(&self) -> Result<Vec<ReflexStats>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached("SELECT name, fired, succeeded, failed, passed, escalated, total_us FROM reflex_stats ORDER BY fired DESC, name")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ReflexStats {
                    name: r.get(0)?,
                    fired: r.get::<_, i64>(1)? as u64,
                    succeeded: r.get::<_, i64>(2)? as u64,
                    failed: r.get::<_, i64>(3)? as u64,
                    passed: r.get::<_, i64>(4)? as u64,
                    escalated: r.get::<_, i64>(5)? as u64,
                    total_us: r.get::<_, i64>(6)? as u64,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Disables a reflex in one guild, or everywhere (`None`).
    pub(crate) fn disable_reflex(
        &self,
        guild: Option<GuildId>,
        name: &str,
        reason: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.0.lock().execute(
            "INSERT OR REPLACE INTO reflex_disabled (guild_id, name, disabled_at, reason) VALUES (?1, ?2, ?3, ?4)",
            params![guild.map_or(0, GuildId::to_sql), name, to_ms(at), reason],
        )?;
        Ok(())
    }

    pub(crate) fn enable_reflex(&self, guild: Option<GuildId>, name: &str) -> Result<bool> {
        Ok(self.0.lock().execute(
            "DELETE FROM reflex_disabled WHERE guild_id = ?1 AND name = ?2",
            params![guild.map_or(0, GuildId::to_sql), name],
        )? == 1)
    }

    /// (guild or everywhere, name, reason).
    pub fn disabled_reflexes(&self) -> Result<Vec<(Option<GuildId>, String, String)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT guild_id, name, reason FROM reflex_disabled ORDER BY guild_id, name",
        )?;
        let rows = stmt
            .query_map([], |r| {
                let g: i64 = r.get(0)?;
                Ok(((g != 0).then(|| GuildId::from_sql(g)), r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// When a person last spoke in a guild.
    pub(crate) fn last_human_message(&self, guild: GuildId) -> Result<Option<DateTime<Utc>>> {
        Ok(self
            .0
            .lock()
            .query_row(
                // Newest first down the server-and-time index, stopping at the
                // first person: `max()` with the bot filter read every message.
                "SELECT created_at FROM messages WHERE guild_id = ?1 AND author_is_bot = 0
                 ORDER BY created_at DESC LIMIT 1",
                [guild.to_sql()],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .map(from_ms))
    }
}
