//! Gateway events → percepts. A thin adapter: everything a person can see
//! the bot see becomes a percept handed to `senses`, which stores it and
//! decides whether attention gets it. Slash commands go to poise instead.

use std::sync::Arc;

use serenity::all::{
    ChannelId as SChannelId, ChannelType, Context, Event, GuildChannel, GuildId as SGuildId,
    Interaction, Member, Message, MessageId as SMessageId, MessageUpdateEvent, RawEventHandler,
    Reaction, Ready, VoiceState,
};
use serenity::async_trait;

use super::convert;
use crate::app::App;
use crate::attention::{Author, Percept, Place};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::store::MessageStore;
use crate::vocab::journal::{Entry, Kind};

pub(crate) struct Events {
    pub app: Arc<App>,
    pub me: UserId,
    /// Told when a connection is up, so reconnect back-off starts over.
    pub gate: Arc<super::reconnect::Gate>,
    /// This process's shards; events of other guilds are dropped (`super::shards`).
    pub plan: Option<crate::vocab::shards::Shards>,
    /// Told when a shard's servers have all arrived: start-up settling.
    pub settler: super::startup_pages::Settler,
    /// The slash commands, handed Ready and interactions (`super::shards::Commands`).
    pub commands: super::shards::Commands,
    /// Servers that removed the bot, and the sweep of their data (`super::departed`).
    pub departures: Arc<super::departed::Departures>,
}

impl Events {
    /// Whether an event of `guild` (None: a DM) belongs to another process's shards.
    fn foreign(&self, guild: Option<SGuildId>) -> bool {
        let foreign = !super::shards::admits_serenity(self.plan.as_ref(), guild);
        if foreign {
            tracing::debug!(guild = ?guild, "dropped: not a guild of this process's shards");
        }
        foreign
    }

    fn voice_member(&self, user: UserId, is_bot: bool) -> crate::voice::Member {
        use crate::voice::Member;
        match (user == self.me, is_bot) {
            (true, _) => Member::Me,
            (false, true) => Member::Bot,
            (false, false) => Member::Person,
        }
    }

    /// A server arrives on a new session only (a resume replays instead):
    /// read what its text channels said while the bot was away.
    fn catch_up(&self, ctx: &Context, g: GuildId, guild: &serenity::all::Guild) {
        let settings = self.app.settings.for_guild(Some(g));
        let channels: Vec<ChannelId> = guild
            .channels
            .values()
            .filter(|c| matches!(c.kind, ChannelType::Text | ChannelType::News))
            .map(|c| ChannelId(c.id.get()))
            .chain(guild.threads.iter().map(|t| ChannelId(t.id.get())))
            .filter(|c| crate::permissions::channel_invisible_because(&settings, *c).is_none())
            .collect();
        let (app, http, me) = (self.app.clone(), ctx.http.clone(), self.me);
        tokio::spawn(async move {
            for channel in channels {
                super::backfill::channel(&app, &http, me, g, channel).await;
            }
        });
    }

    fn perceive(&self, percept: Percept) {
        // Discord keeps what was said: a message may be committed in a
        // group (backfill reads again what a crash lost).
        if let Err(e) = self.app.senses.perceive_grouped(percept) {
            tracing::error!(error = %e, "could not store a percept");
        }
    }

    fn channel_name(
        &self,
        ctx: &Context,
        channel: SChannelId,
        guild: Option<SGuildId>,
    ) -> Option<String> {
        // The cache first: it is in memory, and a store read would commit
        // the open group of writes (see `store::group_commit`).
        let cached = guild.and_then(|g| {
            let cached = ctx.cache.guild(g)?;
            cached
                .channels
                .get(&channel)
                .map(|c| c.name.clone())
                .or_else(|| {
                    cached
                        .threads
                        .iter()
                        .find(|t| t.id == channel)
                        .map(|t| t.name.clone())
                })
        });
        cached.or_else(|| {
            self.app
                .stores::<MessageStore>()
                .channel_name(ChannelId(channel.get()))
                .ok()
                .flatten()
        })
    }
}

fn place(channel: SChannelId, guild: Option<SGuildId>) -> Place {
    Place {
        guild: guild.map(|g| GuildId(g.get())),
        channel: ChannelId(channel.get()),
    }
}

