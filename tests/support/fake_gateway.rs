//! The fake Discord's gateway sessions and its sharding rules, as strict as
//! Discord's (<https://discord.com/developers/docs/events/gateway#sharding>):
//!
//! - IDENTIFY names `shard: [id, total]` (absent: `[0, 1]`). `total` of 0 or
//!   `id >= total` closes the connection with 4010 (Invalid Shard); a shard
//!   that would serve more than `guilds_per_shard` guilds (Discord: 2,500)
//!   closes with 4011 (Sharding Required). With `only_recommended`, a shard
//!   id at or past the count `/gateway/bot` recommends is 4010 too, as on a
//!   Discord-compatible server that serves only the shards it recommends.
//! - IDENTIFY's `intents` may hold a privileged intent (Server Members,
//!   Presences, Message Content) only if it is switched on for the bot
//!   (`privileged_off` lists those that are not): otherwise 4014
//!   (Disallowed Intents), Discord's answer to a bot whose Message Content
//!   switch was forgotten.
//! - At most one IDENTIFY per `identify_window` (Discord: 5 s) in each of
//!   `max_concurrency` buckets, a shard's bucket being `id % max_concurrency`.
//!   A faster IDENTIFY gets what Discord sends, an invalid session (op 9,
//!   not resumable), and is kept in the identify log as refused, so a test
//!   can assert that none was.
//! - A guild's events go only to the sessions of shard `(guild_id >> 22) %
//!   total`; events without a guild (DMs) only to shard 0's.
//!
//! `fake_discord` holds a [`Session`] per IDENTIFY; a RESUME reattaches a
//! connection to its session and replays what that session missed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Discord's identify window: `max_concurrency` IDENTIFYs per 5 s.
pub const IDENTIFY_WINDOW: Duration = Duration::from_secs(5);

/// Discord asks for more shards past 2,500 guilds on one.
pub const GUILDS_PER_SHARD: usize = 2_500;

/// How much sooner than the window an IDENTIFY may come and still count as
/// on time. Discord does not say how it times the window; serenity spaces
/// its shard starts 5 s apart counted from each websocket's connection, so
/// its IDENTIFYs can arrive a few milliseconds under 5 s apart, and Discord
/// accepts them. A quarter second forgives that and nothing a bot could
/// mean (two processes identifying together are 5 s off, not 0.25 s).
pub const IDENTIFY_GRACE: Duration = Duration::from_millis(250);

/// What the fake's gateway allows and recommends.
#[derive(Clone, Debug)]
pub struct Sharding {
    /// The shard count `/gateway/bot` recommends.
    pub shards: u32,
    /// `session_start_limit.max_concurrency`: identify buckets.
    pub max_concurrency: u32,
    pub identify_window: Duration,
    pub guilds_per_shard: usize,
    /// Every event goes to every session: a Discord-compatible server that
    /// ignores sharding (for testing the bot's own filter behind it).
    pub ignore_sharding: bool,
    /// Only shards below `shards` exist: a higher id is refused with 4010
    /// (Discord itself lets a bot run more shards than it recommends).
    pub only_recommended: bool,
    /// Privileged intents not switched on for the bot in the Developer Portal.
    pub privileged_off: u64,
}

/// Discord's privileged intents: Server Members, Presences, Message Content.
pub const GUILD_MEMBERS: u64 = 1 << 1;
pub const GUILD_PRESENCES: u64 = 1 << 8;
pub const MESSAGE_CONTENT: u64 = 1 << 15;

impl Default for Sharding {
    fn default() -> Self {
        Self {
            shards: 1,
            max_concurrency: 1,
            identify_window: IDENTIFY_WINDOW,
            guilds_per_shard: GUILDS_PER_SHARD,
            ignore_sharding: false,
            only_recommended: false,
            privileged_off: 0,
        }
    }
}

/// The shard a guild's events go to, out of `total`.
pub fn shard_of(guild: u64, total: u32) -> u32 {
    ((guild >> 22) % u64::from(total.max(1))) as u32
}

pub enum Outbound {
    Frame(Value),
    Close(u16),
}

