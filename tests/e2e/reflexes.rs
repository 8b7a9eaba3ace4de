//! Reflexes and impulses on the in-process bot: what people see (a reaction,
//! a reply, a reminder), what the model servers receive (often nothing), and
//! what the store and journal keep.

use std::path::PathBuf;

use ambient::attention::Addressed;
use ambient::clock::Clock;
use ambient::ids::{UserId, stable_id};
use ambient::impulses::NewTask;
use ambient::settings::{ProviderKind, Settings};
use ambient::vocab::journal::Kind;
use chrono::Duration;
use serde_json::json;

use crate::support::feed_server::FeedServer;
use crate::support::home::Home;
use crate::support::model_server::{ModelServer, Scripted};
use crate::support::world::{B_GENERAL, DM, GENERAL, GUILD_A, GUILD_B, World, settings};

fn shipped_reflexes() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("reflexes")
        .to_string_lossy()
        .into_owned()
}

/// Settings with the reflexes shipped in the repository.
fn with_shipped() -> Settings {
    let mut s = settings();
    s.reflexes.dir = shipped_reflexes();
    s
}

/// Settings whose reflex folder holds exactly `files`.
fn with_reflexes(files: &[(&str, &str)]) -> (Settings, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let mut s = settings();
    s.reflexes.dir = dir.path().to_string_lossy().into_owned();
    (s, dir)
}

fn reflex_lines(w: &World) -> Vec<String> {
    w.journal(Kind::Reflex)
        .into_iter()
        .map(|e| format!("{} — {}", e.summary, e.reason))
        .collect()
}

fn user(name: &str) -> UserId {
    UserId(stable_id("user", name))
}

/// Ada's reminder to stretch in #general, due as a person would say it.
fn stretch_reminder(due: &str, message: &str) -> NewTask {
    NewTask {
        guild: Some(GUILD_A),
        channel: Some(GENERAL),
        text: "remind ada to stretch".into(),
        due: due.into(),
        message: Some(message.into()),
        context: "test".into(),
        created_by: "ada".into(),
        owner: Some(user("ada")),
    }
}

#[tokio::test]
async fn a_level_0_reflex_answers_without_any_model_call() {
    let w = World::start(with_shipped()).await;
    let id = w
        .message(GENERAL, "ada", "<@1> hello!", Addressed::Mention)
        .await;
    assert_eq!(w.reactions(), vec![(GENERAL, id, "👋".to_string())]);
    assert!(w.said().is_empty(), "a wave, not a message: {:?}", w.said());
    assert!(
        w.model.requests().is_empty(),
        "the model server received nothing"
    );
    let stats = w.app.store().impulses().reflex_stats().unwrap();
    let greeting = stats.iter().find(|s| s.name == "greeting").unwrap();
    assert_eq!(
        (greeting.fired, greeting.succeeded, greeting.failed),
        (1, 1, 0)
    );
    assert!(
        reflex_lines(&w)
            .iter()
            .any(|l| l.starts_with("reflex greeting: reacted 👋")),
        "{:#?}",
        reflex_lines(&w)
    );

    // Not a plain greeting: the executive answers instead.
    w.model.push(Scripted::text("Mostly Rust, some Go."));
    w.message(
        GENERAL,
        "ada",
        "<@1> hello, what languages do you like?",
        Addressed::Mention,
    )
    .await;
    assert_eq!(w.said()[0].content, "Mostly Rust, some Go.");
    assert_eq!(w.reactions().len(), 1);
}

#[tokio::test]
async fn a_level_2_reflex_calls_only_the_reflex_roles_model() {
    let small = ModelServer::start();
    small.push(Scripted::text(
        "Octopuses have three hearts, the page says.",
    ));
    let pages = FeedServer::start_at(chrono::Utc::now());
    pages.set(
        "/octopus",
        "text/html",
        "<html><head><title>Octopus facts</title></head><body><p>Octopuses have three hearts and blue blood.</p></body></html>".into(),
    );
    let mut s = with_shipped();
    s.network.allow_private_hosts = true;
    s.executive.roles.reflex.provider = ProviderKind::Openai;
    s.executive.roles.reflex.base_url = small.openai_base();
    s.executive.roles.reflex.model = "small-local".into();
    let w = World::start(s).await;

    w.message(
        GENERAL,
        "ada",
        &format!("<@1> summarize {}/octopus", pages.url),
        Addressed::Mention,
    )
    .await;

    assert_eq!(w.said().len(), 1, "{:#?}", reflex_lines(&w));
    assert_eq!(
        w.said()[0].content,
        "Octopuses have three hearts, the page says."
    );
    assert!(
        w.model.requests().is_empty(),
        "the strong model was not woken"
    );
    let asked = small.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].body["model"], "small-local");
    assert!(
        asked[0]
            .body
            .to_string()
            .contains("three hearts and blue blood"),
        "the page reached the prompt"
    );
    assert_eq!(pages.hits("/octopus"), 1);
}

