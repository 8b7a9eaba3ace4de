//! Replay's simulation: the shipped sample lived through the whole bot on a
//! manual clock, with no model configured, so what happens is what the
//! reflexes and the clock make of it.

use crate::support::replaying;
use std::path::Path;

use ambient::replay::export::{ExportLimits, read_exports};
use ambient::replay::run::{Models, Options, Outcome, replay};
use ambient::replay::sim::{Setup, Simulation};
use ambient::replay::transport::Act;
use ambient::settings::{Secrets, Settings};

/// The bot's id in the shipped sample (`scripts/replay-sample.py`).
const SAMPLE_BOT: u64 = 1_000_000_000_000_000_001;

fn offline_settings(dir: &Path) -> Settings {
    let mut s = Settings::default();
    s.storage.data_dir = dir.display().to_string();
    // No model anywhere: nothing may leave the machine.
    s.executive.ollama_base_url = "http://127.0.0.1:9".into();
    s
}

async fn simulate(file: &str) -> (Simulation, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/replay")
        .join(file);
    let messages: Vec<_> = read_exports(&[path], &ExportLimits::at(chrono::Utc::now()))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let start = messages[0].at;
    let mut sim = Simulation::start(Setup {
        settings: offline_settings(dir.path()),
        secrets: Secrets::default(),
        start,
        seed: 7,
        bot: SAMPLE_BOT,
        stand_in: None,
    })
    .await
    .unwrap();
    for m in &messages {
        sim.live(m).await.unwrap();
    }
    let end = messages.last().unwrap().at + chrono::Duration::minutes(30);
    sim.pass_until(end).await.unwrap();
    sim.finish().await;
    (sim, dir)
}

fn said(acts: &[Act]) -> Vec<(String, String)> {
    acts.iter()
        .filter_map(|a| match a {
            Act::Said { at, content, .. } => {
                Some((at.format("%H:%M").to_string(), content.clone()))
            }
            Act::Reacted { .. } => None,
        })
        .collect()
}

#[tokio::test]
async fn the_jsonl_sample_lives_through_the_reflexes_on_simulated_time() {
    let (sim, _dir) = simulate("sample.jsonl").await;
    let acts = sim.acts();
    // "@ambient hello" at 18:15: a wave, at that moment.
    let waves: Vec<String> = acts
        .iter()
        .filter_map(|a| match a {
            Act::Reacted { at, emoji, .. } => Some(format!("{} {emoji}", at.format("%H:%M"))),
            Act::Said { .. } => None,
        })
        .collect();
    assert_eq!(waves, vec!["18:15 👋"]);
    let said = said(&acts);
    assert_eq!(said.len(), 3, "{said:#?}");
    // "@ambient remind me in 10 minutes…" at 18:39; the reminder on simulated time, ten minutes on.
    assert_eq!(
        said[0],
        (
            "18:39".into(),
            "Okay dev, I'll remind you in 10 minutes: check the backup log".into()
        )
    );
    assert_eq!(said[1].0, "18:47");
    assert!(
        said[1].1.starts_with("Here is what I did today"),
        "{said:#?}"
    );
    assert_eq!(said[2].0, "18:49");
    assert!(
        said[2].1.ends_with("reminder: check the backup log"),
        "{said:#?}"
    );
    // The bot's own words are in the replay's history, where later decisions see them.
    let channel = match &acts[1] {
        Act::Said { channel, .. } => *channel,
        Act::Reacted { .. } => unreachable!("the second act is the reminder's answer"),
    };
    let history = sim
        .app
        .store()
        .messages()
        .recent_messages(channel, 50)
        .unwrap();
    assert_eq!(history.iter().filter(|m| m.is_self).count(), 3);
    // Reflexes only: no model was asked anything.
    let calls = sim
        .app
        .store()
        .usage()
        .usage_count(&ambient::store::usage::UsageFilter::default())
        .unwrap();
    assert_eq!(calls, 0);
}

#[tokio::test]
async fn the_same_export_and_seed_give_the_same_acts() {
    let (first, _a) = simulate("sample.jsonl").await;
    let (second, _b) = simulate("sample.jsonl").await;
    assert_eq!(first.acts(), second.acts());
}

