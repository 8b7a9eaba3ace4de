//! The simulation: the whole bot (the same `App` every front end builds)
//! living through an export on a manual clock.
//!
//! - Before each message the clock moves from the last message's time to
//!   this one a tick (`initiative.text.tickSeconds`) at a time, and each
//!   tick runs what it brings, as the background loops would: due reminders
//!   and tasks, the initiative tick, memory upkeep (extraction, compaction,
//!   expiry) and the garden's wake, so cooldowns, caps, expiry and the
//!   garden's scheduler see simulated time. Discovery is left out: it would
//!   fetch feeds from the network, today's, not the export's.
//! - Across a silent stretch, where no tick can do anything, the clock
//!   skips ahead (see [`Still`]): the tallies count the skipped ticks as
//!   they would have come out, and memory upkeep runs on the ticks where it
//!   falls due and could act (a conversation going quiet, a fact expiring),
//!   so the report is the same as stepping through them — and a replay's
//!   time follows its messages and due events, not its span.
//! - Each message becomes a percept as the Discord front end makes it:
//!   mentions made readable, a mention of the bot addressing it.
//! - Messages the bot itself wrote in the export are left out: the replay's
//!   bot speaks for itself, through `ReplayTransport`, into the same store.
//! - Only the spine runs (percepts reach their handlers); the background
//!   loops are never started, so nothing happens between steps.
//! - It keeps the tallies the report needs that the store does not: which
//!   initiative gate stopped each tick, and how many percepts needed a
//!   strong-model call.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::export::{ExportedAuthor, ExportedMessage};
use super::transport::{Act, Doing, ReplayTransport};
use crate::app::{App, Parts, Running};
use crate::attention::{
    Addressed, Author, MessagePercept, Percept, addressed_by_name, bot_mention, readable_mentions,
};
use crate::clock::{Chance, Clock as _, ManualClock};
use crate::executive::StandIn;
use crate::garden::Look;
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::initiative::gates::Verdict;
use crate::replay::Stores;
use crate::settings::Role;
use crate::settings::{Secrets, Settings};
use crate::store::MessageStore;
use crate::store::UsageStore;
use crate::store::messages::StoredMessage;

/// How often memory upkeep and the garden's wake are looked at (see `background_due`).
const BACKGROUND_EVERY: chrono::Duration = chrono::Duration::minutes(5);

/// The initiative gates whose "no" holds until someone posts: the
/// initiative off, no channel open to posts, an empty room (nobody posted
/// there within `requireActivityWithinHours` — as time passes, it only
/// gets emptier). Every gate before them is a setting, a hush (none can
/// begin without a message, and one in force stops the look before these)
/// or quiet hours, which a skip watches for itself.
const STILL_GATES: &[&str] = &["enabled", "pool", "empty_room"];

/// The initiative gates whose "no" holds until a time the gate can say
/// (`Initiative::stops_until`): the daily cap, until the oldest post it
/// counts is a day old; the budget, until enough spend leaves its 24 h; the
/// cooldown, until `minMinutesBetweenPosts` after the last consideration.
/// As time passes with nobody speaking, every gate before them stays open
/// but the room, which empties (part of that time; a held thought rules a
/// stretch out). All come before the eagerness roll, so a skipped tick
/// rolls no dice. Upkeep inside such a stretch may spend, so the tick
/// after it is run.
const TIMED_GATES: &[&str] = &["daily_cap", "budget", "cooldown"];

/// The ticks after some instant that look at memory upkeep: the `first`
/// (1 is the next tick), then every `every`.
struct Grid {
    first: u64,
    every: u64,
}

impl Grid {
    /// The first of them at or after `from`, counted in ticks from `now`.
    fn first_at_or_after(
        &self,
        now: DateTime<Utc>,
        from: DateTime<Utc>,
        tick: chrono::Duration,
    ) -> Option<u64> {
        let k = ceil_ticks(from - now, tick).max(1);
        if k <= self.first {
            return Some(self.first);
        }
        let steps = (k - self.first).div_ceil(self.every);
        self.first.checked_add(steps.checked_mul(self.every)?)
    }

