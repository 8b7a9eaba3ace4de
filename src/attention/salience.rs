//! Salience: how much an input deserves attention, from named features.
//!
//! The score is a sum of feature weights (clamped to 0–1) times a recency
//! factor; every feature that contributed is kept by name, so the journal can
//! say *why* something was picked ("addressed 0.60 + active 0.15 + human 0.10").
//! Separately, every input has a [`Class`]: a person's input is `User`, the
//! bot's own motivation is `Autonomous`, and the queue always serves `User`
//! first regardless of score.
//!
//! Weights are whole points (hundredths) and are summed as integers, so a
//! question in a reply channel (10 + 25 + 10) scores exactly 0.45, not
//! 0.44999999999999996; [`Salience::reaches`] compares against a bar with a
//! tolerance for what the recency factor leaves.

use chrono::{DateTime, Utc};

use super::Input;
use super::percept::Percept;
use crate::settings::Settings;
use crate::vocab::Priority;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Something a person did. Always served before autonomous work.
    User,
    /// Ticks, tasks, ideas, the garden.
    Autonomous,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Salience {
    pub score: f64,
    pub class: Class,
    /// The features that contributed, by name, with their weight.
    pub features: Vec<(&'static str, f64)>,
}

impl Salience {
    /// Whether the score reaches `bar` (within floating-point noise).
    pub(crate) fn reaches(&self, bar: f64) -> bool {
        self.score + 1e-9 >= bar
    }

    /// "addressed 0.60 + human 0.10 × recency 1.00"
    pub(crate) fn explain(&self) -> String {
        use std::fmt::Write;
        // Written into one string: every message's routing line carries it.
        let mut text = String::with_capacity(64);
        let factor = |name: &&str| *name == "recency";
        for (name, w) in self.features.iter().filter(|(n, _)| !factor(n)) {
            let gap = if text.is_empty() { "" } else { " " };
            // Writing to a String cannot fail.
            let _ = write!(text, "{gap}{name} {w:+.2}");
        }
        for (name, f) in self.features.iter().filter(|(n, _)| factor(n)) {
            // As above.
            let _ = write!(text, " × {name} {f:.2}");
        }
        text
    }
}

/// What scoring needs to know besides the input itself.
pub(crate) struct Context<'a> {
    pub settings: &'a Settings,
    pub now: DateTime<Utc>,
    /// The input's channel is in an ACTIVE conversation with the bot.
    pub channel_active: bool,
}

// Feature weights in points (hundredths). Addressing dominates: a mention must beat any vibe.
const ADDRESSED: i32 = 60;
const REPLY_CHANNEL: i32 = 25;
const DISCOVERY_CHANNEL: i32 = 5;
const ACTIVE: i32 = 15;
const HUMAN: i32 = 10;
const OTHER_BOT: i32 = -30;
const QUESTION: i32 = 10;
/// Minutes after which an old percept (e.g. redelivered after downtime) counts half.
const RECENCY_HALF_LIFE_MINUTES: f64 = 30.0;

pub(crate) fn score(input: &Input, ctx: &Context<'_>) -> Salience {
    let mut terms: Vec<(&'static str, i32)> = Vec::new();
    let mut recency = None;
    let class;
    match input {
        Input::Percept(p) => {
            let human = !is_bot_author(p);
            class = if human {
                Class::User
            } else {
                Class::Autonomous
            };
            terms.push(if human {
                ("human", HUMAN)
            } else {
                ("other_bot", OTHER_BOT)
            });
            if let Percept::Message(m) = p {
                if m.addressed.is_addressed() {
                    terms.push(("addressed", ADDRESSED));
                }
                let replies = &ctx.settings.permissions.replies;
                if replies.reply_channel_ids.contains(&m.message.channel) {
                    terms.push(("reply_channel", REPLY_CHANNEL));
                } else if replies.discovery_channel_ids.contains(&m.message.channel) {
                    terms.push(("discovery_channel", DISCOVERY_CHANNEL));
                }
                if m.message.content.trim_end().ends_with('?') {
                    terms.push(("question", QUESTION));
                }
            }
            if ctx.channel_active {
                terms.push(("active", ACTIVE));
            }
            let age_minutes = (ctx.now - p.at()).num_seconds().max(0) as f64 / 60.0;
            recency = Some(0.5f64.powf(age_minutes / RECENCY_HALF_LIFE_MINUTES));
        }
        Input::Impulse(i) => {
            class = Class::Autonomous;
            let w = match i.priority {
                Priority::Low => 20,
                Priority::Normal => 40,
                Priority::High => 60,
            };
            terms.push(("impulse_priority", w));
        }
    }
    let points: i32 = terms.iter().map(|(_, w)| w).sum();
    let factor = recency.unwrap_or(1.0);
    let mut features: Vec<(&'static str, f64)> = terms
        .into_iter()
        .map(|(name, w)| (name, f64::from(w) / 100.0))
        .collect();
    features.extend(recency.map(|f| ("recency", f)));
    Salience {
        score: (f64::from(points) / 100.0 * factor).clamp(0.0, 1.0),
        class,
        features,
    }
}

fn is_bot_author(p: &Percept) -> bool {
    match p {
        Percept::Message(m) => m.message.author_is_bot,
        Percept::Reaction { user, .. } | Percept::MemberJoin { user, .. } => user.is_bot,
        Percept::Edit { .. } | Percept::Delete { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::{Addressed, MessagePercept};
    use crate::ids::{ChannelId, GuildId, MessageId, UserId};
    use crate::store::messages::StoredMessage;

    /// The journal's routing lines carry this text: the terms in order,
    /// signed, then the recency factor, wherever it was listed.
    #[test]
    fn the_explanation_lists_the_terms_then_the_factor() {
        let s = Salience {
            score: 0.42,
            class: Class::User,
            features: vec![("recency", 0.6), ("addressed", 0.6), ("human", 0.1)],
        };
        assert_eq!(s.explain(), "addressed +0.60 human +0.10 × recency 0.60");
        let none = Salience {
            features: vec![],
            ..s
        };
        assert_eq!(none.explain(), "");
    }

    #[test]
    fn a_question_in_a_reply_channel_reaches_an_equal_bar() {
        let mut settings = Settings::default();
        settings.permissions.replies.reply_channel_ids = vec![ChannelId(7)];
        let now = Utc::now();
        let input = Input::Percept(Percept::Message(MessagePercept {
            message: StoredMessage::said(
                MessageId(1),
                Some(GuildId(1)),
                ChannelId(7),
                UserId(2),
                "ada",
                "anyone tried the new release?",
                now,
            ),
            addressed: Addressed::No,
            guild_name: None,
            channel_name: None,
            author_roles: None,
        }));
        let s = score(
            &input,
            &Context {
                settings: &settings,
                now,
                channel_active: false,
            },
        );
        assert_eq!(
            s.score, 0.45,
            "human 10 + reply channel 25 + question 10 points"
        );
        assert!(s.reaches(0.45));
        assert!(!s.reaches(0.46));
    }
}
