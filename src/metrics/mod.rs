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
//! into its own that nobody reads. The store, below the journal, times its
//! connection into [`StoreTimings`], histograms it is handed at start.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use crate::ids::{GuildId, MessageId};

/// A series' labels: a few fixed names, each with its value.
type Labels = Vec<(&'static str, String)>;

/// Seconds, from 0.1 s to about 100 s: a model call, an answer.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.1, 2.0, 11))
}

/// Seconds, from 5 ms to 60 s: a mention until the first message answering it.
fn reply_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0,
    ])
}

/// Seconds, from 0.1 ms to about 6.5 s: a wait for the store's connection,
/// a group of writes.
fn store_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 4.0, 9))
}

/// The most mentions waiting for their first answer at once; more are not
/// timed (a flood of mentions must not grow the map without bound).
const MOST_AWAITED: usize = 1024;
/// A mention unanswered this long is forgotten (past the last bucket).
const AWAITED_AT_MOST: Duration = Duration::from_secs(120);

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
    shard_connected: Family<Labels, Gauge>,
    store_bytes: Gauge,
    queue_depth: Gauge,
    reply_seconds: Histogram,
    /// Mentions (and other messages addressed to the bot) not answered yet:
    /// when the gateway handed each over.
    awaited: Mutex<HashMap<MessageId, Instant>>,
    rate_limited: Family<Labels, Counter>,
    retries: Counter,
    budget_left: Family<Labels, Gauge>,
    store: StoreTimings,
}

/// How long uses of the store waited for its one connection, and how long
/// each group of writes held SQLite's write lock; the store observes them
/// (`Store::time_into`), the scrape reads them.
#[derive(Clone)]
pub(crate) struct StoreTimings {
    pub wait: Histogram,
    pub group: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(false)
    }
}

