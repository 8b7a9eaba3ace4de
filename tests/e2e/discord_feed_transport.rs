//! What a feed needs of the Discord transport, against the fake Discord
//! through the bot's own `DiscordTransport`, on both of its paths: through
//! serenity's HTTP client (a rate-limiting proxy in front) and through the
//! bot's own limiter (it honours 429s itself). Each test runs both.
//!
//! A card arrives as an embed; a feed pings only the roles it was given,
//! never one only named in the text, never `@everyone`; a channel's kind is
//! read as Discord serves it; a thread is started from a message; a forum
//! post carries its tags and card, and a forum that requires a tag refuses
//! one without; the bot's own post is found again by its name. A 429 on
//! making a thread is waited out by the bot's own limiter, and is a
//! transport error where a proxy should have waited or where the wait is too
//! long: nothing is made twice. A post whose answer was unreadable is of
//! unknown outcome, and is found by its name instead of made again. The World's
//! recording transport refuses what the fake Discord refuses.

use ambient::attention::Author;
use ambient::chat::{Card, ChannelKind, ChatError, ForumPost, ForumTag, Outgoing, Transport};
use ambient::discord::transport::DiscordTransport;
use ambient::ids::{ChannelId, GuildId, MessageId, RoleId, UserId};
use chrono::TimeZone;
use serde_json::{Value, json};

use crate::support::fake_discord::threads::{
    FORUM, FORUM_TAGS, NEWS, RELEASES, REQUIRE_TAG, TAG_RELEASE, TAG_SECURITY,
};
use crate::support::fake_discord::{
    ALICE, BOT, FakeDiscord, GENERAL, GUILD, LOUNGE, TOKEN, bot_http,
};
use crate::support::world::RecordingTransport;

/// The transport's two paths: whether a rate-limiting proxy handles 429s
/// (serenity sends) or the bot does (its own limiter sends).
const PATHS: [bool; 2] = [true, false];

fn path_name(proxy: bool) -> &'static str {
    if proxy { "serenity" } else { "limiter" }
}

/// The bot's transport to `discord`, as the bot builds it.
fn transport(discord: &FakeDiscord, proxy: bool) -> DiscordTransport {
    let mut settings = ambient::settings::Settings::default();
    settings.discord.api_base_url = discord.url.clone();
    settings.discord.rest_proxy_handles_rate_limits = proxy;
    let me = Author {
        id: UserId(BOT),
        name: "ambient".into(),
        is_bot: true,
    };
    ambient::discord::chat_transport(TOKEN, &settings, me).expect("a transport")
}

/// A fake Discord with the feed channels (the forum with `forum_flags`).
fn discord(forum_flags: u64) -> FakeDiscord {
    let discord = FakeDiscord::start();
    discord.add_feed_channels(forum_flags);
    discord
}

fn card() -> Card {
    Card {
        title: "ambient 2.0 released".into(),
        url: Some("https://example.org/releases/2.0".into()),
        description: "Feeds, threads and forum posts.".into(),
        author: Some("The ambient team".into()),
        timestamp: Some(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 10, 30, 0)
                .unwrap(),
        ),
        footer: Some("example.org".into()),
    }
}

/// The card's fields as Discord keeps the embed.
fn assert_embed(embed: &Value, path: &str) {
    assert_eq!(embed["title"], "ambient 2.0 released", "{path}: {embed}");
    assert_eq!(embed["url"], "https://example.org/releases/2.0", "{path}");
    assert_eq!(
        embed["description"], "Feeds, threads and forum posts.",
        "{path}"
    );
    assert_eq!(embed["author"]["name"], "The ambient team", "{path}");
    assert_eq!(embed["footer"]["text"], "example.org", "{path}");
    let at = embed["timestamp"].as_str().expect("a timestamp");
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(at).expect("RFC 3339"),
        card().timestamp.unwrap(),
        "{path}"
    );
}

