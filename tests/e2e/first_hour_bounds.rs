//! The first hour, reviewed (issue 35): what the earlier fixes for the
//! console, the CLI's output and the dashboard still left — a line that
//! never ends held whole in memory, `/ambient why` frozen behind a model
//! that does not answer, `/wait` saying nothing about a gate, the
//! dashboard's counts and texts not saying what happened, and a dashboard
//! whose slots one client could keep.

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use ambient::attention::Addressed;
use ambient::dashboard::{self, Site};
use ambient::ids::UserId;
use ambient::impulses::NewTask;
use ambient::store::messages::Source;
use ambient::vocab::journal::Kind;
use reqwest::StatusCode;
use serde_json::json;

use crate::conversation::{model_env, with_env};
use crate::first_hour_output::{TextConsole, id_after};
use crate::support::home::{Home, events_of, notices};
use crate::support::model_server::{ModelServer, Scripted};
use crate::support::world::{self, GENERAL, World};

fn home() -> Home {
    Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}))
}

const MB: usize = 1024 * 1024;

/// The peak resident memory (KiB) of `pid` so far, as `VmHWM` shows it.
fn high_water_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A line that goes on for 200 MB before it ends, piped into the console:
/// its first 64 KiB are read and the rest goes by without being held (it
/// was read whole to see whether it was only line endings: 620 MB resident
/// for a 300 MB line), and the line after it is read as usual.
#[test]
fn a_line_of_hundreds_of_megabytes_goes_by_in_bounded_memory() {
    let home = home();
    let mut child = home
        .command(&["console", "--json", "--user", "ada"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let block = vec![b'a'; 64 * 1024];
        for _ in 0..(200 * MB / block.len()) {
            stdin.write_all(&block).unwrap();
        }
        stdin.write_all(b"\nafter the long one\n").unwrap();
    });
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = high_water_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer.join().unwrap();
    let text = reader.join().unwrap();
    assert!(status.success(), "{text}");
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let notices = notices(&events);
    assert!(
        notices.contains(&"line 1 is longer than 64 KiB: only its first 65536 characters are read"),
        "{notices:#?}"
    );
    assert_eq!(events_of(&events, "stored").len(), 2, "{notices:#?}");
    let store = ambient::store::Store::open(&home.data_dir()).unwrap();
    let stored = store
        .messages()
        .recent_messages(ambient::console::channel_id("general"), 10)
        .unwrap();
    let texts: Vec<&str> = stored.iter().map(|m| m.content.as_str()).collect();
    assert!(texts.contains(&"after the long one"), "{:?}", texts.len());
    eprintln!("peak resident memory: {} MiB", peak / 1024);
    assert!(
        peak < 120 * 1024,
        "the console held {} MiB for a 200 MB line",
        peak / 1024
    );
}

/// Each line is acknowledged (`stored`, its id) before anything the bot
/// does about it is printed: the greeting reflex's wave came, now and then,
/// before the line's own acknowledgement, for the line was handed to the
/// bot before it was acknowledged. Many lines, on several worker threads,
/// each waved at.
#[test]
fn a_line_is_acknowledged_before_the_bot_answers_it() {
    let home = home();
    let input = "@ambient hello\n".repeat(200);
    let (events, out) = home.console_with(&input, &[("TOKIO_WORKER_THREADS", "4")]);
    assert!(out.status.success());
    let mut acknowledged = std::collections::HashSet::new();
    let mut waves = 0;
    for e in &events {
        match e["event"].as_str() {
            Some("stored") => {
                acknowledged.insert(e["id"].as_str().unwrap().to_string());
            }
            Some("reaction") => {
                waves += 1;
                let about = e["message"].as_str().unwrap();
                assert!(
                    acknowledged.contains(about),
                    "the wave at {about} came before its line's acknowledgement"
                );
            }
            _ => {}
        }
    }
    assert!(waves > 0, "{events:#?}");
}