/// One gateway session: opened by IDENTIFY, reattached by RESUME.
pub struct Session {
    pub id: String,
    /// `[shard id, total]` as identified.
    pub shard: [u32; 2],
    pub seq: u64,
    /// Every dispatch of this session, for replay on RESUME.
    pub log: Vec<Value>,
    /// The live connection (its number and sender), if any.
    pub conn: Option<(u64, mpsc::UnboundedSender<Outbound>)>,
}

impl Session {
    /// Whether this session receives an event of `guild` (None: a DM).
    pub fn hears(&self, guild: Option<u64>, rules: &Sharding) -> bool {
        let [id, total] = self.shard;
        rules.ignore_sharding
            || match guild {
                Some(g) => shard_of(g, total) == id,
                None => id == 0,
            }
    }

    /// Numbers `t` in this session, keeps it for a resume and sends it if connected.
    pub fn send(&mut self, t: &str, d: Value) {
        self.seq += 1;
        let frame = json!({"op": 0, "t": t, "s": self.seq, "d": d});
        self.log.push(frame.clone());
        if let Some((_, conn)) = &self.conn {
            // Harmless: a closed connection's events wait in `log` for a resume.
            let _ = conn.send(Outbound::Frame(frame));
        }
    }

    /// Closes the live connection with `code`; the session stays for a resume.
    pub fn close(&mut self, code: u16) {
        if let Some((_, conn)) = self.conn.take() {
            // Harmless: a connection already gone needs no closing.
            let _ = conn.send(Outbound::Close(code));
        }
    }
}

/// One IDENTIFY as the fake answered it.
#[derive(Clone, Debug)]
pub struct Identify {
    pub shard: [u32; 2],
    pub at: Instant,
    pub answer: Answer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// READY, with this shard's guilds.
    Ready,
    /// Closed with 4010.
    InvalidShard,
    /// Closed with 4011.
    ShardingRequired,
    /// Closed with 4014.
    DisallowedIntents,
    /// Op 9 (invalid session): faster than the shard's identify bucket allows.
    RateLimited,
}

impl Answer {
    /// The close code Discord ends the connection with, if it does.
    pub fn close_code(self) -> Option<u16> {
        match self {
            Answer::InvalidShard => Some(4010),
            Answer::ShardingRequired => Some(4011),
            Answer::DisallowedIntents => Some(4014),
            Answer::Ready | Answer::RateLimited => None,
        }
    }
}

/// The `shard` of an IDENTIFY payload (`d`); Discord takes none as `[0, 1]`.
pub fn identified_shard(d: &Value) -> [u32; 2] {
    let part = |i: usize, default: u32| {
        d["shard"][i]
            .as_u64()
            .map_or(default, |n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    [part(0, 0), part(1, 1)]
}

/// Decides one IDENTIFY (its payload `d`) for a bot in `guilds`; `buckets`
/// holds when each identify bucket last let one through.
pub fn judge(
    rules: &Sharding,
    buckets: &mut HashMap<u32, Instant>,
    d: &Value,
    guilds: &[u64],
    now: Instant,
) -> Answer {
    let privileged = GUILD_MEMBERS | GUILD_PRESENCES | MESSAGE_CONTENT;
    if d["intents"].as_u64().unwrap_or(0) & privileged & rules.privileged_off != 0 {
        return Answer::DisallowedIntents;
    }
    let [id, total] = identified_shard(d);
    if total == 0 || id >= total || (rules.only_recommended && id >= rules.shards) {
        return Answer::InvalidShard;
    }
    let served = guilds.iter().filter(|g| shard_of(**g, total) == id).count();
    if served > rules.guilds_per_shard {
        return Answer::ShardingRequired;
    }
    let bucket = id % rules.max_concurrency.max(1);
    let soonest = rules.identify_window.saturating_sub(IDENTIFY_GRACE);
    if let Some(last) = buckets.get(&bucket)
        && now.saturating_duration_since(*last) < soonest
    {
        return Answer::RateLimited;
    }
    buckets.insert(bucket, now);
    Answer::Ready
}
