//! Feeds people subscribe to, end to end: `ambient run` against the fake
//! Discord and a local feed server. `/feeds add` into a text channel, an
//! announcement channel with a thread per item, and a forum (a post per
//! item, tagged from the item's categories, with an embed); a forum post
//! whose outcome a crash left unknown is found, not made twice.

use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::threads::{FORUM, NEWS, RELEASES, TAG_RELEASE, TAG_SECURITY};
use crate::support::fake_discord::{ALICE, World};
use crate::support::feed_server::FeedServer;

/// Manage Server, as an interaction's member permissions carry it.
const MANAGE_GUILD: u64 = 1 << 5;
const FEED: &str = "/project/releases.xml";

fn feed(now: chrono::DateTime<Utc>) -> String {
    let at = |h: i64| (now - chrono::Duration::hours(h)).to_rfc2822();
    format!(
        r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Project releases</title>
<item><guid>v2</guid><title>Release 2.0: faster builds</title><link>https://project.example/v2</link>
<description>Builds are twice as fast. @everyone should upgrade.</description>
<category>release</category><category>Security</category><category>nightly</category>
<pubDate>{}</pubDate></item>
<item><guid>v1</guid><title>Release 1.0</title><link>https://project.example/v1</link>
<description>First.</description><category>release</category><pubDate>{}</pubDate></item>
</channel></rss>"#,
        at(1),
        at(30)
    )
}

fn start() -> (Bot, FeedServer) {
    let server = FeedServer::start_at(Utc::now());
    server.set(FEED, "application/rss+xml", feed(Utc::now()));
    let bot = Bot::start(json!({"network": {"allowPrivateHosts": true}}));
    bot.discord.add_feed_channels(0);
    // The channels made after the server arrived are the server's own to the bot.
    let store = bot.store();
    assert!(
        wait(10, || [FORUM, RELEASES, NEWS].iter().all(|c| store
            .messages()
            .channel_guild(ambient::ids::ChannelId(*c))
            .ok()
            .flatten()
            .is_some())),
        "the new channels were recorded"
    );
    (bot, server)
}

fn wait(secs: u64, ok: impl Fn() -> bool) -> bool {
    let until = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    ok()
}

/// `/feeds add` as a member with Manage Server; the bot's answer.
fn add(bot: &Bot, server: &FeedServer, channel: u64, more: &[(&str, &str)]) -> String {
    let url = format!("{}{FEED}", server.url);
    let channel = channel.to_string();
    let mut options = vec![("url", url.as_str()), ("channel", channel.as_str())];
    options.extend_from_slice(more);
    let id = bot
        .discord
        .slash(RELEASES, ALICE, MANAGE_GUILD, "feeds", "add", &options);
    bot.discord.interaction_text(id).unwrap_or_default()
}

fn posted(bot: &Bot, channel: u64) -> Vec<Value> {
    bot.discord.with(|w: &mut World| w.posted_in(channel))
}

#[test]
fn a_new_item_reaches_a_channel_a_thread_and_a_forum_post_as_its_template_says() {
    let (bot, server) = start();

    let answer = add(
        &bot,
        &server,
        RELEASES,
        &[
            ("template", "New: **{title}** ({categories})\n{link}"),
            ("backfill", "1"),
        ],
    );
    assert!(answer.contains("subscription"), "{answer}");
    assert!(
        wait(10, || !posted(&bot, RELEASES).is_empty()),
        "posted in #releases"
    );
    let m = &posted(&bot, RELEASES)[0];
    assert_eq!(
        m["content"],
        "New: **Release 2.0: faster builds** (release, Security, nightly)\nhttps://project.example/v2"
    );
    assert_eq!(m["mention_everyone"], json!(false));

    add(
        &bot,
        &server,
        NEWS,
        &[("thread_per_item", "true"), ("backfill", "1")],
    );
    assert!(
        wait(10, || !posted(&bot, NEWS).is_empty()),
        "posted in #announcements"
    );
    let starter: u64 = posted(&bot, NEWS)[0]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait(10, || bot
        .discord
        .with(|w| w.thread_from(starter).is_some())));
    let thread = bot.discord.with(|w| w.thread_from(starter)).unwrap();
    assert_eq!(thread["name"], "Release 2.0: faster builds");

    add(
        &bot,
        &server,
        FORUM,
        &[("embed", "true"), ("backfill", "1")],
    );
    assert!(wait(10, || !bot
        .discord
        .with(|w| w.forum_posts(FORUM))
        .is_empty()));
    let post = bot.discord.with(|w| w.forum_posts(FORUM)).remove(0);
    assert_eq!(post.name, "Release 2.0: faster builds");
    assert_eq!(
        post.applied_tags,
        [TAG_RELEASE, TAG_SECURITY],
        "the forum's own tags the categories name; \"nightly\" is none of them"
    );
    let embed = &post.starter["embeds"][0];
    assert_eq!(embed["title"], "Release 2.0: faster builds");
    assert_eq!(embed["url"], "https://project.example/v2");
    assert!(
        embed["description"]
            .as_str()
            .unwrap()
            .starts_with("Builds are twice as fast."),
        "{embed}"
    );
    assert_eq!(post.starter["mention_everyone"], json!(false));

    // Only the newest item, once each: the older one was noted as seen.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(posted(&bot, RELEASES).len(), 1);
    assert_eq!(bot.discord.with(|w| w.forum_posts(FORUM)).len(), 1);
    bot.stop();
}

#[test]
fn a_forum_post_a_crash_left_unmarked_is_found_not_posted_twice() {
    let (mut bot, server) = start();
    // The post goes out and the store refuses to mark it sent: a crash
    // right after the request, as the restart finds it.
    let db = rusqlite::Connection::open(bot.home.data_dir().join("ambient.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER crash_before_sent BEFORE UPDATE OF state ON feed_deliveries
         WHEN NEW.state = 'sent' BEGIN SELECT RAISE(ABORT, 'crashed'); END;",
    )
    .unwrap();
    add(&bot, &server, FORUM, &[("backfill", "1")]);
    assert!(wait(10, || !bot
        .discord
        .with(|w| w.forum_posts(FORUM))
        .is_empty()));
    db.execute_batch("DROP TRIGGER crash_before_sent;").unwrap();

    bot.crash_and_restart();
    let sent = || {
        db.query_row(
            "SELECT count(*) FROM feed_deliveries WHERE state = 'sent'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
    };
    assert!(wait(20, || sent() == 1), "marked sent after the restart");
    assert_eq!(
        bot.discord.with(|w| w.forum_posts(FORUM)).len(),
        1,
        "found by its name, not posted again"
    );
    bot.stop();
}
