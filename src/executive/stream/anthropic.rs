//! The Anthropic Messages stream: `message_start` (model, input tokens),
//! `content_block_start` / `content_block_delta` (`text_delta`,
//! `input_json_delta`) / `content_block_stop` per block, `message_delta`
//! (stop reason, output tokens), `message_stop`; `ping` keeps the line
//! alive and `error` ends it. Unknown events and block types (thinking) are
//! ignored, as Anthropic asks of clients.

use serde_json::{Value, json};

use super::{Fault, Step, arguments};
use crate::executive::wire::{ChatResponse, Part, StopReason, TokenUsage};

enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        /// The `input` the block started with, used when no fragment follows.
        start: Value,
        json: String,
    },
    Other,
}

#[derive(Default)]
pub(super) struct Decoder {
    blocks: Vec<(u64, Block)>,
    model: String,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    stop: Option<StopReason>,
    stopped: bool,
}

fn parse(data: &str) -> Result<Value, Fault> {
    serde_json::from_str(data).map_err(|e| Fault::Malformed(format!("an event is not JSON ({e})")))
}

fn tokens(usage: &Value) -> Option<u64> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64);
    let input = n("input_tokens")?;
    Some(
        input
            + n("cache_read_input_tokens").unwrap_or(0)
            + n("cache_creation_input_tokens").unwrap_or(0),
    )
}

impl Decoder {
    // Whole on purpose: a flat match with one arm per Anthropic stream event,
    // in the order they arrive, each arm short; the match is the protocol.
    pub(super) fn event(&mut self, name: &str, data: &str) -> Result<Step, Fault> {
        match name {
            "message_start" => {
                let v = parse(data)?;
                let message = &v["message"];
                self.model = message["model"].as_str().unwrap_or_default().to_string();
                self.input_tokens = tokens(&message["usage"]);
                if let Some(out) = message["usage"]["output_tokens"].as_u64() {
                    self.output_tokens = Some(out);
                }
            }
            "content_block_start" => {
                let v = parse(data)?;
                let index = v["index"].as_u64().unwrap_or(self.blocks.len() as u64);
                let block = &v["content_block"];
                let started = match block["type"].as_str() {
                    Some("text") => {
                        let text = block["text"].as_str().unwrap_or_default().to_string();
                        let step = if text.is_empty() {
                            Step::Nothing
                        } else {
                            Step::Text(text.clone())
                        };
                        self.blocks.push((index, Block::Text(text)));
                        return Ok(step);
                    }
                    Some("tool_use") => Block::Tool {
                        id: block["id"]
                            .as_str()
                            .ok_or_else(|| {
                                Fault::Malformed("a tool_use block without `id`".into())
                            })?
                            .to_string(),
                        name: block["name"]
                            .as_str()
                            .ok_or_else(|| {
                                Fault::Malformed("a tool_use block without `name`".into())
                            })?
                            .to_string(),
                        start: block.get("input").cloned().unwrap_or(json!({})),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.push((index, started));
            }
            "content_block_delta" => {
                let v = parse(data)?;
                let index = v["index"].as_u64();
                let delta = &v["delta"];
                let block = self
                    .blocks
                    .iter_mut()
                    .rev()
                    .find(|(i, _)| Some(*i) == index)
                    .map(|(_, b)| b);
                match (delta["type"].as_str(), block) {
                    (Some("text_delta"), Some(Block::Text(text))) => {
                        let piece = delta["text"].as_str().unwrap_or_default();
                        text.push_str(piece);
                        if !piece.is_empty() {
                            return Ok(Step::Text(piece.to_string()));
                        }
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    (Some("text_delta" | "input_json_delta"), _) => {
                        return Err(Fault::Malformed(format!(
                            "a delta for block {index:?}, which was never started as its kind"
                        )));
                    }
                    // Thinking, signatures, citations: nothing we act on.
                    _ => {}
                }
            }
            "message_delta" => {
                let v = parse(data)?;
                if let Some(reason) = v["delta"]["stop_reason"].as_str() {
                    self.stop = Some(StopReason::named(reason));
                }
                if let Some(out) = v["usage"]["output_tokens"].as_u64() {
                    self.output_tokens = Some(out);
                }
                if let Some(input) = tokens(&v["usage"]) {
                    self.input_tokens = Some(input);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Step::Done);
            }
            "error" => {
                let v = parse(data)?;
                let kind = v["error"]["type"].as_str().unwrap_or("error");
                let message = v["error"]["message"].as_str().unwrap_or_default();
                return Err(Fault::Provider(format!("{kind}: {message}")));
            }
            // `ping`, `content_block_stop` (blocks are read whole at the end) and anything new.
            _ => {}
        }
        Ok(Step::Nothing)
    }

    /// Ended by `message_stop`, or at least told why it stopped.
    pub(super) fn complete(&self) -> bool {
        self.stopped || self.stop.is_some()
    }

    pub(super) fn response(&self) -> (ChatResponse, Option<TokenUsage>) {
        let mut blocks: Vec<&(u64, Block)> = self.blocks.iter().collect();
        blocks.sort_by_key(|(i, _)| *i);
        let parts = blocks
            .into_iter()
            .filter_map(|(_, b)| match b {
                Block::Text(text) => Some(Part::Text { text: text.clone() }),
                Block::Tool {
                    id,
                    name,
                    start,
                    json,
                } => Some(Part::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: if json.trim().is_empty() {
                        start.clone()
                    } else {
                        arguments(json)
                    },
                }),
                Block::Other => None,
            })
            .collect();
        let usage = match (self.input_tokens, self.output_tokens) {
            (None, None) => None,
            (input, output) => Some(TokenUsage {
                input: input.unwrap_or(0),
                output: output.unwrap_or(0),
            }),
        };
        (
            ChatResponse {
                parts,
                stop: self.stop.unwrap_or(StopReason::Other),
                usage: usage.unwrap_or_default(),
                model: self.model.clone(),
            },
            usage,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(d: &mut Decoder, events: &[(&str, Value)]) -> Vec<Step> {
        events
            .iter()
            .map(|(name, data)| d.event(name, &data.to_string()).unwrap())
            .collect()
    }

    #[test]
    fn text_and_a_tool_call_split_across_deltas_assemble_whole() {
        let mut d = Decoder::default();
        let steps = feed(
            &mut d,
            &[
                (
                    "message_start",
                    json!({"type": "message_start", "message": {"model": "claude-x", "usage": {"input_tokens": 40, "output_tokens": 1}}}),
                ),
                (
                    "content_block_start",
                    json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                ("ping", json!({"type": "ping"})),
                (
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
                ),
                (
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "text_delta", "text": "look."}}),
                ),
                ("content_block_stop", json!({"index": 0})),
                (
                    "content_block_start",
                    json!({"index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}),
                ),
                (
                    "content_block_delta",
                    json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"ci"}}),
                ),
                (
                    "content_block_delta",
                    json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "ty\": \"Oslo\"}"}}),
                ),
                ("content_block_stop", json!({"index": 1})),
                (
                    "message_delta",
                    json!({"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 17}}),
                ),
            ],
        );
        assert_eq!(steps[3], Step::Text("Let me ".into()));
        assert_eq!(d.event("message_stop", "{}").unwrap(), Step::Done);
        let (r, usage) = d.response();
        assert_eq!(r.text(), "Let me look.");
        assert_eq!(
            r.tool_uses(),
            vec![("toolu_1".into(), "weather".into(), json!({"city": "Oslo"}))]
        );
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(r.model, "claude-x");
        assert_eq!(
            usage,
            Some(TokenUsage {
                input: 40,
                output: 17
            })
        );
    }

