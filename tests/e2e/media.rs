//! Media in ambient posts, end to end: the real binary, a scripted model that
//! asks for an image, a fake image generator, and the fake Discord, which
//! shows what a person would see — the message and its attachments.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{GENERAL, MAX_ATTACHMENT_BYTES};
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
            "text": {"eagerness": 100, "tickSeconds": 1, "minMinutesBetweenPosts": 0, "maxPostsPerDay": 50},
            "discovery": d,
        },
    }));
    bot.model.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "made you this", "reason": "a quiet room",
               "media": {"kind": "image", "prompt": "a cat made of rust"}}),
    ));
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
        reqwest::Client::new()
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
