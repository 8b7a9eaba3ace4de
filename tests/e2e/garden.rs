//! The garden on the in-process bot, on the manual clock: the adaptive
//! scheduler fed with real usage records and rate-limit headers, the cycle
//! and its transcript, the memory pass, feedback, the queue, crash safety,
//! and the context stream's isolation.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration as StdDuration;

use ambient::attention::{Addressed, Author, Percept, Place};
use ambient::clock::Clock;
use ambient::garden::{CONTINUATION, CycleReport};
use ambient::ids::{ChannelId, MessageId, UserId, next_snowflake, stable_id};
use ambient::settings::Settings;
use ambient::store::garden::CycleStatus;
use ambient::store::messages::{Source, StoredMessage};
use ambient::store::usage::UsageRecord;
use ambient::vocab::fact::{Fact, FactKind, Importance, Scope};
use ambient::vocab::journal::Kind;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::support::home::Home;
use crate::support::model_server::Scripted;
use crate::support::world::{B_GENERAL, GENERAL, GUILD_A, GUILD_B, MEMES, World, settings};

fn end(summary: &str, wake_in_minutes: Option<u32>) -> Scripted {
    let mut v = json!({"summary": summary, "memories_modified": 0, "compactions": 0});
    if let Some(m) = wake_in_minutes {
        v["next_schedule"] = json!({"wake_in_minutes": m, "context": "look again"});
    }
    Scripted::tool("end_ambient_cycle", v)
}

fn minutes_until(w: &World, t: DateTime<Utc>) -> i64 {
    (t - w.clock.now()).num_minutes()
}

/// The scheduler reads the last five cycles' cost: make it 6,000 tokens each.
fn five_past_cycles_of_6000_tokens(w: &World) {
    for _ in 0..5 {
        let id = w
            .app
            .store()
            .garden()
            .cycle_begin("synthetic", w.clock.now())
            .unwrap();
        let mut c = w.app.store().garden().cycle(id).unwrap().unwrap();
        c.status = CycleStatus::Completed;
        c.tokens_in = 6_000;
        w.app.store().garden().cycle_save(&c).unwrap();
    }
}

