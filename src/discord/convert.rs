//! Serenity's message types to the core's percepts and rows.
//!
//! Mentions are made readable on the way in (`<@123>` → `@ada`, `<#456>` →
//! `#general`): the stored history feeds prompts and memory, and raw ids mean
//! nothing to a model or a person reading the journal. A mention of the bot
//! itself becomes [`bot_mention`] (`@` and `bot.name`), the same form the
//! console writes, so an addressed reflex fires alike in both.

use chrono::{DateTime, Utc};
use serenity::all::Message;

use crate::attention::{Addressed, MessagePercept, addressed_by_name, bot_mention};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::store::Store;
use crate::store::messages::{Attachment, Source, StoredMessage};

pub fn timestamp(m: &Message) -> DateTime<Utc> {
    DateTime::from_timestamp(m.timestamp.unix_timestamp(), 0).unwrap_or_else(Utc::now)
}

/// `<@123>`/`<@!123>` → `@name` for mentioned users (the bot: `@` and
/// `bot.name`); `<#456>` → `#name` where known.
pub fn readable_content(m: &Message, store: &Store, me: UserId, bot_name: &str) -> String {
    let mut text = m.content.clone();
    for user in &m.mentions {
        let name = if user.id.get() == me.get() {
            bot_mention(bot_name)
        } else {
            format!("@{}", user.global_name.as_deref().unwrap_or(&user.name))
        };
        text = text
            .replace(&format!("<@{}>", user.id), &name)
            .replace(&format!("<@!{}>", user.id), &name);
    }
    // `addressed` accepts a raw mention of the bot missing from `mentions`;
    // written the same way here, the reflexes see it too.
    let me_name = bot_mention(bot_name);
    text = text
        .replace(&format!("<@{me}>"), &me_name)
        .replace(&format!("<@!{me}>"), &me_name);
    for id in channel_mention_ids(&text) {
        if let Ok(Some(name)) = store.channel_name(ChannelId(id)) {
            text = text.replace(&format!("<#{id}>"), &format!("#{name}"));
        }
    }
    text
}

/// Ids in `<#…>` channel mentions.
fn channel_mention_ids(text: &str) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<#") {
        let after = &rest[start + 2..];
        match after.find('>') {
            Some(end) => {
                if let Ok(id) = after[..end].parse() {
                    ids.push(id);
                }
                rest = &after[end..];
            }
            None => break,
        }
    }
    ids
}

pub fn stored(m: &Message, me: UserId, content: &str) -> StoredMessage {
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
pub fn addressed(m: &Message, me: UserId, bot_name: &str, store: &Store) -> Addressed {
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

pub fn percept(
    m: &Message,
    me: UserId,
    bot_name: &str,
    store: &Store,
    channel_name: Option<String>,
    guild_name: Option<String>,
) -> MessagePercept {
    MessagePercept {
        message: stored(m, me, &readable_content(m, store, me, bot_name)),
        addressed: addressed(m, me, bot_name, store),
        guild_name,
        channel_name,
    }
}
