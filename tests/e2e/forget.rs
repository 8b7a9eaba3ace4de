//! Forget-me leaves nothing: after `/memory forget-me messages`, a person's
//! words are on no byte of the data directory, in no context summary and in
//! no export, in any guild or direct message — and everyone else's are.

use ambient::attention::Addressed;
use ambient::clock::Clock;
use ambient::ids::{MessageId, UserId, next_snowflake, stable_id};
use ambient::memory::manual;
use ambient::settings::Settings;
use ambient::store::messages::StoredMessage;
use ambient::vocab::fact::{FactKind, Scope};
use serde_json::json;

use crate::support::files::files_containing_any_case;
use crate::support::home::bin;
use crate::support::model_server::Scripted;
use crate::support::world::{B_GENERAL, DM, GENERAL, GUILD_A, GUILD_B, World, settings};

const CANARY: &str = "555-0199-CANARY";
const SAID: &str = "my phone number is 555-0199-CANARY";
const KEPT: &str = "erin keeps bees on the roof, KEPT-7781";

fn context_summary(w: &World, guild: ambient::ids::GuildId) -> String {
    ambient::journal::stream::prefix_for(
        &w.app.store().journal(),
        &w.app.settings.global(),
        ambient::settings::Role::Ambient,
        &ambient::journal::summary::Audience::public(&w.app.settings.global(), guild),
        w.clock.now(),
    )
    .unwrap_or_default()
}

fn remember_about(w: &World, guild: Option<ambient::ids::GuildId>, user: UserId, text: &str) {
    let fact = manual(
        Scope::user(guild, user),
        FactKind::Fact,
        None,
        text,
        None,
        w.clock.now(),
    );
    w.app.memory.remember(fact, None).unwrap();
}

#[tokio::test]
async fn forget_me_leaves_no_byte_of_the_persons_words_anywhere() {
    let mut s: Settings = settings();
    s.executive.context_stream.roles = vec!["ambient".into()];
    let w = World::start(s).await;
    let dave = UserId(stable_id("user", "dave"));
    let erin = UserId(stable_id("user", "erin"));

    // dave says it in two guilds (once to the bot) and in a direct message.
    w.model.push(Scripted::text("Noted."));
    w.message(GENERAL, "dave", SAID, Addressed::Mention).await;
    w.message(B_GENERAL, "dave", SAID, Addressed::No).await;
    w.app
        .store()
        .messages()
        .insert_message(&StoredMessage::said(
            MessageId(next_snowflake(w.clock.now())),
            None,
            DM,
            dave,
            "dave",
            SAID,
            w.clock.now(),
        ))
        .unwrap();
    w.message(GENERAL, "erin", KEPT, Addressed::No).await;
    // Extraction remembers it in guild A; the same fact is known in guild B
    // and the DM. The journal quotes each.
    let fact = format!("dave's phone number is {CANARY}");
    w.model.push(Scripted::tool(
        "remember_facts",
        json!({"facts": [{"kind": "fact", "importance": "high", "scope": "user", "about": "dave",
                          "subject": "dave's phone", "content": fact, "sources": [1]}]}),
    ));
    assert_eq!(
        w.app.memory.extract_channel(Some(GUILD_A), GENERAL).await,
        1
    );
    for guild in [Some(GUILD_B), None] {
        remember_about(&w, guild, dave, &fact);
    }
    remember_about(&w, Some(GUILD_A), erin, KEPT);

    let data = w.dir.path().join("data");
    assert!(
        !files_containing_any_case(&data, CANARY.as_bytes()).is_empty(),
        "the canary is on disk before forget-me (the search can find it)"
    );
    assert!(context_summary(&w, GUILD_A).contains(CANARY));
    assert!(
        !files_containing_any_case(&data, b"canari").is_empty(),
        "indexed"
    );

    let (facts, erased) = w.app.memory.forget_me(Some(GUILD_A), dave, true).unwrap();
    assert_eq!((facts, erased), (3, 3), "every guild and the DM");

    assert_eq!(
        files_containing_any_case(&data, CANARY.as_bytes()),
        Vec::<String>::new(),
        "no file of the data directory holds the canary"
    );
    assert_eq!(
        files_containing_any_case(&data, b"canari"),
        Vec::<String>::new(),
        "the full-text index keeps no word of it (it indexes the stem `canari`)"
    );
    for guild in [GUILD_A, GUILD_B] {
        let summary = context_summary(&w, guild);
        assert!(!summary.contains(CANARY), "{summary}");
        assert!(!summary.contains("dave: "), "{summary}");
    }
    // Everyone else's words stay: on disk, in the summary, in memory.
    assert!(!files_containing_any_case(&data, KEPT.as_bytes()).is_empty());
    assert!(
        context_summary(&w, GUILD_A).contains(&format!("erin: {KEPT}")),
        "{}",
        context_summary(&w, GUILD_A)
    );
    let journal = w
        .app
        .journal
        .query(&ambient::vocab::journal::Filter::default())
        .unwrap();
    assert!(
        journal.iter().any(|e| e.summary.contains(KEPT)),
        "erin's remembered fact is still journalled"
    );
    assert!(
        journal
            .iter()
            .all(|e| !format!("{} {} {}", e.summary, e.reason, e.data).contains(CANARY)),
        "{journal:?}"
    );

    // An export made afterwards, by the CLI on the same data directory.
    let (dir, _, _) = w.stop().await;
    std::fs::write(
        dir.path().join("settings.json"),
        json!({
            "storage": { "dataDir": dir.path().join("data") },
            "executive": { "ollamaBaseUrl": "http://127.0.0.1:9" }
        })
        .to_string(),
    )
    .unwrap();
    let out = std::process::Command::new(bin())
        .args(["memories", "export"])
        .current_dir(dir.path())
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let export = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{export}");
    assert!(export.contains(KEPT), "{export}");
    assert!(!export.contains(CANARY), "{export}");
    assert!(!export.contains("dave's phone"), "{export}");
}
