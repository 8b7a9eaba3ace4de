//! A scripted model server on 127.0.0.1 speaking both wire formats the bot
//! uses: Anthropic Messages (`POST …/v1/messages`) and OpenAI-compatible Chat
//! Completions (`POST …/chat/completions`).
//!
//! Tests queue [`Scripted`] replies (text, tool calls, HTTP errors, a hung
//! response, a malformed body); each request takes the next one, or the
//! fallback when the queue is empty. Every request is recorded (path,
//! headers, JSON body) so tests can assert on what the bot actually sent.
//! The server runs on its own thread and runtime, so synchronous tests that
//! spawn the `ambient` binary can use it as well as async ones.
//!
//! Images are checked as the providers check them, and refused with their
//! 400s: Anthropic's `image` blocks must be base64 of a JPEG, PNG, GIF or
//! WebP whose bytes match the media type, at most 5 MB and 8000 px a side;
//! OpenAI's `image_url` parts must be such a `data:` URL or an http(s) URL;
//! and a model the test names blind (`blind`) refuses any image, as a
//! text-only model on llama.cpp or vLLM does.
//!
//! A request with `"stream": true` gets its answer as a server-sent-event
//! stream in the format it asked for (see `model_stream`): text in small
//! deltas (paced with [`Scripted::Streamed`]), tool calls in fragments, and
//! [`Scripted::BreaksOff`] stopping part-way.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::model_stream::{Plan, Sse};

#[derive(Clone, Debug)]
pub enum Scripted {
    Text {
        text: String,
        tokens_in: u64,
        tokens_out: u64,
    },
    /// Tool calls with JSON arguments.
    Tools(Vec<(String, Value)>),
    /// One tool call whose arguments are this raw string (may be invalid JSON).
    RawToolCall { name: String, arguments: String },
    Status {
        code: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// Never answers.
    Hang,
    /// Answers as `then` once the test releases it (`Notify::notify_one`):
    /// a model still thinking while something else happens.
    Held {
        then: Box<Scripted>,
        release: Arc<tokio::sync::Notify>,
    },
    /// 200 with a body that is not JSON.
    Malformed,
    /// Text streamed `chunk_chars` at a time, each delta `every` after the
    /// last (answered whole when not asked to stream).
    Streamed {
        text: String,
        chunk_chars: usize,
        every: Duration,
    },
    /// Text the model stopped writing at its token limit: `finish_reason:
    /// "length"` (OpenAI) or `stop_reason: "max_tokens"` (Anthropic), streamed or not.
    AtLimit { text: String, tokens_out: u64 },
    /// A stream that shows the first `after` characters of `text`, paced like
    /// `Streamed`, and then breaks off (a 500 when not asked to stream).
    BreaksOff {
        text: String,
        after: usize,
        chunk_chars: usize,
        every: Duration,
    },
}

impl Scripted {
    pub fn text(t: &str) -> Self {
        Scripted::Text {
            text: t.into(),
            tokens_in: 120,
            tokens_out: 30,
        }
    }

    pub fn tool(name: &str, args: Value) -> Self {
        Scripted::Tools(vec![(name.into(), args)])
    }

    /// `then`, answered only once `release` is notified.
    pub fn held(then: Scripted, release: &Arc<tokio::sync::Notify>) -> Self {
        Scripted::Held {
            then: Box::new(then),
            release: release.clone(),
        }
    }

    /// `text` streamed `chunk_chars` characters every `every`.
    pub fn streamed(text: &str, chunk_chars: usize, every: Duration) -> Self {
        Scripted::Streamed {
            text: text.into(),
            chunk_chars,
            every,
        }
    }

    pub fn status(code: u16, body: &str) -> Self {
        Scripted::Status {
            code,
            body: body.into(),
            headers: vec![],
        }
    }

