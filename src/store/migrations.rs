//! Versioned schema migrations.
//!
//! The schema version lives in `PRAGMA user_version`. Each migration runs in
//! its own transaction together with the version bump, so a crash mid-upgrade
//! leaves the database at the previous version, never in between. Later
//! features add their tables by appending to [`MIGRATIONS`]; an existing
//! entry is never edited once released.

use std::path::Path;

use rusqlite::Connection;

use super::{Result, StoreError};

pub struct Migration {
    pub version: u32,
    pub name: &'static str,
    pub sql: &'static str,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "channel history, channel and guild names, journal",
        sql: r#"
            CREATE TABLE messages (
                id            INTEGER PRIMARY KEY,   -- Discord message id (or a console snowflake)
                guild_id      INTEGER,               -- NULL for direct messages
                channel_id    INTEGER NOT NULL,
                author_id     INTEGER NOT NULL,
                author_name   TEXT    NOT NULL,
                author_is_bot INTEGER NOT NULL DEFAULT 0,
                is_self       INTEGER NOT NULL DEFAULT 0,  -- written by this bot
                content       TEXT    NOT NULL,
                attachments   TEXT    NOT NULL DEFAULT '[]', -- JSON [{name, url}]
                reply_to_id   INTEGER,
                source        TEXT    NOT NULL DEFAULT 'text' CHECK (source IN ('text', 'vc')),
                created_at    INTEGER NOT NULL,      -- Unix ms
                edited_at     INTEGER,
                deleted_at    INTEGER
            );
            CREATE INDEX messages_channel_time ON messages (channel_id, created_at);
            CREATE INDEX messages_guild_time ON messages (guild_id, created_at);

            CREATE TABLE guilds (
                id         INTEGER PRIMARY KEY,
                name       TEXT    NOT NULL,
                updated_at INTEGER NOT NULL
            );
            CREATE TABLE channels (
                id         INTEGER PRIMARY KEY,
                guild_id   INTEGER,
                name       TEXT    NOT NULL,
                updated_at INTEGER NOT NULL
            );

