//! One request to one endpoint, sent exactly as the executive sends it (the
//! same client, wire body and headers) but without retries, budgets, a
//! usage record or a journal line: what `ambient doctor` asks each model to
//! see that it answers and can call a tool. The answer is bounded, and no
//! error carries the key, even one the provider echoes back.

use std::time::Duration;

use serde_json::Value;

use super::{
    ChatRequest, ChatResponse, Endpoint, provider_client, wire_body, wire_headers, wire_parse,
};
use crate::settings::NetworkSettings;

/// A forced tool call's answer is a few hundred bytes; more is not a model's.
const MAX_BODY: usize = 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(60);

/// Why an endpoint gave no usable answer. The key is never part of it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProbeError {
    #[error("{0}")]
    Network(String),
    #[error("an answer larger than {MAX_BODY} bytes")]
    TooLarge,
    #[error("HTTP {status}: {message}")]
    Status { status: u16, message: String },
    #[error("not what the provider sends: {0}")]
    Malformed(String),
}

/// The providers' client, built once for any number of probes.
pub(crate) struct Probe {
    http: reqwest::Client,
}

impl Probe {
    pub(crate) fn new(network: &NetworkSettings) -> Result<Self, ProbeError> {
        let http = provider_client(network).map_err(|e| ProbeError::Network(e.to_string()))?;
        Ok(Self { http })
    }

    /// Sends `req` to `ep` once and reads the whole answer.
    pub(crate) async fn ask(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
    ) -> Result<ChatResponse, ProbeError> {
        let network = |e: reqwest::Error| ProbeError::Network(crate::net::error_chain(&e));
        let mut resp = self
            .http
            .post(ep.url())
            .headers(wire_headers(ep))
            .timeout(TIMEOUT)
            .json(&wire_body(ep, req))
            .send()
            .await
            .map_err(network)?;
        let status = resp.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(network)? {
            if bytes.len() + chunk.len() > MAX_BODY {
                return Err(ProbeError::TooLarge);
            }
            bytes.extend_from_slice(&chunk);
        }
        let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(ProbeError::Status {
                status: status.as_u16(),
                message: refusal(&json, ep),
            });
        }
        wire_parse(ep, &json).map_err(|e| ProbeError::Malformed(e.to_string()))
    }
}

/// The provider's own words for a refusal, short, without the key it may
/// have echoed.
fn refusal(json: &Value, ep: &Endpoint) -> String {
    let said: String = json["error"]["message"]
        .as_str()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    match ep.key.as_ref().map(|k| k.expose()) {
        Some(k) if !k.is_empty() => said.replace(k, "[redacted]"),
        _ => said,
    }
}
