//! WHAT THIS COMMUNITY IS INTO: lightweight interest facts derived from what
//! people said lately — the words they keep using and where they talk.
//! Cheap (a word count over stored messages), and reused by discovery to
//! rank feed items by overlap with the community's talk.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::discovery::topics::keywords;
use crate::ids::GuildId;
use crate::store::MessageStore;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Interests {
    /// (word, how many messages used it), most used first.
    pub topics: Vec<(String, u32)>,
    /// (channel name, messages), busiest first.
    pub busiest_channels: Vec<(String, u32)>,
    pub messages_considered: usize,
}

impl Interests {
    pub(crate) fn words(&self) -> impl Iterator<Item = &str> {
        self.topics.iter().map(|(w, _)| w.as_str())
    }
}

/// Topics from the guild's human messages since `since` (at most `limit` messages).
pub(crate) fn interests(
    store: &MessageStore,
    guild: GuildId,
    since: DateTime<Utc>,
    limit: usize,
    top: usize,
) -> Interests {
    let Ok(messages) = store.recent_guild_messages(guild, since, limit) else {
        return Interests::default();
    };
    let human: Vec<_> = messages.iter().filter(|m| !m.author_is_bot).collect();
    let names: std::collections::HashSet<String> =
        human.iter().map(|m| m.author_name.to_lowercase()).collect();
    let mut counts: HashMap<String, u32> = HashMap::new();
    let mut channels: HashMap<crate::ids::ChannelId, u32> = HashMap::new();
    for m in &human {
        *channels.entry(m.channel).or_default() += 1;
        let mut seen = std::collections::HashSet::new();
        for word in keywords(&m.content) {
            if !names.contains(&word) && seen.insert(word.clone()) {
                *counts.entry(word).or_default() += 1;
            }
        }
    }
    let mut topics: Vec<(String, u32)> = counts.into_iter().filter(|(_, n)| *n >= 2).collect();
    topics.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    topics.truncate(top);
    let mut busiest: Vec<(String, u32)> = channels
        .into_iter()
        .map(|(c, n)| {
            (
                store
                    .channel_name(c)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| c.to_string()),
                n,
            )
        })
        .collect();
    busiest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    busiest.truncate(3);
    Interests {
        topics,
        busiest_channels: busiest,
        messages_considered: human.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::messages::sample;

    #[test]
    fn repeated_words_across_messages_become_topics() {
        let store = Store::open_in_memory().unwrap();
        let t = Utc::now();
        let lines = [
            "Rust async is tricky",
            "anyone tried rust with tokio?",
            "tokio and rust, what a combo",
            "lunch anyone",
            "https://rust-lang.org rust",
        ];
        for (i, l) in lines.iter().enumerate() {
            store
                .messages()
                .insert_message(&sample(i as u64 + 1, 5, l, t))
                .unwrap();
        }
        let got = interests(
            &store.messages(),
            GuildId(1),
            t - chrono::Duration::hours(1),
            100,
            5,
        );
        assert_eq!(got.topics[0], ("rust".to_string(), 4));
        assert_eq!(got.topics[1], ("tokio".to_string(), 2));
        assert!(
            got.topics
                .iter()
                .all(|(w, _)| w != "anyone" && w != "lunch")
        );
        assert_eq!(got.messages_considered, 5);
    }
}
