//! Forget-me cannot be undone by work in flight or by an import: facts an
//! extraction learned from a person's words are not stored when the person
//! asked to be forgotten while the model was reading, and an export taken
//! before a forget-me, imported with `--replace`, does not bring them back.

use std::sync::Arc;

use ambient::attention::Addressed;
use ambient::ids::{GuildId, UserId, stable_id};
use ambient::store::Store;
use ambient::store::memory::FactFilter;
use ambient::store::messages::StoredMessage;
use ambient::store::people::PeopleLog as _;
use ambient::vocab::fact::{FactKind, Importance, Scope};
use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::support::home::Home;
use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, GUILD_A, World, settings};

const PHONE: &str = "555-0101";

fn dave() -> UserId {
    UserId(stable_id("user", "dave"))
}

/// Every fact the store holds, as text.
fn all_facts(store: &Store) -> Vec<String> {
    store
        .memory()
        .list_facts(&FactFilter {
            include_inactive: true,
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|f| f.content)
        .collect()
}

/// Dave gives his phone number in #general, then Ada says when book club is.
async fn dave_then_ada() -> World {
    let w = World::start(settings()).await;
    let dave = format!("my phone number is {PHONE}, call me about the bike sale");
    w.message(GENERAL, "dave", &dave, Addressed::No).await;
    let ada = "we moved book club to thursdays at seven";
    w.message(GENERAL, "ada", ada, Addressed::No).await;
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extraction_waiting_on_the_model_stores_nothing_about_who_asked_to_be_forgotten() {
    let w = dave_then_ada().await;
    let release = Arc::new(tokio::sync::Notify::new());
    w.model.push(Scripted::held(
        Scripted::tool(
            "remember_facts",
            json!({"facts": [
                {"kind": "fact", "importance": "high", "scope": "user", "about": "dave", "subject": "dave's phone", "content": format!("Dave's phone number is {PHONE}."), "sources": [1]},
                {"kind": "fact", "importance": "medium", "scope": "channel", "subject": "bike sale", "content": "Someone is selling a bike.", "sources": [1]},
                {"kind": "decision", "importance": "high", "scope": "guild", "subject": "book club", "content": "Book club is on Thursdays at seven.", "sources": [2]}
            ]}),
        ),
        &release,
    ));

    let memory = w.app.memory.clone();
    let extraction =
        tokio::spawn(async move { memory.extract_channel(Some(GUILD_A), GENERAL).await });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while w.model.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the extraction never asked the model"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (facts, _) = w
        .app
        .memory
        .forget_person(Some(GUILD_A), dave(), false, "at their request")
        .unwrap();
    assert_eq!(facts, 0, "nothing was known of Dave yet");
    release.notify_one();
    let stored = extraction.await.unwrap();

    assert_eq!(stored, 1, "only what nobody asked to forget");
    let left = all_facts(w.app.store());
    assert_eq!(left, vec!["Book club is on Thursdays at seven."]);
    let journal: Vec<String> = w
        .journal(Kind::Memory)
        .into_iter()
        .map(|e| format!("{} {}", e.summary, e.reason))
        .collect();
    assert!(!journal.iter().any(|l| l.contains(PHONE)), "{journal:#?}");
}

/// Ada and Dave in guild 7 of a data directory, with a fact about each.
/// [`stocked`], then server 7 exported to `seven.json` in the home, as an
/// owner backs a server up before anything is forgotten.
fn stocked_and_exported(home: &Home) -> std::path::PathBuf {
    stocked(home);
    let file = home.path().join("seven.json");
    let out = home.run(&["guild", "export", "7"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&file, &out.stdout).unwrap();
    file
}

fn stocked(home: &Home) {
    let store = Store::open(&home.data_dir()).unwrap();
    let now = chrono::Utc::now() - chrono::Duration::hours(1);
    let guild = GuildId(7);
    store.messages().upsert_guild(guild, "Seven", now).unwrap();
    store
        .messages()
        .upsert_channel(ambient::ids::ChannelId(70), Some(guild), "general", now)
        .unwrap();
    for (i, (who, text)) in [
        ("dave", format!("call me at {PHONE} about the bike")),
        ("ada", "the bike is blue".to_string()),
    ]
    .into_iter()
    .enumerate()
    {
        store
            .messages()
            .insert_message(&StoredMessage::said(
                ambient::ids::MessageId(7000 + i as u64),
                Some(guild),
                ambient::ids::ChannelId(70),
                UserId(stable_id("user", who)),
                who,
                text,
                now,
            ))
            .unwrap();
    }
    for (who, text) in [
        ("dave", format!("Dave's number is {PHONE}.")),
        ("ada", "Ada rides a blue bike.".into()),
    ] {
        let about = Scope::user(Some(guild), UserId(stable_id("user", who)));
        let fact = ambient::memory::manual(
            about,
            FactKind::Fact,
            Some(Importance::High),
            &text,
            None,
            now,
        );
        store.memory().insert_fact(&fact).unwrap();
    }
}

#[test]
fn an_export_from_before_a_forget_me_does_not_bring_the_person_back() {
    let home = Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}));
    let file = stocked_and_exported(&home);

    let store = Store::open(&home.data_dir()).unwrap();
    store
        .people()
        .forget_person(dave(), true, chrono::Utc::now())
        .unwrap();
    drop(store);

    let out = home.run(&["guild", "import", file.to_str().unwrap(), "--replace"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("Forgotten again, as people asked before this export was imported: 1 fact(s), the text of 1 message(s)"),
        "{said}"
    );
    let store = Store::open(&home.data_dir()).unwrap();
    assert_eq!(all_facts(&store), vec!["Ada rides a blue bike."]);
    let texts: Vec<String> = store
        .messages()
        .recent_messages(ambient::ids::ChannelId(70), 10)
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert!(!texts.iter().any(|t| t.contains(PHONE)), "{texts:?}");
    assert!(
        texts.contains(&"the bike is blue".to_string()),
        "Ada's words stay: {texts:?}"
    );
}

/// Dave asked to be forgotten (facts only) before the channel's extraction
/// ran: his words, still in the channel's unread batch, are never sent to
/// the model, and nothing about him is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_said_before_a_forget_me_are_never_extracted_later() {
    let w = dave_then_ada().await;
    w.app
        .memory
        .forget_person(Some(GUILD_A), dave(), false, "at their request")
        .unwrap();
    w.model.push(Scripted::tool(
        "remember_facts",
        json!({"facts": [
            {"kind": "decision", "importance": "high", "scope": "guild", "subject": "book club", "content": "Book club is on Thursdays at seven.", "sources": [1]}
        ]}),
    ));
    let stored = w.app.memory.extract_channel(Some(GUILD_A), GENERAL).await;
    assert_eq!(stored, 1);
    let prompt = w.model.requests()[0].body.to_string();
    assert!(prompt.contains("book club to thursdays"), "{prompt}");
    assert!(
        !prompt.contains(PHONE),
        "Dave's words reached the model: {prompt}"
    );
}

/// Dave asked another process of a sharded bot to forget him; this data
/// directory has not applied it yet (its bot is stopped). An export from
/// before, imported here, has the people ledger's forget-me applied too.
#[test]
fn an_import_applies_the_forget_mes_of_the_people_ledger() {
    let shared = tempfile::tempdir().unwrap();
    let home = Home::new(json!({
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9"},
        "storage": {"sharedDir": shared.path().to_string_lossy()},
    }));
    let file = stocked_and_exported(&home);

    let other = ambient::store::people::Ledger::open(shared.path(), "1-1/2").unwrap();
    other
        .append(
            &ambient::store::people::PersonEvent::ForgetMe {
                user: dave(),
                messages: false,
            },
            chrono::Utc::now(),
        )
        .unwrap();

    let out = home.run(&["guild", "import", file.to_str().unwrap(), "--replace"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(&home.data_dir()).unwrap();
    assert_eq!(all_facts(&store), vec!["Ada rides a blue bike."]);
    let texts: Vec<String> = store
        .messages()
        .recent_messages(ambient::ids::ChannelId(70), 10)
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert!(
        texts.iter().any(|t| t.contains(PHONE)),
        "he asked to keep his words: {texts:?}"
    );
}
