//! How long a person waits for an answer: the real `ambient run` against the
//! tests' fake Discord and a scripted model answering at once. For each
//! question, timed from the fake Discord announcing it on the gateway:
//!
//! - **typing**: the typing indicator's request arriving at Discord;
//! - **model asked**: the model's request arriving at the model server (the
//!   bot has decided to answer and built the prompt);
//! - **first send**: the answer's first message created (what a person sees first);
//! - **final text**: the request that makes the answer say all of it — the one
//!   create of an answer posted whole, or a streamed answer's last edit;
//! - **last byte → final**: from the model server handing over the answer's
//!   last byte (`ModelServer::answered_at`) to that request arriving: the
//!   bot's own part of the wait once the model is done (reading the answer,
//!   the store, speech, the send).
//!
//! Each p50 and p99 (and the worst), for five cases, one bot each: a short
//! answer and a longer one streamed in one piece, the longer one streamed in
//! 24-character pieces 15 ms apart (shown while written, its last edit made
//! as soon as the model is done), and
//! the short and the longer one with `discord.streamReplies` off. The last
//! line compares the median wait for the short answer's message with
//! streaming on and off.
//!
//! Run (see the README's "Performance"):
//!
//! ```sh
//! cargo bench --bench reply_latency -- --questions 40
//! ```
//!
//! `--shaped` sends Discord-shaped payloads (`discord_shapes`).
//! `AMBIENT_BIN=path` runs another build in place of cargo's, so two builds
//! can be compared turn about (see `benches/load.rs`). The bot logs at
//! `warn`, as the load harness's does: its debug lines would be timed too.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::bot::Bot;
use support::fake_discord::{ALICE, BOT, FakeDiscord, GENERAL};
use support::model_server::Scripted;

const SHORT: &str = "Tuesday works for me.";

/// About 400 characters in sentences: worth showing as soon as it arrives.
fn long() -> String {
    "The hall is free on Tuesday from six, and the key is with Sam. "
        .repeat(6)
        .trim_end()
        .to_string()
}

struct Args {
    questions: usize,
    shaped: bool,
}

fn args() -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut a = Args {
        questions: 40,
        shaped: false,
    };
    let mut i = 0;
    while i < argv.len() {
        match argv[i].as_str() {
            "--questions" => {
                a.questions = argv
                    .get(i + 1)
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| {
                        eprintln!("reply_latency: --questions needs a number");
                        std::process::exit(2)
                    });
                i += 1;
            }
            "--shaped" => a.shaped = true,
            "--bench" => {}
            other => {
                eprintln!("reply_latency: unknown flag {other}; flags: --questions N --shaped");
                std::process::exit(2)
            }
        }
        i += 1;
    }
    a
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// One question's waits, each from the question's announcement.
#[derive(Default)]
struct Waits {
    typing: Vec<Duration>,
    asked: Vec<Duration>,
    first: Vec<Duration>,
    last: Vec<Duration>,
    /// From the model's last byte to the final text.
    after_model: Vec<Duration>,
}

/// One answer's times, as the fake Discord and the model server saw them.
struct Timed {
    typing: Duration,
    asked: Duration,
    first: Duration,
    last: Duration,
    after_model: Duration,
}

/// One answer's times, each since `asked` (the question's id) was announced.
fn timed(bot: &Bot, asked: u64, answer: &str) -> Option<Timed> {
    let ends = bot.model.answered_at();
    let requests = bot.model.asked_at();
    bot.discord.with(|w| {
        let at = w.said_at[&asked];
        let channel = format!("/channels/{GENERAL}/");
        let after: Vec<_> = w
            .requests
            .iter()
            .zip(&w.request_times)
            .filter(|(r, t)| **t >= at && r.path.starts_with(&channel))
            .collect();
        let typing = after
            .iter()
            .find(|(r, _)| r.method == "POST" && r.path.ends_with("/typing"))?;
        let first = after
            .iter()
            .find(|(r, _)| r.method == "POST" && r.path.ends_with("/messages"))?;
        let last = after.iter().find(|(r, _)| {
            matches!(r.method.as_str(), "POST" | "PATCH")
                && r.body["content"].as_str().map(str::trim) == Some(answer)
        })?;
        let model_done = ends.iter().filter(|e| **e >= at && *e <= last.1).max()?;
        let model_asked = requests.iter().find(|r| **r >= at)?;
        Some(Timed {
            typing: *typing.1 - at,
            asked: *model_asked - at,
            first: *first.1 - at,
            last: *last.1 - at,
            after_model: *last.1 - *model_done,
        })
    })
}

