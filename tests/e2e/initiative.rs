//! The ambient text cycle on the manual clock and seeded RNG, against the
//! scripted model server: gates, pending thoughts, decisions, posting.

use ambient::clock::Clock;
use ambient::settings::ProviderKind;
use ambient::store::messages::Source;
use ambient::vocab::journal::{Entry, Kind};
use serde_json::{Value, json};

use crate::support::model_server::Scripted;
use crate::support::world::{B_GENERAL, GENERAL, GUILD_A, MEMES, World, settings};

fn decide(v: Value) -> Scripted {
    Scripted::tool("decide", v)
}

fn only_guild_a(s: &mut ambient::settings::Settings) {
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES];
}

/// The user block of the n-th model request.
fn prompt(world: &World, n: usize) -> String {
    let req = &world.model.requests()[n].body;
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn gate_reasons(world: &World) -> Vec<String> {
    world
        .journal(Kind::Gate)
        .into_iter()
        .map(|e| format!("{}: {}", e.summary, e.reason))
        .collect()
}

#[tokio::test]
async fn each_gate_stops_a_guild_with_its_reason_and_no_model_call() {
    type Change = Box<dyn Fn(&mut ambient::settings::Settings)>;
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "enabled",
            Box::new(|s| s.initiative.text.enabled = false),
            "initiative.text.enabled is off",
        ),
        (
            "pool",
            Box::new(|s| s.permissions.replies.discovery_channel_ids.clear()),
            "discoveryChannelIds is empty",
        ),
        (
            "pool",
            Box::new(|s| {
                s.permissions.replies.blocked_channel_ids = vec![GENERAL, MEMES, B_GENERAL]
            }),
            "blocked or not allowed",
        ),
        (
            "eagerness",
            Box::new(|s| s.initiative.text.eagerness = 0),
            "the eagerness roll (0%) said not now",
        ),
        (
            "model",
            Box::new(|s| s.executive.roles.ambient.provider = ProviderKind::None),
            "no model for the ambient role",
        ),
        (
            "daily_cap",
            Box::new(|s| s.initiative.text.max_posts_per_day = 0),
            "0 of 0 posts in the last 24 h",
        ),
    ];
    for (gate, change, reason) in cases {
        let mut s = settings();
        change(&mut s);
        let world = World::start(s).await;
        world.tick().await;
        let reasons = gate_reasons(&world);
        assert!(
            reasons
                .iter()
                .any(|r| r.contains(&format!("the {gate} gate")) && r.contains(reason)),
            "{gate}: {reasons:#?}"
        );
        assert!(
            world.model.requests().is_empty(),
            "{gate}: no model call when a gate fails"
        );
    }
}

#[tokio::test]
async fn the_cooldown_counts_from_the_last_consideration() {
    let mut s = settings();
    only_guild_a(&mut s);
    s.initiative.text.min_minutes_between_posts = 30;
    let world = World::start(s).await;
    world.model.fallback(decide(
        json!({"action": "drop", "reason": "nothing to say"}),
    ));
    world.tick().await;
    assert_eq!(world.model.requests().len(), 1);
    world.clock.advance(chrono::Duration::minutes(10));
    world.tick().await;
    assert_eq!(world.model.requests().len(), 1, "still cooling down");
    assert!(
        gate_reasons(&world)
            .iter()
            .any(|r| r.contains("cooldown") && r.contains("last considered 10 min ago"))
    );
    world.clock.advance(chrono::Duration::minutes(21));
    world.tick().await;
    assert_eq!(world.model.requests().len(), 2);
}

#[tokio::test]
async fn eagerness_zero_never_consults_and_a_hundred_always_does() {
    for (eagerness, expected) in [(0, 0), (100, 8)] {
        let mut s = settings();
        only_guild_a(&mut s);
        s.initiative.text.eagerness = eagerness;
        let world = World::start(s).await;
        world
            .model
            .fallback(decide(json!({"action": "drop", "reason": "quiet"})));
        for _ in 0..8 {
            world.tick().await;
            world.clock.advance(chrono::Duration::minutes(1));
        }
        assert_eq!(
            world.model.requests().len(),
            expected,
            "eagerness {eagerness}"
        );
    }
}

