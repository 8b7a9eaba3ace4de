//! Discord refusing one of this process's gateway shards: heard, said in
//! the log and the journal with what to fix, the shard stopped, and the
//! process ended when none of its shards is left running (a supervisor
//! restarts it; a bot that is silently deaf is worse than one that exits).
//!
//! What serenity 0.12.5 does with each refusal (`gateway/shard.rs`
//! `handle_gateway_closed`, `gateway/bridge/shard_runner.rs` `recv_event`):
//!
//! - 4004 (authentication failed), 4013 (invalid intents), 4014 (disallowed
//!   intents): logs, ends that shard's runner and makes `Client::start*`
//!   return the error (`ShardManager::return_with_value`), naming no shard.
//! - 4010 (invalid shard), 4011 (sharding required): logs an error and
//!   nothing else. The runner keeps reading the closed socket, which answers
//!   at once, so it spins a whole core until its next heartbeat (41 s on
//!   Discord) fails, then restarts the shard, which identifies again, is
//!   refused again, and so on: a core, and an IDENTIFY of the bot's 1,000 a
//!   day, every 41 s, while the shard's servers hear nothing. No event says
//!   so: the shard's stage stays `Identifying` (no `shard_stage_update`),
//!   and `Client::start*` does not return.
//!
//! So the one place serenity says which shard was refused, and why, is its
//! own log event, and that is what is heard here: [`layer`] is a tracing
//! layer, installed with the log's own (`cli::init_logging`) under a filter of
//! its own (so `RUST_LOG` cannot silence it), that reads serenity's words for
//! each code ([`SAID`]) and the `ShardInfo` in front of them. [`Watch`] then
//! says it and stops the shard: a `Close` to its runner, whose socket is gone,
//! ends the runner without a restart (`ShardManager::shutdown` would wait on
//! the dead socket's close frame forever). The e2e tests hold serenity to
//! these words: an upgrade that changes them fails `refused::`.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use anyhow::anyhow;
use regex::Regex;
use serenity::all::{ShardId, ShardManager};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};

use crate::journal::Journal;
use crate::vocab::journal::{Entry, Kind};
use crate::vocab::shards::Shards;

/// A gateway close code that means "not like this": retrying cannot help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    AuthenticationFailed,
    InvalidShard,
    ShardingRequired,
    InvalidIntents,
    DisallowedIntents,
}

/// Serenity 0.12.5's words for each refusal (`Shard::handle_gateway_closed`),
/// after the shard's `[ShardInfo { … }]`.
pub(crate) const SAID: [(&str, Refusal); 5] = [
    (
        "Sent invalid authentication, please check the token.",
        Refusal::AuthenticationFailed,
    ),
    ("Sent invalid shard data.", Refusal::InvalidShard),
    ("Shard has too many guilds.", Refusal::ShardingRequired),
    (
        "Invalid gateway intents have been provided.",
        Refusal::InvalidIntents,
    ),
    (
        "Disallowed gateway intents have been provided.",
        Refusal::DisallowedIntents,
    ),
];

/// Where serenity says them.
const SERENITY_SHARD: &str = "serenity::gateway::shard";

impl Refusal {
    pub(crate) fn code(self) -> u16 {
        match self {
            Refusal::AuthenticationFailed => 4004,
            Refusal::InvalidShard => 4010,
            Refusal::ShardingRequired => 4011,
            Refusal::InvalidIntents => 4013,
            Refusal::DisallowedIntents => 4014,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Refusal::AuthenticationFailed => "authentication failed",
            Refusal::InvalidShard => "invalid shard",
            Refusal::ShardingRequired => "sharding required",
            Refusal::InvalidIntents => "invalid intents",
            Refusal::DisallowedIntents => "disallowed intents",
        }
    }