const ESCALATE: &str = r#"name: decisions
description: Questions about decisions go to the strong model
level: 3
trigger:
  pattern: "(?i)\\bshould (we|i)\\b"
pipeline:
  - action: log
    message: "a decision question from {{author}}"
  - action: escalate
    reason: a decision needs the strong model
"#;

#[tokio::test]
async fn an_escalation_reaches_the_executive() {
    let (s, _dir) = with_reflexes(&[("decisions.yaml", ESCALATE)]);
    let w = World::start(s).await;
    w.model.push(Scripted::text("Friday suits most people."));
    // Not addressed, in an ordinary channel: without the reflex nobody would answer.
    w.message(
        GENERAL,
        "ada",
        "should we move the meetup to friday?",
        Addressed::No,
    )
    .await;
    assert_eq!(w.said().len(), 1);
    assert_eq!(w.said()[0].content, "Friday suits most people.");
    assert_eq!(w.model.requests().len(), 1);
    let lines = reflex_lines(&w);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("reflex decisions: a decision question from ada")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l
            == "reflex decisions escalated to the executive — a decision needs the strong model"),
        "{lines:#?}"
    );
    let routes: Vec<String> = w
        .journal(Kind::Route)
        .into_iter()
        .map(|e| format!("{} — {}", e.summary, e.reason))
        .collect();
    assert!(
        routes
            .iter()
            .any(|r| r.contains("→ executive:reply")
                && r.contains("escalated by reflexes: decisions")),
        "{routes:#?}"
    );
    let stats = w.app.store().impulses().reflex_stats().unwrap();
    assert_eq!(stats[0].escalated, 1);
}

const PING: &str = "name: ping\nlevel: 0\ntrigger:\n  pattern: \"(?i)^ping$\"\n  addressed: true\npipeline:\n  - action: react\n    emoji: \"🏓\"\n";
const BROKEN: &str = "name: broken\ntrigger:\n  pattern: \"x\"\n pipeline:\n  - action: log\n";
const UNKNOWN: &str = "name: teleporter\ntrigger:\n  pattern: \"beam me up\"\npipeline:\n  - action: log\n    message: hi\n  - action: teleport\n    to: mars\n";

#[tokio::test]
async fn a_broken_file_is_reported_with_its_line_and_the_rest_load() {
    let (s, dir) = with_reflexes(&[
        ("ping.yaml", PING),
        ("broken.yaml", BROKEN),
        ("teleporter.yaml", UNKNOWN),
    ]);
    let w = World::start(s).await;
    let loaded = w.app.reflexes.loaded();
    assert_eq!(
        loaded
            .reflexes
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        vec!["ping"]
    );
    let problems = loaded.problems.join("\n");
    let broken = format!("{}:4:", dir.path().join("broken.yaml").display());
    let teleporter = format!(
        "{}:7: unknown action \"teleport\"",
        dir.path().join("teleporter.yaml").display()
    );
    assert!(problems.contains(&broken), "{problems}");
    assert!(problems.contains(&teleporter), "{problems}");
    let id = w
        .message(GENERAL, "ada", "<@1> ping", Addressed::Mention)
        .await;
    assert_eq!(w.reactions(), vec![(GENERAL, id, "🏓".to_string())]);
    let skipped = w.journal(Kind::Error);
    assert_eq!(
        skipped
            .iter()
            .filter(|e| e.summary == "a reflex definition was skipped")
            .count(),
        2
    );

    // The same check offline, from the command line.
    let home = Home::new(json!({}));
    let out = home.run(&["reflexes", "check", dir.path().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("FAIL {broken}")), "{text}");
    assert!(text.contains(&format!("FAIL {teleporter}")), "{text}");
    assert!(text.contains("ok   ping"), "{text}");
    assert!(text.contains("1 reflex(es) ok, 2 problem(s)"), "{text}");
    let good = home.run(&["reflexes", "check", &shipped_reflexes()]);
    assert_eq!(
        good.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&good.stdout)
    );
}

const SAVE: &str = r#"name: save-note
level: 1
trigger:
  pattern: "(?i)^save (\\S+) (.+)$"
  extract: [path, text]
  addressed: true
pipeline:
  - action: write_file
    path: "{{path}}"
    content: "{{text}}"
  - action: read_file
    path: "{{path}}"
    output: back
  - action: reply
    message: "saved {{path}}: {{back}}"
"#;

