//! Threads and forum channels as Discord serves them, for the feeds that
//! deliver into a thread per item or a forum post per item.
//!
//! [`FakeDiscord::add_feed_channels`] gives the test guild a forum #releases-forum
//! ([`FORUM`], type 15, with [`FORUM_TAGS`] in `available_tags`), a second
//! text channel #releases ([`RELEASES`]) and an announcement channel
//! #announcements ([`NEWS`], type 5), in GUILD_CREATE (with a CHANNEL_CREATE
//! each when the bot is already there) and `GET /channels/{id}`.
//!
//! * `POST /channels/{c}/messages/{m}/threads` starts a thread from a message
//!   of a text (type 11) or announcement (type 10) channel; the thread's id is
//!   the message's. Refused as Discord refuses: a bad `name` (1–100) or
//!   `auto_archive_duration` (60, 1440, 4320, 10080) 400 50035 with `errors`;
//!   an unknown channel 404 10003; a forum, voice channel or thread 400 50024;
//!   no Create Public Threads ([`World::no_threads`]) 403 50013; a message not
//!   in that channel 404 10008; a message that already has one 400 160004.
//! * `POST /channels/{c}/threads` in a forum makes a post: the thread and its
//!   starter `message` (same id), which is checked as any message is (2,000
//!   characters, embeds, `allowed_mentions`; empty 400 50006) — and has no
//!   nonce, as on Discord. `applied_tags` are at most 5 of the forum's tags
//!   (else 400 50035), and a forum with [`REQUIRE_TAG`] refuses a post
//!   without one (400 40067). The answer is the thread with its `message`.
//!   In a text channel it makes a thread without a starter (`type` 11 or 12,
//!   12 by default as on Discord; in an announcement channel always 10), and a
//!   public one is announced in the parent with a THREAD_CREATED (type 18)
//!   message. Anywhere else 400 50024.
//! * `GET /guilds/{g}/threads/active` lists the guild's unarchived threads
//!   and posts (`{threads, members}`), anyone's: a post by someone else is
//!   made with [`FakeDiscord::someone_posts_in_forum`]. An unknown guild is
//!   404 10004.
//! * Making a thread or a post has its own 429 bucket
//!   ([`FakeDiscord::storm_threads`]), and its answer can be made unreadable
//!   though the thread was made ([`World::garble_threads`]).
//! * Each new thread is dispatched as THREAD_CREATE with `newly_created` and
//!   the bot's thread `member`; a thread from a message also updates the
//!   message (`thread`, flag HAS_THREAD) with MESSAGE_UPDATE.
//! * A message sent to a thread is a message like any other (same checks,
//!   nonces and send bucket); sending to an archived thread unarchives it
//!   (THREAD_UPDATE), as Discord documents, unless it is locked and the bot
//!   may not Manage Threads: then 400 50083 (archived) or 400 160005 (locked,
//!   not archived). A message to a forum itself is 400 40058.
//!   Editing a message of an archived thread is 400 50083: only a new
//!   message reopens it. [`FakeDiscord::archive_thread`] archives (and locks) one, [`FakeDiscord::lock_thread`] locks one.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{BOT, FakeDiscord, GUILD, World, check, computed_mentions, embeds, now_iso};

