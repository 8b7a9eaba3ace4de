//! The garden's first hour (issue 35): a `/ambient garden` request the last
//! process left behind runs at once after a restart, an answer of "already
//! on its way" is only given when a wake is set for it — with when, if the
//! budget holds it — the first cycle ever keeps to the budget like every
//! later one, and a wake the store would not save still comes.
//!
//! Each test drives the garden as its run loop does — `recover` when it
//! starts, then `look` at the wake — on the manual clock, and checks what a
//! person would see: the answer to `/ambient garden`, the cycle in the log,
//! and the model request that did or did not happen.

use ambient::clock::Clock;
use ambient::garden::{Look, read_status};
use ambient::settings::Settings;
use ambient::store::messages::Source;
use ambient::store::usage::UsageRecord;
use ambient::vocab::journal::Kind;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, GUILD_A, World, settings};

fn end(summary: &str) -> Scripted {
    Scripted::tool(
        "end_ambient_cycle",
        json!({"summary": summary, "memories_modified": 0, "compactions": 0}),
    )
}

/// One look at the garden's wake, as the run loop takes it, and whatever it
/// queued handled: a cycle that is due runs before this returns.
async fn look(w: &World) {
    let look = w.app.garden.look(&w.app.settings.global(), w.clock.now());
    if matches!(look, Look::Again) {
        w.app.spine.drain().await;
    }
}

/// The requests the garden's model part made (its prompt is the garden's).
fn garden_requests(w: &World) -> Vec<String> {
    w.model
        .requests()
        .into_iter()
        .map(|r| r.body.to_string())
        .filter(|b| b.contains("end_ambient_cycle"))
        .collect()
}

fn ambient_usage(tokens: u64, at: DateTime<Utc>) -> UsageRecord {
    UsageRecord {
        id: 0,
        at,
        role: "ambient".into(),
        source: "ambient".into(),
        guild: Some(GUILD_A),
        provider: "openai".into(),
        model: "scripted".into(),
        pay_per_token: false,
        tokens_in: tokens,
        tokens_out: 0,
        latency_ms: 10,
        outcome: "ok".into(),
        detail: String::new(),
    }
}

#[tokio::test]
async fn a_request_left_by_the_last_process_runs_at_once_after_a_restart() {
    let w = World::start(settings()).await;
    w.hear(GENERAL, "ada", "the meetup moved to friday", Source::Text);
    w.model.push(end("tended"));
    w.app.garden.cycle("test").await.unwrap();
    w.clock.advance(Duration::minutes(20));
    w.hear(GENERAL, "ada", "and the venue is the library", Source::Text);
    assert_eq!(
        w.app.garden.request(GUILD_A, "ada"),
        "The garden will tend this server's memory next."
    );
    // The bot stops before its loop gets to the request, and is back two minutes later.
    let (dir, model, clock) = w.stop().await;
    clock.advance(Duration::minutes(2));
    let w = World::start_in(settings(), dir, model, clock).await;
    w.app.garden.recover();
    let status = w.app.garden.status();
    assert_eq!(
        status.next_wake,
        Some(w.clock.now()),
        "the request is due: it is not put off by a new interval: {status:?}"
    );
    assert_eq!(
        w.app.garden.request(GUILD_A, "ada"),
        "A garden cycle for this server is already on its way.",
        "true now: a wake is set for it"
    );
    w.model.push(end("tended as asked"));
    look(&w).await;
    let cycles = w.app.store().garden().cycles(10).unwrap();
    assert_eq!(cycles.len(), 2, "the requested cycle ran");
    assert_eq!(cycles[0].guild, Some(GUILD_A));
    assert_eq!(cycles[0].summary, "tended as asked");
    let asked = garden_requests(&w);
    assert_eq!(asked.len(), 2);
    assert!(
        asked[1].contains("ada asked for a garden cycle"),
        "the request is in the prompt: {}",
        asked[1]
    );
    assert!(
        w.app.store().garden().queue_open().unwrap().is_empty(),
        "one request, served once"
    );
}

