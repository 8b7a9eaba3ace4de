//! No prompt part is unbounded: a flood of text from a person, a tool or a
//! feed reaches the model cut to `executive.promptLimits`, with a marker,
//! and the request the model server receives stays small.

use ambient::attention::Addressed;
use ambient::clock::{Clock, ManualClock};
use ambient::settings::{PromptLimits, Settings};
use ambient::store::messages::Source;
use serde_json::{Value, json};

use crate::support::feed_server::FeedServer;
use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, MEMES, World, settings};

const LIMITS: PromptLimits = PromptLimits {
    message_chars: 1_000,
    tool_result_chars: 2_000,
    section_chars: 6_000,
    total_chars: 20_000,
};

/// Slack for what a prompt template writes around its sections (headers,
/// instructions, one `[12:03] ada: ` per line).
const FRAMING: usize = 3_000;

fn limited() -> Settings {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES];
    s.executive.prompt_limits = LIMITS;
    s
}

/// The characters of every message of `role` in a recorded OpenAI request.
fn texts(body: &Value, role: &str) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The request's size without the tool schemas, which no input can grow.
fn size_without_tools(body: &Value) -> usize {
    let mut b = body.clone();
    b.as_object_mut().unwrap().remove("tools");
    b.to_string().len()
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

#[tokio::test]
async fn a_five_megabyte_message_reaches_the_model_cut_to_the_limits() {
    let world = World::start(limited()).await;
    for i in 0..10 {
        world.hear(
            GENERAL,
            "bob",
            &format!("earlier {i}: {}", "y".repeat(3_000)),
            Source::Text,
        );
    }
    world.model.fallback(Scripted::text("that is a lot of x"));
    world
        .message(GENERAL, "ada", &"x".repeat(5_000_000), Addressed::Mention)
        .await;

    let reply = world
        .model
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("Write your reply to ada"))
        .expect("the reply was asked for");
    let size = size_without_tools(&reply.body);
    assert!(
        size < LIMITS.total_chars as usize,
        "the request is {size} bytes"
    );
    let user = texts(&reply.body, "user").join("\n");
    assert!(
        chars(&user) <= (LIMITS.section_chars + LIMITS.message_chars) as usize + FRAMING,
        "history and target: {} characters",
        chars(&user)
    );
    let target = format!(
        "who said: {}… [cut: 5,000,000 characters, showing the first 1,000]",
        "x".repeat(1_000)
    );
    assert!(user.ends_with(&target), "{}", &user[user.len() - 200..]);
    // Shortened, not crowded out: everyone who spoke before is still there.
    for i in 0..10 {
        assert!(user.contains(&format!("bob: earlier {i}: yyy")), "{user}");
    }
    assert!(user.contains("characters, showing the first"));
    assert!(
        world
            .said()
            .iter()
            .any(|s| s.content == "that is a lot of x"),
        "ada got her answer"
    );
}

#[tokio::test]
async fn a_huge_search_result_goes_back_to_the_model_cut_to_the_tool_limit() {
    let feeds = FeedServer::start_at(ManualClock::at_test_epoch().now());
    let results: Vec<Value> = (0..5)
        .map(|i| {
            json!({"title": format!("Crabs {i}"), "url": format!("https://crabs.example/{i}"),
                   "content": "c".repeat(150_000)})
        })
        .collect();
    feeds.set(
        "/search",
        "application/json",
        json!({ "results": results }).to_string(),
    );
    let mut s = limited();
    s.initiative.text.allow_active_curiosity = true;
    s.network.search_base_url = feeds.url.clone();
    s.network.search_allow_private = true;
    let world = World::start(s).await;
    world
        .model
        .push(Scripted::tool("web_search", json!({"query": "crabs"})))
        .push(Scripted::tool(
            "decide",
            json!({"action": "drop", "reason": "read enough"}),
        ));
    world.tick().await;

    let requests = world.model.requests();
    assert_eq!(
        requests.len(),
        2,
        "the search result went back to the model"
    );
    assert_eq!(feeds.hits("/search"), 1);
    let result = texts(&requests[1].body, "tool").join("");
    assert!(
        result.starts_with("Crabs 0 — https://crabs.example/0\nccc"),
        "{}",
        &result[..100]
    );
    assert!(
        result.ends_with("characters, showing the first 2,000]"),
        "{}",
        &result[result.len() - 100..]
    );
    assert!(chars(&result) <= LIMITS.tool_result_chars as usize + 80);
    let size = size_without_tools(&requests[1].body);
    assert!(
        size < LIMITS.total_chars as usize,
        "the request is {size} bytes"
    );
}

