//! Discovery against a local feed server: parsing real-world-shaped feeds,
//! storing, de-duplicating, conditional GET, freshness, backoff, hostile
//! input, and what reaches the initiative prompt.

use ambient::clock::Clock;
use ambient::discovery::curation::{self, Actor};
use ambient::discovery::sources::{SourceKind, SourceSpec};
use ambient::ids::{MessageId, UserId};
use ambient::settings::Settings;
use ambient::store::messages::{Source, StoredMessage};
use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::support::feed_server::FeedServer;
use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, GUILD_A, MEMES, World, settings};

fn with_feeds(server: &FeedServer) -> Settings {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES];
    s.network.allow_private_hosts = true;
    let d = &mut s.initiative.discovery;
    d.rss_feeds = vec![
        format!("{}/blog/rss.xml", server.url),
        format!("{}/atom.xml", server.url),
    ];
    d.reddit_subreddits = vec!["rust".into()];
    d.reddit_base_url = server.url.clone();
    d.youtube_channel_ids = vec!["UCaYhcUwRBNscFNUKTjgPFiA".into()];
    d.youtube_base_url = server.url.clone();
    d.sources.hacker_news = true;
    d.hacker_news_base_url = server.url.clone();
    s
}

fn rss(server: &FeedServer, path: &str) -> SourceSpec {
    SourceSpec::new(SourceKind::Rss, &format!("{}{path}", server.url)).unwrap()
}

#[tokio::test]
async fn real_world_feeds_are_parsed_stored_and_deduplicated_across_sources() {
    let feeds = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    let world = World::start(with_feeds(&feeds)).await;
    let results = world.app.discovery.fetch_due().await;
    assert_eq!(results.len(), 5, "{results:#?}");
    for (spec, r) in &results {
        assert!(r.is_ok(), "{}: {r:?}", spec.label());
    }
    let report = |kind: SourceKind| {
        results
            .iter()
            .find(|(s, _)| s.kind == kind)
            .unwrap()
            .1
            .as_ref()
            .unwrap()
            .clone()
    };

    let blog = results
        .iter()
        .find(|(s, _)| s.target.ends_with("/blog/rss.xml"))
        .unwrap()
        .1
        .as_ref()
        .unwrap()
        .clone();
    assert_eq!(
        (blog.parsed, blog.stale),
        (3, 1),
        "the ten-day-old post is stale"
    );
    let reddit = report(SourceKind::Reddit);
    assert_eq!(reddit.parsed, 3, "the stickied thread is skipped");
    assert_eq!(
        report(SourceKind::Hackernews).parsed,
        2,
        "the deleted story is skipped"
    );
    assert_eq!(report(SourceKind::Youtube).stored, 1);
    let stored: usize = results
        .iter()
        .map(|(_, r)| r.as_ref().unwrap().stored)
        .sum();
    let duplicates: usize = results
        .iter()
        .map(|(_, r)| r.as_ref().unwrap().duplicates)
        .sum();
    assert_eq!(
        duplicates, 1,
        "the Tokio release reached through the blog and r/rust is stored once"
    );
    assert_eq!(stored, 2 + 1 + 2 + 1 + 2);
    assert!(
        feeds
            .served
            .lock()
            .unwrap()
            .user_agents
            .iter()
            .all(|ua| ua.starts_with("ambient/")),
        "Reddit's User-Agent rule"
    );

    let (feed, _) = world
        .app
        .discovery
        .prompt_sections(GUILD_A, &[], world.clock.now())
        .unwrap();
    let all = feed.join("\n");
    assert!(
        all.contains("Tokio 2.0 released — https://blog.example/tokio-2"),
        "{all}"
    );
    assert!(
        all.contains("The async runtime gets a major update."),
        "HTML descriptions become text: {all}"
    );
    assert!(!all.contains("<p>") && !all.contains("alert(1)"), "{all}");
    assert!(
        all.contains("RustConf keynote") && all.contains("video"),
        "{all}"
    );
    assert!(
        all.contains("My crab drawing") && all.contains("image"),
        "{all}"
    );
    assert!(all.contains("Show HN: Rust in the browser"), "{all}");
    assert!(!all.contains("An old post nobody needs today"));
}

#[tokio::test]
async fn a_second_fetch_is_answered_304_and_costs_no_parse() {
    let feeds = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    let world = World::start(with_feeds(&feeds)).await;
    let blog = rss(&feeds, "/blog/rss.xml");
    let first = world.app.discovery.fetch_source(&blog).await.unwrap();
    assert!(!first.not_modified && first.parsed == 3);
    let second = world.app.discovery.fetch_source(&blog).await.unwrap();
    assert!(second.not_modified, "{second:?}");
    assert_eq!(second.parsed, 0);
    assert_eq!(feeds.served.lock().unwrap().not_modified, 1);
    let row = world
        .app
        .store()
        .discovery()
        .sources()
        .unwrap()
        .into_iter()
        .find(|r| r.target.ends_with("/blog/rss.xml"))
        .unwrap();
    assert_eq!(row.last_status, "not modified (304)");
}

