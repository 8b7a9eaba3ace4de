//! Validation: turn untrusted JSON into [`Settings`], collecting every problem.
//!
//! Three passes, each adding to one list of [`Problem`]s:
//! 1. a structural walk of the input against the schema's defaults, which
//!    knows every key and its JSON kind: unknown keys (with the nearest known
//!    key), secrets that belong in the environment, wrong kinds;
//! 2. typed deserialization of what is left; serde stops at the first error,
//!    so each error's key is removed and the pass repeats until it succeeds;
//! 3. semantic rules on the typed result (ranges, URLs, formats).
//!
//! A key with a problem falls back to its default, so the returned
//! `Settings` is always usable; callers decide whether problems are fatal.

use std::fmt;

use serde_json::{Map, Value};

use super::paths;
use super::schema::Settings;

/// One thing wrong with a settings document, named by its dotted path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

impl Problem {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Validates a whole settings document.
pub fn validate(input: &Value) -> (Settings, Vec<Problem>) {
    let defaults = defaults_tree();
    let mut problems = Vec::new();

    let Value::Object(_) = input else {
        problems.push(Problem::new(
            "(top level)",
            format!(
                "expected a JSON object of settings, got {}",
                describe(input)
            ),
        ));
        return (Settings::default(), problems);
    };

    let mut cleaned = input.clone();
    let mut removals = Vec::new();
    walk(
        input,
        &defaults,
        "",
        &defaults,
        &mut problems,
        &mut removals,
    );
    for path in &removals {
        paths::remove(&mut cleaned, path);
    }

    let settings = deserialize_collecting(&mut cleaned, &mut problems);
    problems.extend(semantic(&settings));
    (settings, problems)
}

/// The schema's defaults as JSON: the map of every known key and its kind.
pub fn defaults_tree() -> Value {
    serde_json::to_value(Settings::default()).expect("defaults serialize")
}

fn walk(
    input: &Value,
    default: &Value,
    prefix: &str,
    root: &Value,
    problems: &mut Vec<Problem>,
    removals: &mut Vec<String>,
) {
    let (Value::Object(given), Value::Object(known)) = (input, default) else {
        return;
    };
    for (key, value) in given {
        let path = paths::join(prefix, key);
        match known.get(key) {
            None if key.chars().count() > MAX_KEY_CHARS => {
                let shown: String = key.chars().take(MAX_KEY_CHARS).collect();
                problems.push(Problem::new(
                    paths::join(prefix, &format!("{shown}…")),
                    format!("unknown setting: no setting's name is longer than {MAX_KEY_CHARS} characters"),
                ));
                removals.push(path);
            }
            None => {
                // Past a few dozen problems nobody reads the suggestions, and each costs a
                // comparison with every known key.
                let message = if problems.len() < MAX_SUGGESTIONS {
                    unknown_key_message(key, prefix, known, root)
                } else {
                    "unknown setting".to_string()
                };
                problems.push(Problem::new(&path, message));
                removals.push(path);
            }
            Some(Value::Object(_)) if value.is_object() && path == PRICES => {
                if let Some(problem) = prices_problem(value) {
                    problems.push(problem);
                    removals.push(path);
                }
            }
            Some(Value::Object(_)) if value.is_object() => {
                walk(value, &known[key], &path, root, problems, removals);
            }
            Some(_) if is_vision(&path) => {
                if let Some(message) = vision_problem(value) {
                    problems.push(Problem::new(&path, message));
                    removals.push(path);
                }
            }
            Some(expected) => {
                let problem = kind_mismatch(value, expected).or_else(|| too_big(value, &path));
                if let Some(message) = problem {
                    problems.push(Problem::new(&path, message));
                    removals.push(path);
                }
            }
        }
    }
}

/// `executive.roles.<role>.vision`, the one setting that is either a
/// switch or a word: `true`, `false` or `"auto"`.
fn is_vision(path: &str) -> bool {
    path.starts_with("executive.roles.") && path.ends_with(".vision")
}

fn vision_problem(value: &Value) -> Option<String> {
    match value {
        Value::Bool(_) => None,
        Value::String(s) if s == "auto" => None,
        other => Some(format!(
            "expected true, false or \"auto\" (decided from the model's name), got {}",
            describe(other)
        )),
    }
}

/// The longest key looked at for a "did you mean": the longest real one is
/// under 40, and comparing a huge key with every known one would take minutes.
pub(crate) const MAX_KEY_CHARS: usize = 64;
/// After this many problems an unknown key gets no "did you mean".
const MAX_SUGGESTIONS: usize = 50;
/// The most entries a list setting may hold (ids, feeds, links): a list is
/// searched on every message, and a few hundred is already a lot.
pub(crate) const MAX_LIST_ITEMS: usize = 1000;
/// The longest `bot.persona`: it rides in every prompt, so every character costs.
pub(crate) const MAX_PERSONA_CHARS: usize = 4000;
/// The longest URL (and any text inside a list, such as a feed address).
pub(crate) const MAX_URL_CHARS: usize = 2048;
/// The longest folder path (Linux's `PATH_MAX`).
pub(crate) const MAX_PATH_CHARS: usize = 4096;
/// The longest of any other text: names, models, languages, time zones.
pub(crate) const MAX_TEXT_CHARS: usize = 256;

/// The longest text a setting may hold, by its path.
pub(crate) fn max_chars(path: &str) -> usize {
    let key = path.rsplit('.').next().unwrap_or(path);
    if path == "bot.persona" {
        MAX_PERSONA_CHARS
    } else if key.ends_with("Dir") || key == "dir" {
        MAX_PATH_CHARS
    } else if key.ends_with("Url") || path.contains('[') {
        MAX_URL_CHARS
    } else {
        MAX_TEXT_CHARS
    }
}

/// Text longer than its setting's limit, or a list with too many entries
/// (checked before anything is copied out of the input).
fn too_big(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::String(text) => {
            let max = max_chars(path);
            let n = text.chars().count();
            (n > max).then(|| format!("is {n} characters long; at most {max} are allowed"))
        }
        Value::Array(items) if items.len() > MAX_LIST_ITEMS => Some(format!(
            "has {} entries; at most {MAX_LIST_ITEMS} are allowed",
            items.len()
        )),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            too_big(item, &format!("{path}[{i}]")).map(|m| format!("entry {i} {m}"))
        }),
        Value::Object(fields) => fields
            .iter()
            .find_map(|(k, v)| too_big(v, &format!("{path}.{k}")).map(|m| format!("{k} {m}"))),
        _ => None,
    }
}

fn unknown_key_message(
    key: &str,
    prefix: &str,
    siblings: &Map<String, Value>,
    root: &Value,
) -> String {
    if let Some(var) = secret_env_var(key, prefix) {
        return format!(
            "secrets are not read from settings files; remove this key and set the {var} environment variable"
        );
    }
    let nearest = nearest_known_path(key, prefix, siblings, root);
    format!("unknown setting; did you mean {nearest}?")
}

/// Keys that look like credentials, and the environment variable that holds them instead.
fn secret_env_var(key: &str, prefix: &str) -> Option<&'static str> {
    let k = key.to_ascii_lowercase();
    let looks_secret = k.ends_with("token")
        || k.ends_with("apikey")
        || k.ends_with("api_key")
        || k.ends_with("secret")
        || k.ends_with("password");
    if !looks_secret {
        return None;
    }
    let context = format!("{prefix}.{k}").to_ascii_lowercase();
    Some(if context.contains("discord") || k == "token" {
        "DISCORD_TOKEN"
    } else if context.contains("anthropic") {
        "ANTHROPIC_API_KEY"
    } else if context.contains("openrouter") {
        "OPENROUTER_API_KEY"
    } else if context.contains("speech") {
        "SPEECH_API_KEY"
    } else if context.contains("transcription") || context.contains("voice") {
        "TRANSCRIPTION_API_KEY"
    } else if context.contains("github") {
        "GITHUB_TOKEN"
    } else {
        "OPENAI_API_KEY"
    })
}

