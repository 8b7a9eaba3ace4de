//! Media in ambient posts, end to end: the real binary, a scripted model that
//! asks for an image, a fake image generator, and the fake Discord, which
//! shows what a person would see — the message and its attachments.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, GENERAL, MAX_ATTACHMENT_BYTES};
use crate::support::model_server::{ModelServer, Scripted};

const PNG: &[u8] = b"\x89PNG fake image bytes";

/// A bot that posts "made you this" with an image in #general on every tick.
fn posting_bot(images: &ModelServer, discovery: Value) -> Bot {
    let mut d = json!({
        "allowImagePosts": true,
        "imageGeneration": {"baseUrl": images.openai_base()},
    });
    crate::support::home::merge(&mut d, discovery);
    let bot = Bot::start(json!({
        "network": {"allowPrivateHosts": true},
        "permissions": {"replies": {"discoveryChannelIds": [GENERAL.to_string()]}},
        "initiative": {
            // Posts in a row with nobody answering: the unanswered gate is off here.
            "text": {"eagerness": 100, "tickSeconds": 1, "minMinutesBetweenPosts": 0, "maxPostsPerDay": 50,
                     "maxUnansweredPosts": 0},
            "discovery": d,
        },
    }));
    bot.model.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "made you this", "reason": "a quiet room",
               "media": {"kind": "image", "prompt": "a cat made of rust"}}),
    ));
    // Someone is there: the bot does not post to an empty room.
    let said = bot.discord.say(GENERAL, ALICE, "anyone around?");
    assert!(bot.wait_stored(said), "{}", bot.log());
    bot
}

/// The bot's messages in #general once there are `n`.
fn posts(bot: &Bot, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let sent = bot.discord.with(|w| w.posted_in(GENERAL));
        if sent.len() >= n {
            return sent;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} posts arrived:\n{}",
            sent.len(),
            bot.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn image_requests(images: &ModelServer) -> usize {
    images
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/images/generations"))
        .count()
}

#[test]
fn an_ambient_post_with_an_image_arrives_as_an_attachment_then_the_daily_budget_stops_it() {
    let images = ModelServer::start();
    let bot = posting_bot(&images, json!({"maxImagesPerDay": 1}));
    let sent = posts(&bot, 2);
    assert_eq!(sent[0]["content"], "made you this");
    let attachments = sent[0]["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 1, "{:#}", sent[0]);
    assert_eq!(attachments[0]["filename"], "image.png");
    assert_eq!(attachments[0]["size"], PNG.len());
    assert_eq!(attachments[0]["content_type"], "image/png");
    assert_eq!(sent[1]["content"], "made you this");
    assert_eq!(
        sent[1]["attachments"],
        json!([]),
        "over maxImagesPerDay the post goes without its image"
    );
    assert_eq!(
        image_requests(&images),
        1,
        "no image asked for over the budget"
    );
    let request = images
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/images/generations"))
        .unwrap();
    assert_eq!(request.body["prompt"], "a cat made of rust");
}

#[test]
fn a_model_outside_the_allowlist_is_never_asked_and_the_post_goes_without_an_image() {
    let images = ModelServer::start();
    let bot = posting_bot(
        &images,
        json!({"allowedImageModels": ["dall-e-3"], "imageGeneration": {"model": "gpt-image-1"}}),
    );
    let sent = posts(&bot, 1);
    assert_eq!(sent[0]["content"], "made you this");
    assert_eq!(sent[0]["attachments"], json!([]));
    assert_eq!(image_requests(&images), 0);
    let journal = bot
        .home
        .run(&["journal", "--since", "1h", "--type", "initiative_skip"]);
    let text = String::from_utf8_lossy(&journal.stdout);
    assert!(
        text.contains(
            "the image model gpt-image-1 is not in initiative.discovery.allowedImageModels"
        ),
        "{text}"
    );
}

/// The fake is as strict as Discord: a file over 25 MiB is refused with 40005.
#[tokio::test]
async fn the_fake_discord_refuses_a_file_over_twenty_five_mib() {
    let discord = crate::support::fake_discord::FakeDiscord::start();
    let send = |size: usize| {
        let form = reqwest::multipart::Form::new()
            .text("payload_json", json!({"content": "big"}).to_string())
            .part(
                "files[0]",
                reqwest::multipart::Part::bytes(vec![0u8; size])
                    .file_name("big.png")
                    .mime_str("image/png")
                    .unwrap(),
            );
        crate::support::fake_discord::bot_http()
            .post(format!(
                "{}/api/v10/channels/{GENERAL}/messages",
                discord.url
            ))
            .multipart(form)
            .send()
    };
    let refused = send(MAX_ATTACHMENT_BYTES + 1).await.unwrap();
    assert_eq!(refused.status().as_u16(), 413);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        (body["code"].as_u64(), body["message"].as_str()),
        (Some(40005), Some("Request entity too large"))
    );
    let taken: Value = send(MAX_ATTACHMENT_BYTES)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(taken["attachments"][0]["size"], MAX_ATTACHMENT_BYTES);
    assert_eq!(taken["attachments"][0]["content_type"], "image/png");
}

// --- GIFs: the GIF source (a Giphy-compatible search) on the in-process world.

use ambient::settings::Secrets;
use ambient::vocab::journal::Kind;

use crate::support::files::files_containing;
use crate::support::gif_server::GifServer;
use crate::support::world::{self, World};

const GIPHY_KEY: &str = "giphy-KEY-CANARY-4471";

fn gif_world_settings(base: &str, allow_private: bool) -> ambient::settings::Settings {
    let mut s = world::settings();
    s.permissions.replies.discovery_channel_ids = vec![world::GENERAL];
    s.network.allow_private_hosts = false;
    s.initiative.discovery.allow_gif_posts = true;
    s.initiative.discovery.gif_source.base_url = base.into();
    s.initiative.discovery.gif_source.allow_private = allow_private;
    s
}

async fn gif_world(s: ambient::settings::Settings) -> World {
    let secrets = Secrets::from_lookup(|k| (k == "GIPHY_API_KEY").then(|| GIPHY_KEY.to_string()));
    let w = World::start_with_secrets(s, secrets).await;
    w.model.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "this is us", "reason": "r",
               "media": {"kind": "gif", "prompt": "dancing cat"}}),
    ));
    w
}