/// Raw events, not serenity's `EventHandler`: serenity spawns a task per
/// event for each handler, and an `EventHandler`'s task holds the whole
/// `FullEvent` and its dispatch, which tokio moves several times on its way
/// to the heap. A raw handler's task holds the smaller `Event`: counted
/// under callgrind, the bytes copied for a message nobody addressed fell
/// from about 150 KB to 40 KB, and for an answered one from 370 KB to
/// 150 KB. Nothing here needs what `FullEvent` adds (the cached state
/// before an update, `CacheReady`).
///
/// The rare events that wait (a server arriving, a voice state, a command,
/// Ready) wait in a future of their own, boxed: awaited inline, their
/// states made this handler's future about 5.9 KB, which `async_trait`
/// copies twice for every message on its way to the heap; boxed, it holds
/// little more than the `Event`.
#[async_trait]
impl RawEventHandler for Events {
    async fn raw_event(&self, ctx: Context, event: Event) {
        match event {
            Event::MessageCreate(e) => self.message(&ctx, e.message),
            Event::MessageUpdate(e) => self.message_update(e),
            Event::MessageDelete(e) => self.message_delete(e.channel_id, e.message_id, e.guild_id),
            Event::ReactionAdd(e) => self.reaction_add(&ctx, e.reaction),
            Event::ReactionRemove(e) => self.reaction_remove(e.reaction),
            Event::GuildCreate(e) => Box::pin(self.guild_create(&ctx, e.guild)).await,
            Event::GuildDelete(e) => self.guild_delete(e.guild),
            Event::GuildMemberAdd(e) => self.guild_member_addition(e.member),
            Event::ChannelDelete(e) => self.channel_delete(e.channel),
            Event::ChannelCreate(e) => self.channel_known(&e.channel),
            Event::ThreadCreate(e) => self.channel_known(&e.thread),
            Event::VoiceStateUpdate(e) => {
                Box::pin(self.voice_state_update(&ctx, e.voice_state)).await
            }
            Event::InteractionCreate(e) => {
                Box::pin(self.interaction_create(ctx, e.interaction)).await
            }
            Event::Ready(e) => Box::pin(self.ready(ctx, e.ready)).await,
            Event::Resumed(_) => {
                self.gate.connected();
                self.app
                    .journal
                    .metrics()
                    .gateway_session(ctx.shard_id.0, true);
            }
            _ => {}
        }
    }
}

impl Events {
    async fn ready(&self, ctx: Context, ready: Ready) {
        self.settler.arrived();
        self.gate.connected();
        self.app
            .journal
            .metrics()
            .gateway_session(ctx.shard_id.0, false);
        tracing::info!(user = %ready.user.name, guilds = ready.guilds.len(), "connected to Discord");
        self.app.journal.record(
            Entry::new(Kind::System, "connected to Discord").reason(format!(
                "as {} in {} server(s)",
                ready.user.name,
                ready.guilds.len()
            )),
        );
        let listed: Vec<GuildId> = ready.guilds.iter().map(|g| GuildId(g.id.get())).collect();
        let shard = ready.shard.map(|s| (s.id.0, s.total));
        self.departures.ready(shard, &listed);
        self.commands.ready(ctx, &ready).await;
    }

    /// Removed from a server (no `unavailable`), or an outage (`unavailable: true`).
    fn guild_delete(&self, guild: serenity::all::UnavailableGuild) {
        if self.foreign(Some(guild.id)) {
            return;
        }
        self.departures
            .deleted(GuildId(guild.id.get()), guild.unavailable);
    }

    async fn interaction_create(&self, ctx: Context, interaction: Interaction) {
        if self.foreign(interaction.guild_id()) {
            return;
        }
        self.commands.interaction(ctx, interaction).await;
    }