    /// The last of them within the next `k` ticks, as an instant.
    fn last_within(
        &self,
        now: DateTime<Utc>,
        k: u64,
        tick: chrono::Duration,
    ) -> Option<DateTime<Utc>> {
        (k >= self.first).then(|| {
            let last = self.first + (k - self.first) / self.every * self.every;
            now + times(tick, last)
        })
    }
}

/// How many ticks it takes to cover `span` (0 for none).
fn ceil_ticks(span: chrono::Duration, tick: chrono::Duration) -> u64 {
    let (span, tick) = (span.num_milliseconds(), tick.num_milliseconds().max(1));
    if span <= 0 {
        0
    } else {
        (span as u64).div_ceil(tick as u64)
    }
}

/// `k` ticks as a span.
fn times(tick: chrono::Duration, k: u64) -> chrono::Duration {
    chrono::Duration::milliseconds(tick.num_milliseconds().saturating_mul(k as i64))
}

/// How many ticks after `now` come before `end`.
fn ticks_before(now: DateTime<Utc>, end: DateTime<Utc>, tick: chrono::Duration) -> u64 {
    ceil_ticks(end - now, tick).saturating_sub(1)
}

/// What a simulation is built from.
pub struct Setup {
    /// The bot's settings; their data directory is the replay's own.
    pub settings: Settings,
    pub secrets: Secrets,
    /// Where the clock starts: the export's first message.
    pub start: DateTime<Utc>,
    /// Seeds the bot's dice (eagerness rolls, jitter).
    pub seed: u64,
    /// The bot's user id in the export, so mentions of it address it.
    pub bot: u64,
    /// Answers every model call in place of the providers (offline mode).
    pub stand_in: Option<Arc<dyn StandIn>>,
}

/// What the simulation counted as it went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// People's messages handled.
    pub percepts: u64,
    /// Of those, the ones whose handling made a strong-model call (reply or ambient role).
    pub percepts_with_strong_call: u64,
    /// Initiative ticks, per guild.
    pub ticks: u64,
    /// How often each initiative gate stopped a guild's tick.
    pub gates: BTreeMap<&'static str, u64>,
    /// Ticks on which a gate stopped every guild and a model was called
    /// anyway: a gate's "no" must cost nothing, so this stays 0.
    pub calls_past_a_gate: u64,
    /// Texts turned away at the door (`Speech`) in a step that also called
    /// a model: work paid for that nobody saw. Every gate before a model
    /// call exists to keep this at 0.
    pub paid_but_undelivered: u64,
}

pub struct Simulation {
    pub app: Arc<App>,
    clock: Arc<ManualClock>,
    transport: Arc<ReplayTransport>,
    me: Author,
    known_channels: HashSet<u64>,
    /// The export's own messages by the bot, left out.
    pub own_messages_left_out: u64,
    /// When memory upkeep and the garden's wake were last looked at.
    last_background: Option<DateTime<Utc>>,
    /// Each exported channel, on first sight, joins the bot's initiative
    /// pool and its reply channels (a guild override, as `/settings set` makes).
    pub open_exported_channels: bool,
    tally: Tally,
    answered: Answered,
    spine: Option<Running>,
    /// Silent stretches are skipped (see [`Still`]); off, every tick is run.
    pub skip_idle: bool,
    /// Each guild's gate at the last tick run (`None`: it passed, or was in flight).
    last_gates: Vec<Option<&'static str>>,
    /// Ticks skipped so far.
    pub skipped_ticks: u64,
    /// Memory upkeep rounds run inside skipped stretches.
    pub upkeep_runs: u64,
    /// Ticks run, not skipped.
    pub ticks_run: u64,
}

/// A silent stretch: until `until`, no tick does anything but what the
/// last one did — every guild stopped at the same still or timed gate, no
/// task due, no held thought, idea or schedule, nothing for the garden's
/// look — as long as each guild's quiet hours stay as they were at its start.
struct Still {
    until: DateTime<Utc>,
    gates: Vec<&'static str>,
    /// Each guild's settings, for its quiet hours.
    settings: Vec<Arc<Settings>>,
    /// A guild waits at a timed gate: the stretch ends after upkeep runs.
    timed: bool,
}

