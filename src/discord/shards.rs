//! This process's part of the gateway: which shards it starts, when, and
//! which events it keeps (`settings::shards` says what a plan is).
//!
//! Without a plan the process starts every shard `/gateway/bot` recommends;
//! with one, only its range. Discord already sends a guild's events only on
//! its shard, so [`admits`] is defence in depth: an event or interaction of a
//! guild the plan does not own — from a Discord-compatible server that does
//! not shard, or a plan that disagrees with the shard count the gateway was
//! told — is dropped before it becomes a percept or a command, and direct
//! messages (which Discord sends on shard 0) are handled only by the process
//! that runs shard 0, so no person gets two answers.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::anyhow;
use serenity::all::{Client, Context, FullEvent, GuildId as SGuildId, Interaction, Ready};
use serenity::framework::Framework;

use crate::ids::GuildId;
use crate::vocab::shards::Shards;

/// Discord's identify window: `max_concurrency` IDENTIFYs per 5 s, and
/// serenity starts one shard per 5 s inside a process
/// (`gateway/bridge/shard_queuer.rs`, whatever `max_concurrency` says).
pub(crate) const IDENTIFY_EVERY: Duration = Duration::from_secs(5);

/// Added to a later range's wait: processes started "together" start a
/// moment apart and log in at different speeds, and serenity counts its 5 s
/// from each connection, not from each IDENTIFY.
pub(crate) const STAGGER_SLACK: Duration = Duration::from_secs(1);

/// Whether this process handles an event of `guild` (None: a direct message).
pub(crate) fn admits(plan: Option<&Shards>, guild: Option<GuildId>) -> bool {
    match (plan, guild) {
        (None, _) => true,
        (Some(p), Some(g)) => p.owns(g),
        (Some(p), None) => p.range.contains(0),
    }
}

/// [`admits`] for serenity's guild id.
pub(crate) fn admits_serenity(plan: Option<&Shards>, guild: Option<SGuildId>) -> bool {
    admits(plan, guild.map(|g| GuildId(g.get())))
}

/// How long this process waits before its first IDENTIFY, so processes
/// started together identify no faster than one process running every
/// shard would: shard `s` of any process identifies about `5 s × s` after
/// the start, one shard per 5 s across all of them. That is within
/// Discord's limit for every `max_concurrency` (1 is the strictest), needs
/// no coordination between processes and no knowledge of the others'
/// ranges — only that ranges are numbered from 0 upwards, as a plan is.
/// A larger `max_concurrency` would allow faster starts, but serenity
/// boots a process's shards one per 5 s regardless, and a shorter wait is
/// safe only if every process knows every other's range; the last process
/// of a 16-shard bot waits about 80 s, as one process's last shard would.
/// A process restarted alone waits the same, which is harmless.
pub(crate) fn stagger(plan: Option<&Shards>) -> Duration {
    match plan.map(|p| p.range.first) {
        None | Some(0) => Duration::ZERO,
        Some(first) => IDENTIFY_EVERY * first + STAGGER_SLACK,
    }
}

/// What the process runs, for the log at start.
pub(crate) fn describe(plan: Option<&Shards>) -> String {
    match plan {
        None => "every shard Discord recommends (no discord.shards / --shards)".into(),
        Some(p) => format!(
            "{p}: the guilds whose (id >> 22) % {} is in {}",
            p.total, p.range
        ),
    }
}

/// Starts the plan's shards and runs until they stop.
pub(crate) async fn start(client: &mut Client, plan: Option<&Shards>) -> anyhow::Result<()> {
    let result = match plan {
        None => client.start_autosharded().await,
        // Serenity 0.12.5 reads the range's end as inclusive
        // (`start_connection` starts end - start + 1 shards), so `last`, not `last + 1`.
        Some(p) => {
            client
                .start_shard_range(p.range.first..p.range.last, p.total)
                .await
        }
    };
    result.map_err(|e| anyhow!("the Discord connection ended: {e}"))
}

