//! `ambient settings check` and the example file kept in step with the schema.

use std::path::Path;

use serde_json::json;

use crate::support::home::Home;

fn repo(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(file)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn the_example_file_passes_and_is_exactly_the_defaults() {
    let home = Home::new(json!({}));
    let out = home.run(&["settings", "check", &repo("settings.example.json")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("OK"));

    let example = std::fs::read_to_string(repo("settings.example.json")).unwrap();
    assert_eq!(
        example,
        ambient::settings::example_json(),
        "settings.example.json is out of date: regenerate it with `ambient settings example > settings.example.json`"
    );
}

#[test]
fn a_file_with_three_mistakes_yields_all_three_with_paths() {
    let home = Home::new(json!({}));
    let bad = home.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{
  "initiative": { "text": { "eagerness": 150, "maxPostsPerDay": "lots" } },
  "permissions": { "replies": { "blockedChanelIds": [] } }
}"#,
    )
    .unwrap();
    let out = home.run(&["settings", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        text.contains("bad.json: initiative.text.eagerness: must be between 0 and 100, got 150"),
        "{text}"
    );
    assert!(text.contains("bad.json: initiative.text.maxPostsPerDay: expected a whole number of 0 or more, got the text \"lots\""), "{text}");
    assert!(text.contains("bad.json: permissions.replies.blockedChanelIds: unknown setting; did you mean permissions.replies.blockedChannelIds?"), "{text}");
    assert!(text.contains("3 problem(s) found"), "{text}");
}

#[test]
fn a_syntax_error_names_the_line() {
    let home = Home::new(json!({}));
    let bad = home.path().join("broken.json");
    std::fs::write(&bad, "{\n  \"bot\": { \"name\": \"x\" \n}\n").unwrap();
    let out = home.run(&["settings", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("broken.json:4:1: not valid JSON"), "{text}");
}

#[test]
fn the_readme_documents_every_setting() {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let missing: Vec<String> =
        ambient::settings::paths::leaf_paths(&ambient::settings::validate::defaults_tree())
            .into_iter()
            .filter(|p| !readme.contains(&format!("`{p}`")))
            .collect();
    assert!(
        missing.is_empty(),
        "README.md does not document: {missing:#?}"
    );
}

#[test]
fn version_flag_prints_the_version() {
    let home = Home::new(json!({}));
    let out = home.run(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("ambient {}", env!("CARGO_PKG_VERSION"))
    );
}
