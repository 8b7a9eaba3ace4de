//! What the unanswered gate reads (`initiative.text.maxUnansweredPosts`):
//! the bot's unprompted posts — the initiative's, and the routines' — as the
//! journal recorded them when they went out, and whether a person answered
//! them by reacting. People's messages are read where the other gates read
//! them ([`MessageStore::last_human_in`]).

use chrono::{DateTime, Utc};
use rusqlite::params;

use super::{MessageStore, Result, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId};

/// One post the bot made unasked: when, where, and the message it became.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnpromptedPost {
    pub at: DateTime<Utc>,
    pub channel: ChannelId,
    pub message: MessageId,
}

/// An initiative post, or a routine's (its journal line names the routine
/// in `data.routine`), that became a message. Down the journal's index by
/// kind, server and time, which leaves routing lines out.
const POSTS_AFTER: &str = "SELECT ts, channel_id, message_id FROM journal
     WHERE kind != 'route' AND guild_id = ?1 AND ts > ?2
       AND message_id IS NOT NULL AND channel_id IS NOT NULL
       AND (kind = 'initiative_post'
            OR (kind = 'impulse' AND json_extract(data, '$.routine') IS NOT NULL))
     ORDER BY ts DESC, id DESC LIMIT ?3";

impl MessageStore {
    /// The bot's unprompted posts in `guild` after `after` (all when `None`),
    /// newest first, at most `limit`.
    pub(crate) fn unprompted_posts_after(
        &self,
        guild: GuildId,
        after: Option<DateTime<Utc>>,
        limit: u32,
    ) -> Result<Vec<UnpromptedPost>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(POSTS_AFTER)?;
        let rows = stmt
            .query_map(
                params![guild.to_sql(), after.map_or(i64::MIN, to_ms), limit],
                |r| {
                    Ok(UnpromptedPost {
                        at: from_ms(r.get(0)?),
                        channel: ChannelId::from_sql(r.get(1)?),
                        message: MessageId::from_sql(r.get(2)?),
                    })
                },
            )?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// When someone other than its author last reacted to one of `posts`.
    pub(crate) fn last_reaction_to(&self, posts: &[MessageId]) -> Result<Option<DateTime<Utc>>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT max(r.at) FROM reactions r
             WHERE r.message_id = ?1
               AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id AND m.author_id = r.user_id)",
        )?;
        let mut last: Option<DateTime<Utc>> = None;
        for post in posts {
            let at = stmt.query_row([post.to_sql()], |r| r.get::<_, Option<i64>>(0))?;
            last = last.max(at.map(from_ms));
        }
        Ok(last)
    }

    /// Whether a person (not a bot) posted in `guild` after `from` and before `to`.
    pub(crate) fn people_spoke_between(
        &self,
        guild: GuildId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<bool> {
        Ok(self
            .0
            .lock()
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM messages WHERE guild_id = ?1 AND author_is_bot = 0
                                AND created_at > ?2 AND created_at < ?3)",
            )?
            .query_row(params![guild.to_sql(), to_ms(from), to_ms(to)], |r| {
                r.get::<_, bool>(0)
            })?)
    }
}