/// The known key closest to `key`: a sibling when one is similar, otherwise
/// the best match anywhere (catching keys put in the wrong section).
fn nearest_known_path(
    key: &str,
    prefix: &str,
    siblings: &Map<String, Value>,
    root: &Value,
) -> String {
    let score = |candidate: &str| {
        strsim::normalized_damerau_levenshtein(
            &key.to_ascii_lowercase(),
            &candidate.to_ascii_lowercase(),
        )
    };
    let best_sibling = siblings
        .keys()
        .map(|k| (score(k), paths::join(prefix, k)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let best_anywhere = paths::all_paths(root)
        .into_iter()
        .map(|p| (score(paths::last_segment(&p)), p))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match (best_sibling, best_anywhere) {
        (Some((s, sib)), Some((a, any))) => {
            // Prefer the sibling unless a key elsewhere is a clearly better match.
            if a > s + 0.15 { any } else { sib }
        }
        (Some((_, sib)), None) => sib,
        (None, Some((_, any))) => any,
        (None, None) => "(no settings here)".into(),
    }
}

/// Compares a value's JSON kind with the default's; `None` when compatible.
fn kind_mismatch(value: &Value, expected: &Value) -> Option<String> {
    let ok = match expected {
        Value::Null => true, // optional: the typed pass decides
        Value::Bool(_) => value.is_boolean(),
        Value::String(_) => value.is_string(),
        Value::Number(n) if n.is_u64() => value.is_u64(),
        Value::Number(_) => value.is_number(),
        Value::Array(_) => value.is_array(),
        Value::Object(_) => value.is_object(),
    };
    if ok {
        return None;
    }
    let wanted = match expected {
        Value::Bool(_) => "true or false",
        Value::String(_) => "a string",
        Value::Number(n) if n.is_u64() => "a whole number of 0 or more",
        Value::Number(_) => "a number",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object of settings",
        Value::Null => unreachable!("null accepts anything"),
    };
    Some(format!("expected {wanted}, got {}", describe(value)))
}

/// Short description of a JSON value for error messages.
pub(crate) fn describe(v: &Value) -> String {
    let text = v.to_string();
    let shown = if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    };
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) | Value::Number(_) => shown,
        Value::String(_) => format!("the text {shown}"),
        Value::Array(_) => format!("a list {shown}"),
        Value::Object(_) => format!("an object {shown}"),
    }
}

/// Deserializes, removing each offending key and retrying, so every type
/// error is reported rather than only the first.
/// The one map whose keys are the operator's (model names), not the schema's.
const PRICES: &str = "executive.prices";

/// The first thing wrong with `executive.prices`, if anything: each entry is
/// `{"inputPerMillion": n, "outputPerMillion": n}` with n a number of 0 or
/// more. A bad map is dropped whole (model names may hold dots, which a
/// dotted path cannot name), so the built-in prices apply.
fn prices_problem(value: &Value) -> Option<Problem> {
    const FIELDS: [&str; 2] = ["inputPerMillion", "outputPerMillion"];
    let map = value.as_object()?;
    for (model, entry) in map {
        let at = format!("{PRICES}.{model:?}");
        if model.trim().is_empty() {
            return Some(Problem::new(at, "a price needs a model name"));
        }
        let Some(fields) = entry.as_object() else {
            return Some(Problem::new(
                at,
                format!(
                    "expected {{\"inputPerMillion\": US$, \"outputPerMillion\": US$}}, got {}",
                    describe(entry)
                ),
            ));
        };
        if let Some(extra) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Some(Problem::new(
                format!("{at}.{extra}"),
                "unknown setting: a price has inputPerMillion and outputPerMillion",
            ));
        }
        for field in FIELDS {
            let ok = fields
                .get(field)
                .and_then(Value::as_f64)
                .is_some_and(|n| n.is_finite() && n >= 0.0);
            if !ok {
                return Some(Problem::new(
                    format!("{at}.{field}"),
                    format!(
                        "expected US$ per million tokens (a number of 0 or more), got {}",
                        fields.get(field).map_or("nothing".into(), describe)
                    ),
                ));
            }
        }
    }
    None
}

fn deserialize_collecting(value: &mut Value, problems: &mut Vec<Problem>) -> Settings {
    for _ in 0..256 {
        let result: Result<Settings, _> = serde_path_to_error::deserialize(&*value);
        match result {
            Ok(settings) => return settings,
            Err(err) => {
                let path = err.path().to_string();
                // `a.b[2].c` → remove `a.b`, the whole list, so its default applies.
                let key = path.split('[').next().unwrap_or(&path).to_string();
                problems.push(Problem::new(
                    &path,
                    humanize_serde(&err.inner().to_string()),
                ));
                if key.is_empty() || key == "." || !paths::remove(value, &key) {
                    break;
                }
            }
        }
    }
    Settings::default()
}

fn humanize_serde(msg: &str) -> String {
    let msg = msg
        .replace("expected u32", "expected a whole number of 0 or more")
        .replace("expected u64", "expected a whole number of 0 or more")
        .replace("expected f64", "expected a number");
    msg.replace("invalid type: ", "got ")
}