/// A forum channel (type 15) of the test guild, there after [`FakeDiscord::add_feed_channels`].
pub const FORUM: u64 = 203;
/// A second text channel of the test guild, #releases, likewise.
pub const RELEASES: u64 = 204;
/// An announcement channel (type 5) of the test guild, likewise.
pub const NEWS: u64 = 205;
/// The forum's tags: (id, name, moderated, emoji).
pub const TAG_RELEASE: u64 = 601;
pub const TAG_SECURITY: u64 = 602;
pub const TAG_BLOG: u64 = 603;
pub const TAG_STAFF_PICK: u64 = 604;
pub const TAG_VIDEO: u64 = 605;
pub const TAG_PODCAST: u64 = 606;
pub const FORUM_TAGS: [(u64, &str, bool, Option<&str>); 6] = [
    (TAG_RELEASE, "release", false, Some("🚀")),
    (TAG_SECURITY, "security", false, None),
    (TAG_BLOG, "blog", false, Some("📝")),
    (TAG_STAFF_PICK, "staff pick", true, None),
    (TAG_VIDEO, "video", false, None),
    (TAG_PODCAST, "podcast", false, None),
];
/// Channel flag: a post in this forum must have a tag.
pub const REQUIRE_TAG: u64 = 1 << 4;
/// Permission bits the thread routes look at.
pub const MANAGE_THREADS: u64 = 1 << 34;
const ADMINISTRATOR: u64 = 1 << 3;
/// Message flag: a thread was started from this message.
const HAS_THREAD: u64 = 1 << 5;
/// The only `auto_archive_duration`s Discord takes, in minutes.
pub const AUTO_ARCHIVE_DURATIONS: [u64; 4] = [60, 1440, 4320, 10080];

/// A forum post as the test reads it: the thread's name and tags, and its starter message.
#[derive(Clone, Debug)]
pub struct ForumPost {
    pub id: u64,
    pub name: String,
    pub applied_tags: Vec<u64>,
    pub starter: Value,
}

/// The feed channels' objects as GUILD_CREATE lists them.
pub(super) fn feed_channels(forum_flags: u64) -> Vec<Value> {
    let tags: Vec<Value> = FORUM_TAGS
        .iter()
        .map(|(id, name, moderated, emoji)| {
            json!({"id": id.to_string(), "name": name, "moderated": moderated,
                   "emoji_id": null, "emoji_name": emoji})
        })
        .collect();
    let guild = GUILD.to_string();
    vec![
        json!({"id": FORUM.to_string(), "type": 15, "name": "releases-forum", "guild_id": guild,
            "parent_id": null, "topic": "One post per release", "nsfw": false,
            "last_message_id": null, "rate_limit_per_user": 0, "flags": forum_flags,
            "available_tags": tags, "default_reaction_emoji": {"emoji_id": null, "emoji_name": "👀"},
            "default_thread_rate_limit_per_user": 0, "default_sort_order": null,
            "default_forum_layout": 0, "default_auto_archive_duration": 4320}),
        json!({"id": RELEASES.to_string(), "type": 0, "name": "releases", "guild_id": guild,
            "parent_id": null, "topic": null, "nsfw": false, "last_message_id": null,
            "rate_limit_per_user": 0, "flags": 0}),
        json!({"id": NEWS.to_string(), "type": 5, "name": "announcements", "guild_id": guild,
            "parent_id": null, "topic": null, "nsfw": false, "last_message_id": null,
            "rate_limit_per_user": 0, "flags": 0}),
    ]
}

fn refuse(status: StatusCode, code: u64, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"message": message, "code": code})),
    )
        .into_response()
}

/// Discord's 400 50035 with an `errors` body.
pub(super) fn form_errors(errors: Value) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"message": "Invalid Form Body", "code": 50035, "errors": errors})),
    )
        .into_response()
}

fn leaf(code: &str, message: &str) -> Value {
    json!({"_errors": [{"code": code, "message": message}]})
}

/// What is wrong with a thread's `name` and `auto_archive_duration`, if anything.
fn thread_body_errors(body: &Value) -> serde_json::Map<String, Value> {
    let mut errors = serde_json::Map::new();
    match body["name"].as_str().map(|n| n.chars().count()) {
        None => {
            errors.insert(
                "name".into(),
                leaf("BASE_TYPE_REQUIRED", "This field is required"),
            );
        }
        Some(n) if !(1..=100).contains(&n) => {
            errors.insert(
                "name".into(),
                leaf(
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                ),
            );
        }
        Some(_) => {}
    }
    let duration = &body["auto_archive_duration"];
    if !duration.is_null()
        && !duration
            .as_u64()
            .is_some_and(|d| AUTO_ARCHIVE_DURATIONS.contains(&d))
    {
        errors.insert(
            "auto_archive_duration".into(),
            leaf(
                "BASE_TYPE_CHOICES",
                "Value must be one of {60, 1440, 4320, 10080}.",
            ),
        );
    }
    errors
}