#[tokio::test]
async fn write_file_outside_the_state_folder_is_refused() {
    let (s, _dir) = with_reflexes(&[("save.yaml", SAVE)]);
    let w = World::start(s).await;
    w.model.fallback(Scripted::text("I can't do that."));
    w.message(
        GENERAL,
        "ada",
        "<@1> save ../../etc/passwd root::0:0",
        Addressed::Mention,
    )
    .await;
    let data = PathBuf::from(&w.app.settings.global().storage.data_dir);
    assert!(!data.join("etc/passwd").exists() && !data.join("state/etc/passwd").exists());
    assert!(
        w.said().iter().all(|m| !m.content.starts_with("saved")),
        "{:?}",
        w.said()
    );
    let lines = reflex_lines(&w);
    assert!(
        lines.iter().any(
            |l| l.starts_with("reflex save-note failed — step 1 (write_file")
                && l.contains("`..` would leave the reflex state folder")
        ),
        "{lines:#?}"
    );

    w.message(
        GENERAL,
        "ada",
        "<@1> save notes/today.txt buy milk",
        Addressed::Mention,
    )
    .await;
    assert_eq!(
        w.said().last().unwrap().content,
        "saved notes/today.txt: buy milk"
    );
    let file = data.join(format!("state/guilds/{GUILD_A}/notes/today.txt"));
    assert_eq!(std::fs::read_to_string(file).unwrap(), "buy milk");
}

const PEEK: &str = r#"name: peek
level: 1
trigger:
  pattern: "(?i)^peek (\\S+)$"
  extract: [url]
  addressed: true
pipeline:
  - action: fetch_url
    input: $url
    output: page
  - action: reply
    message: "{{page}}"
"#;

#[tokio::test]
async fn fetch_url_to_a_private_address_is_refused_unless_allowed() {
    let pages = FeedServer::start_at(chrono::Utc::now());
    pages.set("/secret", "text/plain", "the router admin password".into());
    let (s, _dir) = with_reflexes(&[("peek.yaml", PEEK)]);
    let w = World::start(s.clone()).await;
    w.model.fallback(Scripted::text("I can't open that."));
    w.message(
        GENERAL,
        "ada",
        &format!("<@1> peek {}/secret", pages.url),
        Addressed::Mention,
    )
    .await;
    assert_eq!(pages.hits("/secret"), 0, "no request left the bot");
    assert!(w.said().iter().all(|m| !m.content.contains("password")));
    let lines = reflex_lines(&w);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("fetch_url") && l.contains("127.0.0.1 is a private address")),
        "{lines:#?}"
    );
    w.stop().await;

    let mut allowed = s;
    allowed.network.allow_private_hosts = true;
    let w = World::start(allowed).await;
    w.message(
        GENERAL,
        "ada",
        &format!("<@1> peek {}/secret", pages.url),
        Addressed::Mention,
    )
    .await;
    assert_eq!(w.said()[0].content, "the router admin password");
    assert_eq!(pages.hits("/secret"), 1);
}

#[tokio::test]
async fn a_five_minute_cron_entry_fires_on_the_fives() {
    let w = World::start(settings()).await;
    w.clock.advance(Duration::minutes(3)); // 12:03
    w.app
        .impulses
        .add_schedule(
            GUILD_A,
            Some(GENERAL),
            "tick",
            "*/5 * * * *",
            "say tick",
            "test",
        )
        .unwrap();
    w.model.fallback(Scripted::tool(
        "act",
        json!({"say": "tick", "note": "ticked"}),
    ));
    let mut fired_at = Vec::new();
    for _ in 0..9 {
        w.clock.advance(Duration::minutes(1));
        let before = w.said().len();
        let queued = w.app.impulses.check();
        w.app.spine.drain().await;
        if w.said().len() > before {
            assert_eq!(queued.len(), 1);
            fired_at.push(w.clock.now().format("%H:%M").to_string());
        } else {
            assert!(
                queued.is_empty(),
                "nothing at {}",
                w.clock.now().format("%H:%M")
            );
        }
    }
    assert_eq!(fired_at, vec!["12:05", "12:10"]);
    assert!(
        w.said()
            .iter()
            .all(|m| m.channel == GENERAL && m.content == "tick")
    );
    let prompt = w.model.requests()[0].body.to_string();
    assert!(
        prompt.contains("say tick"),
        "the routine's action is in the prompt"
    );
}

#[tokio::test]
async fn a_due_task_fires_once_and_not_again_after_a_restart() {
    let w = World::start(settings()).await;
    let task = w
        .app
        .impulses
        .add_task(stretch_reminder(
            "in 10m",
            &format!("<@{}> reminder: stretch", user("ada")),
        ))
        .unwrap();
    w.clock.advance(Duration::minutes(9));
    assert!(w.app.impulses.check().is_empty(), "not due yet");
    w.clock.advance(Duration::minutes(1));
    assert_eq!(w.app.impulses.check().len(), 1);
    w.app.spine.drain().await;
    assert_eq!(w.said().len(), 1);
    assert_eq!(
        w.said()[0].content,
        format!("<@{}> reminder: stretch", user("ada"))
    );
    assert!(w.app.impulses.check().is_empty(), "fired once");
    w.app.spine.drain().await;
    assert!(w.model.requests().is_empty(), "a reminder needs no model");

    let (dir, model, clock) = w.stop().await;
    clock.advance(Duration::minutes(5));
    let again = World::start_in(settings(), dir, model, clock).await;
    assert!(
        again.app.impulses.check().is_empty(),
        "not again after a restart"
    );
    again.app.spine.drain().await;
    assert!(again.said().is_empty());
    let stored = again
        .app
        .store()
        .impulses()
        .task(&task.id)
        .unwrap()
        .unwrap();
    assert!(stored.fired_at.is_some() && stored.done_at.is_some());
}

