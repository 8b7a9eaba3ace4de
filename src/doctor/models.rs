//! Each configured model role's endpoint answers and can call a tool: one
//! tiny request with one tool, forced, to the endpoint the role would use
//! first. The line shows the tokens it took and what they cost. A role
//! sharing its endpoint and model with another is asked once.

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::Check;
use crate::executive::endpoints::{Endpoint, Offer, Wire, resolve};
use crate::executive::{ChatRequest, ChatResponse, Message, Role, ToolChoice, ToolSpec};
use crate::executive::{anthropic, openai, prices};
use crate::settings::{ProviderKind, Secrets, Settings};

const TOOL: &str = "doctor_ping";
const TIMEOUT: Duration = Duration::from_secs(60);
/// A forced tool call's answer is a few hundred bytes; more is not a model's.
const MAX_BODY: usize = 1024 * 1024;

/// Why an endpoint gave no usable answer. The key is never part of it.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("{0}")]
    Network(String),
    #[error("an answer larger than {MAX_BODY} bytes")]
    TooLarge,
    #[error("HTTP {status}: {message}")]
    Status { status: u16, message: String },
    #[error("not what the provider sends: {0}")]
    Malformed(String),
}

/// The one request: a tool the model must call, in as few tokens as it takes.
fn request() -> ChatRequest {
    ChatRequest {
        system: "This is a health check. Call the tool.".into(),
        messages: vec![Message::user("Call doctor_ping with ok set to true.")],
        tools: vec![ToolSpec {
            name: TOOL.into(),
            description: "Answers the health check.".into(),
            schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"]}),
        }],
        tool_choice: ToolChoice::Force(TOOL.into()),
        max_tokens: 64,
    }
}

/// One check per distinct endpoint the roles use first; `skip`: each role a `!`.
pub async fn checks(settings: &Settings, secrets: &Secrets, skip: bool) -> Vec<Check> {
    if skip {
        return vec![Check::warn(
            "models",
            "not checked (--no-model)",
            "run `ambient doctor` without --no-model to make one tiny call per model",
        )];
    }
    let offer = Offer {
        secrets: secrets.clone(),
        ollama_reachable: crate::executive::ollama_answers(settings).await,
    };
    let http = match crate::net::with_proxy(reqwest::Client::builder(), &settings.network).build() {
        Ok(h) => h,
        Err(e) => return vec![Check::fail("models", e.to_string(), "check network.proxy")],
    };
    // (endpoint, the roles it serves first)
    let mut firsts: Vec<(Endpoint, Vec<Role>)> = Vec::new();
    let mut out = Vec::new();
    for role in Role::ALL {
        if role.settings(settings).provider == ProviderKind::None {
            out.push(Check::ok(
                format!("model for {role}"),
                format!("none, as executive.roles.{role}.provider says"),
            ));
            continue;
        }
        let resolution = resolve(role, settings, &offer);
        match resolution.endpoints.first().cloned() {
            Some(ep) => match firsts
                .iter_mut()
                .find(|(e, _)| e.base_url == ep.base_url && e.model == ep.model)
            {
                Some((_, roles)) => roles.push(role),
                None => firsts.push((ep, vec![role])),
            },
            None => out.push(Check::fail(
                format!("model for {role}"),
                resolution.why_unavailable(role),
                format!("set a provider's key in the environment or executive.roles.{role}"),
            )),
        }
    }
    for (ep, roles) in &firsts {
        out.push(one(&http, settings, ep, roles).await);
    }
    out
}

async fn one(http: &reqwest::Client, settings: &Settings, ep: &Endpoint, roles: &[Role]) -> Check {
    let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
    let name = format!("model {} ({})", ep.model, names.join(", "));
    let setting = format!("executive.roles.{}.model", names[0]);
    let answer = match ask(http, ep).await {
        Ok(a) => a,
        Err(why) => {
            return Check::fail(
                name,
                format!("{}: {why}", ep.url()),
                format!("check the provider's key and {setting} (and baseUrl), or its status page"),
            );
        }
    };
    let (tin, tout) = (answer.usage.input, answer.usage.output);
    let cost = match prices::cost(
        &settings.executive.prices,
        &ep.model,
        !ep.pay_per_token,
        tin,
        tout,
    ) {
        _ if !ep.pay_per_token => "no charge (a local endpoint)".to_string(),
        Some(usd) => format!("${usd:.6}"),
        None => "cost unknown (no price in executive.prices)".into(),
    };
    let spent = format!("{tin} tokens in, {tout} out, {cost}");
    if answer.tool_uses().iter().any(|(_, tool, _)| tool == TOOL) {
        Check::ok(name, format!("called the tool; {spent}"))
    } else {
        Check::fail(
            name,
            format!("answered without calling the tool it was made to call; {spent}"),
            format!(
                "choose a model that supports tool calls in {setting}: replies, memory and initiative use them"
            ),
        )
    }
}

/// Sends the request as the executive does (same wire body and headers), bounded.
async fn ask(http: &reqwest::Client, ep: &Endpoint) -> Result<ChatResponse, AskError> {
    let req = request();
    let body = match ep.wire {
        Wire::Anthropic => anthropic::body(&req, &ep.model),
        Wire::OpenAi => openai::body(&req, &ep.model, ep.is_official_openai()),
    };
    let mut headers = HeaderMap::new();
    let key = ep.key.as_ref().map(|k| k.expose());
    let mut secret = |name, value: String| {
        if let Ok(mut v) = HeaderValue::from_str(&value) {
            v.set_sensitive(true);
            headers.insert(name, v);
        }
    };
    match (ep.wire, key) {
        (Wire::Anthropic, k) => {
            secret("anthropic-version", anthropic::API_VERSION.into());
            if let Some(k) = k {
                secret("x-api-key", k.into());
            }
        }
        (Wire::OpenAi, Some(k)) => secret(AUTHORIZATION.as_str(), format!("Bearer {k}")),
        (Wire::OpenAi, None) => {}
    }
    let mut resp = http
        .post(ep.url())
        .headers(headers)
        .timeout(TIMEOUT)
        .json(&body)
        .send()
        .await
        .map_err(|e| AskError::Network(crate::net::error_chain(&e)))?;
    let status = resp.status();
    let mut bytes = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| AskError::Network(crate::net::error_chain(&e)))?
    {
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(AskError::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if !status.is_success() {
        let said: String = json["error"]["message"]
            .as_str()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        // A provider may echo the key it refused; it is not shown.
        let message = match key {
            Some(k) if !k.is_empty() => said.replace(k, "[redacted]"),
            _ => said,
        };
        return Err(AskError::Status {
            status: status.as_u16(),
            message,
        });
    }
    match ep.wire {
        Wire::Anthropic => anthropic::parse(&json),
        Wire::OpenAi => openai::parse(&json),
    }
    .map_err(|e| AskError::Malformed(e.to_string()))
}
