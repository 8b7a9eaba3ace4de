//! Issue 35, servers and signals: what `ambient run` serves and how it
//! stops. A FIFO swapped in for the settings file does not wedge live
//! reloads; SIGTERM ends the process whatever the gateway is doing; the
//! dashboard's half-sent requests are closed and never starve the bot.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ambient::dashboard;
use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, FakeDiscord, GENERAL};
use crate::support::model_server::Scripted;

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

    let refused = bot.find_entry(Kind::Settings, Duration::from_secs(10), |e| {
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
    let applied = bot.find_entry(Kind::Settings, Duration::from_secs(30), |e| {
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
/// prints how long it took. The 2 s the issue asks for is not asserted here,
/// where the machine's load decides: the stop sequence's deadlines (1.5 s in
/// all, the gateway's close within 1 s beside the loops') are tested on
/// tokio's paused clock, in `discord::tests`.
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
    let stopped = bot.find_entry(Kind::System, Duration::from_secs(1), |e| {
        e.summary == "stopped"
    });
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

/// Connected, then the gateway went down: the shard waits at the gate
/// between two attempts, with no connection to close. That waiting for it
/// does not spend the loops' time (none is cut short) depends on how busy
/// the machine is, here: `discord::tests` shows it on tokio's paused clock.
#[test]
fn sigterm_ends_a_bot_backing_off() {
    let mut bot = Bot::start(json!({}));
    let before = bot.discord.with(|w| w.gateway_attempts);
    bot.discord.gateway_down();
    assert!(
        bot.discord
            .wait_until(30, |w| w.gateway_attempts >= before + 3),
        "the bot did not try the gateway again:\n{}",
        bot.log()
    );
    terminate(&mut bot, "backing off");
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

/// Limits `pid`'s open files to `n` (soft and hard), as on a small host.
fn limit_open_files(pid: u32, n: u64) {
    let limit = libc::rlimit {
        rlim_cur: n,
        rlim_max: n,
    };
    // SAFETY: `limit` outlives the call; the old limit is not asked for (null).
    let set = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &limit,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(set, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// Reads `conn` until the server closes it or `deadline` passes; the bytes
/// read, or None if it was still open at the deadline.
fn until_closed(mut conn: &TcpStream, deadline: Instant) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        conn.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match conn.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(got),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None;
            }
            Err(e) => panic!("reading from the dashboard: {e}"),
        }
    }
}

/// Where `ambient run` said its loopback dashboard is.
fn dashboard_port(bot: &Bot) -> u16 {
    let log = bot.log();
    regex::Regex::new(r"dashboard on http://127\.0\.0\.1:(\d+)/")
        .unwrap()
        .captures(&log)
        .unwrap_or_else(|| panic!("ambient run did not say where the dashboard is:\n{log}"))[1]
        .parse()
        .unwrap()
}

/// A browser's connection to the dashboard, kept alive after its request
/// was answered (the icon, a short and fixed answer).
fn kept_alive(port: u16) -> TcpStream {
    let kept = TcpStream::connect(("127.0.0.1", port)).unwrap();
    (&kept)
        .write_all(b"GET /assets/icon.svg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&answer).contains("</svg>") {
        let n = (&kept).read(&mut buf).unwrap();
        assert!(n > 0, "the icon was not served");
        answer.extend_from_slice(&buf[..n]);
    }
    kept
}

/// Up to `n` connections to the dashboard that each send half a request
/// head and then nothing; fewer if the dashboard's queue has no room for
/// one more (its connect times out).
fn half_sent(port: u16, n: usize) -> Vec<TcpStream> {
    let at: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    (0..n)
        .map_while(|_| {
            let mut c = TcpStream::connect_timeout(&at, Duration::from_secs(1)).ok()?;
            // Harmless: a connection the dashboard closed at once (over its cap) refuses the write.
            let _ = c.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
            Some(c)
        })
        .collect()
}

/// Slowloris against the dashboard of a running bot whose process may open
/// 128 files: up to 400 connections each send half a request head and then
/// nothing. They took every file the process could open (1,100 in the
/// issue), so the answer's model call could not connect; and they stayed
/// open for ever. Now the dashboard keeps at most a quarter of the limit
/// open (the rest are closed at once), a mention is answered, every
/// half-sent request (and an idle kept-alive connection) is closed within
/// the head timeout, a body that stops coming gets 408, and the dashboard
/// serves pages again.
#[test]
fn half_sent_requests_to_the_dashboard_neither_starve_the_bot_nor_stay_open() {
    let bot = Bot::start(json!({"dashboard": {"enabled": true, "bind": "127.0.0.1:0"}}));
    bot.model.fallback(Scripted::text("Still answering."));
    let port = dashboard_port(&bot);
    limit_open_files(bot.pid(), 128);
    let kept = kept_alive(port);
    let opened = Instant::now();
    let flood = half_sent(port, 400);

    let asked = bot
        .discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> are you still there?"));
    let answered = bot.discord.wait_until(30, |w| {
        w.sent_in(GENERAL).iter().any(|b| {
            b["message_reference"]["message_id"] == json!(asked.to_string())
                && b["content"] == "Still answering."
        })
    });
    assert!(
        answered,
        "the mention was not answered with the dashboard flooded:\n{}",
        bot.log()
    );

    let deadline = opened + dashboard::HEAD_WITHIN + Duration::from_secs(5);
    assert!(
        until_closed(&kept, deadline).is_some(),
        "an idle kept-alive connection stayed open"
    );
    let still_open = flood
        .iter()
        .filter(|c| until_closed(c, deadline).is_none())
        .count();
    assert_eq!(
        still_open,
        0,
        "of {} half-sent requests, some still open {:?} after they were sent",
        flood.len(),
        opened.elapsed()
    );

    let slow_body = TcpStream::connect(("127.0.0.1", port)).unwrap();
    (&slow_body)
        .write_all(
            b"POST /memory/forget HTTP/1.1\r\nHost: 127.0.0.1\r\n\
              Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nid=1",
        )
        .unwrap();
    let patience = Instant::now() + dashboard::BODY_WITHIN + Duration::from_secs(5);
    let answer = until_closed(&slow_body, patience)
        .expect("a body that stopped coming was never given up on");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.ends_with("the request's body did not arrive within 10 s"),
        "{answer}"
    );

    let page = TcpStream::connect(("127.0.0.1", port)).unwrap();
    (&page)
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let page = until_closed(&page, Instant::now() + Duration::from_secs(10))
        .expect("the dashboard did not answer a page");
    let page = String::from_utf8_lossy(&page);
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
}