#[tokio::test]
async fn remind_me_and_what_did_you_do_today_need_no_model() {
    let w = World::start(with_shipped()).await;
    w.message(GENERAL, "ada", "<@1> hi there", Addressed::Mention)
        .await;
    w.message(
        GENERAL,
        "ada",
        "<@1> remind me in 10 minutes to stretch",
        Addressed::Mention,
    )
    .await;
    assert_eq!(
        w.said()[0].content,
        "Okay ada, I'll remind you in 10 minutes: stretch"
    );
    w.clock.advance(Duration::minutes(10));
    w.app.impulses.check();
    w.app.spine.drain().await;
    assert_eq!(
        w.said()[1].content,
        format!("<@{}> reminder: stretch", user("ada"))
    );

    w.message(
        GENERAL,
        "ada",
        "<@1> what did you do today?",
        Addressed::Mention,
    )
    .await;
    let answer = &w.said()[2].content;
    assert!(
        answer.starts_with("Here is what I did today (Monday 2026-01-05):"),
        "{answer}"
    );
    assert!(
        answer.contains("12:00 #general  reflex greeting: reacted 👋"),
        "{answer}"
    );
    assert!(
        answer.contains("task added: remind ada to stretch"),
        "{answer}"
    );
    assert!(
        answer.contains("did a task: remind ada to stretch"),
        "{answer}"
    );
    assert!(w.model.requests().is_empty(), "no model call in any of it");
}

#[tokio::test]
async fn why_did_you_do_that_is_answered_from_this_guilds_journal() {
    let w = World::start(with_shipped()).await;
    w.message(B_GENERAL, "bob", "<@1> hello", Addressed::Mention)
        .await;
    w.message(GENERAL, "ada", "<@1> hello", Addressed::Mention)
        .await;
    w.model
        .push(Scripted::tool(
            "journal_search",
            json!({"since": "today", "type": "reflex"}),
        ))
        .push(Scripted::text("I waved because you said hello."));
    w.message(
        GENERAL,
        "ada",
        "<@1> why did you wave at me?",
        Addressed::Mention,
    )
    .await;
    assert_eq!(w.said()[0].content, "I waved because you said hello.");
    let second = w.model.requests()[1].body.to_string();
    assert!(
        second.contains("#general  reflex greeting: reacted 👋"),
        "{second}"
    );
    assert!(
        !second.contains("b-general"),
        "guild B's journal stays in guild B: {second}"
    );
}

#[tokio::test]
async fn a_promise_made_in_conversation_becomes_a_task() {
    let w = World::start(settings()).await;
    w.model
        .push(Scripted::tool(
            "add_task",
            json!({"text": "remind ada to send the slides", "due": "tomorrow 9:00", "message": "ada, the slides!"}),
        ))
        .push(Scripted::text("Sure — I'll remind you tomorrow at 9."));
    w.message(
        GENERAL,
        "ada",
        "<@1> can you remind me tomorrow to send the slides?",
        Addressed::Mention,
    )
    .await;
    assert_eq!(w.said()[0].content, "Sure — I'll remind you tomorrow at 9.");
    let tasks = w
        .app
        .store()
        .impulses()
        .tasks(Some(GUILD_A), false)
        .unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].text, "remind ada to send the slides");
    assert_eq!(tasks[0].due.to_rfc3339(), "2026-01-06T09:00:00+00:00");
    assert_eq!(
        (tasks[0].channel, tasks[0].owner),
        (Some(GENERAL), Some(user("ada")))
    );
    let result = w.model.requests()[1].body.to_string();
    assert!(
        result.contains("recorded, due 2026-01-06 09:00 UTC"),
        "{result}"
    );
}

const COFFEE: &str = "name: coffee\ndescription: React to coffee talk\nlevel: 0\ntrigger:\n  pattern: \"(?i)\\\\bcoffee\\\\b\"\npipeline:\n  - action: react\n    emoji: \"☕\"\n";

