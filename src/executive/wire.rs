//! Provider-neutral chat types. The Anthropic and OpenAI-compatible modules
//! translate these to and from their wire formats; everything else in the
//! bot speaks only these.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// The model asks for a tool. `input` is whatever the model sent; for
    /// OpenAI-compatible providers an unparseable argument string arrives as
    /// `Value::String` and is rejected by the tool's argument check.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        id: String,
        content: String,
        is_error: bool,
    },
    /// An image shown to the model: a PNG or JPEG the bot decoded, scaled
    /// down and encoded again (see `senses::attachments`). A model that
    /// cannot see gets `vision::unseen(name)` in its place.
    Image {
        /// The file name people gave it.
        name: String,
        /// `image/png` or `image/jpeg`.
        media_type: String,
        /// Base64 of the encoded image; never serialized (journals, logs).
        #[serde(skip)]
        data: Arc<str>,
        width: u32,
        height: u32,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Message {
    pub speaker: Speaker,
    pub parts: Vec<Part>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            speaker: Speaker::User,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    pub(crate) fn assistant(parts: Vec<Part>) -> Self {
        Self {
            speaker: Speaker::Assistant,
            parts,
        }
    }

    pub(crate) fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }
}

/// A tool as offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments (an object schema).
    pub schema: Value,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    Auto,
    /// The model must call this tool.
    Force(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    pub max_tokens: u32,
}

impl ChatRequest {
    /// A rough token estimate of the prompt's text, 4 characters a token;
    /// `vision` adds the images' cost ([`Self::estimate_input_tokens`]).
    pub(crate) fn estimate_text_tokens(&self) -> u64 {
        let chars: usize = self.system.len()
            + self
                .messages
                .iter()
                .flat_map(|m| &m.parts)
                .map(|p| match p {
                    Part::Text { text } => text.len(),
                    Part::ToolUse { input, .. } => json_len(input),
                    Part::ToolResult { content, .. } => content.len(),
                    Part::Image { .. } => 0,
                })
                .sum::<usize>()
            + self
                .tools
                .iter()
                .map(|t| json_len(&t.schema) + t.description.len())
                .sum::<usize>();
        (chars / 4) as u64
    }
}

/// The length of `v` written as JSON, without building the text: asked of
/// every tool's schema for every request's estimate.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut n, v);
    n.0
}

/// A provider's success body missing what every answer has; `what` says which
/// part. The texts are fixed phrases (nothing from the body is echoed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}")]
pub(crate) struct Malformed {
    pub what: &'static str,
}

impl Malformed {
    pub(crate) fn missing(what: &'static str) -> Self {
        Self { what }
    }
}

/// Why a model stopped writing, in our words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    ToolUse,
    /// It ran out of room: its `max_tokens`, or (Anthropic) its context window.
    MaxTokens,
    Other,
}

impl StopReason {
    /// An Anthropic `stop_reason` or an OpenAI-compatible `finish_reason`.
    pub(crate) fn named(reason: &str) -> Self {
        match reason {
            "end_turn" | "stop_sequence" | "stop" => Self::EndTurn,
            "tool_use" | "tool_calls" | "function_call" => Self::ToolUse,
            // Both stop mid-answer; the second when the prompt left less room than max_tokens.
            "max_tokens" | "length" | "model_context_window_exceeded" => Self::MaxTokens,
            _ => Self::Other,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    pub parts: Vec<Part>,
    pub stop: StopReason,
    pub usage: TokenUsage,
    pub model: String,
}

impl ChatResponse {
    pub fn text(&self) -> String {
        Message::assistant(self.parts.clone()).text()
    }

    pub(crate) fn tool_uses(&self) -> Vec<(String, String, Value)> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolUse { id, name, input } => {
                    Some((id.clone(), name.clone(), input.clone()))
                }
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_json_as_it_is_written() {
        let v = serde_json::json!({"q": "a \"quoted\" line\nand é, 🦀", "n": [1, 2.5, null]});
        assert_eq!(json_len(&v), v.to_string().len());
    }
}
