//! The executive: every model call in the bot goes through here.
//!
//! [`Executive::complete`] makes one model call for a role: it picks the
//! role's endpoints (`endpoints`), refuses before any request when a budget
//! would be exceeded (`budget`), retries 429/5xx/timeouts with exponential
//! backoff and jitter (honouring `retry-after`), fails over to the next
//! endpoint, puts a repeatedly failing provider on cooldown, learns rate
//! limits from headers (`ratelimit`), and writes a usage record for every
//! attempt. [`Executive::run_turn`] (in `turn`) is the bounded tool loop on
//! top of it; with a [`TextSink`] its calls stream their text as it is
//! written (`stream`, framed by `sse`). Error texts are scrubbed of secrets before they are logged,
//! journaled or stored.

use crate::store::{MessageStore, UsageStore};
pub(crate) mod anthropic;
pub(crate) mod bounds;
pub(crate) mod budget;
pub(crate) mod endpoints;
pub(crate) mod journal_search;
pub mod leases;
pub(crate) mod openai;
pub(crate) mod prices;
pub(crate) mod probe;
pub(crate) mod prompts;
pub(crate) mod ratelimit;
pub(crate) mod seeing;
pub(crate) mod snapshot;
pub(crate) mod sse;
pub(crate) mod stand_in;
pub mod stream;
pub mod tools;
pub(crate) mod turn;
pub(crate) mod vision;
pub(crate) mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

pub use endpoints::Endpoint;

use crate::settings::Role;
pub use prompts::{Prompts, Rendered};
pub use ratelimit::RateLimits;
pub use snapshot::UsageSnapshot;
pub use stand_in::StandIn;
pub use stream::TextSink;
pub use turn::{Turn, TurnOutcome, TurnResult};
pub use wire::{ChatRequest, ChatResponse, Message, Part, StopReason, ToolChoice, ToolSpec};

use crate::clock::{Chance, SharedClock};
use crate::ids::GuildId;
use crate::journal::Journal;
use crate::net::error_chain;
use crate::settings::{Secrets, SettingsService};
use crate::store::usage::UsageRecord;
use endpoints::{Offer, Resolution, Wire};

/// The longest `retry-after` we wait out in place; longer ones fail over.
const MAX_INLINE_WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecError {
    #[error("{0}")]
    Unavailable(String),
    #[error("over budget: {0}")]
    OverBudget(String),
    /// The usage a budget counts could not be read: no call is made (see
    /// `budget::BudgetRefusal::Usage`), and no other endpoint is tried.
    #[error("{0}")]
    UsageUnread(String),
    #[error("{provider} failed: {detail}")]
    Provider { provider: String, detail: String },
}

/// Why one endpoint gave no answer; the text becomes [`ExecError::Provider`]'s detail.
#[derive(Debug, Clone, thiserror::Error)]
enum EndpointFailure {
    /// Not worth retrying (malformed, refused, or broken off after it was shown).
    #[error("{detail}")]
    Failed { detail: String },
    #[error("{detail} (after {attempts} attempts)")]
    Retried { detail: String, attempts: u32 },
    /// The provider asked for a longer wait than we hold a caller for.
    #[error("{detail}; asked to wait {seconds} s")]
    WaitTooLong { detail: String, seconds: u64 },
}

/// Who a call is for.
#[derive(Clone, Debug)]
pub struct CallContext {
    pub role: Role,
    pub guild: Option<GuildId>,
}

impl CallContext {
    pub fn new(role: Role, guild: Option<GuildId>) -> Self {
        Self { role, guild }
    }

    /// Usage source: a person (reply), a reflex, or the bot's own ambient work.
    pub(crate) fn source(&self) -> &'static str {
        match self.role {
            Role::Reply => "user",
            Role::Reflex => "reflex",
            Role::Ambient | Role::Extract => "ambient",
        }
    }
}

/// A successful call: the response and the usage record that logged it.
#[derive(Clone, Debug)]
pub struct Completion {
    pub response: ChatResponse,
    pub usage_id: i64,
    pub endpoint: String,
}

/// What we know about one provider.
#[derive(Clone, Debug, Default)]
pub struct ProviderState {
    pub consecutive_failures: u32,
    pub cooling_until: Option<DateTime<Utc>>,
    pub limits: Option<RateLimits>,
    pub last_error: Option<String>,
    pub last_rate_limited: Option<DateTime<Utc>>,
}