    /// What it means and what to do, for shard `shard` of `total`.
    fn fix(self, shard: u32, total: u32) -> String {
        match self {
            Refusal::AuthenticationFailed => "the gateway rejected DISCORD_TOKEN: copy the bot \
                token again from the Developer Portal (Bot → Reset Token) and restart"
                .into(),
            Refusal::InvalidShard => format!(
                "the gateway does not accept shard {shard} of {total}: \
                 discord.totalShards/--total-shards ({total}) must be a shard count the gateway \
                 accepts (the count GET /gateway/bot recommends always is) and the same in every \
                 process, and discord.shards/--shards must name shards below it"
            ),
            Refusal::ShardingRequired => format!(
                "shard {shard} of {total} would serve more servers than the gateway allows on \
                 one shard (Discord: 2,500): raise discord.totalShards/--total-shards (`ambient \
                 shards plan --total N` shows which servers move), or leave both shard settings \
                 unset to run every shard Discord recommends"
            ),
            Refusal::InvalidIntents => "the gateway does not know an intent the bot asks for \
                (a Discord-compatible server may lack one; discord.membersIntent adds Server \
                Members): turn discord.membersIntent off, or ask the server's operator which \
                intents it supports"
                .into(),
            Refusal::DisallowedIntents => "the bot asks for a privileged intent that is not \
                switched on for it: on the Developer Portal's Bot page switch on Message Content \
                Intent (and Server Members Intent if discord.membersIntent is on), then restart"
                .into(),
        }
    }

    /// Whether serenity goes on retrying the shard by itself (see the file comment).
    fn retried(self) -> bool {
        matches!(self, Refusal::InvalidShard | Refusal::ShardingRequired)
    }
}

/// One refusal, as serenity logged it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub shard: u32,
    pub total: u32,
    pub why: Refusal,
}

impl Refused {
    /// "Discord refused shard 1 of 2 (4010 invalid shard)".
    fn headline(&self) -> String {
        format!(
            "Discord refused shard {} of {} ({} {})",
            self.shard,
            self.total,
            self.why.code(),
            self.why.name()
        )
    }

    /// "Discord refused shard 1 of 2 (4010 invalid shard): …what to fix".
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}: {}",
            self.headline(),
            self.why.fix(self.shard, self.total)
        )
    }
}

/// A refusal in one of serenity's log messages, if the message is one.
pub(crate) fn parse(message: &str) -> Option<Refused> {
    static SHARD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\[ShardInfo \{ id: ShardId\((\d+)\), total: (\d+) \}\] (.+)$")
            .expect("a valid pattern")
    });
    let caught = SHARD.captures(message)?;
    let why = SAID
        .iter()
        .find(|(said, _)| caught[3] == **said)
        .map(|(_, why)| *why)?;
    Some(Refused {
        shard: caught[1].parse().ok()?,
        total: caught[2].parse().ok()?,
        why,
    })
}

/// Refusals heard, waiting for the running bot's [`Watch`]. Bounded: a
/// process that never runs the bot (a CLI verb) hears none anyway.
struct Heard {
    tell: mpsc::Sender<Refused>,
    listen: Mutex<Option<mpsc::Receiver<Refused>>>,
}

fn heard() -> &'static Heard {
    static HEARD: OnceLock<Heard> = OnceLock::new();
    HEARD.get_or_init(|| {
        let (tell, listen) = mpsc::channel(64);
        Heard {
            tell,
            listen: Mutex::new(Some(listen)),
        }
    })
}

/// The tracing layer that hears serenity's refusals, whatever `RUST_LOG` says.
pub(crate) fn layer<S>() -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    Hearing.with_filter(Targets::new().with_target(SERENITY_SHARD, LevelFilter::WARN))
}

struct Hearing;

impl<S: tracing::Subscriber> Layer<S> for Hearing {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        if let Some(refused) = parse(&message.0) {
            // Harmless when full: 64 unread refusals already say all there is to say.
            let _ = heard().tell.try_send(refused);
        }
    }
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Says each refusal heard and stops its shard; knows when none is left.
pub(crate) struct Watch {
    heard: mpsc::Receiver<Refused>,
    journal: Journal,
    manager: Arc<ShardManager>,
    plan: Option<Shards>,
    refused: BTreeSet<u32>,
    /// The newest refusal's words, for the process's last line.
    last: Option<String>,
}

impl Watch {
    /// The process's watch; None if one was made already (one bot per process).
    pub(crate) fn new(
        journal: Journal,
        manager: Arc<ShardManager>,
        plan: Option<Shards>,
    ) -> Option<Self> {
        let heard = heard()
            .listen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        Some(Self {
            heard,
            journal,
            manager,
            plan,
            refused: BTreeSet::new(),
            last: None,
        })
    }

    /// Says each refusal as it comes; returns the error to exit with once
    /// every shard of this process has been refused.
    pub(crate) async fn until_none_left(&mut self) -> anyhow::Error {
        loop {
            let Some(refused) = self.heard.recv().await else {
                // The sender is static and never closes; nothing more will come.
                return std::future::pending().await;
            };
            if let Some(gone) = self.take(refused).await {
                return gone;
            }
        }
    }

