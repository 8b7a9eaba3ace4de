//! Feeds people subscribe to, in-process against a local feed server: what
//! adding a feed delivers (nothing old), a new item posted with its
//! template, filters, the hourly rates, a failing feed pausing itself, a
//! crash between posting and marking sent, and the initiative never sharing
//! what a subscription delivered. (Threads, forums and embeds against the
//! fake Discord are in `feeds_discord`.)

use ambient::chat::{ChannelKind, ForumTag};
use ambient::clock::Clock;
use ambient::feeds::manage::{AddRequest, ManageError};
use ambient::feeds::subscription::Destination;
use ambient::ids::{ChannelId, RoleId, UserId};
use ambient::settings::Settings;
use chrono::{DateTime, Duration, Utc};

use crate::support::feed_server::FeedServer;
use crate::support::world::{GENERAL, GUILD_A, GUILD_B, MEMES, World, settings};

const OWNER: UserId = UserId(42);
const FEED: &str = "/project/releases.xml";

/// One item of a test feed: (guid, title, category, hours before now).
type Entry<'a> = (&'a str, &'a str, &'a str, i64);

/// An RSS feed of `entries`, newest first as feeds list them.
fn rss(now: DateTime<Utc>, entries: &[Entry]) -> String {
    let mut xml = String::from(
        r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Project releases</title>"#,
    );
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|e| e.3);
    for (guid, title, category, hours) in sorted {
        xml.push_str(&format!(
            "<item><guid>{guid}</guid><title>{title}</title>\
             <link>https://project.example/{guid}</link>\
             <description>Notes for {title}.</description><category>{category}</category>\
             <author>dev@project.example (Dana)</author>\
             <pubDate>{}</pubDate></item>",
            (now - Duration::hours(hours)).to_rfc2822()
        ));
    }
    xml.push_str("</channel></rss>");
    xml
}

const OLD: [Entry<'static>; 3] = [
    ("v1", "Release 1.0", "release", 30),
    ("v2", "Release 1.1", "release", 20),
    ("v3", "Release 1.2", "release", 10),
];

fn feeds_settings() -> Settings {
    let mut s = settings();
    s.network.allow_private_hosts = true;
    s
}

async fn world_with_feed(s: Settings) -> (World, FeedServer) {
    let world = World::start(s).await;
    let server = FeedServer::start_at(world.clock.now());
    server.set(FEED, "application/rss+xml", rss(world.clock.now(), &OLD));
    (world, server)
}

fn request(server: &FeedServer) -> AddRequest {
    request_to(server, GENERAL)
}

fn request_to(server: &FeedServer, channel: ChannelId) -> AddRequest {
    AddRequest::new(format!("{}{FEED}", server.url), channel)
}

/// MEMES made a forum (`tag_required` or not) and subscribed, the request as `change` leaves it.
async fn add_to_forum(
    world: &World,
    server: &FeedServer,
    tag_required: bool,
    change: impl FnOnce(&mut AddRequest),
) {
    world.set_channel_kind(MEMES, forum(tag_required));
    let mut req = request_to(server, MEMES);
    change(&mut req);
    world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
}

/// The feed gains `entries` and is fetched at its next due time.
async fn publish(world: &World, server: &FeedServer, entries: &[Entry<'_>]) {
    let mut all = OLD.to_vec();
    all.extend_from_slice(entries);
    server.set(FEED, "application/rss+xml", rss(world.clock.now(), &all));
    fetch_again(world).await;
}

async fn fetch_again(world: &World) {
    world.clock.advance(Duration::minutes(16));
    world.app.discovery.fetch_due().await;
}

/// The store refuses to mark any item sent from now on (until the trigger
/// is dropped through the connection returned): what a crash right after
/// the request leaves behind.
fn crash_before_marking_sent(world: &World) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(world.app.store().path().unwrap()).unwrap();
    db.execute_batch(
        "CREATE TRIGGER crash_before_sent BEFORE UPDATE OF state ON feed_deliveries
         WHEN NEW.state = 'sent' BEGIN SELECT RAISE(ABORT, 'crashed'); END;",
    )
    .unwrap();
    db
}

fn posts(world: &World) -> Vec<String> {
    world
        .said()
        .into_iter()
        .filter(|s| s.channel == GENERAL)
        .map(|s| s.content)
        .collect()
}