/// A model that never answers keeps a mention's answer waiting (a minute
/// a try). `/ambient why` about that mention and `/journal` waited for it
/// without limit, and Ctrl-C was not heard meanwhile: now each answers
/// within seconds with what is written down, saying that a decision may
/// still be in the making, and Ctrl-C ends the console at once.
#[test]
fn why_and_journal_answer_while_a_model_keeps_the_bot_busy_and_ctrl_c_ends_it() {
    let server = ModelServer::start();
    server.fallback(Scripted::Hang);
    let home = home();
    let env = model_env(&server);
    let mut console = TextConsole::start(&home, &with_env(&env));
    console.send("@ambient what do you make of the eclipse tonight?");
    let printed = console.until(|l| l.starts_with("· stored as message "));
    let asked = id_after(printed.last().unwrap(), "stored as message ");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(Instant::now() < deadline, "the model was never asked");
        std::thread::sleep(Duration::from_millis(50));
    }

    let still = "· the bot is still at work (a model call or a garden cycle): a decision may \
                 still be in the making, and this is what is written down so far — ask again in a moment";
    let why = console.ask(&format!("/ambient why {asked}")).join("\n");
    assert!(
        why.contains(&format!("{still}\nWhat I made of that message:\n")),
        "{why}"
    );
    let journal = console.ask("/journal").join("\n");
    assert!(journal.contains(&format!("{still}\n")), "{journal}");
    assert!(journal.contains("→ executive:reply"), "{journal}");

    let interrupted = Instant::now();
    // SAFETY: kill only sends a signal to the console this test started.
    let sent = unsafe { libc::kill(console.child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(sent, 0);
    let ended = loop {
        if let Some(status) = console.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            interrupted.elapsed() < Duration::from_secs(20),
            "Ctrl-C did not end the console while the model kept it waiting"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(ended.success(), "{ended}");
    eprintln!("ended {:?} after Ctrl-C", interrupted.elapsed());
}

/// The `/wait` lines of `notices`: each look that posted nothing.
fn unposted<'a>(notices: &[&'a str]) -> Vec<&'a str> {
    notices
        .iter()
        .copied()
        .filter(|n| n.contains("nothing was posted"))
        .collect()
}

/// A newcomer who has opened no channel to the bot's own posts lets time
/// pass: every look stops at the pool gate, which the journal noted once,
/// when the bot started. `/wait` said nothing at all; now it says why
/// nothing was posted.
#[test]
fn a_wait_stopped_at_a_gate_says_which_and_why() {
    let home = home();
    let (events, out) = home.console("anyone around?\n/wait 3m\n");
    assert!(out.status.success());
    let notices = notices(&events);
    let said = unposted(&notices);
    assert_eq!(said.len(), 1, "{notices:#?}");
    assert!(
        said[0].contains(
            "nothing was posted: the initiative stopped at the pool gate — no channel is open to \
             unprompted posts (permissions.replies.discoveryChannelIds is empty)"
        ),
        "{said:#?}"
    );
}

/// The model's first decision names a channel that is not open, is refused
/// and tries again, and posts: the look posted. `/wait` said "nothing was
/// posted: rejected a decision" about it (the initiative's words for a
/// step, not for how a look ended); now it says nothing of that look — and
/// says the gate that stopped the looks after the post (nobody answered it).
#[test]
fn a_wait_whose_look_posted_after_a_refused_decision_says_only_what_ended_looks() {
    let server = ModelServer::start();
    server.push(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "nowhere", "text": "Anyone seen the comet?", "reason": "the room went idle"}),
    ));
    server.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "Anyone seen the comet?", "reason": "the room went idle"}),
    ));
    let home = home();
    let input = "/settings set permissions.replies.discoveryChannelIds #general\n\
                 /settings set initiative.text.eagerness 100\n\
                 anyone around?\n\
                 /wait 3m\n";
    let (events, out) = home.console_with(input, &with_env(&model_env(&server)));
    assert!(out.status.success());
    let posted: Vec<&str> = events_of(&events, "message")
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(posted, ["Anyone seen the comet?"]);
    let notices = notices(&events);
    let said = unposted(&notices);
    assert!(
        !said
            .iter()
            .any(|n| n.contains("refused") || n.contains("rejected")),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|n| n
                .contains("nothing was posted: the initiative stopped at the unanswered gate — ")),
        "{notices:#?}"
    );
}

