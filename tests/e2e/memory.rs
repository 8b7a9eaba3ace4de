//! Memory: supersede and reinforce, scoring, isolation, extraction,
//! compaction, lifecycle, export/import and people's control.

use ambient::clock::Clock;
use ambient::ids::{ChannelId, MessageId, UserId};
use ambient::memory::compact::Compaction;
use ambient::memory::search::Reader;
use ambient::memory::{Stored, manual, portable};
use ambient::settings::ProviderKind;
use ambient::store::memory::FactFilter;
use ambient::store::messages::{Source, StoredMessage};
use ambient::vocab::fact::{FactKind, Importance, Scope, ScopeKind};
use serde_json::json;

use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, GUILD_A, GUILD_B, MEMES, World, settings};

fn decision(world: &World, text: &str) -> Stored {
    let f = manual(
        Scope::guild(GUILD_A),
        FactKind::Decision,
        None,
        text,
        None,
        world.clock.now(),
    );
    world.app.memory.remember(f, None).unwrap()
}

fn active_decisions(world: &World) -> Vec<String> {
    world
        .app
        .store()
        .memory()
        .list_facts(&FactFilter {
            guild: Some(Some(GUILD_A)),
            kind: Some(FactKind::Decision),
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|f| f.content)
        .collect()
}

#[tokio::test]
async fn the_seeds_example_leaves_one_active_decision() {
    let world = World::start(settings()).await;
    let old = decision(&world, "Use session cookies for auth");
    let new = decision(&world, "Use JWT with refresh tokens for auth");
    let Stored::Superseded {
        new: jwt,
        old: cookies,
    } = new
    else {
        panic!("{new:?}")
    };
    assert_eq!(cookies.id, old.fact().id);
    assert_eq!(
        active_decisions(&world),
        vec!["Use JWT with refresh tokens for auth"]
    );
    let stored_old = world
        .app
        .store()
        .memory()
        .fact(&cookies.id)
        .unwrap()
        .unwrap();
    assert_eq!(stored_old.superseded_by.as_deref(), Some(jwt.id.as_str()));
    assert_eq!(
        jwt.importance,
        Importance::High,
        "a decision is high importance by default"
    );
}

#[tokio::test]
async fn supersede_happens_above_the_threshold_and_not_at_or_below_it() {
    let world = World::start(settings()).await;
    // The old fact has five keywords: alpha beta gamma delta epsilon.
    decision(&world, "alpha beta gamma delta epsilon");
    // Shares two of five (0.4): not above the threshold, so both stay.
    assert!(matches!(
        decision(&world, "alpha beta zeta eta theta"),
        Stored::New(_)
    ));
    assert_eq!(active_decisions(&world).len(), 2);
    // Shares three of the first fact's five (0.6): it replaces one of them.
    assert!(matches!(
        decision(&world, "alpha beta gamma iota kappa"),
        Stored::Superseded { .. }
    ));
    assert_eq!(active_decisions(&world).len(), 2);
    // The same thing again reinforces instead of duplicating, with a breadcrumb.
    let again = world.app.memory.remember(
        {
            let mut f = manual(
                Scope::guild(GUILD_A),
                FactKind::Decision,
                None,
                "alpha beta gamma iota kappa",
                None,
                world.clock.now(),
            );
            f.sources = vec![MessageId(4242)];
            f
        },
        Some(MessageId(4242)),
    );
    let Ok(Stored::Reinforced(f)) = again else {
        panic!("{again:?}")
    };
    assert_eq!(f.strength, 2);
    let stored = world.app.store().memory().fact(&f.id).unwrap().unwrap();
    assert_eq!(stored.reinforcements.len(), 1);
    assert_eq!(stored.reinforcements[0].0, Some(MessageId(4242)));
    assert_eq!(active_decisions(&world).len(), 2);
    // A different kind in the same scope is never superseded.
    let pref = manual(
        Scope::guild(GUILD_A),
        FactKind::Preference,
        None,
        "alpha beta gamma delta epsilon",
        None,
        world.clock.now(),
    );
    assert!(matches!(
        world.app.memory.remember(pref, None).unwrap(),
        Stored::New(_)
    ));
}

fn remember_fact(world: &World, text: &str) -> Stored {
    let f = manual(
        Scope::guild(GUILD_A),
        FactKind::Fact,
        None,
        text,
        None,
        world.clock.now(),
    );
    world.app.memory.remember(f, None).unwrap()
}

fn found(world: &World, query: &str) -> Vec<String> {
    world
        .app
        .memory
        .search(Reader::Guild(GUILD_A), query, 10)
        .into_iter()
        .map(|s| s.fact.content)
        .collect()
}

#[tokio::test]
async fn facts_that_share_words_are_both_kept_only_decisions_supersede() {
    let world = World::start(settings()).await;
    // The counter-examples: overlap 2/3 > 0.4, but neither makes the other false.
    for (first, second) in [
        ("Bob lives in Berlin", "Bob works in Berlin"),
        ("Alice likes cats", "Alice likes dogs"),
    ] {
        assert!(matches!(remember_fact(&world, first), Stored::New(_)));
        let again = remember_fact(&world, second);
        assert!(matches!(again, Stored::New(_)), "{second:?}: {again:?}");
    }
    let active: Vec<String> = world
        .app
        .store()
        .memory()
        .list_facts(&FactFilter {
            guild: Some(Some(GUILD_A)),
            kind: Some(FactKind::Fact),
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|f| f.content)
        .collect();
    assert_eq!(active.len(), 4, "{active:?}");
    let berlin = found(&world, "Berlin");
    assert!(
        berlin.contains(&"Bob lives in Berlin".to_string()),
        "{berlin:?}"
    );
    assert!(
        berlin.contains(&"Bob works in Berlin".to_string()),
        "{berlin:?}"
    );
    assert!(found(&world, "cats").contains(&"Alice likes cats".to_string()));
    assert!(found(&world, "dogs").contains(&"Alice likes dogs".to_string()));
    // The same fact again is still merged, not duplicated.
    let Stored::Reinforced(f) = remember_fact(&world, "Bob lives in Berlin.") else {
        panic!("a repeated fact should reinforce")
    };
    assert_eq!((f.content.as_str(), f.strength), ("Bob lives in Berlin", 2));
    // The same words as decisions: the newer one replaces the older.
    decision(&world, "Alice likes cats");
    assert!(matches!(
        decision(&world, "Alice likes dogs"),
        Stored::Superseded { .. }
    ));
    assert_eq!(active_decisions(&world), vec!["Alice likes dogs"]);
}

#[tokio::test]
async fn search_orders_by_relevance_recency_and_importance_as_documented() {
    let world = World::start(settings()).await;
    let now = world.clock.now();
    let add = |content: &str, days_old: i64, importance: Importance| {
        let mut f = manual(
            Scope::guild(GUILD_A),
            FactKind::Fact,
            Some(importance),
            content,
            None,
            now,
        );
        f.updated_at = now - chrono::Duration::days(days_old);
        world.app.store().memory().insert_fact(&f).unwrap();
        f.id
    };
    let fresh_medium = add("the favourite editor here is helix", 0, Importance::Medium);
    let month_high = add("the favourite editor there is helix", 30, Importance::High);
    let fortnight_medium = add(
        "the favourite editor elsewhere is helix",
        15,
        Importance::Medium,
    );
    let two_months_high = add(
        "the favourite editor anywhere is helix",
        60,
        Importance::High,
    );
    let found = world
        .app
        .memory
        .search(Reader::Guild(GUILD_A), "helix editor", 10);
    let order: Vec<&str> = found.iter().map(|s| s.fact.id.as_str()).collect();
    assert_eq!(
        order,
        vec![
            fresh_medium.as_str(),
            month_high.as_str(),
            fortnight_medium.as_str(),
            two_months_high.as_str()
        ]
    );
    // score = relevance × 0.5^(age/30) × (1.5 if high): the month-old high fact scores 0.75 of the fresh one.
    let ratio = found[1].score / found[0].score;
    assert!((ratio - 0.75).abs() < 0.02, "{ratio}");
    let ratio = found[3].score / found[0].score;
    assert!((ratio - 0.375).abs() < 0.02, "{ratio}");
}

#[tokio::test]
async fn a_fact_in_guild_a_is_never_returned_in_guild_b() {
    let world = World::start(settings()).await;
    let now = world.clock.now();
    for (scope, text) in [
        (
            Scope::guild(GUILD_A),
            "the secret launch codeword is pineapple",
        ),
        (
            Scope::channel(Some(GUILD_A), GENERAL),
            "pineapple pizza is banned in general",
        ),
        (
            Scope::user(Some(GUILD_A), UserId(50)),
            "ada loves pineapple",
        ),
        (
            Scope::user(None, UserId(50)),
            "in a DM ada said pineapple is her password hint",
        ),
    ] {
        world
            .app
            .memory
            .remember(manual(scope, FactKind::Fact, None, text, None, now), None)
            .unwrap();
    }
    assert_eq!(
        world
            .app
            .memory
            .search(Reader::Guild(GUILD_A), "pineapple", 10)
            .len(),
        3
    );
    assert!(
        world
            .app
            .memory
            .search(Reader::Guild(GUILD_B), "pineapple", 10)
            .is_empty()
    );
    assert!(
        world
            .app
            .memory
            .for_reply(Some(GUILD_B), UserId(50), "pineapple?")
            .is_empty()
    );
    let dm = world
        .app
        .memory
        .search(Reader::Dm(UserId(50)), "pineapple", 10);
    assert_eq!(dm.len(), 1);
    assert!(
        world
            .app
            .memory
            .search(Reader::Dm(UserId(51)), "pineapple", 10)
            .is_empty()
    );
    let (memory, _, _) = world
        .app
        .memory
        .for_initiative(GUILD_B, "pineapple")
        .unwrap();
    assert!(memory.is_empty(), "{memory:?}");
}

#[tokio::test]
async fn conversations_are_extracted_into_scoped_facts_and_small_talk_costs_nothing() {
    let world = World::start(settings()).await;
    world.hear(GENERAL, "ada", "hi all", Source::Text);
    world.hear(GENERAL, "bob", "hey :)", Source::Text);
    world
        .app
        .memory
        .extract_channel(Some(GUILD_A), GENERAL)
        .await;
    assert!(
        world.model.requests().is_empty(),
        "greetings alone are not worth a model call"
    );

    world.hear(
        GENERAL,
        "ada",
        "we decided the server's game night moves to Fridays at 8pm",
        Source::Text,
    );
    world.hear(
        GENERAL,
        "bob",
        "personally I only ever play as the support class",
        Source::Vc,
    );
    world.model.push(Scripted::tool(
        "remember_facts",
        json!({"facts": [
            {"kind": "decision", "importance": "high", "scope": "guild", "subject": "game night", "content": "Game night is on Fridays at 8pm.", "sources": [1]},
            {"kind": "preference", "importance": "medium", "scope": "user", "about": "bob", "subject": "bob's class", "content": "bob plays support.", "sources": [2]}
        ]}),
    ));
    let stored = world
        .app
        .memory
        .extract_channel(Some(GUILD_A), GENERAL)
        .await;
    assert_eq!(stored, 2);
    let prompt = world.model.requests()[0].body.to_string();
    assert!(
        prompt.contains("[1] ada: we decided") && prompt.contains("[2] bob [vc]: personally"),
        "{prompt}"
    );
    let facts = world
        .app
        .store()
        .memory()
        .list_facts(&FactFilter {
            guild: Some(Some(GUILD_A)),
            ..Default::default()
        })
        .unwrap();
    let game = facts.iter().find(|f| f.kind == FactKind::Decision).unwrap();
    assert_eq!(
        (game.scope.kind, game.importance),
        (ScopeKind::Guild, Importance::High)
    );
    assert_eq!(game.sources.len(), 1);
    let bob = facts
        .iter()
        .find(|f| f.kind == FactKind::Preference)
        .unwrap();
    assert_eq!(bob.scope.kind, ScopeKind::User);
    assert_eq!(
        bob.scope.user,
        Some(UserId(50)),
        "about bob maps to bob's id from the transcript"
    );
    // The checkpoint: the same messages are not extracted twice.
    assert_eq!(
        world
            .app
            .memory
            .extract_channel(Some(GUILD_A), GENERAL)
            .await,
        0
    );
    assert_eq!(world.model.requests().len(), 1);
}

#[tokio::test]
async fn a_quiet_conversation_with_the_bot_is_extracted_by_the_maintenance_loop() {
    let mut s = settings();
    s.memory.conversation_idle_minutes = 10;
    let world = World::start(s).await;
    world.hear(
        MEMES,
        "ada",
        "I am starting a rust study group next month for beginners",
        Source::Text,
    );
    world
        .app
        .store()
        .messages()
        .insert_message(&StoredMessage {
            author_is_bot: true,
            is_self: true,
            ..StoredMessage::said(
                MessageId(ambient::ids::next_snowflake(world.clock.now())),
                Some(GUILD_A),
                MEMES,
                UserId(1),
                "ambient",
                "sounds great!",
                world.clock.now(),
            )
        })
        .unwrap();
    world
        .model
        .fallback(Scripted::tool("remember_facts", json!({"facts": []})));
    world.app.memory.extract_due().await;
    assert!(world.model.requests().is_empty(), "still talking: not yet");
    world.clock.advance(chrono::Duration::minutes(11));
    world.app.memory.extract_due().await;
    assert_eq!(
        world.model.requests().len(),
        1,
        "quiet for 10 minutes: extracted"
    );
}

#[tokio::test]
async fn compaction_keeps_every_high_fact_and_without_a_model_drops_only_low_ones() {
    let mut s = settings();
    s.memory.guild_compaction_threshold = 6;
    let world = World::start(s.clone()).await;
    let now = world.clock.now();
    let add = |w: &World, i: usize, importance: Importance| {
        let mut f = manual(
            Scope::guild(GUILD_A),
            FactKind::Fact,
            Some(importance),
            &format!("unrelated fact number {i} word{i}x"),
            None,
            now,
        );
        f.updated_at = now - chrono::Duration::days(20 - i as i64);
        w.app.store().memory().insert_fact(&f).unwrap();
    };
    for i in 0..3 {
        add(&world, i, Importance::High);
    }
    for i in 3..6 {
        add(&world, i, Importance::Medium);
    }
    for i in 6..9 {
        add(&world, i, Importance::Low);
    }
    world.model.push(Scripted::tool(
        "summary",
        json!({"content": "Older odds and ends, folded."}),
    ));
    let done = world.app.memory.compact(&Scope::guild(GUILD_A)).await;
    // 9 active, threshold 6: down to 3/4 of it (4) means folding the 6 oldest non-high facts into one.
    assert!(
        matches!(done, Compaction::Summarised { facts: 6, .. }),
        "{done:?}"
    );
    let left = world
        .app
        .store()
        .memory()
        .facts_in_scope(&Scope::guild(GUILD_A), None)
        .unwrap();
    assert_eq!(
        left.iter()
            .filter(|f| f.importance == Importance::High)
            .count(),
        3,
        "every high fact kept"
    );
    assert!(
        left.iter()
            .any(|f| f.kind == FactKind::SessionSummary
                && f.content == "Older odds and ends, folded.")
    );
    assert_eq!(left.len(), 4);

    let mut no_model = s;
    no_model.executive.roles.extract.provider = ProviderKind::None;
    let world = World::start(no_model).await;
    for i in 0..3 {
        add(&world, i, Importance::High);
    }
    for i in 3..6 {
        add(&world, i, Importance::Medium);
    }
    for i in 6..9 {
        add(&world, i, Importance::Low);
    }
    let done = world.app.memory.compact(&Scope::guild(GUILD_A)).await;
    assert_eq!(done, Compaction::DroppedLow { facts: 3 });
    let left = world
        .app
        .store()
        .memory()
        .facts_in_scope(&Scope::guild(GUILD_A), None)
        .unwrap();
    assert_eq!(
        left.iter()
            .filter(|f| f.importance == Importance::High)
            .count(),
        3
    );
    assert_eq!(
        left.iter()
            .filter(|f| f.importance == Importance::Medium)
            .count(),
        3,
        "medium facts survive without a model"
    );
    assert_eq!(
        left.iter()
            .filter(|f| f.importance == Importance::Low)
            .count(),
        0
    );
    assert!(
        world
            .journal(ambient::vocab::journal::Kind::Memory)
            .iter()
            .any(|e| e.summary == "dropped 3 low-importance memories")
    );
}

#[tokio::test]
async fn inactive_facts_expire_and_a_deleted_channel_keeps_only_its_important_facts() {
    let world = World::start(settings()).await;
    let now = world.clock.now();
    let mut old = manual(
        Scope::guild(GUILD_A),
        FactKind::Fact,
        None,
        "an old unused fact",
        None,
        now,
    );
    old.last_seen_at = now - chrono::Duration::days(91);
    world.app.store().memory().insert_fact(&old).unwrap();
    for (importance, text) in [
        (Importance::High, "memes must stay wholesome"),
        (Importance::Low, "someone posted a frog"),
    ] {
        world
            .app
            .memory
            .remember(
                manual(
                    Scope::channel(Some(GUILD_A), MEMES),
                    FactKind::Fact,
                    Some(importance),
                    text,
                    None,
                    now,
                ),
                None,
            )
            .unwrap();
    }
    assert_eq!(world.app.memory.expire(), (1, 0));
    assert!(world.app.store().memory().fact(&old.id).unwrap().is_none());

    assert_eq!(
        world.app.memory.archive_channel(GUILD_A, MEMES).unwrap(),
        (1, 1)
    );
    let guild_wide = world
        .app
        .store()
        .memory()
        .facts_in_scope(&Scope::guild(GUILD_A), None)
        .unwrap();
    assert!(
        guild_wide
            .iter()
            .any(|f| f.content == "memes must stay wholesome")
    );
    assert!(
        world
            .app
            .memory
            .search(Reader::Guild(GUILD_A), "frog", 5)
            .is_empty(),
        "archived facts are not searched"
    );
    world.clock.advance(chrono::Duration::days(8));
    assert_eq!(
        world.app.memory.expire().1,
        1,
        "archived facts are purged after 7 days"
    );
}

#[tokio::test]
async fn upkeep_says_when_it_next_has_work_if_nobody_speaks() {
    let mut s = settings();
    s.memory.listen_batch_size = 2;
    let world = World::start(s).await;
    let now = world.clock.now();
    let memory = &world.app.memory;
    assert_eq!(
        memory.next_upkeep(now),
        None,
        "nothing until someone speaks"
    );

    let mut old = manual(
        Scope::guild(GUILD_A),
        FactKind::Fact,
        None,
        "a fact last used 80 days ago",
        None,
        now,
    );
    old.last_seen_at = now - chrono::Duration::days(80);
    world.app.store().memory().insert_fact(&old).unwrap();
    let expires = old.last_seen_at + chrono::Duration::days(90);
    assert_eq!(memory.next_upkeep(now), Some(expires));
    world.clock.set(expires);
    assert_eq!(memory.expire(), (0, 0), "nothing before then");
    world.clock.advance(chrono::Duration::minutes(1));
    assert_eq!(memory.expire(), (1, 0), "and the fact after it");
    assert_eq!(memory.next_upkeep(world.clock.now()), None);

    for text in ["the ferry leaves at nine", "bring a coat"] {
        world
            .message(GENERAL, "ada", text, ambient::attention::Addressed::No)
            .await;
    }
    assert_eq!(
        memory.next_upkeep(world.clock.now()),
        Some(world.clock.now()),
        "a batch of listened messages is due at once"
    );
}

#[tokio::test]
async fn export_then_import_round_trips_exactly() {
    let world = World::start(settings()).await;
    decision(&world, "Use session cookies for auth");
    decision(&world, "Use JWT with refresh tokens for auth");
    let mut f = manual(
        Scope::user(Some(GUILD_A), UserId(9)),
        FactKind::Preference,
        None,
        "ada prefers tabs",
        Some((UserId(9), "ada".into())),
        world.clock.now(),
    );
    f.sources = vec![MessageId(77)];
    world.app.memory.remember(f.clone(), None).unwrap();
    world.app.memory.remember(f, Some(MessageId(78))).unwrap();
    let first = portable::export(
        &world.app.store().memory().all_facts().unwrap(),
        world.clock.now(),
    );
    let text = serde_json::to_string(&first).unwrap();

    let other = World::start(settings()).await;
    let facts = portable::parse(&text).unwrap();
    assert_eq!(
        other.app.store().memory().import_facts(&facts).unwrap(),
        (3, 0)
    );
    assert_eq!(
        other.app.store().memory().import_facts(&facts).unwrap(),
        (0, 3),
        "existing ids are skipped"
    );
    let second = portable::export(
        &other.app.store().memory().all_facts().unwrap(),
        world.clock.now(),
    );
    assert_eq!(first.facts, second.facts);
    assert_eq!(
        second
            .facts
            .iter()
            .find(|f| f.content == "ada prefers tabs")
            .unwrap()
            .reinforcements
            .len(),
        1
    );
}

#[tokio::test]
async fn a_truncated_or_invalid_import_is_rejected_whole() {
    let world = World::start(settings()).await;
    decision(&world, "Keep the wiki in markdown");
    decision(&world, "Ship on Tuesdays only");
    let text = serde_json::to_string_pretty(&portable::export(
        &world.app.store().memory().all_facts().unwrap(),
        world.clock.now(),
    ))
    .unwrap();
    let truncated = &text[..text.len() / 2];
    let err = portable::parse(truncated).unwrap_err().to_string();
    assert!(err.starts_with("line "), "{err}");
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["facts"][1]["content"] = json!("   ");
    let err = portable::parse(&doc.to_string()).unwrap_err().to_string();
    assert!(
        err.starts_with("facts[1]") && err.contains("content is empty"),
        "{err}"
    );
    let other = World::start(settings()).await;
    assert!(other.app.store().memory().all_facts().unwrap().is_empty());
}

#[tokio::test]
async fn the_reply_prompt_carries_relevant_memory_and_the_search_tool() {
    let world = World::start(settings()).await;
    let now = world.clock.now();
    world
        .app
        .memory
        .remember(
            manual(
                Scope::guild(GUILD_A),
                FactKind::Decision,
                None,
                "The book club reads Dune in March",
                None,
                now,
            ),
            None,
        )
        .unwrap();
    world
        .app
        .memory
        .remember(
            manual(
                Scope::user(Some(GUILD_A), UserId(50)),
                FactKind::Preference,
                None,
                "ada dislikes spoilers",
                Some((UserId(50), "ada".into())),
                now,
            ),
            None,
        )
        .unwrap();
    let lines = world
        .app
        .memory
        .for_reply(Some(GUILD_A), UserId(50), "what book are we reading?");
    assert!(
        lines.contains(&"[decision] The book club reads Dune in March".to_string()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"[about ada] ada dislikes spoilers".to_string()),
        "{lines:?}"
    );
}

#[tokio::test]
async fn forget_me_leaves_no_user_fact_of_that_member() {
    let world = World::start(settings()).await;
    let now = world.clock.now();
    for text in ["bob likes jazz", "bob lives in Lyon"] {
        world
            .app
            .memory
            .remember(
                manual(
                    Scope::user(Some(GUILD_A), UserId(4)),
                    FactKind::Fact,
                    None,
                    text,
                    None,
                    now,
                ),
                None,
            )
            .unwrap();
    }
    world
        .app
        .memory
        .remember(
            manual(
                Scope::user(Some(GUILD_A), UserId(3)),
                FactKind::Fact,
                None,
                "alice likes folk",
                None,
                now,
            ),
            None,
        )
        .unwrap();
    world
        .app
        .memory
        .remember(
            manual(
                Scope::guild(GUILD_A),
                FactKind::Fact,
                None,
                "the server likes music",
                None,
                now,
            ),
            None,
        )
        .unwrap();
    world.hear(
        GENERAL,
        "bob",
        "my address is 5 rue de la Paix",
        Source::Text,
    );
    let (facts, _) = world
        .app
        .memory
        .forget_me(Some(GUILD_A), UserId(4), false)
        .unwrap();
    assert_eq!(facts, 2);
    let left = world
        .app
        .store()
        .memory()
        .list_facts(&FactFilter {
            user: Some(UserId(4)),
            include_inactive: true,
            ..Default::default()
        })
        .unwrap();
    assert!(left.is_empty());
    assert_eq!(
        world
            .app
            .store()
            .memory()
            .list_facts(&FactFilter {
                guild: Some(Some(GUILD_A)),
                ..Default::default()
            })
            .unwrap()
            .len(),
        2
    );
    let (_, erased) = world
        .app
        .memory
        .forget_me(Some(GUILD_A), UserId(50), true)
        .unwrap();
    assert_eq!(erased, 1);
    assert!(
        world
            .app
            .store()
            .messages()
            .recent_messages(GENERAL, 10)
            .unwrap()
            .is_empty(),
        "erased messages are gone from history"
    );
    let _ = ChannelId(0);
}

#[test]
fn the_memory_cli_follows_the_seeds_verbs() {
    use crate::support::home::Home;
    let home = Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}));
    // The console makes the guild known, as a running bot would.
    let (_, out) = home.console("hello\n");
    assert!(out.status.success());
    let run = |args: &[&str]| {
        let out = home.run(args);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, text, err) = run(&["remember", "Use session cookies for auth"]);
    assert!(
        ok && text.starts_with("Remembered (high decision"),
        "{text}{err}"
    );
    let (_, text, _) = run(&["remember", "Use JWT with refresh tokens for auth"]);
    assert!(
        text.contains("it replaces an earlier decision: \"Use session cookies for auth\""),
        "{text}"
    );
    let (_, text, _) = run(&[
        "remember",
        "--type",
        "preference",
        "--importance",
        "low",
        "dark mode everywhere",
    ]);
    assert!(text.starts_with("Remembered (low preference"), "{text}");
    let (ok, _, err) = run(&["remember", "--type", "whim", "x"]);
    assert!(
        !ok && err.contains("--type: \"whim\" is not a memory type"),
        "{err}"
    );

    let (_, listed, _) = run(&["memories", "--type", "decision"]);
    assert!(
        listed.contains("Use JWT with refresh tokens for auth") && !listed.contains("cookies"),
        "{listed}"
    );
    let (_, found, _) = run(&["memories", "search", "auth tokens"]);
    assert!(
        found
            .lines()
            .next()
            .unwrap()
            .contains("Use JWT with refresh tokens for auth"),
        "{found}"
    );
    let (_, stats, _) = run(&["memories", "stats"]);
    assert!(
        stats.starts_with("2 active memories (1 superseded or archived)")
            && stats.contains("decision"),
        "{stats}"
    );

    let id = found.split_whitespace().nth(1).unwrap().to_string();
    let (ok, edited, _) = run(&[
        "memories",
        "edit",
        &id,
        "--content",
        "Use JWT with refresh tokens for all auth",
    ]);
    assert!(ok && edited.contains("for all auth"), "{edited}");

    let (ok, exported, _) = run(&["memories", "export", "--pretty"]);
    assert!(ok);
    let file = home.path().join("backup.json");
    std::fs::write(&file, &exported).unwrap();
    let truncated = home.path().join("truncated.json");
    std::fs::write(&truncated, &exported[..exported.len() * 2 / 3]).unwrap();
    let (ok, _, err) = run(&["memories", "delete", &id, "--force"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["memories", "import", truncated.to_str().unwrap()]);
    assert!(
        !ok && err.contains("truncated.json: line ") && err.contains("nothing was imported"),
        "{err}"
    );
    let (_, stats, _) = run(&["memories", "stats"]);
    assert!(
        stats.starts_with("1 active memories"),
        "the bad file changed nothing: {stats}"
    );
    let (ok, imported, _) = run(&["memories", "import", file.to_str().unwrap()]);
    assert!(
        ok && imported.contains("Imported 1 memories (2 already present, skipped)"),
        "{imported}"
    );
}

