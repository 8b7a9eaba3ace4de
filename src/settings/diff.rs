//! What changed between the settings in effect and a newly read file, for a
//! live reload (`crate::live`): the changed paths, which of them can only
//! take effect at the next start, and their values as people may read them.
//!
//! Most settings are read through the settings service at each use, so a new
//! value counts at once. A few are bound when the process starts (the store
//! is opened in the data directory, the Discord client is built with its URL
//! and intents, a few worker pools are sized): [`AT_NEXT_START`] lists them.
//! A reload keeps their running values ([`keep_start_bound`]) and says they
//! take effect at the next start, so what `/settings show` reports is what
//! the bot really uses.
//!
//! Values are shown in the journal and to the operator, so [`render`] masks
//! anything secret-shaped first: credentials in URLs, key-like query
//! parameters, known token formats, long random-looking strings, and any
//! secret the bot holds. Secrets come from the environment and are never in
//! the file, but a pasted key in a persona or a feed URL must not spread.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::paths;
use super::secrets::Secrets;

/// Paths (or prefixes ending in '.') bound at start; a changed value waits for the next start.
pub(crate) const AT_NEXT_START: &[&str] = &[
    // The store, its lock and the journal live there.
    "storage.dataDir",
    // The gateway shards run, the guilds owned, and where people's requests pass between processes.
    "storage.sharedDir",
    "storage.sharedUrl",
    "storage.sharedCaFile",
    "discord.shards",
    "discord.totalShards",
    // The Discord client: REST base, its rate limiting, intents, command registration.
    "discord.apiBaseUrl",
    "discord.restProxyHandlesRateLimits",
    "discord.membersIntent",
    "discord.devGuildId",
    // Every HTTP client is built with it (Discord's and the model providers' included).
    "network.proxy",
    // Prompt templates are compiled once.
    "executive.promptsDir",
    // Worker pools sized at start.
    "attention.maxConcurrent",
    "voice.transcription.maxConcurrent",
    // The dashboard's server is bound (or not) once, when the bot starts.
    "dashboard.enabled",
    "dashboard.bind",
    // So is the metrics endpoint, and its families' labels.
    "metrics.bind",
    "metrics.perGuild",
];

/// Whether a change at `path` waits for the next start.
pub(crate) fn bound_at_start(path: &str) -> bool {
    AT_NEXT_START.iter().any(|p| match p.strip_suffix('.') {
        Some(prefix) => path == prefix || path.starts_with(p),
        None => path == *p,
    })
}

/// One changed setting; `None` where a free-form map (`executive.prices`) has no such entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Changed {
    pub path: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// Every setting whose value differs, by dotted path, in document order.
/// Lists count as one value; objects are compared key by key.
pub(crate) fn changes(before: &Value, after: &Value) -> Vec<Changed> {
    let mut out = Vec::new();
    walk("", Some(before), Some(after), &mut out);
    out
}

fn walk(path: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Changed>) {
    if let (Some(Value::Object(b)), Some(Value::Object(a))) = (before, after) {
        for (key, value) in b {
            walk(&paths::join(path, key), Some(value), a.get(key), out);
        }
        for (key, value) in a.iter().filter(|(k, _)| !b.contains_key(*k)) {
            walk(&paths::join(path, key), None, Some(value), out);
        }
        return;
    }
    if before != after {
        out.push(Changed {
            path: path.to_string(),
            before: before.cloned(),
            after: after.cloned(),
        });
    }
}

/// Sets every start-bound path of `new` back to its value in `running`.
pub(crate) fn keep_start_bound(new: &mut Value, running: &Value) {
    for path in AT_NEXT_START {
        if let Some(value) = paths::get(running, path) {
            paths::set(new, path, value.clone());
        }
    }
}

/// The longest value shown; a persona is cut, not printed whole.
const MAX_SHOWN_CHARS: usize = 80;

/// `path: before → after`, for the journal and the operator.
pub(crate) fn describe(c: &Changed, secrets: &Secrets) -> String {
    format!(
        "{}: {} → {}",
        c.path,
        render(c.before.as_ref(), secrets),
        render(c.after.as_ref(), secrets)
    )
}

/// A value as people may read it: compact JSON, secret-shaped parts masked, cut.
pub(crate) fn render(value: Option<&Value>, secrets: &Secrets) -> String {
    match value {
        None => "(none)".into(),
        // A text is cut inside its quotes, so it still reads as one.
        Some(Value::String(text)) => Value::String(cut(&mask(&secrets.redact(text)))).to_string(),
        Some(other) => cut(&mask(&secrets.redact(&other.to_string()))),
    }
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_SHOWN_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX_SHOWN_CHARS).collect();
    format!("{cut}…")
}

static URL_CREDENTIALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@"]+@"#).expect("static regex")
});
static KEY_PARAMETER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r##"(?i)([?&](?:key|api_?key|token|access_token|auth|secret|password|sig|signature)=)[^&\s"#]+"##)
        .expect("static regex")
});
static KNOWN_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:sk-|sk_|ghp_|gho_|ghs_|ghu_|github_pat_|xox[abprs]-|glpat-|hf_|AKIA|AIza)[A-Za-z0-9_\-]{8,}",
    )
    .expect("static regex")
});
static LONG_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/=_.\-]{32,}").expect("static regex"));