#[tokio::test]
async fn adding_a_feed_delivers_nothing_old_and_a_new_item_is_posted_with_its_template() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    let mut req = request(&server);
    req.template = Some("New: **{title}** ({categories}) by {author}\n{link}".into());
    let added = world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    assert_eq!((added.items, added.backfilled), (3, 0));
    fetch_again(&world).await;
    let round = world.app.feeds.deliver_due().await;
    assert_eq!(round.sent, 0);
    assert!(posts(&world).is_empty(), "nothing old: {:?}", posts(&world));

    publish(&world, &server, &[("v4", "Release 2.0", "release", 1)]).await;
    let round = world.app.feeds.deliver_due().await;
    assert_eq!(round.sent, 1, "{round:?}");
    assert_eq!(
        posts(&world),
        ["New: **Release 2.0** (release) by Dana\nhttps://project.example/v4"]
    );
    let listed = world.app.feeds.list(GUILD_A).unwrap();
    assert_eq!(listed[0].counts.sent, 1);
    assert!(listed[0].last_delivered_at.is_some());

    // Fetched again (the same items): nothing posts twice.
    fetch_again(&world).await;
    assert_eq!(world.app.feeds.deliver_due().await.sent, 0);
    assert_eq!(posts(&world).len(), 1);
}

#[tokio::test]
async fn the_newest_items_are_posted_on_add_when_asked_oldest_first() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    let mut req = request(&server);
    req.backfill = 2;
    req.template = Some("{title}".into());
    let added = world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    assert_eq!(added.backfilled, 2);
    world.app.feeds.deliver_due().await;
    assert_eq!(posts(&world), ["Release 1.1", "Release 1.2"]);
}

#[tokio::test]
async fn a_filtered_item_is_not_delivered_and_is_counted() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    let mut req = request(&server);
    req.template = Some("{title}".into());
    req.filters = Some("exclude categories: nightly; exclude title: /(?i)sponsored/".into());
    world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    publish(
        &world,
        &server,
        &[
            ("n1", "Nightly 2026-11-27", "nightly", 3),
            ("ad", "SPONSORED: a faster CI", "release", 2),
            ("v4", "Release 2.0", "release", 1),
        ],
    )
    .await;
    world.app.feeds.deliver_due().await;
    assert_eq!(posts(&world), ["Release 2.0"]);
    let counts = &world.app.feeds.list(GUILD_A).unwrap()[0].counts;
    assert_eq!((counts.sent, counts.filtered, counts.waiting), (1, 2, 0));
}

#[tokio::test]
async fn the_hourly_rates_hold_items_back_and_never_drop_them() {
    let mut s = feeds_settings();
    s.feeds.max_per_feed_per_hour = 2;
    let (world, server) = world_with_feed(s).await;
    let mut req = request(&server);
    req.template = Some("{title}".into());
    world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    publish(
        &world,
        &server,
        &[
            ("v4", "Release 2.0", "release", 3),
            ("v5", "Release 2.1", "release", 2),
            ("v6", "Release 2.2", "release", 1),
        ],
    )
    .await;
    let round = world.app.feeds.deliver_due().await;
    assert_eq!((round.sent, round.held), (2, 1));
    assert_eq!(posts(&world), ["Release 2.0", "Release 2.1"]);
    assert_eq!(world.app.feeds.list(GUILD_A).unwrap()[0].counts.waiting, 1);

    world.clock.advance(Duration::minutes(61));
    world.app.feeds.deliver_due().await;
    assert_eq!(posts(&world), ["Release 2.0", "Release 2.1", "Release 2.2"]);
}

#[tokio::test]
async fn a_servers_subscriptions_share_its_hour_taking_turns() {
    let mut s = feeds_settings();
    s.feeds.max_per_guild_per_hour = 2;
    let (world, server) = world_with_feed(s).await;
    for channel in [GENERAL, MEMES] {
        let mut req = request_to(&server, channel);
        req.template = Some("{title}".into());
        world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    }
    publish(
        &world,
        &server,
        &[
            ("v4", "Release 2.0", "release", 2),
            ("v5", "Release 2.1", "release", 1),
        ],
    )
    .await;
    world.app.feeds.deliver_due().await;
    let said: Vec<(u64, String)> = world
        .said()
        .into_iter()
        .map(|s| (s.channel.get(), s.content))
        .collect();
    assert_eq!(
        said,
        [
            (GENERAL.get(), "Release 2.0".to_string()),
            (MEMES.get(), "Release 2.0".to_string())
        ],
        "one item each, not two from the first"
    );
}

