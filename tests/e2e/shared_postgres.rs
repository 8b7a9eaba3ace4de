//! What spans hosts, in PostgreSQL (`storage.sharedUrl`): the bot's
//! processes, each with its own data directory and no shared directory,
//! pass a person's boundaries and forget-me through a real PostgreSQL
//! cluster the test starts (`support::postgres`); without it the tests say
//! so and return.

use std::time::{Duration, Instant};

use ambient::ids::{MessageId, UserId};
use ambient::store::boundaries::Boundary;
use ambient::store::people::{Ledger, PeopleLog as _, PersonEvent};
use ambient::store::shared::SharedDb;
use ambient::store::shared::people::PgLedger;
use ambient::vocab::journal::Filter;
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, GENERAL};
use crate::support::home::Home;
use crate::support::model_server::Scripted;
use crate::support::postgres::Postgres;
use crate::support::readme;
use crate::support::shards::{Pair, TOTAL, server};

fn mention(text: &str) -> String {
    format!("<@{BOT}> {text}")
}

/// Polls `done` every 20 ms for up to `patience`; whether it came true.
fn within(patience: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// Both processes of [`Pair`] on `pg`, with no `storage.sharedDir`.
fn pair_on(pg: &Postgres) -> Pair {
    let commands: Vec<String> = (0..TOTAL)
        .map(|s| format!("ambient run --shards {s} --total-shards {TOTAL}"))
        .collect();
    let settings = json!({"storage": {"dataDir": "./data", "sharedUrl": pg.url()}});
    Pair::start_with(settings, json!({}), &commands)
}

/// The first two checks with two processes: a boundary set in one
/// holds in the other within 2 s (the notification, not the 2 s poll, brings
/// it), and a forget-me asked while the other was stopped reaches it when
/// it starts again, before it connects.
#[test]
fn boundaries_and_forget_me_pass_between_processes_through_postgresql() {
    let Some(pg) = Postgres::start() else { return };
    let mut pair = pair_on(&pg);
    let ((g0, c0), (g1, c1)) = (server(0), server(1));
    let ask = |command: &str, sub: &str, option: (&str, &str)| {
        let id = pair
            .discord
            .slash_in(g0, c0, ALICE, 0, command, sub, &[option]);
        pair.discord.interaction_text(id).unwrap_or_default()
    };

    let answer = ask("ambient", "me", ("boundary", "no-ping"));
    assert!(answer.starts_with("Done — don't ping me"), "{answer}");
    let asked = Instant::now();
    let alice = UserId(ALICE.id);
    let b = pair.bots[1].store();
    assert!(
        within(Duration::from_secs(2), || b
            .people()
            .has_boundary(alice, Boundary::NoPing)
            .unwrap()),
        "shard 1's process did not hold the boundary within 2 s:\n{}",
        pair.bots[1].log()
    );
    eprintln!(
        "boundary held in the other process after {:?}",
        asked.elapsed()
    );
    assert_eq!(
        pg.psql("SELECT kind || ' ' || boundary || ' ' || writer FROM people_events"),
        "boundary_set no_ping 0/2"
    );
    assert!(
        !pair.root.path().join("shared/people.db").exists(),
        "no SQLite ledger beside PostgreSQL"
    );
    let journaled = b.journal().journal_query(&Filter::default()).unwrap();
    assert!(
        journaled
            .iter()
            .any(|e| e.summary.contains("set a boundary on another server")
                && e.reason.contains("people ledger event 1")),
        "{journaled:?}"
    );

    // Alice's words on shard 1's server; that process is down when she asks.
    let hers1 = pair
        .discord
        .say_in(g1, c1, ALICE, "the spare key is under the blue flowerpot");
    assert!(pair.bots[1].wait_stored(hers1), "{}", pair.bots[1].log());
    assert!(pair.bots[1].halt().success(), "{}", pair.bots[1].log());
    let answer = ask("memory", "forget-me", ("messages", "true"));
    assert!(answer.starts_with("Done: I forgot"), "{answer}");
    let words = |bot: &Bot| {
        bot.store()
            .messages()
            .message(MessageId(hers1))
            .unwrap()
            .map(|m| m.content)
            .unwrap_or_default()
    };
    assert!(
        words(&pair.bots[1]).contains("flowerpot"),
        "not applied while down"
    );
    pair.bots[1].relaunch(
        &["--shards", "1", "--total-shards", &TOTAL.to_string()],
        "ambient=debug,serenity=warn,poise=warn",
    );
    assert!(
        within(Duration::from_secs(30), || words(&pair.bots[1]).is_empty()),
        "the restarted process kept her words:\n{}",
        pair.bots[1].log()
    );
}

/// PostgreSQL stopped: a boundary change and a forget-me are refused with
/// the person told and nothing changes here; answers go on. Started again, the next change
/// goes through (a new connection is made).
#[test]
fn with_postgresql_down_boundary_changes_are_refused_and_replies_still_work() {
    let Some(pg) = Postgres::start() else { return };
    let bot = Bot::start(json!({
        "storage": {"sharedUrl": pg.url()},
        "budget": {"dailyTokens": {"reply": 2_000}},
    }));
    bot.model.fallback(Scripted::text("Still here."));
    let alice = UserId(ALICE.id);
    let status = || {
        let id = bot
            .discord
            .slash(GENERAL, ALICE, 0, "ambient", "status", &[]);
        bot.discord.interaction_text(id).unwrap_or_default()
    };
    let answered = |n: usize| {
        bot.discord.wait_until(20, |w| {
            w.sent_in(GENERAL)
                .iter()
                .filter(|m| m["content"] == "Still here.")
                .count()
                >= n
        })
    };

    // Up: a reply leases the day's reply budget from PostgreSQL.
    let first = bot.discord.say(GENERAL, ALICE, &mention("hello?"));
    assert!(bot.wait_stored(first), "{}", bot.log());
    assert!(answered(1), "no reply:\n{}", bot.log());
    // A chunk is 100 tokens: the reply's estimate takes several, and the
    // next reply (its tokens spent) needs more.
    assert_eq!(
        pg.psql("SELECT role || ' ' || (granted % 100 = 0 AND granted > 0) FROM budget_leases"),
        "reply true"
    );
    let up = status();
    assert!(
        up.contains("budget: the whole bot's daily caps, leased from PostgreSQL in 5% chunks"),
        "{up}"
    );
    let set_no_ping = || {
        let id = bot.discord.slash(
            GENERAL,
            ALICE,
            0,
            "ambient",
            "me",
            &[("boundary", "no-ping")],
        );
        bot.discord.interaction_text(id).unwrap_or_default()
    };

    pg.stop();
    let refused = set_no_ping();
    assert!(
        refused.starts_with("Could not save that: the people ledger in PostgreSQL")
            && refused.contains("cannot reach PostgreSQL at postgres@127.0.0.1"),
        "{refused}"
    );
    assert!(
        !bot.store()
            .people()
            .has_boundary(alice, Boundary::NoPing)
            .unwrap()
    );

    // Down: the next reply needs another lease, so the reply budget falls
    // back to the static share (the whole cap, for one process), said in
    // status and once in the journal.
    let asked = bot.discord.say(GENERAL, ALICE, &mention("are you there?"));
    assert!(bot.wait_stored(asked), "{}", bot.log());
    assert!(answered(2), "no reply with PostgreSQL down:\n{}", bot.log());
    let down = status();
    assert!(
        down.contains("budget: PostgreSQL unreachable, this process's static share instead"),
        "{down}"
    );
    bot.wait_entry(ambient::vocab::journal::Kind::Error, |e| {
        e.summary.starts_with("budget leases unavailable")
    });

    let forget = bot.discord.slash(
        GENERAL,
        ALICE,
        0,
        "memory",
        "forget-me",
        &[("messages", "true")],
    );
    let refused = bot.discord.interaction_text(forget).unwrap_or_default();
    assert!(
        refused.contains("the people ledger in PostgreSQL"),
        "{refused}"
    );
    let kept = bot
        .store()
        .messages()
        .message(MessageId(asked))
        .unwrap()
        .unwrap();
    assert!(
        kept.content.ends_with("are you there?"),
        "nothing forgotten here alone: {kept:?}"
    );

    pg.restart();
    let done = set_no_ping();
    assert!(done.starts_with("Done — don't ping me"), "{done}");
    assert!(
        bot.store()
            .people()
            .has_boundary(alice, Boundary::NoPing)
            .unwrap()
    );
    assert_eq!(pg.psql("SELECT count(*) FROM people_events"), "1");
}

/// The README's "Across hosts" commands, run as written: `ambient shared
/// check`, `migrate` and `import` — a `storage.sharedDir` ledger copied into
/// PostgreSQL keeps its sequence numbers and its id (so every store's cursor
/// stays true), the next append follows on, a second import is refused, and
/// check says when PostgreSQL cannot be reached.
#[test]
fn the_shared_verbs_migrate_check_and_import_a_sqlite_ledger() {
    let Some(pg) = Postgres::start() else { return };
    let root = tempfile::tempdir().unwrap();
    let home = Home::new_in(root.path(), json!({"storage": {"sharedUrl": pg.url()}}));
    let run = |line: &str| {
        let args: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(args[..2], ["ambient", "shared"], "{line}");
        let out = home.run(&args[1..]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        )
    };
    let (migrate, check, import) = (
        readme::example("ambient shared migrate"),
        readme::example("ambient shared check"),
        readme::example("ambient shared import "),
    );

    let (code, out, _) = run(&check);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("shared schema version 0 of 2"), "{out}");
    let (code, out, err) = run(&migrate);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.ends_with("shared schema migrated from version 0 to 2"),
        "{out}"
    );
    let (_, out, _) = run(&migrate);
    assert!(out.ends_with("shared schema already at version 2"), "{out}");

    // The ledger of the README's layout: `../shared/people.db` from the home.
    let shared = root.path().join("shared");
    let sqlite = Ledger::open(&shared, "0/2").unwrap();
    let now = chrono::Utc::now();
    let events = [
        PersonEvent::Boundary {
            user: UserId(7),
            boundary: Boundary::NoPing,
            on: true,
        },
        PersonEvent::ForgetMe {
            user: UserId(8),
            messages: true,
        },
        PersonEvent::Boundary {
            user: UserId(7),
            boundary: Boundary::NoPing,
            on: false,
        },
    ];
    for e in &events {
        sqlite.append(e, now).unwrap();
    }
    let (code, out, err) = run(&import);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("copied 3 event(s) (the last 3)"), "{out}");
    assert_eq!(
        pg.psql("SELECT string_agg(seq || ':' || kind, ',' ORDER BY seq) FROM people_events"),
        "1:boundary_set,2:forget_me,3:boundary_cleared"
    );
    assert_eq!(pg.psql("SELECT ledger_id FROM people_ledger"), sqlite.id());
    let (code, _, err) = run(&import);
    assert_eq!(code, Some(1));
    assert!(err.contains("already holds 3 event(s)"), "{err}");
    // The next event after the import follows on from the copied ones.
    let shared = ledger_on(&pg, "1/2");
    assert_eq!(shared.append(&events[0], now).unwrap(), 4);
    let (code, out, _) = run(&check);
    assert_eq!(code, Some(0));
    assert!(out.contains("people ledger 4 event(s), last 4"), "{out}");

    pg.stop();
    let (code, out, _) = run(&check);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.starts_with("✗ shared database: cannot reach PostgreSQL at postgres@127.0.0.1"),
        "{out}"
    );
}

