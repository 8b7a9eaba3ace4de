//! No talking to itself: an unprompted post nobody answered stops the next
//! one (`initiative.text.maxUnansweredPosts`, gate `unanswered`) until a
//! person posts in the pool or reacts to it — the initiative's posts and
//! the routines' alike, except a routine added to post even then. Shown by
//! the status, failing closed on a store it cannot read, and counted in
//! the replay report.

use crate::support::replaying;
use std::io::Write as _;
use std::path::Path;

use ambient::attention::{Author, Percept, Place};
use ambient::clock::Clock;
use ambient::commands::Asker;
use ambient::ids::UserId;
use ambient::replay::run::{Models, Options, Outcome, replay};
use ambient::settings::{ProviderKind, Settings};
use ambient::store::messages::Source;
use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::support::model_server::Scripted;
use crate::support::world::{self, GENERAL, GUILD_A, MEMES, World};

/// Guild A's pool, eager, at the shipped `maxUnansweredPosts`.
fn settings() -> Settings {
    let mut s = world::settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES];
    s.initiative.text.max_unanswered_posts =
        Settings::default().initiative.text.max_unanswered_posts;
    s
}

fn post(text: &str) -> Scripted {
    Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": text, "reason": "worth it"}),
    )
}

/// Guild A's journal lines saying the initiative stopped at `gate`.
fn stops(w: &World, gate: &str) -> Vec<String> {
    let summary = format!("initiative stopped at the {gate} gate");
    w.journal(Kind::Gate)
        .into_iter()
        .filter(|e| e.guild == Some(GUILD_A) && e.summary == summary)
        .map(|e| e.reason)
        .collect()
}

fn status(w: &World) -> Vec<String> {
    ambient::commands::status::widget(
        &ambient::commands::status::Sources::of(&w.app),
        Some(GUILD_A),
    )
}

#[tokio::test]
async fn a_post_nobody_answered_stops_the_next_until_someone_speaks() {
    assert_eq!(
        Settings::default().initiative.text.max_unanswered_posts,
        1,
        "the default: none in a row"
    );
    let w = World::start(settings()).await;
    w.model.fallback(post("Anyone seen the comet?"));
    w.tick().await;
    assert_eq!(w.said().len(), 1);
    let first = w.said()[0].at;

    for _ in 0..4 {
        w.clock.advance(chrono::Duration::hours(2));
        w.tick().await;
    }
    assert_eq!(w.said().len(), 1, "no second post into the silence");
    assert_eq!(w.model.requests().len(), 1, "and no model asked about one");
    let stopped = stops(&w, "unanswered");
    assert_eq!(stopped.len(), 1, "one line for the stretch: {stopped:#?}");
    assert_eq!(
        stopped[0],
        format!(
            "nobody has answered my last post (at {}): no message in a channel open to posts, \
             no reaction; the next waits until someone speaks (initiative.text.maxUnansweredPosts is 1)",
            first.format("%H:%M UTC")
        )
    );
    let lines = status(&w);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("initiative: no next look: nobody has answered my last post")),
        "{lines:#?}"
    );

    // Someone speaks in another channel of the pool: the room answered.
    w.hear(MEMES, "ada", "the comet was gorgeous", Source::Text);
    w.clock.advance(chrono::Duration::hours(2));
    w.tick().await;
    assert_eq!(w.said().len(), 2, "answered, it may post again");
    w.clock.advance(chrono::Duration::hours(2));
    w.tick().await;
    assert_eq!(w.said().len(), 2, "and that post waits for its own answer");
}

#[tokio::test]
async fn a_reaction_to_the_post_answers_it_but_the_bots_own_does_not() {
    let w = World::start(settings()).await;
    w.model.fallback(post("Pancakes or waffles?"));
    w.tick().await;
    let posted = w.said()[0].id;
    let react = |who: UserId, name: &str| Percept::Reaction {
        place: Place {
            guild: Some(GUILD_A),
            channel: GENERAL,
        },
        message: posted,
        user: Author {
            id: who,
            name: name.into(),
            is_bot: who == UserId(1),
        },
        emoji: "🥞".into(),
        added: true,
        at: w.clock.now(),
    };
    // The gateway echoes the bot's own reactions too: that is not an answer.
    w.app.senses.perceive(react(UserId(1), "ambient")).unwrap();
    w.app.spine.drain().await;
    w.clock.advance(chrono::Duration::hours(2));
    w.tick().await;
    assert_eq!(w.said().len(), 1, "its own reaction answers nothing");
    assert_eq!(stops(&w, "unanswered").len(), 1);

    w.app.senses.perceive(react(UserId(77), "bo")).unwrap();
    w.app.spine.drain().await;
    w.clock.advance(chrono::Duration::minutes(5));
    w.tick().await;
    assert_eq!(w.said().len(), 2, "a person's reaction answers the post");
}

