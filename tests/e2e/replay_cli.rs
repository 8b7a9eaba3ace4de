//! `ambient replay` as a person runs it: the README's examples exactly as
//! written (their output is what the README shows), a broken export's
//! error, the question before real models are paid, and a pinned endpoint
//! that really receives the calls.

use std::path::Path;

use serde_json::{Value, json};

use crate::conversation::{model_env, with_env};
use crate::support::home::Home;
use crate::support::model_server::{ModelServer, Scripted};

/// A home with the shipped sample under `examples/replay`, as in a checkout.
pub(crate) fn home() -> Home {
    let home = Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}));
    let samples = home.path().join("examples/replay");
    std::fs::create_dir_all(&samples).unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/replay");
    for file in ["sample-general.json", "sample-links.json", "sample.jsonl"] {
        std::fs::copy(shipped.join(file), samples.join(file)).unwrap();
    }
    home
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The README's `sh` block whose line starts with `prefix`, and the `text`
/// block right after it (what the README says it prints).
fn readme_example(prefix: &str) -> (String, String) {
    let readme = readme();
    let at = readme
        .find(&format!("```sh\n{prefix}"))
        .unwrap_or_else(|| panic!("the README has no sh block starting with {prefix:?}"));
    let rest = &readme[at + "```sh\n".len()..];
    let command = rest.lines().next().unwrap().to_string();
    let shown = rest
        .split_once("```text\n")
        .and_then(|(_, after)| after.split_once("\n```"))
        .map(|(text, _)| text.to_string())
        .expect("a text block follows the example");
    (command, shown)
}

fn run(home: &Home, line: &str, env: &[(&str, &str)]) -> (String, String, bool) {
    let out = home.shell(line, env);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn the_readme_sample_replay_prints_what_the_readme_shows() {
    let (command, shown) = readme_example("ambient replay examples/replay/sample-general.json");
    assert!(!command.contains("--eagerness"), "{command}");
    let (stdout, stderr, ok) = run(&home(), &command, &[]);
    assert!(ok, "{stderr}");
    // The README abridges the report: each line it shows is a line printed, in order.
    let printed: Vec<&str> = stdout.lines().collect();
    let mut from = 0;
    for line in shown.lines() {
        let found = printed[from..].iter().position(|p| *p == line);
        let Some(i) = found else {
            panic!("the README shows {line:?}, the command printed:\n{stdout}");
        };
        from += i + 1;
    }
}

#[test]
fn the_readme_eagerness_sweep_prints_the_readme_table() {
    let (command, shown) = readme_example(
        "ambient replay examples/replay/sample-general.json examples/replay/sample-links.json --eagerness",
    );
    let (stdout, stderr, ok) = run(&home(), &command, &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout.trim_end(),
        shown,
        "the README's table is the command's output"
    );
}

#[test]
fn json_reports_are_byte_identical_and_keep_leaves_a_readable_store() {
    let home = home();
    let line = "ambient replay examples/replay/sample.jsonl --format json";
    let (first, stderr, ok) = run(&home, line, &[]);
    assert!(ok, "{stderr}");
    let (second, _, _) = run(&home, line, &[]);
    assert_eq!(first, second);
    let report: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(report["run"]["model"], "offline");
    assert_eq!(report["did"]["reactions"], 1);
    assert_eq!(report["undeliverable"], 0);

    let (_, stderr, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --keep kept",
        &[],
    );
    assert!(ok, "{stderr}");
    assert!(stderr.contains("The replay's data is in kept"), "{stderr}");
    assert!(
        home.path()
            .join("kept")
            .join(ambient::store::DB_FILE)
            .exists()
    );
    // The live store was never opened.
    assert!(
        !home.data_dir().exists(),
        "the bot's own data directory stays untouched"
    );
}

#[test]
fn a_broken_export_names_the_file_the_message_and_the_field() {
    let home = home();
    let good = r#"{"id": "1", "type": "Default", "timestamp": "2024-05-01T18:30:00+00:00", "content": "hi", "author": {"id": "5", "name": "ada", "isBot": false}}"#;
    let bad = good
        .replace("2024-05-01T18:30:00+00:00", "yesterday")
        .replace(r#""id": "1""#, r#""id": "2""#);
    let export = format!(
        r#"{{"guild": {{"id": "1", "name": "G"}}, "channel": {{"id": "2", "name": "general"}}, "messages": [{good}, {bad}]}}"#
    );
    std::fs::write(home.path().join("general.json"), export).unwrap();
    let (stdout, stderr, ok) = run(&home, "ambient replay general.json", &[]);
    assert!(!ok);
    assert!(
        stderr.contains(
            r#"general.json: message 2: "timestamp" is "yesterday", not an RFC 3339 time like "2024-05-01T18:30:00+00:00""#
        ),
        "{stderr}"
    );
    assert!(
        stdout.is_empty(),
        "no report from a broken export: {stdout}"
    );
}

#[test]
fn a_live_replay_asks_first_and_sends_nothing_without_a_yes() {
    let server = ModelServer::start();
    let env = model_env(&server);
    let (stdout, stderr, ok) = run(
        &home(),
        "ambient replay examples/replay/sample.jsonl --model live",
        &with_env(&env),
    );
    assert!(!ok);
    assert!(stderr.contains("Worst case:"), "{stderr}");
    assert!(stderr.contains("Add --yes"), "{stderr}");
    assert!(stderr.contains("Nothing was replayed."), "{stderr}");
    assert!(stdout.is_empty());
    assert!(server.requests().is_empty(), "no model was asked anything");
}

#[test]
fn a_pinned_endpoint_receives_every_call_and_the_report_names_it() {
    let server = ModelServer::start();
    server.fallback(Scripted::text("an answer from the pinned model"));
    let url = server.openai_base();
    let (stdout, stderr, ok) = run(
        &home(),
        &format!(
            "ambient replay examples/replay/sample.jsonl --model {url} --yes --format json --keep kept"
        ),
        &[],
    );
    assert!(ok, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["run"]["model"], url.trim_end_matches('/'));
    let requests = server.requests();
    assert!(
        !requests.is_empty(),
        "the replay's calls reached the endpoint"
    );
    assert!(
        requests.iter().all(|r| r.body["model"] == "qwen2.5:14b"),
        "{:?}",
        requests
            .iter()
            .map(|r| r.body["model"].clone())
            .collect::<Vec<_>>()
    );
    let calls: u64 = report["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(
        calls,
        requests.len() as u64,
        "every request is a call in the report"
    );
}

#[test]
fn a_closed_stderr_loses_log_lines_not_the_replay() {
    // Logs to a pipe whose reader is gone (`ambient … 2>&1 | head`): each
    // write fails. The bot must go on; before, the failure was reported on
    // the same stderr, which panicked the task that logged and stalled the spine.
    let home = home();
    let mut child = home
        .command(&["replay", "examples/replay/sample.jsonl", "--format", "json"])
        .env("RUST_LOG", "debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["did"]["reactions"], 1);
}