#[tokio::test]
async fn a_request_still_open_but_without_a_wake_is_woken_again_not_called_on_its_way() {
    let w = World::start(settings()).await;
    w.hear(GENERAL, "ada", "the meetup moved to friday", Source::Text);
    w.app.garden.request(GUILD_A, "ada");
    // Its model part fails: the request stays open and the garden waits its interval.
    w.model.push(Scripted::status(500, "{}"));
    let failed = w.app.garden.cycle("requested by ada").await.unwrap();
    assert_eq!((failed.next_wake - w.clock.now()).num_minutes(), 30);
    assert_eq!(w.app.store().garden().queue_open().unwrap().len(), 1);
    // Past this server's back-off (5 min), ada asks again.
    w.clock.advance(Duration::minutes(6));
    assert_eq!(
        w.app.garden.request(GUILD_A, "ada"),
        "The garden will tend this server's memory next.",
        "nothing is on its way for 24 more minutes: say what happens instead"
    );
    assert_eq!(
        w.app.garden.status().next_wake,
        Some(w.clock.now()),
        "{:?}",
        w.app.garden.status()
    );
    w.model.push(end("tended as asked"));
    look(&w).await;
    let last = w.app.store().garden().cycles(1).unwrap().remove(0);
    assert_eq!(
        (last.guild, last.summary.as_str()),
        (Some(GUILD_A), "tended as asked")
    );
    assert_eq!(garden_requests(&w).len(), 2);
    assert!(
        w.app.store().garden().queue_open().unwrap().is_empty(),
        "the one request row was reused and is done"
    );
}

#[tokio::test]
async fn the_first_cycle_ever_keeps_to_the_eighty_percent_rule() {
    let mut s: Settings = settings();
    s.budget.daily_tokens.ambient = 10_000;
    let w = World::start(s).await;
    let start = w.clock.now();
    // 95 % of the day's ambient budget went on initiative posts overnight.
    let spent_at = start - Duration::hours(22) - Duration::minutes(30);
    w.app
        .store()
        .usage()
        .usage_append(&ambient_usage(9_500, spent_at))
        .unwrap();
    w.hear(GENERAL, "ada", "the meetup moved to friday", Source::Text);
    w.app.garden.recover();
    let planned = w.app.garden.status().next_wake.unwrap();
    assert_eq!(
        planned,
        start + Duration::minutes(120),
        "the maximum interval"
    );

    let answer = w.app.garden.request(GUILD_A, "olga");
    assert_eq!(
        answer,
        "The garden will tend this server's memory at 14:00 UTC — it keeps to the budget, which holds it until then.",
    );
    let status = w.app.garden.status();
    assert_eq!(status.next_wake, Some(planned), "{status:?}");
    assert!(
        status
            .next_reason
            .contains("95% of the budget is used: the longest interval"),
        "{status:?}"
    );
    look(&w).await;
    assert!(
        w.app.store().garden().cycles(10).unwrap().is_empty(),
        "no cycle ran"
    );
    // The garden's requests, not any: once in a full CI run a request with
    // no garden prompt reached this test's model server (not reproduced;
    // shown here if it comes again).
    assert!(
        garden_requests(&w).is_empty(),
        "no garden model call at 95 % of the budget; all requests: {:?}",
        w.model
            .requests()
            .iter()
            .map(|r| r.body.to_string().chars().take(300).collect::<String>())
            .collect::<Vec<_>>()
    );

    // At the planned wake (the night's spending is more than a day old by
    // then) it runs, and serves the request.
    w.clock.advance(Duration::minutes(120));
    w.model.push(end("tended as asked"));
    look(&w).await;
    let cycles = w.app.store().garden().cycles(10).unwrap();
    assert_eq!(cycles.len(), 1);
    assert_eq!(
        (cycles[0].guild, cycles[0].summary.as_str()),
        (Some(GUILD_A), "tended as asked")
    );
    assert!(
        garden_requests(&w)[0].contains("olga asked for a garden cycle"),
        "the request was kept, not dropped"
    );
    assert!(w.app.store().garden().queue_open().unwrap().is_empty());
}

