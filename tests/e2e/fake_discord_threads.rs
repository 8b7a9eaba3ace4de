//! The fake Discord's threads and forum channels are as strict as Discord's:
//! each test talks to it over HTTP as the bot does (its token, its routes)
//! and shows what Discord takes — a thread from a message, a forum post with
//! tags, a thread without a starter, a message in a thread, embeds at their
//! limits — and what it refuses, with Discord's status, JSON code and
//! `errors`, and that a refusal created nothing.

use serde_json::{Value, json};

use crate::support::fake_discord::threads::{
    FORUM, FORUM_TAGS, MANAGE_THREADS, NEWS, RELEASES, REQUIRE_TAG, TAG_BLOG, TAG_PODCAST,
    TAG_RELEASE, TAG_SECURITY, TAG_STAFF_PICK, TAG_VIDEO,
};
use crate::support::fake_discord::{ALICE, FakeDiscord, GENERAL, GUILD, LOUNGE, bot_http};

/// A request the fake must refuse: what it is, its path and body, and the
/// status, JSON code and (for a 50035) the field of the refusal.
type Refusal = (&'static str, String, Value, u16, u64, Option<&'static str>);

/// The fake, with the feed channels, and a client that speaks to it as the bot.
struct Api {
    discord: FakeDiscord,
    http: reqwest::Client,
}

impl Api {
    fn start(forum_flags: u64) -> Self {
        let discord = FakeDiscord::start();
        discord.add_feed_channels(forum_flags);
        Self {
            discord,
            http: bot_http(),
        }
    }

    async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
        let answer = request.send().await.expect("the fake answers");
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let url = format!("{}/api/v10{path}", self.discord.url);
        Self::answer(self.http.post(url).json(&body)).await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let url = format!("{}/api/v10{path}", self.discord.url);
        Self::answer(self.http.get(url)).await
    }

    /// The bot's own message in `channel`, for a thread to start from.
    async fn message_in(&self, channel: u64, content: &str) -> u64 {
        let (status, m) = self
            .post(
                &format!("/channels/{channel}/messages"),
                json!({"content": content}),
            )
            .await;
        assert_eq!(status, 200, "{m}");
        id(&m)
    }

    /// A public thread without a starter message in `channel`.
    async fn public_thread_in(&self, channel: u64) -> u64 {
        let (_, thread) = self
            .post(
                &format!("/channels/{channel}/threads"),
                json!({"name": "t", "type": 11}),
            )
            .await;
        id(&thread)
    }

    fn count(&self, t: &str) -> usize {
        self.discord.with(|w| w.log_of(t).len())
    }
}

fn id(v: &Value) -> u64 {
    v["id"]
        .as_str()
        .and_then(|i| i.parse().ok())
        .expect("an id")
}

