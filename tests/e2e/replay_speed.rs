//! The replay's speed: across a silent stretch — every server stopped at a
//! gate that holds until someone posts, no task due, no held thought,
//! nothing for the garden — the simulation skips the ticks instead of
//! running each, and counts them as they would have come out. These tests
//! replay the same export both ways and compare everything an owner reads:
//! the report (as JSON, every tally and gate count in it) and the HTML page
//! with its timeline. The figures (how much faster) are in the README's
//! replay section; no test here times anything.

use crate::support::replaying;
use std::path::{Path, PathBuf};

use ambient::replay::html::page;
use ambient::replay::run::{Options, Outcome, replay, replay_every_tick};
use ambient::settings::Settings;
use chrono::{DateTime, Duration, Utc};

fn sample() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/replay");
    vec![
        root.join("sample-general.json"),
        root.join("sample-links.json"),
    ]
}

fn options(files: &[PathBuf], settings: &Settings, dir: &Path) -> Options {
    replaying::offline(files.to_vec(), settings.clone(), dir)
}

/// The export replayed skipping silent stretches, then running every tick.
async fn both_ways(files: &[PathBuf], settings: &Settings) -> (Outcome, Outcome) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let skipping = replay(options(files, settings, a.path()), &|_| {})
        .await
        .unwrap();
    let every_tick = replay_every_tick(options(files, settings, b.path()), &|_| {})
        .await
        .unwrap();
    assert_eq!(every_tick.skipped_ticks, 0);
    (skipping, every_tick)
}

/// The same report and the same page, byte for byte.
fn assert_same(skipping: &Outcome, every_tick: &Outcome) {
    let json = |o: &Outcome| serde_json::to_string_pretty(&o.report).unwrap();
    let (a, b) = (json(skipping), json(every_tick));
    if a != b {
        let diff: Vec<String> = a
            .lines()
            .zip(b.lines())
            .filter(|(x, y)| x != y)
            .map(|(x, y)| format!("skipping: {x}\nevery tick: {y}"))
            .take(10)
            .collect();
        panic!("the reports differ:\n{}", diff.join("\n"));
    }
    assert!(
        page(&skipping.report, &skipping.timeline)
            == page(&every_tick.report, &every_tick.timeline),
        "the pages (and their timelines) differ"
    );
}

#[tokio::test]
async fn skipping_silent_stretches_changes_nothing_in_the_sample_report() {
    let (skipping, every_tick) = both_ways(&sample(), &Settings::default()).await;
    assert_same(&skipping, &every_tick);
    assert!(
        skipping.report.did.ambient_posts > 0,
        "the sample's bot acts"
    );
}

#[tokio::test]
async fn the_sample_with_an_hour_for_an_empty_room_skips_its_nights_and_reports_the_same() {
    // The sample's quiet nights are shorter than the default 24 h of an empty
    // room; at one hour every night is a silent stretch.
    let mut s = Settings::default();
    s.initiative.text.require_activity_within_hours = 1;
    let (skipping, every_tick) = both_ways(&sample(), &s).await;
    assert_same(&skipping, &every_tick);
    assert!(
        skipping.skipped_ticks > 1_000,
        "its nights were skipped: {} ticks",
        skipping.skipped_ticks
    );
    let empty_room = skipping.report.gates.get("empty_room").copied();
    assert!(
        empty_room.is_some_and(|n| n > 1_000),
        "and counted as the empty room's, as when run: {:?}",
        skipping.report.gates
    );
}

/// A community that meets: an evening's talk on each of `days`, with people
/// asking the bot for reminders and saying hello, and silence between.
fn meetings(dir: &Path, days: &[i64]) -> PathBuf {
    meetings_from(dir, "2026-03-03T18:00:00Z".parse().unwrap(), days)
}

