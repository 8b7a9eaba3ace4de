//! Each configured model role's endpoint answers and can call a tool: one
//! tiny request with one tool, forced, to the endpoint the role would use
//! first. The line shows the tokens it took and what they cost. A role
//! sharing its endpoint and model with another is asked once.

use serde_json::json;

use super::Check;
use crate::executive::endpoints::{Endpoint, Offer, resolve};
use crate::executive::probe::Probe;
use crate::executive::{ChatRequest, Message, ToolChoice, ToolSpec, prices};
use crate::settings::Role;
use crate::settings::{ProviderKind, Secrets, Settings};

const TOOL: &str = "doctor_ping";

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
pub(crate) async fn checks(settings: &Settings, secrets: &Secrets, skip: bool) -> Vec<Check> {
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
    let probe = match Probe::new(&settings.network) {
        Ok(p) => p,
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
        out.push(one(&probe, settings, ep, roles).await);
    }
    out
}

async fn one(probe: &Probe, settings: &Settings, ep: &Endpoint, roles: &[Role]) -> Check {
    let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
    let name = format!("model {} ({})", ep.model, names.join(", "));
    let setting = format!("executive.roles.{}.model", names[0]);
    let answer = match probe.ask(ep, &request()).await {
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