#[tokio::test]
async fn the_executive_writes_reflexes_only_for_trusted_people_and_only_for_their_guild() {
    let mut s = with_shipped();
    s.discord.owner_user_ids = vec![user("olga")];
    let w = World::start(s).await;

    // Not the operator, and the guild has not allowed it: the tool is not offered.
    w.model
        .push(Scripted::text("I can't add reflexes for you."));
    w.message(
        GENERAL,
        "ada",
        "<@1> react with coffee whenever someone says coffee",
        Addressed::Mention,
    )
    .await;
    let tools = w.model.requests()[0].body["tools"].to_string();
    assert!(
        !tools.contains("reflex_create") && tools.contains("journal_search"),
        "{tools}"
    );

    w.model
        .push(Scripted::tool("reflex_create", json!({"yaml": "name: coffee\ntrigger:\n  pattern: coffee\npipeline:\n  - action: brew\n"})))
        .push(Scripted::tool("reflex_create", json!({"yaml": COFFEE})))
        .push(Scripted::text("Done: I'll react to coffee talk."));
    w.message(
        GENERAL,
        "olga",
        "<@1> react with coffee whenever someone says coffee",
        Addressed::Mention,
    )
    .await;
    let requests = w.model.requests();
    assert!(
        requests[2]
            .body
            .to_string()
            .contains("unknown action \\\"brew\\\""),
        "the model is told what was wrong"
    );
    assert!(
        requests[3]
            .body
            .to_string()
            .contains("created the reflex coffee (level 0)")
    );
    let file = PathBuf::from(&w.app.settings.global().storage.data_dir)
        .join(format!("state/reflexes/{GUILD_A}/coffee.yaml"));
    assert!(file.exists());

    let here = w
        .message(GENERAL, "ada", "coffee time", Addressed::No)
        .await;
    w.message(B_GENERAL, "bob", "coffee time", Addressed::No)
        .await;
    assert_eq!(
        w.reactions(),
        vec![(GENERAL, here, "☕".to_string())],
        "guild B is untouched"
    );

    w.app
        .reflexes
        .disable(Some(GUILD_A), "coffee", "too much coffee", "olga")
        .unwrap();
    w.message(GENERAL, "ada", "more coffee", Addressed::No)
        .await;
    assert_eq!(w.reactions().len(), 1, "disabled");
    // Reflexes written for a guild survive a restart.
    let (dir, model, clock) = w.stop().await;
    let again = World::start_in(with_shipped(), dir, model, clock).await;
    let loaded = again.app.reflexes.loaded();
    let coffee = loaded.reflexes.iter().find(|r| r.name == "coffee").unwrap();
    assert_eq!(coffee.guild, Some(GUILD_A));
    assert!(
        loaded.is_disabled(coffee, Some(GUILD_A)) && !loaded.is_disabled(coffee, Some(GUILD_B))
    );
}

#[tokio::test]
async fn ideas_wait_for_quiet_and_impulse_checks_adapt_to_activity() {
    let w = World::start(settings()).await;
    assert_eq!(w.app.impulses.interval().as_secs(), 60, "idle: every 60 s");
    w.model.push(Scripted::text("Hi ada!"));
    w.message(GENERAL, "ada", "<@1> how are you?", Addressed::Mention)
        .await;
    assert_eq!(
        w.app.impulses.interval().as_secs(),
        5,
        "someone is talking with the bot: every 5 s"
    );

    w.app
        .impulses
        .add_idea(
            Some(GUILD_A),
            "find out why octopuses have three hearts",
            "a chat about animals",
        )
        .unwrap();
    assert!(
        w.app.impulses.check().is_empty(),
        "people are around: ideas wait"
    );
    w.clock.advance(Duration::minutes(61));
    assert_eq!(w.app.impulses.interval().as_secs(), 60);
    w.model.push(Scripted::tool(
        "explored",
        json!({"learned": "Octopuses have two hearts for the gills and one for the body.", "share": "Did you know octopuses have three hearts?"}),
    ));
    let queued = w.app.impulses.check();
    assert_eq!(queued.len(), 1);
    w.app.spine.drain().await;
    let thought = w
        .app
        .store()
        .initiative()
        .pending_thought(GUILD_A)
        .unwrap()
        .expect("a thought to share later");
    assert_eq!(thought.draft, "Did you know octopuses have three hearts?");
    let facts = w.app.memory.search(
        ambient::memory::search::Reader::Guild(GUILD_A),
        "octopuses hearts",
        5,
    );
    assert!(
        facts
            .iter()
            .any(|f| f.fact.content.contains("two hearts for the gills"))
    );
    assert!(
        w.app.impulses.check().is_empty(),
        "an idea is explored once"
    );

    // One idea per quiet spell: the next waits until people have spoken and gone quiet again.
    w.app
        .impulses
        .add_idea(
            Some(GUILD_A),
            "a quiz about deep-sea animals",
            "the octopus idea",
        )
        .unwrap();
    w.clock.advance(Duration::minutes(120));
    assert!(
        w.app.impulses.check().is_empty(),
        "still the same quiet spell"
    );
    w.hear(
        GENERAL,
        "ada",
        "back from lunch",
        ambient::store::messages::Source::Text,
    );
    w.clock.advance(Duration::minutes(61));
    w.model.push(Scripted::tool(
        "explored",
        json!({"learned": "Anglerfish make good quiz questions."}),
    ));
    assert_eq!(w.app.impulses.check().len(), 1);
    w.app.spine.drain().await;
}

