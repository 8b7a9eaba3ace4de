//! The marks `benches/reply_latency.rs` times a person's wait by: the model
//! server notes when each request arrived and when each answer's last byte
//! left it (streamed or not), and the fake Discord when each request came.
//! A mark missing or out of order would make the bench time nothing, or the
//! wrong span.

use std::time::Duration;

use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, GENERAL};
use crate::support::model_server::Scripted;

/// Asks one question answered by `answer`: the requests marked, the answers
/// marked ended, whether the first ended after it was asked, and whether an
/// answer had ended when the message reached Discord.
fn marks(stream: bool, answer: Scripted, text: &str) -> (usize, usize, bool, bool) {
    let bot = Bot::start(json!({"discord": {"streamReplies": stream}}));
    bot.model.fallback(answer);
    bot.discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> when is the market?"));
    let answered = bot.discord.wait_until(30, |w| {
        w.sent_in(GENERAL)
            .iter()
            .any(|b| b["content"].as_str() == Some(text))
    });
    assert!(answered, "no answer:\n{}", bot.log());
    let sent = bot.discord.send_times(GENERAL)[0];
    // Another call may still be under way (a memory pass): each ends in a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (mut asked, mut done) = (bot.model.asked_at(), bot.model.answered_at());
    while done.len() < asked.len() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        (asked, done) = (bot.model.asked_at(), bot.model.answered_at());
    }
    let in_order = asked.first().zip(done.first()).is_some_and(|(a, d)| a <= d);
    let done_before_sent = done.iter().any(|d| *d <= sent);
    (asked.len(), done.len(), in_order, done_before_sent)
}

#[test]
fn each_answer_is_marked_when_asked_and_when_its_last_byte_left_before_the_message() {
    let text = "On Saturday, by the harbour.";
    for (stream, answer) in [
        (false, Scripted::text(text)),
        (true, Scripted::streamed(text, 8, Duration::from_millis(5))),
    ] {
        let (asked, done, in_order, before) = marks(stream, answer, text);
        assert!(asked >= 1, "streamed {stream}: no request marked");
        assert_eq!(
            done, asked,
            "streamed {stream}: an answer's end was not marked"
        );
        assert!(
            in_order,
            "streamed {stream}: the answer ended before it was asked"
        );
        assert!(
            before,
            "streamed {stream}: the model finished after the message arrived"
        );
    }
}