impl Still {
    /// Where the stretch ends seen from `now`: at `until`, or where some
    /// guild's quiet hours begin or end, whichever comes first.
    fn end(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.settings
            .iter()
            .filter_map(|s| crate::courtesy::quiet_changes_at(s, now))
            .fold(self.until, DateTime::min)
    }
}

/// Answered model calls so far, by role, read from the usage table as it
/// grows: counting the whole table at every step made the count the
/// replay's slowest part.
#[derive(Default)]
struct Answered {
    /// The last usage record read.
    after: Option<i64>,
    by_role: BTreeMap<String, u64>,
}

impl Simulation {
    /// Builds the bot as `setup` says, with the clock at its start.
    pub async fn start(setup: Setup) -> anyhow::Result<Self> {
        let Setup {
            settings,
            secrets,
            start,
            seed,
            bot,
            stand_in,
        } = setup;
        let clock = ManualClock::new(start);
        let me = Author {
            id: UserId(bot),
            name: settings.bot.name.clone(),
            is_bot: true,
        };
        let mut made = None;
        let parts = Parts {
            settings,
            settings_source: None,
            secrets,
            clock: clock.clone(),
            chance: Chance::seeded(seed),
            stand_in,
            // The replay's data directory is its own, held by its lock.
            sharing: crate::store::Sharing::Private,
        };
        let app = App::build(parts, |store| {
            let transport = Arc::new(ReplayTransport::new(
                me.clone(),
                store.into(),
                clock.clone(),
            ));
            made = Some(transport.clone());
            transport
        })
        .await?;
        let transport = made.expect("App::build makes its transport");
        let spine = Some(app.start_spine());
        Ok(Self {
            spine,
            app,
            clock,
            transport,
            me,
            known_channels: HashSet::new(),
            own_messages_left_out: 0,
            last_background: None,
            open_exported_channels: false,
            tally: Tally::default(),
            answered: Answered::default(),
            skip_idle: true,
            last_gates: Vec::new(),
            skipped_ticks: 0,
            upkeep_runs: 0,
            ticks_run: 0,
        })
    }

    /// What was counted so far.
    pub(crate) fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Everything the bot did so far, in order.
    pub fn acts(&self) -> Vec<Act> {
        self.transport.acts()
    }

    /// What the bot did after its first `n` acts.
    pub(crate) fn acts_since(&self, n: usize) -> Vec<Act> {
        self.transport.acts_since(n)
    }

    /// Lets the work in flight finish and stops the spine.
    pub async fn finish(&mut self) {
        self.app.spine.drain().await;
        if let Some(spine) = self.spine.take() {
            spine.stop().await;
        }
    }

    /// Lets simulated time pass up to `t`, one tick at a time.
    pub async fn pass_until(&mut self, t: DateTime<Utc>) -> anyhow::Result<()> {
        let seconds = self
            .app
            .settings
            .global()
            .initiative
            .text
            .tick_seconds
            .max(1);
        let tick = chrono::Duration::seconds(i64::from(seconds));
        while self.clock.now() + tick <= t {
            if let Some(still) = self.still(t, tick)? {
                let before = self.skipped_ticks;
                self.skip(&still, tick).await?;
                if self.skipped_ticks > before {
                    continue;
                }
            }
            self.clock.advance(tick);
            self.tick().await?;
        }
        if self.clock.now() < t {
            self.clock.set(t);
        }
        Ok(())
    }

    /// One tick of the background loops, each part run to the end.
    async fn tick(&mut self) -> anyhow::Result<()> {
        self.ticks_run += 1;
        let mark = self.mark()?;
        self.tick_parts().await?;
        self.settle(mark)
    }

