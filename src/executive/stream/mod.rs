//! Streamed model calls: the answer's text as it is written.
//!
//! A caller that wants to show an answer while it arrives gives the
//! executive a [`TextSink`] (on a [`super::Turn`], or to
//! [`super::Executive::complete_streamed`]). The request then asks for a
//! server-sent-event stream (`"stream": true`; OpenAI-compatible servers also
//! `stream_options.include_usage`), each text delta goes to the sink as it is
//! decoded, and the events are assembled into the same [`ChatResponse`] the
//! non-streamed call returns — tool calls included, each one whole (its
//! arguments joined from every fragment) before the tool loop runs it.
//!
//! Bounds are those of the non-streamed call: the whole stream must finish
//! within `executive.requestTimeoutSeconds`, and its bytes are capped
//! ([`max_stream_bytes`]), so a server that never stops cannot hold or fill
//! the bot.
//!
//! A stream that fails before any of its text was shown (the sink says so)
//! is retried and failed over like a non-streamed call; the sink is told to
//! start again ([`TextSink::begin`]) before each attempt. One that fails after
//! text was shown is not: people saw the start of an answer, and a second
//! attempt would write a different one. It ends the call with the outcome
//! `broken` (its tokens estimated and recorded), and the caller says so
//! where the text was shown.
//!
//! The wire formats are in `anthropic` (`message_start`, `content_block_*`,
//! `message_delta`, `message_stop`, `ping`, `error`) and `openai`
//! (`choices[0].delta`, `data: [DONE]`).

mod anthropic;
mod openai;

use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::endpoints::{Endpoint, Wire};
use super::wire::{ChatResponse, Part, StopReason, TokenUsage};
use super::{Attempt, Executive};
use crate::net::error_chain;

/// Where a streamed answer's text goes while it is written.
pub trait TextSink: Send + Sync {
    /// A new attempt at the answer starts: text received so far is void.
    fn begin(&self);
    /// More text of the answer, in order.
    fn text(&self, delta: &str);
    /// Whether any text since the last [`TextSink::begin`] has been shown
    /// to people (or is being shown): then a failure cannot be retried quietly.
    fn shown(&self) -> bool;
}

/// The most bytes one stream may take: generous for the framing each token
/// carries (a few hundred bytes on the chattiest servers), never unbounded.
pub fn max_stream_bytes(max_tokens: u32) -> u64 {
    1024 * 1024 + u64::from(max_tokens) * 1024
}

/// Turns a request body into its streamed form.
pub(super) fn ask_to_stream(body: &mut Value, wire: Wire) {
    body["stream"] = json!(true);
    if wire == Wire::OpenAi {
        // Without it OpenAI-compatible servers send no token counts in a stream.
        body["stream_options"] = json!({"include_usage": true});
    }
}

/// What one event meant.
#[derive(Debug, PartialEq)]
enum Step {
    Nothing,
    Text(String),
    /// The answer is complete.
    Done,
}

/// A stream the provider ended with an error, or one we cannot read.
#[derive(Debug, PartialEq)]
enum Fault {
    /// Worth another attempt (overloaded, a server error mid-stream).
    Provider(String),
    /// A malformed event: another attempt would likely get the same.
    Malformed(String),
}

enum Decoder {
    Anthropic(anthropic::Decoder),
    OpenAi(openai::Decoder),
}

impl Decoder {
    fn new(wire: Wire) -> Self {
        match wire {
            Wire::Anthropic => Self::Anthropic(anthropic::Decoder::default()),
            Wire::OpenAi => Self::OpenAi(openai::Decoder::default()),
        }
    }

    fn event(&mut self, name: &str, data: &str) -> Result<Step, Fault> {
        match self {
            Self::Anthropic(d) => d.event(name, data),
            Self::OpenAi(d) => d.event(data),
        }
    }

    /// Whether the stream said the answer was complete.
    fn complete(&self) -> bool {
        match self {
            Self::Anthropic(d) => d.complete(),
            Self::OpenAi(d) => d.complete(),
        }
    }

    /// What arrived so far, as a response; `None` usage when the server sent none.
    fn response(&self) -> (ChatResponse, Option<TokenUsage>) {
        match self {
            Self::Anthropic(d) => d.response(),
            Self::OpenAi(d) => d.response(),
        }
    }
}

/// An OpenAI-compatible or Anthropic stop reason, in our words.
fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" | "stop" => StopReason::EndTurn,
        "tool_use" | "tool_calls" | "function_call" => StopReason::ToolUse,
        "max_tokens" | "length" => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

/// A tool call's arguments from the text of all its fragments: invalid JSON
/// stays text, for the tool's argument check to refuse (as when not streamed).
fn arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// Tokens of an answer when the server did not count them: four characters a token.
fn estimated_output(response: &ChatResponse) -> u64 {
    let chars: usize = response
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => text.chars().count(),
            Part::ToolUse { input, .. } => input.to_string().chars().count(),
            _ => 0,
        })
        .sum();
    chars.div_ceil(4) as u64
}