fn memory_lines(world: &World, summary: &str) -> Vec<String> {
    world
        .journal(ambient::vocab::journal::Kind::Memory)
        .into_iter()
        .filter(|e| e.summary.starts_with(summary))
        .map(|e| e.reason)
        .collect()
}

#[tokio::test]
async fn a_failing_extraction_backs_off_per_channel_and_recovers() {
    let mut s = settings();
    // The provider's own cooldown would hide the back-off: only the back-off is measured here.
    s.executive.failure_threshold = 1000;
    let world = World::start(s).await;
    for i in 0..100 {
        world.hear(
            GENERAL,
            "ada",
            &format!("note {i}: the rust study group meets on thursdays"),
            Source::Text,
        );
    }
    world
        .model
        .fallback(Scripted::status(500, "the extraction model is down"));
    // Twelve simulated minutes with the maintenance loop's one-minute turn.
    for _ in 0..=12 {
        world.app.memory.extract_due().await;
        world.clock.advance(chrono::Duration::minutes(1));
    }
    assert_eq!(
        world.model.requests().len(),
        4,
        "tried at minutes 0, 1, 3 and 7; the next try is at 15"
    );
    let failures = memory_lines(&world, "could not extract memories");
    assert_eq!(
        failures.len(),
        4,
        "one journal line per back-off: {failures:?}"
    );
    for (line, wait) in failures
        .iter()
        .zip(["1 minute", "2 minutes", "4 minutes", "8 minutes"])
    {
        assert!(line.contains(&format!("trying again in {wait}")), "{line}");
    }
    // Another channel is not held back by this one's failures.
    for i in 0..50 {
        world.hear(
            MEMES,
            "bo",
            &format!("meme {i} about cats in boxes"),
            Source::Text,
        );
    }
    world.app.memory.extract_due().await;
    assert_eq!(world.model.requests().len(), 5);

    // The model recovers: at minute 15 both channels' waiting messages are read, once.
    world
        .model
        .fallback(Scripted::tool("remember_facts", json!({"facts": []})));
    world.clock.advance(chrono::Duration::minutes(2));
    world.app.memory.extract_due().await;
    assert_eq!(world.model.requests().len(), 7);
    let done = memory_lines(&world, "extracted 0 fact(s) from 100 message(s)");
    assert_eq!(
        done,
        vec!["extraction works again after 4 failure(s) in a row"]
    );
    world.app.memory.extract_due().await;
    assert_eq!(world.model.requests().len(), 7, "nothing left to read");

    // The back-off was reset: the next failure waits one minute again.
    world.model.fallback(Scripted::status(500, "down again"));
    for i in 0..50 {
        world.hear(
            GENERAL,
            "ada",
            &format!("update {i}: the study group moved to fridays"),
            Source::Text,
        );
    }
    world.app.memory.extract_due().await;
    let failures = memory_lines(&world, "could not extract memories");
    assert!(
        failures
            .last()
            .unwrap()
            .contains("trying again in 1 minute (failure 1 in a row)"),
        "{failures:?}"
    );
}