#[tokio::test]
async fn a_feed_that_fails_ten_times_in_a_row_pauses_and_says_so_once() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    world
        .app
        .feeds
        .add(GUILD_A, OWNER, request(&server))
        .await
        .unwrap();
    fetch_again(&world).await;
    server.fail(FEED, true);
    for _ in 0..9 {
        // Past any back-off (at most a day).
        world.clock.advance(Duration::hours(25));
        world.app.discovery.fetch_due().await;
    }
    world.app.feeds.deliver_due().await;
    let listed = &world.app.feeds.list(GUILD_A).unwrap()[0];
    assert_eq!((listed.failures, listed.paused.as_deref()), (9, None));
    assert!(posts(&world).is_empty());

    world.clock.advance(Duration::hours(25));
    world.app.discovery.fetch_due().await;
    world.app.feeds.deliver_due().await;
    let listed = &world.app.feeds.list(GUILD_A).unwrap()[0];
    let why = listed
        .paused
        .clone()
        .expect("paused after the tenth failure");
    assert!(why.contains("failed 10 fetches in a row"), "{why}");
    let said = posts(&world);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("The feed ")
            && said[0].contains("is paused here")
            && said[0].contains(&format!("/feeds resume {}", listed.id)),
        "{}",
        said[0]
    );

    // Still failing: no second word about it.
    world.clock.advance(Duration::hours(25));
    world.app.discovery.fetch_due().await;
    world.app.feeds.deliver_due().await;
    assert_eq!(posts(&world).len(), 1);

    // Resumed, the feed works again, and a new item is posted.
    server.fail(FEED, false);
    world.app.feeds.resume(GUILD_A, listed.id).unwrap();
    world.clock.advance(Duration::hours(25));
    publish(&world, &server, &[("v4", "Release 2.0", "release", 1)]).await;
    world.app.feeds.deliver_due().await;
    assert_eq!(posts(&world).len(), 2);
    assert!(posts(&world)[1].contains("Release 2.0"));
}

#[tokio::test]
async fn a_crash_between_posting_and_marking_sent_does_not_post_twice() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    let mut req = request(&server);
    req.backfill = 1;
    req.template = Some("{title}".into());
    world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    let db = crash_before_marking_sent(&world);
    world.app.feeds.deliver_due().await;
    assert_eq!(posts(&world), ["Release 1.2"]);
    db.execute_batch("DROP TRIGGER crash_before_sent;").unwrap();

    let world = world.restart(feeds_settings()).await;
    let round = world.app.feeds.deliver_due().await;
    assert_eq!(round.sent, 1, "sent again, under the same nonce: {round:?}");
    assert_eq!(posts(&world), ["Release 1.2"], "and posted once");
    let counts = &world.app.feeds.list(GUILD_A).unwrap()[0].counts;
    assert_eq!((counts.sent, counts.waiting), (1, 0));
}

#[tokio::test]
async fn the_initiative_never_offers_an_item_a_subscription_delivered() {
    let server = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    let mut s = feeds_settings();
    s.initiative.discovery.rss_feeds = vec![format!("{}{FEED}", server.url)];
    let world = World::start(s).await;
    server.set(FEED, "application/rss+xml", rss(world.clock.now(), &OLD));
    world.app.discovery.fetch_due().await;
    let offered = |guild| {
        world
            .app
            .discovery
            .prompt_sections(guild, &[], world.clock.now())
            .unwrap()
            .0
            .join("\n")
    };
    assert!(
        offered(GUILD_A).contains("Release 1.2"),
        "{}",
        offered(GUILD_A)
    );

    let mut req = request(&server);
    req.backfill = 1;
    world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    world.app.feeds.deliver_due().await;
    assert_eq!(posts(&world).len(), 1);
    assert!(
        !offered(GUILD_A).contains("Release 1.2"),
        "delivered, so never offered again here: {}",
        offered(GUILD_A)
    );
    assert!(offered(GUILD_A).contains("Release 1.1"));
    assert!(
        offered(GUILD_B).contains("Release 1.2"),
        "another server's initiative may still share it"
    );
}

