//! A fake Discord on 127.0.0.1: enough of the REST API (v10) and the JSON
//! gateway for the real serenity/poise client to connect, receive events and
//! answer, while the test plays the people in one guild.
//!
//! The gateway sends HELLO, answers IDENTIFY with READY and GUILD_CREATE,
//! ACKs heartbeats, and on RESUME replays the events after the client's
//! sequence number (or from an earlier one, to simulate Discord delivering
//! again) and sends RESUMED. It is sharded as Discord is (`fake_gateway`):
//! `/gateway/bot` recommends `sharding.shards`, IDENTIFY's shard is checked
//! and rate limited per identify bucket, and each event goes only to the
//! sessions of its guild's shard (a DM to shard 0's). Every REST request is recorded; messages the bot
//! creates get ids, are echoed as MESSAGE_CREATE like Discord does, and a
//! repeated nonce with `enforce_nonce` returns the first message instead of a
//! new one. The bot may edit its own messages (`PATCH`, with Discord's
//! checks and an edit rate limit a test can set). The typing route can be
//! made to hang, as a stuck Discord route does: the request is recorded and
//! answered only after the hang, or never if the bot gives up on it first.
//! Each dispatched payload is first parsed with serenity's own type,
//! because serenity silently drops one it cannot parse.
//!
//! A server can remove the bot ([`FakeDiscord::remove_bot`]: GUILD_DELETE
//! with only its `id`, as Discord sends a kick, ban or leave) and invite it
//! back (GUILD_CREATE), or go through an outage ([`FakeDiscord::outage`]:
//! GUILD_DELETE with `unavailable: true`, then GUILD_CREATE when it is
//! over). As on Discord, a server that removed the bot is not in its READY
//! and sends it no events, and a send to one of its channels is refused
//! with 403 Missing Access (50001); a server in an outage is in READY as
//! unavailable, with no GUILD_CREATE and no events until it is back.
//!
//! Replies and pings are computed as Discord computes them: a
//! `message_reference` must name a message of the same channel (an unknown
//! one — deleted, or never saved — is refused with 400 50035 unless
//! `fail_if_not_exists` is false, which sends a plain message instead; a test
//! can make the server answer as a Discord-compatible one did instead, see
//! [`UnknownReference`]), and the body is checked before its nonce is looked
//! up, so a refused body is refused again when it is sent again; the message
//! pings the mentions its text makes, narrowed
//! by `allowed_mentions`, plus the replied-to author unless
//! `allowed_mentions.replied_user` is false. Who was pinged is kept on the
//! created message (`mentions`, the roles in `mention_roles`, `@everyone` or
//! `@here` in `mention_everyone`), as Discord shows it; `parse` naming
//! "users" or "roles" beside a list of them is Discord's 400.
//!
//! Every REST route but the CDN's answers 401 `{"message": "401:
//! Unauthorized", "code": 0}`, as Discord does, to a request whose
//! `Authorization` is missing or is not `Bot test-token-abc` ([`TOKEN`]), and
//! acts on nothing in it (it is only recorded); a test that posts to the fake
//! itself does so as the bot ([`bot_http`]). Every answer has a
//! `Date` header, off by [`World::clock_skew`] seconds when a test sets it.
//! What `ambient doctor` reads is served as Discord serves it: the
//! application's `flags` ([`World::app_flags`]), the bot's guilds, a guild's
//! roles (permissions as decimal strings; @everyone's id is the guild's), the
//! bot's member (with its role [`BOT_ROLE`]), the channels with their
//! `permission_overwrites` (`type` 0 a role, 1 a member) — among them, when
//! a test asks ([`World::voice_channel`]), the voice channel #lounge — and
//! the slash commands the bot registered (kept per route, empty until it does).
//!
//! Threads and forum channels (`threads`): starting a thread from a message,
//! a forum post with its tags, a thread without a starter, messages into a
//! thread (an archived one unarchived by them), `GET /channels/{id}`, a
//! guild's open threads (`GET /guilds/{g}/threads/active`), and their
//! refusals with Discord's codes. Every message created — in a channel,
//! a thread or a forum post — is checked against Discord's embed limits
//! (`embeds`) as well as its 2,000 characters.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::fake_gateway::{self as gw, Answer, Identify, Outbound, Session, Sharding};

mod embeds;
pub mod threads;

pub const BOT: u64 = 10_000;
pub const APP: u64 = 10_000;
pub const GUILD: u64 = 100;
pub const GENERAL: u64 = 200;
pub const RANDOM: u64 = 201;
pub const DM_CHANNEL: u64 = 900;
/// A voice channel (type 2) in the test guild, there only when [`World::voice_channel`] says.
pub const LOUNGE: u64 = 202;
/// The role Discord gives the bot when it is invited (managed, named after it).
pub const BOT_ROLE: u64 = 300;
/// The only token the fake Discord accepts.
pub const TOKEN: &str = "test-token-abc";

/// An HTTP client that sends what the bot's library sends with each request
/// (`Authorization: Bot` [`TOKEN`]): for the tests that post to the fake
/// themselves, which the fake refuses without it as Discord does.
pub fn bot_http() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let authorization = format!("Bot {TOKEN}")
        .parse()
        .expect("a valid header value");
    headers.insert(reqwest::header::AUTHORIZATION, authorization);
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .expect("a client with a default header")
}

/// Application flags (`GET /applications/@me`): the privileged intents switched on in the portal.
pub const GATEWAY_GUILD_MEMBERS_LIMITED: u64 = 1 << 15;
pub const GATEWAY_MESSAGE_CONTENT: u64 = 1 << 18;
pub const GATEWAY_MESSAGE_CONTENT_LIMITED: u64 = 1 << 19;

#[derive(Clone, Copy, Debug)]
pub struct Person {
    pub id: u64,
    pub name: &'static str,
}

pub const ALICE: Person = Person {
    id: 3,
    name: "alice",
};
pub const BOB: Person = Person { id: 4, name: "bob" };
/// Not in the server until she joins (`FakeDiscord::member_joins`).
pub const CAROL: Person = Person {
    id: 5,
    name: "carol",
};

/// Discord permission bits used in tests.
pub const MANAGE_GUILD: u64 = 1 << 5;

#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Value,
}

#[derive(Default)]
pub struct World {
    /// Every dispatch, whichever sessions it went to (`t` and `d`), for `log_of`.
    log: Vec<Value>,
    /// One per IDENTIFY let through, until the shard identifies again.
    sessions: Vec<Session>,
    /// Numbers the gateway's connections, so a closing one detaches only itself.
    next_conn: u64,
    /// What the gateway recommends and allows (see `fake_gateway`).
    pub sharding: Sharding,
    /// Every IDENTIFY, answered or refused, oldest first.
    pub identify_log: Vec<Identify>,
    /// When each identify bucket last let one through.
    identify_buckets: HashMap<u32, Instant>,
    /// The test guild (`GUILD`) is left out: only the extra servers are served.
    pub without_test_guild: bool,
    /// IDENTIFYs answered with READY.
    pub identifies: u32,
    pub resumes: u32,
    /// The `d` of each voice state update (op 4) the bot sent on the gateway,
    /// oldest first: how a bot asks Discord to join or leave a voice channel.
    /// Not answered: no voice server is announced, so a join waits.
    pub voice_state_updates: Vec<Value>,
    replay_from: Option<u64>,
    pub requests: Vec<Request>,
    nonces: HashMap<String, Value>,
    messages: HashMap<u64, Value>,
    next_id: u64,
    /// Channels where the bot lacks Send Messages: posting there gets Discord's 403.
    pub no_send: Vec<u64>,
    /// The next N sends create their message but answer with a body nobody can read.
    pub garble_sends: u32,
    /// The next N threads or forum posts made are answered with a body nobody
    /// can read (the outcome a crash or a dropped connection leaves unknown).
    pub garble_threads: u32,
    /// How a `message_reference` to a message the server does not know is answered.
    pub unknown_reference: UnknownReference,
    /// People's messages are announced (MESSAGE_CREATE) before the server has
    /// saved them, as a Discord-compatible server's were: until
    /// [`FakeDiscord::save_late`], a reply to one finds it unknown.
    pub saves_late: bool,
    /// Announced and not yet saved (see `saves_late`).
    unsaved: Vec<(u64, Value)>,
    /// RESUME is answered with an invalid session (not resumable): the client must identify anew.
    pub refuse_resume: bool,
    /// The gateway is down: every connection is accepted and closed at once,
    /// cleanly (the case serenity retries with no pause).
    pub gateway_down: bool,
    /// Websocket connections opened to the gateway, down or not.
    pub gateway_attempts: u32,
    /// Where `/gateway` and `/gateway/bot` send the bot, in place of this
    /// server's own gateway (a `wss://` one, say).
    pub gateway_url: Option<String>,
    /// The rate-limit bucket of message sends (see `SendBucket`).
    pub send_bucket: SendBucket,
    /// The bucket of thread and forum-post creation, Discord's own one
    /// beside the sends' (see [`FakeDiscord::storm_threads`]).
    pub thread_bucket: SendBucket,
    /// When each REST request arrived, one per entry of `requests`.
    pub request_times: Vec<Instant>,
    /// When each message the test sent was dispatched, by id.
    pub said_at: HashMap<u64, Instant>,
    /// More servers beside the test guild, each with this many text channels
    /// (see [`FakeDiscord::start_with_guilds`]): (servers, channels each).
    pub more_guilds: (u32, u32),
    /// Servers that removed the bot (see [`FakeDiscord::remove_bot`]).
    pub left: Vec<u64>,
    /// Servers in an outage (see [`FakeDiscord::outage`]).
    pub unavailable: Vec<u64>,
    /// How edits of the bot's messages are limited (see `EditLimit`).
    pub edit_limit: EditLimit,
    /// Every edit attempt (`PATCH /channels/{c}/messages/{m}`), answered or refused.
    pub edits: Vec<EditAttempt>,
    /// Files people attached, by CDN path (see `FakeDiscord::upload`).
    uploads: HashMap<String, Upload>,
    /// How long `POST /channels/{id}/typing` takes to answer, as a stuck
    /// Discord route would (see [`FakeDiscord::hang_typing`]); none: at once.
    pub typing_hang: Option<Duration>,
    /// Typing requests received and not yet answered or abandoned by the bot.
    pub typing_open: u32,
    /// The `heartbeat_interval` HELLO asks for; none: Discord's 41.25 s.
    pub heartbeat_interval: Option<Duration>,
    /// The application's `flags`: by default Message Content and Server
    /// Members on (their `_LIMITED` bits, as for a bot in under 100 servers).
    pub app_flags: u64,
    /// @everyone's permissions in every server, in GUILD_CREATE and REST
    /// alike; none: Administrator (8), so serenity's cached checks pass.
    pub everyone_permissions: Option<u64>,
    /// The `permission_overwrites` of a channel, by channel id (none: `[]`).
    pub overwrites: HashMap<u64, Vec<Value>>,
    /// The slash commands registered, by route (`/applications/{app}/commands`
    /// or `/applications/{app}/guilds/{guild}/commands`), as last PUT.
    pub commands: HashMap<String, Vec<Value>>,
    /// How far the `Date` header is from the true time, in seconds (+: ahead).
    pub clock_skew: i64,
    /// The test guild also has the voice channel #lounge ([`LOUNGE`]), for
    /// the tests of voice; off, it has its two text channels only.
    pub voice_channel: bool,
    /// Payloads as Discord sends them (`discord_shapes`): the test guild's
    /// GUILD_CREATE a server of 500 members and 100 channels, and people's
    /// messages 2–6 KB each with members, mentions, replies, embeds and
    /// pictures. Off, the few fields the tests need. The load harness's `--shaped`.
    pub shaped: bool,
    /// The last message a person said in each channel (a shaped reply's target).
    last_said: HashMap<u64, u64>,
    /// Each person's role ids in the test guild, sent in their messages'
    /// `member.roles` (none unless set here).
    pub member_roles: HashMap<u64, Vec<u64>>,
    /// The test guild also has the forum, #releases and #announcements
    /// (see [`FakeDiscord::add_feed_channels`]), the forum with these `flags`.
    pub feed_channels: bool,
    pub forum_flags: u64,
    /// Channels where the bot lacks Create Public Threads: starting one gets 403 50013.
    pub no_threads: Vec<u64>,
    /// Every thread and forum post, by id (its channel object).
    threads: BTreeMap<u64, Value>,
}

