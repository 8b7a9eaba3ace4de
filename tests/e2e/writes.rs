//! Nothing lost on a failed write: a store that refuses a write (a full disk,
//! here simulated by a trigger another connection adds, which fails exactly
//! the write under test the way SQLite fails a write to a full database)
//! costs no fact and sends no post that was not recorded first.

use ambient::attention::{Addressed, Author, Percept, Place};
use ambient::clock::Clock;
use ambient::ids::{MessageId, UserId, next_snowflake};
use ambient::memory::compact::Compaction;
use ambient::memory::manual;
use ambient::store::messages::{Source, StoredMessage};
use ambient::vocab::fact::{FactKind, Importance, Scope};
use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, GUILD_A, MEMES, World, settings};

/// Makes every `op` (INSERT, DELETE) on `table` matching `when` fail as a full disk would.
pub(crate) fn refuse(world: &World, op: &str, table: &str, when: &str) {
    let db = world
        .app
        .store()
        .path()
        .expect("the world's store is a file");
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(&format!(
            "CREATE TRIGGER refuse_{op} BEFORE {op} ON {table} {when}
             BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;"
        ))
        .unwrap();
}

pub(crate) fn allow(world: &World, op: &str) {
    let db = world.app.store().path().unwrap();
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(&format!("DROP TRIGGER refuse_{op};"))
        .unwrap();
}

/// Nine guild facts (three of each importance) over a threshold of six.
async fn crowded() -> World {
    let mut s = settings();
    s.memory.guild_compaction_threshold = 6;
    let world = World::start(s).await;
    let now = world.clock.now();
    for (i, importance) in [Importance::High, Importance::Medium, Importance::Low]
        .into_iter()
        .flat_map(|i| [i; 3])
        .enumerate()
    {
        let mut f = manual(
            Scope::guild(GUILD_A),
            FactKind::Fact,
            Some(importance),
            &format!("unrelated fact number {i} word{i}x"),
            None,
            now,
        );
        f.updated_at = now - chrono::Duration::days(20 - i as i64);
        world.app.store().memory().insert_fact(&f).unwrap();
    }
    world.model.push(Scripted::tool(
        "summary",
        json!({"content": "Older odds and ends, folded."}),
    ));
    world
}

fn facts(world: &World) -> Vec<(FactKind, String)> {
    let mut all: Vec<(FactKind, String)> = world
        .app
        .store()
        .memory()
        .facts_in_scope(&Scope::guild(GUILD_A), None)
        .unwrap()
        .into_iter()
        .map(|f| (f.kind, f.content))
        .collect();
    all.sort_by(|a, b| a.1.cmp(&b.1));
    all
}

fn errors(world: &World) -> Vec<String> {
    world
        .journal(Kind::Error)
        .into_iter()
        .map(|e| format!("{}: {}", e.summary, e.reason))
        .collect()
}

#[tokio::test]
async fn a_summary_the_store_refuses_costs_no_fact() {
    let world = crowded().await;
    let before = facts(&world);
    assert_eq!(before.len(), 9);
    refuse(
        &world,
        "INSERT",
        "facts",
        "WHEN NEW.kind = 'session-summary'",
    );

    let done = world.app.memory.compact(&Scope::guild(GUILD_A)).await;

    assert!(matches!(done, Compaction::Failed { .. }), "{done:?}");
    assert_eq!(facts(&world), before, "every fact is still there");
    let errors = errors(&world);
    assert!(
        errors.iter().any(|e| e
            == "could not compact memories; none were removed: database error: database or disk is full"),
        "{errors:#?}"
    );
}

#[tokio::test]
async fn deletes_the_store_refuses_leave_no_summary_beside_the_facts() {
    let world = crowded().await;
    let before = facts(&world);
    refuse(&world, "DELETE", "facts", "");

    let done = world.app.memory.compact(&Scope::guild(GUILD_A)).await;

    assert!(matches!(done, Compaction::Failed { .. }), "{done:?}");
    assert_eq!(
        facts(&world),
        before,
        "one transaction: no summary without its deletes"
    );
}

