//! A whole bot in-process: a real `App` on a temporary data directory, with
//! a transport that records what the bot says, the manual clock, a seeded
//! RNG, and the scripted model server behind every model role. Tests drive
//! initiative ticks by hand and wait for the spine to go idle.
//!
//! The recording transport keeps what a feed delivers too: each message's
//! cards and the roles it may ping, the threads started from messages and
//! the forum posts made (refused as Discord refuses: a second thread from
//! one message, a post without a tag where the forum requires one, a tag
//! the forum does not have). A channel is a text channel unless the test
//! says otherwise ([`World::set_channel_kind`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ambient::app::{App, Parts, Running};
use ambient::attention::{Addressed, Author, MessagePercept, Percept, Place};
use ambient::chat::{Card, ChannelKind, ChatError, ForumPost, Outgoing, Transport, Typing};
use ambient::clock::{Chance, Clock, ManualClock};
use ambient::ids::{ChannelId, GuildId, MessageId, RoleId, UserId, next_snowflake};
use ambient::settings::{ProviderKind, Secrets, Settings};
use ambient::store::messages::{Source, StoredMessage};
use ambient::vocab::pending::PendingThought;
use async_trait::async_trait;

use super::model_server::ModelServer;

#[derive(Clone, Debug)]
pub struct Said {
    pub channel: ChannelId,
    pub content: String,
    pub nonce: String,
    pub files: Vec<String>,
    pub id: MessageId,
    pub at: chrono::DateTime<chrono::Utc>,
    /// Whether the bot's history already held this text when it was sent.
    pub recorded_first: bool,
    /// The cards under the text.
    pub cards: Vec<Card>,
    /// The roles the message may ping.
    pub ping_roles: Vec<RoleId>,
}

/// A thread the bot started from one of its messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadStarted {
    pub channel: ChannelId,
    pub message: MessageId,
    pub name: String,
    /// The thread's id: the message's, as on Discord.
    pub thread: ChannelId,
}

/// A post the bot made in a forum.
#[derive(Clone, Debug)]
pub struct ForumPosted {
    pub forum: ChannelId,
    pub name: String,
    pub tags: Vec<u64>,
    pub content: String,
    pub cards: Vec<Card>,
    pub ping_roles: Vec<RoleId>,
    pub post: ForumPost,
}

/// Discord's longest thread name: a forum post is found by its name cut so.
fn thread_name(name: &str) -> String {
    name.trim().chars().take(100).collect()
}

#[derive(Default)]
pub struct Recording {
    pub said: Mutex<Vec<Said>>,
    /// (channel, message, emoji) for every reaction the bot added.
    pub reactions: Mutex<Vec<(ChannelId, MessageId, String)>>,
    /// nonce → (message, when): Discord drops a repeated nonce for a few minutes only.
    delivered: Mutex<HashMap<String, (MessageId, chrono::DateTime<chrono::Utc>)>>,
    /// Every thread started from a message, oldest first.
    pub threads: Mutex<Vec<ThreadStarted>>,
    /// Every forum post made, oldest first.
    pub posts: Mutex<Vec<ForumPosted>>,
    /// What kind each channel is, where a test said; any other is a text channel.
    pub kinds: Mutex<HashMap<ChannelId, ChannelKind>>,
    /// Channels where the platform is down: each send is an error (as a
    /// 500 from Discord, outcome unknown), counted in `refused_sends`.
    pub down: Mutex<std::collections::HashSet<ChannelId>>,
    pub refused_sends: Mutex<u32>,
}

pub struct RecordingTransport {
    pub log: Arc<Recording>,
    clock: Arc<ManualClock>,
    /// The bot's store, to note what it had recorded when each send went out.
    store: std::sync::OnceLock<ambient::store::Store>,
}

impl RecordingTransport {
    /// A recording transport on its own, for tests that need no whole bot.
    pub fn alone(clock: Arc<ManualClock>) -> Self {
        Self {
            log: Arc::new(Recording::default()),
            clock,
            store: std::sync::OnceLock::new(),
        }
    }
}