#[tokio::test]
async fn the_journal_is_told_only_to_those_who_may_read_it() {
    let w = World::start(with_shipped()).await;
    let mods = ambient::ids::ChannelId(2003);
    w.app
        .store()
        .messages()
        .upsert_channel(mods, Some(GUILD_A), "mods", w.clock.now())
        .unwrap();
    w.message(GENERAL, "ada", "<@1> hello", Addressed::Mention)
        .await;
    w.message(mods, "mia", "<@1> hi", Addressed::Mention).await;
    w.message(B_GENERAL, "bob", "<@1> hey", Addressed::Mention)
        .await;

    w.message(
        GENERAL,
        "ada",
        "<@1> what did you do today?",
        Addressed::Mention,
    )
    .await;
    let answer = w.said().last().unwrap().content.clone();
    assert!(answer.contains("#general  reflex greeting"), "{answer}");
    assert!(
        !answer.contains("#mods"),
        "a channel the asker may not see stays out: {answer}"
    );
    assert!(
        !answer.contains("b-general"),
        "another server stays out: {answer}"
    );

    w.message(
        DM,
        "ada",
        "what did you do today?",
        Addressed::DirectMessage,
    )
    .await;
    let answer = w.said().last().unwrap().content.clone();
    assert!(
        answer.ends_with("nothing yet (today)"),
        "a DM hears about that DM only: {answer}"
    );
}

#[tokio::test]
async fn the_github_token_never_follows_a_redirect_to_another_host() {
    let api = FeedServer::start_at(chrono::Utc::now());
    let blobs = FeedServer::start_at(chrono::Utc::now());
    blobs.set("/blob", "text/plain", "the tarball".into());
    let elsewhere = blobs.url.replace("127.0.0.1", "localhost");
    api.redirect("/repos/o/r/tarball/main", &format!("{elsewhere}/blob"));
    let reflex = "name: tarball\nlevel: 1\ntrigger:\n  pattern: \"^tarball$\"\n  addressed: true\npipeline:\n  - action: github_api\n    path: /repos/o/r/tarball/main\n    output: body\n  - action: reply\n    message: \"{{body}}\"\n";
    let (mut s, _dir) = with_reflexes(&[("tarball.yaml", reflex)]);
    s.network.allow_private_hosts = true;
    s.reflexes.github_api_base_url = api.url.clone();
    let secrets = ambient::settings::Secrets::from_lookup(|k| {
        (k == "GITHUB_TOKEN").then(|| "ghp_operator".to_string())
    });
    let w = World::start_with_secrets(s, secrets).await;
    w.message(GENERAL, "ada", "<@1> tarball", Addressed::Mention)
        .await;
    assert_eq!(w.said()[0].content, "the tarball");
    assert_eq!(
        api.authorizations("/repos/o/r/tarball/main"),
        vec!["Bearer ghp_operator"]
    );
    assert!(
        blobs.authorizations("/blob").is_empty(),
        "the token stayed with the API host"
    );
    assert!(w.said().iter().all(|m| !m.content.contains("ghp_operator")));
}

#[tokio::test]
async fn one_servers_oversized_patterns_cannot_break_anyone_elses_reflexes() {
    let (s, _dir) = with_reflexes(&[("ping.yaml", PING)]);
    let w = World::start(s.clone()).await;
    let big = |name: &str| {
        format!(
            "name: {name}\nlevel: 0\ntrigger:\n  pattern: \"{name}\\\\w{{200}}\"\npipeline:\n  - action: react\n    emoji: \"🐘\"\n"
        )
    };
    w.app
        .reflexes
        .create(GUILD_A, &big("big1"), "olga")
        .unwrap();
    let refused = w
        .app
        .reflexes
        .create(GUILD_A, &big("big2"), "olga")
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("too large together with this server's other reflexes"),
        "{refused}"
    );
    // Written behind the bot's back, they still load, one by one, with a problem said.
    let dir = PathBuf::from(&w.app.settings.global().storage.data_dir)
        .join(format!("state/reflexes/{GUILD_A}"));
    std::fs::write(dir.join("big2.yaml"), big("big2")).unwrap();
    let loaded = w.app.reflexes.reload();
    assert!(
        loaded.problems.iter().any(|p| p.contains(&format!(
            "server {GUILD_A}'s reflexes: these patterns are too large"
        ))),
        "{:?}",
        loaded.problems
    );
    let ping = w
        .message(B_GENERAL, "bob", "<@1> ping", Addressed::Mention)
        .await;
    let elephant = w
        .message(
            GENERAL,
            "ada",
            &format!("big2{}", "x".repeat(200)),
            Addressed::No,
        )
        .await;
    assert_eq!(
        w.reactions(),
        vec![
            (B_GENERAL, ping, "🏓".to_string()),
            (GENERAL, elephant, "🐘".to_string())
        ]
    );
}