fn skips(w: &World) -> Vec<String> {
    w.journal(Kind::InitiativeSkip)
        .into_iter()
        .map(|e| format!("{}: {}", e.summary, e.reason))
        .collect()
}

#[tokio::test]
async fn an_ambient_post_asking_for_a_gif_posts_its_url_then_the_daily_budget_stops_the_search() {
    let gifs = GifServer::start(GIPHY_KEY);
    let mut s = gif_world_settings(&gifs.url, true);
    s.initiative.discovery.max_gifs_per_day = 1;
    let w = gif_world(s).await;
    w.tick().await;
    w.clock.advance(chrono::Duration::minutes(1));
    w.tick().await;
    let said = w.said();
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(
        said[0].content,
        "this is us\nhttps://media.example/dancing-cat.gif"
    );
    assert!(said[0].files.is_empty(), "a GIF is its URL, not an upload");
    assert_eq!(
        said[1].content, "this is us",
        "over maxGifsPerDay: text only"
    );
    let searches = gifs.searches();
    assert_eq!(searches.len(), 1, "no search over the budget");
    assert_eq!(searches[0]["q"], "dancing cat");
    assert_eq!(searches[0]["rating"], "pg");
    assert_eq!(searches[0]["limit"], "5");
    assert_eq!(searches[0]["api_key"], GIPHY_KEY);
    let first_prompt = w.model.requests()[0].body.to_string();
    assert!(
        first_prompt.contains("gif: you may ask for one with your post (media.kind \\\"gif\\\" and a prompt of a few search words; its link is added to your text)"),
        "{first_prompt}"
    );
    assert!(
        skips(&w)
            .iter()
            .any(|s| s
                .contains("today's GIFs are used up (1 of initiative.discovery.maxGifsPerDay 1)")),
        "{:#?}",
        skips(&w)
    );
}

#[tokio::test]
async fn without_a_key_the_model_is_told_gifs_are_unavailable() {
    let gifs = GifServer::start(GIPHY_KEY);
    let w = World::start(gif_world_settings(&gifs.url, true)).await;
    w.model.push(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "this is us", "reason": "r",
               "media": {"kind": "gif", "prompt": "dancing cat"}}),
    ));
    w.tick().await;
    let first_prompt = w.model.requests()[0].body.to_string();
    assert!(
        first_prompt.contains("gif: not available — no GIF source key is set (GIPHY_API_KEY)"),
        "{first_prompt}"
    );
    assert_eq!(w.said()[0].content, "this is us");
    assert!(gifs.searches().is_empty());
}