pub struct Executive {
    http: reqwest::Client,
    settings: Arc<SettingsService>,
    secrets: Secrets,
    store: Stores,
    journal: Journal,
    clock: SharedClock,
    chance: Arc<Chance>,
    /// What the environment offers; looked at again on a settings reload ([`Executive::look_again`]).
    offer: RwLock<Offer>,
    pub prompts: Prompts,
    providers: Mutex<HashMap<String, ProviderState>>,
    /// Answers every call in place of the providers (replay's offline mode).
    stand_in: Option<Arc<dyn StandIn>>,
    /// The whole bot's daily budgets, leased (`storage.sharedUrl`); unset: static shares.
    leases: std::sync::OnceLock<Arc<leases::Leases>>,
}

/// One HTTP attempt's result.
enum Attempt {
    Ok(ChatResponse),
    Retry {
        outcome: &'static str,
        detail: String,
        wait: Option<Duration>,
    },
    Fail {
        outcome: &'static str,
        detail: String,
    },
    /// A stream that failed after some of its text was shown: not retried.
    Broken {
        partial: ChatResponse,
        detail: String,
    },
}

/// What the executive is built from. `stand_in`, when set, answers every
/// call instead of a provider (the replay's and tests' model).
pub struct Services {
    pub settings: Arc<SettingsService>,
    pub secrets: Secrets,
    pub store: Stores,
    pub journal: Journal,
    pub clock: SharedClock,
    pub chance: Arc<Chance>,
    pub prompts: Prompts,
    pub stand_in: Option<Arc<dyn StandIn>>,
}

impl Executive {
    /// Builds the executive and looks at what the environment offers (a
    /// local Ollama is probed once, briefly). With a `stand_in`, nothing is
    /// probed or sent: the stand-in says whether a local Ollama counts as
    /// offered, and answers every call.
    pub async fn new(services: Services) -> Self {
        let Services {
            settings,
            secrets,
            store,
            journal,
            clock,
            chance,
            prompts,
            stand_in,
        } = services;
        let http = provider_client(&settings.global().network).expect("HTTP client builds");
        let ollama_reachable = match &stand_in {
            Some(s) => s.ollama_reachable(),
            None => probe_ollama(&http, &settings.global().executive.ollama_base_url).await,
        };
        let prompts = prompts.limited_by(settings.clone());
        Self {
            http,
            offer: RwLock::new(Offer {
                secrets: secrets.clone(),
                ollama_reachable,
            }),
            settings,
            secrets,
            store,
            journal,
            clock,
            chance,
            prompts,
            providers: Mutex::new(HashMap::new()),
            stand_in,
            leases: std::sync::OnceLock::new(),
        }
    }

    /// Spends the whole bot's daily budgets through `leases` from now on
    /// (once; a second call changes nothing).
    pub(crate) fn lease_with(&self, leases: Arc<leases::Leases>) {
        // Already set: the first stays, as documented.
        let _ = self.leases.set(leases);
    }

    pub(crate) fn leases(&self) -> Option<&Arc<leases::Leases>> {
        self.leases.get()
    }

    pub fn resolve(&self, role: Role) -> Resolution {
        let offer = self.offer.read().unwrap_or_else(|p| p.into_inner());
        endpoints::resolve(role, &self.settings.global(), &offer)
    }

    /// Looks for a local Ollama again, at the `executive.ollamaBaseUrl` in
    /// effect now: after a settings reload, a role moved to Ollama (or a new
    /// URL) is served without a restart. Endpoints, models and budgets need
    /// nothing more: they are read from the settings at every call.
    pub(crate) async fn look_again(&self) {
        if self.stand_in.is_some() {
            return;
        }
        let base = self.settings.global().executive.ollama_base_url.clone();
        let reachable = probe_ollama(&self.http, &base).await;
        self.offer
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .ollama_reachable = reachable;
    }

    /// Whether the model that would answer for `role` sees images (its first
    /// endpoint; a blind fallback gets placeholders, see `vision`).
    pub(crate) fn sees_images(&self, role: Role) -> bool {
        self.resolve(role)
            .endpoints
            .first()
            .is_some_and(|ep| ep.vision)
    }

    /// `None` if the role can run, else why not (for status, console and logs).
    pub fn unavailable(&self, role: Role) -> Option<String> {
        let r = self.resolve(role);
        r.endpoints.is_empty().then(|| r.why_unavailable(role))
    }