#[async_trait]
impl Transport for RecordingTransport {
    fn me(&self) -> Author {
        Author {
            id: UserId(1),
            name: "ambient".into(),
            is_bot: true,
        }
    }

    async fn send(&self, channel: ChannelId, m: &Outgoing) -> Result<MessageId, ChatError> {
        if self.log.down.lock().unwrap().contains(&channel) {
            *self.log.refused_sends.lock().unwrap() += 1;
            return Err(ChatError::Unknown("500 Internal Server Error".into()));
        }
        let mut delivered = self.log.delivered.lock().unwrap();
        let now = self.clock.now();
        if let Some((id, at)) = delivered.get(&m.nonce)
            && now - *at < chrono::Duration::minutes(NONCE_WINDOW_MINUTES)
        {
            return Ok(*id);
        }
        let id = MessageId(next_snowflake(now));
        delivered.insert(m.nonce.clone(), (id, now));
        self.log.said.lock().unwrap().push(Said {
            channel,
            content: m.content.clone(),
            nonce: m.nonce.clone(),
            files: m.files.iter().map(|f| f.name.clone()).collect(),
            cards: m.cards.clone(),
            ping_roles: m.ping_roles.clone(),
            id,
            at: self.clock.now(),
            recorded_first: self.store.get().is_some_and(|s| {
                s.messages()
                    .recent_messages(channel, 50)
                    .unwrap_or_default()
                    .iter()
                    .any(|r| r.is_self && r.content == m.content)
            }),
        });
        Ok(id)
    }

    async fn react(&self, c: ChannelId, m: MessageId, emoji: &str) -> Result<(), ChatError> {
        self.log
            .reactions
            .lock()
            .unwrap()
            .push((c, m, emoji.to_string()));
        Ok(())
    }

    fn typing(&self, _: ChannelId) -> Typing {
        Typing::none()
    }

    async fn channel_kind(&self, channel: ChannelId) -> Result<ChannelKind, ChatError> {
        let kinds = self.log.kinds.lock().unwrap();
        Ok(kinds.get(&channel).cloned().unwrap_or(ChannelKind::Text))
    }

    /// As Discord: the thread has the message's id, and a message has one thread at most.
    async fn start_thread(
        &self,
        channel: ChannelId,
        message: MessageId,
        name: &str,
    ) -> Result<ChannelId, ChatError> {
        let mut threads = self.log.threads.lock().unwrap();
        if threads.iter().any(|t| t.message == message) {
            return Err(ChatError::Transport(
                "A thread has already been created for this message".into(),
            ));
        }
        let thread = ChannelId(message.get());
        threads.push(ThreadStarted {
            channel,
            message,
            name: name.to_string(),
            thread,
        });
        let mut kinds = self.log.kinds.lock().unwrap();
        kinds.insert(thread, ChannelKind::Thread);
        Ok(thread)
    }

    /// As Discord: the forum's tags only, and one at least where it requires a tag.
    async fn post_in_forum(
        &self,
        forum: ChannelId,
        name: &str,
        message: &Outgoing,
        tags: &[u64],
    ) -> Result<ForumPost, ChatError> {
        if let Some(ChannelKind::Forum {
            tags: offered,
            tag_required,
        }) = self.log.kinds.lock().unwrap().get(&forum)
        {
            if *tag_required && tags.is_empty() {
                return Err(ChatError::Transport(
                    "A tag is required to create a forum post in this channel".into(),
                ));
            }
            if let Some(t) = tags.iter().find(|t| !offered.iter().any(|o| o.id == **t)) {
                return Err(ChatError::Transport(format!(
                    "applied_tags: {t} is not one of the forum's tags"
                )));
            }
        }
        let id = next_snowflake(self.clock.now());
        let post = ForumPost {
            thread: ChannelId(id),
            message: MessageId(id),
        };
        self.log.posts.lock().unwrap().push(ForumPosted {
            forum,
            name: name.to_string(),
            tags: tags.to_vec(),
            content: message.content.clone(),
            cards: message.cards.clone(),
            ping_roles: message.ping_roles.clone(),
            post,
        });
        Ok(post)
    }

