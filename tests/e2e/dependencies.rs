//! What the bot's binary is built from: one TLS stack, whatever crate
//! brings it.
//!
//! Serenity's gateway, songbird's voice connection, reqwest and the
//! PostgreSQL client each reach rustls; with two versions in the build, the
//! binary carries both and an advisory against one needs two upgrades. The
//! vendored serenity asks for a WebSocket crate on the same rustls for this
//! (vendor/README.md, "One TLS stack"). Only what the bot runs is counted
//! (`cargo tree -e normal`): the tests' fake Discord may bring its own.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Crates the build must hold one version of. Not tungstenite: songbird's
/// 0.26 zero-fills its whole read buffer before every read, so serenity's
/// gateway, which reads every message, is on 0.29 (vendor/README.md).
const ONE_OF_EACH: &[&str] = &["rustls", "rustls-webpki", "tokio-rustls"];

/// Every crate the bot's own build depends on → the versions of it.
fn normal_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--locked", "--offline", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut versions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if let (Some(name), Some(version)) = (words.next(), words.next()) {
            versions
                .entry(name.to_string())
                .or_default()
                .insert(version.to_string());
        }
    }
    versions
}

#[test]
fn the_bot_is_built_with_one_tls_stack() {
    let versions = normal_dependencies();
    assert!(
        versions.contains_key("serenity") && versions.contains_key("songbird"),
        "cargo tree listed neither serenity nor songbird: {versions:?}"
    );
    let twice: Vec<String> = ONE_OF_EACH
        .iter()
        .filter_map(|name| {
            let seen = versions.get(*name)?;
            (seen.len() > 1).then(|| format!("{name}: {seen:?}"))
        })
        .collect();
    assert!(
        twice.is_empty(),
        "more than one version in the bot's build (`cargo tree -e normal -i NAME` \
         says which crate brings each): {twice:?}"
    );
    assert!(
        versions.contains_key("rustls"),
        "rustls is not in the build"
    );
}
