//! The chat transport: what a front end must do for the core to speak.
//!
//! Discord and the console implement [`Transport`]; the core never knows
//! which one it talks to. Speaking goes through `speech`, which splits,
//! rate-limits and records; a transport only delivers.

use async_trait::async_trait;

use crate::attention::Author;
use crate::ids::{ChannelId, MessageId, UserId};
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
    pub fn holding(guard: impl Send + Sync + 'static) -> Self {
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

    /// Recent messages straight from the platform, oldest first (for backfill).
    async fn history(
        &self,
        channel: ChannelId,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, ChatError>;
}