/// Settings that are valid but have no effect as written: worth a warning
/// (`ambient settings check` prints them, the bot logs them), never fatal.
///
/// The X and Hacker News keys only matter once their source switch is on.
/// Setting a key does not turn the switch on by itself: the switch stays
/// the one place that turns a source on and off, so a server can switch X
/// off without losing its handles.
pub(crate) fn warnings(s: &Settings) -> Vec<Problem> {
    let d = &s.initiative.discovery;
    let defaults = super::schema::DiscoverySettings::default();
    let mut out = Vec::new();
    let off = |switch: &str, keys: &[&str]| {
        Problem::new(
            keys.join(", "),
            format!(
                "ignored while initiative.discovery.sources.{switch} is false; \
                 set it to true to use {}",
                if keys.len() == 1 { "it" } else { "them" }
            ),
        )
    };
    if !d.sources.x {
        let set: Vec<&str> = [
            ("initiative.discovery.xHandles", !d.x_handles.is_empty()),
            (
                "initiative.discovery.xBridgeBaseUrl",
                !d.x_bridge_base_url.is_empty(),
            ),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect();
        if !set.is_empty() {
            out.push(off("x", &set));
        }
    }
    if !d.sources.hacker_news && d.hacker_news_base_url != defaults.hacker_news_base_url {
        out.push(off(
            "hackerNews",
            &["initiative.discovery.hackerNewsBaseUrl"],
        ));
    }
    if s.discord.rest_proxy_handles_rate_limits
        && s.discord.api_base_url.trim_end_matches('/') == "https://discord.com"
    {
        out.push(Problem::new(
            "discord.restProxyHandlesRateLimits",
            "ignored while discord.apiBaseUrl is Discord itself (serenity's limiter serves); \
             set discord.apiBaseUrl to the proxy",
        ));
    }
    if let Some(allow) = s.discord.allow_dms {
        out.push(Problem::new(
            "discord.allowDms",
            format!(
                "is the older switch for direct messages and {}; remove it and set \
                 discord.dms (off, open, allowlist or pairing) instead",
                if allow {
                    "true changes nothing (discord.dms decides)"
                } else {
                    "false turns them off whatever discord.dms says"
                }
            ),
        ));
    }
    out
}

/// Semantic rules: ranges, formats, and relations between keys, one
/// settings section at a time (problems come out in the settings' order).
fn semantic(s: &Settings) -> Vec<Problem> {
    let mut p = Rules::default();
    bot_discord_storage(&mut p, s);
    network(&mut p, s);
    attention(&mut p, s);
    executive(&mut p, s);
    permissions(&mut p, s);
    initiative_text(&mut p, s);
    discovery_sources(&mut p, s);
    discovery_addresses(&mut p, s);
    discovery_limits(&mut p, s);
    feeds(&mut p, s);
    memory(&mut p, s);
    reflexes(&mut p, s);
    impulses(&mut p, s);
    garden(&mut p, s);
    voice(&mut p, s);
    dashboard(&mut p, s);
    if let Err(e) = s.metrics.address() {
        p.push("metrics.bind", e.to_string());
    }
    p.0
}

/// `bot`, `discord` and `storage`: names, Discord's own limits, where data lives.
fn bot_discord_storage(p: &mut Rules, s: &Settings) {
    p.non_empty("bot.name", &s.bot.name);
    p.max_len("bot.name", &s.bot.name, 32);
    p.url("discord.apiBaseUrl", &s.discord.api_base_url, false);
    attachment_origins(p, &s.discord.attachment_origins);
    p.0.extend(super::shards::problems(s));
    p.range(
        "discord.backfillMessages",
        s.discord.backfill_messages,
        0,
        100,
    );
    p.range("discord.backfillHours", s.discord.backfill_hours, 1, 168);
    p.range(
        "discord.pairingCodeMinutes",
        s.discord.pairing_code_minutes,
        1,
        7 * 24 * 60,
    );
    p.range(
        "discord.answerMissedWithinMinutes",
        s.discord.answer_missed_within_minutes,
        0,
        1440,
    );
    attachments(p, &s.discord.attachments);
    // Discord allows about 5 edits per 5 s in a channel; faster only earns 429s.
    p.range(
        "discord.streamEditIntervalMs",
        s.discord.stream_edit_interval_ms,
        1000,
        60_000,
    );
    p.non_empty("storage.dataDir", &s.storage.data_dir);
    // Ten years: past it a "grace period" is keeping the data for good.
    p.range(
        "storage.retention.departedGuildDays",
        s.storage.retention.departed_guild_days,
        0,
        3650,
    );
    retention(p, s);
    backup(p, s);
}

/// `storage.backup`: a schedule, how many to keep, and a folder that is not
/// the data directory (a backup there would be lost with what it backs up).
fn backup(p: &mut Rules, s: &Settings) {
    let b = &s.storage.backup;
    p.range("storage.backup.everyHours", b.every_hours, 0, 8760);
    p.range("storage.backup.keep", b.keep, 1, 1000);
    let dir = b.dir.trim();
    if b.every_hours > 0 && dir.is_empty() {
        p.push(
            "storage.backup.dir",
            "storage.backup.everyHours is on, so say where the backups go: a folder outside \
             storage.dataDir, on another disk if you can",
        );
    }
    if !dir.is_empty()
        && crate::store::backup::inside(
            std::path::Path::new(dir),
            std::path::Path::new(s.storage.data_dir.trim()),
        )
    {
        p.push(
            "storage.backup.dir",
            format!(
                "{dir:?} is storage.dataDir ({:?}) or inside it: a backup there is lost with what \
                 it backs up, and a restore replaces that folder; choose a folder outside it",
                s.storage.data_dir
            ),
        );
    }
}

/// `storage.retention.*`: days, 0 for forever; at least what the bot's own
/// reads of that kind look back over.
fn retention(p: &mut Rules, s: &Settings) {
    let r = &s.storage.retention;
    for d in &super::retention::KINDS {
        let path = format!("{}{}", super::retention::PREFIX, d.key);
        let days = r.days(d.kind);
        let least = match d.kind {
            // Budgets count the last 24 hours of calls row by row.
            crate::store::retention::Kind::Usage => 2,
            // An item is remembered as long as duplicates of it are looked for.
            crate::store::retention::Kind::Discovery => {
                s.initiative.discovery.dedupe_hours.div_ceil(24).max(1)
            }
            _ => 1,
        };
        if days != 0 && !(least..=36_500).contains(&days) {
            let why = match d.kind {
                crate::store::retention::Kind::Usage => {
                    " (budgets count the last 24 hours of calls)".to_string()
                }
                crate::store::retention::Kind::Discovery => format!(
                    " (initiative.discovery.dedupeHours is {}: an item is remembered as long as duplicates are looked for)",
                    s.initiative.discovery.dedupe_hours
                ),
                _ => String::new(),
            };
            p.push(
                path,
                format!(
                    "must be 0 (keep forever) or between {least} and 36500 days{why}, got {days}"
                ),
            );
        }
    }
}

/// The most origins `discord.attachmentOrigins` may name: a server's files
/// live in one or two places, and each is an address the bot may reach.
pub(crate) const MAX_ATTACHMENT_ORIGINS: usize = 16;

/// `discord.attachmentOrigins`: a few http(s) origins, each alone.
fn attachment_origins(p: &mut Rules, origins: &[String]) {
    let path = "discord.attachmentOrigins";
    if origins.len() > MAX_ATTACHMENT_ORIGINS {
        p.push(
            path,
            format!(
                "has {} entries; at most {MAX_ATTACHMENT_ORIGINS} are allowed",
                origins.len()
            ),
        );
    }
    for (i, origin) in origins.iter().enumerate() {
        if let Err(why) = super::schema::web_origin(origin) {
            p.push(
                format!("{path}[{i}]"),
                format!(
                    "must be an http:// or https:// origin — a scheme, a host and an optional \
                     port, nothing after, like \"https://files.example\" — got {origin:?} ({why})"
                ),
            );
        }
    }
}

/// `network`: the guarded fetcher's bounds and the search and proxy addresses.
fn network(p: &mut Rules, s: &Settings) {
    let n = &s.network;
    p.range(
        "network.fetchTimeoutSeconds",
        n.fetch_timeout_seconds,
        1,
        300,
    );
    p.range(
        "network.maxResponseBytes",
        n.max_response_bytes,
        1_024,
        100_000_000,
    );
    p.range("network.maxRedirects", n.max_redirects, 0, 20);
    p.non_empty("network.userAgent", &n.user_agent);
    p.url("network.searchBaseUrl", &n.search_base_url, true);
    p.url("network.proxy", &n.proxy, true);
    p.range(
        "network.searchMaxResponseBytes",
        n.search_max_response_bytes,
        1_024,
        100_000_000,
    );
}

/// `attention`: concurrency, conversations, and when the bot may chime in.
fn attention(p: &mut Rules, s: &Settings) {
    let a = &s.attention;
    p.range("attention.maxConcurrent", a.max_concurrent, 1, 64);
    p.range(
        "attention.activeConversationMinutes",
        a.active_conversation_minutes,
        1,
        1440,
    );
    p.fraction(
        "attention.unsolicitedReplyThreshold",
        a.unsolicited_reply_threshold,
    );
    p.range(
        "attention.chimeInCooldownMinutes",
        a.chime_in_cooldown_minutes,
        0,
        1440,
    );
}

/// `executive`: the roles' models and budgets, the tool loop, prompt limits, the context stream.
fn executive(p: &mut Rules, s: &Settings) {
    let e = &s.executive;
    for (role, r) in [
        ("reply", &e.roles.reply),
        ("ambient", &e.roles.ambient),
        ("reflex", &e.roles.reflex),
        ("extract", &e.roles.extract),
    ] {
        p.url(
            &format!("executive.roles.{role}.baseUrl"),
            &r.base_url,
            true,
        );
        p.range(
            &format!("executive.roles.{role}.maxOutputTokens"),
            r.max_output_tokens,
            1,
            200_000,
        );
    }
    p.url("executive.ollamaBaseUrl", &e.ollama_base_url, true);
    p.range(
        "executive.requestTimeoutSeconds",
        e.request_timeout_seconds,
        1,
        600,
    );
    p.range("executive.maxRetries", e.max_retries, 0, 10);
    p.range("executive.failureThreshold", e.failure_threshold, 1, 100);
    p.range(
        "executive.providerCooldownMinutes",
        e.provider_cooldown_minutes,
        0,
        1440,
    );
    p.non_empty("executive.promptsDir", &e.prompts_dir);
    p.range(
        "executive.replyHistoryMessages",
        e.reply_history_messages,
        0,
        200,
    );
    p.range("executive.maxToolSteps", e.max_tool_steps, 1, 50);
    p.range("executive.maxToolCalls", e.max_tool_calls, 0, 100);
    p.range(
        "executive.replyTools.maxWebCallsPerReply",
        e.reply_tools.max_web_calls_per_reply,
        1,
        20,
    );
    prompt_limits(p, &e.prompt_limits);
    for (i, role) in e.context_stream.roles.iter().enumerate() {
        p.one_of(
            &format!("executive.contextStream.roles[{i}]"),
            role,
            &["reply", "ambient", "reflex", "extract"],
        );
    }
    p.range(
        "executive.contextStream.windowMinutes",
        e.context_stream.window_minutes,
        1,
        1440,
    );
    p.range(
        "executive.contextStream.maxLines",
        e.context_stream.max_lines,
        1,
        200,
    );
    p.range(
        "executive.contextStream.retentionHours",
        e.context_stream.retention_hours,
        1,
        720,
    );
}

/// `permissions.replies`: how much the bot may answer.
fn permissions(p: &mut Rules, s: &Settings) {
    p.range(
        "permissions.replies.maxMessagesPerHour",
        s.permissions.replies.max_messages_per_hour,
        1,
        3600,
    );
    p.range(
        "permissions.replies.maxPartsPerAnswer",
        s.permissions.replies.max_parts_per_answer,
        1,
        20,
    );
}

/// `initiative.text`, quiet hours and the server's zone: when the bot may speak unprompted.
fn initiative_text(p: &mut Rules, s: &Settings) {
    let t = &s.initiative.text;
    p.range("initiative.text.eagerness", t.eagerness, 0, 100);
    p.range(
        "initiative.text.minMinutesBetweenPosts",
        t.min_minutes_between_posts,
        0,
        10_080,
    );
    p.range(
        "initiative.text.maxPostsPerDay",
        t.max_posts_per_day,
        0,
        1_000,
    );
    p.range(
        "initiative.text.lookbackMessages",
        t.lookback_messages,
        1,
        200,
    );
    p.range("initiative.text.maxToolSteps", t.max_tool_steps, 1, 20);
    p.range("initiative.text.maxToolCalls", t.max_tool_calls, 0, 50);
    p.range("initiative.text.tickSeconds", t.tick_seconds, 1, 3_600);
    p.range(
        "initiative.text.pendingThoughtMaxAgeMinutes",
        t.pending_thought_max_age_minutes,
        1,
        10_080,
    );
    p.range("initiative.text.maxPostChars", t.max_post_chars, 1, 2_000);
    p.range(
        "initiative.text.revisitMinutes",
        t.revisit_minutes,
        0,
        1_440,
    );
    p.range(
        "initiative.text.requireActivityWithinHours",
        t.require_activity_within_hours,
        0,
        8_760,
    );
    p.range(
        "initiative.text.maxUnansweredPosts",
        t.max_unanswered_posts,
        0,
        100,
    );
    if let Err(why) = super::quiet_hours::QuietHours::parse(&s.initiative.quiet_hours) {
        p.push("initiative.quietHours", why.to_string());
    }
    let zone = s.guild.timezone.trim();
    if !zone.is_empty() && zone.parse::<chrono_tz::Tz>().is_err() {
        p.push(
            "guild.timezone",
            format!(
                "must be an IANA timezone such as \"Europe/Berlin\" or \"America/New_York\" (empty: impulses.timezone), got {:?}",
                s.guild.timezone
            ),
        );
    }
}

/// `initiative.discovery`'s sources: each a valid subreddit, feed, channel id or handle.
fn discovery_sources(p: &mut Rules, s: &Settings) {
    let d = &s.initiative.discovery;
    for (i, sub) in d.reddit_subreddits.iter().enumerate() {
        let name = sub.trim_start_matches("r/");
        if !(2..=21).contains(&name.len())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            p.push(
                format!("initiative.discovery.redditSubreddits[{i}]"),
                format!("must be a subreddit name like \"rust\" (2–21 letters, digits or _), got {sub:?}"),
            );
        }
    }
    for (i, feed) in d.rss_feeds.iter().enumerate() {
        p.url(&format!("initiative.discovery.rssFeeds[{i}]"), feed, false);
    }
    for (i, id) in d.youtube_channel_ids.iter().enumerate() {
        let ok = id.len() == 24
            && id.starts_with("UC")
            && id[2..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            p.push(
                format!("initiative.discovery.youtubeChannelIds[{i}]"),
                format!("must be a YouTube channel id (UC followed by 22 characters), got {id:?}"),
            );
        }
    }
    for (i, handle) in d.x_handles.iter().enumerate() {
        let h = handle.trim_start_matches('@');
        if !(1..=15).contains(&h.len()) || !h.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            p.push(
                format!("initiative.discovery.xHandles[{i}]"),
                format!("must be an X handle like \"@rustlang\" (1–15 letters, digits or _), got {handle:?}"),
            );
        }
    }
    if d.sources.x && !d.x_handles.is_empty() && d.x_bridge_base_url.trim().is_empty() {
        p.push(
            "initiative.discovery.xBridgeBaseUrl",
            "must be set when X handles are configured (X has no free API; point this at an RSS bridge such as RSSHub or Nitter)",
        );
    }
}