            CREATE TABLE journal (
                id            INTEGER PRIMARY KEY AUTOINCREMENT,
                ts            INTEGER NOT NULL,
                kind          TEXT    NOT NULL,
                guild_id      INTEGER,
                channel_id    INTEGER,
                message_id    INTEGER,
                model_call_id INTEGER,
                summary       TEXT    NOT NULL,
                reason        TEXT    NOT NULL DEFAULT '',
                salience      REAL,
                data          TEXT    NOT NULL DEFAULT '{}'
            );
            CREATE INDEX journal_time ON journal (ts);
            CREATE INDEX journal_kind_time ON journal (kind, ts);
            CREATE INDEX journal_guild_time ON journal (guild_id, ts);
            CREATE INDEX journal_message ON journal (message_id);
        "#,
    },
    Migration {
        version: 2,
        name: "per-guild setting overrides",
        sql: r#"
            CREATE TABLE guild_settings (
                guild_id   INTEGER NOT NULL,
                path       TEXT    NOT NULL,
                value      TEXT    NOT NULL,  -- JSON
                updated_at INTEGER NOT NULL,
                updated_by INTEGER,
                PRIMARY KEY (guild_id, path)
            );
        "#,
    },
    Migration {
        version: 3,
        name: "model usage records",
        sql: r#"
            CREATE TABLE usage (
                id            INTEGER PRIMARY KEY AUTOINCREMENT,
                ts            INTEGER NOT NULL,
                role          TEXT    NOT NULL,  -- reply | ambient | reflex | extract
                source        TEXT    NOT NULL,  -- user | ambient | reflex
                guild_id      INTEGER,
                provider      TEXT    NOT NULL,
                model         TEXT    NOT NULL,
                pay_per_token INTEGER NOT NULL DEFAULT 0,
                tokens_in     INTEGER NOT NULL DEFAULT 0,
                tokens_out    INTEGER NOT NULL DEFAULT 0,
                latency_ms    INTEGER NOT NULL DEFAULT 0,
                outcome       TEXT    NOT NULL,  -- ok | rate_limited | server_error | client_error | timeout | network | malformed | refused
                detail        TEXT    NOT NULL DEFAULT ''
            );
            CREATE INDEX usage_time ON usage (ts);
            CREATE INDEX usage_role_time ON usage (role, ts);
            CREATE INDEX usage_guild_time ON usage (guild_id, ts);
        "#,
    },
    Migration {
        version: 4,
        name: "initiative: pending thoughts, per-guild state, post outbox",
        sql: r#"
            CREATE TABLE pending_thoughts (
                guild_id    INTEGER PRIMARY KEY,  -- at most one per guild
                draft       TEXT    NOT NULL,
                channel_id  INTEGER,
                revision    INTEGER NOT NULL DEFAULT 1,
                created_at  INTEGER NOT NULL,
                updated_at  INTEGER NOT NULL,
                expires_at  INTEGER NOT NULL,     -- anchored to created_at
                last_reason TEXT    NOT NULL DEFAULT '',
                media       TEXT                  -- JSON media directive, if any
            );
            CREATE TABLE initiative_state (
                guild_id           INTEGER PRIMARY KEY,
                last_considered_at INTEGER
            );
            CREATE TABLE initiative_outbox (
                nonce       TEXT    PRIMARY KEY,
                guild_id    INTEGER NOT NULL,
                channel_id  INTEGER NOT NULL,
                text        TEXT    NOT NULL,
                created_at  INTEGER NOT NULL,
                message_id  INTEGER               -- set once sent
            );
        "#,
    },
    Migration {
        version: 5,
        name: "discovery: sources, items, shares; reactions",
        sql: r#"
            CREATE TABLE discovery_sources (
                id            INTEGER PRIMARY KEY AUTOINCREMENT,
                kind          TEXT    NOT NULL,
                target        TEXT    NOT NULL,
                etag          TEXT,
                last_modified TEXT,
                last_fetch_at INTEGER,
                last_ok_at    INTEGER,
                last_status   TEXT    NOT NULL DEFAULT 'not fetched yet',
                failures      INTEGER NOT NULL DEFAULT 0,
                next_fetch_at INTEGER NOT NULL DEFAULT 0,
                UNIQUE (kind, target)
            );
            CREATE TABLE guild_sources (
                guild_id INTEGER NOT NULL,
                kind     TEXT    NOT NULL,
                target   TEXT    NOT NULL,
                added_by TEXT    NOT NULL,  -- 'model' or 'user:<id>'
                added_at INTEGER NOT NULL,
                PRIMARY KEY (guild_id, kind, target)
            );
            CREATE TABLE feed_items (
                id            INTEGER PRIMARY KEY AUTOINCREMENT,
                source_id     INTEGER NOT NULL REFERENCES discovery_sources (id) ON DELETE CASCADE,
                url           TEXT    NOT NULL,
                canonical_url TEXT    NOT NULL,
                title         TEXT    NOT NULL,
                title_key     TEXT    NOT NULL,
                summary       TEXT    NOT NULL DEFAULT '',
                published_at  INTEGER,
                fetched_at    INTEGER NOT NULL,
                media         TEXT
            );
            CREATE INDEX feed_items_canonical ON feed_items (canonical_url, fetched_at);
            CREATE INDEX feed_items_title ON feed_items (title_key, fetched_at);
            CREATE INDEX feed_items_source ON feed_items (source_id, fetched_at);
            CREATE TABLE feed_shares (
                item_id    INTEGER NOT NULL,
                guild_id   INTEGER NOT NULL,
                channel_id INTEGER NOT NULL,
                message_id INTEGER NOT NULL,
                shared_at  INTEGER NOT NULL,
                PRIMARY KEY (item_id, guild_id)
            );
            CREATE TABLE reactions (
                message_id INTEGER NOT NULL,
                user_id    INTEGER NOT NULL,
                emoji      TEXT    NOT NULL,
                guild_id   INTEGER,
                channel_id INTEGER NOT NULL,
                at         INTEGER NOT NULL,
                PRIMARY KEY (message_id, user_id, emoji)
            );
        "#,
    },
    Migration {
        version: 6,
        name: "memory: facts, full-text index, reinforcements, extraction checkpoints",
        sql: r#"
            CREATE TABLE facts (
                rowid         INTEGER PRIMARY KEY,
                id            TEXT    NOT NULL UNIQUE,
                guild_id      INTEGER,              -- NULL: learned in a direct message
                scope         TEXT    NOT NULL CHECK (scope IN ('guild', 'channel', 'user')),
                channel_id    INTEGER,
                user_id       INTEGER,
                kind          TEXT    NOT NULL,
                importance    TEXT    NOT NULL CHECK (importance IN ('high', 'medium', 'low')),
                subject       TEXT,
                content       TEXT    NOT NULL,
                sources       TEXT    NOT NULL DEFAULT '[]',
                author_id     INTEGER,
                author_name   TEXT,
                created_at    INTEGER NOT NULL,
                updated_at    INTEGER NOT NULL,
                last_seen_at  INTEGER NOT NULL,
                strength      INTEGER NOT NULL DEFAULT 1,
                confidence    REAL    NOT NULL DEFAULT 1.0,
                superseded_by TEXT,
                archived_at   INTEGER,
                tags          TEXT    NOT NULL      -- full-text filter tokens: guild, user, active
            );
            CREATE INDEX facts_scope ON facts (guild_id, scope, channel_id, user_id);
            CREATE INDEX facts_seen ON facts (last_seen_at);
            CREATE TABLE fact_reinforcements (
                fact_id    TEXT    NOT NULL,
                message_id INTEGER,
                at         INTEGER NOT NULL
            );
            CREATE INDEX fact_reinforcements_fact ON fact_reinforcements (fact_id);
            CREATE VIRTUAL TABLE facts_fts USING fts5(
                content, subject, tags, content = 'facts', content_rowid = 'rowid', tokenize = 'porter unicode61'
            );
            CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN
                INSERT INTO facts_fts (rowid, content, subject, tags) VALUES (new.rowid, new.content, new.subject, new.tags);
            END;
            CREATE TRIGGER facts_ad AFTER DELETE ON facts BEGIN
                INSERT INTO facts_fts (facts_fts, rowid, content, subject, tags) VALUES ('delete', old.rowid, old.content, old.subject, old.tags);
            END;
            CREATE TRIGGER facts_au AFTER UPDATE ON facts BEGIN
                INSERT INTO facts_fts (facts_fts, rowid, content, subject, tags) VALUES ('delete', old.rowid, old.content, old.subject, old.tags);
                INSERT INTO facts_fts (rowid, content, subject, tags) VALUES (new.rowid, new.content, new.subject, new.tags);
            END;
            CREATE TABLE extraction_state (
                channel_id      INTEGER PRIMARY KEY,
                last_message_id INTEGER NOT NULL,
                last_run_at     INTEGER NOT NULL
            );
        "#,
    },
    Migration {
        version: 7,
        name: "impulses (tasks, ideas, schedules) and reflex statistics",
        sql: r#"
            CREATE TABLE tasks (
                id         TEXT    PRIMARY KEY,
                guild_id   INTEGER,
                channel_id INTEGER,
                text       TEXT    NOT NULL,
                message    TEXT,                 -- said as is when due (a reminder); else the bot decides
                due_at     INTEGER NOT NULL,
                priority   INTEGER NOT NULL DEFAULT 1,
                context    TEXT    NOT NULL DEFAULT '',
                created_by TEXT    NOT NULL,
                created_at INTEGER NOT NULL,
                fired_at   INTEGER,              -- set before the impulse is queued: fires once
                done_at    INTEGER,
                owner_id   INTEGER               -- the person it belongs to, who may close it
            );
            CREATE INDEX tasks_due ON tasks (fired_at, due_at);
            CREATE TABLE ideas (
                id          TEXT    PRIMARY KEY,
                guild_id    INTEGER,
                text        TEXT    NOT NULL,
                sparked_by  TEXT    NOT NULL DEFAULT '',
                created_at  INTEGER NOT NULL,
                explored_at INTEGER
            );
            CREATE TABLE schedules (
                id            TEXT    PRIMARY KEY,
                guild_id      INTEGER NOT NULL,
                channel_id    INTEGER,
                name          TEXT    NOT NULL,
                cron          TEXT    NOT NULL,
                action        TEXT    NOT NULL,
                created_by    TEXT    NOT NULL,
                created_at    INTEGER NOT NULL,
                last_fired_at INTEGER,
                UNIQUE (guild_id, name)
            );
            CREATE TABLE reflex_stats (
                name      TEXT    PRIMARY KEY,
                fired     INTEGER NOT NULL DEFAULT 0,
                succeeded INTEGER NOT NULL DEFAULT 0,
                failed    INTEGER NOT NULL DEFAULT 0,
                passed    INTEGER NOT NULL DEFAULT 0,
                escalated INTEGER NOT NULL DEFAULT 0,
                total_us  INTEGER NOT NULL DEFAULT 0
            );
            -- guild_id 0: disabled everywhere (by the operator).
            CREATE TABLE reflex_disabled (
                guild_id    INTEGER NOT NULL DEFAULT 0,
                name        TEXT    NOT NULL,
                disabled_at INTEGER NOT NULL,
                reason      TEXT    NOT NULL DEFAULT '',
                PRIMARY KEY (guild_id, name)
            );
        "#,
    },
    Migration {
        version: 8,
        name: "garden: cycles, scheduled queue, scheduler state, fact links; the context stream",
        sql: r#"
            CREATE TABLE garden_cycles (
                id                INTEGER PRIMARY KEY AUTOINCREMENT,
                guild_id          INTEGER,          -- whose memory the model part tended, if any
                trigger           TEXT    NOT NULL,
                started_at        INTEGER NOT NULL,
                ended_at          INTEGER,
                status            TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'incomplete', 'interrupted')),
                todos             TEXT    NOT NULL DEFAULT '[]',
                steps             TEXT    NOT NULL DEFAULT '[]',
                summary           TEXT    NOT NULL DEFAULT '',
                memories_modified INTEGER NOT NULL DEFAULT 0,
                compactions       INTEGER NOT NULL DEFAULT 0,
                proactive_work    TEXT,
                tokens_in         INTEGER NOT NULL DEFAULT 0,
                tokens_out        INTEGER NOT NULL DEFAULT 0,
                rate_limited      INTEGER NOT NULL DEFAULT 0,
                next_wake_at      INTEGER
            );
            CREATE TABLE garden_queue (
                id            TEXT    PRIMARY KEY,
                guild_id      INTEGER,
                scheduled_for INTEGER NOT NULL,
                context       TEXT    NOT NULL,
                priority      TEXT    NOT NULL CHECK (priority IN ('low', 'normal', 'high')),
                created_by    TEXT    NOT NULL,
                created_at    INTEGER NOT NULL,
                done_at       INTEGER,
                done_in_cycle INTEGER
            );
            CREATE INDEX garden_queue_open ON garden_queue (done_at, scheduled_for);
            CREATE TABLE garden_state (
                key   TEXT PRIMARY KEY,
                value TEXT NOT NULL                 -- JSON
            );
            CREATE TABLE fact_links (
                a          TEXT    NOT NULL,
                b          TEXT    NOT NULL,
                relation   TEXT    NOT NULL,
                created_at INTEGER NOT NULL,
                PRIMARY KEY (a, b)
            );
            CREATE TABLE context_stream (
                id         INTEGER PRIMARY KEY AUTOINCREMENT,
                guild_id   INTEGER NOT NULL,
                channel_id INTEGER,              -- where it happened, when in one channel
                ts         INTEGER NOT NULL,
                kind       TEXT    NOT NULL,
                content    TEXT    NOT NULL
            );
            CREATE INDEX context_stream_guild ON context_stream (guild_id, ts);
            CREATE INDEX context_stream_ts ON context_stream (ts);
        "#,
    },
    Migration {
        version: 9,
        name: "voice: opt-outs and the time span of each transcribed utterance",
        sql: r#"
            CREATE TABLE voice_optout (
                guild_id INTEGER NOT NULL,
                user_id  INTEGER NOT NULL,
                at       INTEGER NOT NULL,
                PRIMARY KEY (guild_id, user_id)
            );
            CREATE TABLE voice_utterances (
                message_id       INTEGER PRIMARY KEY,
                voice_channel_id INTEGER NOT NULL,
                started_at       INTEGER NOT NULL,
                ended_at         INTEGER NOT NULL
            );
        "#,
    },
    Migration {
        version: 10,
        name: "messages by channel and id, so extraction finds a channel's new messages without reading the rest",
        // An index on channel_id alone holds the rowid (the message id) after
        // it: `channel_id = ? AND id > ?` seeks straight to the new messages.
        sql: r#"
            CREATE INDEX messages_channel_id ON messages (channel_id);
        "#,
    },
    Migration {
        version: 11,
        name: "indexes for the counts asked every tick: journal by kind and server, usage by role and server, replies and reactions to posts",
        // Without these, "initiative posts of this server in 24 h" and "this
        // role's tokens in this server today" were answered from the
        // server-and-time index (every journal entry or call of the day, on
        // a busy server thousands read to count a handful), and the garden's
        // feedback harvest read every stored message to find replies to the
        // bot's posts, and again per reaction to name who reacted.
        sql: r#"
            CREATE INDEX journal_kind_guild_time ON journal (kind, guild_id, ts);
            CREATE INDEX usage_role_guild_time ON usage (role, guild_id, ts);
            CREATE INDEX messages_reply_to ON messages (reply_to_id);
            CREATE INDEX messages_author_time ON messages (author_id, created_at);
        "#,
    },
    Migration {
        version: 12,
        name: "courtesy: each person's boundaries (the voice opt-out among them), hushes, routines that run in quiet hours",
        // A boundary is the person's, not a server's: an opt-out made on one
        // server now holds on all of them (the earliest one's time is kept).
        sql: r#"
            CREATE TABLE boundaries (
                user_id INTEGER NOT NULL,
                kind    TEXT    NOT NULL CHECK (kind IN ('no_ping', 'no_unprompted', 'no_memory', 'no_voice')),
                at      INTEGER NOT NULL,
                PRIMARY KEY (user_id, kind)
            );
            INSERT INTO boundaries (user_id, kind, at)
                SELECT user_id, 'no_voice', min(at) FROM voice_optout GROUP BY user_id;
            DROP TABLE voice_optout;
            CREATE TABLE hushes (
                guild_id   INTEGER NOT NULL,
                channel_id INTEGER NOT NULL,     -- 0: the whole server
                until      INTEGER NOT NULL,
                by_user    INTEGER NOT NULL,
                by_name    TEXT    NOT NULL,
                at         INTEGER NOT NULL,
                PRIMARY KEY (guild_id, channel_id)
            );
            ALTER TABLE schedules ADD COLUMN during_quiet_hours INTEGER NOT NULL DEFAULT 0;
        "#,
    },
    Migration {
        version: 13,
        name: "the context stream's repeat check: one seek instead of reading the last ten minutes",
        // Every stored message asks "is this line already in the stream from
        // the last ten minutes?". With only (guild_id, ts) to go on, SQLite read
        // every line of those minutes to answer: on a busy server, thousands
        // per message, growing with the traffic (the load harness showed it as
        // over half the CPU of an unaddressed message).
        sql: r#"
            CREATE INDEX context_stream_repeat ON context_stream (guild_id, kind, content, ts);
        "#,
    },
    Migration {
        version: 14,
        name: "the shard plan this data directory was last run with",
        // One row at most: `ambient guild import` refuses a guild the plan
        // does not own, and status shows it. No row: never run with a plan
        // (or last run as the whole bot), so every guild belongs here.
        sql: r#"
            CREATE TABLE shard_plan (
                id          INTEGER PRIMARY KEY CHECK (id = 1),
                first_shard INTEGER NOT NULL,
                last_shard  INTEGER NOT NULL,
                total       INTEGER NOT NULL CHECK (total > 0),
                recorded_at INTEGER NOT NULL
            );
        "#,
    },
    Migration {
        version: 15,
        name: "the people ledger's cursor: the last shared boundary or forget-me event this store applied",
        // A process applies the events other processes append to the people
        // ledger in storage.sharedDir; the cursor moves in the transaction
        // that applies each one, so none is applied twice or skipped.
        sql: r#"
            CREATE TABLE people_cursor (
                ledger_id TEXT    PRIMARY KEY,   -- the ledger's own id (a new sharedDir starts again at 0)
                seq       INTEGER NOT NULL
            );
        "#,
    },
    Migration {
        version: 16,
        name: "the bot's own messages by channel and time, for the hourly cap asked before every answer",
        // "How many messages did the bot send here in the last hour?" is
        // asked before every answer and reaction. From (channel_id,
        // created_at) SQLite read every message of the hour to find the
        // bot's few: on a busy channel thousands per answer. Partial, so
        // people's messages (nearly all of them) cost it nothing.
        sql: r#"
            CREATE INDEX messages_self_time ON messages (channel_id, created_at) WHERE is_self = 1;
        "#,
    },
    Migration {
        version: 17,
        name: "what a message nobody addressed costs: no copy in the context stream, no entries in indexes it is never sought by",
        // Every stored message wrote a second row to context_stream (and
        // three index entries, one over its whole text) to be read back as
        // "name: text"; the stream now reads it from messages, so those
        // copies go. Most messages reply to nothing, and a NULL in an index
        // is an entry all the same: the reply index keeps only replies (a
        // `reply_to_id = ?` still seeks it). And nearly every message writes
        // a routing line to the journal, which is never sought by kind (it
        // is found by time, server or message): the indexes by kind leave
        // routing lines out, and the journal's query says `kind != 'route'`
        // so SQLite may use them.
        sql: r#"
            DELETE FROM context_stream WHERE kind = 'user_message';
            DROP INDEX messages_reply_to;
            CREATE INDEX messages_reply_to ON messages (reply_to_id) WHERE reply_to_id IS NOT NULL;
            DROP INDEX journal_kind_time;
            CREATE INDEX journal_kind_time ON journal (kind, ts) WHERE kind != 'route';
            DROP INDEX journal_kind_guild_time;
            CREATE INDEX journal_kind_guild_time ON journal (kind, guild_id, ts) WHERE kind != 'route';
        "#,
    },
    Migration {
        version: 18,
        name: "the erasure log: every forget-me this store carried out, by person and time",
        // Work that read a person's words before they asked to be forgotten
        // (an extraction waiting on the model) checks it before storing what
        // it learned, and an imported export taken before a forget-me has it
        // applied again. Ids and times only, never anyone's words. The
        // forget-mes carried out before this log existed are read back from
        // the journal's lines about them; the journal did not keep whether
        // the words were asked for, so a forget-me counts as taking them
        // when its line says it erased some (one that asked for them and
        // found none here is read back as without).
        sql: r#"
            CREATE TABLE erasures (
                seq      INTEGER PRIMARY KEY AUTOINCREMENT,
                user_id  INTEGER NOT NULL,
                messages INTEGER NOT NULL,       -- the text of what they said went too
                at       INTEGER NOT NULL        -- Unix ms: what was held of them until then
            );
            INSERT INTO erasures (user_id, messages, at)
                SELECT CAST(substr(summary, 32) AS INTEGER),
                       reason NOT LIKE '%, 0 message(s) erased%',
                       ts
                FROM journal
                WHERE kind = 'memory' AND summary LIKE 'forgot everything about member %'
                ORDER BY ts, id;
        "#,
    },
    Migration {
        version: 19,
        name: "a routine may post even when nobody answered the bot's last unprompted post",
        // Off for every routine there already is: the unanswered gate
        // (initiative.text.maxUnansweredPosts) applies to routines too, and
        // only a routine added to post regardless is let past it.
        sql: r#"
            ALTER TABLE schedules ADD COLUMN even_if_unanswered INTEGER NOT NULL DEFAULT 0;
        "#,
    },
    Migration {
        version: 20,
        name: "the garden's cycles that spent tokens, for the cost per cycle its scheduler reads at every look",
        // "The last five cycles that made model calls" walked back through
        // every cycle since the fifth such one: memory passes that called no
        // model (nearly all of them) are rows the walk reads and drops — on
        // a bot three months old, tens of thousands at every look. Partial,
        // so those rows cost it nothing, and covering, so the walk reads
        // five entries and no row.
        sql: r#"
            CREATE INDEX garden_cycles_spent ON garden_cycles (id, tokens_in, tokens_out)
                WHERE tokens_in + tokens_out > 0;
        "#,
    },
    Migration {
        version: 21,
        name: "retention: usage kept as daily totals once its rows expire; reactions found by server and time",
        // The retention sweep rolls usage rows older than
        // storage.retention.usageDays into one row per day, role, source,
        // server (0: none), provider, model and billing, and removes them
        // in the same transaction; spend history reads both tables. The
        // sweep finds each kind's old rows server by server through a
        // (server, time) index: reactions had none.
        sql: r#"
            CREATE TABLE usage_daily (
                day           TEXT    NOT NULL,   -- YYYY-MM-DD, UTC
                role          TEXT    NOT NULL,
                source        TEXT    NOT NULL,
                guild_id      INTEGER NOT NULL,   -- 0: no server
                provider      TEXT    NOT NULL,
                model         TEXT    NOT NULL,
                pay_per_token INTEGER NOT NULL,
                calls         INTEGER NOT NULL,   -- rows rolled up, refusals included
                ok            INTEGER NOT NULL,
                refused       INTEGER NOT NULL,
                tokens_in     INTEGER NOT NULL,
                tokens_out    INTEGER NOT NULL,
                latency_ms    INTEGER NOT NULL,   -- summed
                PRIMARY KEY (day, role, source, guild_id, provider, model, pay_per_token)
            );
            CREATE INDEX reactions_guild_time ON reactions (guild_id, at);
        "#,
    },
    Migration {
        version: 22,
        name: "servers that removed the bot, and when: their data goes after storage.retention.departedGuildDays",
        // Kept in the store, not in memory, so a bot restarted after the
        // grace period still removes the data; a server that invites the bot
        // back loses its row and nothing else.
        sql: r#"
            CREATE TABLE departed_guilds (
                guild_id    INTEGER PRIMARY KEY,
                departed_at INTEGER NOT NULL      -- Unix ms: when Discord said the bot was removed
            );
        "#,
    },
    Migration {
        version: 23,
        name: "feeds people subscribe to: subscriptions, and each item's delivery",
        // A delivery row is kept for every item a subscription has seen, sent
        // or not: it is what says "delivered before" across restarts. An
        // item waiting to be sent keeps its fields, so a queue outlives the
        // feed dropping the item; `last_seen_at` lets rows of items long gone
        // from the feed be forgotten without re-delivering them.
        sql: r#"
            CREATE TABLE feed_subscriptions (
                id                INTEGER PRIMARY KEY AUTOINCREMENT,
                guild_id          INTEGER NOT NULL,
                source_id         INTEGER NOT NULL REFERENCES discovery_sources (id),
                channel_id        INTEGER NOT NULL,
                destination       TEXT    NOT NULL,   -- channel | thread | forum
                template          TEXT    NOT NULL,
                filters           TEXT    NOT NULL DEFAULT '',
                embed             INTEGER NOT NULL DEFAULT 0,
                dedupe            TEXT    NOT NULL DEFAULT 'guid',
                backfill          INTEGER NOT NULL DEFAULT 0,  -- the newest N delivered when added
                primed            INTEGER NOT NULL DEFAULT 0,  -- the feed's items when added are noted
                paused            TEXT,                         -- why, while paused
                failures          INTEGER NOT NULL DEFAULT 0,  -- fetches failed in a row
                created_by        INTEGER NOT NULL,
                created_at        INTEGER NOT NULL,
                last_delivered_at INTEGER,
                UNIQUE (guild_id, source_id, channel_id)
            );
            CREATE INDEX feed_subscriptions_source ON feed_subscriptions (source_id);
            CREATE TABLE feed_deliveries (
                subscription_id INTEGER NOT NULL REFERENCES feed_subscriptions (id) ON DELETE CASCADE,
                item_key        TEXT    NOT NULL,  -- g:guid, l:canonical link or t:title key
                state           TEXT    NOT NULL,  -- seen | filtered | queued | sending | sent
                item            TEXT,              -- the item's fields (JSON) until it is sent
                published_at    INTEGER,
                first_seen_at   INTEGER NOT NULL,
                last_seen_at    INTEGER NOT NULL,
                sent_at         INTEGER,
                message_id      INTEGER,
                PRIMARY KEY (subscription_id, item_key)
            );
            CREATE INDEX feed_deliveries_waiting ON feed_deliveries (subscription_id, published_at)
                WHERE state IN ('queued', 'sending');
            CREATE INDEX feed_deliveries_sent ON feed_deliveries (subscription_id, sent_at)
                WHERE state = 'sent';
        "#,
    },
    Migration {
        version: 24,
        name: "who was told they may not talk to the bot, and when: once a day per person",
        sql: r#"
            CREATE TABLE access_notices (
                user_id INTEGER PRIMARY KEY,
                told_at INTEGER NOT NULL      -- Unix ms: the last explanation
            );
        "#,
    },
    Migration {
        version: 25,
        name: "direct-message pairing: the codes handed out, and the people an owner approved",
        sql: r#"
            CREATE TABLE dm_pairing_codes (
                code       TEXT    PRIMARY KEY,       -- 6 characters, no look-alikes
                user_id    INTEGER NOT NULL UNIQUE,   -- one code per person at a time
                user_name  TEXT    NOT NULL,
                created_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL
            );
            CREATE TABLE dm_paired (
                user_id     INTEGER PRIMARY KEY,
                approved_by INTEGER NOT NULL,
                approved_at INTEGER NOT NULL
            );
        "#,
    },
    Migration {
        version: 26,
        name: "answers spoken aloud: each server's seconds spoken today, for voice.speech.maxSecondsPerDay, and the no-voice-answers boundary",
        // SQLite cannot widen a CHECK in place: the boundaries are copied
        // into a table that also allows 'no_voice_answers', every row kept.
        sql: r#"
            CREATE TABLE boundaries_26 (
                user_id INTEGER NOT NULL,
                kind    TEXT    NOT NULL CHECK (kind IN ('no_ping', 'no_unprompted', 'no_memory', 'no_voice', 'no_voice_answers')),
                at      INTEGER NOT NULL,
                PRIMARY KEY (user_id, kind)
            );
            INSERT INTO boundaries_26 (user_id, kind, at) SELECT user_id, kind, at FROM boundaries;
            DROP TABLE boundaries;
            ALTER TABLE boundaries_26 RENAME TO boundaries;
            CREATE TABLE voice_speech_spent (
                guild_id INTEGER PRIMARY KEY,
                day      TEXT    NOT NULL,   -- UTC date (YYYY-MM-DD) the count is for
                spent_ms INTEGER NOT NULL    -- milliseconds of audio played that day
            );
        "#,
    },
];