// --- the dashboard ---------------------------------------------------------------------------

/// A dashboard served by `w`'s bot, and a client that follows no redirect.
struct Dashboard {
    served: dashboard::Served,
    http: reqwest::Client,
}

impl Dashboard {
    async fn of(w: &World) -> Self {
        let served = dashboard::start(
            Site::of_app(&w.app),
            "127.0.0.1:0".parse().unwrap(),
            &w.app.data_dir,
            false,
        )
        .await
        .unwrap();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Self { served, http }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.served.addr.port())
    }

    async fn get(&self, path: &str) -> (StatusCode, String) {
        let res = self.http.get(self.url(path)).send().await.unwrap();
        (res.status(), res.text().await.unwrap())
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        let res = self
            .http
            .post(self.url(path))
            .form(form)
            .send()
            .await
            .unwrap();
        (res.status(), res.text().await.unwrap())
    }

    /// The CSRF token of a page's form.
    async fn csrf(&self, page: &str) -> String {
        let (_, html) = self.get(page).await;
        regex::Regex::new(r#"name="csrf" value="([0-9a-f]{64})""#)
            .unwrap()
            .captures(&html)
            .unwrap_or_else(|| panic!("no CSRF token in {page}:\n{html}"))[1]
            .to_string()
    }
}

/// What the timeline shows as said, in order, newest first.
fn said_on(page: &str) -> Vec<String> {
    regex::Regex::new(r#"<div class="said text">([^<]*)</div>"#)
        .unwrap()
        .captures_iter(page)
        .map(|c| c[1].to_string())
        .collect()
}

/// The journal the Initiative page counts posts from cannot be read: the
/// page showed "0/6", as if the bot had its whole day's posts left; now it
/// says it cannot tell, and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initiative_page_cannot_tell_a_post_count_it_cannot_read() {
    let settings = world::settings();
    let cap = settings.initiative.text.max_posts_per_day;
    let w = World::start(settings).await;
    w.hear(GENERAL, "ada", "morning all", Source::Text);
    let d = Dashboard::of(&w).await;
    let (_, before) = d.get("/initiative").await;
    let none_yet = format!("<b>0/{cap}</b>posts in the last 24 h");
    assert!(before.contains(&none_yet), "{before}");
    w.break_table("journal");
    let (status, page) = d.get("/initiative").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(
        page.contains(&format!(
            "<b>cannot tell</b>posts in the last 24 h (of {cap}): store read failed: database error: no such table: journal"
        )),
        "{page}"
    );
    assert!(!page.contains(&none_yet), "{page}");
    d.served.stop().await;
}

/// A forget the store cannot read the fact for (its table unreadable) was
/// a 404 "it may have been forgotten already"; it is the 503 that says
/// nothing was changed and why. A forget-me the store cannot carry out said
/// "nothing was changed" twice, in the bot's voice to the person ("I could
/// not forget you"); it says the store's error once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forget_the_store_cannot_read_for_is_a_503_saying_nothing_was_changed() {
    let w = World::start(world::settings()).await;
    w.hear(GENERAL, "ada", "morning all", Source::Text);
    let fact = ambient::memory::manual(
        ambient::vocab::fact::Scope::guild(world::GUILD_A),
        ambient::vocab::fact::FactKind::Fact,
        None,
        "the wifi password is on the fridge",
        None,
        chrono::Utc::now(),
    );
    w.app.store().memory().insert_fact(&fact).unwrap();
    let d = Dashboard::of(&w).await;
    let csrf = d.csrf(&format!("/memory/forget?id={}", fact.id)).await;
    w.break_table("facts");

    let (status, body) = d
        .post("/memory/forget", &[("id", &fact.id), ("csrf", &csrf)])
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body.contains("The database could not read the memory just now; nothing was changed."),
        "{body}"
    );
    assert!(body.contains("no such table: facts"), "{body}");
    assert!(!body.contains("forgotten already"), "{body}");

    let (status, body) = d
        .post("/memory/forget-me", &[("user", "50"), ("csrf", &csrf)])
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body.contains("The database could not run forget-me just now; nothing was changed."),
        "{body}"
    );
    assert!(body.contains("no such table: facts"), "{body}");
    assert_eq!(body.matches("nothing was changed").count(), 1, "{body}");
    assert!(!body.contains("I could not forget you"), "{body}");

    w.mend_table("facts");
    assert!(
        w.app.store().memory().fact(&fact.id).unwrap().is_some(),
        "kept"
    );
    d.served.stop().await;
}