/// A provider window of `limit` tokens with `remaining` left and an hour to its reset.
fn window(limit: u32, remaining: u32) -> [(&'static str, String); 3] {
    [
        ("x-ratelimit-limit-tokens", limit.to_string()),
        ("x-ratelimit-remaining-tokens", remaining.to_string()),
        ("x-ratelimit-reset-tokens", "60m0s".to_string()),
    ]
}

/// After five 6,000-token cycles in that window, one cycle whose agent asks to wake in 10 minutes.
async fn cycle_asking_ten_minutes(
    headers: [(&'static str, String); 3],
) -> (World, ambient::garden::CycleReport) {
    let w = World::start(settings()).await;
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    w.model.success_headers(&headers);
    five_past_cycles_of_6000_tokens(&w);
    w.hear(GENERAL, "ada", "hello", Source::Text);
    w.model.push(end("looked around", Some(10)));
    let r = w.app.garden.cycle("test").await.unwrap();
    (w, r)
}

fn planned(w: &World) -> i64 {
    w.app.garden.plan().wait.expect("not paused").num_minutes()
}

/// A channel of guild A that is not among the bot's open (discovery or reply) channels.
const MODS: ChannelId = ChannelId(2003);

/// Holds a long cycle's memory pass until opened — or dropped, so a failing
/// test does not leave the pass waiting (and the runtime waiting for it).
struct Gate(Arc<AtomicBool>);

impl Gate {
    fn open(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.open();
    }
}

/// Starts a long cycle: its memory pass waits at the first server until the
/// gate opens. Returns once the cycle is running.
async fn long_cycle(
    w: &World,
) -> (
    Gate,
    tokio::task::JoinHandle<Result<CycleReport, ambient::garden::CycleError>>,
) {
    let now = w.clock.now();
    w.app
        .store()
        .memory()
        .insert_fact(&fact(
            Scope::guild(GUILD_A),
            "the server mascot is a capybara",
            now,
        ))
        .unwrap();
    let open = Arc::new(AtomicBool::new(false));
    let waiting = Arc::new(AtomicBool::new(false));
    let (o, wt) = (open.clone(), waiting.clone());
    let stop = Arc::new(move || {
        wt.store(true, Ordering::SeqCst);
        while !o.load(Ordering::SeqCst) {
            std::thread::sleep(StdDuration::from_millis(5));
        }
        false
    });
    let garden = w.app.garden.clone();
    let task = tokio::spawn(async move { garden.cycle_until("long", stop).await });
    while !waiting.load(Ordering::SeqCst) {
        tokio::time::sleep(StdDuration::from_millis(5)).await;
    }
    (Gate(open), task)
}

/// The garden's run loop, as the bot runs it after `Garden::recover` (which
/// a test calls itself when it needs it); send `true` to stop it.
fn run_loop(
    w: &World,
) -> (
    tokio::sync::watch::Sender<bool>,
    tokio::task::JoinHandle<()>,
) {
    let (stop, rx) = tokio::sync::watch::channel(false);
    (stop, tokio::spawn(w.app.garden.clone().run(rx)))
}

/// Waits (in real time, up to ten seconds) until `ok` holds.
async fn eventually(what: &str, ok: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + StdDuration::from_secs(10);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
}

fn fact(scope: Scope, content: &str, now: DateTime<Utc>) -> Fact {
    Fact::new(scope, FactKind::Fact, Importance::Medium, content, now)
}

fn usage(role: &str, source: &str, tokens: u64, outcome: &str, at: DateTime<Utc>) -> UsageRecord {
    UsageRecord {
        id: 0,
        at,
        role: role.into(),
        source: source.into(),
        guild: Some(GUILD_A),
        provider: "openai".into(),
        model: "scripted".into(),
        pay_per_token: false,
        tokens_in: tokens,
        tokens_out: 0,
        latency_ms: 10,
        outcome: outcome.into(),
        detail: String::new(),
    }
}

/// An ambient post the bot made in #general, as the initiative engine records it.
fn ambient_post(w: &World, text: &str) -> MessageId {
    let now = w.clock.now();
    let id = MessageId(next_snowflake(now));
    w.app
        .store()
        .initiative()
        .outbox_insert("nonce-post", GUILD_A, GENERAL, text, now)
        .unwrap();
    w.app
        .store()
        .initiative()
        .outbox_settle("nonce-post", GUILD_A, id)
        .unwrap();
    w.app
        .store()
        .messages()
        .insert_message(&StoredMessage {
            author_is_bot: true,
            is_self: true,
            ..StoredMessage::said(id, Some(GUILD_A), GENERAL, UserId(1), "ambient", text, now)
        })
        .unwrap();
    id
}

async fn react(w: &World, message: MessageId, who: &str, emoji: &str) {
    w.app
        .senses
        .perceive(Percept::Reaction {
            place: Place {
                guild: Some(GUILD_A),
                channel: GENERAL,
            },
            message,
            user: Author {
                id: UserId(stable_id("user", who)),
                name: who.into(),
                is_bot: false,
            },
            emoji: emoji.into(),
            added: true,
            at: w.clock.now(),
        })
        .unwrap();
    w.app.spine.drain().await;
}

// ── The behaviour table, on real inputs ─────────────────────────────────

#[tokio::test]
async fn without_headers_the_interval_starts_at_thirty_minutes_and_people_talking_stretch_it() {
    let w = World::start(settings()).await;
    assert_eq!(planned(&w), 30);
    w.model.push(Scripted::text("hi!"));
    w.message(
        GENERAL,
        "ada",
        "<@1> hello there, how is it going?",
        Addressed::Mention,
    )
    .await;
    assert_eq!(planned(&w), 120, "30 × 4 while someone talks with the bot");
    let mut paused = settings();
    paused.garden.pause_on_active = true;
    let w2 = World::start(paused).await;
    w2.model.push(Scripted::text("hi!"));
    w2.message(
        GENERAL,
        "ada",
        "<@1> hello there, how is it going?",
        Addressed::Mention,
    )
    .await;
    let plan = w2.app.garden.plan();
    assert_eq!(plan.wait, None, "paused: {:?}", plan.why);
}

#[tokio::test]
async fn hours_of_quiet_make_cycles_more_frequent() {
    let w = World::start(settings()).await;
    w.hear(GENERAL, "ada", "see you all tomorrow", Source::Text);
    assert_eq!(planned(&w), 30);
    w.clock.advance(Duration::hours(5));
    assert_eq!(planned(&w), 15);
}

#[tokio::test]
async fn a_429_doubles_the_interval_and_a_500_does_not() {
    let mut s = settings();
    s.garden.skip_warmup = true;
    let w = World::start(s).await;
    w.hear(
        GENERAL,
        "ada",
        "we should plan the next meetup soon",
        Source::Text,
    );
    w.model.push(Scripted::status(500, "{\"error\": \"boom\"}"));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.status, CycleStatus::Incomplete);
    assert_eq!(
        planned(&w),
        30,
        "a server error says nothing about rate limits"
    );
    assert_eq!(minutes_until(&w, r.next_wake), 30);

    // Past the server's back-off after the failure (5 minutes).
    w.clock.advance(Duration::minutes(5));
    w.hear(GENERAL, "ada", "and the one after that", Source::Text);
    w.model.push(Scripted::status_with(
        429,
        "{\"error\": \"slow down\"}",
        &[("retry-after", "0")],
    ));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert!(
        w.app
            .store()
            .garden()
            .cycle(r.id)
            .unwrap()
            .unwrap()
            .rate_limited
    );
    assert_eq!(planned(&w), 60, "a real 429 doubles it");
    assert_eq!(minutes_until(&w, r.next_wake), 60);
}

#[tokio::test]
async fn clean_cycles_shorten_the_interval() {
    let w = World::start(settings()).await;
    // A memory pass alone teaches nothing about rate limits.
    w.app.garden.cycle("test").await.unwrap();
    assert_eq!(w.app.garden.scheduler_state().good_cycles, 0);
    for n in 0..3 {
        w.hear(
            GENERAL,
            "ada",
            &format!("message {n} about the meetup"),
            Source::Text,
        );
        w.model.push(end("tended", None));
        let r = w.app.garden.cycle("test").await.unwrap();
        assert_eq!(r.status, CycleStatus::Completed);
        w.clock.advance(Duration::minutes(1));
    }
    assert_eq!(
        planned(&w),
        22,
        "after three clean cycles with model calls: 30 × 0.75"
    );
    assert_eq!(w.app.garden.scheduler_state().good_cycles, 3);
}

#[tokio::test]
async fn rate_limit_headers_set_the_interval_and_a_window_ending_squeezes_cycles_in() {
    let w = World::start(settings()).await;
    w.model.success_headers(&[
        ("x-ratelimit-limit-tokens", "100000"),
        ("x-ratelimit-remaining-tokens", "26000"),
        ("x-ratelimit-reset-tokens", "60m0s"),
    ]);
    // Any ambient call teaches the executive the window; here a garden cycle.
    w.hear(GENERAL, "ada", "the meetup moved to friday", Source::Text);
    w.model.push(end("nothing to do", None));
    let r = w.app.garden.cycle("test").await.unwrap();
    let c = w.app.store().garden().cycle(r.id).unwrap().unwrap();
    assert_eq!(c.tokens_in + c.tokens_out, 120);
    // (26,000 − people's use) × 0.8 = 20,800 → 173 cycles of 120 tokens in 60 min → the minimum.
    assert_eq!(planned(&w), 5);
    let why = w.app.garden.plan().why.join("; ");
    assert!(
        why.contains("fit in the 60 min left of the window"),
        "{why}"
    );

    // The same window, but the last five cycles cost 6,000 tokens each: 3 fit → every 20 minutes.
    five_past_cycles_of_6000_tokens(&w);
    assert_eq!(planned(&w), 20);
    // Ten minutes before the reset, with the same budget left: as often as allowed.
    w.clock.advance(Duration::minutes(50));
    assert_eq!(planned(&w), 5);
}

#[tokio::test]
async fn over_eighty_percent_of_the_budget_means_the_longest_interval() {
    let mut s = settings();
    s.budget.daily_tokens.ambient = 10_000;
    let w = World::start(s).await;
    w.app
        .store()
        .usage()
        .usage_append(&usage("ambient", "ambient", 7_000, "ok", w.clock.now()))
        .unwrap();
    assert_eq!(planned(&w), 30, "70%: normal");
    w.app
        .store()
        .usage()
        .usage_append(&usage("ambient", "ambient", 1_500, "ok", w.clock.now()))
        .unwrap();
    assert_eq!(planned(&w), 120, "85%: the maximum");
}

#[tokio::test]
async fn the_agent_asking_for_ten_minutes_while_headroom_says_thirty_gets_thirty() {
    let w = World::start(settings()).await;
    w.hear(
        GENERAL,
        "ada",
        "we moved the meetup to friday",
        Source::Text,
    );
    w.model.push(end("looked around", Some(10)));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.status, CycleStatus::Completed);
    assert_eq!(minutes_until(&w, r.next_wake), 30);
    let status = w.app.garden.status();
    assert!(
        status.adaptive_moved && status.next_reason.starts_with("asked for"),
        "{status:?}"
    );
    let widget = ambient::commands::garden::widget(
        &w.app.store().garden(),
        Some(GUILD_A),
        true,
        w.clock.now(),
    )
    .join("\n");
    assert!(widget.contains("next: ~30m (adaptive)"), "{widget}");
    assert!(widget.contains("last: 0s ago — looked around"), "{widget}");
    assert!(
        widget.contains("queue: 1 item(s) (next: look again)"),
        "{widget}"
    );
}

// ── The cycle ───────────────────────────────────────────────────────────

#[tokio::test]
async fn a_model_that_stops_twice_gets_the_continuation_then_a_forced_end() {
    let mut s = settings();
    s.garden.default_interval_minutes = 45;
    let w = World::start(s).await;
    w.hear(
        GENERAL,
        "ada",
        "remember that the wiki moved to the new host",
        Source::Text,
    );
    // Quiet for hours: the planned interval (45 × 0.5) is not the default wake.
    w.clock.advance(Duration::hours(4));
    w.model
        .push(Scripted::tool("todos", json!({"items": [{"text": "merge duplicates", "done": true}, {"text": "check the wiki fact"}]})))
        .push(Scripted::text("I think I am done."))
        .push(Scripted::text("Really done."));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.status, CycleStatus::Incomplete);
    let requests = w.model.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[2]
            .body
            .to_string()
            .contains(&CONTINUATION.replace('\n', "\\n")),
        "the seed's continuation, once"
    );
    assert_eq!(planned(&w), 22, "what the scheduler would have planned");
    assert_eq!(
        minutes_until(&w, r.next_wake),
        45,
        "the default wake (garden.defaultIntervalMinutes)"
    );
    let cycle = w.app.store().garden().cycle(r.id).unwrap().unwrap();
    assert_eq!(cycle.todos.len(), 2, "the plan survives");
    assert!(
        cycle.summary.contains("1 planned item(s) left"),
        "{}",
        cycle.summary
    );
    let log = ambient::commands::garden::log(&w.app.stores(), 5, Some(r.id), true);
    assert!(
        log.contains("incomplete")
            && log.contains("[x] merge duplicates")
            && log.contains("[ ] check the wiki fact"),
        "{log}"
    );
    assert!(log.contains("said   I think I am done."), "{log}");

    // The next cycle here is given what this one left.
    w.clock.advance(Duration::minutes(45));
    w.hear(GENERAL, "ada", "did anyone check the wiki?", Source::Text);
    w.model.push(end("checked the wiki fact", None));
    w.app.garden.cycle("test").await.unwrap();
    let asked = w.model.requests().last().unwrap().body.to_string();
    assert!(
        asked.contains(
            "## Left from the last cycle (it stopped before its end)\\n- [ ] check the wiki fact"
        ),
        "{asked}"
    );
    assert!(
        !asked.contains("- [ ] merge duplicates"),
        "done items stay done"
    );
}