#[tokio::test]
async fn hold_refine_post_across_three_ticks() {
    let mut s = settings();
    only_guild_a(&mut s);
    let world = World::start(s).await;
    world
        .model
        .push(decide(json!({"action": "hold", "channel": "memes", "text": "draft one", "reason": "memes is quiet, wait"})))
        .push(decide(json!({"action": "hold", "text": "draft two, sharper", "reason": "almost"})))
        .push(decide(json!({"action": "post", "channel": "memes", "text": "final: cats are liquid", "reason": "good moment"})));
    world.tick().await;
    let p = world
        .app
        .store()
        .initiative()
        .pending_thought(GUILD_A)
        .unwrap()
        .unwrap();
    assert_eq!(
        (p.revision, p.draft.as_str(), p.channel),
        (1, "draft one", Some(MEMES))
    );
    let status = ambient::commands::status::Sources::of(&world.app);
    let lines = ambient::commands::status::widget(&status, Some(GUILD_A));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("held thought: \"draft one\" (revision 1")),
        "{lines:#?}"
    );
    world.clock.advance(chrono::Duration::minutes(1));
    world.tick().await;
    let p = world
        .app
        .store()
        .initiative()
        .pending_thought(GUILD_A)
        .unwrap()
        .unwrap();
    assert_eq!(
        (p.revision, p.draft.as_str(), p.channel),
        (2, "draft two, sharper", Some(MEMES)),
        "the channel carries over"
    );
    let second = prompt(&world, 1);
    assert!(
        second.contains("revision 1, meant for #memes): \"draft one\""),
        "{second}"
    );
    assert!(second.contains("memes is quiet, wait"));
    world.clock.advance(chrono::Duration::minutes(1));
    world.tick().await;

    let said = world.said();
    assert_eq!(said.len(), 1);
    assert_eq!(
        (said[0].channel, said[0].content.as_str()),
        (MEMES, "final: cats are liquid")
    );
    assert!(
        world
            .app
            .store()
            .initiative()
            .pending_thought(GUILD_A)
            .unwrap()
            .is_none()
    );
    let posts = world.journal(Kind::InitiativePost);
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].summary, "posted in #memes");
    assert_eq!(posts[0].data["revision"], 2);
    assert!(posts[0].message.is_some());
    let skips: Vec<String> = world
        .journal(Kind::InitiativeSkip)
        .into_iter()
        .map(|e| e.summary)
        .collect();
    assert_eq!(
        skips,
        vec!["held a thought (revision 1)", "held a thought (revision 2)"]
    );
}

#[tokio::test]
async fn a_held_thought_expires_from_its_creation_time() {
    let mut s = settings();
    only_guild_a(&mut s);
    s.initiative.text.pending_thought_max_age_minutes = 30;
    s.initiative.text.eagerness = 0; // after the drop, no fresh thought follows
    let world = World::start(s).await;
    world.model.fallback(decide(
        json!({"action": "hold", "text": "maybe later", "reason": "not yet"}),
    ));
    // Held at 0 with eagerness 0: a pending thought is revisited regardless of eagerness.
    world
        .app
        .store()
        .initiative()
        .save_pending_thought(&ambient::vocab::pending::PendingThought::new(
            GUILD_A,
            "first".into(),
            Some(GENERAL),
            "wait".into(),
            None,
            world.clock.now(),
            chrono::Duration::minutes(30),
        ))
        .unwrap();
    for _ in 0..3 {
        world.clock.advance(chrono::Duration::minutes(10));
        world.tick().await;
    }
    assert_eq!(
        world.model.requests().len(),
        2,
        "revisited at 10 and 20 minutes, expired at 30"
    );
    assert!(
        world
            .app
            .store()
            .initiative()
            .pending_thought(GUILD_A)
            .unwrap()
            .is_none()
    );
    let skips = world.journal(Kind::InitiativeSkip);
    assert!(
        skips
            .iter()
            .any(|e| e.summary.contains("expired after 30 min")),
        "{skips:#?}"
    );
}

#[tokio::test]
async fn a_held_thought_in_guild_a_does_not_block_guild_b() {
    let mut s = settings();
    s.initiative.text.revisit_minutes = 60;
    let world = World::start(s).await;
    world
        .app
        .store()
        .initiative()
        .save_pending_thought(&ambient::vocab::pending::PendingThought::new(
            GUILD_A,
            "A's thought".into(),
            Some(GENERAL),
            "later".into(),
            None,
            world.clock.now(),
            chrono::Duration::hours(3),
        ))
        .unwrap();
    world.model.fallback(decide(
        json!({"action": "post", "channel": "b-general", "text": "hello B", "reason": "why not"}),
    ));
    world.tick().await;
    let said = world.said();
    assert_eq!(said.len(), 1);
    assert_eq!(said[0].channel, B_GENERAL);
    assert_eq!(
        world.model.requests().len(),
        1,
        "only guild B was consulted"
    );
    let b_prompt = prompt(&world, 0);
    assert!(
        b_prompt.contains("You may post in: #b-general."),
        "guild B is offered only its own channel: {b_prompt}"
    );
    assert!(
        !b_prompt.contains("#memes") && !b_prompt.contains("#general "),
        "{b_prompt}"
    );
    assert!(
        gate_reasons(&world)
            .iter()
            .any(|r| r.contains("the pending gate") && r.contains("holding a thought"))
    );
}