#[tokio::test]
async fn a_task_claimed_just_before_a_crash_is_delivered_once_after_it() {
    let w = World::start(settings()).await;
    w.app
        .impulses
        .add_task(stretch_reminder("in 1m", "ada: stretch!"))
        .unwrap();
    w.clock.advance(Duration::minutes(1));
    // The check claims it, and the process dies before the reminder is said.
    assert_eq!(
        w.app
            .store()
            .impulses()
            .claim_due_tasks(w.clock.now())
            .unwrap()
            .len(),
        1
    );
    let (dir, model, clock) = w.stop().await;
    let again = World::start_in(settings(), dir, model, clock).await;
    again.app.impulses.recover();
    again.app.spine.drain().await;
    assert_eq!(
        again
            .said()
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>(),
        vec!["ada: stretch!"]
    );
    let (dir, model, clock) = again.stop().await;
    let third = World::start_in(settings(), dir, model, clock).await;
    third.app.impulses.recover();
    assert!(third.app.impulses.check().is_empty());
    third.app.spine.drain().await;
    assert!(third.said().is_empty(), "delivered once");
}

#[tokio::test]
async fn a_weekday_routine_runs_on_weekdays_in_the_servers_timezone() {
    let mut s = settings();
    s.impulses.timezone = "Europe/Berlin".into();
    let w = World::start(s).await;
    // Friday 2026-01-09, 07:30 UTC (08:30 in Berlin).
    w.clock.set(
        chrono::DateTime::parse_from_rfc3339("2026-01-09T07:30:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc),
    );
    w.app
        .impulses
        .add_schedule(
            GUILD_A,
            Some(GENERAL),
            "standup",
            "0 9 * * 1-5",
            "ask how it's going",
            "test",
        )
        .unwrap();
    w.model.fallback(Scripted::tool(
        "act",
        json!({"say": "How's it going?", "note": "standup"}),
    ));
    let mut fired = Vec::new();
    for _ in 0..(24 * 4) {
        w.clock.advance(Duration::hours(1));
        if !w.app.impulses.check().is_empty() {
            fired.push(w.clock.now().format("%a %H:%M").to_string());
        }
        w.app.spine.drain().await;
    }
    assert_eq!(
        fired,
        vec!["Fri 08:30", "Mon 08:30"],
        "09:00 Berlin on weekdays, checked hourly"
    );
}

#[tokio::test]
async fn a_reflex_that_answered_and_then_failed_is_not_answered_twice() {
    let reflex = "name: eager\nlevel: 1\ntrigger:\n  pattern: \"^look (\\\\S+)$\"\n  extract: [url]\n  addressed: true\npipeline:\n  - action: reply\n    message: \"on it\"\n  - action: fetch_url\n    input: $url\n    output: page\n  - action: reply\n    message: \"{{page}}\"\n";
    let (s, _dir) = with_reflexes(&[("eager.yaml", reflex)]);
    let w = World::start(s).await;
    w.model.fallback(Scripted::text("a second answer"));
    w.message(
        GENERAL,
        "ada",
        "<@1> look ftp://nowhere",
        Addressed::Mention,
    )
    .await;
    assert_eq!(
        w.said()
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>(),
        vec!["on it"]
    );
    assert!(w.model.requests().is_empty());
    assert!(
        reflex_lines(&w)
            .iter()
            .any(|l| l.starts_with("reflex eager failed — step 2 (fetch_url"))
    );
}

/// What `/ambient why` says about the bot's own message in `channel` that reads `content`.
fn why_about(w: &World, channel: ambient::ids::ChannelId, content: &str) -> String {
    let mine = w
        .app
        .store()
        .messages()
        .recent_messages(channel, 50)
        .unwrap()
        .into_iter()
        .find(|m| m.is_self && m.content == content)
        .unwrap_or_else(|| panic!("the bot never said {content:?}"));
    ambient::commands::why::why(&w.app, Some(GUILD_A), channel, Some(&mine.id.to_string()))
}

#[tokio::test]
async fn why_explains_a_reminder_and_a_routine_post() {
    let w = World::start(settings()).await;
    w.app
        .impulses
        .add_task(stretch_reminder("in 10m", "ada, time to stretch"))
        .unwrap();
    w.app
        .impulses
        .add_schedule(
            GUILD_A,
            Some(GENERAL),
            "standup",
            "*/10 * * * *",
            "remind everyone of the standup",
            "test",
        )
        .unwrap();
    w.model.fallback(Scripted::tool(
        "act",
        json!({"say": "standup in five minutes!", "note": "announced the standup"}),
    ));
    w.clock.advance(Duration::minutes(10));
    w.app.impulses.check();
    w.app.spine.drain().await;
    let said: Vec<String> = w.said().into_iter().map(|m| m.content).collect();
    assert_eq!(said.len(), 2, "{said:?}");

    let reminder = why_about(&w, GENERAL, "ada, time to stretch");
    assert!(reminder.starts_with("Why I said that:\n"), "{reminder}");
    assert!(
        reminder.contains("**impulse** did a task: remind ada to stretch"),
        "{reminder}"
    );
    let routine = why_about(&w, GENERAL, "standup in five minutes!");
    assert!(
        routine.contains("**impulse** ran the routine standup — announced the standup"),
        "{routine}"
    );
}

#[tokio::test]
async fn why_explains_an_ideas_share_when_it_is_posted() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    let w = World::start(s).await;
    w.app
        .impulses
        .add_idea(Some(GUILD_A), "why octopuses have three hearts", "a chat")
        .unwrap();
    w.model.push(Scripted::tool(
        "explored",
        json!({"learned": "Octopuses have three hearts.", "share": "Octopuses have three hearts!"}),
    ));
    assert_eq!(w.app.impulses.check().len(), 1);
    w.app.spine.drain().await;
    w.model.push(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "Fun fact: octopuses have three hearts!", "reason": "the held thought fits the quiet room"}),
    ));
    w.tick().await;
    let why = why_about(&w, GENERAL, "Fun fact: octopuses have three hearts!");
    assert!(
        why.contains("posted in #general — the held thought fits the quiet room"),
        "{why}"
    );
}