#[tokio::test]
async fn the_queue_survives_a_restart_and_a_late_item_still_runs() {
    let w = World::start(settings()).await;
    w.hear(GENERAL, "ada", "hello", Source::Text);
    w.model
        .push(Scripted::tool("schedule_ambient", json!({"wake_in_minutes": 45, "context": "check whether the wiki move happened", "priority": "high"})))
        .push(end("queued a check", None));
    w.app.garden.cycle("test").await.unwrap();
    let (dir, model, clock) = w.stop().await;
    clock.advance(Duration::hours(6)); // down for hours: the item is late
    let again = World::start_in(settings(), dir, model, clock).await;
    again.app.garden.recover();
    let status = again.app.garden.status();
    assert!(
        status.next_reason.contains("catch-up after downtime"),
        "{status:?}"
    );
    again.model.push(end("checked the wiki", None));
    let r = again.app.garden.cycle("catch-up").await.unwrap();
    assert_eq!(r.guild, Some(GUILD_A));
    let asked = again.model.requests().last().unwrap().body.to_string();
    assert!(
        asked.contains("check whether the wiki move happened"),
        "the late item is in the prompt"
    );
    assert!(
        again.app.store().garden().queue_open().unwrap().is_empty(),
        "and done"
    );
}

#[tokio::test]
async fn an_interrupted_pass_resumes_from_its_checkpoint() {
    let w = World::start(settings()).await;
    let now = w.clock.now();
    for (g, c) in [(GUILD_A, GENERAL), (GUILD_B, B_GENERAL)] {
        let a = fact(
            Scope::channel(Some(g), c),
            "movie night is every sunday at eight in the lounge",
            now,
        );
        let b = fact(
            Scope::guild(g),
            "movie night is every sunday at eight in the lounge!",
            now,
        );
        w.app.store().memory().insert_fact(&a).unwrap();
        w.app.store().memory().insert_fact(&b).unwrap();
    }
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let stop_after_one = Arc::new(move || counter.fetch_add(1, Ordering::SeqCst) >= 1);
    let first = w
        .app
        .garden
        .cycle_until("test", stop_after_one)
        .await
        .unwrap();
    assert_eq!(first.status, CycleStatus::Interrupted);
    assert_eq!(
        (first.tended.merged, first.tended.examined),
        (1, 2),
        "guild A only"
    );

    // The process dies in the next cycle's pass: its row is left "running".
    let orphan = w
        .app
        .store()
        .garden()
        .cycle_begin("crashed", w.clock.now())
        .unwrap();
    let (dir, model, clock) = w.stop().await;
    let again = World::start_in(settings(), dir, model, clock).await;
    again.app.garden.recover();
    assert_eq!(
        again
            .app
            .store()
            .garden()
            .cycle(orphan)
            .unwrap()
            .unwrap()
            .status,
        CycleStatus::Interrupted
    );
    let noted = again
        .journal(Kind::Garden)
        .into_iter()
        .find(|e| e.summary == format!("garden cycle {orphan} was interrupted"))
        .unwrap();
    assert_eq!(
        noted.reason,
        "the bot stopped during it; the next cycle resumes the memory pass from its checkpoint"
    );
    assert!(
        again
            .app
            .garden
            .status()
            .next_reason
            .contains("restart after a crash")
    );
    let second = again.app.garden.cycle("resume").await.unwrap();
    assert!(second.resumed);
    assert_eq!(
        (second.tended.merged, second.tended.examined),
        (1, 2),
        "guild B only: A is not redone"
    );
    let cycle = again
        .app
        .store()
        .garden()
        .cycle(second.id)
        .unwrap()
        .unwrap();
    assert!(cycle.steps.iter().any(|s| {
        s.text
            .starts_with(&format!("resumed the pass of cycle {}", first.id))
    }));
}

// ── The memory pass ─────────────────────────────────────────────────────

#[tokio::test]
async fn decayed_facts_are_pruned_by_the_seeds_rule() {
    let w = World::start(settings()).await;
    let now = w.clock.now();
    let old = now - Duration::days(200);
    let mk = |content: &str,
              strength: u32,
              importance: Importance,
              confidence: f64,
              seen: DateTime<Utc>| {
        let mut f = Fact::new(
            Scope::guild(GUILD_A),
            FactKind::Fact,
            importance,
            content,
            seen,
        );
        f.strength = strength;
        f.confidence = confidence;
        w.app.store().memory().insert_fact(&f).unwrap();
        f.id
    };
    let faded = mk(
        "the old bot prefix was a question mark",
        1,
        Importance::Medium,
        1.0,
        old,
    );
    let reinforced = mk(
        "the server mascot is a capybara",
        2,
        Importance::Medium,
        1.0,
        old,
    );
    let important = mk(
        "never post in the rules channel",
        1,
        Importance::High,
        1.0,
        old,
    );
    let doubtful = mk(
        "someone said the wiki might move",
        1,
        Importance::Low,
        0.04,
        now,
    );
    let fresh = mk("the next meetup is in march", 1, Importance::Low, 0.06, now);
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.tended.pruned, 2);
    let archived = |id: &str| {
        w.app
            .store()
            .memory()
            .fact(id)
            .unwrap()
            .unwrap()
            .archived_at
            .is_some()
    };
    assert!(
        archived(&faded),
        "200 days at a 30-day half-life: 0.0098 < 0.05, strength 1"
    );
    assert!(archived(&doubtful), "0.04 < 0.05");
    assert!(!archived(&reinforced), "strength 2 is kept");
    assert!(!archived(&important), "high importance is kept");
    assert!(!archived(&fresh), "0.06 is kept");
    let pruned = w
        .journal(Kind::Garden)
        .into_iter()
        .find(|e| e.summary == "pruned 2 decayed memory(ies)")
        .unwrap();
    assert!(
        pruned
            .reason
            .contains("confidence below 0.05 and strength ≤ 1"),
        "{}",
        pruned.reason
    );
}