    pub fn status_with(code: u16, body: &str, headers: &[(&str, &str)]) -> Self {
        Scripted::Status {
            code,
            body: body.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
    /// When the request (its whole body) had arrived.
    pub at: Instant,
}

#[derive(Default)]
struct ServerState {
    script: VecDeque<Scripted>,
    fallback: Option<Scripted>,
    requests: Vec<Recorded>,
    /// Extra headers on every successful answer (rate-limit headers).
    success_headers: Vec<(String, String)>,
    counter: u64,
    /// Models that take no images.
    blind: Vec<String>,
    /// When each answer's last byte was handed to the connection, in that order.
    ends: Vec<Instant>,
}

#[derive(Clone)]
pub struct ModelServer {
    pub url: String,
    state: Arc<Mutex<ServerState>>,
}

impl ModelServer {
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(ServerState::default()));
        let (listener, url) = super::serve::bind();
        let app = Router::new().fallback(handle).with_state(state.clone());
        super::serve::spawn(listener, app);
        Self { url, state }
    }

    /// The base URL an OpenAI-compatible client uses (`…/v1`).
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url)
    }

    pub fn push(&self, s: Scripted) -> &Self {
        self.state.lock().unwrap().script.push_back(s);
        self
    }

    pub fn fallback(&self, s: Scripted) -> &Self {
        self.state.lock().unwrap().fallback = Some(s);
        self
    }

    pub fn success_headers(&self, headers: &[(&str, &str)]) -> &Self {
        self.state.lock().unwrap().success_headers = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self
    }

    /// `model` takes no images: a request showing it one is refused with a 400.
    pub fn blind(&self, model: &str) -> &Self {
        self.state.lock().unwrap().blind.push(model.into());
        self
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// When each request arrived, oldest first (without copying their bodies).
    pub fn asked_at(&self) -> Vec<Instant> {
        self.state
            .lock()
            .unwrap()
            .requests
            .iter()
            .map(|r| r.at)
            .collect()
    }

    /// When each answer's body ended (its last byte handed to the
    /// connection; for a stream, its last event), in the order they ended:
    /// the start of the bot's "last byte → message" wait (`benches/reply_latency.rs`).
    pub fn answered_at(&self) -> Vec<Instant> {
        self.state.lock().unwrap().ends.clone()
    }
}

/// Every answer, its body's end noted in `ends`.
async fn handle(
    state: State<Arc<Mutex<ServerState>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    use futures_util::StreamExt;
    let ends = state.0.clone();
    let (parts, body) = answer(state, uri, headers, body).await.into_parts();
    // Hyper asks for the next piece of the body once it has taken the last
    // one: that moment is when the body's last byte left the server.
    let end = futures_util::stream::once(async move {
        ends.lock().unwrap().ends.push(Instant::now());
    })
    .filter_map(|()| async { None::<Result<Bytes, axum::Error>> });
    let noted = axum::body::Body::from_stream(body.into_data_stream().chain(end));
    Response::from_parts(parts, noted)
}

