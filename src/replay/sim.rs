//! The simulation: the whole bot (the same `App` every front end builds)
//! living through an export on a manual clock.
//!
//! - Before each message the clock moves from the last message's time to
//!   this one a tick (`initiative.text.tickSeconds`) at a time, and each
//!   step runs what it brings (`App::run_due`: due reminders and tasks, the
//!   initiative tick), so cooldowns, caps and expiry see simulated time.
//! - Each message becomes a percept as the Discord front end makes it:
//!   mentions made readable, a mention of the bot addressing it.
//! - Messages the bot itself wrote in the export are left out: the replay's
//!   bot speaks for itself, through `ReplayTransport`, into the same store.
//! - Only the spine runs (percepts reach their handlers); the background
//!   loops are never started, so nothing happens between steps.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::export::ExportedMessage;
use super::transport::{Act, ReplayTransport};
use crate::app::{App, Parts, Running};
use crate::attention::{
    Addressed, Author, MessagePercept, Percept, addressed_by_name, bot_mention, readable_mentions,
};
use crate::clock::{Chance, Clock as _, ManualClock};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::settings::{Secrets, Settings};
use crate::store::messages::{Source, StoredMessage};

pub struct Simulation {
    pub app: Arc<App>,
    clock: Arc<ManualClock>,
    transport: Arc<ReplayTransport>,
    me: Author,
    known_channels: HashSet<u64>,
    /// The export's own messages by the bot, left out.
    pub own_messages_left_out: u64,
    spine: Option<Running>,
}

impl Simulation {
    /// Builds the bot on `settings` (whose data directory is the replay's
    /// own) with the clock at `start` and dice seeded with `seed`. `bot` is
    /// the bot's user id in the export, so mentions of it address it.
    pub async fn start(
        settings: Settings,
        secrets: Secrets,
        start: DateTime<Utc>,
        seed: u64,
        bot: u64,
    ) -> anyhow::Result<Self> {
        let clock = ManualClock::new(start);
        let me = Author {
            id: UserId(bot),
            name: settings.bot.name.clone(),
            is_bot: true,
        };
        let mut made = None;
        let parts = Parts {
            settings,
            secrets,
            clock: clock.clone(),
            chance: Chance::seeded(seed),
        };
        let app = App::build(parts, |store| {
            let transport = Arc::new(ReplayTransport::new(
                me.clone(),
                store.clone(),
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
        })
    }

    /// Everything the bot did so far, in order.
    pub fn acts(&self) -> Vec<Act> {
        self.transport.acts()
    }

    /// Lets the work in flight finish and stops the spine.
    pub async fn finish(&mut self) {
        self.app.spine.drain().await;
        if let Some(spine) = self.spine.take() {
            spine.stop().await;
        }
    }

    /// Lets simulated time pass up to `t`, one tick at a time.
    pub async fn pass_until(&self, t: DateTime<Utc>) {
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
            self.clock.advance(tick);
            self.app.run_due().await;
        }
        if self.clock.now() < t {
            self.clock.set(t);
        }
    }

    /// One message of the export, at its time, handled to the end.
    pub async fn live(&mut self, m: &ExportedMessage) -> anyhow::Result<()> {
        self.pass_until(m.at).await;
        if m.author.id == self.me.id.get() {
            self.own_messages_left_out += 1;
            return Ok(());
        }
        self.meet(m)?;
        self.app.senses.perceive(self.percept(m))?;
        self.app.spine.drain().await;
        Ok(())
    }

    /// The server and channel stored on first sight, as the gateway's guild event does.
    fn meet(&mut self, m: &ExportedMessage) -> anyhow::Result<()> {
        if self.known_channels.insert(m.channel.id) {
            let store = &self.app.store;
            store.upsert_guild(GuildId(m.guild.id), &m.guild.name, m.at)?;
            store.upsert_channel(
                ChannelId(m.channel.id),
                Some(GuildId(m.guild.id)),
                &m.channel.name,
                m.at,
            )?;
        }
        Ok(())
    }

    fn percept(&self, m: &ExportedMessage) -> Percept {
        let bot_name = &self.me.name;
        let mentioned: Vec<(u64, &str)> =
            m.mentions.iter().map(|a| (a.id, a.name.as_str())).collect();
        let content = readable_mentions(
            &m.content,
            &mentioned,
            &self.app.store,
            self.me.id,
            bot_name,
        );
        // `<@id>` of the bot is `@name` by now; a hand-made export writes that directly.
        let addressed = if m.mentions.iter().any(|a| a.id == self.me.id.get())
            || mentions_bot(&content, bot_name)
        {
            Addressed::Mention
        } else if addressed_by_name(&content, bot_name) {
            Addressed::ByName
        } else {
            Addressed::No
        };
        Percept::Message(MessagePercept {
            message: StoredMessage {
                id: MessageId(m.id),
                guild: Some(GuildId(m.guild.id)),
                channel: ChannelId(m.channel.id),
                author_id: UserId(m.author.id),
                author_name: m.author.name.clone(),
                author_is_bot: m.author.is_bot,
                is_self: false,
                content,
                attachments: Vec::new(),
                reply_to: m.reply_to.map(MessageId),
                source: Source::Text,
                created_at: m.at,
                edited_at: None,
                deleted_at: None,
            },
            addressed,
            guild_name: Some(m.guild.name.clone()),
            channel_name: Some(m.channel.name.clone()),
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