#[tokio::test]
async fn the_shipped_discord_export_replays_through_the_same_reflexes() {
    let (sim, _dir) = simulate("sample-general.json").await;
    let acts = sim.acts();
    let waves = acts
        .iter()
        .filter(|a| matches!(a, Act::Reacted { emoji, .. } if emoji == "👋"))
        .count();
    // The sample's figures (scripts/replay-sample.py, fixed seed): five hellos, five reminders.
    assert_eq!(waves, 5, "{acts:#?}");
    let reminders = said(&acts)
        .into_iter()
        .filter(|(_, text)| text.ends_with("reminder: check the backup log"))
        .count();
    let asked = said(&acts)
        .into_iter()
        .filter(|(_, text)| text.starts_with("Okay devon, I'll remind you in 10 minutes"))
        .count();
    assert_eq!(asked, 5, "{acts:#?}");
    assert_eq!(reminders, asked, "every reminder asked for came due");
}

fn sample_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/replay");
    vec![
        root.join("sample-general.json"),
        root.join("sample-links.json"),
    ]
}

/// The shipped sample replayed offline, as `ambient replay` does it by default.
async fn report_with(settings: Settings, eagerness: Option<u32>) -> Outcome {
    report_seeded(settings, eagerness, 1).await
}

/// [`report_with`] with other dice (`--seed`).
async fn report_seeded(settings: Settings, eagerness: Option<u32>, seed: u64) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    replay(
        Options {
            seed,
            eagerness,
            ..replaying::offline(sample_files(), settings, dir.path())
        },
        &|_| {},
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn the_sample_report_counts_what_the_bot_did_and_what_it_asked() {
    let r = report_with(Settings::default(), None).await.report;
    let text = ambient::replay::text::report(&r);
    assert_eq!((r.messages, r.run.skipped), (281, 1), "{text}");
    assert_eq!(r.run.eagerness, 20);
    // What the bot did (scripts/replay-sample.py's fixed seed, the stand-in's seed 1).
    assert_eq!(
        (
            r.did.replies,
            r.did.chime_ins,
            r.did.ambient_posts,
            r.did.reactions,
            r.did.reminders
        ),
        (17, 0, 24, 5, 5),
        "{text}"
    );
    let per_role: Vec<(&str, u64, u64)> = r
        .roles
        .iter()
        .map(|row| (row.role.as_str(), row.calls, row.refused))
        .collect();
    assert_eq!(
        per_role,
        [("ambient", 110, 24), ("extract", 30, 8), ("reply", 11, 0)],
        "{text}"
    );
    let purposes: Vec<(&str, u64)> = r
        .calls_by_purpose
        .iter()
        .map(|(p, n)| (p.as_str(), *n))
        .collect();
    assert_eq!(
        purposes,
        [
            ("answer", 11),
            ("extraction", 30),
            ("garden", 31),
            ("initiative", 79)
        ],
        "{text}"
    );
    let offered = |purpose: &str, tool: &str| r.tools_by_purpose[purpose].contains(tool);
    assert!(offered("initiative", "decide") && !offered("answer", "decide"));
    assert!(offered("garden", "end_ambient_cycle") && offered("extraction", "remember_facts"));
    let gates: Vec<(&str, u64)> = r.gates.iter().map(|(g, n)| (g.as_str(), *n)).collect();
    assert_eq!(
        gates,
        [
            ("active", 3),
            ("budget", 501),
            ("cooldown", 1536),
            ("daily_cap", 1220),
            ("eagerness", 173),
            ("hourly_cap", 0),
            ("pending", 228),
            ("unanswered", 2802)
        ],
        "{text}"
    );
    // Replies cost money at Anthropic's list price; the rest runs on a local model.
    assert!(r.roles[2].models == ["claude-opus-4-6 (anthropic)"]);
    assert!(r.run.models_assumed);
    assert_eq!(r.cost, r.roles[2].cost);
    assert!(r.cost.unwrap() > 0.0);
    // Most messages need no strong model; nothing is paid for and then lost.
    assert_eq!(r.without_strong_call, 270);
    assert_eq!((r.undeliverable, r.calls_past_a_gate), (0, 0));
    assert!(text.contains("Replayed 281 messages of Tidepool"), "{text}");
}

#[tokio::test]
async fn the_same_export_settings_and_seed_give_byte_identical_json() {
    let first = report_with(Settings::default(), None).await.report.json();
    let second = report_with(Settings::default(), None).await.report.json();
    assert_eq!(first, second);
}

#[tokio::test]
async fn an_eagerness_of_zero_asks_no_initiative_call() {
    let r = report_with(Settings::default(), Some(0)).await.report;
    assert_eq!(r.run.eagerness, 0);
    assert_eq!(
        r.calls_by_purpose.get("initiative"),
        None,
        "{:?}",
        r.calls_by_purpose
    );
    assert_eq!(r.did.ambient_posts, 0);
    assert!(r.gates["eagerness"] > 1000, "{:?}", r.gates);
    assert_eq!(r.calls_past_a_gate, 0);
}

#[tokio::test]
async fn the_hourly_cap_and_the_budget_say_no_as_gates_not_as_calls() {
    let mut s = Settings::default();
    s.permissions.replies.max_messages_per_hour = 1;
    s.budget.guild_autonomous_daily_tokens = 6_000;
    // Seed 3: dice that put the bot's posts within the hour before remind-mes.
    let r = report_seeded(s, None, 3).await.report;
    let text = ambient::replay::text::report(&r);
    assert!(r.gates["hourly_cap"] > 0, "{text}");
    assert!(r.gates["budget"] > 0, "{text}");
    // Each autonomous role stays within the server's budget: refusals are not calls.
    let autonomous: u64 = r
        .roles
        .iter()
        .filter(|row| row.role != "reply")
        .map(|row| row.input_tokens + row.output_tokens)
        .sum();
    assert!(
        autonomous <= 6_000 * 5,
        "{autonomous} tokens over 5 days: {text}"
    );
    assert_eq!((r.undeliverable, r.calls_past_a_gate), (0, 0), "{text}");
    // Remind-me reflexes' acknowledgements, turned away at the cap: unpaid, and said.
    assert_eq!(r.turned_away, 2, "{text}");
    assert!(
        text.contains(
            "Unpaid texts (reflexes, reminders) turned away at the hourly cap or a refusal: 2."
        ),
        "{text}"
    );
}

/// Quiet hours and a hush asked for in the chat itself ("@ambient hush for
/// 3 hours", the shipped reflex) stop the initiative as gates the report
/// counts, and nothing is posted while they hold.
#[tokio::test]
async fn quiet_hours_and_a_hush_are_gates_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("night.jsonl");
    let line = |ts: &str, who: &str, text: &str| {
        format!(r#"{{"ts": "{ts}", "channel": "general", "author": "{who}", "content": "{text}"}}"#)
    };
    let lines = [
        line(
            "2026-05-04T10:00:00Z",
            "maya",
            "morning all, what a sunny day",
        ),
        line("2026-05-04T10:05:00Z", "dev", "@ambient hush for 3 hours"),
        line("2026-05-04T12:00:00Z", "maya", "lunch plans anyone?"),
        line("2026-05-04T16:00:00Z", "dev", "the tide chart works now"),
        line("2026-05-04T21:50:00Z", "maya", "good night"),
        line("2026-05-05T09:00:00Z", "dev", "morning"),
    ];
    std::fs::write(&export, lines.join("\n")).unwrap();
    let mut s = Settings::default();
    s.initiative.quiet_hours = "22:00-08:00".into();
    s.initiative.text.eagerness = 100;
    s.initiative.text.min_minutes_between_posts = 0;
    s.initiative.text.max_posts_per_day = 1000;
    let outcome = replay(
        Options {
            models: Models::Offline { post_rate: 1.0 },
            ..replaying::offline(vec![export], s, dir.path())
        },
        &|_| {},
    )
    .await
    .unwrap();
    let r = outcome.report;
    let text = ambient::replay::text::report(&r);
    assert!(r.gates.get("hush").is_some_and(|n| *n >= 170), "{text}");
    assert!(
        r.gates.get("quiet_hours").is_some_and(|n| *n >= 590),
        "{text}"
    );
    assert_eq!((r.undeliverable, r.calls_past_a_gate), (0, 0), "{text}");
    assert!(
        text.contains("hush 179, quiet hours 600"),
        "the text report names them: {text}"
    );
    // Nothing from the bot in the hushed hours (after the hush's own confirmation) or at night.
    let bot_in = |hour: &str| {
        r.per_hour
            .iter()
            .find(|h| h.hour == hour)
            .map_or(0, |h| h.bot)
    };
    for hour in [
        "2026-05-04T11",
        "2026-05-04T12",
        "2026-05-04T22",
        "2026-05-05T03",
        "2026-05-05T07",
    ] {
        assert_eq!(bot_in(hour), 0, "{hour}: {text}");
    }
    assert!(
        bot_in("2026-05-04T13") > 0,
        "after the hush, posts again: {text}"
    );
}