/// Masks secret-shaped parts of `text` with `***`.
pub(crate) fn mask(text: &str) -> String {
    let text = URL_CREDENTIALS.replace_all(text, "$1***@");
    let text = KEY_PARAMETER.replace_all(&text, "$1***");
    let text = KNOWN_TOKEN.replace_all(&text, "***");
    // Long runs with upper case, lower case and digits mixed are keys and
    // tokens (a Discord token's parts included); names, paths and model ids
    // are not mixed like that.
    LONG_WORD
        .replace_all(&text, |c: &regex::Captures<'_>| {
            let w = &c[0];
            let mixed = w.chars().any(|c| c.is_ascii_uppercase())
                && w.chars().any(|c| c.is_ascii_lowercase())
                && w.chars().any(|c| c.is_ascii_digit());
            if mixed {
                "***".to_string()
            } else {
                w.to_string()
            }
        })
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;
    use serde_json::json;

    fn tree(f: impl FnOnce(&mut Settings)) -> Value {
        let mut s = Settings::default();
        f(&mut s);
        serde_json::to_value(s).unwrap()
    }

    #[test]
    fn changes_are_named_by_path_with_both_values() {
        let before = tree(|_| {});
        let after = tree(|s| {
            s.initiative.text.eagerness = 100;
            s.permissions.replies.reply_channel_ids = vec![crate::ids::ChannelId(5)];
            s.storage.data_dir = "/srv/other".into();
        });
        let found: Vec<String> = changes(&before, &after)
            .iter()
            .map(|c| describe(c, &Secrets::default()))
            .collect();
        assert_eq!(
            found,
            vec![
                "storage.dataDir: \"./data\" → \"/srv/other\"",
                "permissions.replies.replyChannelIds: [] → [\"5\"]",
                "initiative.text.eagerness: 20 → 100",
            ]
        );
        assert!(changes(&before, &before.clone()).is_empty());
    }

    #[test]
    fn map_entries_that_come_and_go_are_changes_too() {
        let before = json!({"executive": {"prices": {"a": {"inputPerMillion": 1.0}}}});
        let after = json!({"executive": {"prices": {"b": {"inputPerMillion": 2.0}}}});
        let found: Vec<String> = changes(&before, &after)
            .iter()
            .map(|c| describe(c, &Secrets::default()))
            .collect();
        assert_eq!(
            found,
            vec![
                "executive.prices.a: {\"inputPerMillion\":1.0} → (none)",
                "executive.prices.b: (none) → {\"inputPerMillion\":2.0}",
            ]
        );
    }

    #[test]
    fn start_bound_paths_keep_their_running_values() {
        let running = tree(|_| {});
        let mut new = tree(|s| {
            s.storage.data_dir = "/elsewhere".into();
            s.network.proxy = "http://proxy:3128".into();
            s.initiative.text.eagerness = 90;
        });
        keep_start_bound(&mut new, &running);
        let left: Vec<String> = changes(&running, &new)
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(left, vec!["initiative.text.eagerness"]);
        assert!(bound_at_start("storage.dataDir"));
        assert!(bound_at_start("voice.transcription.maxConcurrent"));
        assert!(!bound_at_start("voice.transcription.model"));
        assert!(!bound_at_start("initiative.text.eagerness"));
    }

    #[test]
    fn secret_shaped_values_are_masked() {
        let secrets =
            Secrets::from_lookup(|k| (k == "GITHUB_TOKEN").then(|| "plainsecret99".into()));
        for (value, shown) in [
            (
                json!("http://ann:hunter2@proxy.local:3128"),
                "\"http://***@proxy.local:3128\"",
            ),
            (
                json!("https://feeds.example/rss?user=1&token=abc123"),
                "\"https://feeds.example/rss?user=1&token=***\"",
            ),
            (
                json!("my key is sk-ant-api03-abcdefgh12"),
                "\"my key is ***\"",
            ),
            (
                json!("MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.GaBcDe.abcdefghijklmnopqrstuvwxyz0123"),
                "\"***\"",
            ),
            (json!(["x", "plainsecret99"]), "[\"x\",\"***\"]"),
            (
                json!("claude-3-5-sonnet-20241022-and-more-words"),
                "\"claude-3-5-sonnet-20241022-and-more-words\"",
            ),
            (json!(42), "42"),
        ] {
            assert_eq!(render(Some(&value), &secrets), shown, "{value}");
        }
        let persona = json!("x".repeat(500));
        let shown = render(Some(&persona), &secrets);
        assert_eq!(shown, format!("\"{}…\"", "x".repeat(MAX_SHOWN_CHARS)));
        let list = json!(vec!["123456789012345678"; 10]);
        let shown = render(Some(&list), &secrets);
        assert_eq!(shown.chars().count(), MAX_SHOWN_CHARS + 1);
        assert!(shown.starts_with("[\"123456789012345678\",") && shown.ends_with('…'));
    }
}