/// An RSS feed of three items, each with a 100,000-character title and a
/// 400,000-character description.
fn flooded_feed(now: chrono::DateTime<chrono::Utc>) -> String {
    let items: String = (0..3)
        .map(|i| {
            format!(
                "<item><title>Flood {i} {}</title><link>https://flood.example/{i}</link>\
                 <description>{}</description><pubDate>{}</pubDate></item>",
                "t".repeat(100_000),
                "d".repeat(400_000),
                (now - chrono::Duration::minutes(10 + i)).to_rfc2822()
            )
        })
        .collect();
    format!(
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Flood</title>\
         <link>https://flood.example/</link>{items}</channel></rss>"
    )
}

#[tokio::test]
async fn an_initiative_prompt_over_flooded_channels_and_feed_stays_bounded() {
    let now = ManualClock::at_test_epoch().now();
    let feeds = FeedServer::start_at(now);
    feeds.set("/flood.xml", "application/rss+xml", flooded_feed(now));
    let mut s = limited();
    // 30 lines of each of the two pool channels.
    s.initiative.text.lookback_messages = 60;
    s.network.allow_private_hosts = true;
    s.initiative.discovery.rss_feeds = vec![format!("{}/flood.xml", feeds.url)];
    let world = World::start(s).await;
    let fetched = world.app.discovery.fetch_due().await;
    assert!(!fetched.is_empty(), "the feed was fetched");
    for i in 0..30 {
        let who = if i % 2 == 0 { "ada" } else { "bob" };
        world.hear(
            GENERAL,
            who,
            &format!("wall {i} {}", "w".repeat(200_000)),
            Source::Text,
        );
    }
    world.model.push(Scripted::tool(
        "decide",
        json!({"action": "drop", "reason": "too much"}),
    ));
    world.tick().await;

    let requests = world.model.requests();
    assert_eq!(requests.len(), 1);
    let size = size_without_tools(&requests[0].body);
    assert!(
        size < LIMITS.total_chars as usize,
        "the request is {size} bytes"
    );
    let prompt = texts(&requests[0].body, "user").join("\n");
    let section = |from: &str, to: &str| {
        let start = prompt.find(from).unwrap_or_else(|| panic!("no {from}"));
        let end = prompt.find(to).unwrap_or_else(|| panic!("no {to}"));
        prompt[start..end].to_string()
    };
    let channels = section("=== CHANNELS ===", "=== YOUR FEED ===");
    assert!(
        chars(&channels) <= LIMITS.section_chars as usize + FRAMING,
        "channels: {} characters",
        chars(&channels)
    );
    for i in 0..30 {
        assert!(channels.contains(&format!("wall {i} www")), "{channels}");
    }
    assert!(
        channels.contains(" characters, showing the first "),
        "{channels}"
    );
    let feed = section("=== YOUR FEED ===", "=== FEED SOURCES ===");
    assert!(
        chars(&feed) <= LIMITS.section_chars as usize + FRAMING,
        "feed: {} characters",
        chars(&feed)
    );
    assert!(feed.contains("Flood 0 ttt"), "{feed}");
}

const ASK_SMALL: &str = r#"name: ask-small
description: Hands the question to the small model
level: 2
trigger:
  pattern: "(?i)^ask small\\b"
pipeline:
  - action: llm_prompt
    prompt: "Answer in one line: {{message}}"
    output: answer
  - action: reply
    message: "{{answer}}"
"#;

