//! Issue 35, servers and signals: what `ambient run` serves and how it
//! stops. A FIFO swapped in for the settings file does not wedge live
//! reloads; SIGTERM ends the process whatever the gateway is doing; the
//! dashboard's half-sent requests are closed and never starve the bot.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ambient::journal::{Entry, Filter, Kind};
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, FakeDiscord, GENERAL};
use crate::support::model_server::Scripted;

/// Polls the bot's journal (for up to `secs`) until an entry of `kind` satisfies `found`.
fn wait_entry(bot: &Bot, kind: Kind, secs: u64, found: impl Fn(&Entry) -> bool) -> Option<Entry> {
    let store = bot.store();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        let entries = store
            .journal_query(&Filter {
                kinds: vec![kind],
                ..Default::default()
            })
            .unwrap();
        if let Some(e) = entries.into_iter().find(|e| found(e)) {
            return Some(e);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Makes a FIFO at `path` (nobody ever opens it for writing).
fn mkfifo(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path for the length of the call.
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(made, 0, "mkfifo {}", path.display());
}

/// The settings file and a FIFO renamed over each other as fast as a
/// thread can while SIGHUPs ask for reloads: some reload sees a plain file
/// and then opens the FIFO (3 times in 10 in the issue), which blocked for
/// ever — no reload after it, and no stop. Now the FIFO is refused by name,
/// a good file afterwards is applied, and SIGTERM stops the bot.
#[test]
fn a_fifo_swapped_in_for_the_settings_file_is_refused_and_reloads_go_on() {
    let mut bot = Bot::start(json!({}));
    let path = bot.home.path().join("settings.json");
    let good = std::fs::read_to_string(&path).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, path) = (stop.clone(), path.clone());
        let (fifo, file) = (path.with_extension("fifo"), path.with_extension("tmp"));
        std::thread::spawn(move || {
            let mut flips = 0u64;
            // Ends on the plain file, so the path is a file once it stops.
            while !stop.load(Ordering::Relaxed) {
                mkfifo(&fifo);
                std::fs::rename(&fifo, &path).unwrap();
                std::fs::write(&file, &good).unwrap();
                std::fs::rename(&file, &path).unwrap();
                flips += 1;
            }
            flips
        })
    };
    for _ in 0..60 {
        bot.signal("HUP");
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 100, "only {flips} swaps");

    let refused = wait_entry(&bot, Kind::Settings, 10, |e| {
        e.summary.contains("not applied") && e.reason.contains("a FIFO (named pipe)")
    });
    assert!(
        refused.is_some(),
        "no reload refused the FIFO by name:\n{}",
        bot.log()
    );
    bot.home
        .edit_settings(json!({"initiative": {"text": {"eagerness": 42}}}));
    bot.signal("HUP");
    let applied = wait_entry(&bot, Kind::Settings, 30, |e| {
        e.summary.starts_with("settings reloaded") && e.reason.contains("eagerness")
    });
    assert!(
        applied.is_some(),
        "the good file was not applied after the FIFO:\n{}",
        bot.log()
    );
    bot.signal("TERM");
    let exit = bot.wait_exit(Duration::from_secs(10));
    assert!(
        exit.is_some_and(|s| s.success()),
        "SIGTERM did not stop the bot after the FIFO ({exit:?}):\n{}",
        bot.log()
    );
}

/// Sends SIGTERM and waits (up to a generous 10 s) for the process to end;
/// prints how long it took (the issue asks for 2 s: measured, not asserted).
fn terminate(bot: &mut Bot, state: &str) {
    bot.signal("TERM");
    let asked = Instant::now();
    let exit = bot.wait_exit(Duration::from_secs(10));
    eprintln!("{state}: ended {:?} after SIGTERM", asked.elapsed());
    assert!(
        exit.is_some_and(|s| s.success()),
        "{state}: SIGTERM did not end the bot cleanly within 10 s ({exit:?}):\n{}",
        bot.log()
    );
}

/// The journal's last word on a bot that ran: "stopped".
fn assert_stopped(bot: &Bot) {
    let stopped = wait_entry(bot, Kind::System, 1, |e| e.summary == "stopped");
    assert!(stopped.is_some(), "no 'stopped' in the journal");
}

/// Still logging in, against a Discord that took the connection and never
/// answers: the stop was not listened for yet, so SIGTERM killed the
/// process outright instead of ending it.
#[test]
fn sigterm_ends_a_bot_still_logging_in() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let (taken, asked) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Each connection is held open and never answered.
        for conn in silent.incoming() {
            let held = conn.unwrap();
            if taken.send(held).is_err() {
                return;
            }
        }
    });
    let mut bot = Bot::spawn(
        FakeDiscord::start(),
        json!({"discord": {"apiBaseUrl": url}}),
        &[],
        "ambient=debug,serenity=warn",
    );
    let _held = asked
        .recv_timeout(Duration::from_secs(20))
        .expect("the bot did not try to log in");
    terminate(&mut bot, "logging in");
}

/// A gateway that is down from the start: serenity restarts the shard
/// every 5 s and between two tries no shard is registered, so its
/// `shutdown_all` did nothing and SIGTERM was ignored (40 s in the issue,
/// for ever here).
#[test]
fn sigterm_ends_a_bot_whose_gateway_is_down() {
    let discord = FakeDiscord::start();
    discord.gateway_down();
    let mut bot = Bot::spawn(discord, json!({}), &[], "ambient=debug,serenity=warn");
    assert!(
        bot.discord.wait_until(30, |w| w.gateway_attempts >= 3),
        "the bot did not try the gateway:\n{}",
        bot.log()
    );
    terminate(&mut bot, "gateway down");
    assert_stopped(&bot);
}

/// Identified, with an answer in flight whose model never answers: the
/// stop does not wait for it (the bot records its words before sending
/// them, so a cut answer is never half-said).
#[test]
fn sigterm_ends_a_bot_with_an_answer_in_flight() {
    let mut bot = Bot::start(json!({}));
    bot.model.fallback(Scripted::Hang);
    bot.discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> what do you think?"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while bot.model.requests().is_empty() {
        assert!(Instant::now() < deadline, "no model call:\n{}", bot.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    terminate(&mut bot, "answer in flight");
    assert_stopped(&bot);
}