/// The README's settings for processes on several hosts are valid as
/// written, and a password in the URL is refused naming `PGPASSWORD`.
#[test]
fn the_readme_settings_across_hosts_are_valid_and_keep_the_password_out() {
    let example: serde_json::Value =
        serde_json::from_str(&readme::block("### Across hosts", "json")).unwrap();
    let home = Home::new(example.clone());
    let checked = home.run(&["settings", "check"]);
    assert!(checked.status.success(), "{checked:?}");
    let url = example["storage"]["sharedUrl"].as_str().unwrap();
    home.edit_settings(
        json!({"storage": {"sharedUrl": url.replace("ambient@", "ambient:hunter2@")}}),
    );
    let refused = home.run(&["settings", "check"]);
    let said = String::from_utf8_lossy(&refused.stdout) + String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        said.contains("storage.sharedUrl: holds a password"),
        "{said}"
    );
    assert!(said.contains("PGPASSWORD"), "{said}");
    assert!(
        !said.contains("hunter2"),
        "the password is not repeated: {said}"
    );
}

/// The ledger handle of a process that is not a bot: the test's own writer.
fn ledger_on(pg: &Postgres, writer: &str) -> PgLedger {
    let config = ambient::store::shared::config(&pg.url(), None, None).unwrap();
    PgLedger::open(SharedDb::new(config).unwrap(), writer).unwrap()
}

