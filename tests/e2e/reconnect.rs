//! The gateway goes down and comes back: the bot waits longer between
//! attempts instead of hammering it, and is back to answering afterwards.

use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, GENERAL};
use crate::support::model_server::Scripted;

/// A gateway that accepts and closes every connection cleanly is tried a
/// handful of times, not thousands (serenity alone resumes in a tight loop);
/// once it is up again the bot reconnects and answers a mention.
#[test]
fn a_gateway_that_is_down_is_retried_with_back_off_and_the_bot_comes_back() {
    let bot = Bot::start(json!({}));
    bot.model.fallback(Scripted::text("Still here."));
    let before = bot.discord.say(GENERAL, ALICE, "hello");
    assert!(bot.wait_stored(before));

    let at_start = bot.discord.with(|w| w.gateway_attempts);
    bot.discord.gateway_down();
    assert!(
        bot.discord
            .wait_until(30, |w| w.gateway_attempts >= at_start + 3),
        "the bot tries the gateway again:\n{}",
        bot.log()
    );
    // Let the down gateway be tried for a while longer: without back-off
    // that is thousands of connections.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let tried = bot.discord.with(|w| w.gateway_attempts) - at_start;
    assert!(
        tried <= 8,
        "{tried} connection attempts while the gateway was down"
    );

    bot.discord.gateway_up();
    let back = bot.discord.with(|w| w.identifies + w.resumes);
    assert!(
        bot.discord
            .wait_until(60, |w| w.identifies + w.resumes > back),
        "the bot reconnects once the gateway is up:\n{}",
        bot.log()
    );
    let asked = bot
        .discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> are you back?"));
    assert!(
        bot.discord
            .wait_until(20, |w| w.sent_in(GENERAL).iter().any(
                |b| b["message_reference"]["message_id"] == json!(asked.to_string())
            )),
        "{}",
        bot.log()
    );
}
