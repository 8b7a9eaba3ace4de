//! 429s from a Discord-compatible server: waited out as the server asks, not
//! hammered; and behind a rate-limiting REST proxy left to the proxy.
//!
//! The waits are observed in the fake Discord's request log (when each
//! attempt arrived), never timed on the bot's side.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, GENERAL, World};
use crate::support::model_server::Scripted;

fn bot_messages(w: &World) -> Vec<Value> {
    w.log_of("MESSAGE_CREATE")
        .into_iter()
        .filter(|m| m["author"]["id"] == json!(BOT.to_string()))
        .collect()
}

/// The README's settings example for a rate-limiting proxy, exactly as written.
fn readme_proxy_example() -> Value {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with('{') && l.contains("restProxyHandlesRateLimits"))
        .expect("the README shows the proxy settings");
    serde_json::from_str(line).unwrap()
}

#[test]
fn a_429_storm_is_waited_out_as_asked_and_the_reply_arrives_once() {
    let bot = Bot::start(json!({}));
    let retry_after = Duration::from_millis(300);
    bot.discord.storm_sends(3, retry_after, false);
    bot.model.push(Scripted::text("Here after the storm."));
    bot.discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> still there?"));
    assert!(
        bot.discord.wait_until(20, |w| !bot_messages(w).is_empty()),
        "the reply never got through the 429s:\n{}",
        bot.log()
    );
    let created = bot.discord.with(|w| bot_messages(w));
    assert_eq!(created.len(), 1, "one message in the channel: {created:#?}");
    assert_eq!(created[0]["content"], "Here after the storm.");
    let attempts = bot.discord.send_times(GENERAL);
    assert_eq!(
        attempts.len(),
        4,
        "three 429s, then the send that went through; a retry inside the wait would be another 429"
    );
    for pair in attempts.windows(2) {
        assert!(
            pair[1] - pair[0] >= retry_after,
            "retried {:?} after a 429 that asked for {retry_after:?}",
            pair[1] - pair[0]
        );
    }
    let posts = bot.discord.with(|w| w.sent_in(GENERAL));
    assert!(
        posts.iter().all(|p| p["nonce"] == posts[0]["nonce"]),
        "every attempt is the same message (same nonce): {posts:#?}"
    );
}

#[test]
fn a_global_429_holds_the_bots_sends_for_as_long_as_it_says() {
    let bot = Bot::start(json!({}));
    let retry_after = Duration::from_millis(400);
    bot.discord.storm_sends(1, retry_after, true);
    bot.model.push(Scripted::text("Global wait honoured."));
    bot.discord.say(GENERAL, ALICE, &format!("<@{BOT}> hello?"));
    assert!(
        bot.discord.wait_until(20, |w| !bot_messages(w).is_empty()),
        "{}",
        bot.log()
    );
    let attempts = bot.discord.send_times(GENERAL);
    assert_eq!(attempts.len(), 2, "one 429, one send");
    assert!(attempts[1] - attempts[0] >= retry_after);
}

#[test]
fn behind_a_rate_limiting_proxy_the_bot_passes_a_429_on_without_waiting() {
    let mut settings = readme_proxy_example();
    let (_, problems) = ambient::settings::validate::validate(&settings);
    assert!(problems.is_empty(), "{problems:?}");
    // The fake Discord stands in for the proxy (the bot points at it already).
    settings["discord"]
        .as_object_mut()
        .unwrap()
        .remove("apiBaseUrl");
    let bot = Bot::start(settings);
    bot.discord
        .storm_sends(1, Duration::from_millis(300), false);
    bot.model.push(Scripted::text("Through the proxy."));
    bot.discord.say(GENERAL, ALICE, &format!("<@{BOT}> ping"));
    assert!(
        bot.discord
            .wait_until(20, |_| bot.log().contains("rate limited")),
        "the 429 is reported as a failed send:\n{}",
        bot.log()
    );
    assert_eq!(
        bot.discord.send_times(GENERAL).len(),
        1,
        "the proxy retries, not the bot"
    );
    assert!(bot.discord.with(|w| bot_messages(w)).is_empty());
}

#[test]
fn a_spent_bucket_is_waited_out_before_the_next_send_not_after_a_429() {
    let bot = Bot::start(json!({}));
    let window = Duration::from_secs(2);
    bot.discord.rate_limit_sends(1, window);
    bot.model.push(Scripted::text("First."));
    bot.model.push(Scripted::text("Second."));
    bot.discord.say(GENERAL, ALICE, &format!("<@{BOT}> one"));
    assert!(
        bot.discord.wait_until(20, |w| bot_messages(w).len() == 1),
        "{}",
        bot.log()
    );
    bot.discord.say(GENERAL, ALICE, &format!("<@{BOT}> two"));
    assert!(
        bot.discord.wait_until(20, |w| bot_messages(w).len() == 2),
        "{}",
        bot.log()
    );
    let attempts = bot.discord.send_times(GENERAL);
    assert_eq!(
        attempts.len(),
        2,
        "X-RateLimit-Remaining: 0 said to wait: no send was answered 429"
    );
}