/// `initiative.discovery`'s provider addresses.
fn discovery_addresses(p: &mut Rules, s: &Settings) {
    let d = &s.initiative.discovery;
    p.url(
        "initiative.discovery.xBridgeBaseUrl",
        &d.x_bridge_base_url,
        true,
    );
    p.url(
        "initiative.discovery.redditBaseUrl",
        &d.reddit_base_url,
        false,
    );
    p.url(
        "initiative.discovery.youtubeBaseUrl",
        &d.youtube_base_url,
        false,
    );
    p.url(
        "initiative.discovery.hackerNewsBaseUrl",
        &d.hacker_news_base_url,
        false,
    );
}

/// `initiative.discovery`'s fetch pacing, freshness and daily media limits.
fn discovery_limits(p: &mut Rules, s: &Settings) {
    let d = &s.initiative.discovery;
    p.range(
        "initiative.discovery.fetchIntervalMinutes",
        d.fetch_interval_minutes,
        1,
        1_440,
    );
    p.range(
        "initiative.discovery.freshnessHours",
        d.freshness_hours,
        1,
        8_760,
    );
    p.range("initiative.discovery.dedupeHours", d.dedupe_hours, 1, 8_760);
    p.range(
        "initiative.discovery.sourceFetchLimit",
        d.source_fetch_limit,
        1,
        100,
    );
    p.range(
        "initiative.discovery.maxSourcesPerType",
        d.max_sources_per_type,
        0,
        100,
    );
    p.range(
        "initiative.discovery.maxImagesPerDay",
        d.max_images_per_day,
        0,
        1_000,
    );
    p.range(
        "initiative.discovery.maxVideosPerDay",
        d.max_videos_per_day,
        0,
        1_000,
    );
    p.range(
        "initiative.discovery.maxGifsPerDay",
        d.max_gifs_per_day,
        0,
        1_000,
    );
    p.url(
        "initiative.discovery.imageGeneration.baseUrl",
        &d.image_generation.base_url,
        true,
    );
    p.range(
        "initiative.discovery.imageGeneration.timeoutSeconds",
        d.image_generation.timeout_seconds,
        1,
        600,
    );
    p.url(
        "initiative.discovery.gifSource.baseUrl",
        &d.gif_source.base_url,
        true,
    );
    p.one_of(
        "initiative.discovery.gifSource.rating",
        &d.gif_source.rating,
        &["g", "pg", "pg-13", "r"],
    );
}