/// Asks `questions` questions one after another, each once the last is
/// answered in full; their waits.
fn waits(settings: Value, model: Scripted, answer: &str, a: &Args) -> Waits {
    let discord = FakeDiscord::start();
    discord.with(|w| w.shaped = a.shaped);
    let bot = Bot::start_on(discord, settings, &[], "warn");
    bot.model.fallback(model);
    let mut out = Waits::default();
    for i in 0..a.questions {
        let asked = bot
            .discord
            .say(GENERAL, ALICE, &format!("<@{BOT}> question {i}?"));
        let mut found = None;
        let deadline = Instant::now() + Duration::from_secs(30);
        while found.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            found = timed(&bot, asked, answer);
        }
        let Some(t) = found else {
            panic!("question {i} was not answered in full:\n{}", bot.log());
        };
        out.typing.push(t.typing);
        out.asked.push(t.asked);
        out.first.push(t.first);
        out.last.push(t.last);
        out.after_model.push(t.after_model);
    }
    assert!(bot.stop().success());
    out
}

fn report(case: &str, mut w: Waits) -> Duration {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    // Which question waited longest once the model was done (the first is the bot's first send).
    let slowest = (0..w.after_model.len())
        .max_by_key(|i| w.after_model[*i])
        .unwrap_or(0);
    let line = |v: &mut Vec<Duration>| {
        v.sort();
        format!(
            "{:>5.1} {:>5.1} {:>5.1}",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.99)),
            ms(*v.last().unwrap_or(&Duration::ZERO))
        )
    };
    println!(
        "{case:<34} {:>3} | {} | {} | {} | {} | {} (slowest: question {slowest})",
        w.first.len(),
        line(&mut w.typing),
        line(&mut w.asked),
        line(&mut w.first),
        line(&mut w.last),
        line(&mut w.after_model),
    );
    percentile(&w.first, 0.5)
}

fn main() {
    let a = args();
    let room = json!({"permissions": {"replies": {"maxMessagesPerHour": 1000}}});
    let mut off = room.clone();
    off["discord"] = json!({"streamReplies": false});
    let (short, long) = (SHORT.to_string(), long());
    let at_once = |text: &str| Scripted::streamed(text, 100_000, Duration::ZERO);
    println!(
        "payloads: {}; times in ms from the question's announcement; p50 p99 max",
        if a.shaped {
            "Discord-shaped"
        } else {
            "the tests' own"
        }
    );
    println!(
        "{:<34} {:>3} | {:^17} | {:^17} | {:^17} | {:^17} | {:^17}",
        "case", "n", "typing", "model asked", "first send", "final text", "model done → final"
    );
    let on = report(
        "short answer, streamed",
        waits(room.clone(), at_once(&short), &short, &a),
    );
    report(
        "longer answer, streamed at once",
        waits(room.clone(), at_once(&long), &long, &a),
    );
    report(
        "longer answer, streamed in pieces",
        waits(
            room,
            Scripted::streamed(&long, 24, Duration::from_millis(15)),
            &long,
            &a,
        ),
    );
    let floor = report(
        "short answer, streamReplies off",
        waits(off.clone(), at_once(&short), &short, &a),
    );
    report(
        "longer answer, streamReplies off",
        waits(off, at_once(&long), &long, &a),
    );
    println!(
        "streaming on − off, median mention → message: {:+.1} ms",
        (on.as_secs_f64() - floor.as_secs_f64()) * 1000.0
    );
}
