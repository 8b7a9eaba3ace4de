//! The chat transport: what a front end must do for the core to speak.
//!
//! Discord and the console implement [`Transport`]; the core never knows
//! which one it talks to. Speaking goes through `speech`, which splits,
//! rate-limits and records; a transport only delivers.

use async_trait::async_trait;

use chrono::{DateTime, Utc};

use crate::attention::Author;
use crate::ids::{ChannelId, GuildId, MessageId, RoleId, UserId};
use crate::store::messages::StoredMessage;

/// One message to deliver (already split to fit the platform's limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub content: String,
    pub reply_to: Option<MessageId>,
    /// Idempotency key: the same nonce is never delivered twice (Discord's
    /// `enforce_nonce`), so a retried send cannot double-post.
    pub nonce: String,
    pub files: Vec<OutgoingFile>,
    /// The only people this message may ping; every other mention is text.
    pub pings: Vec<UserId>,
    /// For a reply: whether the author of the message answered is pinged
    /// (Discord's `allowed_mentions.replied_user`). False when they asked
    /// not to be pinged.
    pub ping_replied: bool,
    /// Roles this message may ping: only a feed's, only those its owner
    /// listed (`feeds.allowedRoleMentions`). Never `@everyone` or `@here`.
    pub ping_roles: Vec<RoleId>,
    /// Cards shown under the text (Discord's embeds), each within [`Card`]'s limits.
    pub cards: Vec<Card>,
}

impl Outgoing {
    /// A plain message: no reply, no file, no card, pinging nobody.
    pub fn text(content: impl Into<String>, nonce: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            reply_to: None,
            nonce: nonce.into(),
            files: Vec::new(),
            pings: Vec::new(),
            ping_replied: false,
            ping_roles: Vec::new(),
            cards: Vec::new(),
        }
    }
}

/// A card under a message (Discord's embed): a feed item's title, link,
/// summary, author and time. Whoever builds one keeps it within Discord's
/// limits ([`Card::TITLE`] …); a transport sends it as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Card {
    pub title: String,
    pub url: Option<String>,
    pub description: String,
    pub author: Option<String>,
    pub timestamp: Option<DateTime<Utc>>,
    pub footer: Option<String>,
}

impl Card {
    /// Discord's limits, in characters: title, description, author name,
    /// footer, and all of an embed's text together.
    pub(crate) const TITLE: usize = 256;
    pub(crate) const DESCRIPTION: usize = 4096;
    pub(crate) const AUTHOR: usize = 256;
    pub const FOOTER: usize = 2048;
    pub const TOTAL: usize = 6000;
}

/// What kind of channel a channel id is, as far as posting into it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChannelKind {
    /// A text channel (Discord type 0): messages, and threads from them.
    Text,
    /// An announcement channel (type 5): likewise.
    Announcement,
    /// A thread (types 10, 11, 12): messages only.
    Thread,
    /// A forum channel (type 15): posts only, each a thread with a title,
    /// tagged from `tags`; `tag_required` when a post must carry one.
    Forum {
        tags: Vec<ForumTag>,
        tag_required: bool,
    },
    /// Anything else (voice, category, stage …): nothing a feed posts into.
    Other,
}

/// A tag a forum offers its posts (`available_tags`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForumTag {
    pub id: u64,
    pub name: String,
    /// Only members who may manage threads may apply it.
    pub moderated: bool,
}

/// A post made in a forum: its thread and the thread's first message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForumPost {
    pub thread: ChannelId,
    pub message: MessageId,
}

/// New text for a message the bot already sent (a streamed answer growing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub content: String,
    /// As for [`Outgoing::pings`]: the only people the text may ping.
    pub pings: Vec<UserId>,
    /// As for [`Outgoing::ping_replied`]: kept as the message was created.
    pub ping_replied: bool,
}

/// A file sent with a message (a generated image, say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutgoingFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("the channel is unavailable: {0}")]
    Unavailable(String),
    #[error("the platform refused: {0}")]
    Refused(String),
    #[error("transport error: {0}")]
    Transport(String),
    /// The request may or may not have been delivered (an unreadable answer,
    /// a dropped connection, a server error): sending it again with the same
    /// nonce is how to find out.
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// A reply was refused for the message it answers, which the platform
    /// does not know (deleted meanwhile, or not saved yet): nothing was
    /// created, and the same message may be sent without `reply_to`.
    #[error("the message answered is unknown to the platform: {0}")]
    ReferenceUnknown(String),
}