#[tokio::test]
async fn duplicates_are_merged_with_their_reinforcements_kept() {
    let w = World::start(settings()).await;
    let now = w.clock.now();
    let mut a = fact(
        Scope::channel(Some(GUILD_A), GENERAL),
        "movie night is every sunday at eight in the lounge",
        now - Duration::days(3),
    );
    a.strength = 2;
    let mut b = fact(
        Scope::channel(Some(GUILD_A), MEMES),
        "Movie night is every Sunday at eight, in the lounge",
        now,
    );
    b.strength = 3;
    let other = fact(
        Scope::guild(GUILD_A),
        "the lounge is the voice channel for events",
        now,
    );
    for f in [&a, &b, &other] {
        w.app.store().memory().insert_fact(f).unwrap();
    }
    for (id, m) in [(&a.id, 11), (&a.id, 12), (&b.id, 13)] {
        w.app
            .store()
            .memory()
            .add_reinforcement(id, Some(MessageId(m)), now)
            .unwrap();
    }
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.tended.merged, 1);
    let survivor = w.app.store().memory().fact(&b.id).unwrap().unwrap();
    let merged = w.app.store().memory().fact(&a.id).unwrap().unwrap();
    assert_eq!(
        merged.superseded_by.as_deref(),
        Some(b.id.as_str()),
        "the stronger one survives"
    );
    assert_eq!(survivor.strength, 5);
    assert_eq!(
        survivor.scope,
        Scope::guild(GUILD_A),
        "learned in two channels: the server's now"
    );
    let crumbs: Vec<Option<MessageId>> = survivor.reinforcements.iter().map(|(m, _)| *m).collect();
    for m in [11, 12, 13] {
        assert!(
            crumbs.contains(&Some(MessageId(m))),
            "breadcrumb {m} kept: {crumbs:?}"
        );
    }
    assert_eq!(crumbs.len(), 4, "three moved, one for the merge");
    assert!(
        w.app
            .store()
            .memory()
            .fact(&other.id)
            .unwrap()
            .unwrap()
            .is_active(),
        "a related fact is not a duplicate"
    );
    let entry = w
        .journal(Kind::Garden)
        .into_iter()
        .find(|e| e.summary.starts_with("merged 1 duplicate(s)"))
        .unwrap();
    assert!(entry.reason.contains("strength now 5"), "{}", entry.reason);
}

#[tokio::test]
async fn thumbs_down_on_an_ambient_post_reaches_the_next_scout_and_steers_it() {
    let mut s = settings();
    s.garden.skip_warmup = true;
    let w = World::start(s).await;
    let post = ambient_post(&w, "Hot take: tabs are better than spaces, fight me");
    react(&w, post, "ada", "👎").await;
    react(&w, post, "bob", "👎").await;
    w.hear(
        GENERAL,
        "ada",
        "anyway, who is coming on friday?",
        Source::Text,
    );
    w.model
        .push(Scripted::tool(
            "propose_thought",
            json!({"text": "Tabs versus spaces: which side are you on?", "why": "a fun debate"}),
        ))
        .push(end("tried a debate, held back", None));
    w.app.garden.cycle("test").await.unwrap();
    let requests = w.model.requests();
    let first = requests[0].body.to_string();
    assert!(first.contains("People disliked my ambient post in #general (👎): \\\"Hot take: tabs are better than spaces, fight me\\\" (×2)"), "{first}");
    let second = requests[1].body.to_string();
    assert!(
        second.contains("not this one: people rejected 2 similar post(s) before"),
        "{second}"
    );
    assert!(
        w.app
            .store()
            .initiative()
            .pending_thought(GUILD_A)
            .unwrap()
            .is_none(),
        "nothing was prepared"
    );
}

// ── Isolation, the stream, one process per data directory ──────────────

#[tokio::test]
async fn the_context_summary_holds_guild_as_events_and_none_of_guild_bs() {
    let mut s: Settings = settings();
    s.executive.context_stream.roles = vec!["ambient".into()];
    let w = World::start(s).await;
    w.model.push(Scripted::text("Friday works."));
    w.message(
        GENERAL,
        "ada",
        "<@1> is the meetup on friday?",
        Addressed::Mention,
    )
    .await;
    w.app.garden.request(GUILD_A, "test");
    w.message(
        B_GENERAL,
        "bob",
        "our secret launch date is the 14th",
        Addressed::No,
    )
    .await;
    let summary = ambient::journal::stream::prefix_for(
        &w.app.store().journal(),
        &w.app.settings.global(),
        ambient::settings::Role::Ambient,
        &ambient::journal::summary::Audience::public(&w.app.settings.global(), GUILD_A),
        w.clock.now(),
    )
    .unwrap();
    assert!(
        summary.starts_with("[AMBIENT CONTEXT — last 5 min]"),
        "{summary}"
    );
    assert!(
        summary.contains("ada: <@1> is the meetup on friday?"),
        "{summary}"
    );
    assert!(summary.contains("decision: answered ada"), "{summary}");
    assert!(
        !summary.contains("secret launch"),
        "guild B stays out: {summary}"
    );
    let b = ambient::journal::stream::prefix_for(
        &w.app.store().journal(),
        &w.app.settings.global(),
        ambient::settings::Role::Ambient,
        &ambient::journal::summary::Audience::public(&w.app.settings.global(), GUILD_B),
        w.clock.now(),
    )
    .unwrap();
    assert!(
        b.contains("bob: our secret launch date is the 14th") && !b.contains("meetup"),
        "B's own stream has it: {b}"
    );
    w.model.push(end("nothing to tend", None));
    w.app.garden.cycle("test").await.unwrap();
    let asked = w.model.requests().last().unwrap().body.to_string();
    assert!(
        asked.contains("[AMBIENT CONTEXT — last 5 min]")
            && asked.contains("is the meetup on friday"),
        "{asked}"
    );
    assert!(!asked.contains("secret launch"));
    // Older than a day: the journal's lines are cleaned up by the hourly
    // upkeep, and a prompt is given nothing older (people's messages are
    // read from their rows).
    w.clock.advance(Duration::hours(25));
    let settings = w.app.settings.global();
    w.app.upkeep.pass(&|| true).unwrap();
    let left: Vec<String> = w
        .app
        .store()
        .journal()
        .stream_read(GUILD_A, w.clock.now() - Duration::days(3), &[], 100)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert!(left.iter().all(|k| k == "user_message"), "{left:?}");
    // Two hours after the talk, a day's window shows it, unless only an hour is kept.
    let then = w.clock.now() - Duration::hours(23);
    let mut s = (*settings).clone();
    s.executive.context_stream.window_minutes = 1440;
    let a = ambient::journal::summary::Audience::public(&s, GUILD_A);
    let day = |s: &ambient::settings::Settings| {
        ambient::journal::stream::summary(&w.app.store().journal(), s, &a, then, chrono_tz::UTC)
    };
    assert!(day(&s).is_some_and(|d| d.contains("is the meetup on friday")));
    s.executive.context_stream.retention_hours = 1;
    assert_eq!(day(&s), None, "the window stops at the hour kept");
}

