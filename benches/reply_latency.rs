//! How long a person waits for an answer that the model writes in one piece:
//! the real `ambient run` against the tests' fake Discord and a scripted
//! model that streams each answer as a single delta at once. For each
//! question, the time from the fake Discord announcing it on the gateway to
//! the bot's first create request arriving there — the model's HTTP, the
//! prompt, the store and the send included, so the figures are the whole
//! wait, not only speech's part of it.
//!
//! Three cases, one bot each: a short answer streamed (one message, posted
//! when the stream ends), a longer one streamed (worth showing at once), and
//! the short one with `discord.streamReplies` off (no streaming machinery at
//! all: the floor the streamed cases are compared with).
//!
//! Run:
//!
//! ```sh
//! cargo bench --bench reply_latency -- --questions 40
//! ```
//!
//! `AMBIENT_BIN=path` runs another build in place of cargo's, so two builds
//! can be compared turn about (see `benches/load.rs`).

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::bot::Bot;
use support::fake_discord::{ALICE, BOT, GENERAL};
use support::model_server::Scripted;

const SHORT: &str = "Tuesday works for me.";

/// About 400 characters in sentences: worth showing as soon as it arrives.
fn long() -> String {
    "The hall is free on Tuesday from six, and the key is with Sam. ".repeat(6)
}

fn args() -> usize {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.iter().position(|a| a == "--questions") {
        Some(i) => argv
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("reply_latency: --questions needs a number");
                std::process::exit(2)
            }),
        None => 40,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Asks `questions` questions one after another; each answer's wait.
fn waits(settings: Value, answer: &str, questions: usize) -> Vec<Duration> {
    let bot = Bot::start(settings);
    // The whole answer in one delta, at once.
    bot.model
        .fallback(Scripted::streamed(answer, 100_000, Duration::ZERO));
    let mut waits = Vec::with_capacity(questions);
    for i in 0..questions {
        let asked = bot
            .discord
            .say(GENERAL, ALICE, &format!("<@{BOT}> question {i}?"));
        let answered = bot.discord.wait_until(30, |w| w.sent_in(GENERAL).len() > i);
        assert!(answered, "question {i} was not answered:\n{}", bot.log());
        let wait = bot.discord.with(|w| {
            let creates: Vec<Instant> = w
                .requests
                .iter()
                .zip(&w.request_times)
                .filter(|(r, _)| {
                    r.method == "POST" && r.path.ends_with(&format!("/channels/{GENERAL}/messages"))
                })
                .map(|(_, at)| *at)
                .collect();
            creates[i].saturating_duration_since(w.said_at[&asked])
        });
        waits.push(wait);
        // Let a streamed answer's last edit, if any, pass before the next question.
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(bot.stop().success());
    waits
}

fn report(case: &str, mut waits: Vec<Duration>) {
    waits.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{case:<40} n={:<3} p50 {:>6.1} ms   p90 {:>6.1} ms   max {:>6.1} ms",
        waits.len(),
        ms(percentile(&waits, 0.5)),
        ms(percentile(&waits, 0.9)),
        ms(*waits.last().unwrap_or(&Duration::ZERO)),
    );
}

fn main() {
    let questions = args();
    let room = json!({"permissions": {"replies": {"maxMessagesPerHour": 1000}}});
    let mut off = room.clone();
    off["discord"] = json!({"streamReplies": false});
    report(
        "short answer, streamed",
        waits(room.clone(), SHORT, questions),
    );
    report("longer answer, streamed", waits(room, &long(), questions));
    report(
        "short answer, streamReplies off",
        waits(off, SHORT, questions),
    );
}