/// The bot's post in the test guild's forum named `name`, if there is one.
async fn named(transport: &DiscordTransport, name: &str) -> Option<ForumPost> {
    transport
        .forum_post_named(GuildId(GUILD), ChannelId(FORUM), name)
        .await
        .expect("the guild's threads")
}

fn id(v: &Value) -> u64 {
    v["id"]
        .as_str()
        .and_then(|i| i.parse().ok())
        .expect("an id")
}

#[tokio::test]
async fn a_card_is_an_embed_and_a_feed_pings_only_its_roles() {
    for proxy in PATHS {
        let path = path_name(proxy);
        let discord = discord(0);
        let transport = transport(&discord, proxy);
        let mut message = Outgoing::text(
            "<@&777> <@&888> @everyone @here: a new release",
            format!("card-{path}"),
        );
        message.cards = vec![card()];
        message.ping_roles = vec![RoleId(777)];
        let sent = transport
            .send(ChannelId(RELEASES), &message)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let posted = discord.with(|w| w.posted_in(RELEASES));
        assert_eq!(posted.len(), 1, "{path}");
        let m = &posted[0];
        assert_eq!(id(m), sent.get(), "{path}");
        assert_eq!(m["embeds"].as_array().map(Vec::len), Some(1), "{path}");
        assert_embed(&m["embeds"][0], path);
        // The listed role is pinged; one only named in the text is not, nor everyone.
        assert_eq!(m["mention_roles"], json!(["777"]), "{path}");
        assert_eq!(m["mention_everyone"], json!(false), "{path}");
        assert_eq!(m["mentions"], json!([]), "{path}");
    }
}

/// The fake refuses as Discord does what the transport must never send:
/// `parse` naming roles beside a list of them, an embed's unreadable time.
#[tokio::test]
async fn the_fake_refuses_roles_both_parsed_and_listed_and_a_bad_embed_time() {
    let discord = discord(0);
    let answer = bot_http()
        .post(format!(
            "{}/api/v10/channels/{RELEASES}/messages",
            discord.url
        ))
        .json(&json!({"content": "<@&777>",
            "allowed_mentions": {"parse": ["roles"], "roles": ["777"]}}))
        .send()
        .await
        .expect("the fake answers");
    assert_eq!(answer.status().as_u16(), 400);
    let body: Value = answer.json().await.expect("JSON");
    assert_eq!(body["code"], 50035, "{body}");
    // Nor does it take an embed's time that is not ISO 8601.
    let answer = bot_http()
        .post(format!(
            "{}/api/v10/channels/{RELEASES}/messages",
            discord.url
        ))
        .json(&json!({"content": "x", "embeds": [{"title": "t", "timestamp": "yesterday"}]}))
        .send()
        .await
        .expect("the fake answers");
    assert_eq!(answer.status().as_u16(), 400);
    let body: Value = answer.json().await.expect("JSON");
    assert!(
        body["errors"]["embeds"]["0"]["timestamp"].is_object(),
        "{body}"
    );
    assert!(discord.with(|w| w.posted_in(RELEASES)).is_empty());
}