#[tokio::test]
async fn a_failing_idea_exploration_keeps_the_idea_and_backs_off_for_the_guild() {
    let mut s = settings();
    s.executive.failure_threshold = 1000;
    let w = World::start(s).await;
    w.app
        .impulses
        .add_idea(Some(GUILD_A), "why octopuses have three hearts", "a chat")
        .unwrap();
    w.model.fallback(Scripted::status(500, "the model is down"));
    // Twelve simulated minutes, checked every minute.
    for _ in 0..=12 {
        w.app.impulses.check();
        w.app.spine.drain().await;
        w.clock.advance(Duration::minutes(1));
    }
    assert_eq!(
        w.model.requests().len(),
        4,
        "tried at minutes 0, 1, 3 and 7"
    );
    let failures: Vec<String> = w
        .journal(Kind::Error)
        .into_iter()
        .map(|e| e.reason)
        .filter(|r| r.contains("could not explore the idea"))
        .collect();
    assert_eq!(failures.len(), 4, "one line per back-off: {failures:?}");
    assert!(
        failures[3].contains("the idea waits, trying again in 8 minutes (failure 4 in a row)"),
        "{failures:?}"
    );
    // The model recovers: the same idea is explored at minute 15, and only once.
    w.model.fallback(Scripted::tool(
        "explored",
        json!({"learned": "Octopuses have three hearts."}),
    ));
    w.clock.advance(Duration::minutes(2));
    assert_eq!(w.app.impulses.check().len(), 1);
    w.app.spine.drain().await;
    assert!(
        w.journal(Kind::Impulse)
            .iter()
            .any(|e| e.summary == "explored an idea: why octopuses have three hearts")
    );
    w.clock.advance(Duration::minutes(30));
    assert!(w.app.impulses.check().is_empty(), "explored once");
    assert_eq!(w.model.requests().len(), 5);
}

#[tokio::test]
async fn why_explains_a_post_resent_after_a_restart() {
    let w = World::start(settings()).await;
    w.app
        .store()
        .initiative()
        .outbox_insert(
            "initiative-crash-1",
            GUILD_A,
            GENERAL,
            "survived a crash",
            w.clock.now(),
        )
        .unwrap();
    w.app.initiative.recover().await;
    let why = why_about(&w, GENERAL, "survived a crash");
    assert!(why.contains("posted a thought after a restart"), "{why}");
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

#[tokio::test]
async fn why_explains_a_reflex_post_in_another_channel() {
    let (s, _dir) = with_reflexes(&[("announce.yaml", ANNOUNCE)]);
    let w = World::start(s).await;
    w.message(GENERAL, "ada", "version 2 is released", Addressed::No)
        .await;
    let said = w.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0].channel, crate::support::world::MEMES);
    let why = why_about(
        &w,
        crate::support::world::MEMES,
        "ada says a release is out",
    );
    assert!(
        why.contains("reflex announce posted this — the reflex announce ran: Releases are announced in the memes channel"),
        "{why}"
    );
}