#[test]
fn a_second_bot_on_the_same_data_directory_is_refused() {
    let home = Home::new(json!({}));
    let mut first = home.spawn_console();
    first.send("hello");
    first.next_event("stored");
    let second = home.run(&["console"]);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(
        err.contains("another ambient process (pid ")
            && err.contains("is already running on the data directory"),
        "{err}"
    );
}

#[test]
fn garden_log_and_context_are_readable_from_the_command_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = rt.block_on(async {
        let w = World::start(settings()).await;
        w.message(GENERAL, "ada", "the wiki moved", Addressed::No)
            .await;
        w.model
            .push(Scripted::tool(
                "todos",
                json!({"items": [{"text": "look at the wiki fact", "done": true}]}),
            ))
            .push(end("looked at the wiki fact", None));
        w.app.garden.cycle("test").await.unwrap();
        let (dir, _, _) = w.stop().await;
        dir
    });
    let data = PathBuf::from(dir.path()).join("data");
    let home = Home::new(json!({"storage": {"dataDir": data.to_string_lossy()}}));
    let log = home.run(&["garden", "log"]);
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(
        text.contains("completed — Guild A (1001) — trigger: test"),
        "{text}"
    );
    assert!(
        text.contains("summary: looked at the wiki fact")
            && text.contains("[x] look at the wiki fact"),
        "{text}"
    );
    let ctx = home.run(&[
        "context",
        "--guild",
        "Guild A",
        "--since",
        "2000-01-01",
        "--types",
        "user_message",
    ]);
    let text = String::from_utf8_lossy(&ctx.stdout);
    assert!(
        ctx.status.success(),
        "{}",
        String::from_utf8_lossy(&ctx.stderr)
    );
    assert!(text.contains("ada: the wiki moved"), "{text}");
    let bad = home.run(&["context", "--guild", "Guild A", "--types", "gossip"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown context type \"gossip\""));
}

#[test]
fn the_running_bot_wakes_its_garden_on_request() {
    let home = Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}));
    let mut console = home.spawn_console();
    console.send("hello everyone");
    console.next_event("stored");
    console.send("/garden");
    let answer = console.next_event("notice");
    assert_eq!(
        answer["text"],
        "The garden will tend this server's memory next."
    );
    // The loop wakes, attention hands the impulse to the garden, a cycle runs
    // (the memory pass only: there is no model here).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        console.send("/status");
        // The widget's garden lines, up to the budget's line that follows them.
        let mut garden = Vec::new();
        loop {
            let n = console.next_event("notice");
            let text = n["text"].as_str().unwrap_or_default().to_string();
            if text.starts_with("budget ") {
                break;
            }
            if text.starts_with("garden ") {
                garden.push(text);
            }
        }
        if garden
            .iter()
            .any(|l| l.starts_with("garden last: ") && l.contains("memory pass only"))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no cycle ran: {garden:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    console.send("/quit");
    let _ = console.child.wait();
    let log = home.run(&["garden", "log"]);
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(text.contains("trigger: requested by"), "{text}");
}

#[tokio::test]
async fn a_conversation_ending_wakes_the_garden_early_but_never_past_the_budget() {
    let w = World::start(settings()).await;
    let minutes = i64::from(
        w.app
            .settings
            .global()
            .attention
            .active_conversation_minutes,
    );
    w.hear(GENERAL, "ada", "the meetup moved", Source::Text);
    w.model.push(end("tended", Some(60)));
    w.app.garden.cycle("test").await.unwrap();
    assert_eq!(
        minutes_until(&w, w.app.garden.status().next_wake.unwrap()),
        60,
        "{:?}",
        w.app.garden.status()
    );
    w.model.push(Scripted::text("hello!"));
    w.message(GENERAL, "ada", "<@1> morning!", Addressed::Mention)
        .await;
    w.app.garden.notice_conversations_ending();
    assert_eq!(
        minutes_until(&w, w.app.garden.status().next_wake.unwrap()),
        60,
        "still talking"
    );
    w.clock.advance(Duration::minutes(minutes + 1));
    w.app.garden.notice_conversations_ending();
    let status = w.app.garden.status();
    assert_eq!(status.next_reason, "a conversation just ended");
    assert_eq!(
        minutes_until(&w, status.next_wake.unwrap()),
        0,
        "the budget is healthy: now"
    );

    // After a real 429 the back-off holds, whatever happens.
    w.hear(GENERAL, "ada", "and the venue?", Source::Text);
    w.model
        .push(Scripted::status_with(429, "{}", &[("retry-after", "0")]));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(minutes_until(&w, r.next_wake), 60);
    w.model.push(Scripted::text("hi again"));
    w.message(GENERAL, "ada", "<@1> still there?", Addressed::Mention)
        .await;
    w.app.garden.notice_conversations_ending();
    w.clock.advance(Duration::minutes(minutes + 1));
    w.app.garden.notice_conversations_ending();
    let status = w.app.garden.status();
    assert_eq!(
        minutes_until(&w, status.next_wake.unwrap()),
        60 - minutes - 1,
        "{status:?}"
    );
    // And a request waits the same way.
    let answer = w.app.garden.request(GUILD_A, "olga");
    assert!(
        answer.contains("it keeps to the budget, which holds it until then"),
        "{answer}"
    );
    assert!(
        w.app.garden.status().next_reason.contains("held until"),
        "{:?}",
        w.app.garden.status()
    );
    assert_eq!(
        w.app.garden.request(GUILD_A, "olga"),
        answer.replace(
            "The garden will tend this server's memory at",
            "A garden cycle for this server is already on its way: at"
        ),
        "asked again, it says when, as the first answer did"
    );
}

#[tokio::test]
async fn another_servers_cycle_never_reaches_this_servers_prompt_or_status() {
    let w = World::start(settings()).await;
    w.hear(B_GENERAL, "bob", "our launch is on the 14th", Source::Text);
    w.model.push(end("B's secret launch plan is filed", None));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.guild, Some(GUILD_B));
    w.hear(GENERAL, "ada", "hello", Source::Text);
    w.model.push(end("tended A", None));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.guild, Some(GUILD_A));
    let asked = w.model.requests().last().unwrap().body.to_string();
    assert!(!asked.contains("secret launch"), "{asked}");
    assert!(
        asked.contains("Last garden cycle: never"),
        "A's own history only"
    );
    let a = ambient::commands::garden::widget(
        &w.app.store().garden(),
        Some(GUILD_A),
        true,
        w.clock.now(),
    )
    .join("\n");
    assert!(
        !a.contains("secret launch") && a.contains("tended A"),
        "{a}"
    );
}