#[tokio::test]
async fn without_a_model_a_refused_delete_keeps_the_low_facts_and_says_so() {
    let mut s = settings();
    s.memory.guild_compaction_threshold = 6;
    s.executive.roles.extract.provider = ambient::settings::ProviderKind::None;
    let world = World::start(s).await;
    for i in 0..9 {
        let mut f = manual(
            Scope::guild(GUILD_A),
            FactKind::Fact,
            Some(Importance::Low),
            &format!("unrelated fact number {i} word{i}x"),
            None,
            world.clock.now(),
        );
        f.updated_at = world.clock.now() - chrono::Duration::days(20 - i);
        world.app.store().memory().insert_fact(&f).unwrap();
    }
    refuse(
        &world,
        "DELETE",
        "facts",
        "WHEN OLD.content LIKE '%number 5 %'",
    );

    let done = world.app.memory.compact(&Scope::guild(GUILD_A)).await;

    assert!(matches!(done, Compaction::Failed { .. }), "{done:?}");
    assert_eq!(facts(&world).len(), 9, "all or nothing");
    assert!(
        world
            .journal(Kind::Memory)
            .iter()
            .all(|e| !e.summary.starts_with("dropped")),
        "no claim of a drop that did not happen"
    );
}

#[tokio::test]
async fn a_post_the_outbox_refuses_is_not_sent() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES];
    let world = World::start(s).await;
    world.model.push(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "memes", "text": "cats are liquid", "reason": "quiet room"}),
    ));
    refuse(&world, "INSERT", "initiative_outbox", "");

    world.tick().await;

    assert_eq!(
        world.model.requests().len(),
        1,
        "the model did decide to post"
    );
    assert!(
        world.said().is_empty(),
        "sent unrecorded: {:?}",
        world.said()
    );
    assert!(world.journal(Kind::InitiativePost).is_empty());
    let errors = errors(&world);
    assert!(
        errors.iter().any(|e| e
            == "did not post an ambient thought: it could not be recorded before sending: database error: database or disk is full"),
        "{errors:#?}"
    );
}

#[tokio::test]
async fn a_consideration_the_store_cannot_record_does_not_consult_the_model() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES];
    let world = World::start(s).await;
    refuse(&world, "INSERT", "initiative_state", "");

    world.tick().await;

    assert!(
        world.model.requests().is_empty(),
        "without a recorded consideration the cooldown cannot hold"
    );
    let errors = errors(&world);
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("could not record this consideration: ")),
        "{errors:#?}"
    );
}

#[tokio::test]
async fn extracted_facts_the_store_refuses_are_extracted_again() {
    let world = World::start(settings()).await;
    world.hear(
        GENERAL,
        "ada",
        "we decided the server's game night moves to Fridays at 8pm",
        Source::Text,
    );
    let extraction = Scripted::tool(
        "remember_facts",
        json!({"facts": [{"kind": "decision", "importance": "high", "scope": "guild",
            "subject": "game night", "content": "Game night is on Fridays at 8pm.", "sources": [1]}]}),
    );
    world.model.push(extraction.clone());
    refuse(&world, "INSERT", "facts", "");

    let memory = &world.app.memory;
    assert_eq!(memory.extract_channel(Some(GUILD_A), GENERAL).await, 0);
    let errors = errors(&world);
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("could not store 1 extracted fact(s): ")
                && e.ends_with("; these messages will be read again")),
        "{errors:#?}"
    );
    assert_eq!(
        world
            .app
            .store()
            .memory()
            .extraction_checkpoint(GENERAL)
            .unwrap(),
        None,
        "the checkpoint stays before the unstored facts"
    );

    allow(&world, "INSERT");
    world.model.push(extraction);
    assert_eq!(memory.extract_channel(Some(GUILD_A), GENERAL).await, 1);
    assert_eq!(world.model.requests().len(), 2, "read again");
    assert_eq!(
        facts(&world),
        vec![(
            FactKind::Decision,
            "Game night is on Fridays at 8pm.".into()
        )]
    );
}