#[tokio::test]
async fn a_template_that_pings_everyone_or_names_an_unknown_placeholder_is_refused() {
    let mut s = feeds_settings();
    s.feeds.allowed_role_mentions = vec![RoleId(555)];
    let (world, server) = world_with_feed(s).await;
    let refused = |template: &str| {
        let mut req = request(&server);
        req.template = Some(template.into());
        req
    };
    for (template, expected) in [
        ("@everyone {title}", "a feed never pings everyone"),
        ("{title} @here", "a feed never pings everyone"),
        ("<@&777> {title}", "not in feeds.allowedRoleMentions"),
        ("{titel}\n{link}", "unknown placeholder {titel}"),
    ] {
        let e = world
            .app
            .feeds
            .add(GUILD_A, OWNER, refused(template))
            .await
            .unwrap_err();
        assert!(matches!(e, ManageError::Look(_)), "{template}: {e:?}");
        assert!(e.to_string().contains(expected), "{template}: {e}");
    }
    assert!(
        world.app.feeds.list(GUILD_A).unwrap().is_empty(),
        "nothing saved"
    );
    assert_eq!(server.hits(FEED), 0, "refused before the feed is fetched");

    let mut req = request(&server);
    req.template = Some("<@&555> {title}".into());
    req.backfill = 1;
    world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    world.app.feeds.deliver_due().await;
    assert_eq!(posts(&world), ["<@&555> Release 1.2"]);
}

#[tokio::test]
async fn a_feed_that_cannot_be_read_or_a_channel_elsewhere_is_refused_with_nothing_saved() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    let e = world
        .app
        .feeds
        .add(
            GUILD_A,
            OWNER,
            AddRequest::new(format!("{}/no-such-feed.xml", server.url), GENERAL),
        )
        .await
        .unwrap_err();
    assert!(
        e.to_string().starts_with("the feed could not be read (")
            && e.to_string().ends_with("nothing was saved"),
        "{e}"
    );
    let e = world
        .app
        .feeds
        .add(GUILD_B, OWNER, request(&server))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ManageError::NotHere(c) if c == GENERAL),
        "{e:?}"
    );
    assert!(world.app.feeds.list(GUILD_A).unwrap().is_empty());
    assert!(world.app.feeds.list(GUILD_B).unwrap().is_empty());
}

fn forum(tag_required: bool) -> ChannelKind {
    let tag = |id, name: &str, moderated| ForumTag {
        id,
        name: name.into(),
        moderated,
    };
    ChannelKind::Forum {
        tags: vec![
            tag(601, "Release", false),
            tag(602, "security", false),
            tag(604, "staff pick", true),
        ],
        tag_required,
    }
}

#[tokio::test]
async fn a_new_item_starts_its_own_thread_named_after_its_title() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    let mut req = request(&server);
    req.thread_per_item = true;
    req.template = Some("{title}".into());
    let added = world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    assert_eq!(added.destination, Destination::ThreadPerItem);
    publish(&world, &server, &[("v4", "Release 2.0", "release", 1)]).await;
    world.app.feeds.deliver_due().await;
    let said = world.said();
    let threads = world.threads();
    assert_eq!((said.len(), threads.len()), (1, 1));
    assert_eq!(
        (
            threads[0].channel,
            threads[0].message,
            threads[0].name.as_str()
        ),
        (GENERAL, said[0].id, "Release 2.0")
    );
}

#[tokio::test]
async fn a_new_item_is_a_forum_post_tagged_from_its_categories_with_its_card() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    world.set_channel_kind(MEMES, forum(false));
    let mut req = request_to(&server, MEMES);
    req.embed = true;
    let added = world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    assert_eq!(added.destination, Destination::Forum);
    publish(
        &world,
        &server,
        &[
            ("v4", "Release 2.0", "release", 2),
            ("v5", "Staff pick: 2.0", "staff pick", 1),
        ],
    )
    .await;
    world.app.feeds.deliver_due().await;
    let posts = world.forum_posts();
    let names: Vec<&str> = posts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Release 2.0", "Staff pick: 2.0"]);
    assert_eq!(
        posts[0].tags,
        [601],
        "its category names the forum's tag, any case"
    );
    assert!(posts[1].tags.is_empty(), "a moderated tag is never applied");
    assert_eq!(
        posts[0].content,
        "**Release 2.0**\nhttps://project.example/v4"
    );
    let card = &posts[0].cards[0];
    assert_eq!(card.title, "Release 2.0");
    assert_eq!(card.url.as_deref(), Some("https://project.example/v4"));
    assert_eq!(card.description, "Notes for Release 2.0.");
    assert!(world.said().is_empty(), "a forum takes posts, not messages");
}