    async fn guild_create(&self, ctx: &Context, guild: serenity::all::Guild) {
        self.settler.arrived();
        if self.foreign(Some(guild.id)) {
            return;
        }
        let now = self.app.clock.now();
        let g = GuildId(guild.id.get());
        let mut result = self
            .app
            .stores::<MessageStore>()
            .upsert_guild(g, &guild.name, now);
        for (id, channel) in &guild.channels {
            if matches!(
                channel.kind,
                ChannelType::Text | ChannelType::News | ChannelType::Voice | ChannelType::Forum
            ) {
                result = result.and(self.app.stores::<MessageStore>().upsert_channel(
                    ChannelId(id.get()),
                    Some(g),
                    &channel.name,
                    now,
                ));
            }
        }
        for thread in &guild.threads {
            result = result.and(self.app.stores::<MessageStore>().upsert_channel(
                ChannelId(thread.id.get()),
                Some(g),
                &thread.name,
                now,
            ));
        }
        if let Err(e) = result {
            tracing::warn!(guild = %g, error = %e, "could not record guild and channel names");
        }
        self.departures.created(g);
        self.catch_up(ctx, g, &guild);
        self.app.discovery.poke();
        // People already in voice when the bot arrives (for voice.autoJoin).
        for (user, vs) in &guild.voice_states {
            let who = self.voice_member(
                UserId(user.get()),
                guild.members.get(user).is_some_and(|m| m.user.bot),
            );
            let channel = vs.channel_id.map(|c| ChannelId(c.get()));
            self.app
                .voice
                .voice_state(g, UserId(user.get()), who, channel)
                .await;
        }
    }

    fn message(&self, ctx: &Context, m: Message) {
        if self.foreign(m.guild_id) {
            return;
        }
        let bot_name = self
            .app
            .settings
            .for_guild(m.guild_id.map(|g| GuildId(g.get())))
            .bot
            .name
            .clone();
        let channel_name = self.channel_name(ctx, m.channel_id, m.guild_id);
        let guild_name = m
            .guild_id
            .and_then(|g| ctx.cache.guild(g).map(|g| g.name.clone()));
        let percept = convert::percept(
            &m,
            self.me,
            &bot_name,
            &self.app.stores(),
            channel_name,
            guild_name,
        );
        if percept.addressed.is_addressed() {
            self.app.journal.metrics().addressed(percept.message.id);
        }
        self.perceive(Percept::Message(percept));
    }

    fn message_update(&self, event: MessageUpdateEvent) {
        if self.foreign(event.guild_id) {
            return;
        }
        let Some(content) = event.content else { return };
        let at = event
            .edited_timestamp
            .and_then(|t| chrono::DateTime::from_timestamp(t.unix_timestamp(), 0))
            .unwrap_or_else(|| self.app.clock.now());
        self.perceive(Percept::Edit {
            id: MessageId(event.id.get()),
            place: place(event.channel_id, event.guild_id),
            content,
            at,
        });
    }

    fn message_delete(&self, channel: SChannelId, id: SMessageId, guild: Option<SGuildId>) {
        if self.foreign(guild) {
            return;
        }
        self.perceive(Percept::Delete {
            id: MessageId(id.get()),
            place: place(channel, guild),
            at: self.app.clock.now(),
        });
    }

    fn reaction_add(&self, ctx: &Context, r: Reaction) {
        if self.foreign(r.guild_id) {
            return;
        }
        let Some(user) = r.user_id else { return };
        let name = r
            .member
            .as_ref()
            .map(|m| m.display_name().to_string())
            .or_else(|| ctx.cache.user(user).map(|u| u.name.clone()))
            .unwrap_or_else(|| user.to_string());
        let is_bot = r.member.as_ref().map(|m| m.user.bot).unwrap_or(false);
        self.perceive(Percept::Reaction {
            place: place(r.channel_id, r.guild_id),
            message: MessageId(r.message_id.get()),
            user: Author {
                id: UserId(user.get()),
                name,
                is_bot,
            },
            emoji: r.emoji.to_string(),
            added: true,
            at: self.app.clock.now(),
        });
    }

    fn reaction_remove(&self, r: Reaction) {
        if self.foreign(r.guild_id) {
            return;
        }
        let Some(user) = r.user_id else { return };
        self.perceive(Percept::Reaction {
            place: place(r.channel_id, r.guild_id),
            message: MessageId(r.message_id.get()),
            user: Author {
                id: UserId(user.get()),
                name: user.to_string(),
                is_bot: false,
            },
            emoji: r.emoji.to_string(),
            added: false,
            at: self.app.clock.now(),
        });
    }

    /// A channel or thread made after the server arrived is recorded as the
    /// server's, as GUILD_CREATE's are: `/feeds add` only posts into a
    /// channel the store knows to be the server's own.
    fn channel_known(&self, channel: &GuildChannel) {
        let kinds = [
            ChannelType::Text,
            ChannelType::News,
            ChannelType::Voice,
            ChannelType::Forum,
            ChannelType::PublicThread,
            ChannelType::NewsThread,
            ChannelType::PrivateThread,
        ];
        if !kinds.contains(&channel.kind) || self.foreign(Some(channel.guild_id)) {
            return;
        }
        let guild = GuildId(channel.guild_id.get());
        if let Err(e) = self.app.stores::<MessageStore>().upsert_channel(
            ChannelId(channel.id.get()),
            Some(guild),
            &channel.name,
            self.app.clock.now(),
        ) {
            tracing::warn!(%guild, error = %e, "could not record a new channel's name");
        }
    }