#[tokio::test]
async fn feedback_the_store_refuses_is_harvested_at_the_next_pass() {
    let world = World::start(settings()).await;
    let now = world.clock.now();
    let post = MessageId(next_snowflake(now));
    let store = &world.app.store();
    store
        .initiative()
        .outbox_insert("nonce-post", GUILD_A, GENERAL, "tabs beat spaces", now)
        .unwrap();
    store
        .initiative()
        .outbox_settle("nonce-post", GUILD_A, post)
        .unwrap();
    store
        .messages()
        .insert_message(&StoredMessage {
            author_is_bot: true,
            is_self: true,
            ..StoredMessage::said(
                post,
                Some(GUILD_A),
                GENERAL,
                UserId(1),
                "ambient",
                "tabs beat spaces",
                now,
            )
        })
        .unwrap();
    world.clock.advance(chrono::Duration::minutes(1));
    world
        .app
        .senses
        .perceive(Percept::Reaction {
            place: Place {
                guild: Some(GUILD_A),
                channel: GENERAL,
            },
            message: post,
            user: Author {
                id: UserId(50),
                name: "ada".into(),
                is_bot: false,
            },
            emoji: "👎".into(),
            added: true,
            at: world.clock.now(),
        })
        .unwrap();
    refuse(&world, "INSERT", "facts", "");

    let harvest = || {
        ambient::garden::feedback::harvest(
            &(*store).into(),
            &world.app.memory,
            UserId(1),
            world.clock.now(),
        )
    };
    assert_eq!(harvest(), 0);
    let errors = errors(&world);
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("stopped keeping feedback: a write failed: ")),
        "{errors:#?}"
    );

    allow(&world, "INSERT");
    assert_eq!(harvest(), 1, "the 👎 was not skipped");
    let feedback = facts(&world);
    assert!(
        feedback
            .iter()
            .any(|(kind, text)| *kind == FactKind::Feedback && text.contains("disliked")),
        "{feedback:?}"
    );
}

#[tokio::test]
async fn a_delete_the_store_refuses_is_reported_not_swallowed() {
    let world = World::start(settings()).await;
    let gone = world
        .message(GENERAL, "ada", "my phone number is 555-0100", Addressed::No)
        .await;
    // A delete blanks the message's row, which is also its context-stream line.
    refuse(&world, "UPDATE", "messages", "");

    let deleted = world.app.senses.perceive(Percept::Delete {
        id: gone,
        place: Place {
            guild: Some(GUILD_A),
            channel: GENERAL,
        },
        at: world.clock.now(),
    });

    let err = deleted.expect_err("the old text still reaches prompts: that is an error");
    assert_eq!(err.to_string(), "database error: database or disk is full");
}

#[tokio::test]
async fn an_image_the_budget_cannot_count_is_not_attached() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES];
    s.initiative.discovery.allow_image_posts = true;
    s.initiative.discovery.max_images_per_day = 1;
    let model = crate::support::model_server::ModelServer::start();
    s.initiative.discovery.image_generation.base_url = model.openai_base();
    s.initiative.discovery.image_generation.allow_private = true;
    let world = World::start_in(
        s,
        std::sync::Arc::new(tempfile::tempdir().unwrap()),
        model,
        ambient::clock::ManualClock::at_test_epoch(),
    )
    .await;
    world.model.push(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "made you this", "reason": "r",
               "media": {"kind": "image", "prompt": "a cat made of rust"}}),
    ));
    refuse(&world, "INSERT", "usage", "WHEN NEW.provider = 'images'");

    world.tick().await;

    let said = world.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(
        said[0].files,
        Vec::<String>::new(),
        "uncounted, it would not count against maxImagesPerDay"
    );
    assert!(
        world
            .journal(Kind::InitiativeSkip)
            .iter()
            .any(|e| e.summary == "posted without the requested image"
                && e.reason
                    == "the image could not be recorded: database error: database or disk is full"),
        "{:#?}",
        world.journal(Kind::InitiativeSkip)
    );
}