/// What is wrong with `applied_tags` for a forum with `available` tag ids.
fn tag_errors(tags: &Value, available: &[u64]) -> Option<Value> {
    let list = match tags {
        Value::Null => return None,
        Value::Array(list) => list,
        _ => return Some(leaf("BASE_TYPE_ARRAY", "Must be an array.")),
    };
    if list.len() > 5 {
        return Some(leaf(
            "BASE_TYPE_MAX_LENGTH",
            "Must be 5 or fewer in length.",
        ));
    }
    list.iter().enumerate().find_map(|(i, t)| {
        let id = t.as_str().and_then(|s| s.parse::<u64>().ok());
        (!id.is_some_and(|id| available.contains(&id))).then(|| {
            json!({i.to_string(): leaf("BASE_TYPE_CHOICES",
                &format!("Value must be one of the forum's tags, not {t}."))})
        })
    })
}

impl World {
    /// Whether the bot may Manage Threads (Administrator implies it).
    fn bot_manages_threads(&self) -> bool {
        let p = self.everyone_permissions.unwrap_or(ADMINISTRATOR);
        p & (ADMINISTRATOR | MANAGE_THREADS) != 0
    }

    /// A channel as `GET /channels/{id}` serves it: a server's channel, a thread, or the DM.
    pub fn channel(&self, id: u64) -> Option<Value> {
        if let Some(t) = self.threads.get(&id) {
            return Some(t.clone());
        }
        if id == super::DM_CHANNEL {
            return Some(
                json!({"id": id.to_string(), "type": 1, "last_message_id": null,
                "recipients": [super::user(super::ALICE)]}),
            );
        }
        let guild = self.guild_of(id);
        self.channels_rest(guild)
            .as_array()?
            .iter()
            .find(|c| c["id"] == id.to_string().as_str())
            .cloned()
    }

    fn kind_of(&self, id: u64) -> Option<u64> {
        self.channel(id).and_then(|c| c["type"].as_u64())
    }

    /// A thread by id (its channel object, with `thread_metadata`).
    pub fn thread(&self, id: u64) -> Option<Value> {
        self.threads.get(&id).cloned()
    }

    /// The threads whose parent is `channel` (a forum's posts, a text channel's threads), oldest first.
    pub fn threads_in(&self, channel: u64) -> Vec<Value> {
        self.threads
            .values()
            .filter(|t| t["parent_id"] == channel.to_string().as_str())
            .cloned()
            .collect()
    }

    /// The thread started from `message`, if one was (its id is the message's).
    pub fn thread_from(&self, message: u64) -> Option<Value> {
        let parent = self.messages.get(&message)?["channel_id"].clone();
        self.threads
            .get(&message)
            .filter(|t| t["parent_id"] == parent)
            .cloned()
    }

    /// The posts in `forum`, oldest first, each with its starter message.
    pub fn forum_posts(&self, forum: u64) -> Vec<ForumPost> {
        self.threads_in(forum)
            .into_iter()
            .filter_map(|t| {
                let id: u64 = t["id"].as_str()?.parse().ok()?;
                Some(ForumPost {
                    id,
                    name: t["name"].as_str().unwrap_or("").to_string(),
                    applied_tags: t["applied_tags"]
                        .as_array()
                        .map(|a| a.iter().filter_map(|x| x.as_str()?.parse().ok()).collect())
                        .unwrap_or_default(),
                    starter: self.messages.get(&id).cloned().unwrap_or(Value::Null),
                })
            })
            .collect()
    }