    /// Why a call for `ctx` of about `estimate` tokens would be refused by a
    /// budget now (every endpoint refusing, as [`Executive::complete`] would),
    /// so a caller can stop before it builds a prompt.
    pub(crate) fn over_budget(&self, ctx: &CallContext, estimate: u64) -> Option<String> {
        let settings = self.settings.for_guild(ctx.guild);
        let now = self.clock.now();
        let mut why = None;
        for ep in self.resolve(ctx.role).endpoints {
            match budget::check(
                &self.store.usage,
                &settings,
                self.leases(),
                ctx,
                &ep,
                estimate,
                now,
            ) {
                Ok(()) => return None,
                Err(e) => {
                    self.note_unread_usage(ctx, &e);
                    why = Some(e.to_string());
                }
            }
        }
        why
    }

    /// A budget that could not count the usage refused the call, as it
    /// must: the journal says which read failed (rate-limited), so an
    /// operator sees why the bot went quiet rather than a spent budget.
    fn note_unread_usage(&self, ctx: &CallContext, why: &budget::BudgetRefusal) {
        if let budget::BudgetRefusal::Usage(e) = why {
            self.journal
                .read_failed(ctx.guild, "the usage records a budget counts", e);
        }
    }

    /// When [`Executive::over_budget`], refusing `ctx` now, would let it
    /// through if nothing more were spent: the earliest instant any of the
    /// role's endpoints fits again ([`budget::fits_again_at`]); `now` when
    /// one fits now or usage cannot be read, `None` when none ever will.
    pub(crate) fn fits_budget_again_at(
        &self,
        ctx: &CallContext,
        estimate: u64,
    ) -> Option<DateTime<Utc>> {
        let settings = self.settings.for_guild(ctx.guild);
        let now = self.clock.now();
        let mut first: Option<DateTime<Utc>> = None;
        for ep in self.resolve(ctx.role).endpoints {
            match budget::fits_again_at(&self.store.usage, &settings, ctx, &ep, estimate, now) {
                Ok(Some(at)) => first = Some(first.map_or(at, |f| f.min(at))),
                Ok(None) => {}
                // A total not read is no reason to wait.
                Err(_) => return Some(now),
            }
        }
        first
    }

    /// The likely size of `role`'s next call: the average prompt of its
    /// recent calls plus the most it may answer (what a budget reserves).
    pub(crate) fn likely_call_tokens(&self, role: Role) -> u64 {
        let prompt = self
            .store
            .usage
            .recent_prompt_tokens(role.as_str(), 20)
            .unwrap_or_default();
        prompt + u64::from(role.settings(&self.settings.global()).max_output_tokens)
    }