    fn channel_delete(&self, channel: GuildChannel) {
        // Serenity's handlers hear a deleted category as another event.
        if channel.kind == ChannelType::Category || self.foreign(Some(channel.guild_id)) {
            return;
        }
        let (guild, channel) = (GuildId(channel.guild_id.get()), ChannelId(channel.id.get()));
        match self.app.memory.archive_channel(guild, channel) {
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(%guild, %channel, error = %e, "could not archive a deleted channel's memory")
            }
        }
    }

    async fn voice_state_update(&self, ctx: &Context, new: VoiceState) {
        if self.foreign(new.guild_id) {
            return;
        }
        let Some(guild) = new.guild_id else { return };
        let is_bot = new
            .member
            .as_ref()
            .map(|m| m.user.bot)
            .or_else(|| ctx.cache.user(new.user_id).map(|u| u.bot))
            .unwrap_or(false);
        self.app
            .voice
            .voice_state(
                GuildId(guild.get()),
                UserId(new.user_id.get()),
                self.voice_member(UserId(new.user_id.get()), is_bot),
                new.channel_id.map(|c| ChannelId(c.get())),
            )
            .await;
    }

    fn guild_member_addition(&self, member: Member) {
        if self.foreign(Some(member.guild_id)) {
            return;
        }
        self.perceive(Percept::MemberJoin {
            guild: GuildId(member.guild_id.get()),
            user: Author {
                id: UserId(member.user.id.get()),
                name: member.display_name().to_string(),
                is_bot: member.user.bot,
            },
            at: self.app.clock.now(),
        });
    }
}

