//! The OpenAI-compatible Chat Completions wire format (`POST …/chat/completions`),
//! spoken by OpenAI, OpenRouter, Ollama (`/v1`), llama.cpp's server and vLLM.

use serde_json::{Value, json};

use super::wire::{
    ChatRequest, ChatResponse, Malformed, Message, Part, Speaker, StopReason, TokenUsage,
    ToolChoice,
};

pub(crate) fn url(base: &str) -> String {
    format!("{}/chat/completions", base.trim_end_matches('/'))
}

/// `max_tokens` is deprecated on OpenAI's own API in favour of
/// `max_completion_tokens`; other servers only know `max_tokens`.
pub(crate) fn body(req: &ChatRequest, model: &str, official_openai: bool) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        match m.speaker {
            Speaker::Assistant => assistant_message(m, &mut messages),
            Speaker::User => user_messages(m, &mut messages),
        }
    }
    let mut body = json!({"model": model, "messages": messages});
    let limit_key = if official_openai {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit_key] = json!(req.max_tokens);
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.schema}})
            })
            .collect();
        body["tool_choice"] = match &req.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Force(name) => json!({"type": "function", "function": {"name": name}}),
        };
    }
    body
}

/// An assistant turn: its text, and its tool calls with their arguments as JSON strings.
fn assistant_message(m: &Message, messages: &mut Vec<Value>) {
    let text = m.text();
    let calls: Vec<Value> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolUse { id, name, input } => Some(json!({
                "id": id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": match input { Value::String(raw) => raw.clone(), v => v.to_string() },
                },
            })),
            _ => None,
        })
        .collect();
    let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        msg["tool_calls"] = json!(calls);
    }
    messages.push(msg);
}

/// A user turn: each tool result its own `tool` message, then the text (with images) as a user message.
fn user_messages(m: &Message, messages: &mut Vec<Value>) {
    // Tool results are their own messages here; text parts form a user message.
    for p in &m.parts {
        if let Part::ToolResult {
            id,
            content,
            is_error,
        } = p
        {
            let content = if *is_error {
                format!("Error: {content}")
            } else {
                content.clone()
            };
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
        }
    }
    if let Some(content) = with_images(&m.parts) {
        messages.push(json!({"role": "user", "content": content}));
        return;
    }
    let text = m.text();
    if !text.is_empty() {
        messages.push(json!({"role": "user", "content": text}));
    }
}

/// A user message with images: a list of `text` and `image_url` parts in
/// order, each image as a `data:` URL (local servers such as Ollama and
/// llama.cpp take nothing else). `None` when there is no image.
fn with_images(parts: &[Part]) -> Option<Value> {
    if !parts.iter().any(|p| matches!(p, Part::Image { .. })) {
        return None;
    }
    let content = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(json!({"type": "text", "text": text})),
            // `high`: the detail the budget's token estimate assumes.
            Part::Image {
                media_type, data, ..
            } => Some(json!({"type": "image_url", "image_url": {
                "url": format!("data:{media_type};base64,{data}"), "detail": "high"}})),
            _ => None,
        })
        .collect();
    Some(Value::Array(content))
}

pub(crate) fn parse(body: &Value) -> Result<ChatResponse, Malformed> {
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or(Malformed::missing("no `choices` in the response"))?;
    let message = choice
        .get("message")
        .ok_or(Malformed::missing("a choice without `message`"))?;
    let mut parts = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str)
        && !text.is_empty()
    {
        parts.push(Part::Text {
            text: text.to_string(),
        });
    }
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (i, call) in calls.iter().enumerate() {
            let function = call
                .get("function")
                .ok_or(Malformed::missing("a tool call without `function`"))?;
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or(Malformed::missing("a tool call without a function name"))?;
            let raw = function
                .get("arguments")
                .and_then(Value::as_str)
                .unwrap_or("{}");
            let input =
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| format!("call_{i}"));
            parts.push(Part::ToolUse {
                id,
                name: name.to_string(),
                input,
            });
        }
    }
    let stop = choice
        .get("finish_reason")
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
            input: tokens("prompt_tokens"),
            output: tokens("completion_tokens"),
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
    fn tool_results_become_tool_messages_and_arguments_strings() {
        let req = ChatRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::assistant(vec![Part::ToolUse {
                    id: "c1".into(),
                    name: "f".into(),
                    input: json!({"x": 1}),
                }]),
                Message {
                    speaker: Speaker::User,
                    parts: vec![Part::ToolResult {
                        id: "c1".into(),
                        content: "bad".into(),
                        is_error: true,
                    }],
                },
            ],
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                schema: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Auto,
            max_tokens: 50,
        };
        let b = body(&req, "m", false);
        assert_eq!(b["messages"][0]["role"], "system");
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"x\":1}"
        );
        assert_eq!(
            b["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "Error: bad"})
        );
        assert_eq!(b["max_tokens"], 50);
        assert_eq!(body(&req, "m", true)["max_completion_tokens"], 50);
    }

    #[test]
    fn malformed_arguments_reach_the_tool_check_as_text() {
        let resp = parse(&json!({
            "choices": [{"message": {"content": null, "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{oops"}}]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2}
        }))
        .unwrap();
        assert_eq!(resp.tool_uses()[0].2, json!("{oops"));
        assert_eq!(resp.stop, StopReason::ToolUse);
        assert!(parse(&json!({"choices": []})).is_err());
    }
}
