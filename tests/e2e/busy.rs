//! A second process writes while the bot is busy: `ambient remember` and the
//! dashboard's forget and forget-me, run from their own processes beside an
//! `ambient run` that stores a steady stream of messages, all succeed and
//! lose nothing — neither their writes nor the bot's messages.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ambient::ids::{GuildId, UserId};
use ambient::memory::manual;
use ambient::store::Store;
use ambient::store::memory::FactFilter;
use ambient::vocab::fact::{FactKind, Importance, Scope};
use reqwest::StatusCode;
use serde_json::json;

use crate::dashboard::{Running, csrf_in};
use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, FakeDiscord, GENERAL, GUILD};

const FORGETS: usize = 20;
const FORGET_MES: u64 = 5;
const REMEMBERS: usize = 20;

/// People 9001.. each with two facts, for the forget-mes.
fn person(i: u64) -> UserId {
    UserId(9001 + i)
}

/// Facts to forget one by one, and facts about the people who will ask to be forgotten.
fn seed(store: &Store) -> Vec<String> {
    let now = chrono::Utc::now();
    let guild = Scope::guild(GuildId(GUILD));
    let mut ids = Vec::new();
    for i in 0..FORGETS {
        let text = format!("the build server number {i} lives in rack {i}");
        let f = manual(
            guild,
            FactKind::Fact,
            Some(Importance::Medium),
            &text,
            None,
            now,
        );
        ids.push(f.id.clone());
        store.memory().insert_fact(&f).unwrap();
    }
    for i in 0..FORGET_MES {
        for what in ["likes hiking in the alps", "keeps bees on the roof"] {
            let text = format!("member {} {what}", person(i));
            let about = Scope::user(Some(GuildId(GUILD)), person(i));
            store
                .memory()
                .insert_fact(&manual(about, FactKind::Fact, None, &text, None, now))
                .unwrap();
        }
    }
    ids
}

/// The CSRF token of a confirmation page's form.
async fn confirmation(http: &reqwest::Client, base: &str, page: &str) -> String {
    let confirm = http.get(format!("{base}{page}")).send().await.unwrap();
    assert_eq!(confirm.status(), StatusCode::OK);
    csrf_in(&confirm.text().await.unwrap())
}

/// A form posted, as a person clicking a confirmation page's button does.
async fn post(
    http: &reqwest::Client,
    base: &str,
    action: &str,
    form: &[(&str, &str)],
) -> (StatusCode, String) {
    let res = http
        .post(format!("{base}{action}"))
        .form(form)
        .send()
        .await
        .unwrap();
    (res.status(), res.text().await.unwrap())
}

/// A confirmation page's form posted back.
async fn confirm_and_post(
    http: &reqwest::Client,
    base: &str,
    page: &str,
    action: &str,
    form: &[(&str, &str)],
) -> (StatusCode, String) {
    let csrf = confirmation(http, base, page).await;
    let mut form = form.to_vec();
    form.push(("csrf", &csrf));
    post(http, base, action, &form).await
}

