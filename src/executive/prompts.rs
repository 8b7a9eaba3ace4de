//! Prompt templates: one minijinja file per call kind in `executive.promptsDir`.
//!
//! Each template has a `system` block and a `user` block. The files shipped
//! in `prompts/` are compiled into the binary, so the bot runs from any
//! directory; a file of the same name in the prompts directory replaces the
//! built-in one. Every template is parsed and trial-rendered with a sample
//! context at start (undefined variables are errors), so a broken edit is
//! reported as `file:line: what` before the bot connects anywhere.
//!
//! Every context is bounded before it is rendered (`bounds::bound_context`,
//! with `executive.promptLimits`): no message, fact or section a template
//! shows can be longer than the settings allow, whoever built the context.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;
use serde_json::{Value, json};

use super::bounds::bound_context;
use crate::settings::{PromptLimits, SettingsService};
use crate::store::messages::{Source, StoredMessage};

/// The built-in templates and a sample context each must render with.
// Whole on purpose: a table of the templates beside their sample contexts;
// split up, a template and its sample would no longer be read together.
fn builtin() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "reply",
            include_str!("../../prompts/reply.j2"),
            json!({
                "bot_name": "ambient",
                "persona": "You are ambient.",
                "guild_name": "a server",
                "channel_name": "general",
                "is_dm": false,
                "unsolicited": false,
                "now": "2026-01-05 12:00 UTC",
                "memory": ["ada likes Rust"],
                "history": [{"time": "11:59", "author": "ada", "is_self": false, "vc": false, "content": "hi"}],
                "target": {"author": "ada", "content": "hi"},
                "attachments": ["[image: cat.png, not visible to you], from ada's message"],
                "images_unseen": true,
            }),
        ),
        (
            "initiative",
            include_str!("../../prompts/initiative.j2"),
            json!({
                "bot_name": "ambient",
                "persona": "You are ambient.",
                "guild_name": "a server",
                "now": "2026-01-05 12:00 UTC",
                "pending": {"draft": "d", "channel": "general", "revision": 1, "age_minutes": 3, "last_reason": "r",
                            "media": {"kind": "image", "prompt": "p"}},
                "channels": [{"name": "general", "vibe": true, "last_human": "3 min ago", "last_bot": "never",
                              "lines": [{"time": "11:59", "author": "ada", "is_self": false, "vc": true, "content": "hi"}]}],
                "no_ping": ["ada"],
                "feed": ["an item"],
                "feed_note": "",
                "feed_sources": ["a source"],
                "feed_sources_note": "",
                "community": ["rust (4 messages)"],
                "memory": ["a fact"],
                "memory_note": "",
                "guidance": ["be brief"],
                "behavioral": ["people liked memes"],
                "pool": "#general",
                "max_post_chars": 1800,
                "capabilities": ["web_scrape: read a web page"],
            }),
        ),
        (
            "extract",
            include_str!("../../prompts/extract.j2"),
            json!({
                "bot_name": "ambient",
                "place": "#general on \"a server\"",
                "lines": [{"n": 1, "time": "11:59", "author": "ada", "is_self": false, "vc": false, "content": "we use tabs"}],
                "known": ["[decision] use tabs"],
            }),
        ),
        (
            "impulse",
            include_str!("../../prompts/impulse.j2"),
            json!({
                "persona": "You are ambient.",
                "bot_name": "ambient",
                "guild_name": "a server",
                "now": "2026-01-05 12:00 UTC",
                "kind": "task",
                "text": "check on the build",
                "context": "promised ada",
                "channel": "general",
                "lines": [{"time": "11:59", "author": "ada", "is_self": false, "vc": false, "content": "hi"}],
                "memory": ["a fact"],
            }),
        ),
        (
            "garden",
            include_str!("../../prompts/garden.j2"),
            json!({
                "bot_name": "ambient",
                "guild_name": "a server",
                "context": "[AMBIENT CONTEXT — last 5 min]\n- 11:58 ada: hi",
                "now": "2026-01-05 12:00 UTC",
                "last_cycle": "2026-01-05 11:30 UTC (30m ago): merged 1",
                "downtime": "",
                "leftover": ["check the wiki fact"],
                "active": "none",
                "cycle_budget": 6000,
                "queue": [{"priority": "normal", "when": "12:00", "context": "re-check stale facts"}],
                "conversations": [{"channel": "general", "messages": 4, "last": "11:59", "extraction": "done"}],
                "health": {"total": 10, "active": 8, "inactive": 2, "low_confidence": 1, "links": 3},
                "pass_lines": ["merged 1 duplicate"],
                "contradictions": [{"a_id": "1234abcd", "a": "x", "a_when": "2026-01-01", "b_id": "5678abcd", "b": "y", "b_when": "2026-01-02"}],
                "stale": [{"id": "9abc0123", "content": "z", "when": "2025-11-01"}],
                "recent": [{"time": "11:59", "author": "ada", "is_self": false, "vc": false, "content": "hi"}],
                "feedback": ["People liked my ambient post"],
                "deeds": ["11:40 #general  answered ada — a mention"],
                "proactive": true,
                "tasks": ["ask ada"],
                "ideas": ["octopuses"],
                "budget": "no rate-limit headers yet",
            }),
        ),
        (
            "compact",
            include_str!("../../prompts/compact.j2"),
            json!({"bot_name": "ambient", "facts": ["[fact, low] something"]}),
        ),
    ]
}

