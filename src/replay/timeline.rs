//! The replay's timeline, for the HTML page: the chat as it was, with the
//! bot's would-be messages and reactions where they would have been, each
//! with the journal's *why*.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::export::ExportedMessage;
use super::sim::Simulation;
use super::transport::{Act, Doing};
use crate::journal::{Filter, Kind};
use crate::store::Store;

/// Who a line is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Who {
    Person,
    /// The bot said something, doing this.
    Bot(Doing),
    /// The bot reacted to a message.
    Reaction,
}

#[derive(Clone, Debug, Serialize)]
pub struct Line {
    pub at: DateTime<Utc>,
    #[serde(skip)]
    pub channel_id: u64,
    pub channel: String,
    pub who: Who,
    pub author: String,
    pub text: String,
    /// The journal's account of why the bot did it.
    pub why: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Timeline {
    pub lines: Vec<Line>,
    /// People's messages not shown (past the first 2,000, only those just
    /// before the bot's acts are kept).
    pub left_out: u64,
}

impl Line {
    pub fn person(m: &ExportedMessage) -> Self {
        // Mentions as people read them (`<@123>` → `@name`).
        let mut text = m.content.clone();
        for a in &m.mentions {
            for raw in [format!("<@{}>", a.id), format!("<@!{}>", a.id)] {
                text = text.replace(&raw, &format!("@{}", a.name));
            }
        }
        Self {
            at: m.at,
            channel_id: m.channel.id,
            channel: format!("#{}", m.channel.name),
            who: Who::Person,
            author: m.author.name.clone(),
            text,
            why: Vec::new(),
        }
    }

    pub fn act(act: &Act, store: &Store) -> Self {
        let (at, channel, who, text) = match act {
            Act::Said {
                at,
                doing,
                channel,
                content,
                ..
            } => (*at, *channel, Who::Bot(*doing), content.clone()),
            Act::Reacted {
                at, channel, emoji, ..
            } => (*at, *channel, Who::Reaction, emoji.clone()),
        };
        let name = store.channel_name(channel).ok().flatten();
        Self {
            at,
            channel_id: channel.get(),
            channel: name.map_or_else(|| channel.to_string(), |n| format!("#{n}")),
            who,
            author: String::new(),
            text,
            why: Vec::new(),
        }
    }
}

/// The journal's kinds that say why the bot spoke or reacted.
const WHY_KINDS: [Kind; 5] = [
    Kind::Reply,
    Kind::InitiativePost,
    Kind::Reflex,
    Kind::Impulse,
    Kind::Route,
];

impl Timeline {
    /// Each of the bot's lines with the journal entries written in its channel at its moment.
    pub fn explained(mut self, sim: &Simulation) -> Self {
        let me = sim.acts();
        if me.is_empty() {
            return self;
        }
        for line in self.lines.iter_mut().filter(|l| l.who != Who::Person) {
            line.author = sim.app.settings.global().bot.name.clone();
            let entries = sim
                .app
                .journal
                .query(&Filter {
                    channel: Some(crate::ids::ChannelId(line.channel_id)),
                    since: Some(line.at),
                    until: Some(line.at + chrono::Duration::milliseconds(1)),
                    kinds: WHY_KINDS.to_vec(),
                    ..Filter::default()
                })
                .unwrap_or_default();
            line.why = entries
                .into_iter()
                .map(|e| {
                    if e.reason.is_empty() {
                        e.summary
                    } else {
                        format!("{}: {}", e.summary, e.reason)
                    }
                })
                .collect();
        }
        self
    }
}
