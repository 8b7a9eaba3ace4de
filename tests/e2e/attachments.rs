//! Images and text files people show the bot, end to end: the real binary,
//! the fake Discord (which serves attachments from its own signed CDN
//! URLs, as a Discord-compatible server does), and the scripted model
//! servers, which refuse images the way the providers do.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, BOT, GENERAL};
use crate::support::model_server::{ModelServer, Scripted};

fn mention(text: &str) -> String {
    format!("<@{BOT}> {text}")
}

/// A PNG of `width × height` with a gradient, opaque or half transparent.
fn png(width: u32, height: u32, alpha: u8) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(width, height, |x, y| {
        image::Rgba([(x % 256) as u8, (y % 256) as u8, 120, alpha])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// A PNG of one colour: many pixels in few bytes.
fn flat_png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(width, height, image::Rgb([30, 60, 90]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// A PNG that does not compress: about 3 bytes a pixel.
fn noisy_png(side: u32) -> Vec<u8> {
    let mut seed = 7u32;
    let img = image::RgbImage::from_fn(side, side, |_, _| {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let [a, b, c, _] = seed.to_be_bytes();
        image::Rgb([a, b, c])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// The bot's messages in #general once it has said something.
fn answered(bot: &Bot) -> Vec<Value> {
    assert!(
        bot.discord
            .wait_until(20, |w| !w.sent_in(GENERAL).is_empty()),
        "no answer:\n{}",
        bot.log()
    );
    bot.discord.with(|w| w.sent_in(GENERAL))
}

/// How often the CDN was asked for an attachment.
fn cdn_requests(bot: &Bot) -> usize {
    bot.discord.with(|w| w.find("GET", "/attachments/").len())
}

/// The last user message of a request, whichever wire format.
fn user_message(body: &Value) -> Value {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap()
}

/// The text of a user message's content (a string, or its text parts).
fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// (media type, decoded image) of every image in a request body.
fn images_in(body: &Value) -> Vec<(String, image::DynamicImage)> {
    let b64 = base64::engine::general_purpose::STANDARD;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter_map(|p| match p["type"].as_str() {
            Some("image") => Some((
                p["source"]["media_type"].as_str().unwrap().to_string(),
                b64.decode(p["source"]["data"].as_str().unwrap()).unwrap(),
            )),
            Some("image_url") => {
                let url = p["image_url"]["url"].as_str().unwrap();
                let (head, data) = url
                    .strip_prefix("data:")
                    .unwrap()
                    .split_once(";base64,")
                    .unwrap();
                Some((head.to_string(), b64.decode(data).unwrap()))
            }
            _ => None,
        })
        .map(|(t, bytes)| (t, image::load_from_memory(&bytes).unwrap()))
        .collect()
}

#[test]
fn an_addressed_image_reaches_an_anthropic_vision_role_as_an_image_block_scaled_down() {
    let anthropic = ModelServer::start();
    anthropic.push(Scripted::text("A purple gradient, like a sunset."));
    let bot = Bot::start(json!({"executive": {"roles": {"reply": {
        "provider": "anthropic", "baseUrl": anthropic.url, "model": "claude-sonnet-4-5"}}}}));
    let photo = bot
        .discord
        .upload(GENERAL, "sunset.png", &png(2000, 1000, 255), "image/png");
    bot.discord
        .say_with(GENERAL, ALICE, &mention("what is this?"), None, vec![photo]);
    let sent = answered(&bot);
    assert_eq!(sent[0]["content"], "A purple gradient, like a sunset.");

    let body = &anthropic.requests()[0].body;
    let images = images_in(body);
    assert_eq!(images.len(), 1, "{body:#}");
    let (media_type, img) = &images[0];
    assert_eq!(media_type, "image/jpeg", "an opaque picture goes as JPEG");
    assert_eq!(
        (img.width(), img.height()),
        (1568, 784),
        "scaled to maxImageSide"
    );
    let content = user_message(body)["content"].clone();
    let kinds: Vec<&str> = content
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "text", "image"], "{content:#}");
    assert_eq!(
        content[1]["text"],
        "\n\nImage 1: sunset.png, from alice's message:"
    );
    let prompt = text_of(&user_message(body));
    assert!(
        prompt.contains("- [image: sunset.png — image 1 below], from alice's message"),
        "{prompt}"
    );
    assert_eq!(cdn_requests(&bot), 1);
    assert!(bot.stop().success());
}

#[test]
fn an_image_reaches_an_openai_compatible_role_as_a_data_url_and_vision_true_overrides_the_list() {
    // An unknown model name sees nothing by default; `vision: true` says it does.
    let bot = Bot::start(json!({"executive": {"roles": {"reply": {
        "model": "my-local-vlm", "vision": true}}}}));
    bot.model.push(Scripted::text("A see-through gradient."));
    let sticker = bot
        .discord
        .upload(GENERAL, "sticker.png", &png(300, 200, 128), "image/png");
    bot.discord
        .say_with(GENERAL, ALICE, &mention("look"), None, vec![sticker]);
    assert_eq!(answered(&bot)[0]["content"], "A see-through gradient.");

    let body = &bot.model.requests()[0].body;
    assert_eq!(body["model"], "my-local-vlm");
    let user = user_message(body);
    let image_part = user["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "image_url")
        .cloned()
        .unwrap_or_else(|| panic!("no image_url part: {user:#}"));
    assert_eq!(image_part["image_url"]["detail"], "high");
    let images = images_in(body);
    let (media_type, img) = &images[0];
    assert_eq!(media_type, "image/png", "real transparency stays PNG");
    assert_eq!(
        (img.width(), img.height()),
        (300, 200),
        "small images keep their size"
    );
    assert!(bot.stop().success());
}

#[test]
fn a_role_that_cannot_see_gets_the_honest_placeholder_and_the_image_is_never_fetched() {
    let bot = Bot::start(json!({"executive": {"roles": {"reply": {"model": "qwen2.5:14b"}}}}));
    // A text-only model refuses images outright: the bot must not send any.
    bot.model.blind("qwen2.5:14b");
    bot.model
        .push(Scripted::text("I can't see images, sorry — what's in it?"));
    let cat = bot
        .discord
        .upload(GENERAL, "cat.png", &png(64, 64, 255), "image/png");
    bot.discord.say_with(
        GENERAL,
        ALICE,
        &mention("what's my cat doing?"),
        None,
        vec![cat],
    );
    assert_eq!(
        answered(&bot)[0]["content"],
        "I can't see images, sorry — what's in it?"
    );
    let body = &bot.model.requests()[0].body;
    let user = user_message(body);
    assert!(user["content"].is_string(), "no image parts: {user:#}");
    assert!(
        text_of(&user).contains("- [image: cat.png, not visible to you], from alice's message"),
        "{user:#}"
    );
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("you cannot see them. If asked about one, say so plainly"),
        "{system}"
    );
    assert_eq!(
        cdn_requests(&bot),
        0,
        "nothing is fetched for a blind model"
    );
    assert!(bot.stop().success());
}

#[test]
fn oversize_private_address_and_too_large_images_are_refused_and_the_prompt_says_so() {
    let private = ModelServer::start();
    let bot = Bot::start(json!({"discord": {"attachments": {
        "maxImageBytes": 400_000, "maxImagePixels": 10_000_000}}}));
    bot.model.push(Scripted::text("I couldn't look at those."));
    let d = &bot.discord;
    // Discord says it is larger than the limit: never fetched.
    let big = d.upload(GENERAL, "big.png", &noisy_png(500), "image/png");
    // A Discord-compatible server that understates the size: the download is cut off.
    let mut liar = d.upload(GENERAL, "liar.png", &noisy_png(500), "image/png");
    liar["size"] = json!(1_000);
    // An address on someone's private network.
    let inside = json!({"id": "1", "filename": "secret.png", "size": 100, "content_type": "image/png",
        "url": format!("{}/secret.png", private.url), "proxy_url": format!("{}/secret.png", private.url)});
    // 12 megapixels against a 10-megapixel limit, by what Discord says.
    let flat = flat_png(4000, 3000);
    assert!(flat.len() < 400_000, "small in bytes: {}", flat.len());
    let wide = d.upload(GENERAL, "wide.png", &flat, "image/png");
    d.say_with(
        GENERAL,
        ALICE,
        &mention("what do you make of these?"),
        None,
        vec![big, liar, inside, wide],
    );
    answered(&bot);
    let body = &bot.model.requests()[0].body;
    assert!(images_in(body).is_empty(), "{body:#}");
    let prompt = text_of(&user_message(body));
    for line in [
        "- [image: big.png, not shown: larger than the image size limit (discord.attachments.maxImageBytes)], from alice's message",
        "- [image: liar.png, not shown: larger than the image size limit (discord.attachments.maxImageBytes)], from alice's message",
        "- [image: secret.png, not shown: its address is not Discord's CDN, discord.apiBaseUrl's server or one of discord.attachmentOrigins], from alice's message",
        "- [image: wide.png, not shown: more pixels than allowed (discord.attachments.maxImagePixels)], from alice's message",
    ] {
        assert!(prompt.contains(line), "missing {line:?} in:\n{prompt}");
    }
    assert!(
        private.requests().is_empty(),
        "the private address was reached"
    );
    let fetched: Vec<String> = bot
        .discord
        .with(|w| w.find("GET", "/attachments/"))
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(
        fetched.len(),
        1,
        "only the understated one is fetched: {fetched:?}"
    );
    assert!(fetched[0].ends_with("/liar.png"));
    assert!(bot.stop().success());
}

#[test]
fn a_text_file_is_quoted_in_the_prompt_cut_at_the_limit_and_a_binary_one_is_only_named() {
    let bot = Bot::start(json!({}));
    bot.model.push(Scripted::text("Line 1 says it started."));
    let log: String = (1..=10_000)
        .map(|i| format!("{i:05} the server said something\n"))
        .collect();
    assert_eq!(log.len(), 320_000);
    let d = &bot.discord;
    let files = vec![
        d.upload(
            GENERAL,
            "server.log",
            log.as_bytes(),
            "text/plain; charset=utf-8",
        ),
        d.upload(
            GENERAL,
            "notes.md",
            b"# Notes\n\n```sh\necho hi\n```\n",
            "text/markdown",
        ),
        d.upload(
            GENERAL,
            "backup.zip",
            b"PK\x03\x04 not really",
            "application/zip",
        ),
    ];
    d.say_with(GENERAL, ALICE, &mention("why did it crash?"), None, files);
    answered(&bot);
    let prompt = text_of(&user_message(&bot.model.requests()[0].body));
    assert!(
        prompt.contains("- [file: server.log — quoted below], from alice's message"),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "\n\nFile server.log from alice's message:\n```\n00001 the server said something\n"
        ),
        "{prompt}"
    );
    // 100,000 bytes (maxTextFileBytes) of 32-byte lines: 3,125 whole lines.
    assert!(prompt.contains(
        "03125 the server said something\n… [cut: 320,000 bytes, showing the first 100,000]\n```"
    ));
    assert!(!prompt.contains("03126 the server"), "past the limit");
    assert!(
        prompt.contains(
            "File notes.md from alice's message:\n````\n# Notes\n\n```sh\necho hi\n```\n````"
        ),
        "a fence the file cannot close: {prompt}"
    );
    assert!(
        prompt.contains("- [file: backup.zip, not read: a binary file], from alice's message"),
        "{prompt}"
    );
    let fetched: Vec<String> = bot
        .discord
        .with(|w| w.find("GET", "/attachments/"))
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(fetched.len(), 2, "the zip is not fetched: {fetched:?}");
    assert!(bot.stop().success());
}

#[test]
fn the_replied_to_messages_image_is_shown_and_an_unaddressed_image_is_never_fetched() {
    let bot = Bot::start(json!({}));
    bot.model.push(Scripted::text("That's bob's gradient."));
    let photo = bot
        .discord
        .upload(GENERAL, "mine.png", &png(100, 100, 255), "image/png");
    let bobs = bot
        .discord
        .say_with(GENERAL, BOB, "look at this", None, vec![photo]);
    assert!(bot.wait_stored(bobs), "{}", bot.log());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(cdn_requests(&bot), 0, "bob did not address the bot");
    assert!(bot.model.requests().is_empty());

    bot.discord.say_with(
        GENERAL,
        ALICE,
        &mention("what's in it?"),
        Some(bobs),
        vec![],
    );
    answered(&bot);
    let body = &bot.model.requests()[0].body;
    assert_eq!(images_in(body).len(), 1, "{body:#}");
    let prompt = text_of(&user_message(body));
    assert!(
        prompt.contains(
            "- [image: mine.png — image 1 below], from the message by bob that alice replied to"
        ),
        "{prompt}"
    );
    assert_eq!(cdn_requests(&bot), 1);
    assert!(bot.stop().success());
}

#[test]
fn budgets_count_what_an_image_costs_before_the_call_is_made() {
    let anthropic = ModelServer::start();
    anthropic.fallback(Scripted::text("unused"));
    let bot = Bot::start(json!({
        "executive": {"roles": {"reply": {"provider": "anthropic", "baseUrl": anthropic.url,
            "model": "claude-sonnet-4-5"}}},
        // The prompt and the answer's 1,024 tokens fit; a 1,600-token picture does not.
        "budget": {"dailyTokens": {"reply": 2_600}},
    }));
    let photo = bot
        .discord
        .upload(GENERAL, "big.png", &png(2000, 1000, 255), "image/png");
    bot.discord
        .say_with(GENERAL, ALICE, &mention("and this?"), None, vec![photo]);
    let sent = answered(&bot);
    assert_eq!(
        sent[0]["content"],
        "Sorry, I can't answer right now: I've used up my thinking budget for now."
    );
    assert!(anthropic.requests().is_empty(), "the call was not made");
    let refused = bot
        .store()
        .usage()
        .usage_list(&Default::default(), None)
        .unwrap()
        .into_iter()
        .find(|u| u.outcome == "refused")
        .expect("a refused call is recorded");
    let need: u64 = refused
        .detail
        .split("this call may need ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", refused.detail));
    assert!(
        need >= 1_600 + 1_024,
        "the picture's 1,600 tokens count: {need}"
    );

    // The same question without the picture fits.
    anthropic.push(Scripted::text("Sure."));
    bot.discord.say(GENERAL, ALICE, &mention("and without it?"));
    assert!(
        bot.discord
            .wait_until(20, |w| w.sent_in(GENERAL).len() >= 2),
        "{}",
        bot.log()
    );
    assert_eq!(anthropic.requests().len(), 1);
    assert!(bot.stop().success());
}

#[test]
fn the_readmes_examples_are_what_the_bot_does() {
    let example = crate::support::readme::block("A local vision model for answers", "json");
    let home = crate::support::home::Home::new(json!({}));
    let file = home.path().join("vision.json");
    std::fs::write(&file, &example).unwrap();
    let out = home.run(&["settings", "check", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The prompt's list, exactly: alice answers bob's archive with three attachments.
    let bot = Bot::start(json!({"discord": {"attachments": {"maxImageBytes": 400_000}}}));
    bot.model.push(Scripted::text("Looking."));
    let d = &bot.discord;
    let zip = d.upload(
        GENERAL,
        "backup.zip",
        b"PK\x03\x04 not really",
        "application/zip",
    );
    let bobs = d.say_with(GENERAL, BOB, "the backup", None, vec![zip]);
    assert!(bot.wait_stored(bobs), "{}", bot.log());
    let files = vec![
        d.upload(GENERAL, "sunset.png", &png(640, 480, 255), "image/png"),
        d.upload(GENERAL, "server.log", b"started\n", "text/plain"),
        d.upload(GENERAL, "huge.png", &noisy_png(500), "image/png"),
    ];
    d.say_with(GENERAL, ALICE, &mention("all good?"), Some(bobs), files);
    answered(&bot);
    let prompt = text_of(&user_message(&bot.model.requests()[0].body));
    let listed = crate::support::readme::block("The prompt lists every attachment", "text");
    assert!(
        prompt.contains(&listed),
        "the README shows:\n{listed}\nthe prompt has:\n{prompt}"
    );
    assert!(bot.stop().success());
}

#[test]
fn chiming_in_unaddressed_reads_attachments_only_when_the_setting_says_so() {
    for read in [false, true] {
        let bot = Bot::start(json!({
            "attention": {"unsolicitedReplyThreshold": 0.0, "chimeInCooldownMinutes": 0},
            "permissions": {"replies": {"replyChannelIds": [GENERAL.to_string()]}},
            "discord": {"attachments": {"readInReplyChannels": read}},
        }));
        bot.model.push(Scripted::tool(
            "chime_in",
            json!({"speak": false, "reason": "nothing to add"}),
        ));
        let cat = bot
            .discord
            .upload(GENERAL, "cat.png", &png(64, 64, 255), "image/png");
        let notes = bot
            .discord
            .upload(GENERAL, "notes.txt", b"feed the cat", "text/plain");
        bot.discord.say_with(
            GENERAL,
            BOB,
            "what do you all think?",
            None,
            vec![cat, notes],
        );
        assert!(
            bot.discord
                .wait_until(20, |_| !bot.model.requests().is_empty()),
            "the model was never asked:\n{}",
            bot.log()
        );
        let body = &bot.model.requests()[0].body;
        let prompt = text_of(&user_message(body));
        assert!(prompt.contains("Decide whether to chime in."), "{prompt}");
        if read {
            assert_eq!(images_in(body).len(), 1, "{body:#}");
            assert!(
                prompt.contains("File notes.txt from bob's message:\n```\nfeed the cat\n```"),
                "{prompt}"
            );
            assert_eq!(cdn_requests(&bot), 2);
        } else {
            assert!(images_in(body).is_empty());
            assert!(
                prompt.contains("- [image: cat.png, not visible to you], from bob's message"),
                "{prompt}"
            );
            assert!(
                prompt.contains(
                    "- [file: notes.txt, not read: files are not read here], from bob's message"
                ),
                "{prompt}"
            );
            assert_eq!(
                cdn_requests(&bot),
                0,
                "an unaddressed message is not downloaded"
            );
        }
        assert!(bot.stop().success());
    }
}