#[tokio::test]
async fn a_channels_kind_is_read_as_discord_serves_it() {
    for proxy in PATHS {
        let path = path_name(proxy);
        let discord = discord(REQUIRE_TAG);
        discord.with(|w| w.voice_channel = true);
        let transport = transport(&discord, proxy);
        let kind = |c: u64| transport.channel_kind(ChannelId(c));
        assert_eq!(kind(GENERAL).await.unwrap(), ChannelKind::Text, "{path}");
        assert_eq!(
            kind(NEWS).await.unwrap(),
            ChannelKind::Announcement,
            "{path}"
        );
        assert_eq!(kind(LOUNGE).await.unwrap(), ChannelKind::Other, "{path}");
        let tags: Vec<ForumTag> = FORUM_TAGS
            .iter()
            .map(|(id, name, moderated, _)| ForumTag {
                id: *id,
                name: name.to_string(),
                moderated: *moderated,
            })
            .collect();
        assert_eq!(
            kind(FORUM).await.unwrap(),
            ChannelKind::Forum {
                tags,
                tag_required: true
            },
            "{path}"
        );
        let said = transport
            .send(ChannelId(RELEASES), &Outgoing::text("news", "kind"))
            .await
            .unwrap();
        let thread = transport
            .start_thread(ChannelId(RELEASES), said, "news")
            .await
            .unwrap();
        assert_eq!(
            kind(thread.get()).await.unwrap(),
            ChannelKind::Thread,
            "{path}"
        );
        let unknown = kind(999).await;
        assert!(
            matches!(unknown, Err(ChatError::Unavailable(_))),
            "{path}: {unknown:?}"
        );
    }
    // A forum that does not require a tag says so.
    let discord = discord(0);
    let kind = transport(&discord, false)
        .channel_kind(ChannelId(FORUM))
        .await
        .unwrap();
    assert!(
        matches!(
            kind,
            ChannelKind::Forum {
                tag_required: false,
                ..
            }
        ),
        "{kind:?}"
    );
}

#[tokio::test]
async fn a_thread_is_started_from_a_message_its_name_cut_to_100() {
    for proxy in PATHS {
        let path = path_name(proxy);
        let discord = discord(0);
        let transport = transport(&discord, proxy);
        let said = transport
            .send(ChannelId(RELEASES), &Outgoing::text("a release", "thread"))
            .await
            .unwrap();
        // 150 characters, 2 bytes each: a cut at byte 100 would split one.
        let long = "é".repeat(150);
        let thread = transport
            .start_thread(ChannelId(RELEASES), said, &long)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let made = discord
            .with(|w| w.thread_from(said.get()))
            .expect("a thread from the message");
        assert_eq!(id(&made), thread.get(), "{path}");
        assert_eq!(made["name"], "é".repeat(100), "{path}");
        assert_eq!(made["thread_metadata"]["auto_archive_duration"], 1440);
        // Discord refuses a second thread from one message; the caller reads why.
        let again = transport
            .start_thread(ChannelId(RELEASES), said, "again")
            .await;
        let Err(ChatError::Transport(why)) = again else {
            panic!("{path}: {again:?}");
        };
        assert!(why.contains("already been created"), "{path}: {why}");
        // No Create Public Threads: refused, as a send without permission is.
        discord.deny_threads(GENERAL);
        let other = transport
            .send(ChannelId(GENERAL), &Outgoing::text("hi", "denied"))
            .await
            .unwrap();
        let denied = transport.start_thread(ChannelId(GENERAL), other, "x").await;
        assert!(
            matches!(denied, Err(ChatError::Refused(_))),
            "{path}: {denied:?}"
        );
        // An unknown message is unavailable, as an unknown channel is.
        let unknown = transport
            .start_thread(ChannelId(RELEASES), MessageId(42), "x")
            .await;
        assert!(
            matches!(unknown, Err(ChatError::Unavailable(_))),
            "{path}: {unknown:?}"
        );
    }
}