/// [`meetings`] from `start` on.
fn meetings_from(dir: &Path, start: DateTime<Utc>, days: &[i64]) -> PathBuf {
    let mut lines = Vec::new();
    for &day in days {
        for n in 0..40i64 {
            let at = start + Duration::days(day) + Duration::minutes(n * 3);
            let (author, content) = match n % 10 {
                3 => (
                    "ada",
                    "@ambient remind me in 10 minutes to send the minutes".to_string(),
                ),
                7 => (
                    "bo",
                    "@ambient hello, what did we decide last time?".to_string(),
                ),
                _ => (
                    ["ada", "bo", "cy", "dee"][(n % 4) as usize],
                    format!("item {n}: the harbour clean-up needs four more people on saturday"),
                ),
            };
            lines.push(
                serde_json::json!({
                    "ts": at.to_rfc3339(),
                    "channel": "general",
                    "author": author,
                    "content": content,
                })
                .to_string(),
            );
        }
    }
    let path = dir.join("meetings.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[tokio::test]
async fn a_community_that_meets_twice_a_week_is_replayed_skipping_its_silent_days_with_the_same_report()
 {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![meetings(dir.path(), &[0, 2, 6])];
    let (skipping, every_tick) = both_ways(&files, &Settings::default()).await;
    assert_same(&skipping, &every_tick);
    let r = &skipping.report;
    assert!(r.did.replies > 0 && r.did.reminders > 0, "{r:?}");
    // Six days of one-minute ticks; from a day after each meeting the room
    // is empty, and those days are skipped.
    assert!(
        skipping.skipped_ticks > 2 * 24 * 60,
        "the silent days were skipped: {} ticks",
        skipping.skipped_ticks
    );
}

#[tokio::test]
async fn meetings_weeks_apart_are_replayed_skipping_the_weeks_between_with_the_same_report() {
    // The room counts as empty an hour after a meeting, and a conversation
    // is extracted ten hours after it went quiet: that extraction falls
    // inside a skipped stretch, and is made there, as a tick would. Quiet
    // hours begin and end inside every stretch.
    let dir = tempfile::tempdir().unwrap();
    let files = vec![meetings(dir.path(), &[0, 12, 20])];
    let mut s = Settings::default();
    s.initiative.text.require_activity_within_hours = 1;
    s.memory.conversation_idle_minutes = 600;
    s.initiative.quiet_hours = "02:00-04:00; sat 12:00-14:00".into();
    let (skipping, every_tick) = both_ways(&files, &s).await;
    assert_same(&skipping, &every_tick);
    assert!(skipping.report.did.replies > 0);
    assert!(
        skipping.upkeep_runs > 0,
        "upkeep ran inside a skipped stretch where it was due"
    );
}

#[tokio::test]
async fn a_ten_year_sparse_export_runs_a_tick_count_set_by_its_messages_not_its_span() {
    // One evening a year for ten years: 400 messages over 3,650 days.
    let dir = tempfile::tempdir().unwrap();
    let days: Vec<i64> = (0..10).map(|y| y * 365).collect();
    let files = vec![meetings_from(
        dir.path(),
        "2016-03-03T18:00:00Z".parse().unwrap(),
        &days,
    )];
    let opts = options(
        &files,
        &Settings::default(),
        dir.path().join("data").as_path(),
    );
    let out = replay(opts, &|_| {}).await.unwrap();
    assert_eq!(out.report.run.days.round() as i64, 9 * 365);
    let span_ticks = 9 * 365 * 24 * 60;
    assert!(
        out.skipped_ticks > span_ticks * 99 / 100,
        "nearly every one-minute tick of the span skipped: {} of {span_ticks}",
        out.skipped_ticks
    );
    // Each evening runs its two hours of ticks, and the day after it until
    // the room counts as empty (24 h): about 1,600 a meeting, whatever the gap.
    assert!(
        out.ticks_run < 10 * 2_000,
        "ticks run: {} for ten evenings",
        out.ticks_run
    );
    assert!(
        out.upkeep_runs < 10 * 50,
        "upkeep rounds in the silent years: {}",
        out.upkeep_runs
    );
    let r = &out.report;
    assert!(r.did.replies >= 10 && r.did.reminders >= 10, "{:?}", r.did);
}

/// A server that talks every day: a message every 12 minutes, day and
/// night, for `days`, now and then to the bot; the room is never empty.
fn daily_chat(dir: &Path, days: i64) -> PathBuf {
    let start: DateTime<Utc> = "2026-03-03T00:05:00Z".parse().unwrap();
    let lines: Vec<String> = (0..days * 24 * 5)
        .map(|n| {
            let author = ["ada", "bo", "cy"][(n % 3) as usize];
            let content = if n % 40 == 7 {
                "@ambient hello, what is on today?".to_string()
            } else {
                format!("note {n}: the tide tables and the bread rota for the week")
            };
            serde_json::json!({
                "ts": (start + Duration::minutes(n * 12)).to_rfc3339(),
                "channel": "general",
                "author": author,
                "content": content,
            })
            .to_string()
        })
        .collect();
    let path = dir.join("daily.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[tokio::test]
async fn a_server_that_talks_every_day_skips_its_hours_at_the_daily_cap_the_budget_and_the_cooldown_with_the_same_report()
 {
    // An eager bot with a small daily cap reaches it early each day, and a
    // small budget for the server's autonomous work (extraction spends from
    // it inside the stretches too) stops it on the days the cap does not;
    // between its looks, the cooldown. The room is never empty, so only
    // those gates make the stretches.
    let dir = tempfile::tempdir().unwrap();
    let files = vec![daily_chat(dir.path(), 3)];
    let mut s = Settings::default();
    s.initiative.text.eagerness = 100;
    s.initiative.text.min_minutes_between_posts = 120;
    s.initiative.text.max_posts_per_day = 3;
    s.budget.guild_autonomous_daily_tokens = 22_000;
    // A conversation is extracted eight minutes after it goes quiet: inside
    // a stretch, spending from that budget there.
    s.memory.conversation_idle_minutes = 8;
    let (skipping, every_tick) = both_ways(&files, &s).await;
    assert_same(&skipping, &every_tick);
    let gates = &skipping.report.gates;
    for gate in ["daily_cap", "budget", "cooldown"] {
        assert!(
            gates.get(gate).is_some_and(|n| *n > 100),
            "hours stopped at {gate}: {gates:?}"
        );
    }
    assert!(skipping.upkeep_runs > 0, "upkeep ran inside a stretch");
    assert!(
        skipping.skipped_ticks > 2_000,
        "those hours were skipped: {} ticks skipped, {} run",
        skipping.skipped_ticks,
        skipping.ticks_run
    );
}