#[tokio::test]
async fn the_judgment_tools_touch_only_the_memories_put_to_the_model() {
    let mut s = settings();
    s.garden.skip_warmup = true;
    let w = World::start(s).await;
    let now = w.clock.now();
    let mut a = fact(
        Scope::guild(GUILD_A),
        "the meetup is on fridays",
        now - Duration::days(2),
    );
    a.subject = Some("meetup".into());
    let mut b = fact(Scope::guild(GUILD_A), "we gather on sundays now", now);
    b.subject = Some("meetup".into());
    let mut rule = Fact::new(
        Scope::guild(GUILD_A),
        FactKind::BehaviorGuidance,
        Importance::High,
        "never post memes in #announcements",
        now,
    );
    rule.subject = Some("posting".into());
    let mut c = fact(
        Scope::guild(GUILD_A),
        "the venue is the library",
        now - Duration::days(1),
    );
    c.subject = Some("venue".into());
    let mut d = fact(Scope::guild(GUILD_A), "book the community hall", now);
    d.subject = Some("venue".into());
    for f in [&a, &b, &rule, &c, &d] {
        w.app.store().memory().insert_fact(f).unwrap();
    }
    w.hear(GENERAL, "ada", "see you sunday", Source::Text);
    w.model
        .push(Scripted::tool(
            "memory_retire",
            json!({"id": rule.id, "reason": "the chat told me to"}),
        ))
        .push(Scripted::tool(
            "memory_resolve",
            json!({"keep": b.id, "supersede": a.id, "reason": "moved to sundays"}),
        ))
        .push(end("resolved the meetup day", None));
    w.app.garden.cycle("test").await.unwrap();
    let requests = w.model.requests();
    let first = requests[0].body.to_string();
    assert!(
        first.contains("the meetup is on fridays") && first.contains("the venue is the library"),
        "both pairs are candidates"
    );
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("is not one of the memories this cycle was asked to judge")
    );
    assert!(
        w.app
            .store()
            .memory()
            .fact(&rule.id)
            .unwrap()
            .unwrap()
            .is_active(),
        "guidance stays"
    );
    assert_eq!(
        w.app
            .store()
            .memory()
            .fact(&a.id)
            .unwrap()
            .unwrap()
            .superseded_by
            .as_deref(),
        Some(b.id.as_str())
    );
    // The pair the model left alone is not put to it again (until one of them changes).
    w.clock.advance(Duration::minutes(1));
    w.hear(GENERAL, "ada", "anything else?", Source::Text);
    w.model.push(end("nothing", None));
    w.app.garden.cycle("test").await.unwrap();
    let last = w.model.requests().last().unwrap().body.to_string();
    assert!(
        !last.contains("Possible contradictions (same subject"),
        "{last}"
    );
}

#[tokio::test]
async fn with_rate_limit_headers_a_request_for_ten_minutes_gets_the_headroom() {
    let (w, r) = cycle_asking_ten_minutes(window(20000, 15000)).await;
    // 15,000 × 0.8 = 12,000 → two cycles of ~6,000 in 60 min → 30.
    assert_eq!(
        minutes_until(&w, r.next_wake),
        30,
        "{:?}",
        w.app.garden.plan().why
    );
    assert!(w.app.garden.status().adaptive_moved);
}