/// `memory`: conversations, extraction, supersede and the prompt's facts.
fn memory(p: &mut Rules, s: &Settings) {
    let m = &s.memory;
    p.range(
        "memory.conversationIdleMinutes",
        m.conversation_idle_minutes,
        1,
        1_440,
    );
    p.range("memory.listenBatchSize", m.listen_batch_size, 1, 500);
    p.range(
        "memory.guildCompactionThreshold",
        m.guild_compaction_threshold,
        2,
        100_000,
    );
    p.range(
        "memory.channelCompactionThreshold",
        m.channel_compaction_threshold,
        2,
        100_000,
    );
    p.range(
        "memory.userCompactionThreshold",
        m.user_compaction_threshold,
        2,
        100_000,
    );
    p.range("memory.ttlDays", m.ttl_days, 1, 36_500);
    p.range(
        "memory.archiveRetentionDays",
        m.archive_retention_days,
        0,
        3_650,
    );
    p.range(
        "memory.searchHalfLifeDays",
        m.search_half_life_days,
        1,
        3_650,
    );
    if !(m.supersede_threshold > 0.0 && m.supersede_threshold < 1.0) {
        p.push(
            "memory.supersedeThreshold",
            format!(
                "must be greater than 0 and less than 1, got {}",
                m.supersede_threshold
            ),
        );
    }
    p.range("memory.maxPromptFacts", m.max_prompt_facts, 0, 100);
}

/// `reflexes`: where they live and how many a server may create.
fn reflexes(p: &mut Rules, s: &Settings) {
    p.non_empty("reflexes.dir", &s.reflexes.dir);
    p.url(
        "reflexes.githubApiBaseUrl",
        &s.reflexes.github_api_base_url,
        false,
    );
    p.range(
        "reflexes.maxCreatedPerGuild",
        s.reflexes.max_created_per_guild,
        0,
        1_000,
    );
}

/// `impulses`: tasks, ideas and the zone schedules are read in.
fn impulses(p: &mut Rules, s: &Settings) {
    let i = &s.impulses;
    p.range(
        "impulses.activeCheckSeconds",
        i.active_check_seconds,
        1,
        3_600,
    );
    p.range("impulses.idleCheckSeconds", i.idle_check_seconds, 1, 3_600);
    p.range("impulses.ideaIdleMinutes", i.idea_idle_minutes, 1, 10_080);
    p.range(
        "impulses.maxOpenTasksPerPerson",
        i.max_open_tasks_per_person,
        1,
        1_000,
    );
    if i.timezone.parse::<chrono_tz::Tz>().is_err() {
        p.push(
            "impulses.timezone",
            format!(
                "must be an IANA timezone such as \"UTC\" or \"Europe/Berlin\", got {:?}",
                i.timezone
            ),
        );
    }
}

/// `garden`: the cycle's interval bounds and limits.
fn garden(p: &mut Rules, s: &Settings) {
    let g = &s.garden;
    p.range(
        "garden.minIntervalMinutes",
        g.min_interval_minutes,
        1,
        10_080,
    );
    p.range(
        "garden.maxIntervalMinutes",
        g.max_interval_minutes,
        1,
        10_080,
    );
    if g.max_interval_minutes < g.min_interval_minutes {
        p.push(
            "garden.maxIntervalMinutes",
            format!(
                "must be at least garden.minIntervalMinutes ({}), got {}",
                g.min_interval_minutes, g.max_interval_minutes
            ),
        );
    } else if !(g.min_interval_minutes..=g.max_interval_minutes)
        .contains(&g.default_interval_minutes)
    {
        p.push(
            "garden.defaultIntervalMinutes",
            format!(
                "must be between garden.minIntervalMinutes ({}) and garden.maxIntervalMinutes ({}), got {}",
                g.min_interval_minutes, g.max_interval_minutes, g.default_interval_minutes
            ),
        );
    }
    p.range("garden.warmupCycles", g.warmup_cycles, 0, 1_000);
    p.range(
        "garden.confidenceHalfLifeDays",
        g.confidence_half_life_days,
        1,
        3_650,
    );
    p.range(
        "garden.cleanCyclesToShorten",
        g.clean_cycles_to_shorten,
        1,
        100,
    );
    p.range(
        "garden.idleHoursForMoreOften",
        g.idle_hours_for_more_often,
        1,
        168,
    );
    p.range("garden.activeMultiplier", g.active_multiplier, 3, 5);
    p.range("garden.maxPassSeconds", g.max_pass_seconds, 1, 3_600);
    p.range("garden.maxCandidates", g.max_candidates, 0, 100);
}

/// `voice.speech`: answering aloud needs an endpoint, and its bounds.
fn speech(p: &mut Rules, s: &crate::settings::SpeechSettings) {
    if s.enabled && s.base_url.trim().is_empty() {
        p.push(
            "voice.speech.baseUrl",
            "voice.speech.enabled is true, so it needs a text-to-speech endpoint: an http:// or https:// …/v1 serving /audio/speech",
        );
    }
    p.url("voice.speech.baseUrl", &s.base_url, true);
    p.range("voice.speech.maxSeconds", s.max_seconds, 1, 300);
    p.range(
        "voice.speech.maxSecondsPerDay",
        s.max_seconds_per_day,
        0,
        86_400,
    );
    p.range("voice.speech.timeoutSeconds", s.timeout_seconds, 1, 600);
}

