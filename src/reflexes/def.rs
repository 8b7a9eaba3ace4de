//! Reflex definitions: the seed's YAML format, parsed and checked.
//!
//! ```yaml
//! name: summarize-url
//! description: Fetch a URL and return a summary
//! level: 2            # 0 pattern only, 1 heuristics, 2 small model, 3 may escalate
//! priority: 60        # higher runs first
//! trigger:
//!   pattern: "summarize (https?://\\S+)"
//!   extract: [url]
//!   addressed: true   # only when the message addresses the bot
//! pipeline:
//!   - action: fetch_url
//!     input: $url
//!     output: content
//!   - action: llm_prompt
//!     prompt: "Summarize in 2-3 sentences: {{content}}"
//!     output: summary
//!   - action: reply
//!     message: "{{summary}}"
//! ```
//!
//! A trigger is a regex `pattern` (with `extract` names for its groups), an
//! `event` (`member_join`, or `reaction` with an optional `emoji`), or a
//! `classifier` question the small model answers yes or no (it needs a
//! `pattern` prefilter or `addressed: true`, so it is not asked about every
//! message). Every problem is reported as `file:line: reason`, and the level
//! must cover what the pipeline does: a level-0 reflex cannot fetch, a
//! level-1 one cannot ask a model.

use std::collections::{BTreeMap, HashSet};

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::ids::GuildId;
use crate::memory::fact::{FactKind, Importance};

/// Variables every pipeline can use.
pub const BUILTIN_VARS: &[&str] = &[
    "message",
    "author",
    "author_id",
    "channel",
    "guild",
    "bot",
    "now",
    "today",
    "emoji",
    "user",
    "user_id",
];

/// `{{name}}` (spaces allowed inside) and, for a whole value, `$name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template(pub String);

impl Template {
    pub fn vars(&self) -> Vec<String> {
        let t = self.0.trim();
        if let Some(name) = t.strip_prefix('$') {
            if is_ident(name) {
                return vec![name.to_string()];
            }
        }
        let mut out = Vec::new();
        let mut rest = self.0.as_str();
        while let Some(start) = rest.find("{{") {
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else { break };
            out.push(after[..end].trim().to_string());
            rest = &after[end + 2..];
        }
        out
    }

    pub fn render(&self, vars: &BTreeMap<String, String>) -> String {
        let t = self.0.trim();
        if let Some(name) = t.strip_prefix('$') {
            if is_ident(name) {
                return vars.get(name).cloned().unwrap_or_default();
            }
        }
        let mut out = String::with_capacity(self.0.len());
        let mut rest = self.0.as_str();
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                out.push_str(&rest[start..]);
                return out;
            };
            out.push_str(
                vars.get(after[..end].trim())
                    .map(String::as_str)
                    .unwrap_or(""),
            );
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        out
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    MemberJoin,
    Reaction { emoji: Option<String> },
}

#[derive(Clone, Debug)]
pub enum Trigger {
    Pattern {
        regex: Regex,
        extract: Vec<String>,
        addressed: Option<bool>,
    },
    Event(Event),
    Classifier {
        question: String,
        prefilter: Option<(Regex, Vec<String>)>,
        addressed: Option<bool>,
    },
}

impl Trigger {
    /// The regex to put in the reflex set, if this trigger matches text.
    pub fn regex(&self) -> Option<&Regex> {
        match self {
            Trigger::Pattern { regex, .. } => Some(regex),
            Trigger::Classifier {
                prefilter: Some((regex, _)),
                ..
            } => Some(regex),
            _ => None,
        }
    }

    pub fn addressed(&self) -> Option<bool> {
        match self {
            Trigger::Pattern { addressed, .. } | Trigger::Classifier { addressed, .. } => {
                *addressed
            }
            Trigger::Event(_) => None,
        }
    }

