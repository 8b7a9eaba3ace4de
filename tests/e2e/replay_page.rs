//! The replay page shows the bot: a line's *why* holds that act's reasons only.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ambient::replay::export::ExportLimits;
use ambient::replay::html::page;
use ambient::replay::run::{Models, Options, Outcome, replay};
use ambient::settings::{Secrets, Settings};
use chrono::{DateTime, TimeZone, Utc};

async fn replayed(export: PathBuf, dir: &Path) -> Outcome {
    replay(
        Options {
            files: vec![export],
            settings: Settings::default(),
            secrets: Secrets::default(),
            data_dir: dir.join("data"),
            seed: 1,
            models: Models::Offline { post_rate: 0.3 },
            eagerness: None,
            bot: None,
            limits: ExportLimits::at(Utc::now()),
        },
        &|_| {},
    )
    .await
    .unwrap()
}

fn jsonl(at: DateTime<Utc>, author: &str, content: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({
            "ts": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "channel": "general",
            "author": author,
            "content": content,
        })
    )
}

/// The page's lines by the bot, each as its one line of markup, in order.
fn bot_lines(html: &str) -> Vec<&str> {
    html.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with(r#"<div class="line bot"#))
        .collect()
}

#[tokio::test]
async fn a_line_shows_the_reasons_of_its_own_act_alone() {
    let dir = tempfile::tempdir().unwrap();
    let at = Utc.with_ymd_and_hms(2026, 5, 4, 18, 15, 0).unwrap();
    let export = dir.path().join("same-moment.jsonl");
    let mut text = String::new();
    // Three people at the same second: two questions to the bot, and a hello it waves at.
    for (who, said) in [
        ("ana", "@ambient when does the meeting start?"),
        ("ben", "@ambient and where is it?"),
        ("maya", "@ambient hello"),
    ] {
        write!(text, "{}", jsonl(at, who, said)).unwrap();
    }
    std::fs::write(&export, text).unwrap();
    let out = replayed(export, dir.path()).await;
    let html = page(&out.report, &out.timeline);
    let lines = bot_lines(&html);
    let line = |class: &str, marker: &str| {
        lines
            .iter()
            .copied()
            .find(|l| l.contains(&format!(r#"class="line bot {class}""#)) && l.contains(marker))
            .unwrap_or_else(|| panic!("no {class} line with {marker:?} in\n{}", lines.join("\n")))
    };
    let why = |line: &str| -> String {
        line.split("<summary>why</summary>")
            .nth(1)
            .unwrap_or_else(|| panic!("no why in {line}"))
            .to_string()
    };
    let to_ana = why(line("reply", "answered ana"));
    let to_ben = why(line("reply", "answered ben"));
    let wave = why(line("reaction", "👋"));
    assert!(
        !to_ana.contains("ben") && !to_ana.contains("maya"),
        "{to_ana}"
    );
    assert!(
        !to_ben.contains("ana") && !to_ben.contains("maya"),
        "{to_ben}"
    );
    assert!(wave.contains("greeting"), "{wave}");
    assert!(!wave.contains("answered"), "{wave}");
    // Each still has the whole of its own account: the routing of its message and the act.
    assert!(
        to_ana.contains("from ana") && to_ana.contains("answered ana"),
        "{to_ana}"
    );
    assert!(wave.contains("from maya"), "{wave}");
}