    async fn tick_parts(&mut self) -> anyhow::Result<()> {
        let app = self.app.clone();
        self.transport.doing(Doing::Reminder);
        app.impulses.check();
        app.spine.drain().await;

        self.transport.doing(Doing::AmbientPost);
        let before = self.calls(&[])?;
        let verdicts = app.initiative.tick();
        self.last_gates.clear();
        for (_, verdict) in &verdicts {
            self.tally.ticks += 1;
            if let Verdict::Stop { gate, .. } = verdict {
                *self.tally.gates.entry(gate).or_default() += 1;
                self.last_gates.push(Some(gate));
            } else {
                self.last_gates.push(None);
            }
        }
        app.spine.drain().await;
        let all_stopped = verdicts
            .iter()
            .all(|(_, v)| matches!(v, Verdict::Stop { .. }));
        if all_stopped && self.calls(&[])? > before {
            self.tally.calls_past_a_gate += 1;
        }

        self.transport.doing(Doing::Background);
        if !self.background_due() {
            return Ok(());
        }
        let before = self.last_usage()?;
        app.memory.maintain().await;
        app.garden.notice_conversations_ending();
        let settings = app.settings.global();
        // A look that queued a cycle or moved the wake is followed by another, as `Garden::run` does.
        for _ in 0..3 {
            match app.garden.look(&settings, self.clock.now()) {
                Look::Again => app.spine.drain().await,
                Look::Wait(_) => break,
            }
        }
        if self.last_usage()? != before {
            // Spent after the gates were read: a timed gate's time may have moved.
            self.forget_timed_gates();
        }
        Ok(())
    }

    /// The guilds stopped at a timed gate start no stretch until a tick is run.
    fn forget_timed_gates(&mut self) {
        for g in &mut self.last_gates {
            if g.is_some_and(|g| TIMED_GATES.contains(&g)) {
                *g = None;
            }
        }
    }

    /// The silent stretch that starts now, if one does and skipping is on:
    /// it ends at `t` (the next message), the first task due, the garden's
    /// next wake, where a timed gate opens or the room empties before it —
    /// whichever comes first. Each condition is what a tick would otherwise
    /// act on; any doubt, and the ticks are run.
    fn still(&self, t: DateTime<Utc>, tick: chrono::Duration) -> anyhow::Result<Option<Still>> {
        let now = self.clock.now();
        let gates: Option<Vec<&'static str>> = self
            .last_gates
            .iter()
            .map(|g| g.filter(|g| STILL_GATES.contains(g) || TIMED_GATES.contains(g)))
            .collect();
        let Some(gates) = gates.filter(|g| self.skip_idle && !g.is_empty()) else {
            return Ok(None);
        };
        let Some(garden) = self.app.garden.idle_until(now) else {
            return Ok(None);
        };
        let store: Stores = self.app.stores();
        let guilds = store.messages.known_guilds()?;
        if guilds.len() != gates.len()
            || !store.initiative.pending_thoughts()?.is_empty()
            || !store.impulses.schedules(None)?.is_empty()
        {
            return Ok(None);
        }
        let mut until = t.min(garden);
        for ((g, _), gate) in guilds.iter().zip(&gates) {
            if TIMED_GATES.contains(gate)
                && let Some(opens) = self.app.initiative.stops_until(*g, gate)
            {
                until = until.min(opens);
            }
        }
        let mut settings = Vec::new();
        for g in std::iter::once(None).chain(guilds.iter().map(|(g, _)| Some(*g))) {
            // A task already fired is not fired again; one not yet fired is due at its time.
            let tasks = store.impulses.tasks(g, false)?;
            if let Some(due) = tasks
                .iter()
                .filter(|t| t.fired_at.is_none())
                .map(|t| t.due)
                .min()
            {
                until = until.min(due);
            }
            if let Some(g) = g {
                if !store.impulses.ideas(Some(g), false)?.is_empty() {
                    return Ok(None);
                }
                settings.push(self.app.settings.for_guild(Some(g)));
            }
        }
        let timed = gates.iter().any(|g| TIMED_GATES.contains(g));
        Ok((now + tick < until).then_some(Still {
            until,
            gates,
            settings,
            timed,
        }))
    }

