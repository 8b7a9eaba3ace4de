//! Every unprompted word passes the same courtesy gate, whatever woke it: a
//! reflex fired by a reaction or by a newcomer, and a task the garden set
//! itself, keep quiet hours, hushes and people's boundaries as the
//! initiative and chime-ins do — while a reminder a person asked for
//! still comes.

use ambient::attention::{Author, Percept, Place};
use ambient::clock::Clock;
use ambient::commands::Asker;
use ambient::ids::{MessageId, UserId, next_snowflake, stable_id};
use ambient::impulses::NewTask;
use ambient::store::boundaries::Boundary;
use ambient::vocab::journal::Kind;
use chrono::{DateTime, Utc};

use crate::support::world::{GENERAL, GUILD_A, World, settings};

const WELCOME: &str = "name: welcome\nlevel: 0\ntrigger:\n  event: member_join\npipeline:\n  - action: reply\n    channel: \"#general\"\n    message: \"Welcome, {{user}}!\"\n";
const STAR: &str = "name: star\nlevel: 0\ntrigger:\n  event: reaction\n  emoji: \"⭐\"\npipeline:\n  - action: reply\n    message: \"Thanks for the star, {{user}}!\"\n";

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn person(name: &str) -> Author {
    Author {
        id: UserId(stable_id("user", name)),
        name: name.into(),
        is_bot: false,
    }
}

/// Quiet hours 23:00–08:00 in Berlin, and the two reflexes.
async fn world() -> (World, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("welcome.yaml"), WELCOME).unwrap();
    std::fs::write(dir.path().join("star.yaml"), STAR).unwrap();
    let mut s = settings();
    s.reflexes.dir = dir.path().to_string_lossy().into_owned();
    s.guild.timezone = "Europe/Berlin".into();
    s.initiative.quiet_hours = "23:00-08:00".into();
    (World::start(s).await, dir)
}

/// `who` joins the server, and `star` stars one of the bot's messages in #general.
async fn join_and_star(w: &World, who: &str, star: &str) {
    let now = w.clock.now();
    w.app
        .senses
        .perceive(Percept::MemberJoin {
            guild: GUILD_A,
            user: person(who),
            at: now,
        })
        .unwrap();
    w.app
        .senses
        .perceive(Percept::Reaction {
            place: Place {
                guild: Some(GUILD_A),
                channel: GENERAL,
            },
            message: MessageId(next_snowflake(now)),
            user: person(star),
            emoji: "⭐".into(),
            added: true,
            at: now,
        })
        .unwrap();
    w.app.spine.drain().await;
}

fn said(w: &World) -> Vec<String> {
    w.said().into_iter().map(|s| s.content).collect()
}