pub fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

pub fn current_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Where a database file's header holds `PRAGMA user_version`: the
/// big-endian 4 bytes at offset 60 of the first 100 (sqlite.org/fileformat.html).
const HEADER: usize = 100;
const VERSION_AT: usize = 60;
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The schema version in the header of the database file at `path`, read
/// without SQLite: `None` when there is no file, or it is not (yet) a whole
/// SQLite header — SQLite itself then creates it or says what is wrong.
pub(crate) fn file_version(path: &Path) -> std::io::Result<Option<u32>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        opened => opened?,
    };
    let mut header = Vec::with_capacity(HEADER);
    file.take(HEADER as u64).read_to_end(&mut header)?;
    if header.len() < HEADER || !header.starts_with(MAGIC) {
        return Ok(None);
    }
    let mut version = [0; 4];
    version.copy_from_slice(&header[VERSION_AT..VERSION_AT + 4]);
    Ok(Some(u32::from_be_bytes(version)))
}

/// Refuses the database file at `path` when its header says a newer
/// ambient wrote it, before SQLite opens it: opening writes (the switch to
/// WAL, the checkpoint a last connection makes as it closes, the -wal and
/// -shm files), and a newer ambient's file must be left exactly as it was.
/// `setting` names where the path comes from, for what to do.
pub(crate) fn refuse_newer_file(path: &Path, known: u32, setting: &'static str) -> Result<()> {
    match file_version(path) {
        Ok(Some(found)) if found > known => Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known,
            setting,
        }),
        // An unreadable file is SQLite's to report, in its own words, when it opens it.
        Ok(_) | Err(_) => Ok(()),
    }
}