/// An ambient post is shown as the channel reads it — the stored message,
/// `@everyone` broken as it was sent — not the model's draft (which the
/// timeline showed, `@everyone` whole); and a reflex's post into another
/// channel shows what it said (it showed nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_shows_posts_as_they_were_sent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("announce.yaml"), ANNOUNCE).unwrap();
    let mut s = world::settings();
    s.reflexes.dir = dir.path().to_string_lossy().into_owned();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    let w = World::start(s).await;
    w.message(GENERAL, "ada", "version 2 is released", Addressed::No)
        .await;
    w.model.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "Big news @everyone: the comet is up tonight", "reason": "the room went idle"}),
    ));
    w.tick().await;
    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(
        said,
        [
            "ada says a release is out",
            "Big news @\u{200D}everyone: the comet is up tonight"
        ]
    );

    let d = Dashboard::of(&w).await;
    let (_, today) = d.get("/").await;
    assert_eq!(
        said_on(&today),
        [
            "Big news @\u{200D}everyone: the comet is up tonight",
            "ada says a release is out"
        ],
        "{today}"
    );
    let (_, initiative) = d.get("/initiative").await;
    assert_eq!(
        said_on(&initiative),
        ["Big news @\u{200D}everyone: the comet is up tonight"],
        "{initiative}"
    );
    d.served.stop().await;
}

const ANNOUNCE: &str = r##"name: announce
description: Releases are announced in the memes channel
level: 1
trigger:
  pattern: "(?i)\\breleased\\b"
pipeline:
  - action: reply
    channel: "#memes"
    message: "{{author}} says a release is out"
"##;

/// "Reminders and routines" counted every impulse entry — a task added, an
/// idea noted, a routine scheduled — as if each had said something; it
/// counts, and the timeline shows, the ones that did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_and_routines_are_the_ones_that_said_something() {
    let w = World::start(world::settings()).await;
    w.hear(GENERAL, "ada", "morning all", Source::Text);
    w.app
        .impulses
        .add_task(NewTask {
            guild: Some(world::GUILD_A),
            channel: Some(GENERAL),
            text: "remind ada to stretch".into(),
            due: "in 5m".into(),
            message: Some("stretch now".into()),
            context: "test".into(),
            created_by: "ada".into(),
            owner: Some(UserId(50)),
        })
        .unwrap();
    w.app
        .impulses
        .add_task(NewTask {
            guild: Some(world::GUILD_A),
            channel: Some(GENERAL),
            text: "water the plants".into(),
            due: "in 3h".into(),
            message: Some("the plants".into()),
            context: "test".into(),
            created_by: "ada".into(),
            owner: Some(UserId(50)),
        })
        .unwrap();
    w.clock.advance(chrono::Duration::minutes(5));
    assert_eq!(w.app.impulses.check().len(), 1, "the reminder");
    w.app.spine.drain().await;
    assert_eq!(w.said().len(), 1);
    assert!(
        w.journal(Kind::Impulse).len() >= 3,
        "two tasks added and one done: {:#?}",
        w.journal(Kind::Impulse)
    );

    let d = Dashboard::of(&w).await;
    let (_, today) = d.get("/").await;
    assert!(
        today.contains(r#"<div class="figure k-impulse"><b>1</b>reminders and routines</div>"#),
        "{today}"
    );
    assert!(!today.contains("task added"), "{today}");
    assert!(
        today.contains("did a task: remind ada to stretch"),
        "{today}"
    );
    let (_, every_impulse) = d.get("/?kind=impulse").await;
    assert!(
        every_impulse.contains("task added: water the plants"),
        "{every_impulse}"
    );
    d.served.stop().await;
}

