//! Percepts: what the bot senses from outside (messages, reactions, joins,
//! voice transcript lines). Front ends (Discord, console, voice) build them;
//! `senses` stores them; attention scores and routes them.

use chrono::{DateTime, Utc};

use crate::ids::{ChannelId, GuildId, MessageId, RoleId, UserId};
use crate::store::MessageStore;
use crate::store::messages::{Source, StoredMessage};

#[derive(Clone, Debug, PartialEq)]
pub struct Author {
    pub id: UserId,
    pub name: String,
    pub is_bot: bool,
}

/// Where something happened. `guild` is `None` in direct messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    pub guild: Option<GuildId>,
    pub channel: ChannelId,
}

impl Place {
    pub(crate) fn is_dm(&self) -> bool {
        self.guild.is_none()
    }
}

/// How a message was addressed to the bot, if at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addressed {
    No,
    /// `@bot` in the text.
    Mention,
    /// A reply to one of the bot's messages.
    ReplyToBot,
    /// A direct message.
    DirectMessage,
    /// "hey ambient, …" (typed or spoken).
    ByName,
}

impl Addressed {
    pub(crate) fn is_addressed(self) -> bool {
        self != Addressed::No
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Addressed::No => "not addressed",
            Addressed::Mention => "mentioned the bot",
            Addressed::ReplyToBot => "replied to the bot",
            Addressed::DirectMessage => "direct message",
            Addressed::ByName => "addressed the bot by name",
        }
    }
}

/// How a mention of the bot is written in stored text, whatever the front
/// end: `@` and `bot.name`. Discord's `<@id>` and the console's `@ambient`
/// both become this where the percept is made, so reflexes, prompts and the
/// journal see one form.
pub fn bot_mention(bot_name: &str) -> String {
    format!("@{}", bot_name.trim())
}

/// Mentions made readable, as people see them: `<@123>`/`<@!123>` →
/// `@name` for the users in `mentioned` (the bot: [`bot_mention`], also when
/// it is missing from the list), `<#456>` → `#name` where the store knows
/// the channel. Every front end writes mentions this way, so reflexes match
/// the same text wherever a message came from.
pub fn readable_mentions(
    text: &str,
    mentioned: &[(u64, &str)],
    store: &MessageStore,
    me: UserId,
    bot_name: &str,
) -> String {
    // Every mention is written `<@…>` or `<#…>`: most chatter has none to
    // rewrite, and this runs for every message.
    if !text.contains('<') {
        return text.to_string();
    }
    let mut text = text.to_string();
    let me_name = bot_mention(bot_name);
    for (id, name) in mentioned {
        let name = if *id == me.get() {
            me_name.clone()
        } else {
            format!("@{name}")
        };
        text = text
            .replace(&format!("<@{id}>"), &name)
            .replace(&format!("<@!{id}>"), &name);
    }
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

/// Whether `text` addresses the bot by `name` without a mention: "hey ambient, …",
/// "ambient: …", "what do you think, ambient?". A bare "ambient music is nice" does not.
///
/// Asked of every message, so only the words that can address the bot are
/// read and lowercased: the first two and the last two.
pub fn addressed_by_name(text: &str, name: &str) -> bool {
    let name = name.trim().to_lowercase();
    if name.is_empty() {
        return false;
    }
    fn two_words<'a>(ws: impl Iterator<Item = &'a str>) -> (Option<String>, Option<String>) {
        let mut ws = ws.filter(|w| !w.is_empty()).map(str::to_lowercase);
        (ws.next(), ws.next())
    }
    let (Some(first), second) = two_words(text.split(char::is_whitespace)) else {
        return false;
    };
    fn bare(w: &str) -> &str {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
    }
    let is_name = |w: &str| bare(w) == name || bare(w.trim_start_matches('@')) == name;
    let ends_with_punct = |w: &str| w.ends_with([',', ':', '!', '?', '.']);
    let Some(second) = second else {
        // "ambient?" / "ambient"
        return is_name(&first);
    };
    // "hey ambient …"
    if GREETINGS.contains(&bare(&first)) && is_name(&second) {
        return true;
    }
    // "ambient, …" / "ambient: …"
    if is_name(&first) && ends_with_punct(&first) {
        return true;
    }
    // "…, ambient?" at the end
    let (Some(last), Some(before)) = two_words(text.rsplit(char::is_whitespace)) else {
        return false;
    };
    is_name(&last) && before.ends_with(',')
}

