//! Replay's simulation: the shipped sample lived through the whole bot on a
//! manual clock, with no model configured, so what happens is what the
//! reflexes and the clock make of it.

use std::path::Path;

use ambient::replay::export::{ExportLimits, read_exports};
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

async fn replay(file: &str) -> (Simulation, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/replay")
        .join(file);
    let messages: Vec<_> = read_exports(&[path], &ExportLimits::default())
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
    sim.pass_until(end).await;
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
    let (sim, _dir) = replay("sample.jsonl").await;
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
    let history = sim.app.store.recent_messages(channel, 50).unwrap();
    assert_eq!(history.iter().filter(|m| m.is_self).count(), 3);
    // Reflexes only: no model was asked anything.
    let calls = sim
        .app
        .store
        .usage_count(&ambient::store::usage::UsageFilter::default())
        .unwrap();
    assert_eq!(calls, 0);
}

#[tokio::test]
async fn the_same_export_and_seed_give_the_same_acts() {
    let (first, _a) = replay("sample.jsonl").await;
    let (second, _b) = replay("sample.jsonl").await;
    assert_eq!(first.acts(), second.acts());
}

#[tokio::test]
async fn the_shipped_discord_export_replays_through_the_same_reflexes() {
    let (sim, _dir) = replay("sample-general.json").await;
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