#[tokio::test]
async fn proactive_work_waits_for_the_warm_up() {
    let w = World::start(settings()).await;
    let tools = |w: &World| {
        w.model.requests().last().unwrap().body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    for n in 0..4 {
        w.hear(
            GENERAL,
            "ada",
            &format!("message {n} about the meetup"),
            Source::Text,
        );
        w.model.push(end("tended", None));
        w.app.garden.cycle("test").await.unwrap();
        let names = tools(&w);
        assert!(
            names.contains(&"todos".to_string())
                && names.contains(&"end_ambient_cycle".to_string()),
            "{names:?}"
        );
        assert_eq!(
            names.contains(&"propose_thought".to_string()),
            n >= 3,
            "cycle {n}: garden-only for the first three: {names:?}"
        );
        w.clock.advance(Duration::minutes(1));
    }
}

// ── After review: the scheduler's rules together, the run loop, requests during a cycle ──

#[tokio::test]
async fn an_expired_rate_limit_window_no_longer_holds_the_garden() {
    let w = World::start(settings()).await;
    w.model.success_headers(&[
        ("x-ratelimit-limit-tokens", "100000"),
        ("x-ratelimit-remaining-tokens", "10000"),
        ("x-ratelimit-reset-tokens", "60m0s"),
    ]);
    w.hear(GENERAL, "ada", "the meetup moved to friday", Source::Text);
    w.model.push(end("tended", Some(30)));
    w.app.garden.cycle("test").await.unwrap();
    let why = w.app.garden.plan().why.join("; ");
    assert_eq!(planned(&w), 120, "90 % of the window used: {why}");
    // The window resets; no call has told the bot anything since.
    w.clock.advance(Duration::minutes(61));
    let plan = w.app.garden.plan();
    assert_eq!(planned(&w), 30, "{:?}", plan.why);
    assert!(
        plan.why[0].starts_with("no rate-limit headers"),
        "{:?}",
        plan.why
    );
    assert_eq!(
        w.app.garden.request(GUILD_A, "olga"),
        "The garden will tend this server's memory next.",
        "the old window no longer holds an early wake"
    );
}

#[tokio::test]
async fn with_rate_limit_headers_a_429_doubles_the_interval_in_use() {
    let (w, r) = cycle_asking_ten_minutes(window(100000, 26000)).await;
    // 26,000 × 0.8 = 20,800 → three cycles of ~6,000 in 60 min → every 20 min.
    assert_eq!(minutes_until(&w, r.next_wake), 20);
    w.clock.advance(Duration::minutes(20));
    w.hear(GENERAL, "ada", "still there?", Source::Text);
    w.model
        .push(Scripted::status_with(429, "{}", &[("retry-after", "0")]));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert!(
        w.app
            .store()
            .garden()
            .cycle(r.id)
            .unwrap()
            .unwrap()
            .rate_limited
    );
    assert_eq!(
        minutes_until(&w, r.next_wake),
        40,
        "the 20 min in use doubled (not the 30 min no-header interval): {:?}",
        w.app.garden.plan().why
    );
}

#[tokio::test]
async fn a_wake_due_while_people_talk_waits_for_the_stretched_interval_but_a_request_does_not() {
    let w = World::start(settings()).await;
    let start = w.clock.now();
    // A memory pass only (nobody talked) that merges two facts, so it is
    // not at rest: the next wake in 30 minutes.
    for text in ["the mascot is a capybara", "the mascot is a capybara!"] {
        w.app
            .store()
            .memory()
            .insert_fact(&fact(Scope::guild(GUILD_A), text, start))
            .unwrap();
    }
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(minutes_until(&w, r.next_wake), 30);
    w.clock.advance(Duration::minutes(30));
    w.model.push(Scripted::text("hi!"));
    w.message(GENERAL, "ada", "<@1> are you around?", Addressed::Mention)
        .await;
    let (stop, task) = run_loop(&w);
    eventually("the due wake moves", || {
        w.app.garden.status().next_wake != Some(start + Duration::minutes(30))
    })
    .await;
    let status = w.app.garden.status();
    assert_eq!(
        status.next_wake,
        Some(start + Duration::minutes(120)),
        "30 × 4 after the last cycle: {status:?}"
    );
    assert!(
        status
            .next_reason
            .contains("held while people talk with the bot"),
        "{status:?}"
    );
    assert_eq!(
        w.app.store().garden().cycles(10).unwrap().len(),
        1,
        "no cycle ran"
    );

    // Someone asks: that is not held back by the talk.
    w.model.push(end("tended as asked", None));
    assert_eq!(
        w.app.garden.request(GUILD_A, "olga"),
        "The garden will tend this server's memory next."
    );
    // Its row is there from its start; its server is written when its model part begins.
    eventually("the requested cycle ran", || {
        let cycles = w.app.store().garden().cycles(10).unwrap();
        cycles.len() == 2 && cycles[0].status != CycleStatus::Running
    })
    .await;
    let asked = w.app.store().garden().cycles(1).unwrap().remove(0);
    assert_eq!(asked.guild, Some(GUILD_A), "{asked:?}");
    assert!(
        asked.trigger.contains("requested by olga"),
        "{}",
        asked.trigger
    );
    stop.send(true).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn a_request_made_while_a_cycle_runs_is_not_lost_behind_its_wake() {
    let w = World::start(settings()).await;
    w.hear(GENERAL, "ada", "the meetup moved", Source::Text);
    w.app.garden.request(GUILD_A, "ada");
    let (release, task) = long_cycle(&w).await;
    w.clock.advance(Duration::minutes(1));
    let answer = w.app.garden.request(GUILD_B, "bob");
    w.model.push(end("tended A", Some(60)));
    release.open();
    let r = task.await.unwrap().unwrap();
    assert_eq!(r.guild, Some(GUILD_A), "A asked first");
    assert_eq!(
        minutes_until(&w, r.next_wake),
        5,
        "bob's request: the shortest interval, not the 60 min A's cycle asked for"
    );
    let status = w.app.garden.status();
    assert!(
        status.next_reason.contains("bob asked for a garden cycle"),
        "{status:?}"
    );
    assert!(answer.contains("tending memory right now"), "{answer}");
    w.clock.advance(Duration::minutes(5));
    w.model.push(end("tended B", None));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.guild, Some(GUILD_B));
}

#[tokio::test]
async fn a_conversation_ending_while_a_cycle_runs_still_wakes_the_garden_early() {
    let w = World::start(settings()).await;
    let minutes = i64::from(
        w.app
            .settings
            .global()
            .attention
            .active_conversation_minutes,
    );
    w.model.push(Scripted::text("hi!"));
    w.message(GENERAL, "ada", "<@1> morning!", Addressed::Mention)
        .await;
    w.app.garden.notice_conversations_ending();
    let (release, task) = long_cycle(&w).await;
    w.clock.advance(Duration::minutes(minutes + 1));
    w.app.garden.notice_conversations_ending();
    w.model.push(end("tended", Some(60)));
    release.open();
    let r = task.await.unwrap().unwrap();
    assert_eq!(minutes_until(&w, r.next_wake), 5);
    let status = w.app.garden.status();
    assert!(
        status.next_reason.starts_with("a conversation just ended"),
        "{status:?}"
    );
    assert_eq!(
        w.app
            .store()
            .garden()
            .cycle(r.id)
            .unwrap()
            .unwrap()
            .next_wake_at,
        Some(r.next_wake),
        "the log says the same"
    );
}

#[tokio::test]
async fn a_long_cycle_is_waited_for_not_queued_again_and_again() {
    let w = World::start(settings()).await;
    // A copy for the pass to merge: a pass with nothing to do leaves no row to count.
    w.app
        .store()
        .memory()
        .insert_fact(&fact(
            Scope::guild(GUILD_A),
            "the server mascot is a capybara!",
            w.clock.now(),
        ))
        .unwrap();
    let (release, task) = long_cycle(&w).await;
    // Its wake is due while it still runs.
    let mut status = w.app.garden.status();
    status.next_wake = Some(w.clock.now());
    status.next_reason = "scheduled".into();
    w.app
        .store()
        .garden()
        .garden_set("status", &status)
        .unwrap();
    let (stop, looping) = run_loop(&w);
    let routed = |w: &World| {
        w.journal(Kind::Route)
            .iter()
            .filter(|e| e.summary.ends_with("→ garden"))
            .count()
    };
    eventually("the loop queued the due cycle", || routed(&w) >= 1).await;
    tokio::time::sleep(StdDuration::from_millis(1_500)).await;
    assert_eq!(routed(&w), 1, "declined once, then waited for");
    release.open();
    let r = task.await.unwrap().unwrap();
    tokio::time::sleep(StdDuration::from_millis(500)).await;
    assert_eq!(
        w.app.store().garden().cycles(10).unwrap().len(),
        1,
        "no second cycle"
    );
    assert_eq!(w.app.garden.status().next_wake, Some(r.next_wake));
    assert_eq!(routed(&w), 1);
    stop.send(true).unwrap();
    looping.await.unwrap();
}

#[tokio::test]
async fn a_deleted_or_edited_message_leaves_the_context_stream_too() {
    let w = World::start(settings()).await;
    let gone = w
        .message(GENERAL, "ada", "my phone number is 555-0100", Addressed::No)
        .await;
    let changed = w
        .message(GENERAL, "bob", "the meetup is at 8", Addressed::No)
        .await;
    let kept = w
        .message(GENERAL, "cy", "see you there", Addressed::No)
        .await;
    let place = Place {
        guild: Some(GUILD_A),
        channel: GENERAL,
    };
    let at = w.clock.now();
    w.app
        .senses
        .perceive(Percept::Delete {
            id: gone,
            place,
            at,
        })
        .unwrap();
    w.app
        .senses
        .perceive(Percept::Edit {
            id: changed,
            place,
            content: "the meetup is at 9".into(),
            at,
        })
        .unwrap();
    let _ = kept;
    let stream: Vec<String> = w
        .app
        .store()
        .journal()
        .stream_read(
            GUILD_A,
            at - Duration::hours(1),
            &["user_message".into()],
            100,
        )
        .unwrap()
        .into_iter()
        .map(|e| e.content)
        .collect();
    assert_eq!(
        stream,
        vec!["bob: the meetup is at 9", "cy: see you there"],
        "deleted: gone; edited: the new text"
    );
}

#[tokio::test]
async fn a_private_channels_talk_and_memories_stay_out_of_the_garden_prompt_and_the_stream() {
    let mut s = settings();
    s.executive.context_stream.roles = vec!["ambient".into()];
    let w = World::start(s).await;
    let now = w.clock.now();
    w.app
        .store()
        .messages()
        .upsert_channel(MODS, Some(GUILD_A), "mods", now)
        .unwrap();
    // A stale memory recent talk touches, so the prompt shows that talk.
    w.app
        .store()
        .memory()
        .insert_fact(&fact(
            Scope::guild(GUILD_A),
            "the meetup venue is the old library",
            now - Duration::days(60),
        ))
        .unwrap();
    // Two copies of something remembered in the private channel: the pass merges them.
    for text in [
        "the mods' secret word is pineapple",
        "The mods' secret word is pineapple!",
    ] {
        w.app
            .store()
            .memory()
            .insert_fact(&fact(Scope::channel(Some(GUILD_A), MODS), text, now))
            .unwrap();
    }
    w.hear(
        GENERAL,
        "ada",
        "the meetup venue moved to the new library",
        Source::Text,
    );
    w.hear(
        MODS,
        "olga",
        "the ban list password is swordfish",
        Source::Text,
    );
    w.model.push(end("tended", None));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.tended.merged, 1);
    assert!(
        w.journal(Kind::Garden)
            .iter()
            .any(|e| e.reason.contains("pineapple")),
        "the merge is journaled (for the operator)"
    );
    let asked = w.model.requests()[0].body.to_string();
    assert!(
        asked.contains("ada: the meetup venue moved to the new library")
            && asked.contains("#general"),
        "the open channel's talk is there: {asked}"
    );
    assert!(!asked.contains("swordfish"), "{asked}");
    assert!(!asked.contains("#mods"), "{asked}");
    assert!(!asked.contains("pineapple"), "{asked}");
    assert!(
        w.app
            .store()
            .journal()
            .stream_read(GUILD_A, now - Duration::hours(1), &[], 100)
            .unwrap()
            .iter()
            .all(|e| !e.content.contains("pineapple")),
        "the merge note never reached the stream"
    );
}

