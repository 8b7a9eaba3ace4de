//! A fake text-to-speech server on 127.0.0.1 speaking the OpenAI-compatible
//! `POST …/audio/speech` (JSON: `model`, `voice`, `input`, `response_format`):
//! it runs `espeak-ng --stdout INPUT` and answers with that WAV as
//! `audio/wav`, the way a real TTS answers. A test may instead have it answer
//! with an HTML page or with a body larger than asked; it reads what each
//! request asked for and how long each WAV it sent plays.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

/// What the server answers with.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Answer {
    /// espeak-ng's WAV of the input.
    #[default]
    Speech,
    /// A 200 with an HTML page (a login page, a proxy's error).
    Html,
    /// espeak-ng's WAV followed by this many more bytes of samples.
    Padded(usize),
    /// A 401 quoting the Authorization header back, as careless servers do.
    Refuse,
}

#[derive(Clone, Debug)]
pub struct Request {
    pub body: serde_json::Value,
    pub authorization: Option<String>,
    /// Samples per channel and the sample rate of the WAV sent back, if one was.
    pub sent: Option<(usize, u32)>,
}

#[derive(Default)]
struct Script {
    answer: Answer,
    requests: Vec<Request>,
}

#[derive(Clone)]
pub struct TtsServer {
    /// The base URL to configure (`…/v1`).
    pub base: String,
    state: Arc<Mutex<Script>>,
}

/// Whether espeak-ng can be run here (`./dev.sh` installs it).
pub fn espeak_installed() -> bool {
    std::process::Command::new("espeak-ng")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl TtsServer {
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(Script::default()));
        let (listener, url) = super::serve::bind();
        let app = Router::new().fallback(serve).with_state(state.clone());
        super::serve::spawn(listener, app);
        Self {
            base: format!("{url}/v1"),
            state,
        }
    }

    pub fn answer(&self, answer: Answer) -> &Self {
        self.state.lock().unwrap().answer = answer;
        self
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }
}

/// espeak-ng's WAV of `text`: its header is 44 bytes, 16-bit mono; the
/// data length it writes is a placeholder (it streams), so the samples are
/// counted from the bytes.
fn espeak(text: &str) -> Option<(Vec<u8>, usize, u32)> {
    let out = std::process::Command::new("espeak-ng")
        .args(["--stdout", text])
        .output()
        .ok()?;
    let wav = out.stdout;
    if !out.status.success() || wav.len() < 44 || &wav[0..4] != b"RIFF" {
        return None;
    }
    let rate = u32::from_le_bytes(wav[24..28].try_into().ok()?);
    let samples = (wav.len() - 44) / 2;
    Some((wav, samples, rate))
}

async fn serve(
    State(state): State<Arc<Mutex<Script>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let asked: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let answer = state.lock().unwrap().answer;
    let input = asked["input"].as_str().unwrap_or_default().to_string();
    let spoken = if matches!(answer, Answer::Html | Answer::Refuse) {
        None
    } else {
        tokio::task::spawn_blocking(move || espeak(&input))
            .await
            .ok()
            .flatten()
    };
    let sent = spoken.as_ref().map(|(_, samples, rate)| (*samples, *rate));
    state.lock().unwrap().requests.push(Request {
        body: asked,
        authorization,
        sent,
    });
    if answer == Answer::Refuse {
        let key = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none");
        return (
            StatusCode::UNAUTHORIZED,
            format!("invalid credentials: {key}"),
        )
            .into_response();
    }
    match (answer, spoken) {
        (Answer::Html, _) => (
            StatusCode::OK,
            [("content-type", "text/html; charset=utf-8")],
            "<html><body>Please log in</body></html>",
        )
            .into_response(),
        (Answer::Refuse, _) | (_, None) => {
            (StatusCode::INTERNAL_SERVER_ERROR, "espeak-ng failed").into_response()
        }
        (Answer::Speech, Some((wav, _, _))) => {
            ([("content-type", "audio/wav")], wav).into_response()
        }
        (Answer::Padded(more), Some((mut wav, _, _))) => {
            wav.resize(wav.len() + more, 0);
            ([("content-type", "audio/wav")], wav).into_response()
        }
    }
}
