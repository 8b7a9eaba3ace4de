//! Replay's offline models: a deterministic stand-in for every role, so a
//! replay measures gates, routing and cost without the network and without
//! paying anyone. What it answers is a placeholder, never wording:
//!
//! - an answer in words (the reply role, a level-2 reflex asked for text):
//!   a short placeholder;
//! - `decide` (initiative): post with probability `post_rate`, else hold or
//!   drop, half and half, on its own seeded dice; `chime_in` speaks with the
//!   same probability;
//! - `remember_facts` (extraction): nothing worth keeping;
//! - `end_ambient_cycle` (the garden): the cycle ends, nothing tended;
//! - `classify` (a level-2 reflex): no match; the impulses' `act` and
//!   `explored`, and compaction's `summary`: a placeholder.
//!
//! Each call is kept (role, model, prompt tokens estimated as the budget
//! estimates them, tools offered, the most it could have answered) for the
//! report, which prices each call's answer twice: at the typical length of
//! its kind (`TYPICAL_OUTPUT_TOKENS`) and at the role's `maxOutputTokens`.
//!
//! The stand-in answers for the models the settings and environment pick;
//! a local Ollama counts as there only if it answered when the replay
//! looked (`with_ollama`), as the bot looks at start.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::clock::Chance;
use crate::executive::wire::{StopReason, TokenUsage};
use crate::executive::{
    CallContext, ChatRequest, ChatResponse, Endpoint, Part, StandIn, ToolChoice,
};
use crate::settings::Role;

/// What the reply role "says" offline.
pub(crate) const PLACEHOLDER_REPLY: &str = "[a reply would go here]";
/// What an ambient post "says" offline.
pub(crate) const PLACEHOLDER_POST: &str = "[an ambient post would go here]";

/// The length of a real model's typical answer, in output tokens, by what
/// the call is for: the placeholders are a few tokens, a real answer is not.
/// Rough figures from the prompts' own asks (a reply of a few sentences, a
/// post with its reason, a few facts as JSON, a yes or no); the report shows
/// the role's `maxOutputTokens` beside them as the worst case.
pub(crate) const TYPICAL_OUTPUT_TOKENS: [(&str, u64); 8] = [
    ("answer", 180),
    ("initiative", 120),
    ("chime-in", 100),
    ("garden", 250),
    ("extraction", 150),
    ("compaction", 200),
    ("reflex", 20),
    ("impulse", 150),
];

/// [`TYPICAL_OUTPUT_TOKENS`] of `purpose`.
pub(crate) fn typical_output_tokens(purpose: &str) -> u64 {
    TYPICAL_OUTPUT_TOKENS
        .iter()
        .find(|(p, _)| *p == purpose)
        .map_or(180, |(_, n)| *n)
}

/// One model call the stand-in answered.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    pub role: Role,
    /// What the call was for, told apart by the final tool offered:
    /// initiative, chime-in, garden, extraction, compaction, reflex, impulse, or answer.
    pub purpose: &'static str,
    pub model: String,
    /// Whether the model is someone's own server (free), not a metered API.
    pub local: bool,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The most the call could have answered (the role's `maxOutputTokens`).
    pub max_output_tokens: u64,
    pub tools: Vec<String>,
}

pub(crate) struct Offline {
    post_rate: f64,
    dice: Arc<Chance>,
    calls: Mutex<Vec<Call>>,
    ollama: bool,
}

impl Offline {
    /// `post_rate` (0–1): how often `decide` posts and `chime_in` speaks.
    pub(crate) fn new(post_rate: f64, seed: u64) -> Self {
        Self {
            post_rate: post_rate.clamp(0.0, 1.0),
            // Its own dice: the bot's (eagerness rolls) must not shift with how many calls were made.
            dice: Chance::seeded(seed ^ 0x0ff1_1e5e),
            calls: Mutex::new(Vec::new()),
            ollama: false,
        }
    }

    /// Whether a local Ollama counts as there (it answered, or is assumed).
    pub(crate) fn with_ollama(mut self, there: bool) -> Self {
        self.ollama = there;
        self
    }

