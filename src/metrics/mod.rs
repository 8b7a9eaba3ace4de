//! The bot's Prometheus metrics: every family registered here, once, and a
//! method per event that moves one, so each place that instruments the bot
//! (the journal, the router, the senses, the executive, the gateway) adds a
//! line, not a family.
//!
//! Labels stay few (a route, a role, an outcome, a gate, a shard): a
//! server's id is added only with `metrics.perGuild`, as one series per
//! server is costly for a bot in hundreds. Gauges of state (the gateway,
//! the store's size, the queue) are set by whoever serves a scrape
//! just before it encodes ([`Metrics::encode`]), not kept up to date.
//!
//! One [`Metrics`] per process, carried by the journal, which every service
//! already holds; a journal made without one (a CLI verb, a test) counts
//! into its own that nobody reads.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use crate::ids::GuildId;

/// A series' labels: a few fixed names, each with its value.
type Labels = Vec<(&'static str, String)>;

/// Seconds, from 0.1 s to about 100 s: a model call, an answer.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.1, 2.0, 11))
}

pub struct Metrics {
    registry: Registry,
    per_guild: bool,
    messages_seen: Family<Labels, Counter>,
    routed: Family<Labels, Counter>,
    journal_entries: Family<Labels, Counter>,
    gate_refusals: Family<Labels, Counter>,
    model_calls: Family<Labels, Counter>,
    model_tokens: Family<Labels, Counter>,
    model_cost: Family<Labels, Counter<f64, AtomicU64>>,
    model_seconds: Family<Labels, Histogram, fn() -> Histogram>,
    feed_fetches: Family<Labels, Counter>,
    gateway_sessions: Family<Labels, Counter>,
    gateway_connected: Gauge,
    store_bytes: Gauge,
    queue_depth: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(false)
    }
}

impl Metrics {
    /// Every family, registered; `per_guild` adds a `guild` label to those
    /// about one server's messages.
    pub fn new(per_guild: bool) -> Self {
        let m = Self {
            registry: Registry::with_prefix("ambient"),
            per_guild,
            messages_seen: Family::default(),
            routed: Family::default(),
            journal_entries: Family::default(),
            gate_refusals: Family::default(),
            model_calls: Family::default(),
            model_tokens: Family::default(),
            model_cost: Family::default(),
            model_seconds: Family::new_with_constructor(latency_histogram),
            feed_fetches: Family::default(),
            gateway_sessions: Family::default(),
            gateway_connected: Gauge::default(),
            store_bytes: Gauge::default(),
            queue_depth: Gauge::default(),
        };
        if !per_guild {
            // Shown as 0 from the start, so a rate over it begins at the start.
            m.messages_seen.get_or_create(&Vec::new()).inc_by(0);
        }
        m.register()
    }

