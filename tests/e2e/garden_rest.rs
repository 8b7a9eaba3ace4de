//! The garden at rest: a pass that finds nothing to do leaves no row in the
//! garden's log and no journal line, and each such pass in a row doubles the
//! interval to the next — until someone talks again, when the garden is
//! back to its interval and its next cycle is recorded as before.
//!
//! Each test drives the garden as its run loop does — a look at the wake
//! when it is due — on the manual clock, and checks what an operator would
//! see: `ambient garden log` (the cycles table), the journal, the next wake.

use ambient::clock::Clock;
use ambient::garden::Look;
use ambient::store::messages::Source;
use ambient::vocab::journal::Kind;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, World, settings};

fn end(summary: &str) -> Scripted {
    Scripted::tool(
        "end_ambient_cycle",
        json!({"summary": summary, "memories_modified": 0, "compactions": 0}),
    )
}

/// Moves the clock to the garden's next wake and looks, as the run loop
/// does: the cycle due then runs before this returns. Returns the wait.
async fn sleep_until_the_wake(w: &World) -> i64 {
    let wake = w.app.garden.status().next_wake.expect("a wake is set");
    let waited = minutes_from_now(w, wake);
    w.clock.set(wake);
    let look = w.app.garden.look(&w.app.settings.global(), w.clock.now());
    assert!(matches!(look, Look::Again), "the wake was due: a cycle ran");
    w.app.spine.drain().await;
    waited
}

fn minutes_from_now(w: &World, t: DateTime<Utc>) -> i64 {
    (t - w.clock.now()).num_minutes()
}

/// The journal's lines about whole cycles ("garden cycle 3 completed").
fn cycle_lines(w: &World) -> usize {
    w.journal(Kind::Garden)
        .iter()
        .filter(|e| e.summary.starts_with("garden cycle"))
        .count()
}

/// The model requests of the garden's model part.
fn garden_requests(w: &World) -> usize {
    w.model
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("end_ambient_cycle"))
        .count()
}

#[tokio::test]
async fn passes_with_nothing_to_do_leave_no_row_and_wake_less_and_less_often_until_someone_talks() {
    let mut s = settings();
    s.garden.max_interval_minutes = 24 * 60;
    let w = World::start(s).await;
    w.hear(GENERAL, "ada", "the meetup moved to friday", Source::Text);
    w.model.push(end("tended the meetup"));
    let first = w.app.garden.cycle("test").await.unwrap();
    assert!(!first.rested, "people talked: the model part tended them");
    assert_eq!(w.app.store().garden().cycles(100).unwrap().len(), 1);
    assert_eq!(cycle_lines(&w), 1);

    // A day of quiet: every pass finds nothing to do.
    let mut waits = Vec::new();
    for _ in 0..5 {
        waits.push(sleep_until_the_wake(&w).await);
    }
    assert_eq!(
        w.app.store().garden().cycles(100).unwrap().len(),
        1,
        "no row for a pass that did nothing"
    );
    assert_eq!(cycle_lines(&w), 1, "and no journal line");
    assert_eq!(garden_requests(&w), 1, "and no model request");
    let next = w.app.garden.status();
    let rest = minutes_from_now(&w, next.next_wake.unwrap());
    waits.push(rest);
    // The first wait is the maximum a tended server gets when it asks for
    // none; then the quiet interval (30 min, halved after 3 h of quiet)
    // doubles with each pass that found nothing.
    assert_eq!(waits, [1440, 30, 60, 120, 240, 480], "{next:?}");
    assert!(
        next.next_reason.starts_with("nothing to tend")
            && next.next_reason.contains("found nothing to do"),
        "the status says why the wake is late: {}",
        next.next_reason
    );
    let state = w.app.garden.scheduler_state();
    assert_eq!(state.idle_passes, 5);
    assert_eq!(state.good_cycles, 1, "resting is no good cycle");

    // Someone talks: the rest is over at once.
    w.clock.advance(Duration::minutes(10));
    w.hear(GENERAL, "bo", "and the venue is the library", Source::Text);
    let plan = w.app.garden.plan();
    assert_eq!(
        plan.wait.map(|d| d.num_minutes()),
        Some(30),
        "back to the interval: {:?}",
        plan.why
    );
    w.model.push(end("tended the venue"));
    let r = w.app.garden.cycle("conversation ended").await.unwrap();
    assert!(!r.rested);
    let cycles = w.app.store().garden().cycles(100).unwrap();
    assert_eq!(cycles.len(), 2, "a cycle that did something is logged");
    assert_eq!(cycles[0].summary, "tended the venue");
    assert_eq!(cycle_lines(&w), 2);
    assert_eq!(w.app.garden.scheduler_state().idle_passes, 0);
    // And the pass after it, with nothing new, rests from the interval again.
    sleep_until_the_wake(&w).await;
    let after = w.app.garden.status();
    assert_eq!(
        minutes_from_now(&w, after.next_wake.unwrap()),
        30,
        "one pass at rest: the quiet interval (15 min after 3 h of quiet) doubled once: {after:?}"
    );
    assert_eq!(w.app.store().garden().cycles(100).unwrap().len(), 2);
}

#[tokio::test]
async fn a_pass_that_changes_memory_is_logged_even_without_a_model_call() {
    let w = World::start(settings()).await;
    let now = w.clock.now();
    for text in [
        "movie night is every sunday at eight in the lounge",
        "movie night is every sunday at eight in the lounge!",
    ] {
        w.app
            .store()
            .memory()
            .insert_fact(&ambient::vocab::fact::Fact::new(
                ambient::vocab::fact::Scope::guild(crate::support::world::GUILD_A),
                ambient::vocab::fact::FactKind::Fact,
                ambient::vocab::fact::Importance::Medium,
                text,
                now,
            ))
            .unwrap();
    }
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.tended.merged, 1);
    assert!(!r.rested, "a merge is something done");
    let cycles = w.app.store().garden().cycles(10).unwrap();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(garden_requests(&w), 0, "a memory pass alone");
    assert_eq!(w.app.garden.scheduler_state().idle_passes, 0, "not at rest");
}