    /// Every dispatch as `type id`, oldest first: the order Discord sent them in.
    pub fn dispatched(&self) -> Vec<String> {
        self.log
            .iter()
            .map(|f| {
                format!(
                    "{} {}",
                    f["t"].as_str().unwrap_or(""),
                    f["d"]["id"].as_str().unwrap_or("")
                )
            })
            .collect()
    }

    /// The threads of `guild` not archived, as GUILD_CREATE lists them.
    pub(super) fn active_threads(&self, guild: u64) -> Vec<Value> {
        self.threads
            .values()
            .filter(|t| t["guild_id"] == guild.to_string().as_str())
            .filter(|t| t["thread_metadata"]["archived"] != json!(true))
            .cloned()
            .collect()
    }

    /// A new thread's channel object.
    fn new_thread(&self, id: u64, parent: u64, kind: u64, body: &Value) -> Value {
        let now = now_iso();
        let duration = body["auto_archive_duration"]
            .as_u64()
            .or_else(|| self.channel(parent)?["default_auto_archive_duration"].as_u64())
            .unwrap_or(4320);
        let mut t = json!({"id": id.to_string(), "type": kind, "guild_id": self.guild_of(parent).to_string(),
            "parent_id": parent.to_string(), "owner_id": BOT.to_string(),
            "name": body["name"], "last_message_id": null, "message_count": 0, "member_count": 1,
            "total_message_sent": 0, "rate_limit_per_user": body["rate_limit_per_user"].as_u64().unwrap_or(0),
            "flags": 0,
            "thread_metadata": {"archived": false, "auto_archive_duration": duration,
                "archive_timestamp": now, "locked": false, "create_timestamp": now}});
        if kind == 12 {
            t["thread_metadata"]["invitable"] = json!(body["invitable"].as_bool().unwrap_or(true));
        }
        t
    }

    /// Keeps a new thread and announces it as Discord does, with the bot as its member.
    fn announce_thread(&mut self, thread: &Value) {
        let id: u64 = thread["id"]
            .as_str()
            .and_then(|i| i.parse().ok())
            .unwrap_or(0);
        self.threads.insert(id, thread.clone());
        let mut d = thread.clone();
        d["newly_created"] = json!(true);
        d["member"] = json!({"id": id.to_string(), "user_id": BOT.to_string(),
            "join_timestamp": now_iso(), "flags": 1});
        check("THREAD_CREATE", &d);
        self.dispatch("THREAD_CREATE", d);
    }

    fn update_thread(&mut self, id: u64, change: impl FnOnce(&mut Value)) {
        if let Some(t) = self.threads.get_mut(&id) {
            change(t);
            let d = t.clone();
            check("THREAD_UPDATE", &d);
            self.dispatch("THREAD_UPDATE", d);
        }
    }

    /// Archives `thread` (and locks it), as a moderator or the auto-archive does.
    pub fn archive(&mut self, thread: u64, locked: bool) {
        self.update_thread(thread, |t| {
            t["thread_metadata"]["archived"] = json!(true);
            t["thread_metadata"]["locked"] = json!(locked);
            t["thread_metadata"]["archive_timestamp"] = json!(now_iso());
        });
    }
}

/// `GET /guilds/{guild}/threads/active`: the guild's threads not archived
/// (forum posts among them), each with `parent_id`, `owner_id` and `name`,
/// and the bot's thread member for each it owns; 404 10004 for a guild
/// Discord does not know, 403 50001 for one that removed the bot.
pub(super) fn active_in_guild(w: &World, guild: u64) -> Response {
    let (more, _) = w.more_guilds;
    let known = guild == GUILD || (0..more).any(|i| super::extra_guild(i) == guild);
    if !known {
        return refuse(StatusCode::NOT_FOUND, 10004, "Unknown Guild");
    }
    if !w.guilds().contains(&guild) {
        return refuse(StatusCode::FORBIDDEN, 50001, "Missing Access");
    }
    let threads = w.active_threads(guild);
    let members: Vec<Value> = threads
        .iter()
        .filter(|t| t["owner_id"] == BOT.to_string().as_str())
        .map(|t| {
            json!({"id": t["id"], "user_id": BOT.to_string(),
                "join_timestamp": t["thread_metadata"]["create_timestamp"], "flags": 1})
        })
        .collect();
    (
        StatusCode::OK,
        axum::Json(json!({"threads": threads, "members": members})),
    )
        .into_response()
}