    #[test]
    fn a_stream_stopped_by_the_context_window_ran_out_of_room() {
        let mut d = Decoder::default();
        feed(
            &mut d,
            &[
                (
                    "content_block_start",
                    json!({"index": 0, "content_block": {"type": "text", "text": "The key is with"}}),
                ),
                (
                    "message_delta",
                    json!({"delta": {"stop_reason": "model_context_window_exceeded"}, "usage": {"output_tokens": 5}}),
                ),
            ],
        );
        assert_eq!(d.response().0.stop, StopReason::MaxTokens);
    }

    #[test]
    fn an_error_event_is_the_providers_and_a_stream_without_stop_is_incomplete() {
        let mut d = Decoder::default();
        feed(
            &mut d,
            &[(
                "content_block_start",
                json!({"index": 0, "content_block": {"type": "text", "text": "Hal"}}),
            )],
        );
        assert!(!d.complete());
        assert_eq!(d.response().0.text(), "Hal");
        assert_eq!(d.response().1, None, "no usage was reported");
        let e = d
            .event("error", &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string())
            .unwrap_err();
        assert_eq!(e, Fault::Provider("overloaded_error: Overloaded".into()));
        assert!(matches!(
            d.event("message_start", "{oops"),
            Err(Fault::Malformed(_))
        ));
    }

    #[test]
    fn a_delta_for_a_block_never_started_is_malformed() {
        let mut d = Decoder::default();
        let e = d.event(
            "content_block_delta",
            &json!({"index": 3, "delta": {"type": "text_delta", "text": "x"}}).to_string(),
        );
        assert!(matches!(e, Err(Fault::Malformed(_))));
    }
}