const GREETINGS: &[&str] = &[
    "hey", "hi", "hello", "ok", "okay", "yo", "oi", "dear", "thanks", "thank",
];

#[derive(Clone, Debug, PartialEq)]
pub struct MessagePercept {
    /// The message as stored in channel history.
    pub message: StoredMessage,
    pub addressed: Addressed,
    pub guild_name: Option<String>,
    pub channel_name: Option<String>,
    /// The author's roles in the server, as the message carried them (Discord's
    /// `member.roles`); `None` where they are not known: a direct message, a voice
    /// line, the console, a replay. `permissions.roles` decides on them.
    pub author_roles: Option<Vec<RoleId>>,
}

impl MessagePercept {
    pub(crate) fn place(&self) -> Place {
        Place {
            guild: self.message.guild,
            channel: self.message.channel,
        }
    }

    pub(crate) fn is_voice(&self) -> bool {
        self.message.source == Source::Vc
    }

    /// The message an answer may reply to (and react to) on the platform:
    /// none for a voice line, which exists only as our transcript.
    pub(crate) fn reply_target(&self) -> Option<MessageId> {
        (!self.is_voice()).then_some(self.message.id)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Percept {
    Message(MessagePercept),
    Edit {
        id: MessageId,
        place: Place,
        content: String,
        at: DateTime<Utc>,
    },
    Delete {
        id: MessageId,
        place: Place,
        at: DateTime<Utc>,
    },
    Reaction {
        place: Place,
        message: MessageId,
        user: Author,
        emoji: String,
        added: bool,
        at: DateTime<Utc>,
    },
    MemberJoin {
        guild: GuildId,
        user: Author,
        at: DateTime<Utc>,
    },
}

impl Percept {
    pub(crate) fn place(&self) -> Option<Place> {
        match self {
            Percept::Message(m) => Some(m.place()),
            Percept::Edit { place, .. }
            | Percept::Delete { place, .. }
            | Percept::Reaction { place, .. } => Some(*place),
            Percept::MemberJoin { .. } => None,
        }
    }

    pub(crate) fn guild(&self) -> Option<GuildId> {
        match self {
            Percept::MemberJoin { guild, .. } => Some(*guild),
            other => other.place().and_then(|p| p.guild),
        }
    }

    /// The person (or bot) behind it, when there is one.
    pub(crate) fn author_id(&self) -> Option<UserId> {
        match self {
            Percept::Message(m) => Some(m.message.author_id),
            Percept::Reaction { user, .. } | Percept::MemberJoin { user, .. } => Some(user.id),
            Percept::Edit { .. } | Percept::Delete { .. } => None,
        }
    }

    pub(crate) fn at(&self) -> DateTime<Utc> {
        match self {
            Percept::Message(m) => m.message.created_at,
            Percept::Edit { at, .. }
            | Percept::Delete { at, .. }
            | Percept::Reaction { at, .. }
            | Percept::MemberJoin { at, .. } => *at,
        }
    }

    /// A few words for the journal.
    pub(crate) fn describe(&self) -> String {
        match self {
            Percept::Message(m) => {
                let kind = if m.is_voice() {
                    "voice line"
                } else {
                    "message"
                };
                format!("{kind} {} from {}", m.message.id, m.message.author_name)
            }
            Percept::Edit { id, .. } => format!("edit of message {id}"),
            Percept::Delete { id, .. } => format!("deletion of message {id}"),
            Percept::Reaction {
                message,
                user,
                emoji,
                added,
                ..
            } => format!(
                "{} {emoji} by {} on message {message}",
                if *added {
                    "reaction"
                } else {
                    "removed reaction"
                },
                user.name
            ),
            Percept::MemberJoin { user, .. } => format!("{} joined", user.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::addressed_by_name;

    #[test]
    fn addressing_by_name_needs_a_greeting_or_punctuation() {
        for yes in [
            "hey ambient, what's up",
            "Ambient: summarize this",
            "ok ambient tell me",
            "what do you think, ambient?",
            "ambient?",
            "@ambient, hi",
            "  HEY\tAmbient\u{2003}what now",
            "a long message of many words, then at the very end, Ambient?",
        ] {
            assert!(addressed_by_name(yes, "ambient"), "{yes}");
        }
        for no in [
            "ambient music is nice",
            "I like ambient",
            "the ambient noise, ambient sounds",
            "ambient music, said no one, in the middle of a sentence ending here",
            "hey there ambient",
            "",
            " \n ",
        ] {
            assert!(!addressed_by_name(no, "ambient"), "{no}");
        }
    }
}