/// Waits up to 10 s for a wake-up on `rx`; whether one came.
fn woken(rx: &mut tokio::sync::mpsc::Receiver<()>) -> bool {
    within(Duration::from_secs(10), || rx.try_recv().is_ok())
}

/// A listener is woken by another process's append (the `NOTIFY` sent in
/// its transaction), not only by the periodic catch-up.
#[test]
fn a_listening_process_is_woken_by_another_processs_append() {
    let Some(pg) = Postgres::start() else { return };
    an_append_wakes_the_other_listener(&ledger_on(&pg, "0/2"), &ledger_on(&pg, "1/2"));
}

/// `b` listens; `a`'s append wakes it, and `b` reads the event back. The
/// listening stays open while the returned receiver lives.
pub(crate) fn an_append_wakes_the_other_listener(
    a: &PgLedger,
    b: &PgLedger,
) -> tokio::sync::mpsc::Receiver<()> {
    let mut news = b.subscribe().expect("PostgreSQL can notify");
    assert!(woken(&mut news), "a first wake-up once listening");
    assert!(news.try_recv().is_err(), "nothing else yet");
    let event = PersonEvent::Boundary {
        user: UserId(7),
        boundary: Boundary::NoPing,
        on: true,
    };
    a.append(&event, chrono::Utc::now()).unwrap();
    assert!(woken(&mut news), "no wake-up for another process's append");
    assert_eq!(b.after(0, 10).unwrap()[0].event, event);
    news
}