/// `voice`: listening, utterance bounds, links and channels to join.
fn voice(p: &mut Rules, s: &Settings) {
    let v = &s.voice;
    p.url(
        "voice.transcription.baseUrl",
        &v.transcription.base_url,
        true,
    );
    p.range(
        "voice.transcription.maxConcurrent",
        v.transcription.max_concurrent,
        1,
        16,
    );
    p.range(
        "voice.transcription.timeoutSeconds",
        v.transcription.timeout_seconds,
        1,
        600,
    );
    speech(p, &v.speech);
    p.range("voice.silenceHangoverMs", v.silence_hangover_ms, 100, 5_000);
    p.range("voice.maxUtteranceSeconds", v.max_utterance_seconds, 1, 120);
    p.range("voice.minUtteranceMs", v.min_utterance_ms, 0, 10_000);
    if u64::from(v.min_utterance_ms) >= u64::from(v.max_utterance_seconds) * 1_000 {
        p.push(
            "voice.minUtteranceMs",
            format!(
                "must be shorter than voice.maxUtteranceSeconds ({} s), got {} ms",
                v.max_utterance_seconds, v.min_utterance_ms
            ),
        );
    }
    p.range("voice.energyThreshold", v.energy_threshold, 1, 32_767);
    p.range("voice.queueCapacity", v.queue_capacity, 1, 1_000);
    for (idx, link) in v.links.iter().enumerate() {
        if link.voice_channel_id.get() == 0 || link.text_channel_id.get() == 0 {
            p.push(
                format!("voice.links[{idx}]"),
                "needs both voiceChannelId and textChannelId (Discord channel ids)",
            );
        }
    }
    for (idx, voice) in v.auto_join_channel_ids.iter().enumerate() {
        if !v.links.iter().any(|l| l.voice_channel_id == *voice) {
            p.push(
                format!("voice.autoJoinChannelIds[{idx}]"),
                format!("{voice} has no entry in voice.links: add {{\"voiceChannelId\": \"{voice}\", \"textChannelId\": …}} so its transcripts have a text channel"),
            );
        }
    }
}

/// `dashboard`: an address it can listen on.
fn dashboard(p: &mut Rules, s: &Settings) {
    if let Err(e) = s.dashboard.address() {
        p.push("dashboard.bind", e.to_string());
    }
}

/// Each limit in a sane range, and each no larger than the one containing it
/// (a message sits in a section, a section and a tool result in the request).
fn attachments(p: &mut Rules, a: &super::schema::AttachmentSettings) {
    let at = |key: &str| format!("discord.attachments.{key}");
    // Discord's own upload ceiling (a level-3 boosted server) is 100 MiB.
    p.range(
        &at("maxImageBytes"),
        a.max_image_bytes,
        1_024,
        100 * 1024 * 1024,
    );
    // Anthropic takes up to 100 images a request, OpenAI-compatible servers fewer.
    p.range(&at("maxImages"), a.max_images, 0, 20);
    // 100 megapixels decode to 400 MB; the limit is what one decode may allocate.
    p.range(
        &at("maxImagePixels"),
        a.max_image_pixels,
        10_000,
        100_000_000,
    );
    // Below 64 px nothing is recognisable; 8,000 is Anthropic's ceiling.
    p.range(&at("maxImageSide"), a.max_image_side, 64, 8_000);
    p.range(
        &at("maxTextFileBytes"),
        a.max_text_file_bytes,
        0,
        10_000_000,
    );
    p.range(&at("maxTextFiles"), a.max_text_files, 0, 20);
}

fn prompt_limits(p: &mut Rules, l: &super::schema::PromptLimits) {
    const PATH: &str = "executive.promptLimits";
    p.range(
        &format!("{PATH}.messageChars"),
        l.message_chars,
        200,
        100_000,
    );
    p.range(
        &format!("{PATH}.toolResultChars"),
        l.tool_result_chars,
        500,
        1_000_000,
    );
    p.range(
        &format!("{PATH}.sectionChars"),
        l.section_chars,
        1_000,
        1_000_000,
    );
    p.range(
        &format!("{PATH}.totalChars"),
        l.total_chars,
        4_000,
        4_000_000,
    );
    for (path, value, outer, outer_value) in [
        (
            "messageChars",
            l.message_chars,
            "sectionChars",
            l.section_chars,
        ),
        ("sectionChars", l.section_chars, "totalChars", l.total_chars),
        (
            "toolResultChars",
            l.tool_result_chars,
            "totalChars",
            l.total_chars,
        ),
    ] {
        if value > outer_value {
            p.push(
                format!("{PATH}.{path}"),
                format!("must be at most {PATH}.{outer} ({outer_value}), got {value}"),
            );
        }
    }
}

/// `feeds`: rates and the summary's cut. The default template's
/// placeholders are checked where it is used (`/feeds add` names the key):
/// the template language lives in `feeds`, above settings.
fn feeds(p: &mut Rules, s: &Settings) {
    let f = &s.feeds;
    p.range(
        "feeds.fetchIntervalMinutes",
        f.fetch_interval_minutes,
        5,
        1_440,
    );
    p.range("feeds.maxPerFeedPerHour", f.max_per_feed_per_hour, 1, 100);
    p.range(
        "feeds.maxPerGuildPerHour",
        f.max_per_guild_per_hour,
        1,
        1_000,
    );
    p.range("feeds.pauseAfterFailures", f.pause_after_failures, 1, 1_000);
    p.range("feeds.summaryChars", f.summary_chars, 0, 1_500);
    p.range(
        "feeds.maxSubscriptionsPerGuild",
        f.max_subscriptions_per_guild,
        0,
        1_000,
    );
    if f.allowed_role_mentions.len() > 50 {
        p.push(
            "feeds.allowedRoleMentions",
            format!("at most 50 roles, got {}", f.allowed_role_mentions.len()),
        );
    }
    p.non_empty("feeds.defaultTemplate", &f.default_template);
    p.max_len("feeds.defaultTemplate", &f.default_template, 2_000);
}

/// Accumulates semantic problems; one small method per kind of rule.
#[derive(Default)]
struct Rules(Vec<Problem>);