/// People talk in #general at about 20 messages a second until `stop`;
/// the ids said, and when.
fn chatter(bot: &Bot, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<(u64, Instant)>> {
    let discord = FakeDiscord {
        url: bot.discord.url.clone(),
        world: bot.discord.world.clone(),
    };
    std::thread::spawn(move || {
        let mut said = Vec::new();
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            let who = if i % 2 == 0 { ALICE } else { BOB };
            let id = discord.say(GENERAL, who, &format!("talking among ourselves, line {i}"));
            said.push((id, Instant::now()));
            i += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        said
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_processes_write_while_the_bot_stores_a_steady_stream() {
    let bot = Bot::start(json!({}));
    let ids = seed(&bot.store());
    let dashboard = Running::start(
        &bot.home,
        &["ambient", "dashboard", "--bind", "127.0.0.1:0"].map(String::from),
    );
    let base = format!("http://127.0.0.1:{}", dashboard.port);
    let http = reqwest::Client::new();
    let stop = Arc::new(AtomicBool::new(false));
    let talking = chatter(&bot, stop.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;

    let writing = Instant::now();
    let mut failures = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let page = format!("/memory/forget?id={id}");
        let (status, body) =
            confirm_and_post(&http, &base, &page, "/memory/forget", &[("id", id)]).await;
        if status != StatusCode::OK {
            failures.push(format!("forget {id}: {status} {body}"));
        }
        let text = format!("remembered from the command line, number {i}");
        let out = bot
            .home
            .run(&["remember", &text, "--guild", &GUILD.to_string()]);
        if !out.status.success() {
            failures.push(format!(
                "remember {i}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    for i in 0..FORGET_MES {
        let user = person(i).to_string();
        let page = format!("/memory/forget-me?user={user}");
        let form = [("user", user.as_str()), ("messages", "on")];
        let (status, body) =
            confirm_and_post(&http, &base, &page, "/memory/forget-me", &form).await;
        if status != StatusCode::OK {
            failures.push(format!("forget-me {user}: {status} {body}"));
        }
    }
    let written = Instant::now();
    stop.store(true, Ordering::Relaxed);
    let said = talking.join().unwrap();
    dashboard.stop();

    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let meanwhile = said
        .iter()
        .filter(|(_, at)| (writing..written).contains(at))
        .count();
    assert!(
        meanwhile >= 10,
        "the bot was storing messages while the others wrote: {meanwhile} of {}",
        said.len()
    );
    for (id, _) in &said {
        assert!(
            bot.wait_stored(*id),
            "message {id} was lost:\n{}",
            bot.log()
        );
    }
    let store = bot.store();
    let facts = store
        .memory()
        .list_facts(&FactFilter {
            include_inactive: true,
            ..Default::default()
        })
        .unwrap();
    let left: Vec<&str> = facts.iter().map(|f| f.content.as_str()).collect();
    for i in 0..REMEMBERS {
        let text = format!("remembered from the command line, number {i}");
        assert!(
            left.contains(&text.as_str()),
            "{text:?} was lost: {left:#?}"
        );
    }
    assert!(
        !left.iter().any(|f| f.contains("build server")),
        "a forget was undone: {left:#?}"
    );
    assert!(
        !left.iter().any(|f| f.starts_with("member 900")),
        "a forget-me was undone: {left:#?}"
    );
    assert_eq!(facts.len(), REMEMBERS, "{left:#?}");
}

/// A write the store cannot make in time (another connection holds the
/// write lock past the busy timeout) is a 503 that says nothing changed —
/// not a 400 blaming the request — and the same form succeeds once it can.
#[tokio::test]
async fn a_forget_the_store_cannot_do_now_says_so_and_changes_nothing() {
    let home = crate::support::home::Home::new(
        json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}),
    );
    let store = Store::open(&home.data_dir()).unwrap();
    let now = chrono::Utc::now();
    let fact = manual(
        Scope::guild(GuildId(GUILD)),
        FactKind::Fact,
        None,
        "the wifi password is on the fridge",
        None,
        now,
    );
    store.memory().insert_fact(&fact).unwrap();
    let dashboard = Running::start(
        &home,
        &["ambient", "dashboard", "--bind", "127.0.0.1:0"].map(String::from),
    );
    let base = format!("http://127.0.0.1:{}", dashboard.port);
    let http = reqwest::Client::new();
    let csrf = confirmation(&http, &base, &format!("/memory/forget?id={}", fact.id)).await;
    let form = [("id", fact.id.as_str()), ("csrf", &csrf)];

    let blocker =
        rusqlite::Connection::open(home.data_dir().join(ambient::store::DB_FILE)).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (status, body) = post(&http, &base, "/memory/forget", &form).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body.contains("The database could not forget this memory just now; nothing was changed."),
        "{body}"
    );
    assert!(body.contains("database is locked"), "{body}");
    blocker.execute_batch("ROLLBACK").unwrap();
    assert!(
        store.memory().fact(&fact.id).unwrap().is_some(),
        "nothing was forgotten"
    );

    let (status, _) = post(&http, &base, "/memory/forget", &form).await;
    assert_eq!(status, StatusCode::OK);
    assert!(store.memory().fact(&fact.id).unwrap().is_none());
    dashboard.stop();
}