#[tokio::test]
async fn a_forum_post_carries_its_tags_and_card_and_is_found_by_its_name() {
    for proxy in PATHS {
        let path = path_name(proxy);
        let discord = discord(REQUIRE_TAG);
        let transport = transport(&discord, proxy);
        let mut message = Outgoing::text("<@&777> out now", format!("post-{path}"));
        message.cards = vec![card()];
        message.ping_roles = vec![RoleId(777)];
        let name = format!("ambient 2.0 {}", "x".repeat(120));
        let post = transport
            .post_in_forum(
                ChannelId(FORUM),
                &name,
                &message,
                &[TAG_RELEASE, TAG_SECURITY],
            )
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let posts = discord.with(|w| w.forum_posts(FORUM));
        assert_eq!(posts.len(), 1, "{path}");
        let made = &posts[0];
        assert_eq!(post.thread.get(), made.id, "{path}");
        assert_eq!(post.message.get(), id(&made.starter), "{path}");
        assert_eq!(made.name, name.chars().take(100).collect::<String>());
        assert_eq!(made.applied_tags, vec![TAG_RELEASE, TAG_SECURITY], "{path}");
        assert_embed(&made.starter["embeds"][0], path);
        assert_eq!(made.starter["mention_roles"], json!(["777"]), "{path}");

        // Someone else's post of the same name, and the bot's of another, are not it.
        discord.someone_posts_in_forum(ALICE, FORUM, "ambient 1.0");
        assert_eq!(named(&transport, &name).await, Some(post), "{path}");
        assert_eq!(named(&transport, "ambient 1.0").await, None, "{path}");
        assert_eq!(named(&transport, "ambient 2.0").await, None, "{path}");
        let elsewhere = transport
            .forum_post_named(GuildId(GUILD), ChannelId(RELEASES), &name)
            .await
            .unwrap();
        assert_eq!(elsewhere, None, "{path}");
        let unknown = transport
            .forum_post_named(GuildId(999), ChannelId(FORUM), &name)
            .await;
        assert!(
            matches!(unknown, Err(ChatError::Unavailable(_))),
            "{path}: {unknown:?}"
        );

        // The forum requires a tag: a post without one is refused, readably, and nothing is made.
        let untagged = transport
            .post_in_forum(ChannelId(FORUM), "no tag", &Outgoing::text("x", "n"), &[])
            .await;
        let Err(ChatError::Transport(why)) = untagged else {
            panic!("{path}: {untagged:?}");
        };
        assert!(why.contains("tag is required"), "{path}: {why}");
        assert_eq!(discord.with(|w| w.forum_posts(FORUM)).len(), 2, "{path}");
    }
}

/// A feed's moves on `transport`, each as "ok" or the kind of refusal:
/// a card and a role ping sent, a thread started twice from one message, a
/// post in a forum that requires a tag without one, with a tag it lacks,
/// with one of its own, and that post looked up by its name and by another.
async fn feed_moves(transport: &dyn Transport) -> Vec<String> {
    fn outcome<T: std::fmt::Debug>(r: Result<T, ChatError>) -> String {
        match r {
            Ok(_) => "ok".into(),
            Err(ChatError::Transport(_)) => "refused".into(),
            Err(e) => format!("{e:?}"),
        }
    }
    let mut message = Outgoing::text("<@&777> out now", "moves");
    message.cards = vec![card()];
    message.ping_roles = vec![RoleId(777)];
    let said = transport
        .send(ChannelId(RELEASES), &message)
        .await
        .expect("sent");
    let mut moves = vec!["ok".to_string()];
    for _ in 0..2 {
        let thread = transport
            .start_thread(ChannelId(RELEASES), said, "a release")
            .await;
        moves.push(outcome(thread));
    }
    for tags in [&[][..], &[999], &[TAG_RELEASE]] {
        let post = transport
            .post_in_forum(ChannelId(FORUM), "ambient 2.0", &message, tags)
            .await;
        moves.push(outcome(post));
    }
    for name in ["ambient 2.0", "ambient 3.0"] {
        let found = transport
            .forum_post_named(GuildId(GUILD), ChannelId(FORUM), name)
            .await;
        moves.push(match found {
            Ok(Some(_)) => "found".into(),
            Ok(None) => "none".into(),
            Err(e) => format!("{e:?}"),
        });
    }
    moves
}

