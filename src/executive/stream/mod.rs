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
//! The event framing is `super::sse`; the wire formats are in `anthropic`
//! (`message_start`, `content_block_*`, `message_delta`, `message_stop`,
//! `ping`, `error`) and `openai` (`choices[0].delta`, `data: [DONE]`).

mod anthropic;
mod openai;

use std::time::Duration;

use serde_json::{Value, json};

use super::endpoints::{Endpoint, Wire};
use super::wire::{ChatResponse, Part, TokenUsage};
use super::{Attempt, Executive, sse};
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

/// A stream that stopped short: retried as a failed call would be while
/// none of its text was shown, else `Broken` with what it had cost.
fn stopped(
    decoder: &Decoder,
    sink: &dyn TextSink,
    estimate_in: u64,
    (outcome, detail): (&'static str, String),
) -> Attempt {
    if sink.shown() {
        let (mut partial, usage) = decoder.response();
        partial.usage = usage.unwrap_or(TokenUsage {
            input: estimate_in,
            output: estimated_output(&partial),
        });
        return Attempt::Broken { partial, detail };
    }
    match outcome {
        // Asking again would get the same.
        "malformed" | "too_large" => Attempt::Fail { outcome, detail },
        _ => Attempt::Retry {
            outcome,
            detail,
            wait: None,
        },
    }
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
        let mut decoder = Decoder::new(ep.wire);
        let read = self
            .read_events(ep, resp, timeout, max_bytes, &mut decoder, sink)
            .await;
        match read {
            Err(why) => stopped(&decoder, sink, estimate_in, why),
            Ok(()) if !decoder.complete() => {
                let why = "the stream ended before the answer was complete".to_string();
                stopped(&decoder, sink, estimate_in, ("network", why))
            }
            Ok(()) => {
                let (mut response, usage) = decoder.response();
                response.usage = usage.unwrap_or(TokenUsage {
                    input: estimate_in,
                    output: estimated_output(&response),
                });
                Attempt::Ok(response)
            }
        }
    }

    /// Reads the stream into `decoder`, its text to `sink`, until the answer
    /// is complete or the stream ends; `Err` is (usage outcome, why) of a
    /// stream that stopped short.
    async fn read_events(
        &self,
        ep: &Endpoint,
        mut resp: reqwest::Response,
        timeout: Duration,
        max_bytes: u64,
        decoder: &mut Decoder,
        sink: &dyn TextSink,
    ) -> Result<(), (&'static str, String)> {
        let mut seen = 0u64;
        let mut parser = sse::Parser::default();
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ok(()),
                Err(e) if e.is_timeout() => return Err(self.interruption(ep, &e, timeout)),
                Err(e) => {
                    let detail = format!("the stream was cut off: {}", error_chain(&e));
                    return Err(("network", self.secrets.redact(&detail)));
                }
            };
            seen += chunk.len() as u64;
            if seen > max_bytes {
                return Err(("too_large", format!("the stream passed {max_bytes} bytes")));
            }
            let events = parser
                .push(&chunk)
                .map_err(|e| ("malformed", format!("the stream was malformed: {e}")))?;
            for event in events {
                match decoder.event(&event.event, &event.data) {
                    Ok(Step::Nothing) => {}
                    Ok(Step::Text(delta)) => sink.text(&delta),
                    Ok(Step::Done) => return Ok(()),
                    Err(Fault::Provider(e)) => {
                        let why = format!("the stream ended with an error: {}", self.clean(&e));
                        return Err(("server_error", why));
                    }
                    Err(Fault::Malformed(e)) => {
                        return Err(("malformed", format!("the stream was malformed: {e}")));
                    }
                }
            }
        }
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