impl Rules {
    fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem::new(path, message));
    }

    fn range<T: Into<u64> + Copy>(&mut self, path: &str, value: T, lo: u64, hi: u64) {
        let v = value.into();
        if v < lo || v > hi {
            self.push(path, format!("must be between {lo} and {hi}, got {v}"));
        }
    }

    fn fraction(&mut self, path: &str, value: f64) {
        if !(0.0..=1.0).contains(&value) {
            self.push(path, format!("must be between 0 and 1, got {value}"));
        }
    }

    fn non_empty(&mut self, path: &str, value: &str) {
        if value.trim().is_empty() {
            self.push(path, "must not be empty");
        }
    }

    fn max_len(&mut self, path: &str, value: &str, max: usize) {
        let n = value.chars().count();
        if n > max {
            self.push(path, format!("must be at most {max} characters, got {n}"));
        }
    }

    fn one_of(&mut self, path: &str, value: &str, allowed: &[&str]) {
        if !allowed.contains(&value) {
            self.push(
                path,
                format!("must be one of {}, got {value:?}", allowed.join(", ")),
            );
        }
    }

    fn url(&mut self, path: &str, value: &str, may_be_empty: bool) {
        if value.is_empty() {
            if !may_be_empty {
                self.push(
                    path,
                    "must be an http:// or https:// URL, got an empty string",
                );
            }
            return;
        }
        match url::Url::parse(value) {
            Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => {}
            _ => self.push(
                path,
                format!("must be an http:// or https:// URL, got {value:?}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(v: Value) -> Vec<String> {
        validate(&v).1.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn attachment_origins_are_a_few_origins_each_alone() {
        let (s, found) = validate(&json!({"discord": {"attachmentOrigins": [
            "https://files.example", "http://10.0.0.5:8081/"]}}));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(s.discord.attachment_origins.len(), 2);
        let found = problems(json!({"discord": {"attachmentOrigins": [
            "https://files.example/attachments", "ftp://files.example", "files.example",
            "https://user:pw@files.example", "https://files.example?x=1"]}}));
        assert_eq!(
            found,
            [
                "discord.attachmentOrigins[0]: must be an http:// or https:// origin — a scheme, a host and an optional port, nothing after, like \"https://files.example\" — got \"https://files.example/attachments\" (it has a path, query or fragment)",
                "discord.attachmentOrigins[1]: must be an http:// or https:// origin — a scheme, a host and an optional port, nothing after, like \"https://files.example\" — got \"ftp://files.example\" (not an http:// or https:// address with a host)",
                "discord.attachmentOrigins[2]: must be an http:// or https:// origin — a scheme, a host and an optional port, nothing after, like \"https://files.example\" — got \"files.example\" (not a URL)",
                "discord.attachmentOrigins[3]: must be an http:// or https:// origin — a scheme, a host and an optional port, nothing after, like \"https://files.example\" — got \"https://user:pw@files.example\" (it holds credentials)",
                "discord.attachmentOrigins[4]: must be an http:// or https:// origin — a scheme, a host and an optional port, nothing after, like \"https://files.example\" — got \"https://files.example?x=1\" (it has a path, query or fragment)",
            ]
        );
        let many: Vec<String> = (0..=MAX_ATTACHMENT_ORIGINS)
            .map(|i| format!("https://files{i}.example"))
            .collect();
        assert_eq!(
            problems(json!({"discord": {"attachmentOrigins": many}})),
            ["discord.attachmentOrigins: has 17 entries; at most 16 are allowed"]
        );
    }

    #[test]
    fn a_rate_limiting_proxy_without_a_proxy_url_is_warned_about() {
        let (s, problems) = validate(&json!({"discord": {"restProxyHandlesRateLimits": true}}));
        assert!(problems.is_empty(), "{problems:?}");
        let w: Vec<String> = warnings(&s).iter().map(|p| p.to_string()).collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("discord.restProxyHandlesRateLimits: ignored"));
        let (proxied, _) = validate(&json!({"discord": {
            "apiBaseUrl": "http://127.0.0.1:8080", "restProxyHandlesRateLimits": true}}));
        assert!(warnings(&proxied).is_empty());
    }

    #[test]
    fn x_and_hacker_news_keys_without_their_switch_are_warned_about() {
        let (s, problems) = validate(&json!({"initiative": {"discovery": {
            "xHandles": ["@rustlang"],
            "hackerNewsBaseUrl": "http://127.0.0.1:9"
        }}}));
        assert!(problems.is_empty(), "{problems:?}");
        let w: Vec<String> = warnings(&s).iter().map(|p| p.to_string()).collect();
        assert_eq!(
            w,
            [
                "initiative.discovery.xHandles: ignored while initiative.discovery.sources.x is false; set it to true to use it",
                "initiative.discovery.hackerNewsBaseUrl: ignored while initiative.discovery.sources.hackerNews is false; set it to true to use it",
            ]
        );
        let (on, _) = validate(&json!({"initiative": {"discovery": {
            "sources": {"x": true, "hackerNews": true},
            "xHandles": ["@rustlang"],
            "xBridgeBaseUrl": "https://rsshub.example",
            "hackerNewsBaseUrl": "http://127.0.0.1:9"
        }}}));
        assert!(warnings(&on).is_empty());
        assert!(warnings(&Settings::default()).is_empty());
        let mut old = Settings::default();
        old.discord.allow_dms = Some(false);
        let w: Vec<String> = warnings(&old).iter().map(|p| p.to_string()).collect();
        assert_eq!(
            w,
            [
                "discord.allowDms: is the older switch for direct messages and false turns them \
              off whatever discord.dms says; remove it and set discord.dms (off, open, \
              allowlist or pairing) instead"
            ]
        );
        assert_eq!(old.discord.dm_policy(), crate::settings::DmPolicy::Off);
        old.discord.allow_dms = Some(true);
        old.discord.dms = crate::settings::DmPolicy::Allowlist;
        assert_eq!(
            old.discord.dm_policy(),
            crate::settings::DmPolicy::Allowlist
        );
    }

    #[test]
    fn prices_take_any_model_name_and_a_bad_one_is_named_with_the_rest_kept() {
        let (s, found) = validate(&json!({"executive": {"prices": {
            "qwen2.5:14b": {"inputPerMillion": 0.1, "outputPerMillion": 0.2}
        }}}));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(s.executive.prices["qwen2.5:14b"].output_per_million, 0.2);

        let (s, found) = validate(&json!({
            "bot": {"name": "kept"},
            "executive": {"prices": {"gpt-5.2": {"inputPerMillion": -1, "outputPerMillion": 2}}}
        }));
        let said: Vec<String> = found.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            said,
            [
                "executive.prices.\"gpt-5.2\".inputPerMillion: expected US$ per million tokens (a number of 0 or more), got -1"
            ]
        );
        assert!(s.executive.prices.is_empty());
        assert_eq!(s.bot.name, "kept", "the rest of the settings stand");
        assert_eq!(
            problems(json!({"executive": {"prices": {"m": {"input": 1}}}})),
            [
                "executive.prices.\"m\".input: unknown setting: a price has inputPerMillion and outputPerMillion"
            ]
        );
    }

    #[test]
    fn vision_is_a_switch_or_auto_and_attachment_limits_have_ranges() {
        let (s, found) = validate(&json!({"executive": {"roles": {
            "reply": {"vision": true}, "ambient": {"vision": false}, "reflex": {"vision": "auto"}}}}));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(
            s.executive.roles.reply.vision,
            super::super::schema::Vision::On
        );
        assert_eq!(
            s.executive.roles.ambient.vision,
            super::super::schema::Vision::Off
        );
        assert_eq!(
            s.executive.roles.reflex.vision,
            super::super::schema::Vision::Auto
        );
        assert_eq!(
            problems(json!({"executive": {"roles": {"reply": {"vision": "yes"}}}})),
            [
                "executive.roles.reply.vision: expected true, false or \"auto\" (decided from the model's name), got the text \"yes\""
            ]
        );
        assert_eq!(
            problems(json!({"discord": {"attachments": {"maxImageSide": 10, "maxImages": 50}}})),
            [
                "discord.attachments.maxImages: must be between 0 and 20, got 50",
                "discord.attachments.maxImageSide: must be between 64 and 8000, got 10",
            ]
        );
    }

    #[test]
    fn the_dm_policy_and_pairing_codes_are_checked() {
        assert_eq!(
            problems(json!({"discord": {"pairingCodeMinutes": 0}})),
            ["discord.pairingCodeMinutes: must be between 1 and 10080, got 0"]
        );
        assert_eq!(
            problems(json!({"discord": {"dms": "friends"}})).len(),
            1,
            "an unknown policy is a problem"
        );
        assert_eq!(
            problems(json!({"discord": {"dms": "pairing", "dmAllowlist": ["12"]}})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(problems(defaults_tree()), Vec::<String>::new());
        assert_eq!(problems(json!({})), Vec::<String>::new());
    }

    #[test]
    fn out_of_range_names_path_and_valid_range() {
        assert_eq!(
            problems(json!({"initiative": {"text": {"eagerness": 150}}})),
            vec!["initiative.text.eagerness: must be between 0 and 100, got 150"]
        );
    }

    #[test]
    fn a_departed_servers_grace_is_zero_to_ten_years_of_days() {
        let days = |v: Value| problems(json!({"storage": {"retention": {"departedGuildDays": v}}}));
        assert!(days(json!(0)).is_empty(), "0: removed at once");
        assert!(days(json!(3650)).is_empty());
        assert_eq!(
            days(json!(3651)),
            vec!["storage.retention.departedGuildDays: must be between 0 and 3650, got 3651"]
        );
        assert_eq!(days(json!(-1)).len(), 1, "{:?}", days(json!(-1)));
    }

    #[test]
    fn prompt_limits_refuse_zero_absurd_and_inverted_values() {
        let limits = |v: Value| problems(json!({"executive": {"promptLimits": v}}));
        assert_eq!(
            limits(json!({"messageChars": 0})),
            vec!["executive.promptLimits.messageChars: must be between 200 and 100000, got 0"]
        );
        assert_eq!(
            limits(json!({"totalChars": 4_000_000_000u64})),
            vec![
                "executive.promptLimits.totalChars: must be between 4000 and 4000000, got 4000000000"
            ]
        );
        assert_eq!(
            limits(json!({"messageChars": 30_000, "sectionChars": 20_000})),
            vec![
                "executive.promptLimits.messageChars: must be at most executive.promptLimits.sectionChars (20000), got 30000"
            ]
        );
    }

    #[test]
    fn every_problem_is_collected_and_bad_keys_fall_back_to_defaults() {
        let (settings, problems) = validate(&json!({
            "initiative": {"text": {"eagernes": 10, "maxPostsPerDay": "ten", "execution": "fast"}},
            "permissions": {"replies": {"blockedUserIds": ["bob"], "maxMessagesPerHour": -3}},
            "garden": {"minIntervalMinutes": 50, "maxIntervalMinutes": 10}
        }));
        let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(text.len(), 6, "{text:#?}");
        assert!(text.contains(&"initiative.text.eagernes: unknown setting; did you mean initiative.text.eagerness?".to_string()), "{text:#?}");
        assert!(
            text.iter()
                .any(|t| t.starts_with("initiative.text.maxPostsPerDay: expected a whole number")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|t| t.starts_with("initiative.text.execution: unknown variant `fast`")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|t| t
                    .starts_with("permissions.replies.blockedUserIds[0]: expected a Discord id")),
            "{text:#?}"
        );
        assert!(text.iter().any(|t| t.starts_with("permissions.replies.maxMessagesPerHour: expected a whole number of 0 or more, got -3")), "{text:#?}");
        assert!(
            text.iter()
                .any(|t| t.starts_with("garden.maxIntervalMinutes: must be at least")),
            "{text:#?}"
        );
        assert_eq!(settings.initiative.text.max_posts_per_day, 6);
    }

    #[test]
    fn misplaced_key_points_to_its_real_section() {
        assert_eq!(
            problems(json!({"initiative": {"minMinutesBetweenPosts": 5}})),
            vec![
                "initiative.minMinutesBetweenPosts: unknown setting; did you mean initiative.text.minMinutesBetweenPosts?"
            ]
        );
    }

    #[test]
    fn secrets_in_the_file_are_sent_to_the_environment() {
        let p = problems(json!({"discord": {"token": "abc"}}));
        assert_eq!(p.len(), 1);
        assert!(
            p[0].contains("set the DISCORD_TOKEN environment variable"),
            "{p:?}"
        );
        assert!(
            !p[0].contains("abc"),
            "the secret itself must not be echoed: {p:?}"
        );
    }

    #[test]
    fn answering_aloud_needs_an_endpoint_its_bounds_and_its_key_from_the_environment() {
        let p = problems(json!({"voice": {"speech": {"enabled": true, "maxSeconds": 0}}}));
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(
            p.iter().any(|t| t.starts_with(
                "voice.speech.baseUrl: voice.speech.enabled is true, so it needs a text-to-speech endpoint"
            )),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|t| t.starts_with("voice.speech.maxSeconds: must be")),
            "{p:?}"
        );
        let p = problems(json!({"voice": {"speech": {"apiKey": "sk-speech"}}}));
        assert!(
            p.iter()
                .any(|t| t.contains("set the SPEECH_API_KEY environment variable")),
            "{p:?}"
        );
    }

    #[test]
    fn formats_are_checked() {
        let p = problems(json!({
            "initiative": {"discovery": {"rssFeeds": ["not a url"], "redditSubreddits": ["r/rust", "bad name!"], "youtubeChannelIds": ["UCxyz"]}},
            "impulses": {"timezone": "Mars/Olympus"}
        }));
        assert_eq!(p.len(), 4, "{p:#?}");
        assert!(
            p.iter()
                .any(|t| t.starts_with("initiative.discovery.rssFeeds[0]: must be an http"))
        );
        assert!(
            p.iter()
                .any(|t| t.starts_with("initiative.discovery.redditSubreddits[1]"))
        );
        assert!(
            p.iter()
                .any(|t| t.starts_with("initiative.discovery.youtubeChannelIds[0]"))
        );
        assert!(p.iter().any(|t| t.starts_with("impulses.timezone")));
    }

    #[test]
    fn the_dashboard_binds_to_an_ip_address_and_port() {
        assert!(problems(json!({"dashboard": {"bind": "0.0.0.0:9000"}})).is_empty());
        assert!(problems(json!({"dashboard": {"bind": "[::1]:0"}})).is_empty());
        let p = problems(json!({"dashboard": {"bind": "localhost"}}));
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(
            p[0].starts_with(
                "dashboard.bind: must be an IP address and a port, such as \"127.0.0.1:8377\""
            ) && p[0].ends_with("got \"localhost\""),
            "{}",
            p[0]
        );
    }

    #[test]
    fn metrics_bind_only_to_loopback() {
        assert!(problems(json!({"metrics": {"bind": ""}})).is_empty());
        assert!(problems(json!({"metrics": {"bind": "127.0.0.1:9184"}})).is_empty());
        assert!(problems(json!({"metrics": {"bind": "[::1]:0"}})).is_empty());
        for bad in ["0.0.0.0:9184", "192.168.1.5:9184", "localhost:9184"] {
            let p = problems(json!({"metrics": {"bind": bad}}));
            assert_eq!(p.len(), 1, "{p:#?}");
            assert!(
                p[0].starts_with("metrics.bind: must be empty (off) or a loopback IP address")
                    && p[0].ends_with(&format!("got {bad:?}")),
                "{}",
                p[0]
            );
        }
    }

    #[test]
    fn non_object_documents_are_refused() {
        assert_eq!(problems(json!([1, 2])).len(), 1);
    }

    #[test]
    fn long_text_and_long_lists_are_refused_and_fall_back_to_defaults() {
        let persona = "x".repeat(MAX_PERSONA_CHARS + 1);
        let ids: Vec<u64> = (1..=MAX_LIST_ITEMS as u64 + 1).collect();
        let feed = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        let (s, p) = validate(&json!({
            "bot": {"persona": persona},
            "permissions": {"replies": {"blockedUserIds": ids}},
            "initiative": {"discovery": {"rssFeeds": ["https://ok.example/feed", feed]}},
            "impulses": {"timezone": "E".repeat(MAX_TEXT_CHARS + 1)},
        }));
        let p: Vec<String> = p.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            p,
            vec![
                "bot.persona: is 4001 characters long; at most 4000 are allowed".to_string(),
                "permissions.replies.blockedUserIds: has 1001 entries; at most 1000 are allowed"
                    .to_string(),
                "initiative.discovery.rssFeeds: entry 1 is 2068 characters long; at most 2048 are allowed"
                    .to_string(),
                "impulses.timezone: is 257 characters long; at most 256 are allowed".to_string(),
            ]
        );
        assert_eq!(s.bot.persona, Settings::default().bot.persona);
        assert!(s.permissions.replies.blocked_user_ids.is_empty());
    }

    #[test]
    fn text_and_lists_at_their_limits_are_accepted() {
        let ids: Vec<u64> = (1..=MAX_LIST_ITEMS as u64).collect();
        let p = problems(json!({
            "bot": {"persona": "x".repeat(MAX_PERSONA_CHARS)},
            "permissions": {"replies": {"blockedUserIds": ids}},
        }));
        assert_eq!(p, Vec::<String>::new());
    }
}