/// The reasons the reflexes gave for keeping quiet, newest last.
fn kept_quiet(w: &World) -> Vec<String> {
    w.journal(Kind::Outcome)
        .into_iter()
        .map(|e| e.reason)
        .filter(|r| r.contains("gate: "))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reaction_and_newcomer_reflexes_keep_quiet_hours_hushes_and_boundaries() {
    let (w, _dir) = world().await;

    w.clock.set(at("2026-01-05T23:30:00Z")); // half past midnight in Berlin
    join_and_star(&w, "nia", "ada").await;
    assert!(said(&w).is_empty(), "quiet hours: {:?}", said(&w));
    let why = kept_quiet(&w);
    assert_eq!(why.len(), 2, "{why:#?}");
    assert!(
        why.iter()
            .all(|r| r.contains("quiet_hours gate: quiet hours until 08:00 Europe/Berlin")),
        "{why:#?}"
    );

    w.clock.set(at("2026-01-06T09:00:00Z")); // ten in the morning
    let ada = Asker {
        guild: Some(GUILD_A),
        channel: GENERAL,
        user: person("ada").id,
        name: "ada".into(),
        manage: false,
    };
    ambient::commands::courtesy::hush(&w.app, &ada, "1h", "").unwrap();
    join_and_star(&w, "omar", "ada").await;
    assert!(said(&w).is_empty(), "hushed: {:?}", said(&w));
    assert_eq!(
        kept_quiet(&w)
            .iter()
            .filter(|r| r.contains("hush gate: #general is hushed"))
            .count(),
        2
    );

    w.clock.advance(chrono::Duration::hours(2));
    w.app
        .store()
        .people()
        .set_boundary(
            person("bea").id,
            Boundary::NoUnprompted,
            true,
            w.clock.now(),
        )
        .unwrap();
    join_and_star(&w, "bea", "bea").await;
    assert!(
        said(&w).is_empty(),
        "Bea asked not to be addressed unprompted: {:?}",
        said(&w)
    );
    assert_eq!(
        kept_quiet(&w)
            .iter()
            .filter(|r| r.contains("boundary gate: the person asked not to be answered unprompted"))
            .count(),
        2
    );

    join_and_star(&w, "kai", "ada").await;
    let mut both = said(&w);
    both.sort();
    assert_eq!(both, vec!["Thanks for the star, ada!", "Welcome, kai!"]);
}

/// A task the garden set itself (no owner) waits out quiet hours and comes
/// after them; a reminder a person asked for comes when it is due.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_the_garden_set_itself_waits_out_quiet_hours_a_persons_reminder_does_not() {
    let (w, _dir) = world().await;
    w.clock.set(at("2026-01-05T22:50:00Z"));
    let task = |text: &str, owner: Option<UserId>| NewTask {
        guild: Some(GUILD_A),
        channel: Some(GENERAL),
        text: text.into(),
        due: "in 15m".into(),
        message: Some(text.into()),
        context: "test".into(),
        created_by: if owner.is_some() {
            "ada".into()
        } else {
            "the garden".into()
        },
        owner,
    };
    w.app
        .impulses
        .add_task(task("Stretch, Ada!", Some(person("ada").id)))
        .unwrap();
    w.app
        .impulses
        .add_task(task("Weekly thread: what are you reading?", None))
        .unwrap();

    w.clock.set(at("2026-01-05T23:10:00Z"));
    w.app.impulses.check();
    w.app.spine.drain().await;
    assert_eq!(
        said(&w),
        vec!["Stretch, Ada!"],
        "the reminder comes; the garden's task waits"
    );
    let postponed: Vec<String> = w
        .journal(Kind::Impulse)
        .into_iter()
        .filter(|e| e.summary == "postponed a task: Weekly thread: what are you reading?")
        .map(|e| e.reason)
        .collect();
    assert_eq!(postponed.len(), 1, "{postponed:#?}");
    assert!(
        postponed[0].starts_with("quiet_hours gate: quiet hours until 08:00 Europe/Berlin")
            && postponed[0].ends_with("due again at 07:00 UTC"),
        "{postponed:#?}"
    );

    w.clock.set(at("2026-01-06T07:01:00Z"));
    w.app.impulses.check();
    w.app.spine.drain().await;
    assert_eq!(
        said(&w),
        vec!["Stretch, Ada!", "Weekly thread: what are you reading?"]
    );
}

/// A level-2 welcome (it asks the small model first) during quiet hours:
/// the gate is asked where its reply would go before the reflex runs, so
/// no model call is paid for words that could not be said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_reflex_that_would_ask_a_model_pays_nothing_in_quiet_hours() {
    const WARM: &str = "name: warm-welcome\nlevel: 2\ntrigger:\n  event: member_join\npipeline:\n  - action: llm_prompt\n    prompt: \"Write one warm line welcoming {{user}}.\"\n    output: line\n  - action: reply\n    channel: \"#general\"\n    message: \"{{line}}\"\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("warm.yaml"), WARM).unwrap();
    let mut s = settings();
    s.reflexes.dir = dir.path().to_string_lossy().into_owned();
    s.guild.timezone = "Europe/Berlin".into();
    s.initiative.quiet_hours = "23:00-08:00".into();
    let w = World::start(s).await;
    w.model
        .fallback(crate::support::model_server::Scripted::text(
            "Welcome aboard!",
        ));
    w.clock.set(at("2026-01-05T23:30:00Z"));
    w.app
        .senses
        .perceive(Percept::MemberJoin {
            guild: GUILD_A,
            user: person("nia"),
            at: w.clock.now(),
        })
        .unwrap();
    w.app.spine.drain().await;
    assert!(
        w.model.requests().is_empty(),
        "no model call in quiet hours"
    );
    assert!(said(&w).is_empty());
    let why = kept_quiet(&w);
    assert!(
        why.iter()
            .any(|r| r.contains("warm-welcome not run: quiet_hours gate")),
        "{why:#?}"
    );
}