/// A thread or post made, answered as [`World::garble_threads`] asks:
/// unreadably, though it was made.
pub(super) fn garbled(w: &mut World, made: Response) -> Response {
    if !made.status().is_success() || w.garble_threads == 0 {
        return made;
    }
    w.garble_threads -= 1;
    (StatusCode::OK, "<html>upstream hiccup</html>").into_response()
}

/// `GET /channels/{id}`.
pub(super) fn get_channel(w: &World, id: u64) -> Response {
    match w.channel(id) {
        Some(c) => (StatusCode::OK, axum::Json(c)).into_response(),
        None => refuse(StatusCode::NOT_FOUND, 10003, "Unknown Channel"),
    }
}

/// Before a message is created in `channel`: Discord's refusal for a forum,
/// or for a locked thread the bot may not manage.
pub(super) fn refuse_send(w: &World, channel: u64) -> Option<Response> {
    if w.kind_of(channel) == Some(15) {
        return Some(refuse(
            StatusCode::BAD_REQUEST,
            40058,
            "Cannot send messages in a forum channel",
        ));
    }
    let meta = &w.threads.get(&channel)?["thread_metadata"];
    if meta["locked"] != json!(true) || w.bot_manages_threads() {
        return None;
    }
    Some(if meta["archived"] == json!(true) {
        refuse(StatusCode::BAD_REQUEST, 50083, "Thread is archived")
    } else {
        refuse(StatusCode::BAD_REQUEST, 160005, "Thread is locked")
    })
}

/// Whether `channel` is an archived thread (whose messages cannot be edited).
pub(super) fn archived(w: &World, channel: u64) -> bool {
    w.threads
        .get(&channel)
        .is_some_and(|t| t["thread_metadata"]["archived"] == json!(true))
}

/// After message `id` was created in `channel`: a thread counts it, and an
/// archived one is unarchived by it.
pub(super) fn sent(w: &mut World, channel: u64, id: u64) {
    let Some(t) = w.threads.get_mut(&channel) else {
        return;
    };
    let count = |t: &Value, k: &str| t[k].as_u64().unwrap_or(0) + 1;
    t["message_count"] = json!(count(t, "message_count"));
    t["total_message_sent"] = json!(count(t, "total_message_sent"));
    t["last_message_id"] = json!(id.to_string());
    if t["thread_metadata"]["archived"] == json!(true) {
        w.update_thread(channel, |t| {
            t["thread_metadata"]["archived"] = json!(false);
            t["thread_metadata"]["archive_timestamp"] = json!(now_iso());
        });
    }
}

/// `POST /channels/{channel}/messages/{message}/threads`.
pub(super) fn start_from_message(
    w: &mut World,
    channel: u64,
    message: u64,
    body: &Value,
) -> Response {
    let errors = thread_body_errors(body);
    if !errors.is_empty() {
        return form_errors(Value::Object(errors));
    }
    let kind = match w.kind_of(channel) {
        None => return refuse(StatusCode::NOT_FOUND, 10003, "Unknown Channel"),
        Some(0) => 11,
        Some(5) => 10,
        Some(_) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                50024,
                "Cannot execute action on this channel type",
            );
        }
    };
    if w.no_threads.contains(&channel) {
        return refuse(StatusCode::FORBIDDEN, 50013, "Missing Permissions");
    }
    let in_channel = w
        .messages
        .get(&message)
        .is_some_and(|m| m["channel_id"] == channel.to_string().as_str());
    if !in_channel {
        return refuse(StatusCode::NOT_FOUND, 10008, "Unknown Message");
    }
    if w.threads.contains_key(&message) {
        return refuse(
            StatusCode::BAD_REQUEST,
            160004,
            "A thread has already been created for this message",
        );
    }
    let thread = w.new_thread(message, channel, kind, body);
    w.announce_thread(&thread);
    let starter = w.messages.get_mut(&message).expect("checked above");
    starter["thread"] = thread.clone();
    starter["flags"] = json!(starter["flags"].as_u64().unwrap_or(0) | HAS_THREAD);
    let starter = starter.clone();
    check("MESSAGE_UPDATE", &starter);
    w.dispatch("MESSAGE_UPDATE", starter);
    (StatusCode::CREATED, axum::Json(thread)).into_response()
}