// --- the dashboard's connections ---------------------------------------------------------------

/// Reads `conn` until the server closes it (or 10 s pass: None).
fn until_closed(mut conn: &std::net::TcpStream) -> Option<String> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(String::from_utf8_lossy(&got).into_owned());
            }
            Err(_) => return None,
        }
    }
}

/// A request whose head is over 16 KiB is refused with 431 and its
/// connection closed: hyper buffered up to 400 KiB of a head, so 256
/// connections could hold 100 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_over_16_kib_is_refused() {
    let w = World::start(world::settings()).await;
    let d = Dashboard::of(&w).await;
    let conn = std::net::TcpStream::connect(("127.0.0.1", d.served.addr.port())).unwrap();
    let pad = "a".repeat(20 * 1024);
    (&conn)
        .write_all(format!("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: {pad}\r\n\r\n").as_bytes())
        .unwrap();
    let answer = until_closed(&conn).expect("the connection was closed");
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    let (status, _) = d.get("/").await;
    assert_eq!(status, StatusCode::OK, "a head of a usual size is served");
    d.served.stop().await;
}

/// A POST that a dashboard refuses — for another host, or without its
/// token — whose body then stops coming: the body was read before the
/// request was let in, so the refusal came only as a 408 after 10 s;
/// now it is answered at once, saying the connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_is_answered_at_once_without_waiting_for_its_body() {
    let w = World::start(world::settings()).await;
    let slow_post = |host: &str| {
        format!(
            "POST /memory/forget HTTP/1.1\r\nHost: {host}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nid=1"
        )
    };
    let loopback = Dashboard::of(&w).await;
    let conn = std::net::TcpStream::connect(("127.0.0.1", loopback.served.addr.port())).unwrap();
    (&conn)
        .write_all(slow_post("evil.example").as_bytes())
        .unwrap();
    let answer = until_closed(&conn).expect("the connection was closed");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.to_lowercase().contains("connection: close"),
        "{answer}"
    );
    loopback.served.stop().await;

    let open = dashboard::start(
        Site::of_app(&w.app),
        "0.0.0.0:0".parse().unwrap(),
        &w.app.data_dir,
        false,
    )
    .await
    .unwrap();
    let conn = std::net::TcpStream::connect(("127.0.0.1", open.addr.port())).unwrap();
    (&conn)
        .write_all(slow_post("127.0.0.1").as_bytes())
        .unwrap();
    let answer = until_closed(&conn).expect("the connection was closed");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer.to_lowercase().contains("connection: close"),
        "{answer}"
    );
    open.stop().await;
}

/// Whether a request for the icon on `conn` is answered (the connection is
/// then kept open); false when the dashboard closed the connection instead.
fn served(mut conn: &std::net::TcpStream) -> bool {
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    if conn
        .write_all(b"GET /assets/icon.svg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("</svg>") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    got.starts_with(b"HTTP/1.1 200")
}

/// One client opens connections, each kept busy, until the dashboard closes
/// one at once: it could take every slot (256), so another client was shut
/// out; now one client keeps at most a quarter, and another is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_cannot_keep_every_connection() {
    let w = World::start(world::settings()).await;
    let d = Dashboard::of(&w).await;
    let at: std::net::SocketAddr = ([127, 0, 0, 1], d.served.addr.port()).into();
    let mut held = Vec::new();
    let refused = loop {
        let conn = std::net::TcpStream::connect(at).unwrap();
        if !served(&conn) {
            break held.len();
        }
        held.push(conn);
        assert!(held.len() <= 300, "no connection was ever refused");
    };
    let other = tokio::net::TcpSocket::new_v4().unwrap();
    other.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let other = other.connect(at).await.unwrap().into_std().unwrap();
    other.set_nonblocking(false).unwrap();
    assert!(
        served(&other),
        "another client was shut out once one held {refused} connections"
    );
    assert!(refused < 256, "{refused}");
    d.served.stop().await;
}
