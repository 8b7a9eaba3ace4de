//! Killing the process mid-stream loses nothing it acknowledged, and
//! nothing Discord still has.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use ambient::ids::MessageId;
use ambient::store::Store;
use ambient::vocab::journal::Kind;
use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, BOT, GENERAL};
use crate::support::home::Home;
use crate::support::model_server::Scripted;

#[test]
fn sigkill_mid_stream_loses_no_acknowledged_message() {
    const SENT: usize = 3000;
    const KILL_AFTER: usize = 200;
    let home = Home::new(json!({}));
    let mut child = home
        .command(&["console", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..SENT {
            // Once the process is dead, writes fail: that is expected.
            if writeln!(stdin, "line {i}").is_err() {
                break;
            }
        }
    });

    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut acked: HashMap<MessageId, usize> = HashMap::new();
    let mut killed = false;
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["event"] == "stored" {
            let id = MessageId(v["id"].as_str().unwrap().parse().unwrap());
            acked.insert(id, acked.len());
            if acked.len() == KILL_AFTER && !killed {
                child.kill().unwrap(); // SIGKILL
                killed = true;
            }
        }
    }
    child.wait().unwrap();
    writer.join().unwrap();
    assert!(killed, "the stream ended before the kill");
    assert!(
        acked.len() < SENT,
        "the kill must land mid-stream (acked {})",
        acked.len()
    );

    let store = Store::open(&home.data_dir()).expect("the database opens cleanly after SIGKILL");
    for (id, n) in &acked {
        let row = store
            .messages()
            .message(*id)
            .unwrap()
            .unwrap_or_else(|| panic!("acknowledged message #{n} ({id}) was lost"));
        assert!(row.content.starts_with("line "), "{row:?}");
    }
    let ok: String = rusqlite::Connection::open(home.data_dir().join("ambient.db"))
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

/// From Discord, chatter nobody addressed is committed in groups, up to
/// 100 ms after it arrived (`store::group_commit`): a crash may lose the
/// last of it. Discord still has it, and the backfill after the restart
/// stores every message; the question answered before the crash is not
/// answered again.
#[test]
fn chatter_a_crash_lost_is_read_again_from_discord() {
    let (mut bot, _) = answered_once();
    let first = bot.discord.say(GENERAL, BOB, "chatter begins");
    assert!(bot.wait_stored(first), "{}", bot.log());
    // The bot is storing chatter: killed right after these are sent, it has
    // some in a group not yet on disk, or not yet read from the gateway.
    let chatter: Vec<u64> = (0..40)
        .map(|i| bot.discord.say(GENERAL, BOB, &format!("chatter {i}")))
        .collect();
    bot.crash_and_restart();

    let store = bot.store();
    let all_stored = || {
        chatter.iter().all(|id| {
            store
                .messages()
                .message(ambient::ids::MessageId(*id))
                .unwrap()
                .is_some()
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !all_stored() {
        assert!(
            std::time::Instant::now() < deadline,
            "chatter lost in the crash was not read again:\n{}",
            bot.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Caught up past the question: a second answer would be on its way by now.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        bot.discord.with(|w| w.sent_in(GENERAL).len()),
        1,
        "the question was answered once"
    );
}

/// Serenity runs each gateway event in a task of its own and tokio runs the
/// newest first, so a burst is stored out of order and a crash can keep a
/// message while losing an older one. Here the store holds the newer one
/// and not the older: the catch-up after a new session reads from before
/// the newest stored message and finds the older one, counting only it.
#[test]
fn an_older_message_lost_while_a_newer_one_was_kept_is_caught_up_on() {
    let bot = Bot::start(json!({}));
    let first = bot.discord.say(GENERAL, BOB, "morning");
    assert!(bot.wait_stored(first), "{}", bot.log());
    let lost = bot
        .discord
        .say_unseen(GENERAL, ALICE, "the one the crash lost");
    let kept = bot.discord.say(GENERAL, BOB, "the one it kept");
    assert!(bot.wait_stored(kept), "{}", bot.log());

    let caught = catch_up(&bot);
    assert_eq!(
        caught.summary,
        "caught up on 1 message(s) said while I was away"
    );
    let store = bot.store();
    let row = store
        .messages()
        .message(ambient::ids::MessageId(lost))
        .unwrap()
        .expect("the older message is stored");
    assert_eq!(row.content, "the one the crash lost");
}

/// A channel busier in the margin than two pages read again has the rest
/// of its margin skipped: what is new after the newest stored message still
/// gets its page. (The fake's ids share one snowflake time, so its whole
/// history is inside the margin.)
#[test]
fn a_busy_margin_does_not_take_the_page_of_what_is_new() {
    let bot = Bot::start(json!({}));
    let said: Vec<u64> = (0..310)
        .map(|i| bot.discord.say(GENERAL, BOB, &format!("line {i}")))
        .collect();
    assert!(said.iter().all(|id| bot.wait_stored(*id)), "{}", bot.log());
    let missed = [
        bot.discord.say_unseen(GENERAL, ALICE, "said while away"),
        bot.discord.say_unseen(GENERAL, BOB, "and this too"),
    ];
    let caught = catch_up(&bot);
    assert_eq!(
        caught.summary,
        "caught up on 2 message(s) said while I was away"
    );
    let store = bot.store();
    for id in missed {
        assert!(
            store.messages().message(MessageId(id)).unwrap().is_some(),
            "{id} is stored"
        );
    }
}

/// A question answered before the gap is read again in the margin, long
/// enough ago that a missed one would hear "I was away": it is not new, so
/// it is neither answered again nor told the bot was away.
#[test]
fn a_question_answered_before_the_gap_is_not_told_the_bot_was_away() {
    let (bot, question) = answered_once();
    bot.discord.backdate(question, 60);
    bot.discord.say_unseen(GENERAL, BOB, "said while away");
    let caught = catch_up(&bot);
    assert_eq!(
        caught.summary,
        "caught up on 1 message(s) said while I was away"
    );
    assert_eq!(
        caught.reason,
        "0 addressed me recently enough to answer; 0 too long ago (discord.answerMissedWithinMinutes)"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let sent = bot.discord.with(|w| w.sent_in(GENERAL));
    assert_eq!(sent.len(), 1, "only the first answer: {sent:#?}");
    assert_eq!(bot.model.requests().len(), 1);
}

/// Drops the gateway session, Discord refusing to resume, and waits for
/// the catch-up's journal line.
fn catch_up(bot: &Bot) -> ambient::vocab::journal::Entry {
    bot.discord.drop_session();
    bot.wait_entry(Kind::System, |e| e.summary.starts_with("caught up on"))
}

/// A bot that has answered one question in #general ("Here."); the
/// question's id.
fn answered_once() -> (Bot, u64) {
    let bot = Bot::start(json!({}));
    bot.model.fallback(Scripted::text("Here."));
    let question = bot
        .discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> are you there?"));
    assert!(
        bot.discord
            .wait_until(15, |w| w.sent_in(GENERAL).len() == 1),
        "{}",
        bot.log()
    );
    (bot, question)
}