    /// Roles that cannot run, grouped by reason: "reply, ambient: none is configured …".
    pub(crate) fn unavailable_summary(&self) -> Vec<String> {
        let mut groups: Vec<(String, Vec<&'static str>)> = Vec::new();
        for role in Role::ALL {
            let r = self.resolve(role);
            if !r.endpoints.is_empty() {
                continue;
            }
            let reason = r.reason();
            match groups.iter_mut().find(|(why, _)| *why == reason) {
                Some((_, roles)) => roles.push(role.as_str()),
                None => groups.push((reason, vec![role.as_str()])),
            }
        }
        groups
            .into_iter()
            .map(|(why, roles)| format!("no model for {}: {why}", roles.join(", ")))
            .collect()
    }

    pub fn provider_states(&self) -> Vec<(String, ProviderState)> {
        let mut v: Vec<_> = self
            .lock_providers()
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    pub(crate) fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Whether `role`'s answers can be streamed: both wire formats stream;
    /// a stand-in (replay's offline mode) answers whole.
    pub(crate) fn can_stream(&self, role: Role) -> bool {
        self.stand_in.is_none() && !self.resolve(role).endpoints.is_empty()
    }

    /// One model call for `ctx.role`, with budgets, retries and failover.
    pub async fn complete(
        &self,
        ctx: &CallContext,
        req: &ChatRequest,
    ) -> Result<Completion, ExecError> {
        self.complete_via(ctx, req, None).await
    }

    /// [`Executive::complete`], streamed: the answer's text goes to `sink`
    /// as it arrives (see `stream`). Once any of it was shown, a failure
    /// ends the call: nothing is retried or failed over.
    pub async fn complete_streamed(
        &self,
        ctx: &CallContext,
        req: &ChatRequest,
        sink: &dyn TextSink,
    ) -> Result<Completion, ExecError> {
        self.complete_via(ctx, req, Some(sink)).await
    }

    pub(crate) async fn complete_via(
        &self,
        ctx: &CallContext,
        req: &ChatRequest,
        sink: Option<&dyn TextSink>,
    ) -> Result<Completion, ExecError> {
        let resolution = self.resolve(ctx.role);
        if resolution.endpoints.is_empty() {
            return Err(ExecError::Unavailable(resolution.why_unavailable(ctx.role)));
        }
        let settings = self.settings.for_guild(ctx.guild);
        let mut last_error = None;
        for ep in &resolution.endpoints {
            // Images cost what this endpoint's provider charges (or nothing, for a blind model).
            let estimate = vision::estimate_on(req, ep) + u64::from(req.max_tokens);
            let now = self.clock.now();
            if let Some(until) = self.cooling_until(ep, now) {
                last_error = Some(ExecError::Provider {
                    provider: ep.provider_name().into(),
                    detail: format!(
                        "skipped after repeated failures until {}",
                        until.format("%H:%M:%S UTC")
                    ),
                });
                continue;
            }
            if let Err(why) = budget::check(
                &self.store.usage,
                &settings,
                self.leases(),
                ctx,
                ep,
                estimate,
                now,
            ) {
                self.note_unread_usage(ctx, &why);
                let unread = match &why {
                    budget::BudgetRefusal::Usage(e) => Some(format!(
                        "store read failed: the usage records a budget counts: {e}"
                    )),
                    _ => None,
                };
                let why = why.to_string();
                self.record(ctx, ep, None, 0, "refused", &why);
                tracing::info!(role = %ctx.role, reason = %why, "model call refused before sending");
                if let Some(unread) = unread {
                    return Err(ExecError::UsageUnread(unread));
                }
                // A role or guild cap applies to every endpoint; only the
                // pay-per-token cap may leave a free endpoint to try.
                if !ep.pay_per_token {
                    return Err(ExecError::OverBudget(why));
                }
                last_error = Some(ExecError::OverBudget(why));
                continue;
            }
            match self.try_endpoint(ctx, ep, req, &settings, sink).await {
                Ok(done) => {
                    self.note_success(ep);
                    return Ok(done);
                }
                Err(failure) => {
                    let detail = failure.to_string();
                    self.note_failure(ep, &detail);
                    let failed = ExecError::Provider {
                        provider: ep.provider_name().into(),
                        detail,
                    };
                    if sink.is_some_and(|s| s.shown()) {
                        // Another endpoint would write another answer under the shown start.
                        return Err(failed);
                    }
                    last_error = Some(failed);
                }
            }
        }
        Err(last_error
            .unwrap_or_else(|| ExecError::Unavailable(resolution.why_unavailable(ctx.role))))
    }

    /// One endpoint, retried in place while the provider asks for it: the
    /// completion, or why this endpoint gave none (the caller fails over).
    async fn try_endpoint(
        &self,
        ctx: &CallContext,
        ep: &Endpoint,
        req: &ChatRequest,
        settings: &crate::settings::Settings,
        sink: Option<&dyn TextSink>,
    ) -> Result<Completion, EndpointFailure> {
        let req = &*vision::as_seen_by(req, ep);
        if let Some(stand_in) = &self.stand_in {
            return Ok(self.stand_in_answer(stand_in, ctx, ep, req, sink));
        }
        let mut body = wire_body(ep, req);
        if sink.is_some() {
            stream::ask_to_stream(&mut body, ep.wire);
        }
        let timeout = Duration::from_secs(u64::from(settings.executive.request_timeout_seconds));
        let max_retries = settings.executive.max_retries;
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            let result = self.attempt(ep, req, &body, timeout, sink).await;
            let latency = started.elapsed().as_millis() as u64;
            let (outcome, detail, wait) = match result {
                Attempt::Retry {
                    outcome,
                    detail,
                    wait,
                } => (outcome, detail, wait),
                done => return self.settle(ctx, ep, done, latency),
            };
            self.record(ctx, ep, None, latency, outcome, &detail);
            if attempt >= max_retries {
                tracing::warn!(provider = ep.provider_name(), outcome, detail = %detail, "model call failed after retries");
                return Err(EndpointFailure::Retried {
                    detail,
                    attempts: attempt + 1,
                });
            }
            let delay = wait.unwrap_or_else(|| self.backoff(attempt));
            if delay > MAX_INLINE_WAIT {
                return Err(EndpointFailure::WaitTooLong {
                    detail,
                    seconds: delay.as_secs(),
                });
            }
            tracing::info!(
                provider = ep.provider_name(),
                outcome,
                wait_ms = delay.as_millis() as u64,
                "retrying model call"
            );
            self.clock.sleep(delay).await;
            attempt += 1;
        }
    }

    /// Replay's stand-in answers instead of a provider, recorded like one.
    fn stand_in_answer(
        &self,
        stand_in: &Arc<dyn StandIn>,
        ctx: &CallContext,
        ep: &Endpoint,
        req: &ChatRequest,
        sink: Option<&dyn TextSink>,
    ) -> Completion {
        let response = stand_in.answer(ctx, ep, req);
        if let Some(sink) = sink {
            sink.begin();
            sink.text(&response.text());
        }
        let usage_id = self.record(ctx, ep, Some(&response), 0, "ok", "");
        Completion {
            response,
            usage_id,
            endpoint: format!("{}:{}", ep.provider_name(), ep.model),
        }
    }

    /// One request, streamed when someone is watching the answer being written.
    async fn attempt(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        body: &Value,
        timeout: Duration,
        sink: Option<&dyn TextSink>,
    ) -> Attempt {
        match sink {
            Some(sink) => {
                let max_bytes = stream::max_stream_bytes(req.max_tokens);
                let estimate_in = req.estimate_input_tokens();
                self.stream_once(ep, body, timeout, max_bytes, estimate_in, sink)
                    .await
            }
            None => self.send_once(ep, body, timeout).await,
        }
    }

    /// Records an attempt that is not retried, and turns it into the answer or the failure.
    fn settle(
        &self,
        ctx: &CallContext,
        ep: &Endpoint,
        done: Attempt,
        latency: u64,
    ) -> Result<Completion, EndpointFailure> {
        match done {
            Attempt::Ok(response) => {
                let usage_id = self.record(ctx, ep, Some(&response), latency, "ok", "");
                Ok(Completion {
                    response,
                    usage_id,
                    endpoint: format!("{}:{}", ep.provider_name(), ep.model),
                })
            }
            Attempt::Fail { outcome, detail } => {
                self.record(ctx, ep, None, latency, outcome, &detail);
                tracing::warn!(provider = ep.provider_name(), outcome, detail = %detail, "model call failed");
                Err(EndpointFailure::Failed { detail })
            }
            Attempt::Broken { partial, detail } => {
                // Its tokens were spent: the record counts them (estimated when unreported).
                self.record(ctx, ep, Some(&partial), latency, "broken", &detail);
                tracing::warn!(provider = ep.provider_name(), detail = %detail, "a streamed answer broke off after it was shown");
                Err(EndpointFailure::Failed { detail })
            }
            // The loop in `try_endpoint` keeps retries; one arriving here has no retry left.
            Attempt::Retry { detail, .. } => Err(EndpointFailure::Failed { detail }),
        }
    }

    /// 1 s, 2 s, 4 s … plus up to half again of random jitter.
    fn backoff(&self, attempt: u32) -> Duration {
        let base = Duration::from_secs(1u64 << attempt.min(6));
        base + base.mul_f64(0.5 * self.chance.fraction())
    }

    async fn send_once(&self, ep: &Endpoint, body: &Value, timeout: Duration) -> Attempt {
        match self.post(ep, body, timeout).await {
            Ok(resp) => self.read_whole(ep, resp, timeout).await,
            Err(refused) => refused,
        }
    }

    /// Sends `body` to the endpoint and notes its rate-limit headers; a
    /// successful answer is returned unread, anything else as the attempt's end.
    async fn post(
        &self,
        ep: &Endpoint,
        body: &Value,
        timeout: Duration,
    ) -> Result<reqwest::Response, Attempt> {
        let sent = self
            .http
            .post(ep.url())
            .headers(wire_headers(ep))
            .timeout(timeout)
            .json(body)
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => return Err(self.unfinished(ep, &e, timeout)),
        };
        let status = resp.status();
        let now = self.clock.now();
        self.note_limits(ep, resp.headers(), status.as_u16() == 429, now);
        if status.is_success() {
            return Ok(resp);
        }
        let wait = ratelimit::retry_after(resp.headers(), now);
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Err(self.unfinished(ep, &e, timeout)),
        };
        if status.as_u16() == 429 {
            return Err(Attempt::Retry {
                outcome: "rate_limited",
                detail: format!("rate limited (429): {}", self.error_text(&bytes)),
                wait,
            });
        }
        if status.is_server_error() {
            return Err(Attempt::Retry {
                outcome: "server_error",
                detail: format!(
                    "server error {}: {}",
                    status.as_u16(),
                    self.error_text(&bytes)
                ),
                wait,
            });
        }
        Err(Attempt::Fail {
            outcome: "client_error",
            detail: format!("refused ({}): {}", status.as_u16(), self.error_text(&bytes)),
        })
    }

    /// Reads and parses a successful answer sent whole.
    async fn read_whole(
        &self,
        ep: &Endpoint,
        resp: reqwest::Response,
        timeout: Duration,
    ) -> Attempt {
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return self.unfinished(ep, &e, timeout),
        };
        let json: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                return Attempt::Fail {
                    outcome: "malformed",
                    detail: format!("the response was not JSON ({e})"),
                };
            }
        };
        match wire_parse(ep, &json) {
            Ok(r) => Attempt::Ok(r),
            Err(what) => Attempt::Fail {
                outcome: "malformed",
                detail: format!("the response was malformed: {what}"),
            },
        }
    }

    /// A request that ended before a whole answer arrived: a timeout or a
    /// network failure, both worth another attempt.
    fn unfinished(&self, ep: &Endpoint, e: &reqwest::Error, timeout: Duration) -> Attempt {
        let (outcome, detail) = self.interruption(ep, e, timeout);
        Attempt::Retry {
            outcome,
            detail,
            wait: None,
        }
    }

    /// What cut a request short, as a usage outcome and words without secrets.
    fn interruption(
        &self,
        ep: &Endpoint,
        e: &reqwest::Error,
        timeout: Duration,
    ) -> (&'static str, String) {
        if e.is_timeout() {
            return (
                "timeout",
                format!("no complete answer within {} s", timeout.as_secs()),
            );
        }
        (
            "network",
            // A base URL may carry a user and password (a --model URL, a role's baseUrl).
            self.secrets.redact(&format!(
                "cannot reach {}: {}",
                crate::settings::diff::mask(&ep.base_url),
                error_chain(e)
            )),
        )
    }

    /// The provider's error message (or the start of the body), without secrets.
    fn error_text(&self, bytes: &[u8]) -> String {
        let text = serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .or_else(|| v.pointer("/error"))
                    .or_else(|| v.pointer("/message"))
                    .and_then(Value::as_str)
                    .map(String::from)
            })
            .unwrap_or_else(|| String::from_utf8_lossy(bytes).into_owned());
        let short: String = text.chars().take(300).collect();
        self.secrets.redact(short.trim())
    }

    fn record(
        &self,
        ctx: &CallContext,
        ep: &Endpoint,
        response: Option<&ChatResponse>,
        latency_ms: u64,
        outcome: &str,
        detail: &str,
    ) -> i64 {
        let usage = response.map(|r| r.usage).unwrap_or_default();
        let record = UsageRecord {
            id: 0,
            at: self.clock.now(),
            role: ctx.role.as_str().into(),
            source: ctx.source().into(),
            guild: ctx.guild,
            provider: ep.provider_name().into(),
            model: response
                .map(|r| r.model.clone())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| ep.model.clone()),
            pay_per_token: ep.pay_per_token,
            tokens_in: usage.input,
            tokens_out: usage.output,
            latency_ms,
            outcome: outcome.into(),
            detail: self.secrets.redact(detail),
        };
        self.journal
            .metrics()
            .model_call(crate::metrics::ModelCall {
                role: &record.role,
                outcome: &record.outcome,
                tokens_in: record.tokens_in,
                tokens_out: record.tokens_out,
                latency_ms,
                cost_usd: prices::cost(
                    &self.settings.global().executive.prices,
                    &record.model,
                    !record.pay_per_token,
                    record.tokens_in,
                    record.tokens_out,
                ),
            });
        match self.store.usage.usage_append(&record) {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(error = %e, "could not record model usage");
                0
            }
        }
    }

    fn lock_providers(&self) -> std::sync::MutexGuard<'_, HashMap<String, ProviderState>> {
        self.providers.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cooling_until(&self, ep: &Endpoint, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.lock_providers()
            .get(&ep.health_key())
            .and_then(|s| s.cooling_until)
            .filter(|until| *until > now)
    }

    fn note_limits(
        &self,
        ep: &Endpoint,
        headers: &HeaderMap,
        rate_limited: bool,
        now: DateTime<Utc>,
    ) {
        let mut providers = self.lock_providers();
        let state = providers.entry(ep.health_key()).or_default();
        if let Some(limits) = ratelimit::parse(headers, now) {
            state.limits = Some(limits);
        }
        if rate_limited {
            state.last_rate_limited = Some(now);
        }
    }

    fn note_success(&self, ep: &Endpoint) {
        let mut providers = self.lock_providers();
        let state = providers.entry(ep.health_key()).or_default();
        state.consecutive_failures = 0;
        state.cooling_until = None;
    }

    fn note_failure(&self, ep: &Endpoint, detail: &str) {
        let s = self.settings.global();
        let now = self.clock.now();
        let mut providers = self.lock_providers();
        let state = providers.entry(ep.health_key()).or_default();
        state.consecutive_failures += 1;
        state.last_error = Some(detail.to_string());
        if state.consecutive_failures >= s.executive.failure_threshold {
            let until =
                now + chrono::Duration::minutes(i64::from(s.executive.provider_cooldown_minutes));
            state.cooling_until = Some(until);
            tracing::warn!(
                provider = ep.provider_name(),
                failures = state.consecutive_failures,
                until = %until,
                "provider skipped after repeated failures"
            );
        }
    }
}

