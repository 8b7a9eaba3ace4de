//! `ambient console` driven as a user would: lines in, events out, rows stored.

use ambient::console::channel_id;
use ambient::store::Store;
use serde_json::{Value, json};

use crate::support::home::{Home, events_of, notices};

#[test]
fn console_answers_stores_and_journals_with_reasons() {
    let home = Home::new(json!({}));
    let (events, out) = home.console("hello everyone\n@ambient are you there?\n");
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );

    assert_eq!(events[0]["event"], "ready");
    let notices = notices(&events);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with(
            "no model for reply, ambient, reflex, extract: none is configured: set ANTHROPIC_API_KEY"
        ),
        "start says plainly what is missing: {notices:?}"
    );
    assert_eq!(events_of(&events, "stored").len(), 2, "{events:#?}");
    let said = events_of(&events, "message");
    assert_eq!(said.len(), 1, "only the mention is answered: {events:#?}");
    assert!(
        said[0]["content"]
            .as_str()
            .unwrap()
            .contains("no model is available")
    );
    let typing_at = events
        .iter()
        .position(|e| e["event"] == "typing")
        .expect("typing shown");
    let said_at = events.iter().position(|e| e["event"] == "message").unwrap();
    assert!(typing_at < said_at, "typing comes before the answer");

    let store = Store::open(&home.data_dir()).unwrap();
    let history = store
        .messages()
        .recent_messages(channel_id("general"), 10)
        .unwrap();
    let lines: Vec<(String, bool)> = history
        .iter()
        .map(|m| (m.content.clone(), m.is_self))
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0], ("hello everyone".to_string(), false));
    assert_eq!(lines[1], ("@ambient are you there?".to_string(), false));
    assert!(
        lines[2].1 && lines[2].0.contains("no model is available"),
        "the bot's own words are stored: {lines:?}"
    );

    let journal = home.run(&["journal", "--since", "1h", "--type", "route", "--json"]);
    assert!(journal.status.success());
    let entries: Vec<Value> = String::from_utf8_lossy(&journal.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 2, "{entries:#?}");
    assert!(entries[0]["summary"].as_str().unwrap().ends_with("→ pass"));
    assert!(
        entries[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not addressed")
    );
    assert!(entries[0]["salience"].as_f64().unwrap() < 0.5);
    assert!(
        entries[1]["summary"]
            .as_str()
            .unwrap()
            .ends_with("→ executive:reply")
    );
    assert!(
        entries[1]["reason"]
            .as_str()
            .unwrap()
            .contains("mentioned the bot")
    );
    assert!(entries[1]["salience"].as_f64().unwrap() > 0.5);

    let text = home.run(&["journal", "--since", "1h"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("#general") && text.contains("→ executive:reply"),
        "{text}"
    );
}

#[test]
fn console_runs_from_a_clean_directory_with_built_in_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(crate::support::home::bin())
        .args(["console"])
        .current_dir(dir.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ambient console"), "{stdout}");
    assert!(
        dir.path().join("data/ambient.db").exists(),
        "default storage.dataDir is ./data"
    );
}

#[test]
fn console_switches_channels_and_changes_settings_through_the_validator() {
    let home = Home::new(json!({}));
    let (events, out) = home.console(
        "/channel memes\nfresh meme\n/settings set initiative.text.eagerness 150\n/settings set initiative.text.eagerness 80\n/settings show initiative.text.eagerness\n/nope\n",
    );
    assert!(out.status.success());
    let notices = notices(&events);
    assert!(notices.contains(&"you are now in #memes"), "{notices:?}");
    assert!(
        notices.contains(&"initiative.text.eagerness: must be between 0 and 100, got 150"),
        "{notices:?}"
    );
    assert!(
        notices.contains(&"initiative.text.eagerness = 80 (this server's override)"),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("unknown command /nope")),
        "{notices:?}"
    );
    let stored = events_of(&events, "stored");
    assert_eq!(stored[0]["channel"], "memes");

    let store = Store::open(&home.data_dir()).unwrap();
    assert_eq!(
        store
            .messages()
            .recent_messages(channel_id("memes"), 5)
            .unwrap()[0]
            .content,
        "fresh meme"
    );
    assert_eq!(
        store
            .messages()
            .channel_name(channel_id("memes"))
            .unwrap()
            .as_deref(),
        Some("memes")
    );
}

#[test]
fn console_refuses_to_start_on_bad_settings_and_lists_every_problem() {
    let home = Home::new(json!({"initiative": {"text": {"eagerness": 150}}, "bogus": 1}));
    let (_, out) = home.console("hi\n");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("initiative.text.eagerness: must be between 0 and 100, got 150"),
        "{err}"
    );
    assert!(err.contains("bogus: unknown setting"), "{err}");
}

#[test]
fn a_broken_prompt_template_stops_the_start_with_its_file_and_line() {
    let home = Home::new(json!({}));
    let prompts = home.path().join("myprompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("reply.j2"),
        "{% block system %}\n{{ persona }}\n{% if %}\n{% endblock %}{% block user %}x{% endblock %}",
    )
    .unwrap();
    let settings = home.path().join("settings.json");
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    s["executive"] = json!({"promptsDir": prompts.to_string_lossy()});
    std::fs::write(&settings, s.to_string()).unwrap();
    let (_, out) = home.console("hi\n");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("reply.j2:3:"), "{err}");
}
