//! A fake speech-to-text server on 127.0.0.1 speaking the OpenAI-compatible
//! `POST …/audio/transcriptions` (multipart: `file`, `model`, …). Tests queue
//! the transcripts it answers with, may make it slow, and read what it got:
//! each upload's WAV (parsed from its header) and headers, and how many
//! requests reached it at all.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Clone, Debug)]
pub struct Upload {
    /// Samples in the uploaded WAV (16-bit mono).
    pub samples: usize,
    pub sample_rate: u32,
    pub model: bool,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Script {
    texts: VecDeque<String>,
    fallback: String,
    delay: Duration,
    uploads: Vec<Upload>,
    /// Every request that reached it, a WAV in it or not.
    requests: usize,
    in_flight: usize,
    max_in_flight: usize,
    /// Answer every upload with this status, quoting the Authorization header
    /// back (as careless servers do in their error bodies).
    refuse: Option<StatusCode>,
}

#[derive(Clone)]
pub struct SttServer {
    /// The base URL to configure (`…/v1`).
    pub base: String,
    state: Arc<Mutex<Script>>,
}

impl SttServer {
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(Script {
            fallback: "(nothing scripted)".into(),
            ..Default::default()
        }));
        let (listener, url) = super::serve::bind();
        let app = Router::new().fallback(serve).with_state(state.clone());
        super::serve::spawn(listener, app);
        let base = format!("{url}/v1");
        Self { base, state }
    }

    pub fn say(&self, text: &str) -> &Self {
        self.state.lock().unwrap().texts.push_back(text.into());
        self
    }

    pub fn slow(&self, delay: Duration) -> &Self {
        self.state.lock().unwrap().delay = delay;
        self
    }

    pub fn refuse(&self, status: u16) -> &Self {
        self.state.lock().unwrap().refuse = Some(StatusCode::from_u16(status).unwrap());
        self
    }

    /// How many requests reached it at all.
    pub fn requests(&self) -> usize {
        self.state.lock().unwrap().requests
    }

    pub fn uploads(&self) -> Vec<Upload> {
        self.state.lock().unwrap().uploads.clone()
    }

    /// The most uploads it ever had in progress at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.lock().unwrap().max_in_flight
    }
}

fn wav_of(body: &[u8]) -> Option<(usize, u32)> {
    let at = body.windows(4).position(|w| w == b"RIFF")?;
    let wav = &body[at..];
    let rate = u32::from_le_bytes(wav.get(24..28)?.try_into().ok()?);
    let data = u32::from_le_bytes(wav.get(40..44)?.try_into().ok()?);
    Some((data as usize / 2, rate))
}

async fn serve(
    State(state): State<Arc<Mutex<Script>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.lock().unwrap().requests += 1;
    let Some((samples, sample_rate)) = wav_of(&body) else {
        return (StatusCode::BAD_REQUEST, "no WAV in the upload").into_response();
    };
    let text = String::from_utf8_lossy(&body);
    let delay = {
        let mut s = state.lock().unwrap();
        s.uploads.push(Upload {
            samples,
            sample_rate,
            model: text.contains("name=\"model\""),
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(String::from),
        });
        if let Some(status) = s.refuse {
            let key = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none");
            return (status, format!("invalid credentials: {key}")).into_response();
        }
        s.in_flight += 1;
        s.max_in_flight = s.max_in_flight.max(s.in_flight);
        s.delay
    };
    tokio::time::sleep(delay).await;
    let answer = {
        let mut s = state.lock().unwrap();
        s.in_flight -= 1;
        s.texts.pop_front().unwrap_or_else(|| s.fallback.clone())
    };
    axum::Json(serde_json::json!({ "text": answer })).into_response()
}
