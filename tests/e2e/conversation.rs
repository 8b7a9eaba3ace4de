//! Conversations through the real binary with a scripted model behind it.

use serde_json::json;

use crate::support::home::{Home, events_of};
use crate::support::model_server::{ModelServer, Scripted};

pub(crate) fn model_env(server: &ModelServer) -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_BASE_URL", server.openai_base()),
        ("OPENAI_API_KEY", "sk-test-conversation".into()),
    ]
}

pub(crate) fn with_env<'a>(pairs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    pairs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[test]
fn a_console_conversation_gets_the_scripted_reply_and_usage_shows_the_call() {
    let server = ModelServer::start();
    server.push(Scripted::Text {
        text: "Hello from the model!".into(),
        tokens_in: 321,
        tokens_out: 12,
    });
    let home = Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}));
    let env = model_env(&server);
    let (events, out) = home.console_with(
        "just chatting\n@ambient hi there, how are you?\n",
        &with_env(&env),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = events_of(&events, "message");
    assert_eq!(said.len(), 1, "{events:#?}");
    assert_eq!(said[0]["content"], "Hello from the model!");
    assert!(said[0]["reply_to"].is_string(), "answered as a reply");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let sent = reqs[0].body.to_string();
    assert!(
        sent.contains("ada: just chatting"),
        "history is in the prompt: {sent}"
    );
    assert!(
        sent.contains("ada: @ambient hi there, how are you?"),
        "{sent}"
    );
    assert!(sent.contains("You are ambient"), "persona is in the prompt");

    let usage = home.command(&["usage", "--since", "1h"]).output().unwrap();
    let text = String::from_utf8_lossy(&usage.stdout);
    assert!(
        text.contains("reply") && text.contains("user") && text.contains("openai:"),
        "{text}"
    );
    assert!(
        text.contains("321") && text.contains("12"),
        "tokens shown: {text}"
    );
    assert!(
        text.contains("1 calls (1 ok), 321 tokens in, 12 tokens out"),
        "{text}"
    );

    let journal = home.run(&["journal", "--since", "1h", "--type", "reply"]);
    let text = String::from_utf8_lossy(&journal.stdout);
    assert!(text.contains("answered ada"), "{text}");
}

#[test]
fn a_model_failure_gets_one_honest_message_per_conversation() {
    let server = ModelServer::start();
    server.fallback(Scripted::status(500, "internal kaboom at line 42"));
    let home =
        Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9", "maxRetries": 0}}));
    let env = model_env(&server);
    let (events, out) = home.console_with("@ambient hello?\n@ambient anyone?\n", &with_env(&env));
    assert!(out.status.success());
    let said = events_of(&events, "message");
    assert_eq!(said.len(), 1, "{events:#?}");
    let text = said[0]["content"].as_str().unwrap();
    assert_eq!(
        text,
        "Sorry, I can't answer right now: the model service isn't answering."
    );
    assert_eq!(
        events_of(&events, "reaction").len(),
        1,
        "the second mention only gets 💤"
    );
    let all = String::from_utf8_lossy(&out.stdout);
    assert!(
        !all.contains("kaboom") && !all.contains("panicked"),
        "no internals reach the channel"
    );
}

#[test]
fn the_status_verb_lists_models_and_what_is_missing() {
    let server = ModelServer::start();
    let home = Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}));
    let out = home
        .command(&["status"])
        .env("OPENAI_BASE_URL", server.openai_base())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("reply    openai:gpt-5.2"), "{text}");
    let bare = home.run(&["status"]);
    let text = String::from_utf8_lossy(&bare.stdout);
    assert!(
        text.contains("\nno model for reply, ambient, reflex, extract: none is configured: set "),
        "{text}"
    );
}

#[test]
fn in_a_reply_channel_the_model_decides_whether_to_chime_in() {
    let server = ModelServer::start();
    server
        .push(Scripted::tool("chime_in", json!({"speak": true, "text": "Cargo workspaces help there.", "reason": "an open question"})))
        .push(Scripted::tool("chime_in", json!({"speak": false, "reason": "small talk, nothing to add"})));
    let general = ambient::console::channel_id("general").to_string();
    let home = Home::new(json!({
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9"},
        "attention": {"unsolicitedReplyThreshold": 0.3, "chimeInCooldownMinutes": 0},
        "permissions": {"replies": {"replyChannelIds": [general]}},
    }));
    let env = model_env(&server);
    let (events, out) = home.console_with(
        "how do I split a big crate?\nnice weather today\n/channel elsewhere\nhow about here?\n",
        &with_env(&env),
    );
    assert!(out.status.success());
    let said = events_of(&events, "message");
    assert_eq!(said.len(), 1, "{events:#?}");
    assert_eq!(said[0]["content"], "Cargo workspaces help there.");
    assert_eq!(
        server.requests().len(),
        2,
        "the non-reply channel never consults the model"
    );
    let first = &server.requests()[0].body;
    assert!(
        first.to_string().contains("Nobody addressed you"),
        "the softer unsolicited prompt is used"
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, vec!["memory_search", "chime_in"]);

    let journal = home.run(&["journal", "--since", "1h", "--type", "reply,route"]);
    let text = String::from_utf8_lossy(&journal.stdout);
    assert!(
        text.contains("stayed quiet — small talk, nothing to add"),
        "{text}"
    );
    assert!(text.contains("reaches the unsolicited-reply bar"), "{text}");
    assert!(
        text.contains("chimed in after ada — an open question"),
        "{text}"
    );
}

#[test]
fn a_console_session_with_a_discovery_channel_posts_from_the_running_tick_loop() {
    let server = ModelServer::start();
    server.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "Quiet in here. Anyone watching the eclipse?", "reason": "the room is idle"}),
    ));
    let general = ambient::console::channel_id("general").to_string();
    let home = Home::new(json!({
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9"},
        "permissions": {"replies": {"discoveryChannelIds": [general]}},
        "initiative": {"text": {"eagerness": 100, "tickSeconds": 1, "minMinutesBetweenPosts": 0}},
    }));
    let mut cmd = home.command(&["console", "--json", "--user", "ada"]);
    for (k, v) in model_env(&server) {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    use std::io::{BufRead, Write};
    writeln!(stdin, "just setting the scene").unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut post = None;
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["event"] == "message" {
            post = Some(v);
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    let post = post.expect("an ambient post");
    assert_eq!(
        post["content"],
        "Quiet in here. Anyone watching the eclipse?"
    );
    assert_eq!(post["channel"], "general");
    assert!(
        post["reply_to"].is_null(),
        "an unprompted post, not a reply"
    );
    let journal = home.run(&["journal", "--since", "1h", "--type", "initiative_post"]);
    assert!(
        String::from_utf8_lossy(&journal.stdout).contains("posted in #general — the room is idle")
    );
}