#[tokio::test]
async fn the_daily_cap_is_a_rolling_24_hours() {
    let mut s = settings();
    only_guild_a(&mut s);
    s.initiative.text.max_posts_per_day = 2;
    let world = World::start(s).await;
    world.model.fallback(decide(
        json!({"action": "post", "channel": "general", "text": "a thought", "reason": "r"}),
    ));
    for _ in 0..3 {
        world.tick().await;
        world.clock.advance(chrono::Duration::hours(1));
    }
    assert_eq!(world.said().len(), 2);
    assert!(
        gate_reasons(&world)
            .iter()
            .any(|r| r.contains("daily_cap") && r.contains("2 of 2 posts"))
    );
    world.clock.advance(chrono::Duration::hours(22));
    world.tick().await;
    assert_eq!(world.said().len(), 3, "the first post left the window");
}

#[tokio::test]
async fn a_restart_keeps_the_pending_thought_and_drops_one_that_expired_meanwhile() {
    let mut s = settings();
    only_guild_a(&mut s);
    s.initiative.text.revisit_minutes = 60;
    let world = World::start(s.clone()).await;
    world.model.push(decide(json!({"action": "hold", "channel": "general", "text": "kept across restarts", "reason": "later"})));
    world.tick().await;
    let (dir, model, clock) = world.stop().await;

    let again = World::start_in(s.clone(), dir.clone(), model.clone(), clock.clone()).await;
    again.app.initiative.recover().await;
    let p = again
        .app
        .store()
        .initiative()
        .pending_thought(GUILD_A)
        .unwrap()
        .expect("still held");
    assert_eq!(p.draft, "kept across restarts");
    assert_eq!(p.revision, 1);
    let (dir, model, clock) = again.stop().await;

    clock.advance(chrono::Duration::hours(4));
    let third = World::start_in(s, dir, model, clock).await;
    third.app.initiative.recover().await;
    assert!(
        third
            .app
            .store()
            .initiative()
            .pending_thought(GUILD_A)
            .unwrap()
            .is_none()
    );
    assert!(
        third
            .journal(Kind::InitiativeSkip)
            .iter()
            .any(|e| e.summary.contains("expired while I was away"))
    );
}

#[tokio::test]
async fn a_decision_naming_a_channel_outside_the_pool_is_rejected_and_nothing_is_sent() {
    let mut s = settings();
    only_guild_a(&mut s);
    s.initiative.text.max_tool_steps = 2;
    let world = World::start(s).await;
    world.model.fallback(decide(
        json!({"action": "post", "channel": "secret-admins", "text": "psst", "reason": "r"}),
    ));
    world.tick().await;
    assert!(world.said().is_empty());
    let skips: Vec<(String, String)> = world
        .journal(Kind::InitiativeSkip)
        .into_iter()
        .map(|e| (e.summary, e.reason))
        .collect();
    assert!(
        skips.iter().any(|(s, r)| s == "rejected a decision"
            && r.contains("\"secret-admins\" is not a channel you may post in")),
        "{skips:#?}"
    );
    assert!(skips.iter().any(|(s, _)| s == "no decision"), "{skips:#?}");
    let second = world.model.requests()[1].body.to_string();
    assert!(
        second.contains("secret-admins") && second.contains("#general, #memes"),
        "the model heard why"
    );
}