#[tokio::test]
async fn a_failing_source_backs_off_without_affecting_the_others() {
    let feeds = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    let mut s = with_feeds(&feeds);
    s.initiative
        .discovery
        .rss_feeds
        .push(format!("{}/fail.xml", feeds.url));
    s.initiative.discovery.fetch_interval_minutes = 10;
    let world = World::start(s).await;
    let results = world.app.discovery.fetch_due().await;
    let failed: Vec<_> = results.iter().filter(|(_, r)| r.is_err()).collect();
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0]
            .1
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("HTTP 500")
    );
    assert_eq!(results.iter().filter(|(_, r)| r.is_ok()).count(), 5);

    // Ten minutes later everything is due again except the failing source,
    // whose wait doubled; it is tried again twenty minutes after its failure.
    world.clock.advance(chrono::Duration::minutes(10));
    let again = world.app.discovery.fetch_due().await;
    assert_eq!(again.len(), 5, "the failing source waits longer");
    world.clock.advance(chrono::Duration::minutes(10));
    let third = world.app.discovery.fetch_due().await;
    assert!(third.iter().any(|(s, _)| s.target.ends_with("/fail.xml")));
    let row = world
        .app
        .store()
        .discovery()
        .sources()
        .unwrap()
        .into_iter()
        .find(|r| r.target.ends_with("/fail.xml"))
        .unwrap();
    assert_eq!(row.failures, 2);
    assert!(row.last_status.starts_with("failed: HTTP 500"));
    let failures: Vec<String> = world
        .journal(Kind::Discovery)
        .into_iter()
        .filter(|e| e.summary.contains("could not fetch") && e.reason.contains("HTTP 500"))
        .map(|e| e.reason)
        .collect();
    assert_eq!(failures.len(), 2, "one line per back-off: {failures:?}");
    assert!(failures[0].ends_with("trying again in 20 minutes (failure 1 in a row)"));
    assert!(failures[1].ends_with("trying again in 40 minutes (failure 2 in a row)"));
}

#[tokio::test]
async fn hostile_input_fails_its_source_with_a_reason() {
    let feeds = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    let world = World::start(with_feeds(&feeds)).await;
    let d = &world.app.discovery;
    let broken = d
        .fetch_source(&rss(&feeds, "/broken.xml"))
        .await
        .unwrap_err()
        .to_string();
    assert!(broken.contains("not a valid RSS or Atom feed"), "{broken}");
    let started = std::time::Instant::now();
    match d.fetch_source(&rss(&feeds, "/laughs.xml")).await {
        Ok(report) => assert!(report.stored <= 1),
        Err(e) => assert!(e.to_string().contains("not a valid"), "{e}"),
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "no entity expansion"
    );
    let titles: Vec<String> = world
        .app
        .store()
        .discovery()
        .feed_candidates(
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            GUILD_A,
            world.clock.now() - chrono::Duration::days(30),
            50,
        )
        .unwrap()
        .into_iter()
        .map(|i| i.title)
        .collect();
    assert!(titles.iter().all(|t| t.len() < 200), "{titles:?}");
    let huge = d
        .fetch_source(&rss(&feeds, "/huge.xml"))
        .await
        .unwrap_err()
        .to_string();
    assert!(huge.contains("larger than 2000000 bytes"), "{huge}");
    let looped = d
        .fetch_source(&rss(&feeds, "/loop"))
        .await
        .unwrap_err()
        .to_string();
    assert!(looped.contains("more than 5 redirects"), "{looped}");
    // The healthy source is unaffected.
    assert!(d.fetch_source(&rss(&feeds, "/atom.xml")).await.is_ok());
}