    pub fn extract(&self) -> &[String] {
        match self {
            Trigger::Pattern { extract, .. }
            | Trigger::Classifier {
                prefilter: Some((_, extract)),
                ..
            } => extract,
            _ => &[],
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    FetchUrl {
        url: Template,
        output: String,
    },
    ReadFile {
        path: Template,
        output: String,
    },
    WriteFile {
        path: Template,
        content: Template,
    },
    LlmPrompt {
        prompt: Template,
        output: String,
    },
    ExtractJson {
        input: Template,
        path: String,
        output: String,
    },
    GithubApi {
        path: Template,
        output: String,
    },
    Reply {
        message: Template,
        channel: Option<String>,
    },
    React {
        emoji: Template,
    },
    AddTask {
        text: Template,
        due: Template,
        message: Option<Template>,
    },
    AddIdea {
        text: Template,
    },
    Remember {
        text: Template,
        kind: FactKind,
        importance: Option<Importance>,
    },
    Log {
        message: Template,
    },
    JournalSummary {
        since: String,
        output: String,
    },
    /// Hush the channel the message came from (`duration`: "an hour", "2h";
    /// empty: an hour); `output` gets the confirmation, or why not.
    Hush {
        duration: Template,
        output: String,
    },
    /// End the hush on that channel (its maker only, in words).
    Unhush {
        output: String,
    },
    Escalate {
        reason: Template,
    },
    Pass {
        reason: Template,
    },
}

pub const ACTIONS: &[&str] = &[
    "fetch_url",
    "read_file",
    "write_file",
    "llm_prompt",
    "extract_json",
    "github_api",
    "reply",
    "react",
    "add_task",
    "add_idea",
    "remember",
    "log",
    "journal_summary",
    "hush",
    "unhush",
    "escalate",
    "pass",
];

impl Action {
    /// The lowest reflex level that may do this.
    pub fn level(&self) -> u8 {
        match self {
            Action::LlmPrompt { .. } => 2,
            Action::Escalate { .. } => 3,
            Action::FetchUrl { .. }
            | Action::ReadFile { .. }
            | Action::WriteFile { .. }
            | Action::ExtractJson { .. }
            | Action::GithubApi { .. }
            | Action::JournalSummary { .. }
            | Action::Hush { .. }
            | Action::Unhush { .. } => 1,
            _ => 0,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Action::FetchUrl { .. } => "fetch_url",
            Action::ReadFile { .. } => "read_file",
            Action::WriteFile { .. } => "write_file",
            Action::LlmPrompt { .. } => "llm_prompt",
            Action::ExtractJson { .. } => "extract_json",
            Action::GithubApi { .. } => "github_api",
            Action::Reply { .. } => "reply",
            Action::React { .. } => "react",
            Action::AddTask { .. } => "add_task",
            Action::AddIdea { .. } => "add_idea",
            Action::Remember { .. } => "remember",
            Action::Log { .. } => "log",
            Action::JournalSummary { .. } => "journal_summary",
            Action::Hush { .. } => "hush",
            Action::Unhush { .. } => "unhush",
            Action::Escalate { .. } => "escalate",
            Action::Pass { .. } => "pass",
        }
    }

    fn templates(&self) -> Vec<&Template> {
        match self {
            Action::FetchUrl { url, .. } => vec![url],
            Action::ReadFile { path, .. } => vec![path],
            Action::WriteFile { path, content } => vec![path, content],
            Action::LlmPrompt { prompt, .. } => vec![prompt],
            Action::ExtractJson { input, .. } => vec![input],
            Action::GithubApi { path, .. } => vec![path],
            Action::Reply { message, .. } => vec![message],
            Action::React { emoji } => vec![emoji],
            Action::AddTask { text, due, message } => {
                let mut v = vec![text, due];
                v.extend(message.as_ref());
                v
            }
            Action::AddIdea { text } | Action::Remember { text, .. } => vec![text],
            Action::Log { message } => vec![message],
            Action::JournalSummary { .. } | Action::Unhush { .. } => vec![],
            Action::Hush { duration, .. } => vec![duration],
            Action::Escalate { reason } | Action::Pass { reason } => vec![reason],
        }
    }

    /// The variable this step sets, if any.
    pub fn output(&self) -> Option<&str> {
        match self {
            Action::FetchUrl { output, .. }
            | Action::ReadFile { output, .. }
            | Action::LlmPrompt { output, .. }
            | Action::ExtractJson { output, .. }
            | Action::GithubApi { output, .. }
            | Action::JournalSummary { output, .. }
            | Action::Hush { output, .. }
            | Action::Unhush { output } => Some(output),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Step {
    pub action: Action,
    pub line: u64,
}

#[derive(Clone, Debug)]
pub struct Reflex {
    pub name: String,
    pub description: String,
    pub level: u8,
    /// Higher runs first.
    pub priority: i32,
    pub trigger: Trigger,
    pub steps: Vec<Step>,
    /// Where it was defined, for messages.
    pub file: String,
    /// The line of its `name`.
    pub name_line: u64,
    /// Set for reflexes the executive wrote for one guild; they act only there.
    pub guild: Option<GuildId>,
}

impl Reflex {
    /// The name its statistics and journal lines go under.
    pub fn key(&self) -> String {
        match self.guild {
            Some(g) => format!("{}@{g}", self.name),
            None => self.name.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReflex {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    level: Option<Spanned<u8>>,
    #[serde(default)]
    priority: Option<i32>,
    trigger: Spanned<RawTrigger>,
    #[serde(default)]
    pipeline: Vec<Spanned<BTreeMap<String, Value>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrigger {
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    extract: Vec<String>,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    emoji: Option<String>,
    #[serde(default)]
    classifier: Option<String>,
    #[serde(default)]
    addressed: Option<bool>,
}

/// Parses and checks one reflex file; every problem is `file:line: reason`.
pub fn parse(file: &str, text: &str) -> Result<Reflex, Vec<String>> {
    let raw: RawReflex = serde_saphyr::from_str(text).map_err(|e| {
        let line = e.location().map(|l| l.line()).unwrap_or(0);
        let message = e.to_string();
        let first = message.lines().next().unwrap_or(&message).to_string();
        vec![format!("{file}:{line}: {first}")]
    })?;
    let mut problems = Vec::new();
    let at = |line: u64, msg: String| format!("{file}:{line}: {msg}");
    let name = raw.name.value.trim().to_string();
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        problems.push(at(
            raw.name.referenced.line(),
            format!("name {name:?} must be 1–64 letters, digits, - or _"),
        ));
    }
    let tline = raw.trigger.referenced.line();
    let trigger = match trigger(&raw.trigger.value) {
        Ok(t) => Some(t),
        Err(e) => {
            problems.push(at(tline, e));
            None
        }
    };
    let mut defined: HashSet<String> = BUILTIN_VARS.iter().map(|s| s.to_string()).collect();
    if let Some(t) = &trigger {
        defined.extend(t.extract().iter().cloned());
    }
    let mut steps = Vec::new();
    for raw_step in &raw.pipeline {
        let line = raw_step.referenced.line();
        match step(&raw_step.value) {
            Ok(action) => {
                for t in action.templates() {
                    for var in t.vars() {
                        if !defined.contains(&var) {
                            problems.push(at(
                                line,
                                format!(
                                    "{} uses {{{{{var}}}}}, which is not defined before it",
                                    action.name()
                                ),
                            ));
                        }
                    }
                }
                if let Some(out) = action.output() {
                    if !is_ident(out) {
                        problems.push(at(
                            line,
                            format!("output {out:?} must be a plain name (letters, digits, _)"),
                        ));
                    }
                    defined.insert(out.to_string());
                }
                steps.push(Step { action, line });
            }
            Err(e) => problems.push(at(line, e)),
        }
    }
    if steps.is_empty() && problems.is_empty() {
        problems.push(at(
            raw.name.referenced.line(),
            "the pipeline is empty: give it at least one action".into(),
        ));
    }
    let needed = steps
        .iter()
        .map(|s| s.action.level())
        .chain(trigger.iter().map(|t| {
            if matches!(t, Trigger::Classifier { .. }) {
                2
            } else {
                0
            }
        }))
        .max()
        .unwrap_or(0);
    let level = match &raw.level {
        Some(l) if l.value > 3 => {
            problems.push(at(
                l.referenced.line(),
                format!("level must be 0, 1, 2 or 3, got {}", l.value),
            ));
            needed
        }
        Some(l) if l.value < needed => {
            let what = steps
                .iter()
                .find(|s| s.action.level() > l.value)
                .map(|s| s.action.name())
                .unwrap_or("a classifier trigger");
            problems.push(at(
                l.referenced.line(),
                format!("level {} is too low: {what} needs level {needed}", l.value),
            ));
            needed
        }
        Some(l) => l.value,
        None => needed,
    };
    if let (Some(Trigger::Event(Event::MemberJoin)), true) = (
        &trigger,
        steps.iter().any(|s| {
            matches!(
                &s.action,
                Action::Reply { channel: None, .. } | Action::React { .. }
            )
        }),
    ) {
        problems.push(at(
            tline,
            "a member_join has no message: reply needs a channel, and react cannot be used".into(),
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Reflex {
        name,
        description: raw.description,
        level,
        priority: raw.priority.unwrap_or(50),
        trigger: trigger.expect("no problems means a trigger"),
        steps,
        file: file.to_string(),
        name_line: raw.name.referenced.line(),
        guild: None,
    })
}

fn trigger(t: &RawTrigger) -> Result<Trigger, String> {
    let compile = |p: &str| -> Result<Regex, String> {
        Regex::new(p).map_err(|e| {
            format!(
                "the pattern does not compile: {}",
                e.to_string().lines().last().unwrap_or("")
            )
        })
    };
    let with_groups = |p: &str| -> Result<(Regex, Vec<String>), String> {
        let regex = compile(p)?;
        let groups = regex.captures_len() - 1;
        if t.extract.len() > groups {
            return Err(format!(
                "extract names {} values but the pattern has {groups} group(s)",
                t.extract.len()
            ));
        }
        if let Some(bad) = t.extract.iter().find(|n| !is_ident(n)) {
            return Err(format!("extract name {bad:?} must be a plain name"));
        }
        Ok((regex, t.extract.clone()))
    };
    match (&t.pattern, &t.event, &t.classifier) {
        (_, Some(_), Some(_)) | (Some(_), Some(_), None) => {
            Err("a trigger is a pattern, an event or a classifier, not several".into())
        }
        (Some(p), None, None) => {
            let (regex, extract) = with_groups(p)?;
            Ok(Trigger::Pattern {
                regex,
                extract,
                addressed: t.addressed,
            })
        }
        (None, Some(event), None) => match event.as_str() {
            "member_join" => Ok(Trigger::Event(Event::MemberJoin)),
            "reaction" => Ok(Trigger::Event(Event::Reaction {
                emoji: t.emoji.clone(),
            })),
            other => Err(format!(
                "unknown event {other:?}; use member_join or reaction"
            )),
        },
        (prefilter, None, Some(question)) => {
            if prefilter.is_none() && t.addressed != Some(true) {
                return Err("a classifier needs a pattern prefilter or addressed: true, so the model is not asked about every message".into());
            }
            Ok(Trigger::Classifier {
                question: question.clone(),
                prefilter: prefilter.as_deref().map(with_groups).transpose()?,
                addressed: t.addressed,
            })
        }
        (None, None, None) => Err("the trigger needs a pattern, an event or a classifier".into()),
    }
}

fn step(map: &BTreeMap<String, Value>) -> Result<Action, String> {
    let get = |key: &str| -> Option<String> {
        map.get(key).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    };
    let need = |key: &str, action: &str| get(key).ok_or_else(|| format!("{action} needs `{key}`"));
    let output = |action: &str| need("output", action);
    let action = get("action").ok_or("a pipeline step needs `action`")?;
    let allowed: &[&str] = match action.as_str() {
        "fetch_url" => &["input", "url", "output"],
        "read_file" => &["path", "output"],
        "write_file" => &["path", "content"],
        "llm_prompt" | "ollama_prompt" => &["prompt", "output", "model"],
        "extract_json" => &["input", "path", "output"],
        "github_api" => &["path", "output"],
        "reply" => &["message", "channel"],
        "react" => &["emoji"],
        "add_task" => &["text", "due", "message"],
        "add_idea" => &["text"],
        "remember" => &["text", "type", "importance"],
        "log" => &["message"],
        "journal_summary" => &["since", "output"],
        "hush" => &["duration", "output"],
        "unhush" => &["output"],
        "escalate" | "pass" => &["reason"],
        other => {
            return Err(format!(
                "unknown action {other:?}; the actions are {}",
                ACTIONS.join(", ")
            ));
        }
    };
    if let Some(extra) = map
        .keys()
        .find(|k| k.as_str() != "action" && !allowed.contains(&k.as_str()))
    {
        return Err(format!(
            "{action} does not take `{extra}` (it takes {})",
            allowed.join(", ")
        ));
    }
    let t = |s: String| Template(s);
    Ok(match action.as_str() {
        "fetch_url" => Action::FetchUrl {
            url: t(get("input")
                .or_else(|| get("url"))
                .ok_or("fetch_url needs `input` (the URL)")?),
            output: output("fetch_url")?,
        },
        "read_file" => Action::ReadFile {
            path: t(need("path", "read_file")?),
            output: output("read_file")?,
        },
        "write_file" => Action::WriteFile {
            path: t(need("path", "write_file")?),
            content: t(need("content", "write_file")?),
        },
        "llm_prompt" | "ollama_prompt" => Action::LlmPrompt {
            prompt: t(need("prompt", "llm_prompt")?),
            output: output("llm_prompt")?,
        },
        "extract_json" => {
            let path = need("path", "extract_json")?;
            serde_json_path::JsonPath::parse(&path)
                .map_err(|e| format!("`path` {path:?} is not a JSONPath: {e}"))?;
            Action::ExtractJson {
                input: t(need("input", "extract_json")?),
                path,
                output: output("extract_json")?,
            }
        }
        "github_api" => Action::GithubApi {
            path: t(need("path", "github_api")?),
            output: output("github_api")?,
        },
        "reply" => Action::Reply {
            message: t(need("message", "reply")?),
            channel: get("channel"),
        },
        "react" => Action::React {
            emoji: t(need("emoji", "react")?),
        },
        "add_task" => Action::AddTask {
            text: t(need("text", "add_task")?),
            due: t(need("due", "add_task")?),
            message: get("message").map(t),
        },
        "add_idea" => Action::AddIdea {
            text: t(need("text", "add_idea")?),
        },
        "remember" => Action::Remember {
            text: t(need("text", "remember")?),
            kind: get("type")
                .map(|k| FactKind::parse(&k))
                .transpose()?
                .unwrap_or(FactKind::Fact),
            importance: get("importance")
                .map(|i| Importance::parse(&i))
                .transpose()?,
        },
        "log" => Action::Log {
            message: t(need("message", "log")?),
        },
        "journal_summary" => Action::JournalSummary {
            since: get("since").unwrap_or_else(|| "today".into()),
            output: output("journal_summary")?,
        },
        "hush" => Action::Hush {
            duration: t(get("duration").unwrap_or_default()),
            output: output("hush")?,
        },
        "unhush" => Action::Unhush {
            output: output("unhush")?,
        },
        "escalate" => Action::Escalate {
            reason: t(get("reason").unwrap_or_else(|| "a reflex asked for the executive".into())),
        },
        _ => Action::Pass {
            reason: t(get("reason").unwrap_or_else(|| "not for this reflex".into())),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_example_parses() {
        let yaml = "name: summarize-url\ndescription: Fetch a URL and return a summary\ntrigger:\n  pattern: \"summarize (https?://\\\\S+)\"\n  extract: [url]\npipeline:\n  - action: fetch_url\n    input: $url\n    output: content\n  - action: ollama_prompt\n    model: qwen2.5:14b\n    prompt: \"Summarize in 2-3 sentences: {{content}}\"\n    output: summary\n  - action: reply\n    message: \"{{summary}}\"\n";
        let r = parse("summarize.yaml", yaml).unwrap();
        assert_eq!(r.level, 2, "an llm step makes it level 2");
        assert_eq!(r.steps.len(), 3);
        assert_eq!(r.steps[1].line, 10);
    }

    #[test]
    fn problems_name_file_and_line() {
        let yaml = "name: bad\nlevel: 0\ntrigger:\n  pattern: \"hi\"\npipeline:\n  - action: fetch_url\n    input: \"{{nowhere}}\"\n    output: page\n  - action: teleport\n";
        let problems = parse("bad.yaml", yaml).unwrap_err();
        assert!(
            problems.contains(
                &"bad.yaml:6: fetch_url uses {{nowhere}}, which is not defined before it"
                    .to_string()
            ),
            "{problems:#?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("bad.yaml:9: unknown action \"teleport\"")),
            "{problems:#?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("bad.yaml:2: level 0 is too low: fetch_url needs level 1")),
            "{problems:#?}"
        );
        let broken = parse("broken.yaml", "name: x\ntrigger: [unclosed\n").unwrap_err();
        assert!(broken[0].starts_with("broken.yaml:"), "{broken:?}");
        assert!(
            !broken[0].starts_with("broken.yaml:0:"),
            "the line is known: {broken:?}"
        );
    }

    #[test]
    fn templates_render_both_forms() {
        let vars: BTreeMap<String, String> = [
            ("url".to_string(), "https://x".to_string()),
            ("a".into(), "1".into()),
        ]
        .into();
        assert_eq!(Template("$url".into()).render(&vars), "https://x");
        assert_eq!(
            Template("go {{ url }} now {{a}}{{missing}}".into()).render(&vars),
            "go https://x now 1"
        );
        assert_eq!(Template("x {{a}} {{ b }}".into()).vars(), vec!["a", "b"]);
    }
}