#[tokio::test]
async fn a_reflex_prompt_holding_a_huge_message_is_one_bounded_section() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ask-small.yaml"), ASK_SMALL).unwrap();
    let mut s = limited();
    s.reflexes.dir = dir.path().to_string_lossy().into_owned();
    let world = World::start(s).await;
    world.model.fallback(Scripted::text("Mostly the letter q."));
    world
        .message(
            GENERAL,
            "ada",
            &format!("ask small {}", "q".repeat(5_000_000)),
            Addressed::No,
        )
        .await;

    let requests = world.model.requests();
    assert_eq!(requests.len(), 1, "one reflex call");
    let asked = texts(&requests[0].body, "user").join("\n");
    assert!(
        asked.starts_with("Answer in one line: ask small qqq"),
        "{}",
        &asked[..100]
    );
    assert!(
        asked.ends_with("… [cut: 5,000,030 characters, showing the first 6,000]"),
        "{}",
        &asked[asked.len() - 100..]
    );
    assert_eq!(world.said()[0].content, "Mostly the letter q.");
}

#[tokio::test]
async fn many_tool_results_together_are_held_to_the_request_total() {
    let feeds = FeedServer::start_at(ManualClock::at_test_epoch().now());
    let results = json!({"results": [{"title": "Crabs", "url": "https://crabs.example/",
                                      "content": "c".repeat(100_000)}]});
    feeds.set("/search", "application/json", results.to_string());
    let mut s = limited();
    s.executive.prompt_limits.total_chars = 12_000;
    s.initiative.text.allow_active_curiosity = true;
    s.initiative.text.max_tool_steps = 10;
    s.initiative.text.max_tool_calls = 10;
    s.network.search_base_url = feeds.url.clone();
    s.network.search_allow_private = true;
    let world = World::start(s).await;
    for i in 0..6 {
        world.model.push(Scripted::tool(
            "web_search",
            json!({"query": format!("crabs {i}")}),
        ));
    }
    world.model.push(Scripted::tool(
        "decide",
        json!({"action": "drop", "reason": "read enough"}),
    ));
    world.tick().await;

    let requests = world.model.requests();
    assert_eq!(requests.len(), 7);
    for (n, r) in requests.iter().enumerate() {
        let text: usize = ["system", "user", "tool"]
            .iter()
            .flat_map(|role| texts(&r.body, role))
            .map(|t| chars(&t))
            .sum();
        assert!(text <= 12_000, "request {n} carries {text} characters");
    }
    let last = texts(&requests[6].body, "tool");
    assert_eq!(last.len(), 6, "every search result is still there");
    assert!(
        last.iter()
            .all(|t| t.starts_with("Crabs — https://crabs.example/\nccc")
                && t.contains("characters, showing the first")),
        "{last:#?}"
    );
}

const SPAM_CHECK: &str = r#"name: spam-check
description: Asks the small model whether a flagged message is spam
level: 2
trigger:
  pattern: "(?i)^is this spam\\b"
  classifier: "Is this message spam?"
pipeline:
  - action: reply
    message: "Looks like spam to me."
"#;

#[tokio::test]
async fn a_reflex_classifier_sees_a_huge_message_cut_to_the_message_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spam-check.yaml"), SPAM_CHECK).unwrap();
    let mut s = limited();
    s.reflexes.dir = dir.path().to_string_lossy().into_owned();
    let world = World::start(s).await;
    world
        .model
        .push(Scripted::tool("classify", json!({"matches": true})));
    world
        .message(
            GENERAL,
            "ada",
            &format!("is this spam {}", "s".repeat(5_000_000)),
            Addressed::No,
        )
        .await;

    let requests = world.model.requests();
    assert_eq!(requests.len(), 1, "one classifier call");
    let asked = texts(&requests[0].body, "user").join("\n");
    assert!(
        asked.ends_with("… [cut: 5,000,013 characters, showing the first 1,000]"),
        "{}",
        &asked[asked.len().saturating_sub(100)..]
    );
    assert!(chars(&asked) < LIMITS.message_chars as usize + 200);
    assert_eq!(world.said()[0].content, "Looks like spam to me.");
}