#[tokio::test]
async fn private_addresses_are_refused_unless_allowed() {
    let feeds = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    let mut s = with_feeds(&feeds);
    s.network.allow_private_hosts = false;
    let world = World::start(s).await;
    let err = world
        .app
        .discovery
        .fetch_source(&rss(&feeds, "/blog/rss.xml"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("private address") && err.contains("allowPrivateHosts"),
        "{err}"
    );
    assert_eq!(feeds.hits("/blog/rss.xml"), 0, "no request was made");
}

#[tokio::test]
async fn the_initiative_prompt_shows_ranked_candidates_and_source_performance() {
    let feeds = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    let world = World::start(with_feeds(&feeds)).await;
    world.app.discovery.fetch_due().await;
    for line in [
        "the bakery is busy, bread everywhere",
        "fresh bread today at the bakery",
        "anyone tried the new bread recipe?",
    ] {
        world.hear(GENERAL, "ada", line, Source::Text);
    }
    world.model.push(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "This one is for you bakers: https://bakery.example/rust", "reason": "bread talk"}),
    ));
    world.tick().await;
    let prompt = world.model.requests()[0].body.to_string();
    let feed_at = prompt.find("=== YOUR FEED ===").unwrap();
    let sources_at = prompt.find("=== FEED SOURCES ===").unwrap();
    let feed = &prompt[feed_at..sources_at];
    assert!(
        feed.find("Why we rewrote our bakery app in Rust").unwrap() < feed.find("Show HN").unwrap(),
        "community overlap ranks first: {feed}"
    );
    assert!(feed.contains("touches: bread, bakery"), "{feed}");
    assert!(
        prompt[sources_at..].contains("r/rust (reddit): 2 items")
            && prompt[sources_at..].contains("1 already seen"),
        "{}",
        &prompt[sources_at..]
    );

    // The post shared the bakery item; a reaction and a reply to it show up in FEED SOURCES.
    let post = world
        .journal(Kind::InitiativePost)
        .remove(0)
        .message
        .unwrap();
    let now = world.clock.now();
    world
        .app
        .store()
        .discovery()
        .record_reaction(post, UserId(77), "🔥", Some(GUILD_A), GENERAL, now)
        .unwrap();
    world
        .app
        .store()
        .messages()
        .insert_message(&StoredMessage {
            reply_to: Some(post),
            ..StoredMessage::said(
                MessageId(ambient::ids::next_snowflake(now)),
                Some(GUILD_A),
                GENERAL,
                UserId(77),
                "bo",
                "love it",
                now,
            )
        })
        .unwrap();
    let (feed, performance) = world
        .app
        .discovery
        .prompt_sections(GUILD_A, &[], now)
        .unwrap();
    let blog = performance
        .iter()
        .find(|l| l.contains("/blog/rss.xml"))
        .unwrap();
    assert!(
        blog.contains("2 items, 1 shared, 1 reactions and 1 replies"),
        "{blog}"
    );
    assert!(
        !feed.join("\n").contains("bakery app"),
        "a shared item is not offered again"
    );
}

#[tokio::test]
async fn self_curation_is_bounded_and_cannot_touch_the_operators_sources() {
    let feeds = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    let mut s = with_feeds(&feeds);
    s.initiative.discovery.allow_self_curation = true;
    s.initiative.discovery.max_sources_per_type = 3;
    let world = World::start(s).await;
    let d = &world.app.discovery;
    let url = format!("{}/extra.xml", feeds.url);
    assert!(
        curation::add(d, GUILD_A, "rss", &url, Actor::Model)
            .unwrap()
            .starts_with("Added")
    );
    let full = curation::add(
        d,
        GUILD_A,
        "rss",
        &format!("{}/more.xml", feeds.url),
        Actor::Model,
    )
    .unwrap_err()
    .to_string();
    assert!(
        full.contains("already has 3 rss source(s)") && full.contains("maxSourcesPerType"),
        "{full}"
    );
    let operators = curation::remove(
        d,
        GUILD_A,
        "rss",
        &format!("{}/blog/rss.xml", feeds.url),
        Actor::Model,
    )
    .unwrap_err()
    .to_string();
    assert!(operators.contains("operator's settings"), "{operators}");
    let by_member =
        curation::add(d, GUILD_A, "reddit", "cooking", Actor::Member(UserId(5))).unwrap();
    assert!(by_member.starts_with("Added r/cooking"));
    assert!(
        curation::remove(d, GUILD_A, "reddit", "cooking", Actor::Model)
            .unwrap_err()
            .to_string()
            .contains("added by a member")
    );
    assert!(
        curation::remove(d, GUILD_A, "rss", &url, Actor::Model)
            .unwrap()
            .starts_with("Removed")
    );
    let changes: Vec<String> = world
        .journal(Kind::Discovery)
        .into_iter()
        .map(|e| format!("{} — {}", e.summary, e.reason))
        .collect();
    assert!(
        changes
            .iter()
            .any(|c| c.starts_with("added source") && c.contains("self-curation")),
        "{changes:#?}"
    );
    assert!(
        changes.iter().any(|c| c.starts_with("removed source")),
        "{changes:#?}"
    );

    // The tools reach the initiative loop only with self-curation on.
    world
        .model
        .push(Scripted::tool(
            "discovery_source_add",
            json!({"kind": "reddit", "target": "sourdough"}),
        ))
        .push(Scripted::tool(
            "decide",
            json!({"action": "drop", "reason": "just curating"}),
        ));
    world.tick().await;
    let tools = &world.model.requests()[0].body["tools"];
    assert!(tools.to_string().contains("discovery_source_add"));
    assert!(
        world
            .app
            .store()
            .discovery()
            .guild_sources(GUILD_A)
            .unwrap()
            .iter()
            .any(|(k, t, by)| k == "reddit" && t == "sourdough" && by == "model")
    );
}