    async fn forum_post_named(
        &self,
        _guild: GuildId,
        forum: ChannelId,
        name: &str,
    ) -> Result<Option<ForumPost>, ChatError> {
        let posts = self.log.posts.lock().unwrap();
        Ok(posts
            .iter()
            .find(|p| p.forum == forum && thread_name(&p.name) == thread_name(name))
            .map(|p| p.post))
    }

    /// What the bot said in `channel`, as the platform would list it (oldest first).
    async fn history(
        &self,
        channel: ChannelId,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, ChatError> {
        let me = self.me();
        let said = self.log.said.lock().unwrap();
        let mine: Vec<StoredMessage> = said
            .iter()
            .filter(|s| s.channel == channel)
            .map(|s| StoredMessage {
                author_is_bot: true,
                is_self: true,
                ..StoredMessage::said(
                    s.id,
                    None,
                    channel,
                    me.id,
                    me.name.clone(),
                    s.content.clone(),
                    s.at,
                )
            })
            .collect();
        Ok(mine[mine.len().saturating_sub(limit)..].to_vec())
    }
}

/// How long the recording transport, like Discord, drops a repeated nonce.
pub const NONCE_WINDOW_MINUTES: i64 = 3;

pub const GUILD_A: GuildId = GuildId(1001);
pub const GUILD_B: GuildId = GuildId(1002);
pub const GENERAL: ChannelId = ChannelId(2001);
pub const MEMES: ChannelId = ChannelId(2002);
pub const B_GENERAL: ChannelId = ChannelId(2101);
/// A direct-message channel (no guild).
pub const DM: ChannelId = ChannelId(3001);

pub struct World {
    pub app: Arc<App>,
    pub clock: Arc<ManualClock>,
    pub model: ModelServer,
    pub said: Arc<Recording>,
    pub dir: Arc<tempfile::TempDir>,
    running: Option<Running>,
}

/// Settings for an initiative world: both guilds' channels in the pool, eager,
/// no cooldown, and the ambient role on the scripted server (set by `start`).
pub fn settings() -> Settings {
    let mut s = Settings::default();
    s.executive.ollama_base_url = "http://127.0.0.1:9".into();
    s.executive.max_retries = 0;
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES, B_GENERAL];
    s.initiative.text.eagerness = 100;
    s.initiative.text.min_minutes_between_posts = 0;
    s.initiative.text.revisit_minutes = 0;
    // These worlds start with nobody having spoken; the empty-room gate has its own tests.
    s.initiative.text.require_activity_within_hours = 0;
    // Nor does anyone answer their posts; the unanswered gate has its own tests.
    s.initiative.text.max_unanswered_posts = 0;
    s
}

impl World {
    pub async fn start(settings: Settings) -> Self {
        Self::start_in(
            settings,
            Arc::new(tempfile::tempdir().unwrap()),
            ModelServer::start(),
            ManualClock::at_test_epoch(),
        )
        .await
    }

    /// A world whose environment holds these secrets.
    pub async fn start_with_secrets(settings: Settings, secrets: Secrets) -> Self {
        Self::start_full(
            settings,
            Arc::new(tempfile::tempdir().unwrap()),
            ModelServer::start(),
            ManualClock::at_test_epoch(),
            secrets,
        )
        .await
    }

    /// A world on an existing data directory (a restart).
    pub async fn start_in(
        settings: Settings,
        dir: Arc<tempfile::TempDir>,
        model: ModelServer,
        clock: Arc<ManualClock>,
    ) -> Self {
        Self::start_full(settings, dir, model, clock, Secrets::default()).await
    }