    /// `Client::start*` ended with `error`: refusals heard and not yet said
    /// are said now, and the newest one's words replace serenity's terse error.
    pub(crate) async fn explain(&mut self, error: anyhow::Error) -> anyhow::Error {
        while let Ok(refused) = self.heard.try_recv() {
            if let Some(gone) = self.take(refused).await {
                return gone;
            }
        }
        match &self.last {
            Some(words) => anyhow!("{words}"),
            None => error,
        }
    }

    /// This process's shards that Discord has not refused.
    fn left(&self, refused: &Refused) -> Vec<u32> {
        let all = match &self.plan {
            Some(p) => p.range.first..=p.range.last,
            None => 0..=refused.total.saturating_sub(1),
        };
        all.filter(|s| !self.refused.contains(s)).collect()
    }

    async fn take(&mut self, refused: Refused) -> Option<anyhow::Error> {
        if !self.refused.insert(refused.shard) {
            return None;
        }
        if refused.why.retried() {
            self.stop(refused.shard).await;
        }
        let words = refused.describe();
        let left = self.left(&refused);
        let then = match left.as_slice() {
            [] => "no shard of this process is left running, so it stops (exit status 1) for its \
                   supervisor to restart once this is fixed"
                .to_string(),
            running => format!(
                "the servers on shard {} get no answers until this is fixed and the process \
                 restarted; {} still {}",
                refused.shard,
                describe_shards(running),
                if running.len() == 1 { "runs" } else { "run" }
            ),
        };
        tracing::error!(
            shard = refused.shard,
            total = refused.total,
            code = refused.why.code(),
            "{words}; {then}"
        );
        self.journal.record(
            Entry::new(Kind::Error, refused.headline())
                .reason(format!(
                    "{}; {then}",
                    refused.why.fix(refused.shard, refused.total)
                ))
                .data(serde_json::json!({
                    "shard": refused.shard,
                    "total": refused.total,
                    "code": refused.why.code(),
                })),
        );
        self.last = Some(words.clone());
        left.is_empty().then(|| anyhow!("{words}"))
    }

    /// Ends a refused shard's runner for good: its socket is closed, so the
    /// close fails and the runner returns without asking for a restart.
    async fn stop(&self, shard: u32) {
        let runner = self.manager.runners.lock().await.remove(&ShardId(shard));
        if let Some(runner) = runner {
            runner.runner_tx.shutdown_clean();
        }
    }
}

/// "shard 0", "shards 0, 2 and 3".
fn describe_shards(shards: &[u32]) -> String {
    let names: Vec<String> = shards.iter().map(u32::to_string).collect();
    match names.as_slice() {
        [one] => format!("shard {one}"),
        [init @ .., last] => format!("shards {} and {last}", init.join(", ")),
        [] => "no shard".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serenitys_words_name_the_shard_and_the_code() {
        let heard = |m: &str| parse(m).map(|r| (r.shard, r.total, r.why.code()));
        assert_eq!(
            heard("[ShardInfo { id: ShardId(3), total: 4 }] Sent invalid shard data."),
            Some((3, 4, 4010))
        );
        assert_eq!(
            heard("[ShardInfo { id: ShardId(0), total: 1 }] Shard has too many guilds."),
            Some((0, 1, 4011))
        );
        for (said, why) in SAID {
            let m = format!("[ShardInfo {{ id: ShardId(1), total: 2 }}] {said}");
            assert_eq!(parse(&m).map(|r| r.why), Some(why), "{m}");
        }
        // Other words of serenity's are not refusals.
        assert_eq!(
            heard("[ShardInfo { id: ShardId(0), total: 1 }] Gateway ratelimited."),
            None
        );
        assert_eq!(heard("Sent invalid shard data."), None);
    }

    #[test]
    fn a_refusal_says_the_shard_the_code_and_what_to_fix() {
        let r = Refused {
            shard: 3,
            total: 4,
            why: Refusal::InvalidShard,
        };
        let said = r.describe();
        assert!(
            said.starts_with("Discord refused shard 3 of 4 (4010 invalid shard): "),
            "{said}"
        );
        assert!(
            said.contains("discord.totalShards/--total-shards (4)"),
            "{said}"
        );
        assert_eq!(describe_shards(&[0]), "shard 0");
        assert_eq!(describe_shards(&[0, 2, 3]), "shards 0, 2 and 3");
    }
}
