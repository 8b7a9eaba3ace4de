//! The first hour, again (issue 35): what a newcomer met and should not
//! have — a verb piped into `head` that panics, `/ambient why` at the
//! console answering with the hush usage, a `/wait` that says nothing when
//! the model never decides, raw `<@id>` markup, a dashboard that hides what
//! the bot sent, and a long line of accented text dropped whole.

use std::process::Stdio;

use serde_json::json;

use crate::support::home::Home;

fn home() -> Home {
    Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}))
}

/// Every printing verb, run with its standard output a pipe whose reader
/// has already gone (`ambient journal | head` once `head` has its lines):
/// each stops quietly with exit 0 — no panic, no "Broken pipe".
#[test]
fn a_verb_whose_reader_has_gone_ends_quietly() {
    let home = home();
    let (_, out) = home.console("hello\n@ambient hello\n");
    assert!(out.status.success());
    let verbs: &[&[&str]] = &[
        &["journal", "--since", "1h"],
        &["journal", "--json"],
        &["status"],
        &["usage"],
        &["memories"],
        &["memories", "stats"],
        &["memories", "export"],
        &["settings", "example"],
        &["settings", "check"],
        &["reflexes", "check"],
        &["reflexes", "stats"],
        &["garden", "log"],
        &["context", "--guild", "console", "--since", "1h"],
        &["discovery", "list"],
        &["shards", "plan", "--total", "2"],
        &["guild", "export", "console"],
    ];
    for verb in verbs {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = home
            .command(verb)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "ambient {} into a closed pipe: {stderr}",
            verb.join(" ")
        );
        assert!(
            !stderr.contains("panicked") && !stderr.to_lowercase().contains("broken pipe"),
            "ambient {}: {stderr}",
            verb.join(" ")
        );
    }
}
