//! Speech to text through an OpenAI-compatible `/audio/transcriptions`
//! endpoint (OpenAI, Groq, a local whisper.cpp or faster-whisper server):
//! `voice.transcription.baseUrl` (…/v1), `model`, `language`, and the key
//! from `TRANSCRIPTION_API_KEY`.
//!
//! Each utterance is uploaded as WAV through the guarded fetcher
//! (`net::Fetcher::post`): a private endpoint only with `allowPrivate`, never
//! redirected, the answer at most `network.maxResponseBytes`, the whole
//! request at most `timeoutSeconds`. At most `maxConcurrent` uploads run at
//! once; 429 and 5xx answers and timeouts are retried like the executive's
//! calls (`executive.maxRetries`, exponential backoff, `retry-after`
//! honoured); every attempt is a usage record (role `transcribe`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::multipart::{Form, Part};
use tokio::sync::Semaphore;

use crate::clock::SharedClock;
use crate::ids::GuildId;
use crate::net::fetch::is_private;
use crate::net::{FetchError, Fetcher, PostBody};
use crate::settings::{Secrets, SettingsService, TranscriptionSettings};
use crate::store::usage::UsageRecord;
use crate::voice::Stores;

/// Transcripts that are only a model's way of saying "nothing was said".
const EMPTY_MARKERS: &[&str] = &[
    "[blank_audio]",
    "(silence)",
    "[silence]",
    "[music]",
    "(music)",
    "you",
];

/// The longest `retry-after` waited for inline.
const MAX_WAIT: Duration = Duration::from_secs(30);

pub struct Transcriber {
    settings: Arc<SettingsService>,
    secrets: Secrets,
    store: Stores,
    clock: SharedClock,
    slots: Semaphore,
}

/// Why an utterance has no transcript, as text with every secret masked: an
/// endpoint may quote the key it refused, and this goes to the journal.
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
pub struct Untranscribed {
    pub why: String,
}

/// Why an utterance has no transcript. Masked into text by
/// [`Transcriber::transcribe`] before anyone sees it (an endpoint may quote
/// the key it refused); the integration tests read that text.
#[derive(Debug, thiserror::Error)]
enum TranscribeError {
    /// No endpoint, or a private one not allowed (`unconfigured` says which).
    #[error("{0}")]
    Unconfigured(String),
    #[error("transcription is shutting down")]
    ShuttingDown,
    /// The endpoint's answer will not change on retry (its words, cut short).
    #[error("{0}")]
    Failed(String),
    #[error("{detail} (after {attempts} attempts)")]
    GaveUp { detail: String, attempts: u32 },
    #[error("{detail}; asked to wait {seconds} s")]
    WaitTooLong { detail: String, seconds: u64 },
}

enum Attempt {
    Ok(String),
    Retry {
        outcome: &'static str,
        detail: String,
        wait: Option<Duration>,
    },
    Fail {
        outcome: &'static str,
        detail: String,
    },
}

impl Transcriber {
    pub fn new(
        settings: Arc<SettingsService>,
        secrets: Secrets,
        store: Stores,
        clock: SharedClock,
    ) -> Self {
        let max = settings.global().voice.transcription.max_concurrent.max(1) as usize;
        Self {
            settings,
            secrets,
            store,
            clock,
            slots: Semaphore::new(max),
        }
    }

    /// Why transcription cannot run, if it cannot. An endpoint that is
    /// plainly private (an IP literal, `localhost`) without its setting is
    /// said here, at join time, rather than in every utterance's error
    /// (an upload is refused by the guarded fetcher all the same).
    pub(crate) fn unavailable(&self) -> Option<String> {
        self.unconfigured().or_else(|| self.plainly_private())
    }

    fn unconfigured(&self) -> Option<String> {
        let t = &self.settings.global().voice.transcription;
        t.base_url.trim().is_empty().then(|| {
            "no speech-to-text endpoint is configured: set voice.transcription.baseUrl (OpenAI, Groq, or a local \
             whisper.cpp server's …/v1) and, if it needs one, TRANSCRIPTION_API_KEY"
                .to_string()
        })
    }

    fn plainly_private(&self) -> Option<String> {
        let settings = self.settings.global();
        let t = &settings.voice.transcription;
        if t.allow_private || settings.network.allow_private_hosts {
            return None;
        }
        let url = url::Url::parse(&t.base_url).ok()?;
        let private = match url.host() {
            Some(url::Host::Ipv4(ip)) => is_private(ip.into()),
            Some(url::Host::Ipv6(ip)) => is_private(ip.into()),
            Some(url::Host::Domain(h)) => h == "localhost" || h.ends_with(".localhost"),
            None => false,
        };
        private.then(|| {
            format!(
                "the speech-to-text endpoint {} is on a private address: if it is your own server \
                 (a local whisper.cpp), set voice.transcription.allowPrivate to true",
                t.base_url
            )
        })
    }

    /// The text of one utterance (empty when nothing intelligible was said).
    /// Errors are redacted: they end up in the journal, which prompts read.
    pub async fn transcribe(
        &self,
        guild: Option<GuildId>,
        wav: Vec<u8>,
        seconds: f64,
    ) -> Result<String, Untranscribed> {
        self.with_retries(guild, wav, seconds)
            .await
            .map_err(|e| Untranscribed {
                why: self.secrets.redact(&e.to_string()),
            })
    }

