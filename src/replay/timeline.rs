//! The replay's timeline, for the HTML page: the chat as it was, with the
//! bot's would-be messages and reactions where they would have been, each
//! with the journal's *why* — the entries about that act alone. An entry
//! belongs to an act when it names the act's own message (or lists it as
//! sent), or names the message the act answers or reacts to without listing
//! another act as sent: two acts at the same moment in the same channel
//! never borrow each other's reasons.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::export::ExportedMessage;
use super::sim::Simulation;
use super::transport::{Act, Doing};
use crate::ids::MessageId;
use crate::store::MessageStore;
use crate::vocab::journal::{Entry, Filter, Kind};

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
    /// The bot's own message, for a line it said.
    #[serde(skip)]
    pub said: Option<MessageId>,
    /// The message the bot answered or reacted to, if any.
    #[serde(skip)]
    pub about: Option<MessageId>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Timeline {
    pub lines: Vec<Line>,
    /// People's messages not shown (past the first 2,000, only those just
    /// before the bot's acts are kept).
    pub left_out: u64,
}

impl Line {
    pub(crate) fn person(m: &ExportedMessage) -> Self {
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
            said: None,
            about: None,
        }
    }

    pub(crate) fn act(act: &Act, store: &MessageStore) -> Self {
        let (at, channel, who, text, said, about) = match act {
            Act::Said {
                at,
                id,
                doing,
                channel,
                content,
                reply_to,
                ..
            } => (
                *at,
                *channel,
                Who::Bot(*doing),
                content.clone(),
                Some(*id),
                *reply_to,
            ),
            Act::Reacted {
                at,
                channel,
                message,
                emoji,
            } => (
                *at,
                *channel,
                Who::Reaction,
                emoji.clone(),
                None,
                Some(*message),
            ),
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
            said,
            about,
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
    /// Each of the bot's lines with the journal entries about that act.
    pub(crate) fn explained(mut self, sim: &Simulation) -> Self {
        if sim.acts().is_empty() {
            return self;
        }
        let name = sim.app.settings.global().bot.name.clone();
        for line in self.lines.iter_mut().filter(|l| l.who != Who::Person) {
            line.author = name.clone();
            line.why = reasons(sim, line)
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

/// The journal entries about the act on `line`, oldest first.
fn reasons(sim: &Simulation, line: &Line) -> Vec<Entry> {
    let channel = Some(crate::ids::ChannelId(line.channel_id));
    let query = |filter: Filter| {
        sim.app
            .journal
            .query(&Filter {
                channel,
                kinds: WHY_KINDS.to_vec(),
                ..filter
            })
            .unwrap_or_default()
    };
    // The act's own entries: those naming its message, and (for an answer,
    // whose entry names the question) those listing it as sent, written at
    // its moment.
    let mut own: Vec<Entry> = Vec::new();
    if let Some(said) = line.said {
        own = query(Filter {
            message: Some(said),
            ..Filter::default()
        });
        own.extend(
            query(Filter {
                since: Some(line.at),
                until: Some(line.at + chrono::Duration::milliseconds(1)),
                ..Filter::default()
            })
            .into_iter()
            .filter(|e| lists_sent(e, said)),
        );
    }
    // What the act answers: the message it replies or reacts to, else the
    // one its own entry names.
    let about = line.about.or_else(|| {
        own.iter()
            .filter_map(|e| e.message)
            .find(|m| Some(*m) != line.said)
    });
    let mut why = own;
    if let Some(about) = about {
        why.extend(
            query(Filter {
                message: Some(about),
                ..Filter::default()
            })
            .into_iter()
            .filter(|e| !sent_by_another_act(e, line.said)),
        );
    }
    why.sort_by_key(|e| e.id);
    why.dedup_by_key(|e| e.id);
    why
}

/// The message ids an entry lists as sent (`data.sent`), if any.
fn sent(e: &Entry) -> impl Iterator<Item = &str> {
    e.data["sent"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
}

fn lists_sent(e: &Entry, id: MessageId) -> bool {
    let id = id.to_string();
    sent(e).any(|s| s == id)
}

/// An entry that lists what was sent, and not `said`: another act's.
fn sent_by_another_act(e: &Entry, said: Option<MessageId>) -> bool {
    sent(e).next().is_some() && !said.is_some_and(|id| lists_sent(e, id))
}