    /// The bot stopped and started again on the same data, model and clock,
    /// while the platform stays up: what it was sent (and the nonces it
    /// still remembers) outlives the bot, as Discord's does.
    pub async fn restart(self, settings: Settings) -> Self {
        let platform = self.said.clone();
        let (dir, model, clock) = self.stop().await;
        Self::start_on(settings, dir, model, clock, Secrets::default(), platform).await
    }

    async fn start_full(
        settings: Settings,
        dir: Arc<tempfile::TempDir>,
        model: ModelServer,
        clock: Arc<ManualClock>,
        secrets: Secrets,
    ) -> Self {
        let platform = Arc::new(Recording::default());
        Self::start_on(settings, dir, model, clock, secrets, platform).await
    }

    async fn start_on(
        mut settings: Settings,
        dir: Arc<tempfile::TempDir>,
        model: ModelServer,
        clock: Arc<ManualClock>,
        secrets: Secrets,
        said: Arc<Recording>,
    ) -> Self {
        settings.storage.data_dir = dir.path().join("data").to_string_lossy().into_owned();
        for role in [
            &mut settings.executive.roles.ambient,
            &mut settings.executive.roles.reply,
            &mut settings.executive.roles.reflex,
            &mut settings.executive.roles.extract,
        ] {
            if role.provider == ProviderKind::Auto {
                role.provider = ProviderKind::Openai;
                role.base_url = model.openai_base();
                role.model = "scripted".into();
            }
        }
        let transport = Arc::new(RecordingTransport {
            log: said.clone(),
            clock: clock.clone(),
            store: std::sync::OnceLock::new(),
        });
        let app = App::build(
            Parts {
                settings,
                settings_source: None,
                secrets,
                clock: clock.clone(),
                chance: Chance::seeded(7),
                stand_in: None,
                sharing: ambient::store::Sharing::Shared,
            },
            |store| {
                // The closure runs once: there is no earlier store to keep.
                let _ = transport.store.set(store.clone());
                transport
            },
        )
        .await
        .unwrap();
        let now = clock.now();
        app.store()
            .messages()
            .upsert_guild(GUILD_A, "Guild A", now)
            .unwrap();
        app.store()
            .messages()
            .upsert_guild(GUILD_B, "Guild B", now)
            .unwrap();
        app.store()
            .messages()
            .upsert_channel(GENERAL, Some(GUILD_A), "general", now)
            .unwrap();
        app.store()
            .messages()
            .upsert_channel(MEMES, Some(GUILD_A), "memes", now)
            .unwrap();
        app.store()
            .messages()
            .upsert_channel(B_GENERAL, Some(GUILD_B), "b-general", now)
            .unwrap();
        let running = Some(app.start_spine());
        Self {
            app,
            clock,
            model,
            said,
            dir,
            running,
        }
    }

    /// One tick, then waits until everything it queued has been handled.
    pub async fn tick(&self) {
        self.app.initiative.tick();
        self.app.spine.drain().await;
    }

    pub fn said(&self) -> Vec<Said> {
        self.said.said.lock().unwrap().clone()
    }

    /// The bot held `text` for `channel` of guild A, wrote its outbox row
    /// (nonce from `cause`), posted it through speech, and stopped before
    /// marking the row sent: the state a crash right after a post leaves.
    pub async fn crashed_after_posting(&self, channel: ChannelId, cause: &str, text: &str) {
        let now = self.clock.now();
        let held = PendingThought::new(
            GUILD_A,
            text.into(),
            Some(channel),
            "waiting for a quiet moment".into(),
            None,
            now,
            chrono::Duration::hours(3),
        );
        self.app
            .store()
            .initiative()
            .save_pending_thought(&held)
            .unwrap();
        self.app
            .store()
            .initiative()
            .outbox_insert(cause, GUILD_A, channel, text, now)
            .unwrap();
        let place = Place {
            guild: Some(GUILD_A),
            channel,
        };
        self.app.speech.say(place, text, None, cause).await.unwrap();
    }