/// The `_errors[0].code` at `pointer` under `errors`, as Discord nests them.
fn error_code<'a>(answer: &'a Value, pointer: &str) -> &'a str {
    answer["errors"]
        .pointer(&format!("{pointer}/_errors/0/code"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no error at {pointer} in {answer}"))
}

/// Asserts a refusal: its status and JSON code, and, for a 50035, the field it names.
fn assert_refused(what: &str, answer: &(u16, Value), status: u16, code: u64, field: Option<&str>) {
    let (got, body) = answer;
    assert_eq!(*got, status, "{what}: {body}");
    assert_eq!(body["code"], json!(code), "{what}: {body}");
    assert!(body["message"].is_string(), "{what}: {body}");
    if let Some(field) = field {
        assert_eq!(body["message"], "Invalid Form Body", "{what}");
        error_code(body, field);
    }
}

#[tokio::test]
async fn the_feed_channels_are_served_with_their_types_and_the_forums_tags() {
    let api = Api::start(REQUIRE_TAG);
    let (status, forum) = api.get(&format!("/channels/{FORUM}")).await;
    assert_eq!(status, 200, "{forum}");
    assert_eq!(forum["type"], 15);
    assert_eq!(forum["flags"], REQUIRE_TAG);
    assert_eq!(forum["guild_id"], GUILD.to_string());
    let tags = forum["available_tags"].as_array().expect("available_tags");
    assert_eq!(tags.len(), FORUM_TAGS.len());
    assert_eq!(
        tags[0],
        json!({"id": TAG_RELEASE.to_string(), "name": "release", "moderated": false,
               "emoji_id": null, "emoji_name": "🚀"})
    );
    assert_eq!(tags[3]["moderated"], true, "{}", tags[3]);
    assert_eq!(
        forum["default_reaction_emoji"],
        json!({"emoji_id": null, "emoji_name": "👀"})
    );
    for (channel, kind) in [(RELEASES, 0), (NEWS, 5), (GENERAL, 0)] {
        let (status, c) = api.get(&format!("/channels/{channel}")).await;
        assert_eq!((status, c["type"].clone()), (200, json!(kind)), "{c}");
    }
    let unknown = api.get("/channels/999").await;
    assert_refused("an unknown channel", &unknown, 404, 10003, None);

    // GUILD_CREATE lists them too, and serenity reads the forum and its tags.
    let guild = api.discord.with(|w| w.guild_create_of(GUILD));
    let parsed: serenity::all::Guild = serde_json::from_value(guild).expect("serenity reads it");
    let forum = &parsed.channels[&serenity::all::ChannelId::new(FORUM)];
    assert_eq!(forum.kind, serenity::all::ChannelType::Forum);
    assert_eq!(forum.available_tags.len(), FORUM_TAGS.len());
    let created: Vec<Value> = api.discord.with(|w| w.log_of("CHANNEL_CREATE"));
    assert_eq!(created.len(), 3, "each new channel is announced");
}

#[tokio::test]
async fn a_thread_from_a_message_takes_its_id_and_is_announced() {
    let api = Api::start(0);
    let said = api.discord.say(RELEASES, ALICE, "v1.2 is out");
    let (status, thread) = api
        .post(
            &format!("/channels/{RELEASES}/messages/{said}/threads"),
            json!({"name": "v1.2", "auto_archive_duration": 1440}),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    assert_eq!(
        id(&thread),
        said,
        "a thread from a message has the message's id"
    );
    assert_eq!(thread["type"], 11);
    assert_eq!(thread["parent_id"], RELEASES.to_string());
    assert_eq!(thread["name"], "v1.2");
    assert_eq!(thread["thread_metadata"]["auto_archive_duration"], 1440);
    assert_eq!(thread["thread_metadata"]["archived"], false);

    let created = api.discord.with(|w| w.log_of("THREAD_CREATE"));
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["newly_created"], true);
    assert_eq!(created[0]["member"]["user_id"], "10000");
    let updated = api.discord.with(|w| w.log_of("MESSAGE_UPDATE"));
    assert_eq!(updated.last().unwrap()["thread"]["id"], said.to_string());
    assert_eq!(updated.last().unwrap()["flags"], 32, "HAS_THREAD");
    assert!(api.discord.with(|w| w.thread_from(said)).is_some());
    let (_, fetched) = api.get(&format!("/channels/{said}")).await;
    assert_eq!(fetched["type"], 11, "the thread is a channel: {fetched}");

    // In an announcement channel the thread is an announcement thread.
    let news = api.message_in(NEWS, "we ship on Friday").await;
    let (status, thread) = api
        .post(
            &format!("/channels/{NEWS}/messages/{news}/threads"),
            json!({"name": "Friday"}),
        )
        .await;
    assert_eq!(
        (status, thread["type"].clone()),
        (201, json!(10)),
        "{thread}"
    );
}

#[tokio::test]
async fn starting_a_thread_from_a_message_is_refused_as_discord_refuses() {
    let api = Api::start(0);
    api.discord.with(|w| w.voice_channel = true);
    let said = api.discord.say(RELEASES, ALICE, "v1.2 is out");
    let elsewhere = api.discord.say(GENERAL, ALICE, "hello");
    let threads =
        |channel: u64, message: u64| format!("/channels/{channel}/messages/{message}/threads");
    let name = json!({"name": "v1.2"});
    let taken = api.post(&threads(RELEASES, said), name.clone()).await;
    assert_eq!(taken.0, 201, "{}", taken.1);

    let cases: Vec<Refusal> = vec![
        (
            "a second thread for the message",
            threads(RELEASES, said),
            name.clone(),
            400,
            160004,
            None,
        ),
        (
            "an unknown message",
            threads(RELEASES, 12345),
            name.clone(),
            404,
            10008,
            None,
        ),
        (
            "a message of another channel",
            threads(RELEASES, elsewhere),
            name.clone(),
            404,
            10008,
            None,
        ),
        (
            "an unknown channel",
            threads(999, said),
            name.clone(),
            404,
            10003,
            None,
        ),
        (
            "a forum channel",
            threads(FORUM, said),
            name.clone(),
            400,
            50024,
            None,
        ),
        (
            "a voice channel",
            threads(LOUNGE, said),
            name.clone(),
            400,
            50024,
            None,
        ),
        (
            "a thread",
            threads(said, said),
            name.clone(),
            400,
            50024,
            None,
        ),
        (
            "no name",
            threads(GENERAL, elsewhere),
            json!({}),
            400,
            50035,
            Some("/name"),
        ),
        (
            "an empty name",
            threads(GENERAL, elsewhere),
            json!({"name": ""}),
            400,
            50035,
            Some("/name"),
        ),
        (
            "a name of 101 characters",
            threads(GENERAL, elsewhere),
            json!({"name": "x".repeat(101)}),
            400,
            50035,
            Some("/name"),
        ),
        (
            "an archive duration of 30",
            threads(GENERAL, elsewhere),
            json!({"name": "ok", "auto_archive_duration": 30}),
            400,
            50035,
            Some("/auto_archive_duration"),
        ),
    ];
    for (what, path, body, status, code, field) in cases {
        let answer = api.post(&path, body).await;
        assert_refused(what, &answer, status, code, field);
    }
    api.discord.deny_threads(GENERAL);
    let denied = api.post(&threads(GENERAL, elsewhere), name.clone()).await;
    assert_refused("no Create Public Threads", &denied, 403, 50013, None);

    assert_eq!(api.count("THREAD_CREATE"), 1, "a refusal created no thread");
    assert!(api.discord.with(|w| w.thread_from(elsewhere)).is_none());
    // At its limit a name is taken.
    let hundred = api.message_in(RELEASES, "long").await;
    let answer = api
        .post(
            &threads(RELEASES, hundred),
            json!({"name": "x".repeat(100)}),
        )
        .await;
    assert_eq!(answer.0, 201, "{}", answer.1);
}

#[tokio::test]
async fn a_forum_post_is_a_thread_with_its_tags_and_starter_message() {
    let api = Api::start(REQUIRE_TAG);
    let body = json!({"name": "ambient 1.2", "auto_archive_duration": 10080,
        "applied_tags": [TAG_RELEASE.to_string(), TAG_BLOG.to_string()],
        "message": {"content": "Released today, <@3>.", "allowed_mentions": {"parse": []},
            "embeds": [{"title": "ambient 1.2", "url": "https://example.org/1.2",
                        "description": "What changed", "fields": [{"name": "Size", "value": "30 MB"}]}]}});
    let (status, post) = api.post(&format!("/channels/{FORUM}/threads"), body).await;
    assert_eq!(status, 201, "{post}");
    let thread = id(&post);
    assert_eq!(post["type"], 11);
    assert_eq!(post["parent_id"], FORUM.to_string());
    assert_eq!(
        post["applied_tags"],
        json!([TAG_RELEASE.to_string(), TAG_BLOG.to_string()])
    );
    assert_eq!(
        id(&post["message"]),
        thread,
        "the starter message has the thread's id"
    );
    assert_eq!(post["message"]["channel_id"], thread.to_string());
    assert_eq!(
        post["message"]["mentions"],
        json!([]),
        "allowed_mentions is applied"
    );

    let posts = api.discord.with(|w| w.forum_posts(FORUM));
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].name, "ambient 1.2");
    assert_eq!(posts[0].applied_tags, vec![TAG_RELEASE, TAG_BLOG]);
    assert_eq!(posts[0].starter["content"], "Released today, <@3>.");
    assert_eq!(posts[0].starter["embeds"][0]["title"], "ambient 1.2");
    assert_eq!(posts[0].starter["embeds"][0]["type"], "rich");
    let order: Vec<String> = api
        .discord
        .with(|w| w.dispatched())
        .into_iter()
        .filter(|d| !d.starts_with("CHANNEL_CREATE"))
        .collect();
    assert_eq!(
        order,
        [
            format!("THREAD_CREATE {thread}"),
            format!("MESSAGE_CREATE {thread}")
        ]
    );
    let created = api.discord.with(|w| w.log_of("THREAD_CREATE"));
    assert_eq!(created[0]["newly_created"], true);
    // A forum post's message has no nonce on Discord: the same post sent again is a second post.
    let again = json!({"name": "twice", "applied_tags": [TAG_RELEASE.to_string()],
        "message": {"content": "once?", "nonce": "feed-7", "enforce_nonce": true}});
    let (_, first) = api
        .post(&format!("/channels/{FORUM}/threads"), again.clone())
        .await;
    let (_, second) = api.post(&format!("/channels/{FORUM}/threads"), again).await;
    assert_ne!(first["id"], second["id"]);
    assert_eq!(api.discord.with(|w| w.forum_posts(FORUM)).len(), 3);
    // The forum takes no messages of its own; the post takes them.
    let direct = api
        .post(
            &format!("/channels/{FORUM}/messages"),
            json!({"content": "hi"}),
        )
        .await;
    assert_refused("a message to the forum itself", &direct, 400, 40058, None);
    let reply = api
        .post(
            &format!("/channels/{thread}/messages"),
            json!({"content": "more"}),
        )
        .await;
    assert_eq!(reply.0, 200, "{}", reply.1);
    assert_eq!(api.discord.with(|w| w.posted_in(thread)).len(), 2);
}

