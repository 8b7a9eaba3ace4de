//! Replay's side of the chat transport: what the bot would have said, kept
//! with the simulated time it said it, instead of being sent anywhere.
//! Speech stores the bot's words as for any transport, so later decisions
//! in the replay see them in the channel's history.
//!
//! An export's channels are all text channels to a feed. A replay makes no
//! threads and no forum posts: those keep the trait's defaults (unavailable,
//! and no post found), as an export holds no feeds to deliver.

use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::attention::Author;
use crate::chat::{ChannelKind, ChatError, Delivered, Outgoing, Transport, Typing};
use crate::clock::SharedClock;
use crate::ids::{ChannelId, MessageId, SnowflakeGen};
use crate::replay::Stores;
use crate::store::messages::StoredMessage;

/// What the bot was doing when it spoke, as the simulation knows it: the
/// step that was running (a message being handled, a tick's due impulses,
/// the initiative, the background work).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Doing {
    /// Answering a message that addressed it.
    #[default]
    Reply,
    /// Speaking up after a message that did not address it.
    ChimeIn,
    /// A reminder or a scheduled routine coming due.
    Reminder,
    /// An unprompted post of the initiative.
    AmbientPost,
    /// Anything else (the garden, memory upkeep).
    Background,
}

/// One thing the bot did in the replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Act {
    Said {
        at: DateTime<Utc>,
        /// The id the bot's message would have had: the journal names it.
        id: MessageId,
        doing: Doing,
        channel: ChannelId,
        content: String,
        reply_to: Option<MessageId>,
        files: usize,
    },
    Reacted {
        at: DateTime<Utc>,
        channel: ChannelId,
        message: MessageId,
        emoji: String,
    },
}

pub(crate) struct ReplayTransport {
    me: Author,
    store: Stores,
    clock: SharedClock,
    acts: Mutex<Vec<Act>>,
    doing: Mutex<Doing>,
    delivered: Delivered,
    /// The bot's ids, from this replay's own generator: the same every run.
    ids: SnowflakeGen,
}

impl ReplayTransport {
    pub(crate) fn new(me: Author, store: Stores, clock: SharedClock) -> Self {
        Self {
            me,
            store,
            clock,
            acts: Mutex::new(Vec::new()),
            doing: Mutex::new(Doing::default()),
            delivered: Delivered::default(),
            ids: SnowflakeGen::new(),
        }
    }

    /// Everything the bot did so far, in order.
    pub(crate) fn acts(&self) -> Vec<Act> {
        self.acts.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What the bot did after its first `n` acts, in order: a walk through a
    /// long export asks after every message, and copying every act each
    /// time made its cost grow with the square of the bot's acts.
    pub(crate) fn acts_since(&self, n: usize) -> Vec<Act> {
        let acts = self.acts.lock().unwrap_or_else(|p| p.into_inner());
        acts.get(n..).map(<[Act]>::to_vec).unwrap_or_default()
    }

    /// What the bot is doing from now on, for the acts it records.
    pub(crate) fn doing(&self, doing: Doing) {
        *self.doing.lock().unwrap_or_else(|p| p.into_inner()) = doing;
    }

    fn record(&self, act: Act) {
        self.acts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(act);
    }
}

#[async_trait]
impl Transport for ReplayTransport {
    fn me(&self) -> Author {
        self.me.clone()
    }

    async fn send(&self, channel: ChannelId, message: &Outgoing) -> Result<MessageId, ChatError> {
        let at = self.clock.now();
        let (id, new) = self
            .delivered
            .first_or_record(&message.nonce, || MessageId(self.ids.next(at)));
        if !new {
            return Ok(id);
        }
        self.record(Act::Said {
            at,
            id,
            doing: *self.doing.lock().unwrap_or_else(|p| p.into_inner()),
            channel,
            content: message.content.clone(),
            reply_to: message.reply_to,
            files: message.files.len(),
        });
        Ok(id)
    }

    async fn react(
        &self,
        channel: ChannelId,
        message: MessageId,
        emoji: &str,
    ) -> Result<(), ChatError> {
        self.record(Act::Reacted {
            at: self.clock.now(),
            channel,
            message,
            emoji: emoji.to_string(),
        });
        Ok(())
    }

    fn typing(&self, _channel: ChannelId) -> Typing {
        Typing::none()
    }

    async fn channel_kind(&self, _channel: ChannelId) -> Result<ChannelKind, ChatError> {
        Ok(ChannelKind::Text)
    }

    async fn history(
        &self,
        channel: ChannelId,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, ChatError> {
        self.store
            .messages
            .recent_messages(channel, limit)
            .map_err(|e| ChatError::Transport(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// A feed in a replay posts into a channel, never a thread or a forum.
    #[tokio::test]
    async fn every_channel_of_a_replay_is_a_text_channel() {
        let me = Author {
            id: crate::ids::UserId(1),
            name: "ambient".into(),
            is_bot: true,
        };
        let store = Store::open_in_memory().unwrap();
        let clock: SharedClock = std::sync::Arc::new(crate::clock::SystemClock);
        let transport = ReplayTransport::new(me, (&store).into(), clock);
        let kind = transport.channel_kind(ChannelId(20)).await.unwrap();
        assert_eq!(kind, ChannelKind::Text);
    }
}
