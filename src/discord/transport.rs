//! The Discord side of the chat transport, over serenity's HTTP client.
//!
//! Every message goes out with a nonce and `enforce_nonce`, so Discord itself
//! drops a repeated send, and with `allowed_mentions` that permits pinging
//! only the users speech named — never `@everyone`, `@here` or roles,
//! whatever the text says (speech has neutralised those in the text too).

use std::sync::Arc;

use async_trait::async_trait;
use serenity::all::{
    ChannelId as SChannelId, CreateAllowedMentions, CreateAttachment, CreateMessage, GetMessages,
    Http, MessageId as SMessageId, MessageReference, Nonce, ReactionType, Typing as STyping,
};

use super::convert;
use crate::attention::Author;
use crate::chat::{ChatError, Outgoing, Transport, Typing};
use crate::ids::{ChannelId, MessageId};
use crate::store::messages::StoredMessage;

pub struct DiscordTransport {
    http: Arc<Http>,
    me: Author,
}

impl DiscordTransport {
    pub fn new(http: Arc<Http>, me: Author) -> Self {
        Self { http, me }
    }
}

/// Only the users speech named may be pinged (a reply pings its author);
/// everyone, here and roles never.
pub fn safe_mentions(pings: &[crate::ids::UserId]) -> CreateAllowedMentions {
    CreateAllowedMentions::new()
        .all_users(false)
        .users(
            pings
                .iter()
                .filter(|u| u.get() != 0)
                .map(|u| serenity::all::UserId::new(u.get())),
        )
        .everyone(false)
        .all_roles(false)
        .replied_user(true)
}

fn chat_error(e: serenity::Error) -> ChatError {
    match &e {
        serenity::Error::Http(http) => match http.status_code().map(|s| s.as_u16()) {
            Some(403) => ChatError::Refused(format!("missing permission: {e}")),
            Some(404) => ChatError::Unavailable(format!("unknown channel or message: {e}")),
            // No answer, or a server error: the message may have been created all the same.
            None | Some(500..=599) => ChatError::Unknown(e.to_string()),
            _ => ChatError::Transport(e.to_string()),
        },
        // Delivered, but the answer could not be read.
        serenity::Error::Json(_) => ChatError::Unknown(format!("unreadable answer: {e}")),
        serenity::Error::Model(m) => ChatError::Refused(m.to_string()),
        _ => ChatError::Transport(e.to_string()),
    }
}

#[async_trait]
impl Transport for DiscordTransport {
    fn me(&self) -> Author {
        self.me.clone()
    }

    async fn send(&self, channel: ChannelId, message: &Outgoing) -> Result<MessageId, ChatError> {
        let channel = SChannelId::new(channel.get());
        let mut builder = CreateMessage::new()
            .content(&message.content)
            .nonce(Nonce::String(message.nonce.clone()))
            .enforce_nonce(true)
            .allowed_mentions(safe_mentions(&message.pings));
        for file in &message.files {
            builder = builder.add_file(CreateAttachment::bytes(
                file.bytes.clone(),
                file.name.clone(),
            ));
        }
        if let Some(to) = message.reply_to {
            let mut reference = MessageReference::from((channel, SMessageId::new(to.get())));
            // If the message being answered was deleted meanwhile, still say it.
            reference.fail_if_not_exists = Some(false);
            builder = builder.reference_message(reference);
        }
        let sent = channel
            .send_message(&self.http, builder)
            .await
            .map_err(chat_error)?;
        Ok(MessageId(sent.id.get()))
    }

    async fn react(
        &self,
        channel: ChannelId,
        message: MessageId,
        emoji: &str,
    ) -> Result<(), ChatError> {
        self.http
            .create_reaction(
                SChannelId::new(channel.get()),
                SMessageId::new(message.get()),
                &ReactionType::Unicode(emoji.to_string()),
            )
            .await
            .map_err(chat_error)
    }

    fn typing(&self, channel: ChannelId) -> Typing {
        Typing::holding(STyping::start(
            self.http.clone(),
            SChannelId::new(channel.get()),
        ))
    }

    async fn history(
        &self,
        channel: ChannelId,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, ChatError> {
        let messages = SChannelId::new(channel.get())
            .messages(&self.http, GetMessages::new().limit(limit.min(100) as u8))
            .await
            .map_err(chat_error)?;
        let mut rows: Vec<StoredMessage> = messages
            .iter()
            .map(|m| convert::stored(m, self.me.id, &m.content))
            .collect();
        rows.reverse();
        Ok(rows)
    }
}
