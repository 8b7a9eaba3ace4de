//! Secrets never reach logs, stored records or messages.

use serde_json::json;

use crate::support::files::files_containing;
use crate::support::home::Home;
use crate::support::model_server::{ModelServer, Scripted};
use crate::support::spellings::spellings;

const KEY: &str = "sk-live-SECRET-0123456789abcdef";

#[test]
fn no_api_key_appears_in_any_log_line_at_any_level() {
    let server = ModelServer::start();
    // A provider that echoes the key back in its error, as some do.
    server.fallback(Scripted::status(
        401,
        &format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}"#),
    ));
    let home =
        Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9", "maxRetries": 1}}));
    for format in ["text", "json"] {
        let mut cmd = home.command(&["--log-format", format, "console", "--json", "--user", "ada"]);
        cmd.env("RUST_LOG", "trace")
            .env("OPENAI_BASE_URL", server.openai_base())
            .env("OPENAI_API_KEY", KEY)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"@ambient hello\n@ambient again\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.lines().count() > 20,
            "trace logging was on ({format})"
        );
        assert!(
            !stderr.contains(KEY),
            "the key leaked into the {format} logs"
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains(KEY),
            "the key leaked into the output"
        );
    }
    assert!(
        server.requests().iter().any(|r| r
            .headers
            .get("authorization")
            .is_some_and(|h| h.contains(KEY))),
        "the key was really used, so its absence from logs means something"
    );
    let usage = home.run(&["usage", "--since", "1h"]);
    let text = String::from_utf8_lossy(&usage.stdout);
    assert!(
        text.contains("client_error") && text.contains("Incorrect API key provided: ***"),
        "{text}"
    );
    assert!(!text.contains(KEY));
    assert_eq!(
        files_containing(&home.data_dir(), KEY.as_bytes()),
        Vec::<String>::new(),
        "the key is in stored data"
    );
}

/// An image key with every character that encodings treat differently.
const IMAGE_KEY: &str = "sk-Img+Canary/8c1E55=x";

#[test]
fn every_spelling_of_a_secret_is_masked_whole() {
    let secrets = ambient::settings::Secrets::from_lookup(|k| {
        (k == "IMAGE_API_KEY").then(|| IMAGE_KEY.to_string())
    });
    let spelled = spellings(IMAGE_KEY);
    let path = &spelled
        .iter()
        .find(|(name, _)| *name == "percent-path")
        .unwrap()
        .1;
    assert_ne!(path, IMAGE_KEY, "the path style escapes something");
    for (name, spelling) in spelled {
        assert_ne!(spelling.len(), 0);
        assert_eq!(
            secrets.redact(&format!("refused: {spelling} is wrong")),
            "refused: *** is wrong",
            "{name}: {spelling}"
        );
    }
}
