//! Serenity's message types to the core's percepts and rows.
//!
//! Mentions are made readable on the way in (`<@123>` → `@ada`, `<#456>` →
//! `#general`): the stored history feeds prompts and memory, and raw ids mean
//! nothing to a model or a person reading the journal. A mention of the bot
//! itself becomes [`crate::attention::bot_mention`] (`@` and `bot.name`), the same form the
//! console writes, so an addressed reflex fires alike in both.

use chrono::{DateTime, Utc};
use serenity::all::Message;

use crate::attention::{Addressed, MessagePercept, addressed_by_name, readable_mentions};
use crate::discord::Stores;
use crate::ids::{ChannelId, GuildId, MessageId, RoleId, UserId};
use crate::store::MessageStore;
use crate::store::messages::{Attachment, Source, StoredMessage};

pub(crate) fn timestamp(m: &Message) -> DateTime<Utc> {
    DateTime::from_timestamp(m.timestamp.unix_timestamp(), 0).unwrap_or_else(Utc::now)
}

/// `<@123>`/`<@!123>` → `@name` for mentioned users (the bot: `@` and
/// `bot.name`); `<#456>` → `#name` where known.
pub(crate) fn readable_content(m: &Message, store: &Stores, me: UserId, bot_name: &str) -> String {
    let mentioned: Vec<(u64, &str)> = m
        .mentions
        .iter()
        .map(|u| (u.id.get(), u.global_name.as_deref().unwrap_or(&u.name)))
        .collect();
    readable_mentions(&m.content, &mentioned, &store.messages, me, bot_name)
}

pub(crate) fn stored(m: &Message, me: UserId, content: &str) -> StoredMessage {
    StoredMessage {
        id: MessageId(m.id.get()),
        guild: m.guild_id.map(|g| GuildId(g.get())),
        channel: ChannelId(m.channel_id.get()),
        author_id: UserId(m.author.id.get()),
        author_name: m
            .author
            .global_name
            .clone()
            .unwrap_or_else(|| m.author.name.clone()),
        author_is_bot: m.author.bot,
        is_self: m.author.id.get() == me.get(),
        content: content.to_string(),
        attachments: m
            .attachments
            .iter()
            .map(|a| Attachment {
                name: a.filename.clone(),
                url: a.url.clone(),
                size: Some(u64::from(a.size)),
                content_type: a.content_type.clone(),
                width: a.width,
                height: a.height,
            })
            .collect(),
        reply_to: m
            .message_reference
            .as_ref()
            .and_then(|r| r.message_id)
            .map(|id| MessageId(id.get())),
        source: Source::Text,
        created_at: timestamp(m),
        edited_at: None,
        deleted_at: None,
    }
}

/// How `m` addresses the bot: a mention, a reply to one of its messages, a DM, or its name.
pub(crate) fn addressed(
    m: &Message,
    me: UserId,
    bot_name: &str,
    store: &MessageStore,
) -> Addressed {
    if m.guild_id.is_none() {
        return Addressed::DirectMessage;
    }
    let mentions_me = m.mentions.iter().any(|u| u.id.get() == me.get())
        || m.content.contains(&format!("<@{me}>"))
        || m.content.contains(&format!("<@!{me}>"));
    if mentions_me {
        return Addressed::Mention;
    }
    let replied_to_me = m
        .referenced_message
        .as_ref()
        .map(|r| r.author.id.get() == me.get())
        .or_else(|| {
            let id = m.message_reference.as_ref()?.message_id?;
            let row = store.message(MessageId(id.get())).ok().flatten()?;
            Some(row.is_self)
        })
        .unwrap_or(false);
    if replied_to_me {
        return Addressed::ReplyToBot;
    }
    if addressed_by_name(&m.content, bot_name) {
        return Addressed::ByName;
    }
    Addressed::No
}

pub(crate) fn percept(
    m: &Message,
    me: UserId,
    bot_name: &str,
    store: &Stores,
    channel_name: Option<String>,
    guild_name: Option<String>,
) -> MessagePercept {
    MessagePercept {
        message: stored(m, me, &readable_content(m, store, me, bot_name)),
        addressed: addressed(m, me, bot_name, &store.messages),
        guild_name,
        channel_name,
        author_roles: author_roles(m),
    }
}

/// The author's roles as MESSAGE_CREATE's `member` carries them; `None` in a
/// direct message or when Discord sent no member (a webhook).
fn author_roles(m: &Message) -> Option<Vec<RoleId>> {
    m.guild_id?;
    let member = m.member.as_ref()?;
    Some(member.roles.iter().map(|r| RoleId(r.get())).collect())
}