    /// Every call answered so far, in order.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn respond(&self, req: &ChatRequest) -> Vec<Part> {
        let offered = |name: &str| req.tools.iter().any(|t| t.name == name);
        let call = |name: &str, input: Value| {
            vec![Part::ToolUse {
                id: format!("offline-{name}"),
                name: name.into(),
                input,
            }]
        };
        if offered("decide") {
            return call("decide", self.decision(req));
        }
        if offered("chime_in") {
            let speak = self.dice.fraction() < self.post_rate;
            return call(
                "chime_in",
                json!({"speak": speak, "text": PLACEHOLDER_REPLY, "reason": "offline replay"}),
            );
        }
        let finals = [
            ("remember_facts", json!({"facts": []})),
            (
                "end_ambient_cycle",
                json!({"summary": "offline replay: nothing tended", "memories_modified": 0, "compactions": 0}),
            ),
            ("classify", json!({"matches": false})),
            ("act", json!({"note": "offline replay"})),
            ("explored", json!({"learned": "offline replay"})),
            ("summary", json!({"content": "offline replay"})),
        ];
        if let Some((name, input)) = finals.into_iter().find(|(name, _)| offered(name)) {
            return call(name, input);
        }
        if let ToolChoice::Force(name) = &req.tool_choice {
            return call(name, json!({}));
        }
        vec![Part::Text {
            text: PLACEHOLDER_REPLY.into(),
        }]
    }

    fn decision(&self, req: &ChatRequest) -> Value {
        let channel = channel_named_in(req).unwrap_or_else(|| "general".into());
        let roll = self.dice.fraction();
        let action = if roll < self.post_rate {
            "post"
        } else if self.dice.fraction() < 0.5 {
            "hold"
        } else {
            "drop"
        };
        json!({"action": action, "channel": channel, "text": PLACEHOLDER_POST, "reason": "offline replay"})
    }
}

impl StandIn for Offline {
    fn ollama_reachable(&self) -> bool {
        self.ollama
    }

    fn answer(&self, ctx: &CallContext, ep: &Endpoint, req: &ChatRequest) -> ChatResponse {
        let parts = self.respond(req);
        let stop = if parts.iter().any(|p| matches!(p, Part::ToolUse { .. })) {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        let usage = TokenUsage {
            input: req.estimate_input_tokens(),
            output: output_tokens(&parts),
        };
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Call {
                role: ctx.role,
                purpose: purpose(req),
                model: ep.model.clone(),
                local: !ep.pay_per_token,
                input_tokens: usage.input,
                output_tokens: usage.output,
                max_output_tokens: u64::from(req.max_tokens),
                tools: req.tools.iter().map(|t| t.name.clone()).collect(),
            });
        ChatResponse {
            parts,
            stop,
            usage,
            model: ep.model.clone(),
        }
    }
}

fn purpose(req: &ChatRequest) -> &'static str {
    const PURPOSES: [(&str, &str); 8] = [
        ("decide", "initiative"),
        ("chime_in", "chime-in"),
        ("end_ambient_cycle", "garden"),
        ("remember_facts", "extraction"),
        ("summary", "compaction"),
        ("classify", "reflex"),
        ("act", "impulse"),
        ("explored", "impulse"),
    ];
    PURPOSES
        .iter()
        .find(|(tool, _)| req.tools.iter().any(|t| t.name == *tool))
        .map_or("answer", |(_, purpose)| purpose)
}

/// Four characters a token, as the budget estimates prompts; at least one.
fn output_tokens(parts: &[Part]) -> u64 {
    let chars: usize = parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => text.len(),
            Part::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            Part::ToolResult { content, .. } => content.len(),
            Part::Image { .. } => 0,
        })
        .sum();
    (chars / 4).max(1) as u64
}

/// A channel the initiative prompt offers: the first under `=== CHANNELS ===`,
/// or, after a refused decision, the first the refusal names ("one of: #a, #b").
fn channel_named_in(req: &ChatRequest) -> Option<String> {
    let texts: Vec<String> = req
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.clone()),
            Part::ToolResult { content, .. } => Some(content.clone()),
            Part::ToolUse { .. } | Part::Image { .. } => None,
        })
        .collect();
    for text in texts.iter().rev() {
        if let Some((_, rest)) = text.rsplit_once("one of: ")
            && let Some(name) = rest.split([',', ' ', '\n']).find(|w| w.starts_with('#'))
        {
            return Some(name.trim_start_matches('#').to_string());
        }
    }
    texts.iter().find_map(|text| {
        let (_, section) = text.split_once("=== CHANNELS ===")?;
        section
            .lines()
            .map(str::trim)
            .take_while(|l| !l.starts_with("==="))
            .find_map(|l| l.strip_prefix('#'))
            .and_then(|l| l.split([' ', '(']).next())
            .map(str::to_string)
    })
}