#[tokio::test]
async fn empty_and_over_long_posts_are_rejected() {
    let mut s = settings();
    only_guild_a(&mut s);
    s.initiative.text.max_post_chars = 50;
    let world = World::start(s).await;
    world
        .model
        .push(decide(json!({"action": "post", "channel": "general", "text": "   ", "reason": "r"})))
        .push(decide(json!({"action": "post", "channel": "general", "text": "x".repeat(51), "reason": "r"})))
        .push(decide(json!({"action": "post", "channel": "general", "text": "short and sweet", "reason": "r"})));
    world.tick().await;
    let said = world.said();
    assert_eq!(said.len(), 1);
    assert_eq!(said[0].content, "short and sweet");
    let reasons: Vec<String> = world
        .journal(Kind::InitiativeSkip)
        .into_iter()
        .map(|e| e.reason)
        .collect();
    assert!(reasons.iter().any(|r| r.contains("empty")));
    assert!(reasons.iter().any(|r| r.contains("51 characters")));
}

#[tokio::test]
async fn the_prompt_has_every_section_in_order_with_vc_lines() {
    let mut s = settings();
    only_guild_a(&mut s);
    s.permissions.replies.reply_channel_ids = vec![GENERAL];
    let world = World::start(s).await;
    world.hear(
        GENERAL,
        "ada",
        "anyone played the new rust game?",
        Source::Text,
    );
    world.hear(GENERAL, "bob", "yes, the rust game is great", Source::Vc);
    world.hear(MEMES, "cy", "rust memes incoming", Source::Text);
    world
        .model
        .push(decide(json!({"action": "drop", "reason": "nothing"})));
    world.tick().await;
    let p = prompt(&world, 0);
    let sections = [
        "=== AMBIENT TEXT MODE ===",
        "=== YOUR CURRENT THOUGHT ===",
        "=== CHANNELS ===",
        "=== YOUR FEED ===",
        "=== FEED SOURCES ===",
        "=== WHAT THIS COMMUNITY IS INTO ===",
        "=== MEMORY ===",
        "=== BEHAVIOR GUIDANCE ===",
        "=== RELEVANT BEHAVIORAL MEMORY ===",
        "=== CAPABILITIES ===",
        "=== TASK ===",
    ];
    let positions: Vec<usize> = sections
        .iter()
        .map(|s| p.find(s).unwrap_or_else(|| panic!("missing {s}:\n{p}")))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "sections out of order:\n{p}"
    );
    assert!(p.contains("bob [vc]: yes, the rust game is great"), "{p}");
    assert!(p.contains("#general (a reply channel"), "{p}");
    assert!(p.contains("rust (3 messages)"), "{p}");
    assert!(p.contains("Discovery is not set up"), "{p}");
    assert!(
        p.contains("=== MEMORY ===\nNothing remembered about this server yet."),
        "{p}"
    );
    assert!(p.contains("memory_search: look something up"), "{p}");
    assert!(p.contains("image: not available — images are off"), "{p}");
    assert!(p.contains("You may post in: #general, #memes"), "{p}");
}

#[tokio::test]
async fn an_active_conversation_keeps_the_tick_out_of_that_channel() {
    let mut s = settings();
    only_guild_a(&mut s);
    let world = World::start(s).await;
    world
        .model
        .fallback(decide(json!({"action": "drop", "reason": "r"})));
    let until = world.clock.now() + chrono::Duration::minutes(5);
    world.app.spine.active.mark(Some(GUILD_A), GENERAL, until);
    world.tick().await;
    let p = prompt(&world, 0);
    assert!(
        p.contains("You may post in: #memes.") && !p.contains("#general —"),
        "{p}"
    );
    world.app.spine.active.mark(Some(GUILD_A), MEMES, until);
    world.clock.advance(chrono::Duration::minutes(1));
    world.tick().await;
    assert_eq!(world.model.requests().len(), 1);
    assert!(
        gate_reasons(&world)
            .iter()
            .any(|r| r.contains("the active gate"))
    );
}

#[tokio::test]
async fn an_unavailable_media_request_is_dropped_with_a_reason_and_the_text_posted() {
    let mut s = settings();
    only_guild_a(&mut s);
    let world = World::start(s).await;
    world.model.push(decide(
        json!({"action": "post", "channel": "general", "text": "look at this", "reason": "r",
                                   "media": {"kind": "gif", "prompt": "a dancing cat"}}),
    ));
    world.tick().await;
    let said = world.said();
    assert_eq!(said.len(), 1);
    assert_eq!(
        (said[0].content.as_str(), said[0].files.len()),
        ("look at this", 0)
    );
    assert!(
        world
            .journal(Kind::InitiativeSkip)
            .iter()
            .any(|e| e.summary == "dropped the gif request" && e.reason.contains("allowGifPosts")),
        "{:#?}",
        world.journal(Kind::InitiativeSkip)
    );
}