/// Whether a local Ollama answers at `executive.ollamaBaseUrl`, looked for
/// as [`Executive::new`] does: for a front end that must know before it
/// builds the bot (replay's question before real models are paid).
pub(crate) async fn ollama_answers(settings: &crate::settings::Settings) -> bool {
    match provider_client(&settings.network) {
        Ok(http) => probe_ollama(&http, &settings.executive.ollama_base_url).await,
        Err(_) => false,
    }
}

/// The client the model providers are reached with: their own APIs are
/// the one exception to the guarded fetcher, but they too ignore
/// environment proxies (only `network.proxy`).
fn provider_client(network: &crate::settings::NetworkSettings) -> reqwest::Result<reqwest::Client> {
    crate::net::with_proxy(reqwest::Client::builder(), network)
        .connect_timeout(Duration::from_secs(10))
        .build()
}

/// `req` as the endpoint's wire format says it.
fn wire_body(ep: &Endpoint, req: &ChatRequest) -> Value {
    match ep.wire {
        Wire::Anthropic => anthropic::body(req, &ep.model),
        Wire::OpenAi => openai::body(req, &ep.model, ep.is_official_openai()),
    }
}

/// The endpoint's version and key headers, the key marked sensitive.
fn wire_headers(ep: &Endpoint) -> HeaderMap {
    let mut headers = HeaderMap::new();
    match (ep.wire, &ep.key) {
        (Wire::Anthropic, key) => {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(anthropic::API_VERSION),
            );
            if let Some(k) = key
                && let Ok(mut v) = HeaderValue::from_str(k.expose())
            {
                v.set_sensitive(true);
                headers.insert("x-api-key", v);
            }
        }
        (Wire::OpenAi, Some(k)) => {
            if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", k.expose())) {
                v.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, v);
            }
        }
        (Wire::OpenAi, None) => {}
    }
    headers
}

/// A whole answer in the endpoint's wire format, read.
fn wire_parse(ep: &Endpoint, json: &Value) -> Result<ChatResponse, wire::Malformed> {
    match ep.wire {
        Wire::Anthropic => anthropic::parse(json),
        Wire::OpenAi => openai::parse(json),
    }
}

async fn probe_ollama(http: &reqwest::Client, base: &str) -> bool {
    let url = format!("{}/api/tags", base.trim_end_matches('/'));
    matches!(
        http.get(url).timeout(Duration::from_millis(700)).send().await,
        Ok(r) if r.status().is_success()
    )
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub messages: MessageStore,
    pub usage: UsageStore,
}