#[tokio::test]
async fn the_worlds_transport_refuses_what_discord_refuses() {
    let expected = [
        "ok", "ok", "refused", "refused", "refused", "ok", "found", "none",
    ];
    let discord = discord(REQUIRE_TAG);
    let real = transport(&discord, false);
    assert_eq!(feed_moves(&real).await, expected, "the fake Discord");

    let clock = ambient::clock::ManualClock::at_test_epoch();
    let recording = RecordingTransport::alone(clock);
    let offered = FORUM_TAGS
        .iter()
        .map(|(id, name, moderated, _)| ForumTag {
            id: *id,
            name: name.to_string(),
            moderated: *moderated,
        })
        .collect();
    recording.log.kinds.lock().unwrap().insert(
        ChannelId(FORUM),
        ChannelKind::Forum {
            tags: offered,
            tag_required: true,
        },
    );
    assert_eq!(
        feed_moves(&recording).await,
        expected,
        "the World's transport"
    );
    // What it kept is what a World test asserts.
    let said = recording.log.said.lock().unwrap().clone();
    assert_eq!(said[0].cards, vec![card()]);
    assert_eq!(said[0].ping_roles, vec![RoleId(777)]);
    let threads = recording.log.threads.lock().unwrap().clone();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].thread.get(), said[0].id.get());
    assert_eq!(
        recording.channel_kind(threads[0].thread).await.unwrap(),
        ChannelKind::Thread
    );
    assert_eq!(
        recording.channel_kind(ChannelId(GENERAL)).await.unwrap(),
        ChannelKind::Text
    );
    let posts = recording.log.posts.lock().unwrap().clone();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].tags, vec![TAG_RELEASE]);
    assert_eq!(posts[0].cards, vec![card()]);
}

#[tokio::test]
async fn a_429_on_making_a_thread_is_waited_out_by_the_limiter_and_otherwise_an_error() {
    for proxy in PATHS {
        let path = path_name(proxy);
        let discord = discord(0);
        let transport = transport(&discord, proxy);
        let said = transport
            .send(ChannelId(RELEASES), &Outgoing::text("a release", "storm"))
            .await
            .unwrap();
        discord.storm_threads(1, std::time::Duration::from_millis(50));
        let thread = transport
            .start_thread(ChannelId(RELEASES), said, "ambient 2.0")
            .await;
        let attempts = discord.with(|w| w.find("POST", "/threads").len());
        if proxy {
            // Serenity's limiter is off behind a proxy: the 429 is the caller's.
            let Err(ChatError::Transport(why)) = &thread else {
                panic!("{path}: {thread:?}");
            };
            assert!(why.contains("rate limited"), "{path}: {why}");
            assert_eq!(attempts, 1, "{path}");
            assert!(discord.with(|w| w.thread_from(said.get())).is_none());
        } else {
            assert_eq!(thread.unwrap().get(), said.get(), "{path}");
            assert_eq!(attempts, 2, "{path}: waited, then made once");
        }
        // A wait longer than the limiter waits for is returned at once, as an error.
        discord.storm_threads(1, std::time::Duration::from_secs(3600));
        let post = transport
            .post_in_forum(ChannelId(FORUM), "x", &Outgoing::text("x", "p"), &[])
            .await;
        assert!(
            matches!(&post, Err(ChatError::Transport(why)) if why.contains("rate limited")),
            "{path}: {post:?}"
        );
        assert!(discord.with(|w| w.forum_posts(FORUM)).is_empty(), "{path}");
    }
}

#[tokio::test]
async fn a_post_of_unknown_outcome_is_found_by_its_name_not_made_again() {
    for proxy in PATHS {
        let path = path_name(proxy);
        let discord = discord(0);
        let transport = transport(&discord, proxy);
        discord.with(|w| w.garble_threads = 1);
        let message = Outgoing::text("out now", format!("unknown-{path}"));
        let post = transport
            .post_in_forum(ChannelId(FORUM), "ambient 2.0", &message, &[])
            .await;
        assert!(
            matches!(post, Err(ChatError::Unknown(_))),
            "{path}: {post:?}"
        );
        let made = discord.with(|w| w.forum_posts(FORUM));
        assert_eq!(made.len(), 1, "{path}: it was made");
        let found = named(&transport, "ambient 2.0").await;
        assert_eq!(found.map(|p| p.thread.get()), Some(made[0].id), "{path}");
    }
}
