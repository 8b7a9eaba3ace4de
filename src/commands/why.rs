//! `/ambient why [message]`: why the bot said (or did not say) something,
//! from the journal. Only the asking server's entries are ever read.

use crate::app::App;
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::store::MessageStore;
use crate::store::messages::StoredMessage;
use crate::vocab::journal::{Entry, Filter, Kind};

/// The message a Discord link (`…/channels/<guild>/<channel>/<message>`) or a bare id names.
pub(crate) fn parse_message_ref(text: &str) -> Option<MessageId> {
    let t = text.trim().trim_start_matches('<').trim_end_matches('>');
    let last = t.rsplit('/').next()?;
    last.parse().ok().map(MessageId)
}

pub fn why(app: &App, guild: Option<GuildId>, channel: ChannelId, target: Option<&str>) -> String {
    let target = target.map(str::trim).filter(|t| !t.is_empty());
    let Some(target) = target else {
        return recent(app, guild, channel);
    };
    let Some(id) = parse_message_ref(target) else {
        return format!(
            "{target:?} is not a message link or id; copy a message link (… → Copy Message Link)."
        );
    };
    let stored = app.stores::<MessageStore>().message(id).ok().flatten();
    if let Some(m) = &stored
        && m.guild != guild
    {
        return "That message is not from this server.".into();
    }
    // For the bot's own reply, the reasons hang on the message it answered.
    let subject = match &stored {
        Some(m) if m.is_self => m.reply_to.or_else(|| answered_by(app, m)).unwrap_or(id),
        _ => id,
    };
    let entries = app
        .journal
        .query(&Filter {
            message: Some(subject),
            guild,
            ..Default::default()
        })
        .unwrap_or_default();
    if entries.is_empty() {
        return match stored {
            None => "I have no record of that message (it may be older than my memory of this place, or in a channel I cannot see).".into(),
            Some(_) => "I saw that message but wrote nothing down about it.".into(),
        };
    }
    let mut text = match &stored {
        Some(m) if m.is_self => "Why I said that:\n".to_string(),
        _ => "What I made of that message:\n".to_string(),
    };
    text.push_str(&lines(&entries));
    text
}

/// The message the bot was answering when it sent `sent`, for the parts of a
/// reply that carry no reply reference: the second and later parts of a long
/// answer, and an answer to something said aloud.
fn answered_by(app: &App, sent: &StoredMessage) -> Option<MessageId> {
    let entries = app
        .journal
        .query(&Filter {
            since: Some(sent.created_at - chrono::Duration::minutes(1)),
            until: Some(sent.created_at + chrono::Duration::minutes(10)),
            kinds: vec![Kind::Reply],
            guild: sent.guild,
            channel: Some(sent.channel),
            ..Default::default()
        })
        .ok()?;
    let id = sent.id.to_string();
    entries
        .into_iter()
        .find(|e| {
            e.data["sent"]
                .as_array()
                .is_some_and(|ids| ids.iter().any(|v| v.as_str() == Some(id.as_str())))
        })?
        .message
}

fn recent(app: &App, guild: Option<GuildId>, channel: ChannelId) -> String {
    let entries = app
        .journal
        .query(&Filter {
            guild,
            channel: Some(channel),
            limit: Some(8),
            ..Default::default()
        })
        .unwrap_or_default();
    if entries.is_empty() {
        return "I have not decided anything in this channel lately.".into();
    }
    format!("My latest decisions in this channel:\n{}", lines(&entries))
}

fn lines(entries: &[Entry]) -> String {
    entries
        .iter()
        .map(|e| {
            let mut line = format!(
                "`{}` **{}** {}",
                e.at.format("%H:%M"),
                e.kind.as_str(),
                e.summary
            );
            if !e.reason.is_empty() {
                line.push_str(" — ");
                line.push_str(&e.reason);
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_ids_name_messages() {
        assert_eq!(
            parse_message_ref("https://discord.com/channels/1/2/1234567890"),
            Some(MessageId(1234567890))
        );
        assert_eq!(
            parse_message_ref("<https://discord.com/channels/@me/2/55>"),
            Some(MessageId(55))
        );
        assert_eq!(parse_message_ref("987"), Some(MessageId(987)));
        assert_eq!(parse_message_ref("not a link"), None);
    }
}