/// Keeps a typing indicator alive until dropped.
pub struct Typing(#[allow(dead_code)] Option<Box<dyn Send + Sync>>);

impl Typing {
    pub fn none() -> Self {
        Self(None)
    }

    /// Wraps whatever keeps the platform's indicator running; dropping it stops it.
    pub(crate) fn holding(guard: impl Send + Sync + 'static) -> Self {
        Self(Some(Box::new(guard)))
    }
}

/// The nonces a local transport (console, replay) has delivered, kept as
/// Discord's `enforce_nonce` keeps them: a repeated send is the first one.
#[derive(Default)]
pub struct Delivered(std::sync::Mutex<std::collections::HashMap<String, MessageId>>);

impl Delivered {
    /// The id `nonce` was first delivered as, and whether this send is that
    /// first delivery (then `id` makes the id, and it is recorded).
    pub fn first_or_record(
        &self,
        nonce: &str,
        id: impl FnOnce() -> MessageId,
    ) -> (MessageId, bool) {
        let mut delivered = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(first) = delivered.get(nonce) {
            return (*first, false);
        }
        let id = id();
        delivered.insert(nonce.to_string(), id);
        (id, true)
    }
}

#[async_trait]
pub trait Transport: Send + Sync {
    /// The bot's own identity here.
    fn me(&self) -> Author;

    /// Delivers one message; returns the id the platform gave it.
    async fn send(&self, channel: ChannelId, message: &Outgoing) -> Result<MessageId, ChatError>;

    async fn react(
        &self,
        channel: ChannelId,
        message: MessageId,
        emoji: &str,
    ) -> Result<(), ChatError>;

    /// Whether sent messages can be edited here (streamed answers need it).
    fn can_edit(&self) -> bool {
        false
    }

    /// Replaces the text of a message the bot sent. Transports that cannot
    /// edit say so; speech asks [`Transport::can_edit`] first.
    async fn edit(
        &self,
        _channel: ChannelId,
        _message: MessageId,
        _edit: &Edit,
    ) -> Result<(), ChatError> {
        Err(ChatError::Unavailable(
            "this transport cannot edit messages".into(),
        ))
    }

    /// Starts the typing indicator; it stops when the returned guard is dropped.
    fn typing(&self, channel: ChannelId) -> Typing;

    /// What kind of channel `channel` is (a feed checks where it posts).
    async fn channel_kind(&self, _channel: ChannelId) -> Result<ChannelKind, ChatError> {
        Err(ChatError::Unavailable(
            "this transport does not know channel kinds".into(),
        ))
    }

    /// Starts a public thread named `name` (1–100 characters) from `message`
    /// in `channel`; the thread's id.
    async fn start_thread(
        &self,
        _channel: ChannelId,
        _message: MessageId,
        _name: &str,
    ) -> Result<ChannelId, ChatError> {
        Err(ChatError::Unavailable(
            "this transport has no threads".into(),
        ))
    }

    /// Makes a post named `name` (1–100 characters) in the forum `forum`,
    /// its first message `message` (whose nonce the platform ignores: a
    /// forum post is not de-duplicated, see [`Transport::forum_post_named`]),
    /// tagged with `tags` (ids of the forum's tags, at most 5).
    async fn post_in_forum(
        &self,
        _forum: ChannelId,
        _name: &str,
        _message: &Outgoing,
        _tags: &[u64],
    ) -> Result<ForumPost, ChatError> {
        Err(ChatError::Unavailable(
            "this transport has no forums".into(),
        ))
    }

    /// The bot's own open post named `name` in the forum `forum` of `guild`,
    /// if there is one: how a post whose outcome is unknown (a crash, a
    /// dropped connection) is found instead of made twice.
    async fn forum_post_named(
        &self,
        _guild: GuildId,
        _forum: ChannelId,
        _name: &str,
    ) -> Result<Option<ForumPost>, ChatError> {
        Ok(None)
    }

    /// Recent messages straight from the platform, oldest first (for backfill).
    async fn history(
        &self,
        channel: ChannelId,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, ChatError>;
}