#[test]
fn a_console_session_pointed_at_local_feeds_shows_them_in_the_prompt_and_the_cli_lists_them() {
    use crate::support::home::Home;
    use crate::support::model_server::ModelServer;
    let feeds = FeedServer::start_at(chrono::Utc::now());
    let model = ModelServer::start();
    model.fallback(Scripted::tool(
        "decide",
        json!({"action": "drop", "reason": "just looking"}),
    ));
    let general = ambient::console::channel_id("general").to_string();
    let home = Home::new(json!({
        "network": {"allowPrivateHosts": true},
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9"},
        "permissions": {"replies": {"discoveryChannelIds": [general]}},
        "initiative": {
            // Nobody types in this session: the empty room may not stop it.
            "text": {"eagerness": 100, "tickSeconds": 1, "minMinutesBetweenPosts": 0, "requireActivityWithinHours": 0},
            "discovery": {"rssFeeds": [format!("{}/blog/rss.xml", feeds.url)], "redditSubreddits": ["rust"], "redditBaseUrl": feeds.url}
        },
    }));
    let mut child = home
        .command(&["console", "--json"])
        .env("OPENAI_BASE_URL", model.openai_base())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let prompt = loop {
        let found = model
            .requests()
            .into_iter()
            .map(|r| r.body.to_string())
            .find(|b| b.contains("Tokio 2.0 released"));
        if let Some(p) = found {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no prompt with feed items; {} requests; last: {}\nfeed hits: {:?}",
            model.requests().len(),
            model
                .requests()
                .last()
                .map(|r| r.body.to_string())
                .unwrap_or_default()
                .chars()
                .take(3000)
                .collect::<String>(),
            feeds.served.lock().unwrap().hits
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    drop(child.stdin.take());
    let _ = child.wait();
    let feed =
        &prompt[prompt.find("=== YOUR FEED ===").unwrap()..prompt.find("=== WHAT THIS").unwrap()];
    assert!(
        feed.contains("Why we rewrote our bakery app in Rust") && feed.contains("My crab drawing"),
        "{feed}"
    );
    assert!(
        feed.contains("=== FEED SOURCES ===") && feed.contains("r/rust (reddit)"),
        "{feed}"
    );

    let listed = home.run(&["discovery", "list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains("console (")
            && text.contains("r/rust [reddit] (settings)")
            && text.contains("items"),
        "{text}"
    );

    let fetched = home.run(&["discovery", "fetch", &format!("{}/blog/rss.xml", feeds.url)]);
    let text = String::from_utf8_lossy(&fetched.stdout);
    assert!(
        fetched.status.success(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    assert!(
        text.contains("Tokio 2.0 released")
            && text.contains("The async runtime gets a major update.")
            && text.contains("3 item(s)"),
        "{text}"
    );
    let reddit = home.run(&[
        "discovery",
        "fetch",
        &format!("{}/r/rust/hot.json", feeds.url),
        "--type",
        "reddit",
    ]);
    let text = String::from_utf8_lossy(&reddit.stdout);
    assert!(
        text.contains("My crab drawing [image]") && text.contains("3 item(s)"),
        "{text}"
    );
    let refused =
        Home::new(json!({})).run(&["discovery", "fetch", &format!("{}/blog/rss.xml", feeds.url)]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("private address"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[tokio::test]
async fn web_scrape_reads_a_page_for_the_model_through_the_guard() {
    let feeds = FeedServer::start_at(ambient::clock::ManualClock::at_test_epoch().now());
    feeds.set("/article.html", "text/html", "<html><head><title>Crabs</title><script>x()</script></head><body><p>Crabs are <b>great</b>.</p></body></html>".into());
    let mut s = with_feeds(&feeds);
    s.initiative.text.allow_active_curiosity = true;
    let world = World::start(s).await;
    world
        .model
        .push(Scripted::tool(
            "web_scrape",
            json!({"url": format!("{}/article.html", feeds.url)}),
        ))
        .push(Scripted::tool(
            "decide",
            json!({"action": "drop", "reason": "read enough"}),
        ));
    world.tick().await;
    let second = world.model.requests()[1].body.to_string();
    assert!(second.contains("Crabs\\nCrabs are great."), "{second}");
    assert!(!second.contains("x()"));
}