    fn register(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "messages_seen",
            "Messages taken in from chat (each stored once), the bot's own included",
            self.messages_seen.clone(),
        );
        r.register(
            "messages_routed",
            "Inputs routed by attention, by the handler that took them (pass: none did)",
            self.routed.clone(),
        );
        r.register(
            "journal_entries",
            "Journal entries written, by type (initiative_post, initiative_skip, reflex, reply, ...)",
            self.journal_entries.clone(),
        );
        r.register(
            "initiative_gate_refusals",
            "Initiative looks stopped before any model call, by the gate that stopped them",
            self.gate_refusals.clone(),
        );
        r.register(
            "model_calls",
            "Model calls, by role and outcome",
            self.model_calls.clone(),
        );
        r.register(
            "model_tokens",
            "Model tokens, by role and direction (input, output)",
            self.model_tokens.clone(),
        );
        r.register(
            "model_cost_usd",
            "What model calls cost in US$ at executive.prices (or the built-in prices), by role; \
             a call whose price is unknown adds nothing",
            self.model_cost.clone(),
        );
        r.register(
            "model_call_seconds",
            "How long a model call took, by role",
            self.model_seconds.clone(),
        );
        r.register(
            "feed_fetches",
            "Discovery feed fetches, by outcome (ok, not_modified, failed)",
            self.feed_fetches.clone(),
        );
        r.register(
            "gateway_sessions",
            "Gateway sessions begun, by how (identified: a new one; resumed: a reconnect)",
            self.gateway_sessions.clone(),
        );
        r.register(
            "gateway_connected",
            "Whether the gateway is connected (1: every shard of this process) or not (0)",
            self.gateway_connected.clone(),
        );
        r.register(
            "store_bytes",
            "Size of the SQLite database and its write-ahead log",
            self.store_bytes.clone(),
        );
        r.register(
            "attention_queue_depth",
            "Inputs waiting in attention's queue",
            self.queue_depth.clone(),
        );
        self
    }

    /// `labels`, and the server's id when `metrics.perGuild` asks for it.
    fn with_guild(&self, mut labels: Labels, guild: Option<GuildId>) -> Labels {
        if self.per_guild {
            labels.push(("guild", guild.map(|g| g.to_string()).unwrap_or_default()));
        }
        labels
    }

    /// A message was stored for the first time.
    pub fn message_seen(&self, guild: Option<GuildId>) {
        let labels = self.with_guild(Vec::new(), guild);
        self.messages_seen.get_or_create(&labels).inc();
    }

    /// Attention handed an input to `route` (a handler's name, or "pass").
    pub fn routed(&self, route: &str, guild: Option<GuildId>) {
        let labels = self.with_guild(vec![("route", route.to_string())], guild);
        self.routed.get_or_create(&labels).inc();
    }

    /// The journal wrote an entry of type `kind`.
    pub fn journaled(&self, kind: &'static str) {
        self.journal_entries
            .get_or_create(&vec![("type", kind.to_string())])
            .inc();
    }

    /// Initiative stopped at `gate` before any model call.
    pub fn gate_refused(&self, gate: &str) {
        self.gate_refusals
            .get_or_create(&vec![("gate", gate.to_string())])
            .inc();
    }

    /// One model call, as the executive records its usage.
    pub fn model_call(&self, call: ModelCall<'_>) {
        let role = || ("role", call.role.to_string());
        self.model_calls
            .get_or_create(&vec![role(), ("outcome", call.outcome.to_string())])
            .inc();
        for (direction, n) in [("input", call.tokens_in), ("output", call.tokens_out)] {
            self.model_tokens
                .get_or_create(&vec![role(), ("direction", direction.to_string())])
                .inc_by(n);
        }
        if let Some(usd) = call.cost_usd {
            self.model_cost.get_or_create(&vec![role()]).inc_by(usd);
        }
        self.model_seconds
            .get_or_create(&vec![role()])
            .observe(call.latency_ms as f64 / 1000.0);
    }

    /// A discovery source was fetched: "ok", "not_modified" or "failed".
    pub fn feed_fetched(&self, outcome: &'static str) {
        self.feed_fetches
            .get_or_create(&vec![("outcome", outcome.to_string())])
            .inc();
    }

    /// A gateway session began: `resumed` a reconnect, else identified anew.
    pub fn gateway_session(&self, resumed: bool) {
        let how = if resumed { "resumed" } else { "identified" };
        self.gateway_sessions
            .get_or_create(&vec![("how", how.to_string())])
            .inc();
    }

    /// The text a scrape of `/metrics` answers, with the state gauges set
    /// from `now` first.
    pub fn encode(&self, now: &State) -> Result<String, std::fmt::Error> {
        self.gateway_connected.set(i64::from(now.gateway_connected));
        self.store_bytes
            .set(i64::try_from(now.store_bytes).unwrap_or(i64::MAX));
        self.queue_depth
            .set(i64::try_from(now.queue_depth).unwrap_or(i64::MAX));
        let mut text = String::new();
        encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// One model call's usage, as [`Metrics::model_call`] counts it.
pub struct ModelCall<'a> {
    pub role: &'a str,
    /// The usage record's outcome: "ok", "error", "timeout", ...
    pub outcome: &'a str,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub latency_ms: u64,
    /// US$, when its price is known (0 on a local endpoint).
    pub cost_usd: Option<f64>,
}

/// What the process is, read when scraped.
#[derive(Debug, Default)]
pub struct State {
    /// Every gateway shard this process runs is connected.
    pub gateway_connected: bool,
    pub store_bytes: u64,
    pub queue_depth: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_a_label_only_when_asked() {
        let plain = Metrics::new(false);
        plain.message_seen(Some(GuildId(7)));
        plain.routed("reply", Some(GuildId(7)));
        let text = plain.encode(&State::default()).unwrap();
        assert!(text.contains("ambient_messages_seen_total 1\n"), "{text}");
        assert!(
            text.contains("ambient_messages_routed_total{route=\"reply\"} 1\n"),
            "{text}"
        );
        let per_guild = Metrics::new(true);
        per_guild.message_seen(Some(GuildId(7)));
        let text = per_guild.encode(&State::default()).unwrap();
        assert!(
            text.contains("ambient_messages_seen_total{guild=\"7\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn a_model_call_counts_its_tokens_cost_and_time_by_role() {
        let m = Metrics::default();
        m.model_call(ModelCall {
            role: "reply",
            outcome: "ok",
            tokens_in: 1200,
            tokens_out: 80,
            latency_ms: 1500,
            cost_usd: Some(0.25),
        });
        let text = m.encode(&State::default()).unwrap();
        for line in [
            "ambient_model_calls_total{role=\"reply\",outcome=\"ok\"} 1\n",
            "ambient_model_tokens_total{role=\"reply\",direction=\"input\"} 1200\n",
            "ambient_model_tokens_total{role=\"reply\",direction=\"output\"} 80\n",
            "ambient_model_cost_usd_total{role=\"reply\"} 0.25\n",
            "ambient_model_call_seconds_bucket{le=\"1.6\",role=\"reply\"} 1\n",
            "ambient_model_call_seconds_bucket{le=\"0.8\",role=\"reply\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} in:\n{text}");
        }
    }

    #[test]
    fn state_gauges_are_set_when_encoded() {
        let m = Metrics::default();
        let state = State {
            gateway_connected: true,
            store_bytes: 4096,
            queue_depth: 3,
        };
        let text = m.encode(&state).unwrap();
        assert!(text.contains("ambient_gateway_connected 1\n"), "{text}");
        assert!(text.contains("ambient_store_bytes 4096\n"), "{text}");
        assert!(text.contains("ambient_attention_queue_depth 3\n"), "{text}");
    }
}