async fn answer(
    State(state): State<Arc<Mutex<ServerState>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_string();
    if path.ends_with("/images/generations") {
        state.lock().unwrap().requests.push(Recorded {
            path: path.clone(),
            headers: HashMap::new(),
            body: body.clone(),
            at: Instant::now(),
        });
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake image bytes");
        return axum::Json(json!({"data": [{"b64_json": png}]})).into_response();
    }
    if path == "/api/tags" {
        // Ollama's model list: answering it makes the server look like a local Ollama.
        return axum::Json(json!({"models": [{"name": "qwen2.5:14b"}]})).into_response();
    }
    let anthropic = path.ends_with("/v1/messages");
    let blind = state
        .lock()
        .unwrap()
        .blind
        .iter()
        .any(|m| body["model"].as_str() == Some(m.as_str()));
    if let Some(why) = image_problem(anthropic, &body, blind) {
        state.lock().unwrap().requests.push(Recorded {
            path: path.clone(),
            headers: HashMap::new(),
            body: body.clone(),
            at: Instant::now(),
        });
        let error = if anthropic {
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": why}})
        } else {
            json!({"error": {"message": why, "type": "invalid_request_error", "code": null}})
        };
        return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
    }
    let (scripted, n, extra) = {
        let mut s = state.lock().unwrap();
        s.requests.push(Recorded {
            path: path.clone(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
                .collect(),
            body: body.clone(),
            at: Instant::now(),
        });
        s.counter += 1;
        let next = s.script.pop_front().or_else(|| s.fallback.clone());
        (next, s.counter, s.success_headers.clone())
    };
    let scripted = match scripted {
        Some(Scripted::Held { then, release }) => {
            release.notified().await;
            Some(*then)
        }
        other => other,
    };
    let model = body["model"].as_str().unwrap_or("scripted").to_string();
    if body["stream"] == json!(true)
        && let Some(scripted) = &scripted
    {
        let plan = Plan {
            anthropic,
            model: &model,
            n,
            include_usage: body["stream_options"]["include_usage"] == json!(true),
            tokens: (120, 30),
            chunk_chars: 24,
            every: Duration::ZERO,
            at_limit: false,
        };
        if let Some(sse) = streamed(scripted, plan) {
            return sse.into_response(&extra);
        }
    }
    let Some(scripted) = scripted else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the test script is exhausted",
        )
            .into_response();
    };
    let ok = |v: Value| {
        let mut r = (StatusCode::OK, axum::Json(v)).into_response();
        for (k, v) in &extra {
            r.headers_mut().insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        r
    };
    match scripted {
        Scripted::Text {
            text,
            tokens_in,
            tokens_out,
        } => ok(if anthropic {
            json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": model,
                   "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}})
        } else {
            json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}})
        }),
        Scripted::Tools(calls) => {
            let raw: Vec<(String, String, Value)> = calls
                .into_iter()
                .enumerate()
                .map(|(i, (name, args))| (format!("call_{n}_{i}"), name, args))
                .collect();
            ok(tool_response(
                anthropic,
                &model,
                raw.into_iter()
                    .map(|(id, name, args)| (id, name, Some(args), String::new()))
                    .collect(),
            ))
        }
        Scripted::RawToolCall { name, arguments } => ok(tool_response(
            anthropic,
            &model,
            vec![(format!("call_{n}_0"), name, None, arguments)],
        )),
        Scripted::Status {
            code,
            body,
            headers,
        } => {
            let mut r = (StatusCode::from_u16(code).unwrap(), body).into_response();
            for (k, v) in headers {
                r.headers_mut().insert(
                    axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            r
        }
        // Held answers were released and unwrapped above.
        Scripted::Hang | Scripted::Held { .. } => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        Scripted::Malformed => (StatusCode::OK, "{\"choices\": [ this is not json").into_response(),
        Scripted::Streamed { text, .. } => ok(if anthropic {
            json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": model,
                   "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 120, "output_tokens": 30}})
        } else {
            json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}})
        }),
        Scripted::BreaksOff { .. } => {
            (StatusCode::INTERNAL_SERVER_ERROR, "upstream cut off").into_response()
        }
        Scripted::AtLimit { text, tokens_out } => ok(if anthropic {
            json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": model,
                   "content": [{"type": "text", "text": text}], "stop_reason": "max_tokens",
                   "usage": {"input_tokens": 120, "output_tokens": tokens_out}})
        } else {
            json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}],
                   "usage": {"prompt_tokens": 120, "completion_tokens": tokens_out, "total_tokens": 120 + tokens_out}})
        }),
    }
}

/// The streamed form of a scripted answer; `None` for those answered the
/// same either way (errors, a hang, a malformed body).
fn streamed(scripted: &Scripted, mut plan: Plan<'_>) -> Option<Sse> {
    match scripted {
        Scripted::Text {
            text,
            tokens_in,
            tokens_out,
        } => {
            plan.tokens = (*tokens_in, *tokens_out);
            Some(plan.text(text, None))
        }
        Scripted::Streamed {
            text,
            chunk_chars,
            every,
        } => {
            plan.chunk_chars = *chunk_chars;
            plan.every = *every;
            Some(plan.text(text, None))
        }
        Scripted::AtLimit { text, tokens_out } => {
            plan.tokens = (120, *tokens_out);
            plan.at_limit = true;
            Some(plan.text(text, None))
        }
        Scripted::BreaksOff {
            text,
            after,
            chunk_chars,
            every,
        } => {
            plan.chunk_chars = *chunk_chars;
            plan.every = *every;
            Some(plan.text(text, Some(*after)))
        }
        Scripted::Tools(calls) => {
            plan.tokens = (100, 20);
            let calls: Vec<(String, String, String)> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| {
                    (
                        format!("call_{}_{i}", plan.n),
                        name.clone(),
                        args.to_string(),
                    )
                })
                .collect();
            Some(plan.tools(&calls))
        }
        Scripted::RawToolCall { name, arguments } => {
            plan.tokens = (100, 20);
            Some(plan.tools(&[(
                format!("call_{}_0", plan.n),
                name.clone(),
                arguments.clone(),
            )]))
        }
        // Held answers were released and unwrapped before this is asked.
        Scripted::Status { .. } | Scripted::Hang | Scripted::Malformed | Scripted::Held { .. } => {
            None
        }
    }
}