#[tokio::test]
async fn asking_again_while_the_budget_holds_the_wake_says_when_as_the_first_answer_did() {
    let mut s: Settings = settings();
    s.budget.daily_tokens.ambient = 10_000;
    let w = World::start(s).await;
    let start = w.clock.now();
    w.hear(GENERAL, "ada", "the meetup moved to friday", Source::Text);
    w.model.push(end("tended"));
    w.app.garden.cycle("test").await.unwrap();
    // Then initiative posts spend 95 % of the day's ambient budget.
    w.app
        .store()
        .usage()
        .usage_append(&ambient_usage(9_500, start))
        .unwrap();
    w.clock.advance(Duration::minutes(20));
    let first = w.app.garden.request(GUILD_A, "olga");
    assert_eq!(
        first,
        "The garden will tend this server's memory at 14:00 UTC — it keeps to the budget, which holds it until then.",
        "the maximum interval after the last cycle"
    );
    w.clock.advance(Duration::minutes(30));
    assert_eq!(
        w.app.garden.request(GUILD_A, "ada"),
        "A garden cycle for this server is already on its way: at 14:00 UTC — it keeps to the budget, which holds it until then.",
        "70 minutes away: 'on its way' alone would read as now"
    );
    look(&w).await;
    assert_eq!(garden_requests(&w).len(), 1, "still held: no model call");
    assert_eq!(
        w.app.store().garden().queue_open().unwrap().len(),
        1,
        "one request"
    );

    // Once it is due it is simply on its way.
    w.clock.advance(Duration::minutes(70));
    assert_eq!(
        w.app.garden.request(GUILD_A, "ada"),
        "A garden cycle for this server is already on its way."
    );
}

/// Makes the store refuse to write the garden's status row (as a full disk
/// would), while it still reads it and writes everything else.
fn status_unwritable(w: &World, on: bool) {
    let conn = rusqlite::Connection::open(w.app.store().path().unwrap()).unwrap();
    if on {
        conn.execute_batch(
            "CREATE TRIGGER status_no_insert BEFORE INSERT ON garden_state WHEN NEW.key = 'status'
               BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
             CREATE TRIGGER status_no_update BEFORE UPDATE ON garden_state WHEN NEW.key = 'status'
               BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;",
        )
        .unwrap();
    } else {
        conn.execute_batch("DROP TRIGGER status_no_insert; DROP TRIGGER status_no_update;")
            .unwrap();
    }
}

#[tokio::test]
async fn a_wake_the_store_would_not_save_still_comes() {
    let w = World::start(settings()).await;
    w.hear(GENERAL, "ada", "the meetup moved to friday", Source::Text);
    w.model.push(end("tended"));
    let first = w.app.garden.cycle("test").await.unwrap();
    w.clock.advance(Duration::minutes(20));
    assert!(
        first.next_wake > w.clock.now(),
        "the planned wake is still ahead: {first:?}"
    );
    w.hear(GENERAL, "ada", "and the venue is the library", Source::Text);

    status_unwritable(&w, true);
    assert_eq!(
        w.app.garden.request(GUILD_A, "ada"),
        "The garden will tend this server's memory next."
    );
    w.model.push(end("tended as asked"));
    look(&w).await;
    let cycles = w.app.store().garden().cycles(10).unwrap();
    assert_eq!(
        (cycles.len(), cycles[0].summary.as_str()),
        (2, "tended as asked"),
        "the request's wake came, though the store kept the old one"
    );
    assert_eq!(garden_requests(&w).len(), 2);
    let lost: Vec<String> = w
        .journal(Kind::Error)
        .into_iter()
        .filter(|e| e.summary == "could not save the garden's status")
        .map(|e| e.reason)
        .collect();
    assert_eq!(lost.len(), 1, "said once, not at every write: {lost:?}");
    assert!(
        lost[0]
            == "database error: database or disk is full; this process keeps its next wake and writes it again \
                at each look; until then `ambient status` in another process shows the last one saved",
        "{}",
        lost[0]
    );
    let next = w.app.garden.status().next_wake;
    assert_eq!(next, Some(cycles[0].next_wake_at.unwrap()));
    assert_ne!(
        read_status(&w.app.store().garden()).next_wake,
        next,
        "not stored yet"
    );

    // The store takes writes again: the next look stores the status, so
    // `ambient status` in another process sees it too.
    status_unwritable(&w, false);
    look(&w).await;
    assert_eq!(read_status(&w.app.store().garden()).next_wake, next);
    assert_eq!(garden_requests(&w).len(), 2, "nothing ran twice");
}