/// How the server answers a `message_reference` to a message it does not know.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnknownReference {
    /// As Discord: 400, code 50035 "Invalid Form Body" with the
    /// `message_reference` error MESSAGE_REFERENCE_UNKNOWN_MESSAGE, unless
    /// `fail_if_not_exists` is false (then a plain message is sent).
    #[default]
    Discord,
    /// Discord's 400 whatever `fail_if_not_exists` says (a compatible server
    /// that does not know the field).
    Refused,
    /// 404 Unknown Message (10008) whatever `fail_if_not_exists` says, as a
    /// Discord-compatible server answered.
    NotFound,
}

/// A file a person attached, as the CDN keeps it.
struct Upload {
    bytes: Vec<u8>,
    content_type: String,
    /// The URL's signature (`hm`) and expiry (`ex`, Unix seconds): Discord's
    /// CDN answers 404 to a URL without a valid, unexpired signature.
    signature: String,
    expires: u64,
}

impl World {
    /// `options` as Discord sends them for `/command sub`: each typed as the
    /// bot registered it (a boolean, an integer, a channel with its
    /// `resolved` entry, else a string); before the bot registers any,
    /// "true"/"false" is a boolean and anything else a string.
    fn typed_options(
        &self,
        command: &str,
        sub: &str,
        options: &[(&str, &str)],
    ) -> (Vec<Value>, Value) {
        let declared: HashMap<String, u64> = self
            .commands
            .values()
            .flatten()
            .filter(|c| c["name"] == command)
            .flat_map(|c| c["options"].as_array().cloned().unwrap_or_default())
            .filter(|o| o["type"] == 1 && o["name"] == sub)
            .flat_map(|o| o["options"].as_array().cloned().unwrap_or_default())
            .filter_map(|o| Some((o["name"].as_str()?.to_string(), o["type"].as_u64()?)))
            .collect();
        let mut channels = serde_json::Map::new();
        let opts = options
            .iter()
            .map(|(name, value)| {
                let guess = if matches!(*value, "true" | "false") {
                    5
                } else {
                    3
                };
                match declared.get(*name).copied().unwrap_or(guess) {
                    5 => json!({"type": 5, "name": name, "value": *value == "true"}),
                    4 => {
                        let n: i64 = value.parse().unwrap_or_else(|_| {
                            panic!(
                                "option {name} is an integer; Discord's client sends no {value:?}"
                            )
                        });
                        json!({"type": 4, "name": name, "value": n})
                    }
                    7 => {
                        let channel = value.parse().ok().and_then(|c| self.channel(c));
                        let mut channel = channel.unwrap_or_else(|| {
                            panic!("option {name}: Discord's client offers no channel {value}")
                        });
                        channel["permissions"] = json!("2147483647");
                        channels.insert(value.to_string(), channel);
                        json!({"type": 7, "name": name, "value": value})
                    }
                    kind => json!({"type": kind, "name": name, "value": value}),
                }
            })
            .collect();
        (opts, json!({"channels": channels}))
    }
}

impl World {
    /// The server a (non-DM) channel belongs to: an extra server's, or the test guild.
    fn guild_of(&self, channel: u64) -> u64 {
        let (more, _) = self.more_guilds;
        match (channel >> 22).checked_sub(1_000) {
            Some(i) if i < u64::from(more) => extra_guild(i as u32),
            _ => GUILD,
        }
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        1_500_000_000_000_000_000 + self.next_id
    }

    /// Sends a dispatch to every session that hears its guild (the payload's
    /// `guild_id`, a GUILD_CREATE's `id`; none: a DM, shard 0), numbered in
    /// each session and kept there for resumes.
    fn dispatch(&mut self, t: &str, d: Value) {
        let guild = match t {
            "GUILD_CREATE" | "GUILD_DELETE" => d["id"].as_str(),
            _ => d["guild_id"].as_str(),
        }
        .and_then(|g| g.parse::<u64>().ok());
        // Discord sends nothing of a server the bot is not in, or that is down.
        let absent = |g: &u64| self.left.contains(g) || self.unavailable.contains(g);
        if !t.starts_with("GUILD_") && guild.as_ref().is_some_and(absent) {
            return;
        }
        self.log.push(json!({"t": t, "d": d}));
        let rules = self.sharding.clone();
        for s in self.sessions.iter_mut().filter(|s| s.hears(guild, &rules)) {
            s.send(t, d.clone());
        }
    }

    /// The guilds the bot is in: the test guild (unless left out) and the
    /// extra servers, but for those that removed it.
    pub fn guilds(&self) -> Vec<u64> {
        let (more, _) = self.more_guilds;
        (!self.without_test_guild)
            .then_some(GUILD)
            .into_iter()
            .chain((0..more).map(extra_guild))
            .filter(|g| !self.left.contains(g))
            .collect()
    }

    /// A server's GUILD_CREATE: the test guild's, or an extra server's.
    pub fn guild_create_of(&self, guild: u64) -> Value {
        let (_, channels) = self.more_guilds;
        let mut g = match guild {
            GUILD if self.shaped => super::discord_shapes::guild_create(guild_create()),
            GUILD => guild_create(),
            g => extra_guild_create(((g >> 22) - 1_000) as u32, channels),
        };
        if guild == GUILD && self.voice_channel {
            g["channels"].as_array_mut().unwrap().push(
                json!({"id": LOUNGE.to_string(), "type": 2, "name": "lounge",
                       "guild_id": GUILD.to_string(), "bitrate": 64000, "user_limit": 0}),
            );
        }
        if guild == GUILD && self.feed_channels {
            let channels = g["channels"].as_array_mut().unwrap();
            channels.extend(threads::feed_channels(self.forum_flags));
        }
        if let Some(p) = self.everyone_permissions {
            g["roles"][0]["permissions"] = json!(p.to_string());
        }
        g["threads"] = json!(self.active_threads(guild));
        g
    }

    /// A server as `GET /guilds/{id}` serves it: its GUILD_CREATE without the
    /// gateway-only fields, with the bot's own role beside @everyone.
    fn guild_rest(&self, guild: u64) -> Value {
        let mut g = self.guild_create_of(guild);
        let o = g.as_object_mut().unwrap();
        for gateway_only in [
            "channels",
            "members",
            "voice_states",
            "threads",
            "presences",
            "joined_at",
            "large",
            "member_count",
            "stage_instances",
            "guild_scheduled_events",
        ] {
            o.remove(gateway_only);
        }
        g["roles"].as_array_mut().unwrap().push(json!({
            "id": BOT_ROLE.to_string(), "name": "ambient", "color": 0, "hoist": false,
            "managed": true, "permissions": "0", "position": 1,
            "tags": {"bot_id": BOT.to_string()}}));
        g
    }