/// Refuses an open database newer than `known`, before anything is written
/// to it. The header may be older than what the database holds: a newer
/// ambient's last transactions, its migration among them, can still be in
/// the WAL. Those stay there for it — this connection will not fold them
/// into the file as it closes.
pub(crate) fn refuse_newer(
    conn: &Connection,
    known: u32,
    path: Option<&Path>,
    setting: &'static str,
) -> Result<()> {
    let found = current_version(conn)?;
    if found <= known {
        return Ok(());
    }
    // Harmless to lose: it only fails on a closed connection, which checkpoints nothing.
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    Err(StoreError::TooNew {
        path: path
            .map(Path::to_path_buf)
            .unwrap_or_else(|| ":memory:".into()),
        found,
        known,
        setting,
    })
}

/// Brings the database up to `up_to`, refusing one newer than this binary.
pub(crate) fn apply(conn: &Connection, up_to: u32, path: Option<&Path>) -> Result<()> {
    apply_list(conn, MIGRATIONS, up_to, path)
}

pub(crate) fn apply_list(
    conn: &Connection,
    list: &[Migration],
    up_to: u32,
    path: Option<&Path>,
) -> Result<()> {
    let known = list.last().map_or(0, |m| m.version);
    refuse_newer(conn, known, path, DATA_DIR)?;
    let found = current_version(conn)?;
    for m in list
        .iter()
        .filter(|m| m.version > found && m.version <= up_to)
    {
        let run = || -> rusqlite::Result<()> {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(m.sql)?;
            tx.pragma_update(None, "user_version", m.version)?;
            tx.commit()
        };
        run().map_err(|source| StoreError::Migration {
            version: m.version,
            source,
        })?;
        tracing::info!(version = m.version, name = m.name, "applied migration");
    }
    Ok(())
}