/// The figure: 1,000 events appended by another writer reach three
/// `ambient run` processes; each applies every one, in order, and the time
/// from append to the journal line of its applying is printed (p50, p99,
/// max). `AMBIENT_PROPAGATION_EVENTS` changes the count.
#[test]
fn a_thousand_events_reach_three_processes() {
    let Some(pg) = Postgres::start() else { return };
    let n: i64 = std::env::var("AMBIENT_PROPAGATION_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let bots: Vec<Bot> = (0..3)
        .map(|_| Bot::start(json!({"storage": {"sharedUrl": pg.url()}})))
        .collect();
    let writer = ledger_on(&pg, "elsewhere");
    let mut appended = std::collections::HashMap::new();
    for i in 1..=n {
        let event = PersonEvent::Boundary {
            user: UserId(1_000_000 + i as u64),
            boundary: Boundary::NoPing,
            on: true,
        };
        let at = chrono::Utc::now();
        let seq = writer.append(&event, at).unwrap();
        appended.insert(seq, at);
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut latencies = Vec::new();
    for bot in &bots {
        let applied = || -> Vec<(i64, chrono::DateTime<chrono::Utc>)> {
            bot.store()
                .journal()
                .journal_query(&Filter {
                    limit: Some(n as usize + 100),
                    ..Filter::default()
                })
                .unwrap()
                .into_iter()
                .filter_map(|e| {
                    let rest = e.reason.split("people ledger event ").nth(1)?;
                    let seq = rest.split(' ').next()?.parse().ok()?;
                    Some((seq, e.at))
                })
                .collect()
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while (applied().len() as i64) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(250));
        }
        assert_eq!(applied().len() as i64, n, "{}", bot.log());
        for (seq, at) in applied() {
            latencies.push((at - appended[&seq]).num_milliseconds());
        }
        assert!(
            bot.store()
                .people()
                .has_boundary(UserId(1_000_000 + n as u64), Boundary::NoPing)
                .unwrap()
        );
    }
    latencies.sort_unstable();
    let pick = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    eprintln!(
        "propagation of {n} events to 3 processes ({} applyings): p50 {} ms, p99 {} ms, max {} ms",
        latencies.len(),
        pick(0.5),
        pick(0.99),
        latencies[latencies.len() - 1]
    );
}

/// A process that cannot reach PostgreSQL when it starts does not start,
/// and says why.
#[test]
fn a_process_without_its_shared_database_does_not_start() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let discord = crate::support::fake_discord::FakeDiscord::start();
    let home = Home::new(json!({
        "discord": {"apiBaseUrl": discord.url},
        "storage": {"sharedUrl": url},
    }));
    let out = home
        .command(&["run"])
        .env("DISCORD_TOKEN", "test-token-abc")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("cannot open the people ledger")
            && said.contains(&format!(
                "cannot reach PostgreSQL at postgres@127.0.0.1:{port}/postgres"
            )),
        "{said}"
    );
}