impl Metrics {
    /// Every family, registered; `per_guild` adds a `guild` label to those
    /// about one server's messages.
    pub(crate) fn new(per_guild: bool) -> Self {
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
            shard_connected: Family::default(),
            store_bytes: Gauge::default(),
            queue_depth: Gauge::default(),
            reply_seconds: reply_histogram(),
            awaited: Mutex::default(),
            rate_limited: Family::default(),
            retries: Counter::default(),
            budget_left: Family::default(),
            store: StoreTimings {
                wait: store_histogram(),
                group: store_histogram(),
            },
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
            "Gateway sessions begun, by shard and how (identified: a new one; resumed: a reconnect)",
            self.gateway_sessions.clone(),
        );
        r.register(
            "gateway_connected",
            "Whether the gateway is connected (1: every shard of this process) or not (0)",
            self.gateway_connected.clone(),
        );
        r.register(
            "gateway_shard_connected",
            "Whether each shard of this process is connected (1) or not (0)",
            self.shard_connected.clone(),
        );
        r.register(
            "reply_seconds",
            "From the gateway handing over a message addressed to the bot to Discord accepting \
             the first message answering it",
            self.reply_seconds.clone(),
        );
        r.register(
            "discord_rate_limited",
            "Discord REST answers 429, by scope (global, shared, user; none: no scope given)",
            self.rate_limited.clone(),
        );
        r.register(
            "discord_retries",
            "Discord REST requests sent again after a 429",
            self.retries.clone(),
        );
        r.register(
            "budget_tokens_left",
            "Tokens a role may still spend in the rolling 24 h (budget.dailyTokens), per role \
             with a cap",
            self.budget_left.clone(),
        );
        r.register(
            "store_wait_seconds",
            "How long a use of the store waited for its one connection",
            self.store.wait.clone(),
        );
        r.register(
            "store_write_group_seconds",
            "How long a group of writes held SQLite's write lock, from its BEGIN to its COMMIT",
            self.store.group.clone(),
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
    pub(crate) fn message_seen(&self, guild: Option<GuildId>) {
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

    /// A gateway session of `shard` began: `resumed` a reconnect, else identified anew.
    pub fn gateway_session(&self, shard: u32, resumed: bool) {
        let how = if resumed { "resumed" } else { "identified" };
        self.gateway_sessions
            .get_or_create(&vec![
                ("shard", shard.to_string()),
                ("how", how.to_string()),
            ])
            .inc();
    }

    /// The gateway handed over `message`, addressed to the bot: its answer
    /// is timed from now.
    pub(crate) fn addressed(&self, message: MessageId) {
        let now = Instant::now();
        let mut awaited = self.awaited.lock().unwrap_or_else(|p| p.into_inner());
        if awaited.len() >= MOST_AWAITED {
            awaited.retain(|_, at| now.duration_since(*at) < AWAITED_AT_MOST);
        }
        if awaited.len() < MOST_AWAITED {
            awaited.insert(message, now);
        }
    }

    /// Discord accepted a message answering `message`: the first one ends
    /// its wait in `ambient_reply_seconds`; later ones (the rest of a long
    /// answer) and answers to messages never timed count nothing.
    pub(crate) fn answered(&self, message: MessageId) {
        let asked = self
            .awaited
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&message);
        if let Some(asked) = asked {
            self.reply_seconds.observe(asked.elapsed().as_secs_f64());
        }
    }

    /// Discord answered a REST request 429; `scope` is its
    /// `X-RateLimit-Scope` header, if any. Only the scopes Discord documents
    /// are labels: anything else the server says is "other".
    pub fn rate_limited(&self, scope: Option<&str>) {
        let scope = match scope {
            None => "none",
            Some(s @ ("global" | "shared" | "user")) => s,
            Some(_) => "other",
        };
        self.rate_limited
            .get_or_create(&vec![("scope", scope.to_string())])
            .inc();
    }

    /// A REST request is sent again after a 429.
    pub(crate) fn retried(&self) {
        self.retries.inc();
    }

    /// The histograms the store times its connection into.
    pub(crate) fn store_timings(&self) -> StoreTimings {
        self.store.clone()
    }

    /// The text a scrape of `/metrics` answers, with the state gauges set
    /// from `now` first.
    pub fn encode(&self, now: &State) -> Result<String, std::fmt::Error> {
        self.gateway_connected.set(i64::from(now.gateway_connected));
        // Cleared first: a shard or a cap gone since the last scrape is not shown.
        self.shard_connected.clear();
        for (shard, connected) in &now.shards {
            self.shard_connected
                .get_or_create(&vec![("shard", shard.to_string())])
                .set(i64::from(*connected));
        }
        self.budget_left.clear();
        for (role, left) in &now.budget_left {
            self.budget_left
                .get_or_create(&vec![("role", (*role).to_string())])
                .set(i64::try_from(*left).unwrap_or(i64::MAX));
        }
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
    /// Each shard this process runs, and whether it is connected.
    pub shards: Vec<(u32, bool)>,
    /// Each role with a daily cap, and the tokens it may still spend.
    pub budget_left: Vec<(&'static str, u64)>,
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
            shards: vec![(0, true), (1, false)],
            budget_left: vec![("reply", 1500)],
            store_bytes: 4096,
            queue_depth: 3,
        };
        let text = m.encode(&state).unwrap();
        assert!(text.contains("ambient_gateway_connected 1\n"), "{text}");
        assert!(
            text.contains("ambient_gateway_shard_connected{shard=\"1\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("ambient_budget_tokens_left{role=\"reply\"} 1500\n"),
            "{text}"
        );
        assert!(text.contains("ambient_store_bytes 4096\n"), "{text}");
        assert!(text.contains("ambient_attention_queue_depth 3\n"), "{text}");
        // A cap taken away since the last scrape is not shown any more.
        let text = m.encode(&State::default()).unwrap();
        assert!(!text.contains("ambient_budget_tokens_left{"), "{text}");
    }

    #[test]
    fn only_the_first_answer_to_a_timed_message_is_observed() {
        let m = Metrics::default();
        m.answered(MessageId(1));
        m.addressed(MessageId(2));
        m.answered(MessageId(2));
        m.answered(MessageId(2));
        let text = m.encode(&State::default()).unwrap();
        assert!(text.contains("ambient_reply_seconds_count 1\n"), "{text}");
    }

    #[test]
    fn a_429s_scope_is_one_of_discords_or_other() {
        let m = Metrics::default();
        for scope in [Some("user"), Some("global"), None, Some("{evil}")] {
            m.rate_limited(scope);
        }
        let text = m.encode(&State::default()).unwrap();
        for scope in ["user", "global", "none", "other"] {
            let line = format!("ambient_discord_rate_limited_total{{scope=\"{scope}\"}} 1\n");
            assert!(text.contains(&line), "{line} in:\n{text}");
        }
    }
}
