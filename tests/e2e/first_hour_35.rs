//! The first hour, again (issue 35): what a newcomer met and should not
//! have — a verb piped into `head` that panics, `/ambient why` at the
//! console answering with the hush usage, a `/wait` that says nothing when
//! the model never decides, raw `<@id>` markup, a dashboard that hides what
//! the bot sent, and a long line of accented text dropped whole.

use std::process::Stdio;
use std::sync::Arc;

use ambient::clock::SystemClock;
use ambient::journal::{Entry, Journal, Kind};
use serde_json::json;

use crate::support::home::{Home, events_of, notices};
use crate::support::readme::example as readme_example;

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

/// The README's `ambient journal | head`, exactly as written, over a
/// journal far longer than a pipe holds: `head` leaves after ten lines
/// while `ambient` still writes, and the pipeline (with `pipefail`, so
/// `ambient`'s own status counts) ends with 0 and nothing on stderr.
#[test]
fn the_readme_journal_into_head_ends_quietly() {
    let example = readme_example("ambient journal | head");
    let home = home();
    let (_, out) = home.console("hello\n");
    assert!(out.status.success());
    let store = ambient::store::Store::open(&home.data_dir()).unwrap();
    let journal = Journal::new(store, Arc::new(SystemClock));
    for i in 0..3_000 {
        journal.record(
            Entry::new(Kind::Route, format!("routed line {i} of a long day → pass"))
                .guild(Some(ambient::console::guild_id()))
                .reason("not addressed, and nothing in it for the bot to pick up on"),
        );
    }
    drop(journal);
    assert!(!example.contains('\''), "{example}");
    let out = home.shell(&format!("bash -o pipefail -c '{example}'"), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.lines().count(), 10, "{stdout}");
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

/// A valid line over 64 KiB of three-byte characters: the limit falls
/// inside a '€'. The line is cut before that character, said to be cut, and
/// stored; the session goes on.
#[test]
fn a_long_line_of_accented_text_is_cut_between_characters_and_kept() {
    let home = home();
    let mut input = "€".repeat(30_000).into_bytes();
    input.extend_from_slice(b"\n@ambient hello\n");
    let (events, out) = home.console_bytes(&input);
    assert!(out.status.success());
    let kept = 64 * 1024 / 3;
    let notices = notices(&events);
    assert!(
        notices.contains(
            &format!("line 1 is longer than 64 KiB: only its first {kept} characters are read")
                .as_str()
        ),
        "{notices:#?}"
    );
    assert!(
        !notices.iter().any(|n| n.contains("not valid UTF-8")),
        "{notices:#?}"
    );
    assert_eq!(events_of(&events, "stored").len(), 2, "{notices:#?}");
    let store = ambient::store::Store::open(&home.data_dir()).unwrap();
    let stored = store
        .recent_messages(ambient::console::channel_id("general"), 10)
        .unwrap();
    assert_eq!(stored[0].content, "€".repeat(kept));
}