#[tokio::test]
async fn an_image_is_generated_and_attached_within_the_daily_budget() {
    let mut s = settings();
    only_guild_a(&mut s);
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
    let post = decide(
        json!({"action": "post", "channel": "general", "text": "made you this", "reason": "r",
                             "media": {"kind": "image", "prompt": "a cat made of rust"}}),
    );
    world.model.push(post.clone()).push(post);
    world.tick().await;
    assert!(prompt(&world, 0).contains("image: you may ask for one"));
    world.clock.advance(chrono::Duration::minutes(1));
    world.tick().await;
    let said = world.said();
    assert_eq!(said[0].files, vec!["image.png"]);
    assert_eq!(
        said[1].files,
        Vec::<String>::new(),
        "the second image is over today's budget"
    );
    let image_request = world
        .model
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/images/generations"))
        .unwrap();
    assert_eq!(image_request.body["prompt"], "a cat made of rust");
    assert!(
        world
            .journal(Kind::InitiativeSkip)
            .iter()
            .any(|e| e.reason.contains("today's images are used up"))
    );
}

#[tokio::test]
async fn a_post_recorded_but_not_confirmed_is_resent_once_with_its_nonce() {
    let s = settings();
    let world = World::start(s).await;
    let now = world.clock.now();
    world
        .app
        .store()
        .initiative()
        .outbox_insert(
            "initiative-crash-1",
            GUILD_A,
            GENERAL,
            "survived a crash",
            now,
        )
        .unwrap();
    world
        .app
        .store()
        .initiative()
        .outbox_insert(
            "initiative-crash-0",
            GUILD_A,
            GENERAL,
            "too old to resend",
            now - chrono::Duration::hours(1),
        )
        .unwrap();
    world.app.initiative.recover().await;
    world.app.initiative.recover().await;
    let said = world.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0].content, "survived a crash");
    assert!(
        world
            .app
            .store()
            .initiative()
            .outbox_unsent()
            .unwrap()
            .is_empty()
    );
    assert!(
        world
            .journal(Kind::Error)
            .iter()
            .any(|e| e.summary == "a post may not have been sent")
    );
}

#[tokio::test]
async fn a_post_counts_for_the_status_and_the_journal_explains_it() {
    let mut s = settings();
    only_guild_a(&mut s);
    let world = World::start(s).await;
    world.model.push(decide(json!({"action": "post", "channel": "general", "text": "hi all", "reason": "the room was quiet"})));
    world.tick().await;
    assert_eq!(
        ambient::initiative::posts_last_24h(
            &world.app.store().journal(),
            GUILD_A,
            world.clock.now()
        )
        .unwrap(),
        1
    );
    let post: Entry = world.journal(Kind::InitiativePost).remove(0);
    assert_eq!(post.reason, "the room was quiet");
    assert_eq!(post.channel, Some(GENERAL));
    let why = ambient::commands::why::why(
        &world.app,
        Some(GUILD_A),
        GENERAL,
        Some(&post.message.unwrap().to_string()),
    );
    assert!(
        why.contains("posted in #general") && why.contains("the room was quiet"),
        "{why}"
    );
}

/// The journal entry that closes each look says how it ended in
/// `data.look`, for the console's `/wait` and the replay to read instead
/// of the entry's words: a post, a drop, a held thought, no decision.
#[tokio::test]
async fn each_look_ends_with_an_entry_that_says_how_it_ended() {
    let mut s = settings();
    only_guild_a(&mut s);
    let world = World::start(s).await;
    world.model.push(decide(
        json!({"action": "post", "channel": "general", "text": "hi all", "reason": "quiet"}),
    ));
    world.model.push(decide(
        json!({"action": "drop", "reason": "nothing to add"}),
    ));
    world.model.push(decide(
        json!({"action": "hold", "text": "maybe later", "reason": "too early"}),
    ));
    world
        .model
        .push(Scripted::text("I think I'll just chat instead."));
    world.model.push(Scripted::text("Still chatting."));
    for _ in 0..4 {
        world.tick().await;
        world.clock.advance(chrono::Duration::minutes(30));
    }
    let looks: Vec<String> = world
        .app
        .journal
        .query(&ambient::vocab::journal::Filter {
            kinds: vec![Kind::InitiativePost, Kind::InitiativeSkip],
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .filter_map(|e| e.data["look"].as_str().map(String::from))
        .collect();
    let mut looks = looks;
    looks.sort();
    assert_eq!(looks, vec!["dropped", "held", "no_decision", "posted"]);
}