/// The largest prompt template read from `executive.promptsDir`.
pub(crate) const MAX_TEMPLATE_BYTES: u64 = 256 * 1024;

#[derive(Debug, thiserror::Error)]
pub(crate) enum PromptError {
    #[error("{file}:{line}: {detail}")]
    Template {
        file: String,
        line: usize,
        detail: String,
    },
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        source: crate::settings::load::FileError,
    },
    #[error("no prompt template named {0:?}")]
    Unknown(String),
    #[error("the context for prompt {name:?} cannot be serialized: {detail}")]
    Context { name: String, detail: String },
}

/// One line of channel history as prompts show it: `[12:03] ada [vc]: …`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct PromptLine {
    pub time: String,
    pub author: String,
    pub is_self: bool,
    /// Spoken in a linked voice channel and transcribed.
    pub vc: bool,
    pub content: String,
}

impl From<&StoredMessage> for PromptLine {
    fn from(m: &StoredMessage) -> Self {
        let mut content = m.content.clone();
        for a in &m.attachments {
            content.push_str(&format!(" [attachment: {}]", a.name));
        }
        Self {
            time: m.created_at.format("%H:%M").to_string(),
            author: m.author_name.clone(),
            is_self: m.is_self,
            vc: m.source == Source::Vc,
            content,
        }
    }
}

/// A rendered prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub system: String,
    pub user: String,
}

pub struct Prompts {
    env: Environment<'static>,
    files: Vec<(String, String)>,
    /// Where `executive.promptLimits` is read at each render (defaults without it).
    settings: Option<Arc<SettingsService>>,
}

