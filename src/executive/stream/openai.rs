//! The OpenAI-compatible Chat Completions stream: `data:` chunks whose
//! `choices[0].delta` carries `content` and `tool_calls` fragments
//! (`{index, id, function: {name, arguments}}`, the id and name on a call's
//! first fragment, its arguments spread over the rest), a `finish_reason`
//! at the end, a last chunk with `usage` when `stream_options.include_usage`
//! was asked, and `data: [DONE]`. A chunk with `error` (OpenRouter sends
//! one when the model fails mid-answer) ends the stream.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Fault, Step, arguments};
use crate::executive::wire::{ChatResponse, Part, StopReason, TokenUsage};

#[derive(Default)]
struct Call {
    id: Option<String>,
    name: String,
    arguments: String,
}

#[derive(Default)]
pub(super) struct Decoder {
    text: String,
    calls: BTreeMap<u64, Call>,
    model: String,
    usage: Option<TokenUsage>,
    stop: Option<StopReason>,
    done: bool,
}

impl Decoder {
    pub(super) fn event(&mut self, data: &str) -> Result<Step, Fault> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Step::Done);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| Fault::Malformed(format!("a chunk is not JSON ({e})")))?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error["message"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| error.to_string());
            return Err(Fault::Provider(message));
        }
        if let Some(model) = chunk["model"].as_str().filter(|m| !m.is_empty()) {
            self.model = model.to_string();
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| usage[k].as_u64().unwrap_or(0);
            self.usage = Some(TokenUsage {
                input: n("prompt_tokens"),
                output: n("completion_tokens"),
            });
        }
        let Some(choice) = chunk["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(Step::Nothing);
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.stop = Some(StopReason::named(reason));
        }
        let delta = &choice["delta"];
        if let Some(calls) = delta["tool_calls"].as_array() {
            for (position, fragment) in calls.iter().enumerate() {
                let index = fragment["index"].as_u64().unwrap_or(position as u64);
                let call = self.calls.entry(index).or_default();
                if let Some(id) = fragment["id"].as_str().filter(|id| !id.is_empty()) {
                    call.id = Some(id.to_string());
                }
                let function = &fragment["function"];
                if let Some(name) = function["name"].as_str() {
                    call.name.push_str(name);
                }
                if let Some(args) = function["arguments"].as_str() {
                    call.arguments.push_str(args);
                }
            }
        }
        match delta["content"].as_str() {
            Some(piece) if !piece.is_empty() => {
                self.text.push_str(piece);
                Ok(Step::Text(piece.to_string()))
            }
            _ => Ok(Step::Nothing),
        }
    }

    /// Ended by `[DONE]`, or at least told why it stopped.
    pub(super) fn complete(&self) -> bool {
        self.done || self.stop.is_some()
    }

    pub(super) fn response(&self) -> (ChatResponse, Option<TokenUsage>) {
        let mut parts = Vec::new();
        if !self.text.is_empty() {
            parts.push(Part::Text {
                text: self.text.clone(),
            });
        }
        for (i, call) in &self.calls {
            if call.name.is_empty() {
                continue;
            }
            parts.push(Part::ToolUse {
                id: call.id.clone().unwrap_or_else(|| format!("call_{i}")),
                name: call.name.clone(),
                input: arguments(&call.arguments),
            });
        }
        (
            ChatResponse {
                parts,
                stop: self.stop.unwrap_or(StopReason::Other),
                usage: self.usage.unwrap_or_default(),
                model: self.model.clone(),
            },
            self.usage,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(delta: Value, finish: Option<&str>) -> String {
        json!({"id": "c", "object": "chat.completion.chunk", "model": "m-1",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    }

    #[test]
    fn content_and_tool_calls_split_across_chunks_assemble_whole() {
        let mut d = Decoder::default();
        assert_eq!(
            d.event(&chunk(json!({"role": "assistant", "content": ""}), None))
                .unwrap(),
            Step::Nothing
        );
        assert_eq!(
            d.event(&chunk(json!({"content": "Checking"}), None))
                .unwrap(),
            Step::Text("Checking".into())
        );
        for fragment in [
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": ""}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
            json!({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "time", "arguments": "{}"}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"Oslo\"}"}}]}),
        ] {
            d.event(&chunk(fragment, None)).unwrap();
        }
        d.event(&chunk(json!({}), Some("tool_calls"))).unwrap();
        d.event(&json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}).to_string())
            .unwrap();
        assert_eq!(d.event("[DONE]").unwrap(), Step::Done);
        let (r, usage) = d.response();
        assert_eq!(r.text(), "Checking");
        assert_eq!(
            r.tool_uses(),
            vec![
                ("call_a".into(), "weather".into(), json!({"city": "Oslo"})),
                ("call_b".into(), "time".into(), json!({})),
            ]
        );
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(r.model, "m-1");
        assert_eq!(
            usage,
            Some(TokenUsage {
                input: 9,
                output: 4
            })
        );
    }

    #[test]
    fn an_error_chunk_ends_the_stream_and_without_done_it_is_incomplete() {
        let mut d = Decoder::default();
        d.event(&chunk(json!({"content": "Half an"}), None))
            .unwrap();
        assert!(!d.complete());
        assert_eq!(d.response().1, None);
        assert_eq!(
            d.event(&json!({"error": {"message": "upstream died"}}).to_string()),
            Err(Fault::Provider("upstream died".into()))
        );
        assert!(matches!(d.event("not json"), Err(Fault::Malformed(_))));
    }
}
