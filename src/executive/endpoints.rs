//! Which model serves each role: explicit settings, or a chain picked from
//! what the environment offers.
//!
//! Roles: `reply` (answering people), `ambient` (initiative and garden),
//! `reflex` (level-2 reflexes), `extract` (memory extraction). With
//! `provider: auto`, the strong roles prefer the strongest hosted model
//! (Anthropic, then OpenAI, then OpenRouter, then a local Ollama); the cheap
//! roles prefer the local model first. Pay-per-token endpoints (hosted APIs
//! with keys) serve the autonomous roles only when the operator opted in
//! (`executive.allowPayPerTokenForAutonomous`), as the garden seed asks.

use crate::settings::{ProviderKind, RoleSettings, Secret, Secrets, Settings, Vision};

use crate::settings::Role;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
}

/// One concrete place to send a role's requests.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub provider: ProviderKind,
    pub wire: Wire,
    pub base_url: String,
    pub key: Option<Secret>,
    pub model: String,
    /// Costs money per token (a hosted API), as opposed to a local server.
    pub pay_per_token: bool,
    /// The model takes images (`executive.roles.<role>.vision`, see `vision`).
    pub vision: bool,
}

impl Endpoint {
    pub(crate) fn provider_name(&self) -> &'static str {
        provider_name(self.provider)
    }

    /// Identifies the provider for health and rate-limit bookkeeping.
    pub(crate) fn health_key(&self) -> String {
        format!("{}@{}", self.provider_name(), self.base_url)
    }

    pub(crate) fn url(&self) -> String {
        match self.wire {
            Wire::Anthropic => super::anthropic::url(&self.base_url),
            Wire::OpenAi => super::openai::url(&self.base_url),
        }
    }

    pub(crate) fn is_official_openai(&self) -> bool {
        self.base_url.contains("api.openai.com")
    }
}

pub(crate) fn provider_name(p: ProviderKind) -> &'static str {
    match p {
        ProviderKind::Auto => "auto",
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::Openai => "openai",
        ProviderKind::Openrouter => "openrouter",
        ProviderKind::Ollama => "ollama",
        ProviderKind::None => "none",
    }
}

/// What the environment offers: found at start, looked at again on a settings reload.
#[derive(Clone, Debug, Default)]
pub(crate) struct Offer {
    pub secrets: Secrets,
    pub ollama_reachable: bool,
}

/// The endpoints for a role, best first, and why others were left out.
#[derive(Clone, Debug, Default)]
pub struct Resolution {
    pub endpoints: Vec<Endpoint>,
    pub excluded: Vec<String>,
}

impl Resolution {
    /// Why no endpoint is left, without naming a role (so roles can share it).
    pub(crate) fn reason(&self) -> String {
        if self.excluded.is_empty() {
            "none is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY (optionally with OPENAI_BASE_URL) \
             or OPENROUTER_API_KEY, run Ollama locally, or choose a provider in executive.roles"
                .into()
        } else {
            self.excluded.join("; ")
        }
    }

    /// Why the role cannot run, in words for people.
    pub(crate) fn why_unavailable(&self, role: Role) -> String {
        format!("no model for the {role} role: {}", self.reason())
    }
}

pub(crate) fn resolve(role: Role, s: &Settings, offer: &Offer) -> Resolution {
    let rs = role.settings(s);
    let candidates: Vec<ProviderKind> = match rs.provider {
        ProviderKind::None => {
            return Resolution {
                endpoints: vec![],
                excluded: vec![format!("executive.roles.{role}.provider is \"none\"")],
            };
        }
        ProviderKind::Auto if role.is_strong() => vec![
            ProviderKind::Anthropic,
            ProviderKind::Openai,
            ProviderKind::Openrouter,
            ProviderKind::Ollama,
        ],
        ProviderKind::Auto => vec![
            ProviderKind::Ollama,
            ProviderKind::Openai,
            ProviderKind::Anthropic,
            ProviderKind::Openrouter,
        ],
        explicit => vec![explicit],
    };
    let explicit = rs.provider != ProviderKind::Auto;
    let mut out = Resolution::default();
    for provider in candidates {
        let Some(ep) = endpoint(provider, role, rs, s, offer, explicit) else {
            continue;
        };
        if role.is_autonomous()
            && ep.pay_per_token
            && !s.executive.allow_pay_per_token_for_autonomous
        {
            out.excluded.push(format!(
                "{} is pay-per-token, which autonomous roles use only with \
                 executive.allowPayPerTokenForAutonomous set to true (capped by budget.payPerTokenDailyTokens)",
                ep.provider_name()
            ));
            continue;
        }
        out.endpoints.push(ep);
    }
    out
}

