//! `ambient replay --html`: the page an owner opens. Its structure is
//! checked here; `scripts/replay-html-check.sh` then loads it in headless
//! Chromium (skipped, saying so, where Chromium is not installed).

use crate::support::replaying;
use std::path::Path;
use std::process::Command;

use ambient::replay::html::page;
use ambient::replay::run::{Outcome, replay};
use ambient::settings::Settings;

async fn replayed(files: Vec<std::path::PathBuf>, dir: &Path) -> Outcome {
    replay(replaying::offline(files, Settings::default(), dir), &|_| {})
        .await
        .unwrap()
}

fn sample() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/replay");
    vec![
        root.join("sample-general.json"),
        root.join("sample-links.json"),
    ]
}

#[tokio::test]
async fn the_page_holds_the_chart_every_act_and_the_chat() {
    let dir = tempfile::tempdir().unwrap();
    let out = replayed(sample(), dir.path()).await;
    let html = page(&out.report, &out.timeline);
    let r = &out.report;
    assert!(html.contains(r#"<svg id="posts-per-hour""#));
    // Under five days: a bar per hour, people's and the bot's each in their
    // own lane, and a mark per act of the bot.
    let hours = |n: fn(&_) -> u64| r.per_hour.iter().filter(|h| n(h) > 0).count();
    assert_eq!(
        html.matches(r#"<rect class="people""#).count(),
        hours(|h| h.people)
    );
    assert_eq!(
        html.matches(r#"<rect class="bot""#).count(),
        hours(|h| h.bot)
    );
    // Every message and reaction of the bot, each in its line, most with the journal's why.
    let acts = (r.did.messages() + r.did.reactions) as usize;
    assert_eq!(html.matches(r#"<rect class="mark "#).count(), acts);
    assert_eq!(html.matches(r#"class="line bot"#).count(), acts);
    assert_eq!(
        html.matches(r#"class="line person""#).count(),
        r.messages as usize
    );
    assert!(html.matches("<summary>why</summary>").count() >= acts / 2);
    // Mentions read as people read them.
    assert!(html.contains("@ambient"), "mentions are made readable");
    assert!(!html.contains("&lt;@1000000000000000001&gt;"));
    assert!(html.contains("Tidepool"));
    assert!(!html.contains("<script"), "the page runs no script");
}

#[tokio::test]
async fn a_hostile_message_is_text_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("hostile.jsonl");
    std::fs::write(
        &export,
        r#"{"ts": "2026-05-04T18:15:00Z", "channel": "general", "author": "eve", "content": "<script>alert(1)</script> <img src=x onerror=alert(2)> @ambient hello"}
"#,
    )
    .unwrap();
    let out = replayed(vec![export], dir.path()).await;
    let html = page(&out.report, &out.timeline);
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script"));
    assert!(!html.contains("<img"));
}

#[tokio::test]
async fn the_page_renders_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let out = replayed(sample(), dir.path()).await;
    let file = dir.path().join("report.html");
    std::fs::write(&file, page(&out.report, &out.timeline)).unwrap();
    // A test artefact, not in git: target/ is ignored.
    let artefacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&artefacts).unwrap();
    let shot = artefacts.join("replay-report.png");
    let check =
        Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/replay-html-check.sh"))
            .arg(&file)
            .arg(&shot)
            .output()
            .unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    if check.status.code() == Some(77) {
        println!("{said}");
        eprintln!("SKIPPED the browser check: {said}");
        return;
    }
    assert!(
        check.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let acts = out.report.did.messages() + out.report.did.reactions;
    assert!(said.contains(&format!("({acts} by the bot)")), "{said}");
    assert!(said.contains("no console messages"), "{said}");
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "a real screenshot"
    );
}
