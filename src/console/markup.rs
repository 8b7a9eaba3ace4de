//! Discord's mention markup made readable outside Discord: at the console,
//! and on the dashboard (which shows what the bot said).
//!
//! What the bot writes is what Discord would receive: `<@1234…> reminder:
//! stretch` pings the person it is for, `<#5678…>` links a channel. Discord
//! shows those as names; a terminal or a web page would show the digits.
//! They are printed as people see them — `@ada`, `#general` — from the
//! names the store knows. An id it does not know stays readable as what it is
//! (`@user:1234…`, `#channel:5678…`, `@role:42`: the console has no roles).
//! `--json` keeps the text as sent, for scripts.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use crate::ids::{ChannelId, UserId};
use crate::store::MessageStore;

/// `<@id>`, `<@!id>` (a nickname mention), `<@&id>` (a role), `<#id>`.
static MENTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<(@!?|@&|#)(\d{1,20})>").expect("valid pattern"));

/// `text` with every mention written as a name.
pub(crate) fn readable(text: &str, store: &MessageStore) -> String {
    // Most lines have no mention: no allocation beyond the copy, no lookup.
    if !text.contains('<') {
        return text.to_string();
    }
    MENTION
        .replace_all(text, |c: &Captures<'_>| {
            let id = &c[2];
            let known = |name: Option<String>| name.filter(|n| !n.trim().is_empty());
            match &c[1] {
                "#" => match known(name_of_channel(store, id)) {
                    Some(name) => format!("#{name}"),
                    None => format!("#channel:{id}"),
                },
                "@&" => format!("@role:{id}"),
                _ => match known(name_of_user(store, id)) {
                    Some(name) => format!("@{name}"),
                    None => format!("@user:{id}"),
                },
            }
        })
        .into_owned()
}

/// A lookup that fails shows the id: a name is a nicety, not worth an error.
fn name_of_channel(store: &MessageStore, id: &str) -> Option<String> {
    let id = ChannelId(id.parse().ok()?);
    store.channel_name(id).ok().flatten()
}

fn name_of_user(store: &MessageStore, id: &str) -> Option<String> {
    let id = UserId(id.parse().ok()?);
    store.author_name(id).ok().flatten()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::ids::{GuildId, MessageId};
    use crate::store::Store;
    use crate::store::messages::StoredMessage;

    /// A store that knows ada (user 905) in #general (channel 20) of the
    /// console's server (1): the console's tests read names from it.
    pub(in crate::console) fn store() -> Store {
        let store = Store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        store
            .messages()
            .upsert_guild(GuildId(1), "console", now)
            .unwrap();
        store
            .messages()
            .upsert_channel(ChannelId(20), Some(GuildId(1)), "general", now)
            .unwrap();
        store
            .messages()
            .insert_message(&StoredMessage::said(
                MessageId(30),
                Some(GuildId(1)),
                ChannelId(20),
                UserId(905),
                "ada",
                "hi",
                now,
            ))
            .unwrap();
        store
    }

    #[test]
    fn mentions_show_names_and_unknown_ids_say_what_they_are() {
        let store = store();
        assert_eq!(
            readable("<@905> reminder: stretch", &store.messages()),
            "@ada reminder: stretch"
        );
        assert_eq!(
            readable(
                "<@!905>, see <#20> — not <#21>, <@906> or <@&42>",
                &store.messages()
            ),
            "@ada, see #general — not #channel:21, @user:906 or @role:42"
        );
    }

    #[test]
    fn text_that_only_looks_like_markup_stays_as_it_is() {
        let store = store();
        for text in [
            "a < b > c",
            "<@ada>",
            "<#general>",
            "<@>",
            "x <@905",
            "plain",
        ] {
            assert_eq!(readable(text, &store.messages()), text);
        }
    }
}