#[tokio::test]
async fn a_forum_post_is_refused_as_discord_refuses() {
    let api = Api::start(REQUIRE_TAG);
    let tag = |t: u64| json!(t.to_string());
    let post = |extra: Value| {
        let mut body = json!({"name": "ambient 1.2", "applied_tags": [tag(TAG_RELEASE)],
            "message": {"content": "Released"}});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let six = json!([
        tag(TAG_RELEASE),
        tag(TAG_SECURITY),
        tag(TAG_BLOG),
        tag(TAG_STAFF_PICK),
        tag(TAG_VIDEO),
        tag(TAG_PODCAST)
    ]);
    let cases: Vec<(&str, Value, u16, u64, Option<&str>)> = vec![
        (
            "no tag in a forum that requires one",
            post(json!({"applied_tags": []})),
            400,
            40067,
            None,
        ),
        (
            "six tags",
            post(json!({"applied_tags": six})),
            400,
            50035,
            Some("/applied_tags"),
        ),
        (
            "a tag the forum lacks",
            post(json!({"applied_tags": ["999"]})),
            400,
            50035,
            Some("/applied_tags/0"),
        ),
        (
            "no message",
            post(json!({"message": null})),
            400,
            50035,
            Some("/message"),
        ),
        (
            "an empty message",
            post(json!({"message": {"content": ""}})),
            400,
            50006,
            None,
        ),
        (
            "2,001 characters",
            post(json!({"message": {"content": "x".repeat(2001)}})),
            400,
            50035,
            Some("/message/content"),
        ),
        (
            "an embed title of 257",
            post(json!({"message": {"embeds": [{"title": "x".repeat(257)}]}})),
            400,
            50035,
            Some("/message/embeds/0/title"),
        ),
        (
            "parse users beside a users list",
            post(
                json!({"message": {"content": "<@3>", "allowed_mentions": {"parse": ["users"], "users": ["3"]}}}),
            ),
            400,
            50035,
            Some("/message/allowed_mentions"),
        ),
        (
            "no name",
            post(json!({"name": null})),
            400,
            50035,
            Some("/name"),
        ),
        (
            "a name of 101",
            post(json!({"name": "x".repeat(101)})),
            400,
            50035,
            Some("/name"),
        ),
        (
            "an archive duration of 100",
            post(json!({"auto_archive_duration": 100})),
            400,
            50035,
            Some("/auto_archive_duration"),
        ),
    ];
    let path = format!("/channels/{FORUM}/threads");
    for (what, body, status, code, field) in cases {
        let answer = api.post(&path, body).await;
        assert_refused(what, &answer, status, code, field);
    }
    let voice = {
        api.discord.with(|w| w.voice_channel = true);
        api.post(&format!("/channels/{LOUNGE}/threads"), post(json!({})))
            .await
    };
    assert_refused("a voice channel", &voice, 400, 50024, None);
    api.discord.with(|w| w.no_send.push(FORUM));
    let denied = api.post(&path, post(json!({}))).await;
    assert_refused("no Send Messages in the forum", &denied, 403, 50013, None);

    assert!(
        api.discord.with(|w| w.forum_posts(FORUM)).is_empty(),
        "a refusal posted nothing"
    );
    assert_eq!(api.count("THREAD_CREATE"), 0);
    assert_eq!(api.count("MESSAGE_CREATE"), 0);

    // The same post with its tag is taken; five tags are the most.
    api.discord.with(|w| w.no_send.clear());
    let five = json!([
        tag(TAG_RELEASE),
        tag(TAG_SECURITY),
        tag(TAG_BLOG),
        tag(TAG_VIDEO),
        tag(TAG_PODCAST)
    ]);
    let taken = api.post(&path, post(json!({"applied_tags": five}))).await;
    assert_eq!(taken.0, 201, "{}", taken.1);
}

#[tokio::test]
async fn a_forum_without_require_tag_takes_a_post_without_tags() {
    let api = Api::start(0);
    let body = json!({"name": "untagged", "message": {"content": "hello"}});
    let (status, post) = api.post(&format!("/channels/{FORUM}/threads"), body).await;
    assert_eq!(status, 201, "{post}");
    assert_eq!(
        api.discord.with(|w| w.forum_posts(FORUM))[0].applied_tags,
        Vec::<u64>::new()
    );
}

#[tokio::test]
async fn a_thread_without_a_starter_in_a_text_channel() {
    let api = Api::start(0);
    let path = format!("/channels/{RELEASES}/threads");
    let (status, public) = api
        .post(&path, json!({"name": "v1.3 talk", "type": 11}))
        .await;
    assert_eq!(
        (status, public["type"].clone()),
        (201, json!(11)),
        "{public}"
    );
    // A public thread is announced in its parent by a THREAD_CREATED message.
    let said = api.discord.with(|w| w.log_of("MESSAGE_CREATE"));
    assert_eq!(said.len(), 1);
    assert_eq!(said[0]["type"], 18);
    assert_eq!(said[0]["channel_id"], RELEASES.to_string());
    assert_eq!(said[0]["message_reference"]["channel_id"], public["id"]);

    let (status, private) = api.post(&path, json!({"name": "quiet"})).await;
    assert_eq!(
        (status, private["type"].clone()),
        (201, json!(12)),
        "private by default: {private}"
    );
    assert_eq!(
        api.count("MESSAGE_CREATE"),
        1,
        "a private thread is not announced"
    );
    let (status, news) = api
        .post(&format!("/channels/{NEWS}/threads"), json!({"name": "n"}))
        .await;
    assert_eq!((status, news["type"].clone()), (201, json!(10)), "{news}");
    assert_eq!(api.discord.with(|w| w.threads_in(RELEASES)).len(), 2);

    let wrong = api.post(&path, json!({"name": "x", "type": 15})).await;
    assert_refused("a thread of type 15", &wrong, 400, 50035, Some("/type"));
    api.discord.deny_threads(RELEASES);
    let denied = api.post(&path, json!({"name": "x", "type": 11})).await;
    assert_refused("no Create Public Threads", &denied, 403, 50013, None);
    assert_eq!(api.count("THREAD_CREATE"), 3, "refusals made no thread");
}

#[tokio::test]
async fn a_thread_takes_messages_as_a_channel_does_and_an_archived_one_is_reopened_by_them() {
    let api = Api::start(0);
    let thread = api.public_thread_in(RELEASES).await;
    let path = format!("/channels/{thread}/messages");
    let once = json!({"content": "item", "nonce": "feed-1", "enforce_nonce": true});
    let (s1, first) = api.post(&path, once.clone()).await;
    let (s2, again) = api.post(&path, once).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(
        first["id"], again["id"],
        "a repeated nonce is the same message"
    );
    let long = api.post(&path, json!({"content": "x".repeat(2001)})).await;
    assert_refused(
        "2,001 characters in a thread",
        &long,
        400,
        50035,
        Some("/content"),
    );
    for (what, body) in [
        ("no content", json!({})),
        ("only whitespace", json!({"content": " \n "})),
        ("an empty embed list", json!({"content": "", "embeds": []})),
    ] {
        let empty = api.post(&path, body).await;
        assert_refused(what, &empty, 400, 50006, None);
    }
    assert_eq!(api.discord.with(|w| w.posted_in(thread)).len(), 1);
    assert_eq!(
        api.discord
            .with(|w| w.thread(thread).unwrap()["message_count"].clone()),
        1
    );

    // Archived: its messages cannot be edited, and a new message unarchives it, as Discord documents.
    api.discord.archive_thread(thread, false);
    let edit = {
        let url = format!("{}/api/v10{path}/{}", api.discord.url, id(&first));
        Api::answer(api.http.patch(url).json(&json!({"content": "edited"}))).await
    };
    assert_refused("an edit in an archived thread", &edit, 400, 50083, None);
    assert_eq!(
        api.discord.with(|w| w.posted_in(thread))[0]["content"],
        "item"
    );
    let (status, _) = api.post(&path, json!({"content": "reopens"})).await;
    assert_eq!(status, 200);
    let updates = api.discord.with(|w| w.log_of("THREAD_UPDATE"));
    assert_eq!(updates.len(), 2, "archived, then unarchived");
    assert_eq!(updates[1]["thread_metadata"]["archived"], false);

    // Archived and locked, to a bot that may not Manage Threads: refused.
    api.discord
        .with(|w| w.everyone_permissions = Some((1 << 10) | (1 << 11) | (1 << 38)));
    api.discord.archive_thread(thread, true);
    let refused = api.post(&path, json!({"content": "locked out"})).await;
    assert_refused("an archived, locked thread", &refused, 400, 50083, None);
    api.discord.lock_thread(thread);
    let locked = api.post(&path, json!({"content": "still locked"})).await;
    assert_refused("a locked thread", &locked, 400, 160005, None);
    assert_eq!(
        api.discord.with(|w| w.posted_in(thread)).len(),
        2,
        "refusals posted nothing"
    );
    // A bot that may Manage Threads posts there all the same.
    api.discord
        .with(|w| w.everyone_permissions = Some((1 << 11) | MANAGE_THREADS));
    let (status, _) = api.post(&path, json!({"content": "moderator"})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn embeds_are_held_to_discords_limits() {
    let api = Api::start(0);
    let path = format!("/channels/{GENERAL}/messages");
    let x = |n: usize| "x".repeat(n);
    let field = |name: String, value: String| json!({"name": name, "value": value});
    let one = |e: Value| json!({"embeds": [e]});
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "title 257",
            one(json!({"title": x(257)})),
            "/embeds/0/title",
        ),
        (
            "description 4,097",
            one(json!({"description": x(4097)})),
            "/embeds/0/description",
        ),
        (
            "26 fields",
            one(json!({"fields": vec![field(x(1), x(1)); 26]})),
            "/embeds/0/fields",
        ),
        (
            "a field name of 257",
            one(json!({"fields": [field(x(1), x(1)), field(x(257), x(1))]})),
            "/embeds/0/fields/1/name",
        ),
        (
            "a field value of 1,025",
            one(json!({"fields": [field(x(1), x(1025))]})),
            "/embeds/0/fields/0/value",
        ),
        (
            "an empty field value",
            one(json!({"fields": [field(x(1), String::new())]})),
            "/embeds/0/fields/0/value",
        ),
        (
            "footer 2,049",
            one(json!({"footer": {"text": x(2049)}})),
            "/embeds/0/footer/text",
        ),
        (
            "author name 257",
            one(json!({"author": {"name": x(257)}})),
            "/embeds/0/author/name",
        ),
        (
            "a url not http(s)",
            one(json!({"title": "t", "url": "javascript:alert(1)"})),
            "/embeds/0/url",
        ),
        (
            "11 embeds",
            json!({"embeds": vec![json!({"title": "t"}); 11]}),
            "/embeds",
        ),
        (
            "6,001 characters across two",
            json!({"embeds": [{"description": x(3000)},
            {"description": x(3000), "title": "x"}]}),
            "/embeds",
        ),
    ];
    for (what, body, field) in cases {
        let answer = api.post(&path, body).await;
        assert_refused(what, &answer, 400, 50035, Some(field));
    }
    assert!(
        api.discord.with(|w| w.posted_in(GENERAL)).is_empty(),
        "a refusal posted nothing"
    );

    let fields = vec![field(x(1), x(1)); 25];
    let taken = api
        .post(
            &path,
            one(json!({"description": x(4096), "fields": fields})),
        )
        .await;
    assert_eq!(taken.0, 200, "4,096 and 25 fields are taken: {}", taken.1);
    // 256 + 2,415 + 2,048 + 256 + 1,024 + 1: exactly 6,000 across two embeds.
    let at_limits = json!({"embeds": [
        {"title": x(256), "url": "http://example.org", "description": x(2415),
         "footer": {"text": x(2048)}, "author": {"name": x(256)},
         "fields": [field(x(256), x(768))]},
        {"title": "t"},
    ]});
    let taken = api.post(&path, at_limits.clone()).await;
    assert_eq!(taken.0, 200, "{}", taken.1);
    let over = {
        let mut b = at_limits;
        b["embeds"][1]["title"] = json!("tt");
        b
    };
    let refused = api.post(&path, over).await;
    assert_refused(
        "one character over 6,000",
        &refused,
        400,
        50035,
        Some("/embeds"),
    );
    let kept = api.discord.with(|w| w.posted_in(GENERAL));
    assert_eq!(kept.len(), 2);
    // An edit is held to the same limits.
    let url = format!("{}/api/v10{path}/{}", api.discord.url, id(&kept[0]));
    let edit = Api::answer(api.http.patch(url).json(&one(json!({"title": x(257)})))).await;
    assert_refused(
        "an edit's title of 257",
        &edit,
        400,
        50035,
        Some("/embeds/0/title"),
    );
    assert_eq!(kept[1]["embeds"][0]["type"], "rich");
    assert_eq!(kept[1]["embeds"][1]["title"], "t");
}

#[tokio::test]
async fn a_thread_has_its_own_send_bucket_as_every_channel_does() {
    let api = Api::start(0);
    api.discord
        .rate_limit_sends(1, std::time::Duration::from_secs(60));
    let thread = api.public_thread_in(RELEASES).await;
    let paths = [RELEASES, thread].map(|c| format!("/channels/{c}/messages"));
    let send = |i: usize| api.post(&paths[i], json!({"content": "item"}));
    assert_eq!(send(0).await.0, 200);
    assert_eq!(
        send(1).await.0,
        200,
        "the parent's spent bucket is not the thread's"
    );
    let (status, body) = send(1).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["global"], false);
    assert_eq!(api.discord.with(|w| w.posted_in(thread)).len(), 1);
}