    /// Moves the clock through a silent stretch without running its ticks:
    /// they are counted as the last one came out, in one step up to where
    /// memory upkeep could act (`Memory::next_upkeep`; it runs there, on
    /// the ticks where it falls due) or to where the stretch ends or quiet
    /// hours begin or end (that tick is run). A silent year costs a few
    /// steps, not a step per tick.
    async fn skip(&mut self, still: &Still, tick: chrono::Duration) -> anyhow::Result<()> {
        let mut upkeep = self.app.memory.next_upkeep(self.clock.now());
        loop {
            let now = self.clock.now();
            let left = ticks_before(now, still.end(now), tick);
            if left == 0 {
                return Ok(());
            }
            let grid = self.background_grid(now, tick);
            let upkeep_tick = upkeep
                .and_then(|from| grid.first_at_or_after(now, from, tick))
                .filter(|k| *k <= left);
            let k = upkeep_tick.unwrap_or(left);
            self.count_skipped(still, k);
            self.clock.set(now + times(tick, k));
            if let Some(last) = grid.last_within(now, k, tick) {
                self.last_background = Some(last);
            }
            if upkeep_tick.is_some() {
                // Upkeep acts on time alone (extraction after a conversation
                // goes quiet, expiry): it runs as in a tick. The garden's look
                // would do nothing before the stretch ends.
                let mark = self.mark()?;
                let usage = self.last_usage()?;
                self.transport.doing(Doing::Background);
                self.app.memory.maintain().await;
                self.settle(mark)?;
                self.upkeep_runs += 1;
                if still.timed && self.last_usage()? != usage {
                    // What it spent may move the budget's time: the next tick is run.
                    self.forget_timed_gates();
                    return Ok(());
                }
                upkeep = self.app.memory.next_upkeep(self.clock.now());
            }
        }
    }

    /// `k` ticks skipped, each counted as stopped at the stretch's gates.
    fn count_skipped(&mut self, still: &Still, k: u64) {
        self.skipped_ticks += k;
        self.tally.ticks += k * still.gates.len() as u64;
        for gate in &still.gates {
            *self.tally.gates.entry(gate).or_default() += k;
        }
    }

    /// Which of the ticks after `now` look at memory upkeep and the garden,
    /// as `background_due` would pick them one tick at a time.
    fn background_grid(&self, now: DateTime<Utc>, tick: chrono::Duration) -> Grid {
        let first = match self.last_background {
            None => 1,
            Some(last) => ceil_ticks(last + BACKGROUND_EVERY - now, tick).max(1),
        };
        Grid {
            first,
            every: ceil_ticks(BACKGROUND_EVERY, tick).max(1),
        }
    }

    /// Whether memory upkeep and the garden's wake are due a look: every
    /// `BACKGROUND_EVERY` of simulated time. The live bot looks every
    /// minute; at that rate they took two thirds of a replay's time, for at
    /// most a few minutes' difference in when a background job starts.
    fn background_due(&mut self) -> bool {
        let now = self.clock.now();
        if self
            .last_background
            .is_some_and(|last| now - last < BACKGROUND_EVERY)
        {
            return false;
        }
        self.last_background = Some(now);
        true
    }

    /// One message of the export, at its time, handled to the end.
    pub async fn live(&mut self, m: &ExportedMessage) -> anyhow::Result<()> {
        self.pass_until(m.at).await?;
        // A message can open any gate: the next stretch starts from a tick run after it.
        self.last_gates.clear();
        if self.is_me(&m.author) {
            self.own_messages_left_out += 1;
            return Ok(());
        }
        self.meet(m)?;
        let percept = self.percept(m);
        let addressed = matches!(&percept, Percept::Message(p) if p.addressed.is_addressed());
        self.transport.doing(if addressed {
            Doing::Reply
        } else {
            Doing::ChimeIn
        });
        let strong = [Role::Reply, Role::Ambient];
        let before = self.calls(&strong)?;
        let mark = self.mark()?;
        self.app.senses.perceive(percept)?;
        self.app.spine.drain().await;
        self.tally.percepts += 1;
        if self.calls(&strong)? > before {
            self.tally.percepts_with_strong_call += 1;
        }
        self.settle(mark)
    }

    /// Where a step starts: texts turned away so far, model calls so far.
    fn mark(&mut self) -> anyhow::Result<(u64, u64)> {
        Ok((self.app.speech.turned_away(), self.calls(&[])?))
    }

    /// Texts turned away in a step that called a model were paid for.
    fn settle(&mut self, (turned_away, calls): (u64, u64)) -> anyhow::Result<()> {
        let now_turned_away = self.app.speech.turned_away();
        if now_turned_away > turned_away && self.calls(&[])? > calls {
            self.tally.paid_but_undelivered += now_turned_away - turned_away;
        }
        Ok(())
    }