/// `POST /channels/{channel}/threads`: a forum post, or a thread without a starter message.
pub(super) fn start_thread(w: &mut World, channel: u64, body: &Value) -> Response {
    let errors = thread_body_errors(body);
    if !errors.is_empty() {
        return form_errors(Value::Object(errors));
    }
    match w.kind_of(channel) {
        None => refuse(StatusCode::NOT_FOUND, 10003, "Unknown Channel"),
        Some(15) => forum_post(w, channel, body),
        Some(parent @ (0 | 5)) => bare_thread(w, channel, parent, body),
        Some(_) => refuse(
            StatusCode::BAD_REQUEST,
            50024,
            "Cannot execute action on this channel type",
        ),
    }
}

/// A post in `forum`: its starter message checked as any message is, its tags against the forum's.
fn forum_post(w: &mut World, forum: u64, body: &Value) -> Response {
    if w.no_send.contains(&forum) || w.no_threads.contains(&forum) {
        return refuse(StatusCode::FORBIDDEN, 50013, "Missing Permissions");
    }
    let forum_channel = w.channel(forum).unwrap_or(Value::Null);
    let available: Vec<u64> = forum_channel["available_tags"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["id"].as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let message = &body["message"];
    let mut errors = serde_json::Map::new();
    if !message.is_object() {
        errors.insert(
            "message".into(),
            leaf("BASE_TYPE_REQUIRED", "This field is required"),
        );
    } else if let Some(e) = super::message_body_errors(message) {
        errors.insert("message".into(), e);
    }
    if let Some(e) = tag_errors(&body["applied_tags"], &available) {
        errors.insert("applied_tags".into(), e);
    }
    if !errors.is_empty() {
        return form_errors(Value::Object(errors));
    }
    let content = message["content"].as_str().unwrap_or("");
    let embeds = message["embeds"].as_array().map_or(0, Vec::len);
    if content.is_empty() && embeds == 0 {
        return refuse(
            StatusCode::BAD_REQUEST,
            50006,
            "Cannot send an empty message",
        );
    }
    let tags = body["applied_tags"].as_array().cloned().unwrap_or_default();
    let flags = forum_channel["flags"].as_u64().unwrap_or(0);
    if flags & REQUIRE_TAG != 0 && tags.is_empty() {
        return refuse(
            StatusCode::BAD_REQUEST,
            40067,
            "A tag is required to create a forum post in this channel",
        );
    }
    let (users, everyone, roles) =
        match computed_mentions(content, &message["allowed_mentions"], None) {
            Ok(found) => found,
            Err(why) => {
                return form_errors(json!({"message": {"allowed_mentions":
                leaf("MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", &why)}}));
            }
        };
    let id = w.next_id();
    let mut thread = w.new_thread(id, forum, 11, body);
    thread["applied_tags"] = json!(tags);
    thread["last_message_id"] = json!(id.to_string());
    let guild = w.guild_of(forum);
    let mut m = super::message_json(id, id, Some(guild), super::bot_user(), content);
    m["embeds"] = embeds::as_kept(&message["embeds"]);
    m["mentions"] = json!(users);
    m["mention_everyone"] = json!(everyone);
    m["mention_roles"] = json!(roles);
    m["position"] = json!(0);
    w.announce_thread(&thread);
    w.messages.insert(id, m.clone());
    check("MESSAGE_CREATE", &m);
    w.dispatch("MESSAGE_CREATE", m.clone());
    thread["message"] = m;
    (StatusCode::CREATED, axum::Json(thread)).into_response()
}

/// A thread in a text or announcement channel with no starter message.
fn bare_thread(w: &mut World, channel: u64, parent: u64, body: &Value) -> Response {
    let kind = match (parent, body["type"].as_u64()) {
        (5, _) => 10,
        (_, None) => 12,
        (_, Some(k @ (11 | 12))) => k,
        (_, Some(_)) => {
            return form_errors(json!({"type": leaf("BASE_TYPE_CHOICES",
                "Value must be one of {10, 11, 12}.")}));
        }
    };
    if w.no_threads.contains(&channel) {
        return refuse(StatusCode::FORBIDDEN, 50013, "Missing Permissions");
    }
    let id = w.next_id();
    let thread = w.new_thread(id, channel, kind, body);
    w.announce_thread(&thread);
    if kind != 12 {
        // A public thread is announced in its parent by a system message.
        let message = w.next_id();
        let mut m = super::message_json(
            message,
            channel,
            Some(w.guild_of(channel)),
            super::bot_user(),
            body["name"].as_str().unwrap_or(""),
        );
        m["type"] = json!(18);
        m["message_reference"] = json!({"channel_id": id.to_string(),
            "guild_id": w.guild_of(channel).to_string()});
        w.messages.insert(message, m.clone());
        check("MESSAGE_CREATE", &m);
        w.dispatch("MESSAGE_CREATE", m);
    }
    (StatusCode::CREATED, axum::Json(thread)).into_response()
}

impl FakeDiscord {
    /// Gives the test guild the forum [`FORUM`] (with `forum_flags`, e.g.
    /// [`REQUIRE_TAG`]), the text channel [`RELEASES`] and the announcement
    /// channel [`NEWS`]: in GUILD_CREATE from now on, and as CHANNEL_CREATE
    /// to a bot already connected.
    pub fn add_feed_channels(&self, forum_flags: u64) {
        self.with(|w| {
            w.feed_channels = true;
            w.forum_flags = forum_flags;
            for c in feed_channels(forum_flags) {
                check("CHANNEL_CREATE", &c);
                w.dispatch("CHANNEL_CREATE", c);
            }
        });
    }

    /// Locks `thread` without archiving it (a moderator's lock), announced with THREAD_UPDATE.
    pub fn lock_thread(&self, thread: u64) {
        self.with(|w| {
            w.update_thread(thread, |t| {
                t["thread_metadata"]["archived"] = json!(false);
                t["thread_metadata"]["locked"] = json!(true);
            })
        });
    }

    /// Archives `thread` (locked too, when `locked`), announced with THREAD_UPDATE.
    pub fn archive_thread(&self, thread: u64, locked: bool) {
        self.with(|w| w.archive(thread, locked));
    }

    /// `person` makes a post named `name` in `forum` (untagged), as someone
    /// else's post the bot must not take for its own; its id.
    pub fn someone_posts_in_forum(&self, person: super::Person, forum: u64, name: &str) -> u64 {
        self.with(|w| {
            let id = w.next_id();
            let mut thread = w.new_thread(id, forum, 11, &json!({"name": name}));
            thread["owner_id"] = json!(person.id.to_string());
            thread["applied_tags"] = json!([]);
            w.threads.insert(id, thread.clone());
            check("THREAD_CREATE", &thread);
            w.dispatch("THREAD_CREATE", thread);
            let guild = w.guild_of(forum);
            let m = super::message_json(id, id, Some(guild), super::user(person), name);
            w.messages.insert(id, m.clone());
            check("MESSAGE_CREATE", &m);
            w.dispatch("MESSAGE_CREATE", m);
            id
        })
    }

    /// The bot may no longer create threads in `channel` (403 50013).
    pub fn deny_threads(&self, channel: u64) {
        self.with(|w| w.no_threads.push(channel));
    }
}