/// What the provider would refuse about the request's images, in its words.
fn image_problem(anthropic: bool, body: &Value, blind: bool) -> Option<String> {
    use base64::Engine as _;
    let parts: Vec<&Value> = body["messages"]
        .as_array()?
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "image" || p["type"] == "image_url")
        .collect();
    if parts.is_empty() {
        return None;
    }
    if blind {
        return Some(format!(
            "image input is not supported by model {}",
            body["model"]
        ));
    }
    for part in parts {
        let (media_type, data) = if anthropic {
            let source = &part["source"];
            if source["type"] != "base64" {
                return Some("messages: image source type must be base64".into());
            }
            (
                source["media_type"].as_str().unwrap_or("").to_string(),
                source["data"].as_str().unwrap_or("").to_string(),
            )
        } else {
            let url = part["image_url"]["url"].as_str().unwrap_or("");
            if url.starts_with("https://") || url.starts_with("http://") {
                continue;
            }
            let Some((head, data)) = url
                .strip_prefix("data:")
                .and_then(|rest| rest.split_once(";base64,"))
            else {
                return Some("Invalid image_url: expected a data URL or an http(s) URL.".into());
            };
            (head.to_string(), data.to_string())
        };
        let format = match media_type.as_str() {
            "image/jpeg" => image::ImageFormat::Jpeg,
            "image/png" => image::ImageFormat::Png,
            "image/gif" => image::ImageFormat::Gif,
            "image/webp" => image::ImageFormat::WebP,
            other => return Some(format!("Unsupported image media type {other:?}")),
        };
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&data) else {
            return Some("Invalid image: the base64 data could not be decoded.".into());
        };
        if bytes.len() > 5 * 1024 * 1024 {
            return Some("image exceeds 5 MB maximum".into());
        }
        if image::guess_format(&bytes).ok() != Some(format) {
            return Some(format!(
                "Image does not match the provided media type {media_type}"
            ));
        }
        let Ok((w, h)) =
            image::ImageReader::with_format(std::io::Cursor::new(&bytes), format).into_dimensions()
        else {
            return Some("Invalid image: it could not be decoded.".into());
        };
        if w > 8000 || h > 8000 {
            return Some("image dimensions exceed max allowed size: 8000 pixels".into());
        }
    }
    None
}

/// `calls`: (id, name, parsed args, or raw argument text when args is None).
fn tool_response(
    anthropic: bool,
    model: &str,
    calls: Vec<(String, String, Option<Value>, String)>,
) -> Value {
    if anthropic {
        let content: Vec<Value> = calls
            .into_iter()
            .map(|(id, name, args, _)| json!({"type": "tool_use", "id": id, "name": name, "input": args.unwrap_or(json!({}))}))
            .collect();
        json!({"id": "msg_tools", "type": "message", "role": "assistant", "model": model, "content": content,
               "stop_reason": "tool_use", "usage": {"input_tokens": 100, "output_tokens": 20}})
    } else {
        let tool_calls: Vec<Value> = calls
            .into_iter()
            .map(|(id, name, args, raw)| {
                let arguments = args.map(|a| a.to_string()).unwrap_or(raw);
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        json!({"id": "chatcmpl-tools", "object": "chat.completion", "model": model,
               "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": tool_calls}, "finish_reason": "tool_calls"}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
    }
}