#[tokio::test]
async fn a_memory_pass_over_every_server_shows_no_figures_in_a_servers_status() {
    let w = World::start(settings()).await;
    let now = w.clock.now();
    for text in [
        "movie night is every sunday at eight in the lounge",
        "movie night is every sunday at eight in the lounge!",
    ] {
        w.app
            .store()
            .memory()
            .insert_fact(&fact(Scope::guild(GUILD_B), text, now))
            .unwrap();
    }
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!((r.guild, r.tended.merged), (None, 1));
    let a = ambient::commands::garden::widget(&w.app.store().garden(), Some(GUILD_A), true, now)
        .join("\n");
    assert!(
        a.contains("last: 0s ago — a memory pass only, across all servers"),
        "{a}"
    );
    assert!(!a.contains("merged") && !a.contains("examined"), "{a}");
    let operator =
        ambient::commands::garden::widget(&w.app.store().garden(), None, true, now).join("\n");
    assert!(operator.contains("merged 1"), "{operator}");
}

#[tokio::test]
async fn contradiction_candidates_compare_only_the_freshest_facts_on_a_subject() {
    let w = World::start(settings()).await;
    let start = w.clock.now();
    // 100 different facts about one subject, each a minute newer than the last.
    for i in 0..100 {
        let mut f = fact(
            Scope::guild(GUILD_A),
            &format!("the venue number {i} hosts meetup variant {i}"),
            start + Duration::minutes(i),
        );
        f.subject = Some("the venue".into());
        w.app.store().memory().insert_fact(&f).unwrap();
    }
    let g = ambient::settings::GardenSettings {
        max_candidates: u32::MAX,
        ..Default::default()
    };
    let found = ambient::garden::pass::candidates(
        &w.app.store().memory(),
        &g,
        GUILD_A,
        "",
        start + Duration::hours(2),
        &Default::default(),
    );
    // Pairs among the 64 freshest only (64 × 63 / 2), not 100 × 99 / 2: the work stays bounded.
    assert_eq!(found.contradictions.len(), 2016);
    assert!(
        found
            .contradictions
            .iter()
            .all(|(a, b)| a.updated_at >= start + Duration::minutes(36)
                && b.updated_at >= start + Duration::minutes(36))
    );
}

#[tokio::test]
async fn a_failing_model_part_backs_off_for_its_server_and_recovers() {
    let mut s = settings();
    s.garden.skip_warmup = true;
    // The provider's own cooldown would hide the back-off: only the back-off is measured here.
    s.executive.failure_threshold = 1000;
    let w = World::start(s).await;
    w.hear(
        GENERAL,
        "ada",
        "we should plan the next meetup soon",
        Source::Text,
    );
    w.model
        .fallback(Scripted::status(500, "{\"error\": \"boom\"}"));
    // A cycle every minute (early wakes, requests) for forty simulated minutes.
    for _ in 0..40 {
        w.app.garden.cycle("test").await.unwrap();
        w.clock.advance(Duration::minutes(1));
    }
    assert_eq!(
        w.model.requests().len(),
        4,
        "tried at minutes 0, 5, 15 and 35 (garden.minIntervalMinutes doubling)"
    );
    let backing_off: Vec<String> = w
        .journal(Kind::Garden)
        .into_iter()
        .map(|e| e.reason)
        .filter(|r| r.contains("backs off"))
        .collect();
    assert_eq!(
        backing_off.len(),
        4,
        "one line per back-off: {backing_off:?}"
    );
    for (line, wait) in
        backing_off
            .iter()
            .zip(["5 minutes", "10 minutes", "20 minutes", "40 minutes"])
    {
        assert!(line.contains(&format!("trying again in {wait}")), "{line}");
    }

    // The model recovers: the server is tended at minute 75, and the back-off is over.
    w.model.fallback(end("tended the meetup plans", None));
    w.clock.advance(Duration::minutes(35));
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!((r.status, r.guild), (CycleStatus::Completed, Some(GUILD_A)));
    assert_eq!(w.model.requests().len(), 5);
    w.clock.advance(Duration::minutes(1));
    w.hear(GENERAL, "ada", "and the picnic after it", Source::Text);
    w.model
        .fallback(Scripted::status(500, "{\"error\": \"boom\"}"));
    w.app.garden.cycle("test").await.unwrap();
    let last = w.journal(Kind::Garden).pop().unwrap().reason;
    assert!(
        last.contains("trying again in 5 minutes (failure 1 in a row)"),
        "{last}"
    );
}

#[tokio::test]
async fn the_garden_merges_only_near_duplicates_not_facts_that_share_words() {
    let w = World::start(settings()).await;
    let now = w.clock.now();
    let facts: Vec<Fact> = [
        "Bob lives in Berlin",
        "Bob works in Berlin",
        "Alice likes cats",
        "Alice likes dogs",
    ]
    .into_iter()
    .map(|t| fact(Scope::guild(GUILD_A), t, now))
    .collect();
    for f in &facts {
        w.app.store().memory().insert_fact(f).unwrap();
    }
    let r = w.app.garden.cycle("test").await.unwrap();
    assert_eq!(r.tended.merged, 0);
    for f in &facts {
        assert!(
            w.app
                .store()
                .memory()
                .fact(&f.id)
                .unwrap()
                .unwrap()
                .is_active(),
            "{} is kept",
            f.content
        );
    }
}