/// The database's password comes from `PGPASSWORD` alone (the URL holds
/// none), and no answer repeats it.
#[test]
fn the_password_comes_from_pgpassword_and_is_never_shown() {
    let Some(pg) = Postgres::start_with_password("s3cret-pg-pass") else {
        return;
    };
    let home = Home::new(json!({"storage": {"sharedUrl": pg.url()}}));
    let check = |password: Option<&str>| {
        let mut cmd = home.command(&["shared", "check"]);
        match password {
            Some(p) => cmd.env("PGPASSWORD", p),
            None => cmd.env_remove("PGPASSWORD"),
        };
        let out = cmd.output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        (out.status.code(), said.to_string())
    };
    let (code, said) = check(None);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("cannot reach PostgreSQL"), "{said}");
    assert!(said.contains("password missing"), "{said}");
    let (code, said) = check(Some("wrong-pass-here"));
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("password authentication failed"), "{said}");
    assert!(!said.contains("wrong-pass-here"), "{said}");
    let (code, said) = check(Some("s3cret-pg-pass"));
    assert_eq!(code, Some(0), "{said}");
    assert!(!said.contains("s3cret"), "{said}");
}

/// `ambient doctor` looks at the shared database when `storage.sharedUrl`
/// is set: behind its schema, current, and unreachable.
#[test]
fn the_doctor_checks_the_shared_database() {
    let Some(pg) = Postgres::start() else { return };
    let discord = crate::support::fake_discord::FakeDiscord::start();
    let home = Home::new(json!({
        "discord": {"apiBaseUrl": discord.url},
        "storage": {"sharedUrl": pg.url()},
    }));
    let place = format!("postgres@127.0.0.1:{}/postgres", pg.port());
    let line = || {
        let out = home
            .command(&["doctor", "--no-model"])
            .env("DISCORD_TOKEN", "test-token-abc")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.lines()
            .find(|l| l.contains("shared database"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no shared database line:\n{text}"))
    };
    let behind = line();
    assert!(
        behind.starts_with(&format!("! shared database: {place}: PostgreSQL 1"))
            && behind.ends_with("shared schema version 0 of 2"),
        "{behind}"
    );
    assert_eq!(home.run(&["shared", "migrate"]).status.code(), Some(0));
    let current = line();
    assert!(
        current.starts_with("✓ shared database: ")
            && current.ends_with("shared schema version 2 of 2, people ledger 0 event(s), last 0"),
        "{current}"
    );
    pg.stop();
    let down = line();
    assert!(
        down.starts_with(&format!(
            "✗ shared database: cannot reach PostgreSQL at {place}"
        )),
        "{down}"
    );
}