    async fn with_retries(
        &self,
        guild: Option<GuildId>,
        wav: Vec<u8>,
        seconds: f64,
    ) -> Result<String, TranscribeError> {
        if let Some(why) = self.unconfigured() {
            return Err(TranscribeError::Unconfigured(why));
        }
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| TranscribeError::ShuttingDown)?;
        let settings = self.settings.global();
        let max_retries = settings.executive.max_retries;
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            let result = self.send_once(&wav).await;
            let latency = started.elapsed().as_millis() as u64;
            match result {
                Attempt::Ok(text) => {
                    self.record(guild, "ok", &format!("{seconds:.1} s of audio"), latency);
                    let text = text.trim().to_string();
                    let empty = EMPTY_MARKERS.contains(
                        &text
                            .to_lowercase()
                            .trim_matches(|c: char| c == '.' || c.is_whitespace()),
                    );
                    return Ok(if empty { String::new() } else { text });
                }
                Attempt::Fail { outcome, detail } => {
                    self.record(guild, outcome, &detail, latency);
                    return Err(TranscribeError::Failed(detail));
                }
                Attempt::Retry {
                    outcome,
                    detail,
                    wait,
                } => {
                    self.record(guild, outcome, &detail, latency);
                    if attempt >= max_retries {
                        return Err(TranscribeError::GaveUp {
                            detail,
                            attempts: attempt + 1,
                        });
                    }
                    let delay = wait.unwrap_or(Duration::from_secs(1 << attempt.min(5)));
                    if delay > MAX_WAIT {
                        return Err(TranscribeError::WaitTooLong {
                            detail,
                            seconds: delay.as_secs(),
                        });
                    }
                    self.clock.sleep(delay).await;
                    attempt += 1;
                }
            }
        }
    }

    async fn send_once(&self, wav: &[u8]) -> Attempt {
        let t = self.settings.global().voice.transcription.clone();
        let url = format!("{}/audio/transcriptions", t.base_url.trim_end_matches('/'));
        let file = match Part::bytes(wav.to_vec())
            .file_name("utterance.wav")
            .mime_str("audio/wav")
        {
            Ok(p) => p,
            Err(e) => {
                return Attempt::Fail {
                    outcome: "client_error",
                    detail: e.to_string(),
                };
            }
        };
        let mut form = Form::new()
            .part("file", file)
            .text("model", t.model.clone())
            .text("response_format", "json");
        if !t.language.trim().is_empty() {
            form = form.text("language", t.language.trim().to_string());
        }
        let headers = crate::net::bearer(self.secrets.transcription_api_key.as_ref());
        let network = &self.settings.global().network;
        let limit = network.max_response_bytes;
        let door = Fetcher::for_endpoint(network, &t.base_url, limit, t.allow_private)
            .with_timeout(Duration::from_secs(u64::from(t.timeout_seconds.max(1))));
        let answer = match door.post(&url, PostBody::Multipart(form), &headers).await {
            Ok(answer) => answer,
            Err(e) => return door_error(e, &t),
        };
        let status = answer.status;
        let wait = crate::executive::ratelimit::retry_after(&answer.headers, self.clock.now());
        let body = String::from_utf8_lossy(&answer.body);
        let snippet: String = body.chars().take(200).collect();
        match status {
            // Only a JSON `text` is a transcript: a login page or a proxy's
            // error page answered with 200 must not become someone's words.
            200..=299 => match serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["text"].as_str().map(String::from))
            {
                Some(text) => Attempt::Ok(text),
                None => Attempt::Fail {
                    outcome: "server_error",
                    detail: format!(
                        "the speech-to-text answer is not JSON with a \"text\": {snippet}"
                    ),
                },
            },
            429 => Attempt::Retry {
                outcome: "rate_limited",
                detail: format!("HTTP 429: {snippet}"),
                wait,
            },
            500..=599 => Attempt::Retry {
                outcome: "server_error",
                detail: format!("HTTP {status}: {snippet}"),
                wait,
            },
            _ => Attempt::Fail {
                outcome: "client_error",
                detail: format!("HTTP {status}: {snippet}"),
            },
        }
    }

    fn record(&self, guild: Option<GuildId>, outcome: &str, detail: &str, latency_ms: u64) {
        let t = self.settings.global().voice.transcription.clone();
        let provider = url::Url::parse(&t.base_url)
            .ok()
            .and_then(|u| u.host_str().map(String::from))
            .unwrap_or_default();
        // Harmless if lost: no budget counts transcriptions; the usage report misses one call.
        let _ = self.store.usage.usage_append(&UsageRecord {
            id: 0,
            at: self.clock.now(),
            role: "transcribe".into(),
            source: "user".into(),
            guild,
            provider,
            model: t.model,
            pay_per_token: false,
            tokens_in: 0,
            tokens_out: 0,
            latency_ms,
            outcome: outcome.into(),
            detail: self.secrets.redact(detail),
        });
    }
}

/// What the guarded fetcher's refusal means for this attempt: a refused
/// endpoint or an oversized answer will not change on retry; a timeout or a
/// broken connection may.
fn door_error(e: FetchError, t: &TranscriptionSettings) -> Attempt {
    match e {
        FetchError::Timeout(_) => Attempt::Retry {
            outcome: "timeout",
            detail: format!("no answer within {} s", t.timeout_seconds),
            wait: None,
        },
        FetchError::TooLarge(limit) => Attempt::Fail {
            outcome: "server_error",
            detail: format!("the answer is larger than {limit} bytes (network.maxResponseBytes)"),
        },
        e if e.is_private_refusal() => Attempt::Fail {
            outcome: "client_error",
            detail: format!(
                "the speech-to-text endpoint was {e}; if it is your own server (a local whisper.cpp), \
                 set voice.transcription.allowPrivate to true"
            ),
        },
        FetchError::Refused(why) => Attempt::Fail {
            outcome: "client_error",
            detail: format!("the speech-to-text endpoint was refused: {why}"),
        },
        e => Attempt::Retry {
            outcome: "network",
            detail: e.to_string(),
            wait: None,
        },
    }
}