/// The frames the handler above gets: serenity's one-pass decode of a
/// dispatch (`vendor/serenity`, see vendor/README.md) gives what its
/// `Deserialize` gives, and leaves every other frame to it.
#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use serenity::all::{Event, GatewayEvent};

    /// A dispatch in Discord's order of keys.
    fn frame(t: &str, s: u64, d: &Value) -> String {
        format!(r#"{{"t":{},"s":{s},"op":0,"d":{d}}}"#, json!(t))
    }

    /// What serenity's decoding of a frame gave before the patch, as text:
    /// `Debug` shows every field.
    fn before(text: &str) -> String {
        format!("{:?}", serenity::json::from_str::<GatewayEvent>(text))
    }

    fn now(text: &str) -> String {
        format!("{:?}", GatewayEvent::decode_frame(text))
    }

    fn user(id: u64) -> Value {
        json!({"id": id.to_string(), "username": format!("u{id}"), "global_name": null,
               "avatar": null, "discriminator": "0", "bot": false})
    }

    fn member(id: u64) -> Value {
        json!({"user": user(id), "roles": ["30"], "nick": "Nick", "deaf": false, "mute": false,
               "flags": 0, "joined_at": "2024-01-01T00:00:00+00:00", "guild_id": "2"})
    }

    fn channel(id: u64) -> Value {
        json!({"id": id.to_string(), "type": 0, "guild_id": "2", "name": "general", "position": 1,
               "permission_overwrites": [], "topic": null, "nsfw": false, "parent_id": null})
    }

    fn message(id: u64) -> Value {
        json!({"id": id.to_string(), "channel_id": "3", "guild_id": "2", "author": user(7),
               "member": {"roles": [], "joined_at": "2024-01-01T00:00:00+00:00", "deaf": false,
                          "mute": false, "flags": 0},
               "content": "the ferry <@8>", "timestamp": "2024-05-01T10:00:00.000000+00:00",
               "edited_timestamp": null, "tts": false, "mention_everyone": false,
               "mentions": [user(8)], "mention_roles": [], "attachments": [], "embeds": [],
               "pinned": false, "type": 0, "flags": 0})
    }

    fn reaction() -> Value {
        json!({"user_id": "7", "channel_id": "3", "message_id": "9", "guild_id": "2",
               "emoji": {"id": null, "name": "👋"}, "burst": false, "type": 0})
    }

    /// A value's arrays in a fixed order.
    fn sorted(v: Value) -> Value {
        match v {
            Value::Array(items) => {
                let mut items: Vec<Value> = items.into_iter().map(sorted).collect();
                items.sort_by_key(Value::to_string);
                Value::Array(items)
            }
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            v => v,
        }
    }

    /// A frame of each kind decoded in one pass, as Discord sends it.
    fn each_kind() -> Vec<(&'static str, Value)> {
        vec![
            ("CHANNEL_CREATE", channel(4)),
            ("CHANNEL_DELETE", channel(4)),
            ("CHANNEL_UPDATE", channel(4)),
            (
                "GUILD_CREATE",
                json!({
                "id": "2", "name": "Harbour", "icon": null, "owner_id": "7", "afk_timeout": 300,
                "verification_level": 0, "default_message_notifications": 0,
                "explicit_content_filter": 0, "mfa_level": 0, "system_channel_flags": 0,
                "premium_tier": 0, "nsfw_level": 0, "features": [], "preferred_locale": "en-US",
                "premium_progress_bar_enabled": false,
                "roles": [{"id": "2", "name": "@everyone", "permissions": "1024", "position": 0,
                           "color": 0, "colors": {"primary_color": 0}, "hoist": false,
                           "managed": false, "mentionable": false}],
                "emojis": [], "stickers": [], "channels": [channel(3), channel(4)],
                "members": [member(7), member(8)], "voice_states": [], "threads": [],
                "presences": [], "stage_instances": [], "guild_scheduled_events": [],
                "joined_at": "2024-01-01T00:00:00+00:00", "large": false, "member_count": 2,
                "unavailable": false}),
            ),
            ("GUILD_DELETE", json!({"id": "2", "unavailable": true})),
            ("GUILD_MEMBER_ADD", member(9)),
            (
                "GUILD_MEMBER_REMOVE",
                json!({"guild_id": "2", "user": user(9)}),
            ),
            ("GUILD_MEMBER_UPDATE", member(9)),
            (
                "INTERACTION_CREATE",
                json!({
                "id": "11", "application_id": "12", "type": 2, "token": "token-11", "version": 1,
                "guild_id": "2", "channel_id": "3",
                "member": {"user": user(7), "roles": [], "deaf": false, "mute": false, "flags": 0,
                           "joined_at": "2024-01-01T00:00:00+00:00", "permissions": "8"},
                "app_permissions": "2147483647", "locale": "en-US", "guild_locale": "en-US",
                "entitlements": [], "authorizing_integration_owners": {"0": "2"}, "context": 0,
                "attachment_size_limit": 8388608,
                "data": {"id": "777", "name": "memory", "type": 1,
                         "options": [{"type": 1, "name": "show", "options": []}]}}),
            ),
            ("MESSAGE_CREATE", message(9)),
            (
                "MESSAGE_DELETE",
                json!({"id": "9", "channel_id": "3", "guild_id": "2"}),
            ),
            (
                "MESSAGE_DELETE_BULK",
                json!({"ids": ["9", "10"], "channel_id": "3", "guild_id": "2"}),
            ),
            ("MESSAGE_REACTION_ADD", reaction()),
            ("MESSAGE_REACTION_REMOVE", reaction()),
            (
                "MESSAGE_UPDATE",
                json!({"id": "9", "channel_id": "3", "guild_id": "2",
                                      "content": "edited", "edited_timestamp": "2024-05-01T10:01:00+00:00"}),
            ),
            (
                "PRESENCE_UPDATE",
                json!({"user": {"id": "7"}, "guild_id": "2", "status": "online",
                                       "activities": [], "client_status": {"desktop": "online"}}),
            ),
            (
                "READY",
                json!({"v": 10, "user": user(1), "guilds": [{"id": "2", "unavailable": true}],
                             "session_id": "s-1", "resume_gateway_url": "wss://example.invalid",
                             "shard": [0, 1], "application": {"id": "12", "flags": 0}}),
            ),
            ("RESUMED", json!({})),
            (
                "TYPING_START",
                json!({"channel_id": "3", "guild_id": "2", "user_id": "7",
                                    "timestamp": 1714557600, "member": member(7)}),
            ),
            (
                "VOICE_STATE_UPDATE",
                json!({"guild_id": "2", "channel_id": "5", "user_id": "7",
                                          "member": member(7), "session_id": "v-1", "deaf": false,
                                          "mute": false, "self_deaf": false, "self_mute": true,
                                          "self_video": false, "suppress": false,
                                          "request_to_speak_timestamp": null}),
            ),
        ]
    }

    #[test]
    fn each_kind_decoded_in_one_pass_is_what_serenity_decoded_before() {
        for (n, (kind, d)) in each_kind().into_iter().enumerate() {
            let text = frame(kind, n as u64 + 1, &d);
            let lean = GatewayEvent::decode_lean(&text).unwrap_or_else(|| {
                panic!(
                    "{kind} was not decoded in one pass; before: {}",
                    before(&text)
                )
            });
            let GatewayEvent::Dispatch(_, ref event) = lean else {
                panic!("{kind} did not decode as a dispatch: {lean:?}");
            };
            assert!(!matches!(**event, Event::Unknown(_)), "{kind}: {event:?}");
            if kind == "GUILD_CREATE" {
                // A server's maps (channels, members, roles) iterate each in its own order.
                let old = serenity::json::from_str::<GatewayEvent>(&text).unwrap();
                assert_eq!(
                    sorted(serde_json::to_value(&lean).unwrap()),
                    sorted(serde_json::to_value(&old).unwrap()),
                    "{kind}"
                );
            } else {
                assert_eq!(now(&text), before(&text), "{kind}");
            }
        }
    }

    #[test]
    fn an_unknown_kind_arrives_whole_as_an_unknown_event_as_before() {
        let text = frame(
            "SOMETHING_NEW",
            7,
            &json!({"a": [1, 2.5, "x"], "b": {"c": null}}),
        );
        assert!(GatewayEvent::decode_lean(&text).is_none());
        let decoded = GatewayEvent::decode_frame(&text).unwrap();
        let GatewayEvent::Dispatch(7, ref event) = decoded else {
            panic!("not a dispatch: {decoded:?}");
        };
        let Event::Unknown(ref unknown) = **event else {
            panic!("not an unknown dispatch: {decoded:?}");
        };
        assert_eq!(unknown.kind, "SOMETHING_NEW");
        assert_eq!(unknown.value, json!({"a": [1, 2.5, "x"], "b": {"c": null}}));
        assert_eq!(now(&text), before(&text));
    }

    #[test]
    fn frames_the_one_pass_decode_does_not_take_decode_as_before() {
        let m = message(9);
        let out_of_order = format!(r#"{{"d":{m},"t":"MESSAGE_CREATE","s":3,"op":0}}"#);
        let frames = [
            // Not JSON, cut short, not an object.
            "{\"t\":\"MESSAGE_CREATE\"".to_string(),
            "ambient".to_string(),
            "[0, 1]".to_string(),
            // A listed kind whose payload is not that kind's: an unknown event before, still.
            frame(
                "MESSAGE_CREATE",
                3,
                &json!({"id": "not a snowflake", "content": 5}),
            ),
            frame("MESSAGE_CREATE", 3, &json!(null)),
            // A dispatch without its sequence number, or its kind, or its payload.
            format!(r#"{{"t":"MESSAGE_CREATE","op":0,"d":{m}}}"#),
            format!(r#"{{"t":"MESSAGE_CREATE","s":null,"op":0,"d":{m}}}"#),
            format!(r#"{{"s":3,"op":0,"d":{m}}}"#),
            format!(r#"{{"t":null,"s":3,"op":0,"d":{m}}}"#),
            r#"{"t":"MESSAGE_CREATE","s":3,"op":0}"#.to_string(),
            // Keys out of Discord's order, repeated, or unknown.
            out_of_order.clone(),
            format!(r#"{{"t":"MESSAGE_CREATE","s":3,"op":0,"d":{m},"t":"MESSAGE_UPDATE"}}"#),
            format!(r#"{{"t":"MESSAGE_CREATE","s":3,"op":0,"d":{m},"s":4}}"#),
            format!(r#"{{"t":"MESSAGE_CREATE","s":3,"op":0,"x":1,"d":{m}}}"#),
            // Text after the frame.
            format!(r#"{}x"#, frame("MESSAGE_CREATE", 3, &m)),
            // The other opcodes.
            r#"{"t":null,"s":null,"op":10,"d":{"heartbeat_interval":41250}}"#.to_string(),
            r#"{"t":null,"s":null,"op":11,"d":null}"#.to_string(),
            r#"{"t":null,"s":null,"op":9,"d":false}"#.to_string(),
            r#"{"t":null,"s":null,"op":7,"d":null}"#.to_string(),
            r#"{"t":null,"s":null,"op":1,"d":null}"#.to_string(),
            r#"{"t":null,"s":null,"op":42,"d":null}"#.to_string(),
        ];
        for text in &frames {
            assert!(
                GatewayEvent::decode_lean(text).is_none(),
                "taken in one pass: {text}"
            );
            assert_eq!(now(text), before(text), "{text}");
        }
        // A known kind whose keys come in another order still arrives whole.
        assert!(matches!(
            GatewayEvent::decode_frame(&out_of_order),
            Ok(GatewayEvent::Dispatch(3, event)) if matches!(*event, Event::MessageCreate(_))
        ));
    }
}

/// The other two changes of the vendored serenity (vendor/README.md): the
/// timestamps and the picture hashes every message carries are read directly
/// in the form Discord writes them, and must come out as serenity read them
/// before.
#[cfg(test)]
mod decoded_fields {
    use chrono::{DateTime, Utc};
    use serenity::all::{ImageHash, Timestamp};

    /// What the timestamp field `text` decodes to, or the error's text.
    fn ours(text: &str) -> Result<DateTime<Utc>, String> {
        serde_json::from_str::<Timestamp>(&serde_json::json!(text).to_string())
            .map(|t| *t)
            .map_err(|e| e.to_string())
    }

    /// What chrono's own `Deserialize` (serenity's before) gives.
    fn chrono(text: &str) -> Result<DateTime<Utc>, String> {
        serde_json::from_str::<DateTime<Utc>>(&serde_json::json!(text).to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn timestamps_read_directly_are_what_chrono_reads() {
        for text in [
            "2026-05-01T12:00:00.123000+00:00",
            "2026-05-01T12:00:00+00:00",
            "2026-05-01T12:00:00Z",
            "2026-05-01T23:59:59.999999999+00:00",
            "2024-02-29T00:00:00.1Z",
            "2015-01-01T00:00:00.000000+00:00",
            // Not Discord's form: chrono decides, as before.
            "2026-05-01T12:00:00.5+02:00",
            "2026-05-01t12:00:00z",
            "2026-05-01 12:00:00Z",
            "2016-12-31T23:59:60Z",
            "2016-12-31T23:59:60.5+00:00",
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-05-01T24:00:00Z",
            "2026-05-01T12:60:00Z",
            "2026-05-01T12:00:00.1234567891Z",
            "2026-05-01T12:00:00.+00:00",
            "2026-05-01T12:00:00",
            "2026-05-01T12:00:00+00:00 ",
            "+2026-05-01T12:00:00Z",
            "２026-05-01T12:00:00Z",
            "",
            "not a time",
        ] {
            assert_eq!(ours(text), chrono(text), "{text:?}");
        }
        // Every length of fraction, across days, months and years.
        let mut seed = 0x5eed_u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let r = |m: u64, shift: u32| (seed >> shift) % m;
            let fraction = match r(11, 3) {
                0 => String::new(),
                n => format!(".{:0>10}", r(10_000_000_000, 10))[..=n as usize].to_string(),
            };
            let text = format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{fraction}{}",
                1970 + r(200, 40),
                1 + r(12, 20),
                1 + r(31, 25),
                r(24, 30),
                r(60, 35),
                r(60, 45),
                if r(2, 50) == 0 { "Z" } else { "+00:00" },
            );
            assert_eq!(ours(&text), chrono(&text), "{text:?}");
        }
    }

    #[test]
    fn picture_hashes_read_directly_are_the_hashes_sent() {
        for text in [
            "0123456789abcdef0123456789abcdef",
            "a_fedcba9876543210fedcba9876543210",
            "clyde",
        ] {
            let hash: ImageHash = text.parse().unwrap();
            assert_eq!(hash.to_string(), text);
        }
        // Upper case reads as the same bytes.
        let upper: ImageHash = "0123456789ABCDEF0123456789ABCDEF".parse().unwrap();
        assert_eq!(upper.to_string(), "0123456789abcdef0123456789abcdef");
        // A byte that is not hex is read as 0 with a warning, as serenity did.
        let odd: ImageHash = "zz23456789abcdef0123456789abcdef".parse().unwrap();
        assert_eq!(odd.to_string(), "0023456789abcdef0123456789abcdef");
        assert!("0123".parse::<ImageHash>().is_err());
    }
}