    /// A server's channels as `GET /guilds/{id}/channels` serves them.
    fn channels_rest(&self, guild: u64) -> Value {
        let channels = self.guild_create_of(guild)["channels"].clone();
        let listed: Vec<Value> = channels
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                let id: u64 = c["id"].as_str().and_then(|i| i.parse().ok()).unwrap_or(0);
                c["position"] = json!(i);
                c["permission_overwrites"] =
                    json!(self.overwrites.get(&id).cloned().unwrap_or_default());
                c
            })
            .collect();
        json!(listed)
    }

    /// The IDENTIFYs refused for coming faster than their bucket allows.
    pub fn identifies_refused(&self) -> Vec<Identify> {
        self.identify_log
            .iter()
            .filter(|i| i.answer == Answer::RateLimited)
            .cloned()
            .collect()
    }

    /// The shards that identified successfully, `[id, total]`, in order.
    pub fn identified_shards(&self) -> Vec<[u32; 2]> {
        self.identify_log
            .iter()
            .filter(|i| i.answer == Answer::Ready)
            .map(|i| i.shard)
            .collect()
    }

    /// Closes every live gateway connection with `code`.
    fn close_all(&mut self, code: u16) {
        for s in &mut self.sessions {
            s.close(code);
        }
    }

    /// For each reaction the bot added to a message the test sent: how long
    /// after that message was dispatched the reaction arrived.
    pub fn reaction_latencies(&self) -> Vec<Duration> {
        self.requests
            .iter()
            .zip(&self.request_times)
            .filter(|(r, _)| r.method == "PUT" && r.path.contains("/reactions/"))
            .filter_map(|(r, at)| {
                let message: u64 = r.path.split('/').nth(4)?.parse().ok()?;
                Some(at.saturating_duration_since(*self.said_at.get(&message)?))
            })
            .collect()
    }

    /// The payloads of every dispatched event of type `t`, oldest first.
    pub fn log_of(&self, t: &str) -> Vec<Value> {
        self.log
            .iter()
            .filter(|f| f["t"] == t)
            .map(|f| f["d"].clone())
            .collect()
    }

    /// Requests whose method and path match.
    pub fn find(&self, method: &str, path_contains: &str) -> Vec<Request> {
        self.requests
            .iter()
            .filter(|r| r.method == method && r.path.contains(path_contains))
            .cloned()
            .collect()
    }

    /// What the bot answered to interaction `id` (initial callback or follow-up bodies).
    pub fn interaction_replies(&self, id: u64) -> Vec<Value> {
        self.requests
            .iter()
            .filter(|r| {
                r.path.contains(&format!("/interactions/{id}/"))
                    || r.path.contains(&format!("/webhooks/{APP}/token-{id}"))
            })
            .map(|r| r.body.clone())
            .collect()
    }

    /// Messages the bot posted in `channel`, as request bodies.
    pub fn sent_in(&self, channel: u64) -> Vec<Value> {
        self.find("POST", &format!("/channels/{channel}/messages"))
            .into_iter()
            .map(|r| r.body)
            .collect()
    }

    /// Who each message the bot created in `channel` pinged, oldest first
    /// (Discord's `mentions`, replied-to author included).
    pub fn pinged_in(&self, channel: u64) -> Vec<Vec<u64>> {
        self.posted_in(channel)
            .iter()
            .map(|m| {
                m["mentions"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|u| u["id"].as_str()?.parse().ok())
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The messages the bot created in `channel` as Discord shows them
    /// (with their `attachments`), oldest first.
    pub fn posted_in(&self, channel: u64) -> Vec<Value> {
        let mut found: Vec<(u64, Value)> = self
            .messages
            .iter()
            .filter(|(_, m)| m["channel_id"] == channel.to_string().as_str())
            .filter(|(_, m)| m["author"]["id"] == BOT.to_string().as_str())
            .map(|(id, m)| (*id, m.clone()))
            .collect();
        found.sort_by_key(|(id, _)| *id);
        found.into_iter().map(|(_, m)| m).collect()
    }
}

// --- Message edits: only the author, 2,000 characters, 429 when too fast ---------------------

/// One `PATCH /channels/{c}/messages/{m}` as the fake answered it.
#[derive(Clone, Debug)]
pub struct EditAttempt {
    pub message: u64,
    pub at: Instant,
    pub content: String,
    pub status: u16,
}

/// Limits on editing a message. As on Discord, a limited edit gets 429 with
/// `retry-after` and the `X-RateLimit-*` headers, and a successful one says
/// how much of its bucket is left.
#[derive(Clone, Debug, Default)]
pub struct EditLimit {
    /// Each message may be edited once per this; zero: no limit.
    pub per_message: Duration,
    /// The next N edits are answered 429 with `retry_after`, whatever the pace.
    pub storm: u32,
    pub retry_after: Duration,
    last: HashMap<u64, Instant>,
    blocked_until: HashMap<u64, Instant>,
}

impl EditLimit {
    /// Ok(headers for the answer), or Err(the wait a 429 asks for).
    fn admit(&mut self, message: u64, now: Instant) -> Result<Vec<(String, String)>, Duration> {
        if let Some(until) = self.blocked_until.get(&message).filter(|u| **u > now) {
            return Err(*until - now);
        }
        if self.storm > 0 {
            self.storm -= 1;
            self.blocked_until.insert(message, now + self.retry_after);
            return Err(self.retry_after);
        }
        if self.per_message.is_zero() {
            return Ok(Vec::new());
        }
        if let Some(last) = self.last.get(&message) {
            let free = *last + self.per_message;
            if free > now {
                return Err(free - now);
            }
        }
        self.last.insert(message, now);
        Ok(edit_headers(0, self.per_message))
    }
}

fn edit_headers(remaining: u32, reset_after: Duration) -> Vec<(String, String)> {
    vec![
        ("x-ratelimit-limit".into(), "1".into()),
        ("x-ratelimit-remaining".into(), remaining.to_string()),
        (
            "x-ratelimit-reset-after".into(),
            format!("{:.3}", reset_after.as_secs_f64()),
        ),
        ("x-ratelimit-bucket".into(), "fake-edit-bucket".into()),
    ]
}

fn edit_429(wait: Duration) -> Response {
    let secs = wait.as_secs_f64();
    let mut headers = edit_headers(0, wait);
    headers.push(("retry-after".into(), format!("{secs:.3}")));
    headers.push(("x-ratelimit-scope".into(), "user".into()));
    let body =
        json!({"message": "You are being rate limited.", "retry_after": secs, "global": false});
    with_headers(
        (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response(),
        &headers,
    )
}

impl FakeDiscord {
    /// Each message may be edited at most once per `per_message`; a faster edit gets 429.
    pub fn rate_limit_edits(&self, per_message: Duration) {
        self.with(|w| w.edit_limit.per_message = per_message);
    }

    /// The next `n` edits get 429 with `retry_after` (an edit inside the wait gets another).
    pub fn storm_edits(&self, n: u32, retry_after: Duration) {
        self.with(|w| {
            w.edit_limit.storm = n;
            w.edit_limit.retry_after = retry_after;
        });
    }

    /// Every edit attempt of `message`, oldest first.
    pub fn edits_of(&self, message: u64) -> Vec<EditAttempt> {
        self.with(|w| {
            w.edits
                .iter()
                .filter(|e| e.message == message)
                .cloned()
                .collect()
        })
    }
}

/// `PATCH /channels/{channel}/messages/{id}`: Discord's checks in Discord's
/// order (rate limit, then the message, its author, the body), then the
/// edit, echoed as MESSAGE_UPDATE.
fn edit_message(w: &mut World, channel: u64, id: u64, body: &Value) -> Response {
    let content = body["content"].as_str().unwrap_or("").to_string();
    let attempt = |status: u16| EditAttempt {
        message: id,
        at: Instant::now(),
        content: content.clone(),
        status,
    };
    let headers = match w.edit_limit.admit(id, Instant::now()) {
        Ok(h) => h,
        Err(wait) => {
            w.edits.push(attempt(429));
            return edit_429(wait);
        }
    };
    let refuse = |status: StatusCode, body: Value| (status, axum::Json(body)).into_response();
    let refused = match w.messages.get(&id) {
        Some(m) if m["channel_id"] != channel.to_string().as_str() => Some(refuse(
            StatusCode::NOT_FOUND,
            json!({"message": "Unknown Message", "code": 10008}),
        )),
        None => Some(refuse(
            StatusCode::NOT_FOUND,
            json!({"message": "Unknown Message", "code": 10008}),
        )),
        Some(m) if m["author"]["id"] != BOT.to_string().as_str() => Some(refuse(
            StatusCode::FORBIDDEN,
            json!({"message": "Cannot edit a message authored by another user", "code": 50005}),
        )),
        // An archived thread's messages stay as they were: editing does not reopen it.
        Some(_) if threads::archived(w, channel) => Some(refuse(
            StatusCode::BAD_REQUEST,
            json!({"message": "Thread is archived", "code": 50083}),
        )),
        Some(_) => message_body_errors(body).map(threads::form_errors),
    };
    if let Some(r) = refused {
        w.edits.push(attempt(r.status().as_u16()));
        return r;
    }
    // An edited reply pings its author again only as `replied_user` says, like a new one.
    let replied_author = w.messages[&id]["referenced_message"].get("author").cloned();
    let (users, everyone, roles) = match computed_mentions(
        &content,
        &body["allowed_mentions"],
        replied_author.as_ref(),
    ) {
        Ok(found) => found,
        Err(why) => {
            w.edits.push(attempt(400));
            return refuse(
                StatusCode::BAD_REQUEST,
                json!({"message": "Invalid Form Body", "code": 50035,
                    "errors": {"allowed_mentions": {"_errors": [{"code": "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", "message": why}]}}}),
            );
        }
    };
    let m = w.messages.get_mut(&id).expect("checked above");
    m["content"] = json!(content);
    if !body["embeds"].is_null() {
        m["embeds"] = embeds::as_kept(&body["embeds"]);
    }
    m["edited_timestamp"] = json!(now_iso());
    m["mentions"] = json!(users);
    m["mention_everyone"] = json!(everyone);
    m["mention_roles"] = json!(roles);
    let m = m.clone();
    w.edits.push(attempt(200));
    check("MESSAGE_UPDATE", &m);
    w.dispatch("MESSAGE_UPDATE", m.clone());
    with_headers((StatusCode::OK, axum::Json(m)).into_response(), &headers)
}

// --- REST rate limits: 429s as Discord sends them -------------------------------------------

/// The bucket of message sends (`POST /channels/{id}/messages`). As on
/// Discord, its limit counts per channel (a thread is a channel of its own),
/// a send inside a block gets 429 again (with what is left of the wait), and
/// every answer on the route carries the `X-RateLimit-*` headers. A storm
/// (see [`FakeDiscord::storm_sends`]) holds every channel.
#[derive(Clone, Debug, Default)]
pub struct SendBucket {
    /// Sends allowed per window in each channel; 0: no limit.
    pub limit: u32,
    pub window: Duration,
    /// The next N sends are answered 429 with `retry_after`, whatever the count.
    pub storm: u32,
    pub retry_after: Duration,
    /// Storm 429s are global (`X-RateLimit-Global`, scope "global").
    pub global: bool,
    /// Until when the last storm 429 holds every send.
    storm_until: Option<Instant>,
    /// Each channel's window: its start, the sends in it, and its block.
    windows: HashMap<u64, SendWindow>,
}

#[derive(Clone, Debug)]
struct SendWindow {
    start: Instant,
    used: u32,
    blocked_until: Option<Instant>,
}

impl SendBucket {
    /// Decides on one send to `channel`: Ok(headers for the answer) or Err(the 429).
    #[allow(clippy::result_large_err)] // the refusal is the fake's whole HTTP answer, built once per refused send
    fn admit(&mut self, channel: u64, now: Instant) -> Result<Vec<(String, String)>, Response> {
        if let Some(until) = self.storm_until.filter(|u| *u > now) {
            return Err(self.too_many(until - now, self.global));
        }
        if self.storm > 0 {
            self.storm -= 1;
            self.storm_until = Some(now + self.retry_after);
            return Err(self.too_many(self.retry_after, self.global));
        }
        if self.limit == 0 {
            return Ok(Vec::new());
        }
        let (limit, window) = (self.limit, self.window);
        let w = self.windows.entry(channel).or_insert(SendWindow {
            start: now,
            used: 0,
            blocked_until: None,
        });
        if let Some(until) = w.blocked_until.filter(|u| *u > now) {
            return Err(self.too_many(until - now, false));
        }
        if now >= w.start + window {
            *w = SendWindow {
                start: now,
                used: 0,
                blocked_until: None,
            };
        }
        let reset_after = (w.start + window).saturating_duration_since(now);
        if w.used >= limit {
            w.blocked_until = Some(now + reset_after);
            return Err(self.too_many(reset_after, false));
        }
        w.used += 1;
        let remaining = limit - w.used;
        Ok(self.headers(remaining, reset_after))
    }

    fn headers(&self, remaining: u32, reset_after: Duration) -> Vec<(String, String)> {
        let reset = std::time::SystemTime::now() + reset_after;
        let reset = reset
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        vec![
            ("x-ratelimit-limit".into(), self.limit.max(1).to_string()),
            ("x-ratelimit-remaining".into(), remaining.to_string()),
            ("x-ratelimit-reset".into(), format!("{reset:.3}")),
            (
                "x-ratelimit-reset-after".into(),
                format!("{:.3}", reset_after.as_secs_f64()),
            ),
            ("x-ratelimit-bucket".into(), "fake-send-bucket".into()),
        ]
    }

    fn too_many(&self, wait: Duration, global: bool) -> Response {
        let secs = wait.as_secs_f64();
        let mut headers = self.headers(0, wait);
        headers.push(("retry-after".into(), format!("{secs:.3}")));
        let scope = if global { "global" } else { "user" };
        headers.push(("x-ratelimit-scope".into(), scope.into()));
        if global {
            headers.push(("x-ratelimit-global".into(), "true".into()));
        }
        let body = json!({"message": "You are being rate limited.", "retry_after": secs,
            "global": global});
        with_headers(
            (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response(),
            &headers,
        )
    }
}

fn with_headers(mut response: Response, headers: &[(String, String)]) -> Response {
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (
            axum::http::HeaderName::from_bytes(k.as_bytes()),
            axum::http::HeaderValue::from_str(v),
        ) {
            response.headers_mut().insert(k, v);
        }
    }
    response
}

impl FakeDiscord {
    /// The next `n` sends get 429 with `retry_after` (a send inside the wait gets another).
    pub fn storm_sends(&self, n: u32, retry_after: Duration, global: bool) {
        self.with(|w| {
            w.send_bucket.storm = n;
            w.send_bucket.retry_after = retry_after;
            w.send_bucket.global = global;
        });
    }

    /// The next `n` thread or forum-post creations get 429 with `retry_after`
    /// (one inside the wait gets another); sends are not held.
    pub fn storm_threads(&self, n: u32, retry_after: Duration) {
        self.with(|w| {
            w.thread_bucket.storm = n;
            w.thread_bucket.retry_after = retry_after;
        });
    }

    /// At most `limit` sends per `window` in each channel; more get 429 until its window resets.
    pub fn rate_limit_sends(&self, limit: u32, window: Duration) {
        self.with(|w| {
            w.send_bucket.limit = limit;
            w.send_bucket.window = window;
        });
    }

    /// When each send (`POST /channels/{channel}/messages`) arrived, with its answer's
    /// status unknown: every attempt, refused or not.
    pub fn send_times(&self, channel: u64) -> Vec<Instant> {
        self.with(|w| {
            let path = format!("/channels/{channel}/messages");
            w.requests
                .iter()
                .zip(&w.request_times)
                .filter(|(r, _)| r.method == "POST" && r.path == path)
                .map(|(_, t)| *t)
                .collect()
        })
    }
}

#[derive(Clone)]
pub struct FakeDiscord {
    pub url: String,
    pub world: Arc<Mutex<World>>,
}

fn user(p: Person) -> Value {
    json!({"id": p.id.to_string(), "username": p.name, "global_name": p.name, "bot": false})
}

fn bot_user() -> Value {
    json!({"id": BOT.to_string(), "username": "ambient", "bot": true})
}

fn member(p: Value, permissions: Option<u64>) -> Value {
    let mut m = json!({"user": p, "roles": [], "deaf": false, "mute": false, "flags": 0,
                       "joined_at": "2024-01-01T00:00:00+00:00"});
    if let Some(perms) = permissions {
        m["permissions"] = json!(perms.to_string());
    }
    m
}

fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn message_json(id: u64, channel: u64, guild: Option<u64>, author: Value, content: &str) -> Value {
    let mut m = json!({
        "id": id.to_string(), "channel_id": channel.to_string(), "author": author, "content": content,
        "timestamp": now_iso(), "edited_timestamp": null, "tts": false, "mention_everyone": false,
        "mentions": [], "mention_roles": [], "attachments": [], "embeds": [], "pinned": false, "type": 0,
    });
    if let Some(g) = guild {
        m["guild_id"] = json!(g.to_string());
        m["member"] = json!({"roles": []});
    }
    m
}

/// What a message pings, as Discord computes it: every mention in the text,
/// narrowed by `allowed_mentions` when given (`parse` for whole kinds, or
/// `users`/`roles` lists). Errs like Discord when `parse` has "users" and a
/// `users` list is given too, or "roles" and a `roles` list.
fn computed_mentions(
    content: &str,
    allowed: &Value,
    replied_author: Option<&Value>,
) -> Result<(Vec<Value>, bool, Vec<String>), String> {
    let parse: Vec<&str> = allowed["parse"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let listed = |key: &str| -> Vec<String> {
        allowed[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (users, roles) = (listed("users"), listed("roles"));
    if parse.contains(&"users") && !users.is_empty() {
        return Err("parse users and users list are mutually exclusive".into());
    }
    if parse.contains(&"roles") && !roles.is_empty() {
        return Err("parse roles and roles list are mutually exclusive".into());
    }
    if users.len() > 100 || roles.len() > 100 {
        return Err("Must be 100 or fewer in length.".into());
    }
    let free = allowed.is_null();
    let user_ok = |id: &str| free || parse.contains(&"users") || users.iter().any(|u| u == id);
    let role_ok = |id: &str| free || parse.contains(&"roles") || roles.iter().any(|r| r == id);
    let everyone = (free || parse.contains(&"everyone"))
        && (content.contains("@everyone") || content.contains("@here"));
    let pattern = regex::Regex::new(r"<@(!|&)?(\d+)>").unwrap();
    let (mut pinged, mut pinged_roles) = (Vec::new(), Vec::new());
    for c in pattern.captures_iter(content) {
        let id = c[2].to_string();
        if c.get(1).is_some_and(|k| k.as_str() == "&") {
            if role_ok(&id) {
                pinged_roles.push(id);
            }
        } else if user_ok(&id) {
            let name = [ALICE, BOB]
                .iter()
                .find(|p| p.id.to_string() == id)
                .map_or("someone", |p| p.name);
            pinged.push(json!({"id": id, "username": name}));
        }
    }
    // A reply pings the replied-to author unless `replied_user` says no
    // (without `allowed_mentions` at all, it does).
    if let Some(author) = replied_author {
        let id = author["id"].as_str().unwrap_or("").to_string();
        let wanted = free || allowed["replied_user"] == json!(true);
        if wanted && id != BOT.to_string() && !pinged.iter().any(|p| p["id"] == id.as_str()) {
            pinged.push(json!({"id": id, "username": author["username"]}));
        }
    }
    Ok((pinged, everyone, pinged_roles))
}

/// The id of the `i`th extra server (0-based): a snowflake with a real
/// timestamp part, so `(id >> 22) % shards` spreads them as Discord's do.
pub fn extra_guild(i: u32) -> u64 {
    (u64::from(i) + 1_000) << 22
}

/// The id of channel `j` of the `i`th extra server.
pub fn extra_channel(i: u32, j: u32) -> u64 {
    extra_guild(i) + 1 + u64::from(j)
}

/// An extra server's GUILD_CREATE: the test guild's shape, its own ids and text channels.
fn extra_guild_create(i: u32, channels: u32) -> Value {
    let id = extra_guild(i);
    let mut g = guild_create();
    g["id"] = json!(id.to_string());
    g["name"] = json!(format!("Server {i}"));
    g["roles"][0]["id"] = json!(id.to_string());
    g["channels"] = (0..channels)
        .map(|j| {
            json!({"id": extra_channel(i, j).to_string(), "type": 0, "name": format!("chat-{j}"),
                   "guild_id": id.to_string()})
        })
        .collect();
    g
}

fn guild_create() -> Value {
    json!({
        "id": GUILD.to_string(), "name": "Test Server", "owner_id": ALICE.id.to_string(),
        "verification_level": 0, "default_message_notifications": 0, "explicit_content_filter": 0,
        // @everyone (id = guild id) may do anything, so serenity's cached permission checks pass.
        "roles": [{"id": GUILD.to_string(), "name": "@everyone", "color": 0, "colors": {"primary_color": 0},
                   "hoist": false, "managed": false, "permissions": "8", "position": 0}],
        "emojis": [], "features": [], "mfa_level": 0, "system_channel_flags": 0, "premium_tier": 0,
        "preferred_locale": "en-US", "nsfw_level": 0, "stickers": [], "premium_progress_bar_enabled": false,
        "joined_at": "2024-01-01T00:00:00.000000+00:00", "large": false, "member_count": 3,
        "voice_states": [], "threads": [], "presences": [], "stage_instances": [], "guild_scheduled_events": [],
        "channels": [
            {"id": GENERAL.to_string(), "type": 0, "name": "general", "guild_id": GUILD.to_string()},
            {"id": RANDOM.to_string(), "type": 0, "name": "random", "guild_id": GUILD.to_string()},
        ],
        "members": [member(bot_user(), None), member(user(ALICE), None), member(user(BOB), None)],
    })
}

/// Panics if serenity could not parse `d` as the type this dispatch carries.
fn check(t: &str, d: &Value) {
    use serenity::all as s;
    let result = match t {
        "READY" => serde_json::from_value::<s::Ready>(d.clone()).map(|_| ()),
        "GUILD_CREATE" => serde_json::from_value::<s::Guild>(d.clone()).map(|_| ()),
        "GUILD_DELETE" => {
            // Discord's two shapes only: `{"id"}` (removed) or `{"id", "unavailable": true}`.
            let shaped = d["id"].is_string()
                && match d.as_object().map_or(0, |o| o.len()) {
                    1 => true,
                    2 => d["unavailable"] == json!(true),
                    _ => false,
                };
            assert!(shaped, "Discord sends no such GUILD_DELETE: {d}");
            serde_json::from_value::<s::UnavailableGuild>(d.clone()).map(|_| ())
        }
        "MESSAGE_CREATE" => serde_json::from_value::<s::Message>(d.clone()).map(|_| ()),
        "MESSAGE_UPDATE" => serde_json::from_value::<s::MessageUpdateEvent>(d.clone()).map(|_| ()),
        "MESSAGE_REACTION_ADD" | "MESSAGE_REACTION_REMOVE" => {
            serde_json::from_value::<s::Reaction>(d.clone()).map(|_| ())
        }
        "GUILD_MEMBER_ADD" => serde_json::from_value::<s::Member>(d.clone()).map(|_| ()),
        "CHANNEL_DELETE" | "CHANNEL_CREATE" | "THREAD_CREATE" | "THREAD_UPDATE" => {
            serde_json::from_value::<s::GuildChannel>(d.clone()).map(|_| ())
        }
        "INTERACTION_CREATE" => serde_json::from_value::<s::Interaction>(d.clone()).map(|_| ()),
        _ => Ok(()),
    };
    if let Err(e) = result {
        panic!("the fake Discord built a {t} serenity cannot parse: {e}\n{d:#}");
    }
}

impl FakeDiscord {
    pub fn start() -> Self {
        Self::start_with_guilds(0, 0)
    }

    /// A fake Discord whose bot is also in `guilds` more servers with
    /// `channels` text channels each (ids from [`extra_guild`] and
    /// [`extra_channel`]), all sent at IDENTIFY as Discord does.
    pub fn start_with_guilds(guilds: u32, channels: u32) -> Self {
        let world = Arc::new(Mutex::new(World {
            more_guilds: (guilds, channels),
            app_flags: GATEWAY_MESSAGE_CONTENT_LIMITED | GATEWAY_GUILD_MEMBERS_LIMITED,
            ..World::default()
        }));
        let (listener, url) = super::serve::bind();
        let ws_url = url.replace("http://", "ws://") + "/gateway";
        let app = Router::new()
            .route("/gateway", any(gateway))
            .fallback(rest)
            // Discord takes bodies up to its attachment limit; axum's 2 MB default would refuse first.
            .layer(axum::extract::DefaultBodyLimit::max(
                4 * MAX_ATTACHMENT_BYTES,
            ))
            .with_state((world.clone(), ws_url));
        super::serve::spawn(listener, app);
        Self { url, world }
    }

    /// A fake Discord whose `/gateway/bot` recommends `shards` and whose bot
    /// is in `guilds` extra servers of one text channel each, without the
    /// test guild: server `i` is on shard `(1000 + i) % shards`, so they
    /// spread evenly (the test guild, id 100, is on shard 0 of any count).
    pub fn start_sharded(shards: u32, guilds: u32) -> Self {
        let discord = Self::start_with_guilds(guilds, 1);
        discord.with(|w| {
            w.sharding.shards = shards;
            w.without_test_guild = true;
        });
        discord
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut World) -> T) -> T {
        f(&mut self.world.lock().unwrap())
    }

    /// Polls until `cond` holds; false on timeout.
    pub fn wait_until(&self, secs: u64, cond: impl Fn(&World) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if cond(&self.world.lock().unwrap()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn dispatch(&self, t: &str, d: Value) {
        check(t, &d);
        self.with(|w| w.dispatch(t, d))
    }

    /// `person` says `content` in `channel`; `<@10000>` in the text mentions the bot.
    pub fn say(&self, channel: u64, person: Person, content: &str) -> u64 {
        self.say_full(channel, person, content, None)
    }

    /// `person` says `content` in `channel` of `guild` (an extra server's, say).
    pub fn say_in(&self, guild: u64, channel: u64, person: Person, content: &str) -> u64 {
        self.say_in_full(guild, channel, person, content, None, Vec::new())
    }

    pub fn say_full(
        &self,
        channel: u64,
        person: Person,
        content: &str,
        reply_to: Option<u64>,
    ) -> u64 {
        self.say_in_full(GUILD, channel, person, content, reply_to, Vec::new())
    }

    /// Uploads a file as Discord does when a person attaches one, and returns
    /// the attachment object a message carries: id, filename, size,
    /// content_type, width and height for a picture, and a signed URL that
    /// this fake's CDN serves (`GET /attachments/…?ex=…&is=…&hm=…`).
    /// Panics past Discord's upload limit, which no person can pass.
    pub fn upload(&self, channel: u64, name: &str, bytes: &[u8], content_type: &str) -> Value {
        assert!(
            bytes.len() <= MAX_ATTACHMENT_BYTES,
            "Discord refuses uploads over {MAX_ATTACHMENT_BYTES} bytes"
        );
        let dimensions = content_type
            .starts_with("image/")
            .then(|| {
                image::ImageReader::new(std::io::Cursor::new(bytes))
                    .with_guessed_format()
                    .ok()?
                    .into_dimensions()
                    .ok()
            })
            .flatten();
        self.with(|w| {
            let id = w.next_id();
            let path = format!("/attachments/{channel}/{id}/{name}");
            let now = chrono::Utc::now().timestamp() as u64;
            let expires = now + 24 * 3600;
            let signature = format!("{:016x}", {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                (&path, expires, "fake-cdn-secret").hash(&mut h);
                h.finish()
            });
            let url = format!(
                "{}{path}?ex={expires:x}&is={now:x}&hm={signature}&",
                self.url
            );
            w.uploads.insert(
                path,
                Upload {
                    bytes: bytes.to_vec(),
                    content_type: content_type.to_string(),
                    signature,
                    expires,
                },
            );
            let mut a = json!({"id": id.to_string(), "filename": name, "size": bytes.len(),
                "content_type": content_type, "url": url, "proxy_url": url});
            if let Some((width, height)) = dimensions {
                a["width"] = json!(width);
                a["height"] = json!(height);
            }
            a
        })
    }

    /// `person` says `content` with `attachments` (objects from [`Self::upload`],
    /// or made up to play a Discord-compatible server that says other things).
    pub fn say_with(
        &self,
        channel: u64,
        person: Person,
        content: &str,
        reply_to: Option<u64>,
        attachments: Vec<Value>,
    ) -> u64 {
        self.say_in_full(GUILD, channel, person, content, reply_to, attachments)
    }

    fn say_in_full(
        &self,
        guild: u64,
        channel: u64,
        person: Person,
        content: &str,
        reply_to: Option<u64>,
        attachments: Vec<Value>,
    ) -> u64 {
        let (id, msg) = self.keep(guild, channel, person, content, reply_to, attachments);
        self.dispatch("MESSAGE_CREATE", msg);
        id
    }

    /// `person` says `content` in `channel`, and Discord keeps it, but the
    /// bot never sees it: as if its gateway event were lost in a crash.
    pub fn say_unseen(&self, channel: u64, person: Person, content: &str) -> u64 {
        self.keep(GUILD, channel, person, content, None, Vec::new())
            .0
    }

    /// A message as Discord keeps it, not yet announced on the gateway.
    fn keep(
        &self,
        guild: u64,
        channel: u64,
        person: Person,
        content: &str,
        reply_to: Option<u64>,
        attachments: Vec<Value>,
    ) -> (u64, Value) {
        assert!(
            attachments.len() <= 10,
            "Discord takes at most 10 attachments a message"
        );
        self.with(|w| {
            let id = w.next_id();
            let mut m = message_json(id, channel, Some(guild), user(person), content);
            m["attachments"] = json!(attachments);
            if content.contains(&format!("<@{BOT}>")) {
                m["mentions"] = json!([bot_user()]);
            }
            if let Some(to) = reply_to {
                m["message_reference"] = json!({"message_id": to.to_string(), "channel_id": channel.to_string(), "guild_id": guild.to_string()});
                if let Some(original) = w.messages.get(&to) {
                    m["referenced_message"] = original.clone();
                }
            }
            if w.shaped {
                let replied = match reply_to {
                    Some(_) => None,
                    None => w.last_said.get(&channel).and_then(|p| w.messages.get(p)).cloned(),
                };
                m = super::discord_shapes::message(m, person, id, replied, &self.url);
            }
            if let Some(roles) = w.member_roles.get(&person.id) {
                m["member"]["roles"] = json!(roles.iter().map(u64::to_string).collect::<Vec<_>>());
            }
            w.last_said.insert(channel, id);
            if w.saves_late {
                w.unsaved.push((id, m.clone()));
            } else {
                w.messages.insert(id, m.clone());
            }
            w.said_at.insert(id, Instant::now());
            (id, m)
        })
    }

    /// Saves the messages announced while `saves_late` was on: from now on
    /// they can be replied to.
    pub fn save_late(&self) {
        self.with(|w| {
            for (id, m) in std::mem::take(&mut w.unsaved) {
                w.messages.insert(id, m);
            }
        });
    }

    /// A direct message from `person`.
    pub fn dm(&self, person: Person, content: &str) -> u64 {
        let (id, msg) = self.with(|w| {
            let id = w.next_id();
            let m = message_json(id, DM_CHANNEL, None, user(person), content);
            w.messages.insert(id, m.clone());
            (id, m)
        });
        self.dispatch("MESSAGE_CREATE", msg);
        id
    }

    pub fn edit(&self, channel: u64, id: u64, content: &str) {
        self.dispatch(
            "MESSAGE_UPDATE",
            json!({"id": id.to_string(), "channel_id": channel.to_string(), "guild_id": GUILD.to_string(),
                   "content": content, "edited_timestamp": now_iso()}),
        );
    }

    /// Deletes a message: Discord forgets it (a reply to it is a reply to an unknown message).
    pub fn delete(&self, channel: u64, id: u64) {
        self.with(|w| w.messages.remove(&id));
        self.dispatch(
            "MESSAGE_DELETE",
            json!({"id": id.to_string(), "channel_id": channel.to_string(), "guild_id": GUILD.to_string()}),
        );
    }

    pub fn react(&self, channel: u64, message: u64, person: Person, emoji: &str) {
        self.dispatch(
            "MESSAGE_REACTION_ADD",
            json!({"user_id": person.id.to_string(), "channel_id": channel.to_string(), "message_id": message.to_string(),
                   "guild_id": GUILD.to_string(), "emoji": {"id": null, "name": emoji}, "burst": false, "type": 0,
                   "member": member(user(person), None)}),
        );
    }

    /// `person` takes back their `emoji` on `message` (Discord sends no member).
    pub fn unreact(&self, channel: u64, message: u64, person: Person, emoji: &str) {
        self.dispatch(
            "MESSAGE_REACTION_REMOVE",
            json!({"user_id": person.id.to_string(), "channel_id": channel.to_string(), "message_id": message.to_string(),
                   "guild_id": GUILD.to_string(), "emoji": {"id": null, "name": emoji}, "burst": false, "type": 0}),
        );
    }

    /// `guild` removes the bot (kicked, banned, or the bot left): Discord's
    /// GUILD_DELETE without `unavailable`. From now on the bot is not in it.
    pub fn remove_bot(&self, guild: u64) {
        self.dispatch("GUILD_DELETE", json!({"id": guild.to_string()}));
        self.with(|w| w.left.push(guild));
    }

    /// `guild` invites the bot back: it is in it again, with a GUILD_CREATE.
    pub fn invite_bot(&self, guild: u64) {
        self.with(|w| w.left.retain(|g| *g != guild));
        self.guild_available(guild);
    }

    /// An outage of `guild`: GUILD_DELETE with `unavailable: true`; the bot
    /// stays in it, and hears nothing of it until [`Self::outage_over`].
    pub fn outage(&self, guild: u64) {
        self.dispatch(
            "GUILD_DELETE",
            json!({"id": guild.to_string(), "unavailable": true}),
        );
        self.with(|w| w.unavailable.push(guild));
    }

    /// The outage of `guild` is over: its GUILD_CREATE.
    pub fn outage_over(&self, guild: u64) {
        self.with(|w| w.unavailable.retain(|g| *g != guild));
        self.guild_available(guild);
    }

    fn guild_available(&self, guild: u64) {
        let d = self.with(|w| w.guild_create_of(guild));
        self.dispatch("GUILD_CREATE", d);
    }

    /// `person` joins the server.
    pub fn member_joins(&self, person: Person) {
        let mut m = member(user(person), None);
        m["guild_id"] = json!(GUILD.to_string());
        self.dispatch("GUILD_MEMBER_ADD", m);
    }

    /// A moderator deletes `channel` (`kind` 0: text, 4: a category).
    pub fn delete_channel(&self, channel: u64, kind: u8) {
        self.dispatch(
            "CHANNEL_DELETE",
            json!({"id": channel.to_string(), "type": kind, "name": "gone", "guild_id": GUILD.to_string(),
                   "position": 0, "permission_overwrites": []}),
        );
    }

    /// Runs `/command sub option:value…` as `person` with `permissions`; returns the interaction id.
    pub fn slash(
        &self,
        channel: u64,
        person: Person,
        permissions: u64,
        command: &str,
        sub: &str,
        options: &[(&str, &str)],
    ) -> u64 {
        self.slash_in(GUILD, channel, person, permissions, command, sub, options)
    }

    /// [`FakeDiscord::slash`] in another server (`guild`).
    #[allow(clippy::too_many_arguments)] // an interaction's own fields, as the command line names them
    pub fn slash_in(
        &self,
        guild: u64,
        channel: u64,
        person: Person,
        permissions: u64,
        command: &str,
        sub: &str,
        options: &[(&str, &str)],
    ) -> u64 {
        let (id, opts, resolved) = self.with(|w| {
            let (opts, resolved) = w.typed_options(command, sub, options);
            (w.next_id(), opts, resolved)
        });
        let d = json!({
            "id": id.to_string(), "application_id": APP.to_string(), "type": 2, "token": format!("token-{id}"),
            "version": 1, "guild_id": guild.to_string(), "channel_id": channel.to_string(),
            "member": member(user(person), Some(permissions)),
            "app_permissions": "2147483647", "locale": "en-US", "guild_locale": "en-US", "entitlements": [],
            "authorizing_integration_owners": {"0": guild.to_string()}, "context": 0,
            "attachment_size_limit": 8388608,
            "data": {"id": "777", "name": command, "type": 1, "resolved": resolved,
                     "options": [{"type": 1, "name": sub, "options": opts}]},
        });
        self.dispatch("INTERACTION_CREATE", d);
        id
    }

    /// Waits for the first text the bot gave interaction `id` — in its
    /// callback, or in a follow-up after a deferred ("thinking…") callback.
    pub fn interaction_text(&self, id: u64) -> Option<String> {
        let text = |w: &World| {
            w.interaction_replies(id).iter().find_map(|b| {
                b["data"]["content"]
                    .as_str()
                    .or(b["content"].as_str())
                    .map(String::from)
            })
        };
        self.wait_until(10, |w| text(w).is_some());
        self.with(|w| text(w))
    }

    /// Waits for the bot's first answer to interaction `id`.
    pub fn interaction_reply(&self, id: u64) -> Option<Value> {
        self.wait_until(10, |w| !w.interaction_replies(id).is_empty());
        self.with(|w| w.interaction_replies(id).first().cloned())
    }

    /// Closes the gateway connection (code 4000, so the client resumes). With
    /// `replay_from`, the resume replays from that sequence number, as if
    /// Discord delivered events again.
    /// Closes the gateway and refuses to resume: the bot must identify anew,
    /// and nothing said meanwhile is replayed to it.
    pub fn drop_session(&self) {
        self.with(|w| {
            w.refuse_resume = true;
            w.close_all(4000);
        });
    }

    /// Takes the gateway down: the live connection is closed and every new
    /// one is accepted and closed cleanly at once, until [`Self::gateway_up`].
    pub fn gateway_down(&self) {
        self.with(|w| {
            w.gateway_down = true;
            w.close_all(1000);
        });
    }

    pub fn gateway_up(&self) {
        self.with(|w| w.gateway_down = false);
    }

    /// From now on `POST /channels/{id}/typing` answers only after `hang`
    /// (recorded at once, like every request); a bot that stops waiting for
    /// it closes the request, which [`World::typing_open`] then no longer counts.
    pub fn hang_typing(&self, hang: Duration) {
        self.with(|w| w.typing_hang = Some(hang));
    }

    /// Makes a stored message `minutes` older (as fetched through REST).
    pub fn backdate(&self, id: u64, minutes: i64) {
        self.with(|w| {
            if let Some(m) = w.messages.get_mut(&id) {
                let at = chrono::Utc::now() - chrono::Duration::minutes(minutes);
                m["timestamp"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
            }
        });
    }

    pub fn drop_connection(&self, replay_from: Option<u64>) {
        self.with(|w| {
            w.replay_from = replay_from;
            w.close_all(4000);
        });
    }

    /// The newest session's sequence number (a single-shard test's only session).
    pub fn seq(&self) -> u64 {
        self.with(|w| w.sessions.last().map_or(0, |s| s.seq))
    }
}

async fn gateway(
    ws: WebSocketUpgrade,
    State((world, _)): State<(Arc<Mutex<World>>, String)>,
) -> Response {
    let down = {
        let mut w = world.lock().unwrap();
        w.gateway_attempts += 1;
        w.gateway_down
    };
    if down {
        return ws.on_upgrade(|mut socket| async move {
            let _ = socket
                .send(WsMessage::Close(Some(CloseFrame {
                    code: 1000,
                    reason: "down".into(),
                })))
                .await;
        });
    }
    ws.on_upgrade(move |socket| session(socket, world))
}

/// One websocket to the gateway: HELLO, then IDENTIFY or RESUME (see
/// `fake_gateway` for the sharding rules), heartbeats ACKed.
async fn session(socket: WebSocket, world: Arc<Mutex<World>>) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Outbound>();
    let (conn, heartbeat) = {
        let mut w = world.lock().unwrap();
        w.next_conn += 1;
        let heartbeat = w
            .heartbeat_interval
            .unwrap_or(Duration::from_millis(41_250));
        (w.next_conn, heartbeat.as_millis() as u64)
    };
    let _ = tx.send(Outbound::Frame(
        json!({"op": 10, "d": {"heartbeat_interval": heartbeat}}),
    ));
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Outbound::Frame(v) => {
                    if sink
                        .send(WsMessage::Text(v.to_string().into()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                Outbound::Close(code) => {
                    let _ = sink
                        .send(WsMessage::Close(Some(CloseFrame {
                            code,
                            reason: "test reconnect".into(),
                        })))
                        .await;
                    break;
                }
            }
        }
    });
    while let Some(Ok(msg)) = stream.next().await {
        let WsMessage::Text(text) = msg else { continue };
        let Ok(frame) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        match frame["op"].as_u64() {
            Some(1) => {
                let _ = tx.send(Outbound::Frame(json!({"op": 11})));
            }
            Some(2) => identify(&mut world.lock().unwrap(), &frame["d"], conn, &tx),
            Some(6) => resume(&mut world.lock().unwrap(), &frame["d"], conn, &tx),
            Some(4) => world
                .lock()
                .unwrap()
                .voice_state_updates
                .push(frame["d"].clone()),
            _ => {}
        }
    }
    for s in &mut world.lock().unwrap().sessions {
        if s.conn.as_ref().is_some_and(|(c, _)| *c == conn) {
            s.conn = None;
        }
    }
    writer.abort();
}

/// IDENTIFY: judged by the sharding rules; let through, a new session gets
/// READY with its shard's guilds and their GUILD_CREATEs.
fn identify(w: &mut World, d: &Value, conn: u64, tx: &mpsc::UnboundedSender<Outbound>) {
    let shard = gw::identified_shard(d);
    let guilds = w.guilds();
    let now = Instant::now();
    let answer = gw::judge(&w.sharding, &mut w.identify_buckets, d, &guilds, now);
    w.identify_log.push(Identify {
        shard,
        at: now,
        answer,
    });
    if let Some(code) = answer.close_code() {
        let _ = tx.send(Outbound::Close(code));
        return;
    }
    if answer == Answer::RateLimited {
        let _ = tx.send(Outbound::Frame(json!({"op": 9, "d": false})));
        return;
    }
    w.identifies += 1;
    // A shard identifying again replaces its sessions that lost their connection.
    w.sessions.retain(|s| s.shard != shard || s.conn.is_some());
    let mut session = Session {
        id: format!("session-{}", w.identifies),
        shard,
        seq: 0,
        log: Vec::new(),
        conn: Some((conn, tx.clone())),
    };
    let mine: Vec<u64> = guilds
        .into_iter()
        .filter(|g| session.hears(Some(*g), &w.sharding))
        .collect();
    let ready = json!({
        "v": 10, "user": bot_user(),
        // Every server the bot is in, down or not; only those up follow as GUILD_CREATE.
        "guilds": mine.iter().map(|g| json!({"id": g.to_string(), "unavailable": true})).collect::<Vec<_>>(),
        "session_id": session.id, "resume_gateway_url": "ws://unused",
        "shard": shard, "application": {"id": APP.to_string(), "flags": 0},
    });
    check("READY", &ready);
    w.log.push(json!({"t": "READY", "d": ready}));
    session.send("READY", ready);
    let up = mine.into_iter().filter(|g| !w.unavailable.contains(g));
    for (n, g) in up.enumerate() {
        let guild = w.guild_create_of(g);
        if n == 0 {
            check("GUILD_CREATE", &guild);
        }
        w.log.push(json!({"t": "GUILD_CREATE", "d": guild}));
        session.send("GUILD_CREATE", guild);
    }
    w.sessions.push(session);
}

/// RESUME: the named session gets this connection and what it missed
/// (from `replay_from` when a test set one, as if Discord delivered again).
fn resume(w: &mut World, d: &Value, conn: u64, tx: &mpsc::UnboundedSender<Outbound>) {
    let wanted = d["session_id"].as_str().unwrap_or("");
    let found = w.sessions.iter().position(|s| s.id == wanted);
    let Some(i) = found.filter(|_| !w.refuse_resume) else {
        let _ = tx.send(Outbound::Frame(json!({"op": 9, "d": false})));
        return;
    };
    let from = w
        .replay_from
        .take()
        .unwrap_or(d["seq"].as_u64().unwrap_or(0));
    let session = &mut w.sessions[i];
    for f in session
        .log
        .iter()
        .filter(|f| f["s"].as_u64().unwrap_or(0) > from)
    {
        let _ = tx.send(Outbound::Frame(f.clone()));
    }
    session.conn = Some((conn, tx.clone()));
    session.send("RESUMED", json!({}));
    w.resumes += 1;
    w.log.push(json!({"t": "RESUMED", "d": {}}));
}

/// The typing route stuck for `hang`: answered 204 after it, unless the bot
/// closes the request first (axum then drops this future, and the guard
/// counts the request as no longer open either way).
async fn typing_after(world: Arc<Mutex<World>>, hang: Duration) -> Response {
    struct Open(Arc<Mutex<World>>);
    impl Drop for Open {
        fn drop(&mut self) {
            let mut w = self.0.lock().unwrap_or_else(|e| e.into_inner());
            w.typing_open = w.typing_open.saturating_sub(1);
        }
    }
    let _open = Open(world);
    tokio::time::sleep(hang).await;
    StatusCode::NO_CONTENT.into_response()
}

/// Discord's attachment limit without boosts: 25 MiB per file.
pub const MAX_ATTACHMENT_BYTES: usize = 25 * 1024 * 1024;

/// A multipart body (a message with files): its `payload_json`, with the
/// files added as `_files: [{name, size, content_type, content}]` (`size` in
/// bytes as sent; `content` as text, lossy for binary files). Parsed as
/// bytes, so a binary file's size is what the bot sent.
fn multipart(body: &[u8], boundary: &str) -> Value {
    let delimiter = format!("--{boundary}").into_bytes();
    let mut payload = Value::Null;
    let mut files = Vec::new();
    let mut starts = Vec::new();
    let mut i = 0;
    while i + delimiter.len() <= body.len() {
        if body[i..].starts_with(&delimiter) {
            starts.push(i);
            i += delimiter.len();
        } else {
            i += 1;
        }
    }
    for pair in starts.windows(2) {
        let part = &body[pair[0] + delimiter.len()..pair[1]];
        let Some(split) = part.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]);
        let content = &part[split + 4..];
        let content = content.strip_suffix(b"\r\n").unwrap_or(content);
        if head.contains("name=\"payload_json\"") {
            payload = serde_json::from_slice(content).unwrap_or(Value::Null);
        } else if let Some(i) = head.find("filename=\"") {
            let name = head[i + 10..].split('"').next().unwrap_or("").to_string();
            let content_type = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Content-Type: ")
                        .or(l.strip_prefix("content-type: "))
                })
                .unwrap_or("")
                .trim()
                .to_string();
            files.push(
                json!({"name": name, "size": content.len(), "content_type": content_type,
                "content": String::from_utf8_lossy(content)}),
            );
        }
    }
    if payload.is_null() {
        payload = json!({});
    }
    payload["_files"] = json!(files);
    payload
}

/// The CDN: a file served only under its signed, unexpired URL, as Discord's
/// does (anything else is 404 "This content is no longer available.").
fn cdn(w: &World, path: &str, query: &str) -> Response {
    let query: HashMap<&str, &str> = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let now = chrono::Utc::now().timestamp() as u64;
    let valid = |u: &Upload| {
        query.get("hm") == Some(&u.signature.as_str())
            && query
                .get("ex")
                .and_then(|ex| u64::from_str_radix(ex, 16).ok())
                .is_some_and(|ex| ex == u.expires && ex >= now)
    };
    match w.uploads.get(path).filter(|u| valid(u)) {
        Some(u) => (
            [(axum::http::header::CONTENT_TYPE, u.content_type.clone())],
            u.bytes.clone(),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "This content is no longer available.",
        )
            .into_response(),
    }
}

/// What Discord refuses in a message's body (`content` over 2,000
/// characters, embeds past their limits), as the `errors` of a 50035.
fn message_body_errors(body: &Value) -> Option<Value> {
    if body["content"].as_str().unwrap_or("").chars().count() > 2000 {
        return Some(
            json!({"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH",
            "message": "Must be 2000 or fewer in length."}]}}),
        );
    }
    embeds::refused(&body["embeds"])
}