/// The setting naming where the store's file is, for a refusal's advice.
pub(crate) const DATA_DIR: &str = "storage.dataDir";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(
                m.version as usize,
                i + 1,
                "migration {} out of order",
                m.name
            );
        }
    }

    #[test]
    fn fresh_database_reaches_latest_and_reapplying_is_a_no_op() {
        let conn = Connection::open_in_memory().unwrap();
        apply(&conn, latest(), None).unwrap();
        assert_eq!(current_version(&conn).unwrap(), latest());
        apply(&conn, latest(), None).unwrap();
        assert_eq!(current_version(&conn).unwrap(), latest());
    }

    #[test]
    fn a_failing_migration_leaves_the_previous_version_intact() {
        let list = [
            Migration {
                version: 1,
                name: "a",
                sql: "CREATE TABLE a (x INTEGER);",
            },
            Migration {
                version: 2,
                name: "b",
                sql: "CREATE TABLE b (y INTEGER); THIS IS NOT SQL;",
            },
        ];
        let conn = Connection::open_in_memory().unwrap();
        let err = apply_list(&conn, &list, 2, None).unwrap_err();
        assert!(
            matches!(err, StoreError::Migration { version: 2, .. }),
            "{err}"
        );
        assert_eq!(current_version(&conn).unwrap(), 1);
        let b_exists: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'b'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(b_exists, 0, "the half-applied migration was rolled back");
    }

    #[test]
    fn the_version_is_read_from_the_files_header_without_opening_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ambient.db");
        assert_eq!(file_version(&path).unwrap(), None, "no file yet");
        std::fs::write(&path, "not a database").unwrap();
        assert_eq!(file_version(&path).unwrap(), None, "SQLite's to judge");
        std::fs::remove_file(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 7).unwrap();
        drop(conn);
        assert_eq!(file_version(&path).unwrap(), Some(7));
        refuse_newer_file(&path, 7, DATA_DIR).unwrap();
        let err = refuse_newer_file(&path, 6, DATA_DIR)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("has schema version 7, but this ambient only knows up to version 6"),
            "{err}"
        );
    }

    #[test]
    fn newer_database_is_refused_with_a_clear_message() {
        let conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", latest() + 1)
            .unwrap();
        let err = apply(&conn, latest(), Some(Path::new("/data/ambient.db"))).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("written by a newer ambient"), "{msg}");
        assert!(msg.contains("/data/ambient.db"), "{msg}");
    }
}