#[derive(Debug, thiserror::Error)]
enum Cut {
    #[error("{0}")]
    Transport(#[from] reqwest::Error),
    #[error("the stream passed {0} bytes")]
    TooLarge(u64),
}

impl Executive {
    /// One streamed attempt. `estimate_in` stands in for the prompt's tokens
    /// when the server reports none.
    pub(super) async fn stream_once(
        &self,
        ep: &Endpoint,
        body: &Value,
        timeout: Duration,
        max_bytes: u64,
        estimate_in: u64,
        sink: &dyn TextSink,
    ) -> Attempt {
        sink.begin();
        let resp = match self.post(ep, body, timeout).await {
            Ok(r) => r,
            Err(refused) => return refused,
        };
        let is_stream = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !is_stream {
            // A server that ignored `stream` answers whole: show it whole.
            let attempt = self.read_whole(ep, resp, timeout).await;
            if let Attempt::Ok(r) = &attempt {
                sink.text(&r.text());
            }
            return attempt;
        }
        let mut seen = 0u64;
        let bytes = resp.bytes_stream().map(move |chunk| {
            let chunk = chunk?;
            seen += chunk.len() as u64;
            if seen > max_bytes {
                return Err(Cut::TooLarge(max_bytes));
            }
            Ok(chunk)
        });
        let mut events = std::pin::pin!(bytes.eventsource());
        let mut decoder = Decoder::new(ep.wire);
        let broken = |decoder: &Decoder, outcome: &'static str, detail: String| {
            if sink.shown() {
                let (mut partial, usage) = decoder.response();
                partial.usage = usage.unwrap_or(TokenUsage {
                    input: estimate_in,
                    output: estimated_output(&partial),
                });
                Attempt::Broken { partial, detail }
            } else if outcome == "malformed" || outcome == "too_large" {
                Attempt::Fail { outcome, detail }
            } else {
                Attempt::Retry {
                    outcome,
                    detail,
                    wait: None,
                }
            }
        };
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(e) => e,
                Err(EventStreamError::Transport(Cut::TooLarge(n))) => {
                    let detail = format!("the stream was cut at {n} bytes");
                    return broken(&decoder, "too_large", detail);
                }
                Err(EventStreamError::Transport(Cut::Transport(e))) if e.is_timeout() => {
                    let (outcome, detail) = self.interruption(ep, &e, timeout);
                    return broken(&decoder, outcome, detail);
                }
                Err(EventStreamError::Transport(Cut::Transport(e))) => {
                    let detail = format!("the stream was cut off: {}", error_chain(&e));
                    return broken(&decoder, "network", self.secrets.redact(&detail));
                }
                Err(e) => {
                    let detail = format!("the stream could not be read: {e}");
                    return broken(&decoder, "malformed", detail);
                }
            };
            match decoder.event(&event.event, &event.data) {
                Ok(Step::Nothing) => {}
                Ok(Step::Text(delta)) => sink.text(&delta),
                Ok(Step::Done) => break,
                Err(Fault::Provider(e)) => {
                    let detail = format!("the stream ended with an error: {}", self.clean(&e));
                    return broken(&decoder, "server_error", detail);
                }
                Err(Fault::Malformed(e)) => {
                    let detail = format!("the stream was malformed: {e}");
                    return broken(&decoder, "malformed", detail);
                }
            }
        }
        if !decoder.complete() {
            let detail = "the stream ended before the answer was complete".to_string();
            return broken(&decoder, "network", detail);
        }
        let (mut response, usage) = decoder.response();
        response.usage = usage.unwrap_or(TokenUsage {
            input: estimate_in,
            output: estimated_output(&response),
        });
        Attempt::Ok(response)
    }

    /// A provider's text without secrets, at most 300 characters.
    fn clean(&self, text: &str) -> String {
        let short: String = text.chars().take(300).collect();
        self.secrets.redact(short.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_request_asks_for_usage_only_where_the_format_has_it() {
        let mut b = json!({"model": "m"});
        ask_to_stream(&mut b, Wire::OpenAi);
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"], json!({"include_usage": true}));
        let mut b = json!({"model": "m"});
        ask_to_stream(&mut b, Wire::Anthropic);
        assert_eq!(b, json!({"model": "m", "stream": true}));
    }

    #[test]
    fn arguments_join_and_bad_json_stays_text() {
        assert_eq!(arguments(""), json!({}));
        assert_eq!(arguments("{\"a\": 1}"), json!({"a": 1}));
        assert_eq!(arguments("{\"a\": "), json!("{\"a\": "));
    }

    #[test]
    fn the_byte_cap_grows_with_the_answer_allowed() {
        assert!(max_stream_bytes(0) >= 1024 * 1024);
        assert!(max_stream_bytes(4096) > max_stream_bytes(1024));
    }
}