/// As Discord: a message needs something to show. Content that is only
/// whitespace counts as none (Discord trims it), and so do an empty embed
/// list and a sticker list that names nothing.
fn is_empty_message(body: &Value, files: &[Value]) -> bool {
    let blank = body["content"].as_str().is_none_or(|c| c.trim().is_empty());
    let none_in = |key: &str| body[key].as_array().is_none_or(|a| a.is_empty());
    blank
        && files.is_empty()
        && none_in("embeds")
        && none_in("sticker_ids")
        && body["poll"].is_null()
}

/// Discord's answer to a body it refuses: 400, code 50035, the field and why.
fn invalid_form(field: &str, code: &str, message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"message": "Invalid Form Body", "code": 50035,
            "errors": {field: {"_errors": [{"code": code, "message": message}]}}})),
    )
        .into_response()
}

/// Keeps a REST request and when it came, as every route does first.
fn record(w: &mut World, method: &Method, path: &str, body: &Value) {
    w.requests.push(Request {
        method: method.to_string(),
        path: path.to_string(),
        body: body.clone(),
    });
    w.request_times.push(Instant::now());
}

/// Every REST answer, with the `Date` header Discord sends (off by `clock_skew`).
async fn rest(
    State((world, ws_url)): State<(Arc<Mutex<World>>, String)>,
    method: Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let mut response = rest_route(world.clone(), ws_url, method, uri, headers, body).await;
    let skew = world.lock().unwrap().clock_skew;
    let date = (chrono::Utc::now() + chrono::Duration::seconds(skew))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    response.headers_mut().insert("date", date.parse().unwrap());
    response
}

