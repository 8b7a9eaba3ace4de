//! The scripted model server's streamed answers (`"stream": true`), as the
//! providers send them: Anthropic's named events (`message_start`,
//! `content_block_*`, `ping`, `message_delta`, `message_stop`, `error`) and
//! OpenAI's `data:` chunks ending in `data: [DONE]`, with usage only when
//! `stream_options.include_usage` was asked. Text comes in small deltas, a
//! tool call's arguments in fragments split mid-token, and a stream may
//! break off part-way as real providers' sometimes do: Anthropic sends an
//! `error` event (overloaded), an OpenAI-compatible server drops the
//! connection.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One streamed answer: frames, each after a pause, and whether it breaks off.
pub struct Sse {
    frames: Vec<(Duration, String)>,
    /// The connection is dropped after the last frame (no clean end).
    drop_connection: bool,
}

/// What to stream.
pub struct Plan<'a> {
    pub anthropic: bool,
    pub model: &'a str,
    pub n: u64,
    pub include_usage: bool,
    pub tokens: (u64, u64),
    /// Characters of text per delta, and the pause before each.
    pub chunk_chars: usize,
    pub every: Duration,
    /// The text ends at the model's token limit (`max_tokens`, `length`).
    pub at_limit: bool,
}

fn anthropic_frame(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn openai_frame(data: Value) -> String {
    format!("data: {data}\n\n")
}

/// `text` in pieces of `n` characters (never inside one).
pub fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

impl Plan<'_> {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> String {
        openai_frame(
            json!({"id": format!("chatcmpl-{}", self.n), "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    }

    fn start(&self) -> Vec<String> {
        if self.anthropic {
            vec![
                anthropic_frame(
                    "message_start",
                    json!({"type": "message_start", "message": {"id": format!("msg_{}", self.n),
                        "type": "message", "role": "assistant", "model": self.model, "content": [],
                        "stop_reason": null, "usage": {"input_tokens": self.tokens.0, "output_tokens": 1}}}),
                ),
                anthropic_frame("ping", json!({"type": "ping"})),
            ]
        } else {
            vec![self.chunk(json!({"role": "assistant", "content": ""}), None)]
        }
    }

    fn end(&self, stop: &str) -> Vec<String> {
        if self.anthropic {
            vec![
                anthropic_frame(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                        "usage": {"output_tokens": self.tokens.1}}),
                ),
                anthropic_frame("message_stop", json!({"type": "message_stop"})),
            ]
        } else {
            let finish = match stop {
                "tool_use" => "tool_calls",
                "max_tokens" => "length",
                _ => "stop",
            };
            let mut frames = vec![self.chunk(json!({}), Some(finish))];
            if self.include_usage {
                frames.push(openai_frame(json!({"id": format!("chatcmpl-{}", self.n),
                    "object": "chat.completion.chunk", "model": self.model, "choices": [],
                    "usage": {"prompt_tokens": self.tokens.0, "completion_tokens": self.tokens.1,
                        "total_tokens": self.tokens.0 + self.tokens.1}})));
            }
            frames.push("data: [DONE]\n\n".into());
            frames
        }
    }

    fn text_deltas(&self, text: &str) -> Vec<String> {
        let mut frames = Vec::new();
        if self.anthropic {
            frames.push(anthropic_frame(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ));
        }
        for piece in pieces(text, self.chunk_chars) {
            frames.push(if self.anthropic {
                anthropic_frame(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
                )
            } else {
                self.chunk(json!({"content": piece}), None)
            });
        }
        frames
    }

    /// A whole text answer; with `break_after`, only that many characters
    /// of it and then the break.
    pub fn text(&self, text: &str, break_after: Option<usize>) -> Sse {
        let shown: String = match break_after {
            Some(n) => text.chars().take(n).collect(),
            None => text.to_string(),
        };
        let mut frames = self.start();
        let first_delta = frames.len();
        frames.extend(self.text_deltas(&shown));
        let broken = break_after.is_some();
        if !broken {
            if self.anthropic {
                frames.push(anthropic_frame(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ));
            }
            frames.extend(self.end(if self.at_limit {
                "max_tokens"
            } else {
                "end_turn"
            }));
        } else if self.anthropic {
            frames.push(anthropic_frame(
                "error",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ));
        }
        let timed = frames
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                let pause = if i >= first_delta {
                    self.every
                } else {
                    Duration::ZERO
                };
                (pause, f)
            })
            .collect();
        Sse {
            frames: timed,
            drop_connection: broken && !self.anthropic,
        }
    }

    /// Tool calls `(id, name, raw arguments)`, each argument string in
    /// fragments of a few characters.
    pub fn tools(&self, calls: &[(String, String, String)]) -> Sse {
        let mut frames = self.start();
        for (i, (id, name, args)) in calls.iter().enumerate() {
            if self.anthropic {
                frames.push(anthropic_frame(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i,
                        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                for piece in pieces(args, 7) {
                    frames.push(anthropic_frame(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
                frames.push(anthropic_frame(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": i}),
                ));
            } else {
                frames.push(self.chunk(
                    json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    None,
                ));
                for piece in pieces(args, 7) {
                    frames.push(self.chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                        None,
                    ));
                }
            }
        }
        frames.extend(self.end("tool_use"));
        Sse {
            frames: frames.into_iter().map(|f| (Duration::ZERO, f)).collect(),
            drop_connection: false,
        }
    }
}

impl Sse {
    pub fn into_response(self, extra: &[(String, String)]) -> Response {
        let drop_connection = self.drop_connection;
        let frames = self
            .frames
            .into_iter()
            .map(Some)
            .chain(std::iter::once(None));
        let body = futures_util::stream::unfold(frames, move |mut frames| async move {
            match frames.next()? {
                Some((pause, frame)) => {
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    Some((Ok(Bytes::from(frame)), frames))
                }
                // Hyper drops the connection on a body error: no clean end of the
                // stream. A moment first, so the frames before it are on the wire.
                None if drop_connection => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Some((Err(std::io::Error::other("dropped")), frames))
                }
                None => None,
            }
        });
        let mut r = (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/event-stream")],
            Body::from_stream(body),
        )
            .into_response();
        for (k, v) in extra {
            r.headers_mut().insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        r
    }
}
