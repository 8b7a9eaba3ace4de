//! A fake OpenAI-compatible image generator on 127.0.0.1 that refuses every
//! request, as a broken or careless one does. It checks what OpenAI checks
//! first (the route, a POST, a JSON body with a `prompt`, a bearer key) and
//! answers those mistakes as OpenAI does; then, by the mode it was started
//! in, it either refuses the key quoting it back in the spelling the prompt
//! names (see [`spellings`]), or refuses with an error message of any size.
//! It counts the calls that reached the generator.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::spellings::spellings;

/// How the generator refuses a well-formed request.
#[derive(Clone, Copy, Debug)]
pub enum Refusal {
    /// 401, quoting the key in the spelling named by the request's prompt.
    QuoteKey,
    /// 400 with an `error.message` of this many bytes.
    Sized(usize),
}

#[derive(Clone)]
pub struct ImageServer {
    /// The base URL to set as `imageGeneration.baseUrl` (ends in `/v1`).
    pub base: String,
    calls: Arc<AtomicUsize>,
    keys: Arc<Mutex<Vec<String>>>,
}

impl ImageServer {
    pub fn start(refusal: Refusal) -> Self {
        let calls = Arc::new(AtomicUsize::new(0));
        let keys = Arc::new(Mutex::new(Vec::new()));
        let (listener, url) = super::serve::bind();
        let app =
            Router::new()
                .fallback(generate)
                .with_state((refusal, calls.clone(), keys.clone()));
        super::serve::spawn(listener, app);
        Self {
            base: format!("{url}/v1"),
            calls,
            keys,
        }
    }

    /// Well-formed requests the generator got (and refused).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The bearer key of each well-formed request, in order.
    pub fn keys(&self) -> Vec<String> {
        self.keys.lock().unwrap().clone()
    }
}

type Shared = (Refusal, Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>);

fn openai_error(status: StatusCode, message: &str, code: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}});
    (status, axum::Json(body)).into_response()
}

async fn generate(
    State((refusal, calls, keys)): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if uri.path() != "/v1/images/generations" {
        let message = format!("Invalid URL ({method} {})", uri.path());
        return openai_error(StatusCode::NOT_FOUND, &message, "unknown_url");
    }
    if method != Method::POST {
        return openai_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Only POST is allowed",
            "method_not_allowed",
        );
    }
    let Some(key) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return openai_error(
            StatusCode::UNAUTHORIZED,
            "You didn't provide an API key.",
            "missing_api_key",
        );
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(prompt) = request["prompt"].as_str() else {
        return openai_error(
            StatusCode::BAD_REQUEST,
            "'prompt' is a required property",
            "invalid_value",
        );
    };
    calls.fetch_add(1, Ordering::SeqCst);
    keys.lock().unwrap().push(key.to_string());
    match refusal {
        Refusal::QuoteKey => {
            let Some((_, spelled)) = spellings(key).into_iter().find(|(name, _)| *name == prompt)
            else {
                let message = format!("the fake knows no spelling named {prompt:?}");
                return openai_error(StatusCode::BAD_REQUEST, &message, "invalid_value");
            };
            let message = format!("Incorrect API key provided: {spelled}.");
            openai_error(StatusCode::UNAUTHORIZED, &message, "invalid_api_key")
        }
        Refusal::Sized(bytes) => {
            openai_error(StatusCode::BAD_REQUEST, &"x".repeat(bytes), "invalid_value")
        }
    }
}
