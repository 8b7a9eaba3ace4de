//! The replay page shows the bot: beside a room whose busiest hour holds
//! hundreds of messages, the bot's few posts a day are drawn on their own
//! scale with a mark per act — measured in headless Chromium by the size of
//! what it drew — and every act's line links to the acts around it; a line's
//! *why* holds that act's reasons only.

use crate::support::replaying;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use ambient::replay::html::page;
use ambient::replay::run::{Outcome, replay};
use ambient::settings::Settings;
use chrono::{DateTime, Duration, TimeZone, Utc};

async fn replayed(export: PathBuf, dir: &Path) -> Outcome {
    replay(
        replaying::offline(vec![export], Settings::default(), dir),
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

/// Twenty days of a small server: each evening six messages, one of them
/// to the bot; on day ten a meeting of 320 messages in under an hour.
fn busy_room(dir: &Path) -> PathBuf {
    let people = ["ana", "ben", "cleo", "dev", "eli", "fay"];
    let start = Utc.with_ymd_and_hms(2026, 3, 2, 17, 0, 0).unwrap();
    let mut lines = Vec::new();
    for day in 0..20 {
        for i in 0..6 {
            let at = start + Duration::days(day) + Duration::minutes(i * 9 + (day + i) % 5);
            let who = people[((day + i) % 6) as usize];
            let text = if i == 2 {
                "@ambient what do you think about the schedule?".to_string()
            } else {
                format!("message {day}-{i} about the garden plot")
            };
            lines.push((at, who, text));
        }
    }
    let meeting = start + Duration::days(10) + Duration::hours(2);
    for i in 0..320 {
        let at = meeting + Duration::seconds(i * 11);
        lines.push((at, people[i as usize % 6], format!("meeting point {i}")));
    }
    lines.sort();
    let file = dir.join("busy.jsonl");
    let text: String = lines
        .iter()
        .map(|(at, who, text)| jsonl(*at, who, text))
        .collect();
    std::fs::write(&file, text).unwrap();
    file
}

/// The page's lines by the bot, each as its one line of markup, in order.
fn bot_lines(html: &str) -> Vec<&str> {
    html.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with(r#"<div class="line bot"#))
        .collect()
}

/// The values of `attr="…"` in `markup`, in order.
fn attrs<'a>(markup: &'a str, attr: &str) -> Vec<&'a str> {
    let key = format!(r#" {attr}=""#);
    markup
        .split(key.as_str())
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect()
}

#[tokio::test]
async fn the_bot_can_be_seen_beside_a_busy_room() {
    let dir = tempfile::tempdir().unwrap();
    let out = replayed(busy_room(dir.path()), dir.path()).await;
    let r = &out.report;
    // The room this is about: a peak of hundreds an hour, the bot a few times a day.
    let peak = r.per_hour.iter().map(|h| h.people).max().unwrap();
    assert!(peak >= 300, "people's busiest hour holds {peak}");
    let acts = r.did.messages() + r.did.reactions;
    let per_day = acts as f64 / r.run.days;
    assert!(
        (2.0..=10.0).contains(&per_day),
        "{acts} acts in {} days",
        r.run.days
    );

    let html = page(r, &out.timeline);
    let lines = bot_lines(&html);
    assert_eq!(lines.len() as u64, acts);
    // In a browser, every shape drawn for the bot measures at least 2×2 px
    // (where Chromium is installed: the script says when it is not).
    let file = dir.path().join("busy.html");
    std::fs::write(&file, &html).unwrap();
    if let Some(said) = browser_check(&file) {
        assert!(said.contains(&format!("({acts} by the bot)")), "{said}");
        assert!(
            said.contains(&format!("({acts} marks, each linking to its line)")),
            "{said}"
        );
        let smallest = said
            .split("the smallest ")
            .nth(1)
            .and_then(|s| s.split(" px").next())
            .unwrap_or_else(|| panic!("no size in {said}"));
        let (w, h) = smallest.split_once('×').unwrap();
        let (w, h): (f64, f64) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(
            w >= 2.0 && h >= 2.0,
            "the bot's smallest shape is {w}×{h} px"
        );
    }
    // A mark per act, each linking to its own line, in order.
    let svg = &html[html.find("<svg").unwrap()..html.find("</svg>").unwrap()];
    let marks: Vec<&str> = svg
        .lines()
        .filter(|l| l.contains(r#"<a class="act""#))
        .collect();
    assert_eq!(marks.len() as u64, acts);
    let mut hrefs: Vec<&str> = marks.iter().flat_map(|m| attrs(m, "href")).collect();
    hrefs.sort_by_key(|h| h.trim_start_matches("#act-").parse::<usize>().unwrap());
    let ids: Vec<&str> = lines.iter().map(|l| attrs(l, "id")[0]).collect();
    let expected: Vec<String> = (1..=lines.len()).map(|n| format!("act-{n}")).collect();
    assert_eq!(ids, expected);
    assert_eq!(
        hrefs,
        expected.iter().map(|e| format!("#{e}")).collect::<Vec<_>>()
    );
    // Each lane has its own scale: people's top is their busiest time, the
    // bot's its own few messages, not a sliver of people's hundreds.
    assert!(lane_max(svg, "people") >= peak);
    assert!((1..=10).contains(&lane_max(svg, "the bot")), "{svg}");

    // Moving through the timeline: each line links to the act before and
    // after it, and to the one before and after of its own kind.
    for (n, line) in lines.iter().enumerate() {
        let links = attrs(line, "href");
        let any: Vec<&str> = links
            .iter()
            .copied()
            .filter(|h| h.starts_with("#act-"))
            .collect();
        let mut want = Vec::new();
        want.extend((n > 0).then(|| format!("#act-{n}")));
        want.extend((n + 1 < lines.len()).then(|| format!("#act-{}", n + 2)));
        want.extend(same_kind(&lines, n, (0..n).rev()));
        want.extend(same_kind(&lines, n, n + 1..lines.len()));
        assert_eq!(any, want, "the links of act {}: {line}", n + 1);
        assert!(links.contains(&"#chart"), "back to the chart: {line}");
    }
    // The index leads to the first act of each kind.
    let index = html
        .lines()
        .find(|l| l.starts_with(r#"<p class="jumps">"#))
        .unwrap();
    assert!(index.contains(&format!(
        r#"<a href="{}">{} replies</a>"#,
        first_of(&lines, "reply"),
        r.did.replies
    )));
    assert!(index.contains(&format!(
        r#"<a href="{}">{} ambient posts</a>"#,
        first_of(&lines, "ambient"),
        r.did.ambient_posts
    )));
}

/// The anchor of the first line in `range` of the same kind as line `n`.
fn same_kind(lines: &[&str], n: usize, mut range: impl Iterator<Item = usize>) -> Option<String> {
    let class = |l: &str| l.split('"').nth(1).unwrap().to_string();
    range
        .find(|m| class(lines[*m]) == class(lines[n]))
        .map(|m| format!("#act-{}", m + 1))
}

/// The top of a lane's scale: the number written beside its name.
fn lane_max(svg: &str, lane: &str) -> u64 {
    let name = format!(r#"class="name">{lane}</text>"#);
    let mut lines = svg.lines().skip_while(|l| !l.contains(&name));
    let scale = lines
        .nth(1)
        .unwrap_or_else(|| panic!("no lane {lane} in {svg}"));
    let n = scale.split('>').nth(1).and_then(|s| s.split('<').next());
    n.and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no scale beside {lane}: {scale}"))
}

/// The anchor of the first of the bot's lines of a kind (its CSS class).
fn first_of(lines: &[&str], class: &str) -> String {
    let n = lines
        .iter()
        .position(|l| l.starts_with(&format!(r#"<div class="line bot {class}""#)))
        .unwrap();
    format!("#act-{}", n + 1)
}

/// `scripts/replay-html-check.sh` on `file`: what it printed, or `None`
/// (saying so) where Chromium is not installed.
fn browser_check(file: &Path) -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = Command::new(root.join("scripts/replay-html-check.sh"))
        .arg(file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout).to_string();
    if check.status.code() == Some(77) {
        eprintln!("SKIPPED the browser check: {said}");
        return None;
    }
    assert!(
        check.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    Some(said)
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