async fn rest_route(
    world: Arc<Mutex<World>>,
    ws_url: String,
    method: Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let authorized = headers
        .get("authorization")
        .is_some_and(|a| a.as_bytes() == format!("Bot {TOKEN}").as_bytes());
    let path = uri.path().trim_start_matches("/api/v10").to_string();
    let boundary = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.split("boundary=").nth(1))
        .map(|b| b.trim_matches('"').to_string());
    let body: Value = match boundary {
        Some(b) => multipart(&body, &b),
        None => serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if let ("POST", ["channels", _, "typing"]) = (method.as_str(), segments.as_slice())
        && authorized
    {
        let hang = {
            let mut w = world.lock().unwrap();
            w.typing_hang.inspect(|_| {
                record(&mut w, &method, &path, &body);
                w.typing_open += 1;
            })
        };
        if let Some(hang) = hang {
            return typing_after(world, hang).await;
        }
    }
    let mut w = world.lock().unwrap();
    record(&mut w, &method, &path, &body);
    // The CDN is another host, unauthenticated; every API route wants the token.
    if !authorized && segments.first() != Some(&"attachments") {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"message": "401: Unauthorized", "code": 0})),
        )
            .into_response();
    }
    let ok = |v: Value| (StatusCode::OK, axum::Json(v)).into_response();
    let missing_access = || {
        (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"message": "Missing Access", "code": 50001})),
        )
            .into_response()
    };
    let rate_headers = match (method.as_str(), segments.as_slice()) {
        ("POST", ["channels", channel, "messages"]) => match w
            .send_bucket
            .admit(channel.parse().unwrap_or(0), Instant::now())
        {
            Ok(headers) => headers,
            Err(too_many) => return too_many,
        },
        ("POST", ["channels", channel, "threads"])
        | ("POST", ["channels", channel, "messages", _, "threads"]) => match w
            .thread_bucket
            .admit(channel.parse().unwrap_or(0), Instant::now())
        {
            Ok(headers) => headers,
            Err(too_many) => return too_many,
        },
        _ => Vec::new(),
    };
    let ws_url = w.gateway_url.as_deref().unwrap_or(&ws_url);
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["attachments", _, _, _]) => cdn(&w, &path, uri.query().unwrap_or("")),
        ("GET", ["gateway"]) => ok(json!({"url": ws_url})),
        ("GET", ["gateway", "bot"]) => ok(json!({"url": ws_url, "shards": w.sharding.shards,
            "session_start_limit": {"total": 1000, "remaining": 1000u32.saturating_sub(w.identifies),
                "reset_after": 14400000, "max_concurrency": w.sharding.max_concurrency}})),
        ("GET", ["users", "@me"]) => ok(bot_user()),
        ("GET", ["oauth2", "applications", "@me"]) => ok(
            json!({"id": APP.to_string(), "name": "ambient", "description": "",
            "bot_public": true, "bot_require_code_grant": false, "verify_key": "00", "flags": 0,
            "owner": {"id": ALICE.id.to_string(), "username": "alice"}}),
        ),
        ("GET", ["applications", "@me"]) => ok(json!({"id": APP.to_string(), "name": "ambient",
            "description": "", "bot_public": true, "bot_require_code_grant": false,
            "verify_key": "00", "flags": w.app_flags, "bot": bot_user(),
            "owner": {"id": ALICE.id.to_string(), "username": "alice"}})),
        ("GET", ["users", "@me", "guilds"]) => {
            let listed: Vec<Value> = w
                .guilds()
                .into_iter()
                .map(|g| {
                    let full = w.guild_create_of(g);
                    json!({"id": g.to_string(), "name": full["name"], "icon": null, "owner": false,
                        "permissions": full["roles"][0]["permissions"], "features": []})
                })
                .collect();
            ok(json!(listed))
        }
        ("GET", ["guilds", guild])
        | ("GET", ["guilds", guild, "channels"])
        | ("GET", ["guilds", guild, "members", _]) => {
            let guild: u64 = guild.parse().unwrap_or(0);
            if !w.guilds().contains(&guild) {
                return missing_access();
            }
            match segments.as_slice() {
                [_, _] => ok(w.guild_rest(guild)),
                [_, _, "channels"] => ok(w.channels_rest(guild)),
                [_, _, _, user] if *user == BOT.to_string() => {
                    let mut m = member(bot_user(), None);
                    m["roles"] = json!([BOT_ROLE.to_string()]);
                    ok(m)
                }
                [_, _, _, id] => match [ALICE, BOB].into_iter().find(|p| *id == p.id.to_string()) {
                    Some(p) => ok(member(self::user(p), None)),
                    None => (
                        StatusCode::NOT_FOUND,
                        axum::Json(json!({"message": "Unknown Member", "code": 10007})),
                    )
                        .into_response(),
                },
                _ => missing_access(),
            }
        }
        ("GET", ["guilds", guild, "threads", "active"]) => {
            threads::active_in_guild(&w, guild.parse().unwrap_or(0))
        }
        ("GET", ["applications", _, "commands"])
        | ("GET", ["applications", _, "guilds", _, "commands"]) => {
            ok(json!(w.commands.get(&path).cloned().unwrap_or_default()))
        }
        ("PUT", ["applications", _, "commands"])
        | ("PUT", ["applications", _, "guilds", _, "commands"]) => {
            let echoed: Vec<Value> = body
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, mut c)| {
                    c["id"] = json!((800 + i).to_string());
                    c["application_id"] = json!(APP.to_string());
                    c["version"] = json!("1");
                    c["type"] = json!(1);
                    c
                })
                .collect();
            w.commands.insert(path.clone(), echoed.clone());
            ok(json!(echoed))
        }
        ("POST", ["channels", channel, "messages"]) => {
            let channel: u64 = channel.parse().unwrap_or(0);
            if channel != DM_CHANNEL && w.left.contains(&w.guild_of(channel)) {
                return (
                    StatusCode::FORBIDDEN,
                    axum::Json(json!({"message": "Missing Access", "code": 50001})),
                )
                    .into_response();
            }
            if w.no_send.contains(&channel) {
                return (
                    StatusCode::FORBIDDEN,
                    axum::Json(json!({"message": "Missing Permissions", "code": 50013})),
                )
                    .into_response();
            }
            if let Some(refused) = threads::refuse_send(&w, channel) {
                return refused;
            }
            if let Some(errors) = message_body_errors(&body) {
                return threads::form_errors(errors);
            }
            // Files: each at most 25 MiB, shown on the message as Discord does.
            let files = body["_files"].as_array().cloned().unwrap_or_default();
            if is_empty_message(&body, &files) {
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"message": "Cannot send an empty message", "code": 50006})),
                )
                    .into_response();
            }
            if files
                .iter()
                .any(|f| f["size"].as_u64().unwrap_or(0) > MAX_ATTACHMENT_BYTES as u64)
            {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    axum::Json(json!({"message": "Request entity too large", "code": 40005})),
                )
                    .into_response();
            }
            let attachments: Vec<Value> = files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let url = format!(
                        "https://cdn.discordapp.com/attachments/{channel}/{}/{}",
                        7000 + i,
                        f["name"].as_str().unwrap_or("")
                    );
                    json!({"id": (7000 + i).to_string(), "filename": f["name"], "size": f["size"],
                        "content_type": f["content_type"], "url": url, "proxy_url": url})
                })
                .collect();
            let guild = (channel != DM_CHANNEL).then(|| w.guild_of(channel));
            let mut m = message_json(
                0,
                channel,
                guild,
                bot_user(),
                body["content"].as_str().unwrap_or(""),
            );
            let mut replied_author = None;
            if let Some(r) = body.get("message_reference").filter(|r| !r.is_null()) {
                let to: u64 = r["message_id"]
                    .as_str()
                    .and_then(|i| i.parse().ok())
                    .unwrap_or(0);
                let same_channel = r["channel_id"]
                    .as_str()
                    .is_none_or(|c| c == channel.to_string());
                let original = w
                    .messages
                    .get(&to)
                    .filter(|o| o["channel_id"] == channel.to_string().as_str());
                match (original, same_channel) {
                    (_, false) => {
                        return invalid_form(
                            "message_reference",
                            "MESSAGE_REFERENCE_INVALID_CHANNEL",
                            "Cannot reply to a message in another channel",
                        );
                    }
                    (Some(original), true) => {
                        m["message_reference"] = r.clone();
                        m["referenced_message"] = original.clone();
                        m["type"] = json!(19);
                        replied_author = Some(original["author"].clone());
                    }
                    (None, true) if w.unknown_reference == UnknownReference::NotFound => {
                        return (
                            StatusCode::NOT_FOUND,
                            axum::Json(json!({"message": "Unknown Message", "code": 10008})),
                        )
                            .into_response();
                    }
                    // Discord sends it as a plain message only when asked to.
                    (None, true)
                        if r["fail_if_not_exists"] == json!(false)
                            && w.unknown_reference == UnknownReference::Discord => {}
                    (None, true) => {
                        return invalid_form(
                            "message_reference",
                            "MESSAGE_REFERENCE_UNKNOWN_MESSAGE",
                            "Unknown message",
                        );
                    }
                }
            }
            m["attachments"] = json!(attachments);
            m["embeds"] = embeds::as_kept(&body["embeds"]);
            match computed_mentions(
                m["content"].as_str().unwrap_or(""),
                &body["allowed_mentions"],
                replied_author.as_ref(),
            ) {
                Ok((users, everyone, roles)) => {
                    m["mentions"] = json!(users);
                    m["mention_everyone"] = json!(everyone);
                    m["mention_roles"] = json!(roles);
                }
                Err(why) => {
                    return (
                        StatusCode::BAD_REQUEST,
                        axum::Json(json!({"message": "Invalid Form Body", "code": 50035,
                            "errors": {"allowed_mentions": {"_errors": [{"code": "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", "message": why}]}}})),
                    )
                        .into_response();
                }
            }
            // A repeated nonce is answered with the message it first made, once the body passed.
            let nonce = body["nonce"].as_str().map(String::from);
            if body["enforce_nonce"] == json!(true)
                && let Some(previous) = nonce.as_ref().and_then(|n| w.nonces.get(n))
            {
                return ok(previous.clone());
            }
            let id = w.next_id();
            m["id"] = json!(id.to_string());
            if let Some(n) = &nonce {
                m["nonce"] = json!(n);
                w.nonces.insert(n.clone(), m.clone());
            }
            w.messages.insert(id, m.clone());
            check("MESSAGE_CREATE", &m);
            w.dispatch("MESSAGE_CREATE", m.clone());
            threads::sent(&mut w, channel, id);
            if w.garble_sends > 0 {
                w.garble_sends -= 1;
                return (StatusCode::OK, "<html>upstream hiccup</html>").into_response();
            }
            with_headers(ok(m), &rate_headers)
        }
        ("PATCH", ["channels", channel, "messages", id]) => {
            let (channel, id) = (channel.parse().unwrap_or(0), id.parse().unwrap_or(0));
            edit_message(&mut w, channel, id, &body)
        }
        ("GET", ["channels", channel]) => threads::get_channel(&w, channel.parse().unwrap_or(0)),
        ("POST", ["channels", channel, "messages", message, "threads"]) => {
            let (channel, message) = (channel.parse().unwrap_or(0), message.parse().unwrap_or(0));
            let made = threads::start_from_message(&mut w, channel, message, &body);
            threads::garbled(&mut w, made)
        }
        ("POST", ["channels", channel, "threads"]) => {
            let made = threads::start_thread(&mut w, channel.parse().unwrap_or(0), &body);
            threads::garbled(&mut w, made)
        }
        ("POST", ["channels", _, "typing"]) => StatusCode::NO_CONTENT.into_response(),
        ("PUT", ["channels", _, "messages", _, "reactions", _, "@me"]) => {
            StatusCode::NO_CONTENT.into_response()
        }
        ("GET", ["channels", channel, "messages"]) => {
            let channel = channel.to_string();
            let query: HashMap<String, String> = uri
                .query()
                .unwrap_or("")
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let after: u64 = query.get("after").and_then(|v| v.parse().ok()).unwrap_or(0);
            let limit: usize = query
                .get("limit")
                .and_then(|v| v.parse().ok())
                .unwrap_or(50);
            let mut found: Vec<&Value> = w
                .messages
                .values()
                .filter(|m| m["channel_id"] == channel.as_str())
                .filter(|m| m["id"].as_str().and_then(|i| i.parse::<u64>().ok()) > Some(after))
                .collect();
            found.sort_by_key(|m| m["id"].as_str().and_then(|i| i.parse::<u64>().ok()));
            // The oldest `limit` after the id, listed newest first as Discord does.
            let page: Vec<Value> = found
                .into_iter()
                .take(limit.min(100))
                .rev()
                .cloned()
                .collect();
            ok(json!(page))
        }
        ("POST", ["interactions", _, _, "callback"]) => StatusCode::NO_CONTENT.into_response(),
        ("POST", ["webhooks", _, _]) | ("PATCH", ["webhooks", _, _, "messages", _]) => {
            let id = w.next_id();
            ok(message_json(
                id,
                GENERAL,
                Some(GUILD),
                bot_user(),
                body["content"].as_str().unwrap_or(""),
            ))
        }
        _ => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"message": format!("no route {method} {path}"), "code": 0})),
        )
            .into_response(),
    }
}