impl Prompts {
    /// Loads the templates (from `dir` where present, else built in) and checks them.
    pub(crate) fn load(dir: &Path) -> Result<Self, PromptError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_trim_blocks(true);
        let mut files = Vec::new();
        let mut samples = Vec::new();
        for (name, embedded, sample) in builtin() {
            let path = dir.join(format!("{name}.j2"));
            // Whatever stands at the path is read, within bounds: a FIFO or a huge
            // file is an error, not a silent fall-back to the built-in template.
            let (source, file) = if path.exists() {
                let text = crate::settings::load::read_limited(&path, MAX_TEMPLATE_BYTES).map_err(
                    |source| PromptError::Read {
                        file: path.clone(),
                        source,
                    },
                )?;
                (text, path.display().to_string())
            } else {
                (
                    embedded.to_string(),
                    format!("prompts/{name}.j2 (built in)"),
                )
            };
            env.add_template_owned(name.to_string(), source)
                .map_err(|e| template_error(&file, &e))?;
            files.push((name.to_string(), file));
            samples.push((name, sample));
        }
        let prompts = Self {
            env,
            files,
            settings: None,
        };
        for (name, sample) in samples {
            prompts.render(name, &sample)?;
        }
        Ok(prompts)
    }

    /// Only the built-in templates (for tests and tools that have no directory).
    pub fn builtin() -> Self {
        Self::load(Path::new("/nonexistent-prompts-dir")).expect("built-in prompts are valid")
    }

    /// Bounds every render by the live `executive.promptLimits`.
    pub(crate) fn limited_by(mut self, settings: Arc<SettingsService>) -> Self {
        self.settings = Some(settings);
        self
    }

    fn limits(&self) -> PromptLimits {
        self.settings
            .as_ref()
            .map(|s| s.global().executive.prompt_limits.clone())
            .unwrap_or_default()
    }

    pub(crate) fn render(&self, name: &str, ctx: &impl Serialize) -> Result<Rendered, PromptError> {
        let mut ctx = serde_json::to_value(ctx).map_err(|e| PromptError::Context {
            name: name.into(),
            detail: e.to_string(),
        })?;
        bound_context(&mut ctx, &self.limits());
        let file = self
            .files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f.clone())
            .ok_or_else(|| PromptError::Unknown(name.into()))?;
        let template = self
            .env
            .get_template(name)
            .map_err(|e| template_error(&file, &e))?;
        // Evaluated without output, the template's own pass skips its
        // blocks, so each block is rendered once, below. minijinja points
        // to `render_captured` instead, which renders the whole template
        // first: both blocks twice, 8 % of an answer's instructions.
        #[allow(deprecated)]
        let mut state = template
            .eval_to_state(&ctx)
            .map_err(|e| template_error(&file, &e))?;
        let mut block = |b: &str| {
            state
                .render_block(b)
                .map(|s| s.trim().to_string())
                .map_err(|e| template_error(&file, &e))
        };
        Ok(Rendered {
            system: block("system")?,
            user: block("user")?,
        })
    }
}

fn template_error(file: &str, e: &minijinja::Error) -> PromptError {
    PromptError::Template {
        file: file.to_string(),
        line: e.line().unwrap_or(0),
        detail: match e.detail() {
            Some(d) => format!("{}: {d}", e.kind()),
            None => e.kind().to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_templates_render_both_blocks() {
        let p = Prompts::builtin();
        let (_, _, sample) = builtin().remove(0);
        let r = p.render("reply", &sample).unwrap();
        assert!(r.system.starts_with("You are ambient."));
        assert!(r.system.contains("- ada likes Rust"));
        assert!(r.user.contains("[11:59] ada: hi"));
        assert!(r.user.ends_with("who said: hi"));
    }

    #[test]
    fn a_huge_message_reaches_the_prompt_cut_to_the_message_limit() {
        let p = Prompts::builtin();
        let (_, _, mut sample) = builtin().remove(0);
        sample["target"]["content"] = Value::String("x".repeat(5_000_000));
        let r = p.render("reply", &sample).unwrap();
        assert!(
            r.user.len() < 2 * PromptLimits::default().message_chars as usize,
            "{} bytes",
            r.user.len()
        );
        assert!(
            r.user
                .ends_with("… [cut: 5,000,000 characters, showing the first 4,000]"),
            "{}",
            &r.user[r.user.len() - 100..]
        );
    }

    #[test]
    fn a_broken_override_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("reply.j2"),
            "{% block system %}\nfine\n{{ persona }\n{% endblock %}{% block user %}x{% endblock %}",
        )
        .unwrap();
        let err = Prompts::load(dir.path()).err().unwrap().to_string();
        assert!(err.contains("reply.j2:3:"), "{err}");

        std::fs::write(
            dir.path().join("reply.j2"),
            "{% block system %}{{ no_such_variable }}{% endblock %}{% block user %}x{% endblock %}",
        )
        .unwrap();
        let err = Prompts::load(dir.path()).err().unwrap().to_string();
        assert!(
            err.contains("reply.j2:1:") && err.contains("undefined"),
            "{err}"
        );
    }
}