#[tokio::test]
async fn a_private_gif_source_is_refused_without_its_flag() {
    let gifs = GifServer::start(GIPHY_KEY);
    let w = gif_world(gif_world_settings(&gifs.url, false)).await;
    w.tick().await;
    assert_eq!(w.said()[0].content, "this is us");
    assert!(
        gifs.searches().is_empty(),
        "the loopback server was reached"
    );
    assert!(
        skips(&w)
            .iter()
            .any(|s| s.starts_with("posted without the requested GIF: ")
                && s.contains("private address")),
        "{:#?}",
        skips(&w)
    );
}

#[tokio::test]
async fn the_gif_key_never_reaches_the_journal_the_usage_table_or_the_data_directory() {
    // A service that is down: the network error names the URL, and the key is in it.
    let w = gif_world(gif_world_settings("http://127.0.0.1:9", true)).await;
    w.tick().await;
    assert_eq!(w.said()[0].content, "this is us");
    let reasons: Vec<String> = skips(&w)
        .into_iter()
        .filter(|s| s.starts_with("posted without the requested GIF"))
        .collect();
    assert_eq!(reasons.len(), 1, "{:#?}", skips(&w));
    assert!(
        reasons[0].contains("api_key=***") && !reasons[0].contains(GIPHY_KEY),
        "{reasons:#?}"
    );
    let (dir, _, _) = w.stop().await;
    let holding = files_containing(dir.path(), GIPHY_KEY.as_bytes());
    assert!(holding.is_empty(), "the key is on disk in {holding:?}");
}

// --- GIFs in replies: `initiative.discovery.allowReplyGifs`.

async fn reply_world(allow_reply_gifs: bool, max_gifs_per_day: u32) -> (World, GifServer) {
    let gifs = GifServer::start(GIPHY_KEY);
    let mut s = gif_world_settings(&gifs.url, true);
    s.initiative.discovery.allow_gif_posts = false;
    s.initiative.discovery.allow_reply_gifs = allow_reply_gifs;
    s.initiative.discovery.max_gifs_per_day = max_gifs_per_day;
    let secrets = Secrets::from_lookup(|k| (k == "GIPHY_API_KEY").then(|| GIPHY_KEY.to_string()));
    (World::start_with_secrets(s, secrets).await, gifs)
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_reply_may_find_a_gif_with_allow_reply_gifs_and_the_search_counts_as_the_replys() {
    use ambient::attention::Addressed;
    let (w, gifs) = reply_world(true, 1).await;
    w.model
        .push(Scripted::tool(
            "gif_search",
            json!({"query": "happy dance"}),
        ))
        .push(Scripted::text(
            "congrats!\nhttps://media.example/happy-dance.gif",
        ));
    w.message(
        world::GENERAL,
        "ada",
        "@ambient I passed my exam!",
        Addressed::Mention,
    )
    .await;
    let said = w.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(
        said[0].content,
        "congrats!\nhttps://media.example/happy-dance.gif"
    );
    let requests = w.model.requests();
    assert!(offered(&requests[0].body).contains(&"gif_search".to_string()));
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("https://media.example/happy-dance.gif"),
        "the link went back to the model: {}",
        requests[1].body
    );
    let searches = gifs.searches();
    assert_eq!(searches.len(), 1);
    assert_eq!(searches[0]["q"], "happy dance");
    let rows = w
        .app
        .store()
        .usage()
        .usage_list(
            &ambient::store::usage::UsageFilter {
                provider: Some("gifs".into()),
                ..Default::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].role, "reply");

    // The day's one GIF is used: the next answer is not offered the tool.
    w.model.push(Scripted::text("nice"));
    w.message(
        world::GENERAL,
        "ada",
        "@ambient and now?",
        Addressed::Mention,
    )
    .await;
    let last = w.model.requests().last().unwrap().body.clone();
    assert!(
        !offered(&last).contains(&"gif_search".to_string()),
        "{last}"
    );
}

#[tokio::test]
async fn without_allow_reply_gifs_a_reply_is_not_offered_gifs() {
    use ambient::attention::Addressed;
    let (w, gifs) = reply_world(false, 5).await;
    w.model.push(Scripted::text("congrats!"));
    w.message(
        world::GENERAL,
        "ada",
        "@ambient I passed my exam!",
        Addressed::Mention,
    )
    .await;
    assert_eq!(w.said().len(), 1);
    let first = &w.model.requests()[0].body;
    assert!(
        !offered(first).contains(&"gif_search".to_string()),
        "{first}"
    );
    assert!(gifs.searches().is_empty());
}