/// The slash commands' framework (poise), handed only what it acts on:
/// Ready (its setup, which registers the commands) and interactions of
/// guilds this process owns, so an interaction of another process's guild
/// never reaches a command.
///
/// It is not registered with serenity as a framework: serenity clones every
/// event for a registered framework and spawns a task to hand it over, so
/// each message would cost a clone and a task that poise then drops (the
/// bot has no prefix commands, no edit tracker and no poise event handler).
/// The event handler hands these two events on instead. Installed once the
/// client exists, before any shard starts; until then nothing is handed on.
#[derive(Clone, Default)]
pub(crate) struct Commands(Arc<OnceLock<Arc<dyn Framework>>>);

impl Commands {
    /// Initialises `framework` with the client (as serenity would) and
    /// starts handing it events.
    pub(crate) async fn install(&self, mut framework: impl Framework + 'static, client: &Client) {
        framework.init(client).await;
        if self.0.set(Arc::new(framework)).is_err() {
            tracing::warn!("the slash commands were installed twice; the first stays");
        }
    }

    /// A shard is ready: poise's setup runs on the first.
    pub(crate) async fn ready(&self, ctx: Context, ready: &Ready) {
        let event = FullEvent::Ready {
            data_about_bot: ready.clone(),
        };
        self.hand(ctx, event).await;
    }

    /// An interaction (a slash command); the event handler has checked its
    /// guild is this process's.
    pub(crate) async fn interaction(&self, ctx: Context, interaction: Interaction) {
        self.hand(ctx, FullEvent::InteractionCreate { interaction })
            .await;
    }

    async fn hand(&self, ctx: Context, event: FullEvent) {
        if let Some(framework) = self.0.get() {
            framework.dispatch(ctx, event).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::shards::{ShardRange, shard_of};

    fn plan(first: u32, last: u32, total: u32) -> Shards {
        Shards {
            range: ShardRange { first, last },
            total,
        }
    }

    #[test]
    fn a_process_keeps_its_guilds_and_shard_zero_keeps_the_dms() {
        let on = |shard: u64| GuildId((1_000 + shard) << 22); // shard_of(.., 2) = shard % 2
        assert_eq!(shard_of(on(1), 2), 1);
        let first = plan(0, 0, 2);
        let second = plan(1, 1, 2);
        assert!(admits(Some(&first), Some(on(0))));
        assert!(!admits(Some(&first), Some(on(1))));
        assert!(admits(Some(&second), Some(on(1))));
        assert!(!admits(Some(&second), Some(on(0))));
        assert!(admits(Some(&first), None), "DMs arrive on shard 0");
        assert!(!admits(Some(&second), None), "and nowhere else");
        assert!(admits(None, Some(on(1))) && admits(None, None));
        // A range keeps every guild of each of its shards.
        let wide = plan(2, 3, 4);
        let kept: Vec<u64> = (0..8)
            .filter(|s| admits(Some(&wide), Some(on(*s))))
            .collect();
        assert_eq!(kept, vec![2, 3, 6, 7]);
    }

    #[test]
    fn processes_started_together_identify_one_shard_per_five_seconds() {
        assert_eq!(stagger(None), Duration::ZERO);
        assert_eq!(stagger(Some(&plan(0, 3, 16))), Duration::ZERO);
        assert_eq!(stagger(Some(&plan(1, 1, 2))), Duration::from_secs(6));
        // Range 4-7 starts after 0-3's four shards (0, 5, 10, 15 s) are through.
        assert_eq!(stagger(Some(&plan(4, 7, 16))), Duration::from_secs(21));
        // Every shard of every range then identifies no sooner than 5 s × its
        // number, at least 5 s after the shard before it (serenity adds 5 s per
        // shard inside a process).
        let ranges = [plan(0, 3, 12), plan(4, 5, 12), plan(6, 11, 12)];
        let mut at: Vec<(u32, Duration)> = ranges
            .iter()
            .flat_map(|p| {
                (p.range.first..=p.range.last)
                    .map(move |s| (s, stagger(Some(p)) + IDENTIFY_EVERY * (s - p.range.first)))
            })
            .collect();
        at.sort_by_key(|(_, t)| *t);
        for pair in at.windows(2) {
            assert!(pair[1].1 - pair[0].1 >= IDENTIFY_EVERY, "{at:?}");
        }
    }
}
