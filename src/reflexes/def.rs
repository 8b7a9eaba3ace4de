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
use crate::vocab::fact::{FactKind, FactParseError, Importance};

/// Variables every pipeline can use.
pub(crate) const BUILTIN_VARS: &[&str] = &[
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
    pub(crate) fn vars(&self) -> Vec<String> {
        let t = self.0.trim();
        if let Some(name) = t.strip_prefix('$')
            && is_ident(name)
        {
            return vec![name.to_string()];
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

    pub(crate) fn render(&self, vars: &BTreeMap<String, String>) -> String {
        let t = self.0.trim();
        if let Some(name) = t.strip_prefix('$')
            && is_ident(name)
        {
            return vars.get(name).cloned().unwrap_or_default();
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
    pub(crate) fn regex(&self) -> Option<&Regex> {
        match self {
            Trigger::Pattern { regex, .. } => Some(regex),
            Trigger::Classifier {
                prefilter: Some((regex, _)),
                ..
            } => Some(regex),
            _ => None,
        }
    }

    pub(crate) fn addressed(&self) -> Option<bool> {
        match self {
            Trigger::Pattern { addressed, .. } | Trigger::Classifier { addressed, .. } => {
                *addressed
            }
            Trigger::Event(_) => None,
        }
    }

    pub(crate) fn extract(&self) -> &[String] {
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

pub(crate) const ACTIONS: &[&str] = &[
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
    pub(crate) fn level(&self) -> u8 {
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

    pub(crate) fn name(&self) -> &'static str {
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
    pub(crate) fn output(&self) -> Option<&str> {
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
    pub(crate) fn key(&self) -> String {
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

/// One problem in a reflex file; [`parse`] reports each as `file:line: {this}`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DefError {
    /// The YAML itself did not read (its first line of explanation).
    #[error("{0}")]
    Yaml(String),
    #[error("name {0:?} must be 1–64 letters, digits, - or _")]
    BadName(String),
    #[error("a trigger is a pattern, an event or a classifier, not several")]
    SeveralTriggers,
    #[error("the trigger needs a pattern, an event or a classifier")]
    NoTrigger,
    /// `reason` is the last line of the regex crate's explanation.
    #[error("the pattern does not compile: {reason}")]
    BadPattern { reason: String },
    #[error("extract names {names} values but the pattern has {groups} group(s)")]
    TooManyExtracts { names: usize, groups: usize },
    #[error("extract name {0:?} must be a plain name")]
    BadExtractName(String),
    #[error("unknown event {0:?}; use member_join or reaction")]
    UnknownEvent(String),
    #[error(
        "a classifier needs a pattern prefilter or addressed: true, so the model is not asked about every message"
    )]
    UnguardedClassifier,
    #[error("a pipeline step needs `action`")]
    NoAction,
    #[error("unknown action {0:?}; the actions are {list}", list = ACTIONS.join(", "))]
    UnknownAction(String),
    #[error("{action} does not take `{key}` (it takes {list})", list = .allowed.join(", "))]
    ExtraKey {
        action: String,
        key: String,
        allowed: &'static [&'static str],
    },
    #[error("{action} needs `{key}`")]
    Missing {
        action: &'static str,
        key: &'static str,
    },
    #[error("fetch_url needs `input` (the URL)")]
    NoUrl,
    #[error("`path` {path:?} is not a JSONPath: {source}")]
    NotJsonPath {
        path: String,
        source: serde_json_path::ParseError,
    },
    /// A `remember` step's `type` or `importance`.
    #[error(transparent)]
    Memory(#[from] FactParseError),
    #[error("{action} uses {{{{{var}}}}}, which is not defined before it")]
    Undefined { action: &'static str, var: String },
    #[error("output {0:?} must be a plain name (letters, digits, _)")]
    BadOutput(String),
    #[error("the pipeline is empty: give it at least one action")]
    EmptyPipeline,
    #[error("level must be 0, 1, 2 or 3, got {0}")]
    BadLevel(u8),
    #[error("level {level} is too low: {what} needs level {needed}")]
    LevelTooLow {
        level: u8,
        what: &'static str,
        needed: u8,
    },
    #[error("a member_join has no message: reply needs a channel, and react cannot be used")]
    MemberJoinCannotAnswer,
}

/// Problems found so far, each with the line it is about.
type Problems = Vec<(u64, DefError)>;

/// Parses and checks one reflex file; every problem is `file:line: reason`.
pub(crate) fn parse(file: &str, text: &str) -> Result<Reflex, Vec<String>> {
    let raw: RawReflex = serde_saphyr::from_str(text).map_err(|e| {
        let line = e.location().map(|l| l.line()).unwrap_or(0);
        let message = e.to_string();
        let first = message.lines().next().unwrap_or(&message).to_string();
        vec![format!("{file}:{line}: {}", DefError::Yaml(first))]
    })?;
    let mut problems = Problems::new();
    let name_line = raw.name.referenced.line();
    let name = raw.name.value.trim().to_string();
    if !is_name(&name) {
        problems.push((name_line, DefError::BadName(name.clone())));
    }
    let tline = raw.trigger.referenced.line();
    let trigger = trigger(&raw.trigger.value)
        .map_err(|e| problems.push((tline, e)))
        .ok();
    let steps = pipeline(&raw.pipeline, trigger.as_ref(), &mut problems);
    if steps.is_empty() && problems.is_empty() {
        problems.push((name_line, DefError::EmptyPipeline));
    }
    let level = level(raw.level.as_ref(), &steps, trigger.as_ref(), &mut problems);
    if matches!(trigger, Some(Trigger::Event(Event::MemberJoin))) && answers_a_message(&steps) {
        problems.push((tline, DefError::MemberJoinCannotAnswer));
    }
    if !problems.is_empty() {
        return Err(problems
            .into_iter()
            .map(|(line, e)| format!("{file}:{line}: {e}"))
            .collect());
    }
    Ok(Reflex {
        name,
        description: raw.description,
        level,
        priority: raw.priority.unwrap_or(50),
        trigger: trigger.expect("no problems means a trigger"),
        steps,
        file: file.to_string(),
        name_line,
        guild: None,
    })
}

/// A reflex name is also a file name and a journal key, so it stays plain.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The pipeline's steps, in order; a step may only use variables the
/// trigger or an earlier step defined, so a typo is caught at load, not at
/// the moment the reflex fires.
fn pipeline(
    raw: &[Spanned<BTreeMap<String, Value>>],
    trigger: Option<&Trigger>,
    problems: &mut Problems,
) -> Vec<Step> {
    let mut defined: HashSet<String> = BUILTIN_VARS.iter().map(|s| s.to_string()).collect();
    if let Some(t) = trigger {
        defined.extend(t.extract().iter().cloned());
    }
    let mut steps = Vec::new();
    for raw_step in raw {
        let line = raw_step.referenced.line();
        let action = match step(&raw_step.value) {
            Ok(action) => action,
            Err(e) => {
                problems.push((line, e));
                continue;
            }
        };
        for var in action.templates().into_iter().flat_map(Template::vars) {
            if !defined.contains(&var) {
                let action = action.name();
                problems.push((line, DefError::Undefined { action, var }));
            }
        }
        if let Some(out) = action.output() {
            if !is_ident(out) {
                problems.push((line, DefError::BadOutput(out.to_string())));
            }
            defined.insert(out.to_string());
        }
        steps.push(Step { action, line });
    }
    steps
}

/// The reflex's level: what its steps and trigger need, and a declared level
/// below that is a problem (a level-0 reflex cannot fetch, a level-1 one
/// cannot ask a model), so the operator's cost ceiling is visible in the file.
fn level(
    declared: Option<&Spanned<u8>>,
    steps: &[Step],
    trigger: Option<&Trigger>,
    problems: &mut Problems,
) -> u8 {
    let classifier = matches!(trigger, Some(Trigger::Classifier { .. }));
    let needed = steps
        .iter()
        .map(|s| s.action.level())
        .chain(classifier.then_some(2))
        .max()
        .unwrap_or(0);
    let Some(l) = declared else { return needed };
    let (level, line) = (l.value, l.referenced.line());
    if level > 3 {
        problems.push((line, DefError::BadLevel(level)));
        needed
    } else if level < needed {
        let what = steps
            .iter()
            .find(|s| s.action.level() > level)
            .map(|s| s.action.name())
            .unwrap_or("a classifier trigger");
        problems.push((
            line,
            DefError::LevelTooLow {
                level,
                what,
                needed,
            },
        ));
        needed
    } else {
        level
    }
}

/// Whether a step needs a message to answer (a reply to it, or a reaction).
fn answers_a_message(steps: &[Step]) -> bool {
    steps.iter().any(|s| {
        matches!(
            &s.action,
            Action::Reply { channel: None, .. } | Action::React { .. }
        )
    })
}

fn trigger(t: &RawTrigger) -> Result<Trigger, DefError> {
    match (&t.pattern, &t.event, &t.classifier) {
        (_, Some(_), Some(_)) | (Some(_), Some(_), None) => Err(DefError::SeveralTriggers),
        (Some(p), None, None) => {
            let (regex, extract) = with_groups(p, &t.extract)?;
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
            other => Err(DefError::UnknownEvent(other.to_string())),
        },
        (prefilter, None, Some(question)) => {
            if prefilter.is_none() && t.addressed != Some(true) {
                return Err(DefError::UnguardedClassifier);
            }
            Ok(Trigger::Classifier {
                question: question.clone(),
                prefilter: prefilter
                    .as_deref()
                    .map(|p| with_groups(p, &t.extract))
                    .transpose()?,
                addressed: t.addressed,
            })
        }
        (None, None, None) => Err(DefError::NoTrigger),
    }
}

/// A trigger's regex and the names for its groups, which must fit it.
fn with_groups(pattern: &str, extract: &[String]) -> Result<(Regex, Vec<String>), DefError> {
    let regex = Regex::new(pattern).map_err(|e| DefError::BadPattern {
        reason: e.to_string().lines().last().unwrap_or("").to_string(),
    })?;
    let groups = regex.captures_len() - 1;
    if extract.len() > groups {
        return Err(DefError::TooManyExtracts {
            names: extract.len(),
            groups,
        });
    }
    if let Some(bad) = extract.iter().find(|n| !is_ident(n)) {
        return Err(DefError::BadExtractName(bad.clone()));
    }
    Ok((regex, extract.to_vec()))
}

/// One pipeline step's keys, as the YAML gave them.
struct Keys<'a>(&'a BTreeMap<String, Value>);

impl Keys<'_> {
    fn get(&self, key: &str) -> Option<String> {
        self.0.get(key).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    fn need(&self, key: &'static str, action: &'static str) -> Result<String, DefError> {
        self.get(key).ok_or(DefError::Missing { action, key })
    }

    fn template(&self, key: &'static str, action: &'static str) -> Result<Template, DefError> {
        self.need(key, action).map(Template)
    }

    fn output(&self, action: &'static str) -> Result<String, DefError> {
        self.need("output", action)
    }
}

/// The keys each action takes; an unknown action is a problem naming them all.
fn allowed_keys(action: &str) -> Result<&'static [&'static str], DefError> {
    Ok(match action {
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
        other => return Err(DefError::UnknownAction(other.to_string())),
    })
}

fn step(map: &BTreeMap<String, Value>) -> Result<Action, DefError> {
    let keys = Keys(map);
    let action = keys.get("action").ok_or(DefError::NoAction)?;
    let allowed = allowed_keys(&action)?;
    if let Some(extra) = map
        .keys()
        .find(|k| k.as_str() != "action" && !allowed.contains(&k.as_str()))
    {
        return Err(DefError::ExtraKey {
            key: extra.clone(),
            action,
            allowed,
        });
    }
    action_of(&action, &keys)
}

// Whole on purpose: one short arm per action, read as the table of what each
// action is built from; splitting it would scatter that table.
/// The action a step names (already known to be one), built from its keys.
fn action_of(action: &str, k: &Keys) -> Result<Action, DefError> {
    let t = |s: String| Template(s);
    Ok(match action {
        "fetch_url" => Action::FetchUrl {
            url: t(k
                .get("input")
                .or_else(|| k.get("url"))
                .ok_or(DefError::NoUrl)?),
            output: k.output("fetch_url")?,
        },
        "read_file" => Action::ReadFile {
            path: k.template("path", "read_file")?,
            output: k.output("read_file")?,
        },
        "write_file" => Action::WriteFile {
            path: k.template("path", "write_file")?,
            content: k.template("content", "write_file")?,
        },
        "llm_prompt" | "ollama_prompt" => Action::LlmPrompt {
            prompt: k.template("prompt", "llm_prompt")?,
            output: k.output("llm_prompt")?,
        },
        "extract_json" => extract_json(k)?,
        "github_api" => Action::GithubApi {
            path: k.template("path", "github_api")?,
            output: k.output("github_api")?,
        },
        "reply" => Action::Reply {
            message: k.template("message", "reply")?,
            channel: k.get("channel"),
        },
        "react" => Action::React {
            emoji: k.template("emoji", "react")?,
        },
        "add_task" => Action::AddTask {
            text: k.template("text", "add_task")?,
            due: k.template("due", "add_task")?,
            message: k.get("message").map(t),
        },
        "add_idea" => Action::AddIdea {
            text: k.template("text", "add_idea")?,
        },
        "remember" => Action::Remember {
            text: k.template("text", "remember")?,
            kind: k
                .get("type")
                .map(|kind| FactKind::parse(&kind))
                .transpose()?
                .unwrap_or(FactKind::Fact),
            importance: k
                .get("importance")
                .map(|i| Importance::parse(&i))
                .transpose()?,
        },
        "log" => Action::Log {
            message: k.template("message", "log")?,
        },
        "journal_summary" => Action::JournalSummary {
            since: k.get("since").unwrap_or_else(|| "today".into()),
            output: k.output("journal_summary")?,
        },
        "hush" => Action::Hush {
            duration: t(k.get("duration").unwrap_or_default()),
            output: k.output("hush")?,
        },
        "unhush" => Action::Unhush {
            output: k.output("unhush")?,
        },
        "escalate" => Action::Escalate {
            reason: t(k
                .get("reason")
                .unwrap_or_else(|| "a reflex asked for the executive".into())),
        },
        _ => Action::Pass {
            reason: t(k
                .get("reason")
                .unwrap_or_else(|| "not for this reflex".into())),
        },
    })
}

/// An `extract_json` step, whose `path` must be a JSONPath already at load.
fn extract_json(k: &Keys) -> Result<Action, DefError> {
    let path = k.need("path", "extract_json")?;
    if let Err(source) = serde_json_path::JsonPath::parse(&path) {
        return Err(DefError::NotJsonPath { path, source });
    }
    Ok(Action::ExtractJson {
        input: k.template("input", "extract_json")?,
        path,
        output: k.output("extract_json")?,
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