#[tokio::test]
async fn two_allowed_lets_one_more_go_and_zero_is_off() {
    for (max, posts) in [(2, 2), (0, 4)] {
        let mut s = settings();
        s.initiative.text.max_unanswered_posts = max;
        let w = World::start(s).await;
        w.model.fallback(post("Another thought"));
        for _ in 0..4 {
            w.tick().await;
            w.clock.advance(chrono::Duration::hours(2));
        }
        assert_eq!(w.said().len(), posts, "maxUnansweredPosts {max}");
    }
}

fn console_asker() -> Asker {
    Asker {
        guild: Some(GUILD_A),
        channel: GENERAL,
        user: UserId(50),
        name: "ada".into(),
        manage: true,
    }
}

/// Fires the routines that are due and waits until they are handled.
async fn fire(w: &World) {
    w.app.impulses.check();
    w.app.spine.drain().await;
}

#[tokio::test]
async fn routines_wait_for_an_answer_unless_added_to_post_even_then() {
    let mut s = settings();
    // Only the routines post here.
    s.initiative.text.eagerness = 0;
    let w = World::start(s).await;
    w.model.fallback(Scripted::tool(
        "act",
        json!({"say": "standup time!", "note": "asked"}),
    ));
    let who = console_asker();
    let added = ambient::commands::impulses::run_text(
        &w.app,
        &who,
        "schedule",
        "add standup | 0 * * * * | ask how it's going",
    );
    assert!(
        added.contains("It is skipped while nobody has answered my last posts"),
        "{added}"
    );
    let added = ambient::commands::impulses::run_text(
        &w.app,
        &who,
        "schedule",
        "add meeting | 30 13-23 * * * | remind of the meeting | unanswered",
    );
    assert!(
        added.contains("It posts even when nobody has answered my last posts."),
        "{added}"
    );
    let listed = ambient::commands::impulses::run_text(&w.app, &who, "schedule", "list");
    assert!(listed.contains("posts even unanswered"), "{listed}");

    // 13:00 (the clock starts at 12:00): nothing unanswered yet, the standup posts.
    w.clock.advance(chrono::Duration::hours(1));
    fire(&w).await;
    assert_eq!(w.said().len(), 1);
    // A routine's post counts for the initiative too.
    let eagerness = |v: &str| {
        w.app
            .settings
            .set_override(GUILD_A, "initiative.text.eagerness", v, None)
            .unwrap();
    };
    eagerness("100");
    w.tick().await;
    assert_eq!(w.said().len(), 1, "the initiative waits for an answer too");
    assert_eq!(stops(&w, "unanswered").len(), 1);
    eagerness("0");

    // 13:30 the meeting reminder goes regardless; 14:00 the standup does not.
    w.clock.advance(chrono::Duration::minutes(30));
    fire(&w).await;
    assert_eq!(w.said().len(), 2, "the meeting's reminder");
    w.clock.advance(chrono::Duration::minutes(30));
    fire(&w).await;
    assert_eq!(w.said().len(), 2, "no standup into the silence");
    let skipped: Vec<String> = w
        .journal(Kind::Impulse)
        .into_iter()
        .filter(|e| e.summary == "skipped the routine standup")
        .map(|e| e.reason)
        .collect();
    assert_eq!(
        skipped,
        vec![
            "unanswered gate: nobody has answered my last post (at 13:30 UTC): no message in a \
             channel open to posts, no reaction; the next waits until someone speaks \
             (initiative.text.maxUnansweredPosts is 1); the routine was not added to post even then"
        ]
    );

    // Someone answers: without the meeting's reminder, the standup posts again at 15:00.
    w.hear(GENERAL, "ada", "all good here", Source::Text);
    let removed = ambient::commands::impulses::run_text(&w.app, &who, "schedule", "remove meeting");
    assert!(removed.starts_with("Removed"), "{removed}");
    w.clock.advance(chrono::Duration::hours(1));
    fire(&w).await;
    assert_eq!(w.said().len(), 3, "answered, the standup posts again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_answer_keeps_the_bot_quiet() {
    let w = World::start(settings()).await;
    w.model.fallback(post("Anyone seen the comet?"));
    w.tick().await;
    assert_eq!(w.said().len(), 1);
    w.hear(GENERAL, "ada", "yes!", Source::Text);
    w.clock.advance(chrono::Duration::hours(2));
    w.tick().await;
    assert_eq!(w.said().len(), 2);

    w.break_table("reactions");
    for _ in 0..3 {
        w.clock.advance(chrono::Duration::hours(2));
        w.tick().await;
    }
    assert_eq!(w.said().len(), 2, "no post on a read that failed");
    assert_eq!(w.model.requests().len(), 2, "and no model call");
    let failed = stops(&w, "store");
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert!(
        failed[0].starts_with("store read failed: the bot's posts since a person last spoke: "),
        "{failed:#?}"
    );
    let lines = status(&w);
    assert!(
        lines.iter().any(|l| l.starts_with(
            "initiative: cannot tell: store read failed: the bot's posts since a person last spoke"
        )),
        "{lines:#?}"
    );
    w.mend_table("reactions");
    w.clock.advance(chrono::Duration::hours(2));
    w.tick().await;
    assert_eq!(
        stops(&w, "unanswered").len(),
        1,
        "mended, it reads the post as unanswered, not as a store failure"
    );
    assert_eq!(w.said().len(), 2);
}

/// A meeting from 17:00 to 18:05, then silence until one line the next
/// morning: the empty evening the bot used to talk into.
fn meeting_then_silence(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("meeting.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    let people = ["maya", "jonas", "priya", "tom"];
    let start: chrono::DateTime<chrono::Utc> = "2026-05-04T17:00:00Z".parse().unwrap();
    for i in 0..66 {
        let at = start + chrono::Duration::minutes(i);
        let line = json!({
            "ts": at.to_rfc3339(),
            "channel": "general",
            "author": people[i as usize % people.len()],
            "content": format!("agenda item {i}: what do we think?"),
        });
        writeln!(f, "{line}").unwrap();
    }
    let morning = json!({"ts": "2026-05-05T07:45:00Z", "channel": "general", "author": "maya", "content": "morning"});
    writeln!(f, "{morning}").unwrap();
    path
}

async fn replayed(max_unanswered_posts: u32) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Settings::default();
    s.initiative.text.max_unanswered_posts = max_unanswered_posts;
    // A model for the deciding role, as an operator would configure it: the
    // offline stand-in answers in its place.
    s.executive.roles.ambient.provider = ProviderKind::Ollama;
    s.executive.roles.ambient.model = "qwen2.5:14b".into();
    s.executive.ollama_base_url = "http://127.0.0.1:9".into();
    s.initiative.text.eagerness = 100;
    replay(
        Options {
            models: Models::Offline { post_rate: 1.0 },
            ..replaying::offline(vec![meeting_then_silence(dir.path())], s, dir.path())
        },
        &|_| {},
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_replayed_meeting_then_silence_has_no_consecutive_unanswered_posts_at_defaults() {
    let gated = replayed(Settings::default().initiative.text.max_unanswered_posts)
        .await
        .report;
    let text = ambient::replay::text::report(&gated);
    assert!(gated.did.ambient_posts >= 1, "{text}");
    assert_eq!(gated.consecutive_unanswered, 0, "{text}");
    assert!(gated.gates["unanswered"] > 0, "{text}");
    assert!(
        text.contains(&format!(
            "Consecutive unanswered ambient posts (straight after its own, nobody speaking in between): 0 of {}.",
            gated.did.ambient_posts
        )),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&gated.json()).unwrap();
    assert_eq!(json["consecutive_unanswered"], 0);

    let off = replayed(0).await.report;
    let text = ambient::replay::text::report(&off);
    assert!(
        off.consecutive_unanswered >= 3,
        "without the gate it talks into the evening: {text}"
    );
    assert!(off.did.ambient_posts > gated.did.ambient_posts, "{text}");
    assert_eq!(off.gates.get("unanswered"), None, "{text}");
}