fn endpoint(
    provider: ProviderKind,
    role: Role,
    rs: &RoleSettings,
    s: &Settings,
    offer: &Offer,
    explicit: bool,
) -> Option<Endpoint> {
    let secrets = &offer.secrets;
    // A role's baseUrl only applies to the provider it names explicitly.
    let custom_base = (explicit && !rs.base_url.is_empty()).then(|| rs.base_url.clone());
    let (wire, base, key) = match provider {
        ProviderKind::Anthropic => {
            let key = secrets.anthropic_api_key.clone();
            if key.is_none() && !explicit {
                return None;
            }
            (
                Wire::Anthropic,
                custom_base.unwrap_or_else(|| "https://api.anthropic.com".into()),
                key,
            )
        }
        ProviderKind::Openai => {
            let key = secrets.openai_api_key.clone();
            let env_base = secrets.openai_base_url.clone();
            // A local OpenAI-compatible server may need no key, only a URL.
            if key.is_none() && env_base.is_none() && !explicit {
                return None;
            }
            let base = custom_base
                .or(env_base)
                .unwrap_or_else(|| "https://api.openai.com/v1".into());
            (Wire::OpenAi, base, key)
        }
        ProviderKind::Openrouter => {
            let key = secrets.openrouter_api_key.clone();
            if key.is_none() && !explicit {
                return None;
            }
            (
                Wire::OpenAi,
                custom_base.unwrap_or_else(|| "https://openrouter.ai/api/v1".into()),
                key,
            )
        }
        ProviderKind::Ollama => {
            if !offer.ollama_reachable && !explicit {
                return None;
            }
            let base = custom_base.unwrap_or_else(|| {
                format!("{}/v1", s.executive.ollama_base_url.trim_end_matches('/'))
            });
            (Wire::OpenAi, base, None)
        }
        ProviderKind::Auto | ProviderKind::None => return None,
    };
    let model = if rs.model.is_empty() {
        default_model(provider, role.is_strong()).to_string()
    } else {
        rs.model.clone()
    };
    let pay_per_token = provider != ProviderKind::Ollama && !is_local_url(&base);
    let vision = match rs.vision {
        Vision::On => true,
        Vision::Off => false,
        Vision::Auto => super::seeing::sees_images(&model),
    };
    Some(Endpoint {
        vision,
        provider,
        wire,
        base_url: base,
        key,
        model,
        pay_per_token,
    })
}

/// The model used when a role names none: the strongest for reply/ambient,
/// a small fast one for reflex/extract.
pub(crate) fn default_model(provider: ProviderKind, strong: bool) -> &'static str {
    match (provider, strong) {
        (ProviderKind::Anthropic, true) => "claude-opus-4-6",
        (ProviderKind::Anthropic, false) => "claude-haiku-4-5",
        (ProviderKind::Openai, true) => "gpt-5.2",
        (ProviderKind::Openai, false) => "gpt-5-mini",
        (ProviderKind::Openrouter, true) => "anthropic/claude-opus-4.6",
        (ProviderKind::Openrouter, false) => "openai/gpt-5-mini",
        (ProviderKind::Ollama, _) => "qwen2.5:14b",
        (ProviderKind::Auto | ProviderKind::None, _) => "",
    }
}

/// Loopback and private hosts are someone's own server, not a metered API.
pub(crate) fn is_local_url(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.host() {
        Some(url::Host::Domain(d)) => d == "localhost" || d.ends_with(".local"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(vars: &[(&str, &str)]) -> Offer {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Offer {
            secrets: Secrets::from_lookup(|k| {
                vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
            }),
            ollama_reachable: false,
        }
    }

    #[test]
    fn auto_prefers_the_strongest_for_reply_and_keeps_pay_per_token_off_autonomous_roles() {
        let s = Settings::default();
        let o = offer(&[("ANTHROPIC_API_KEY", "k1"), ("OPENAI_API_KEY", "k2")]);
        let reply = resolve(Role::Reply, &s, &o);
        assert_eq!(reply.endpoints.len(), 2);
        assert_eq!(reply.endpoints[0].provider, ProviderKind::Anthropic);
        assert_eq!(reply.endpoints[0].model, "claude-opus-4-6");
        let ambient = resolve(Role::Ambient, &s, &o);
        assert!(ambient.endpoints.is_empty());
        assert!(
            ambient
                .why_unavailable(Role::Ambient)
                .contains("allowPayPerTokenForAutonomous")
        );

        let mut opted = Settings::default();
        opted.executive.allow_pay_per_token_for_autonomous = true;
        assert_eq!(
            resolve(Role::Extract, &opted, &o).endpoints[0].model,
            "gpt-5-mini"
        );
    }

    #[test]
    fn a_local_openai_compatible_server_is_free_and_needs_no_key() {
        let s = Settings::default();
        let o = offer(&[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")]);
        let ambient = resolve(Role::Ambient, &s, &o);
        assert_eq!(ambient.endpoints.len(), 1);
        assert!(!ambient.endpoints[0].pay_per_token);
        assert_eq!(
            ambient.endpoints[0].url(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
    }

    #[test]
    fn nothing_configured_says_what_to_do() {
        let r = resolve(Role::Reply, &Settings::default(), &offer(&[]));
        assert!(r.endpoints.is_empty());
        assert!(
            r.why_unavailable(Role::Reply)
                .starts_with("no model for the reply role: none is configured")
        );
        assert!(r.reason().contains("ANTHROPIC_API_KEY"));
    }
}