#[tokio::test]
async fn a_forum_that_needs_a_tag_the_item_cannot_have_pauses_the_subscription_saying_why() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    add_to_forum(&world, &server, true, |_| {}).await;
    publish(&world, &server, &[("v4", "Nightly", "nightly", 1)]).await;
    world.app.feeds.deliver_due().await;
    assert!(world.forum_posts().is_empty());
    let listed = &world.app.feeds.list(GUILD_A).unwrap()[0];
    let why = listed.paused.as_deref().unwrap();
    assert!(
        why.contains("the forum needs a tag on every post") && why.contains("(nightly)"),
        "{why}"
    );
    assert_eq!(
        listed.counts.waiting, 1,
        "the item waits for a resume, not dropped"
    );
}

#[tokio::test]
async fn a_forum_post_a_crash_left_unmarked_is_found_by_its_name_not_made_twice() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    add_to_forum(&world, &server, false, |req| req.backfill = 1).await;
    let db = crash_before_marking_sent(&world);
    world.app.feeds.deliver_due().await;
    assert_eq!(world.forum_posts().len(), 1);
    db.execute_batch("DROP TRIGGER crash_before_sent;").unwrap();

    let world = world.restart(feeds_settings()).await;
    world.set_channel_kind(MEMES, forum(false));
    assert_eq!(world.app.feeds.deliver_due().await.sent, 1);
    assert_eq!(world.forum_posts().len(), 1, "found, not posted again");
    assert_eq!(world.app.feeds.list(GUILD_A).unwrap()[0].counts.sent, 1);
}

#[tokio::test]
async fn a_forum_that_became_another_kind_of_channel_pauses_its_subscription() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    add_to_forum(&world, &server, false, |_| {}).await;
    world.set_channel_kind(MEMES, ChannelKind::Other);
    publish(&world, &server, &[("v4", "Release 2.0", "release", 1)]).await;
    world.app.feeds.deliver_due().await;
    let listed = &world.app.feeds.list(GUILD_A).unwrap()[0];
    assert!(
        listed
            .paused
            .as_deref()
            .unwrap()
            .contains("is no longer a forum channel")
    );
}

#[tokio::test]
async fn while_discord_fails_an_item_is_tried_again_after_longer_waits_and_pauses_after_a_day() {
    let (world, server) = world_with_feed(feeds_settings()).await;
    let mut req = request(&server);
    req.template = Some("{title}".into());
    world.app.feeds.add(GUILD_A, OWNER, req).await.unwrap();
    publish(&world, &server, &[("v4", "Release 2.0", "release", 1)]).await;
    world.said.down.lock().unwrap().insert(GENERAL);
    let tries = || *world.said.refused_sends.lock().unwrap();

    world.app.feeds.deliver_due().await;
    world.app.feeds.deliver_due().await;
    assert_eq!(tries(), 1, "not again at once");
    world.clock.advance(Duration::seconds(61));
    world.app.feeds.deliver_due().await;
    world.clock.advance(Duration::seconds(61));
    world.app.feeds.deliver_due().await;
    assert_eq!(tries(), 2, "the second wait is two minutes");
    world.clock.advance(Duration::seconds(61));
    world.app.feeds.deliver_due().await;
    assert_eq!(tries(), 3);
    let lines = world.journal(ambient::vocab::journal::Kind::Discovery);
    assert_eq!(
        lines
            .iter()
            .filter(|e| e.summary == "feed item not posted yet")
            .count(),
        1,
        "one journal line, not one per try"
    );

    // An hour apart at most, until the item has failed for a day.
    for _ in 0..23 {
        world.clock.advance(Duration::minutes(61));
        world.app.feeds.deliver_due().await;
    }
    let listed = &world.app.feeds.list(GUILD_A).unwrap()[0];
    assert_eq!(listed.paused, None, "{} tries in 23 hours", tries());
    assert!(tries() < 40, "{}", tries());
    world.clock.advance(Duration::minutes(61));
    world.app.feeds.deliver_due().await;
    let listed = &world.app.feeds.list(GUILD_A).unwrap()[0];
    let why = listed.paused.as_deref().expect("paused after a day");
    assert!(
        why.contains("failed") && why.contains("over 24 hours"),
        "{why}"
    );
    assert_eq!(listed.counts.waiting, 1, "the item still waits");
}