    /// A person's message in `channel` of guild A.
    pub fn hear(&self, channel: ChannelId, author: &str, content: &str, source: Source) {
        self.app
            .store()
            .messages()
            .insert_message(&StoredMessage {
                id: MessageId(next_snowflake(self.clock.now())),
                guild: Some(if channel == B_GENERAL {
                    GUILD_B
                } else {
                    GUILD_A
                }),
                channel,
                author_id: UserId(50),
                author_name: author.into(),
                author_is_bot: false,
                is_self: false,
                content: content.into(),
                attachments: vec![],
                reply_to: None,
                source,
                created_at: self.clock.now(),
                edited_at: None,
                deleted_at: None,
            })
            .unwrap();
    }

    /// A person's message through the senses (stored, scored, routed like a
    /// Discord message), in guild A (B for `B_GENERAL`, none for `DM`); waits until handled.
    pub async fn message(
        &self,
        channel: ChannelId,
        author: &str,
        content: &str,
        addressed: Addressed,
    ) -> MessageId {
        self.message_with_roles(channel, author, content, addressed, None)
            .await
    }

    /// Like [`World::message`], from someone with `roles` in the server (as
    /// Discord's MESSAGE_CREATE carries them in `member.roles`).
    pub async fn message_with_roles(
        &self,
        channel: ChannelId,
        author: &str,
        content: &str,
        addressed: Addressed,
        roles: Option<Vec<ambient::ids::RoleId>>,
    ) -> MessageId {
        let id = MessageId(next_snowflake(self.clock.now()));
        let guild = match channel {
            B_GENERAL => Some(GUILD_B),
            DM => None,
            _ => Some(GUILD_A),
        };
        let percept = Percept::Message(MessagePercept {
            message: StoredMessage::said(
                id,
                guild,
                channel,
                UserId(ambient::ids::stable_id("user", author)),
                author,
                content,
                self.clock.now(),
            ),
            addressed,
            guild_name: None,
            channel_name: None,
            author_roles: roles,
        });
        self.app.senses.perceive(percept).unwrap();
        self.app.spine.drain().await;
        id
    }

    /// Makes every read of `table` fail as a damaged database does: the
    /// table is renamed away from another connection, so the bot's own
    /// statements find "no such table" when they are prepared again.
    pub fn break_table(&self, table: &str) {
        self.other_connection()
            .execute_batch(&format!("ALTER TABLE {table} RENAME TO {table}_broken"))
            .unwrap();
    }

    /// Undoes [`World::break_table`].
    pub fn mend_table(&self, table: &str) {
        self.other_connection()
            .execute_batch(&format!("ALTER TABLE {table}_broken RENAME TO {table}"))
            .unwrap();
    }

    fn other_connection(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(
            self.app
                .store()
                .path()
                .expect("the world's store is a file"),
        )
        .unwrap()
    }

    pub fn reactions(&self) -> Vec<(ChannelId, MessageId, String)> {
        self.said.reactions.lock().unwrap().clone()
    }

    /// The threads the bot started from its messages, oldest first.
    pub fn threads(&self) -> Vec<ThreadStarted> {
        self.said.threads.lock().unwrap().clone()
    }

    /// The forum posts the bot made, oldest first.
    pub fn forum_posts(&self) -> Vec<ForumPosted> {
        self.said.posts.lock().unwrap().clone()
    }

    /// `channel` is of `kind` from now on (every channel is a text channel until said).
    pub fn set_channel_kind(&self, channel: ChannelId, kind: ChannelKind) {
        self.said.kinds.lock().unwrap().insert(channel, kind);
    }

    pub fn journal(
        &self,
        kind: ambient::vocab::journal::Kind,
    ) -> Vec<ambient::vocab::journal::Entry> {
        self.app
            .journal
            .query(&ambient::vocab::journal::Filter {
                kinds: vec![kind],
                ..Default::default()
            })
            .unwrap()
    }

    pub async fn stop(mut self) -> (Arc<tempfile::TempDir>, ModelServer, Arc<ManualClock>) {
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
        (self.dir.clone(), self.model.clone(), self.clock.clone())
    }
}
