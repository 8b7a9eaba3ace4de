//! The Anthropic Messages wire format (`POST /v1/messages`).

use serde_json::{Value, json};

use super::wire::{
    ChatRequest, ChatResponse, Malformed, Part, Speaker, StopReason, TokenUsage, ToolChoice,
};

pub(crate) const API_VERSION: &str = "2023-06-01";

pub(crate) fn url(base: &str) -> String {
    format!("{}/v1/messages", base.trim_end_matches('/'))
}

pub(crate) fn body(req: &ChatRequest, model: &str) -> Value {
    let messages: Vec<Value> = req
        .messages
        .iter()
        .map(|m| {
            json!({
                "role": match m.speaker { Speaker::User => "user", Speaker::Assistant => "assistant" },
                "content": m.parts.iter().map(part).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_tokens,
        "messages": messages,
    });
    if !req.system.is_empty() {
        body["system"] = json!(req.system);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(
                |t| json!({"name": t.name, "description": t.description, "input_schema": t.schema}),
            )
            .collect();
        body["tool_choice"] = match &req.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::Force(name) => json!({"type": "tool", "name": name}),
        };
    }
    body
}

fn part(p: &Part) -> Value {
    match p {
        Part::Text { text } => json!({"type": "text", "text": text}),
        Part::ToolUse { id, name, input } => {
            // The API requires an object; a malformed input is replayed as an empty one.
            let input = if input.is_object() {
                input.clone()
            } else {
                json!({})
            };
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Part::ToolResult {
            id,
            content,
            is_error,
        } => {
            json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error})
        }
        // Always base64: the bot sends the copy it scaled down, and the
        // attachment's own URL may be one only the bot can reach.
        Part::Image {
            media_type, data, ..
        } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": &**data}})
        }
    }
}

/// Parses a success body; `Err` describes what was malformed.
pub(crate) fn parse(body: &Value) -> Result<ChatResponse, Malformed> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or(Malformed::missing("no `content` array in the response"))?;
    let mut parts = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(Part::Text {
                text: block
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or(Malformed::missing("a text block without `text`"))?
                    .to_string(),
            }),
            Some("tool_use") => parts.push(Part::ToolUse {
                id: block
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or(Malformed::missing("a tool_use block without `id`"))?
                    .to_string(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or(Malformed::missing("a tool_use block without `name`"))?
                    .to_string(),
                input: block.get("input").cloned().unwrap_or(json!({})),
            }),
            // Thinking and other block types carry nothing we act on.
            _ => {}
        }
    }
    let stop = body
        .get("stop_reason")
        .and_then(Value::as_str)
        .map_or(StopReason::Other, StopReason::named);
    let usage = body.get("usage");
    let tokens = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(ChatResponse {
        parts,
        stop,
        usage: TokenUsage {
            input: tokens("input_tokens")
                + tokens("cache_read_input_tokens")
                + tokens("cache_creation_input_tokens"),
            output: tokens("output_tokens"),
        },
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executive::wire::{Message, ToolSpec};

    #[test]
    fn request_and_response_round_trip_with_tools() {
        let req = ChatRequest {
            system: "be brief".into(),
            messages: vec![
                Message::user("weather?"),
                Message::assistant(vec![Part::ToolUse {
                    id: "t1".into(),
                    name: "weather".into(),
                    input: json!({"city": "Oslo"}),
                }]),
                Message {
                    speaker: Speaker::User,
                    parts: vec![Part::ToolResult {
                        id: "t1".into(),
                        content: "rain".into(),
                        is_error: false,
                    }],
                },
            ],
            tools: vec![ToolSpec {
                name: "weather".into(),
                description: "d".into(),
                schema: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Force("weather".into()),
            max_tokens: 100,
        };
        let b = body(&req, "claude-x");
        assert_eq!(b["system"], "be brief");
        assert_eq!(b["messages"][1]["content"][0]["type"], "tool_use");
        assert_eq!(b["messages"][2]["content"][0]["tool_use_id"], "t1");
        assert_eq!(b["tool_choice"], json!({"type": "tool", "name": "weather"}));

        let resp = parse(&json!({
            "model": "claude-x",
            "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t2", "name": "w", "input": {"a": 1}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 12, "output_tokens": 3}
        }))
        .unwrap();
        assert_eq!(resp.text(), "hi");
        assert_eq!(resp.tool_uses()[0].1, "w");
        assert_eq!(
            resp.usage,
            TokenUsage {
                input: 12,
                output: 3
            }
        );
        assert!(parse(&json!({"nope": 1})).is_err());
    }

    /// A model that ran out of its context window stopped mid-answer, as at
    /// its `max_tokens`: the answer is cut as one stopped there.
    #[test]
    fn an_answer_stopped_by_the_context_window_ran_out_of_room() {
        for (reason, stop) in [
            ("max_tokens", StopReason::MaxTokens),
            ("model_context_window_exceeded", StopReason::MaxTokens),
            ("end_turn", StopReason::EndTurn),
            ("stop_sequence", StopReason::EndTurn),
            ("tool_use", StopReason::ToolUse),
            ("refusal", StopReason::Other),
        ] {
            let resp = parse(&json!({
                "model": "claude-x",
                "content": [{"type": "text", "text": "The hall is free from six, and the key is with"}],
                "stop_reason": reason,
                "usage": {"input_tokens": 12, "output_tokens": 3}
            }))
            .unwrap();
            assert_eq!(resp.stop, stop, "{reason}");
        }
    }
}