    /// Answered model calls of `roles` (all when empty) so far; a refusal is no call.
    fn calls(&mut self, roles: &[Role]) -> anyhow::Result<u64> {
        let new = self
            .app
            .stores::<UsageStore>()
            .usage_after(self.answered.after)?;
        for record in new {
            self.answered.after = Some(record.id);
            if record.outcome == "ok" {
                *self.answered.by_role.entry(record.role).or_default() += 1;
            }
        }
        let counted = |role: &String| roles.is_empty() || roles.iter().any(|r| r.as_str() == role);
        Ok(self
            .answered
            .by_role
            .iter()
            .filter(|(role, _)| counted(role))
            .map(|(_, n)| n)
            .sum())
    }

    /// The last usage record so far: a call made or refused since moves it.
    fn last_usage(&mut self) -> anyhow::Result<Option<i64>> {
        self.calls(&[])?;
        Ok(self.answered.after)
    }

    /// The server and channel stored on first sight, as the gateway's guild event does.
    fn meet(&mut self, m: &ExportedMessage) -> anyhow::Result<()> {
        if self.known_channels.insert(m.channel.id) {
            let store: Stores = self.app.stores();
            store
                .messages
                .upsert_guild(GuildId(m.guild.id), &m.guild.name, m.at)?;
            store.messages.upsert_channel(
                ChannelId(m.channel.id),
                Some(GuildId(m.guild.id)),
                &m.channel.name,
                m.at,
            )?;
            if self.open_exported_channels {
                self.open(GuildId(m.guild.id))?;
            }
        }
        Ok(())
    }

    fn open(&self, guild: GuildId) -> anyhow::Result<()> {
        let channels = self.app.stores::<MessageStore>().guild_channels(guild)?;
        let ids = serde_json::to_string(&channels)?;
        for path in [
            "permissions.replies.discoveryChannelIds",
            "permissions.replies.replyChannelIds",
        ] {
            self.app
                .settings
                .set_override(guild, path, &ids, None)
                .map_err(|e| anyhow::anyhow!("cannot open the exported channels ({path}): {e}"))?;
        }
        Ok(())
    }

    /// The bot in the export: its id, or (when the export's bot id is not
    /// known) a bot account by the bot's name.
    fn is_me(&self, a: &ExportedAuthor) -> bool {
        a.id == self.me.id.get() || (a.is_bot && a.name.eq_ignore_ascii_case(&self.me.name))
    }

    fn percept(&self, m: &ExportedMessage) -> Percept {
        let bot_name = &self.me.name;
        let mentioned: Vec<(u64, &str)> =
            m.mentions.iter().map(|a| (a.id, a.name.as_str())).collect();
        let content = readable_mentions(
            &m.content,
            &mentioned,
            &self.app.stores::<MessageStore>(),
            self.me.id,
            bot_name,
        );
        // `<@id>` of the bot is `@name` by now; a hand-made export writes that directly.
        let addressed =
            if m.mentions.iter().any(|a| self.is_me(a)) || mentions_bot(&content, bot_name) {
                Addressed::Mention
            } else if addressed_by_name(&content, bot_name) {
                Addressed::ByName
            } else {
                Addressed::No
            };
        Percept::Message(MessagePercept {
            message: StoredMessage {
                author_is_bot: m.author.is_bot,
                reply_to: m.reply_to.map(MessageId),
                ..StoredMessage::said(
                    MessageId(m.id),
                    Some(GuildId(m.guild.id)),
                    ChannelId(m.channel.id),
                    UserId(m.author.id),
                    m.author.name.clone(),
                    content,
                    m.at,
                )
            },
            addressed,
            guild_name: Some(m.guild.name.clone()),
            channel_name: Some(m.channel.name.clone()),
            author_roles: None,
        })
    }
}

/// Whether `text` holds `@name` of the bot as a word of its own.
fn mentions_bot(text: &str, bot_name: &str) -> bool {
    let mention = bot_mention(bot_name).to_lowercase();
    let text = text.to_lowercase();
    text.match_indices(&mention).any(|(i, _)| {
        !text[i + mention.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
    })
}
