//! Salience: how much an input deserves attention, from named features.
//!
//! The score is a sum of feature weights (clamped to 0–1) times a recency
//! factor; every feature that contributed is kept by name, so the journal can
//! say *why* something was picked ("addressed 0.60 + active 0.15 + human 0.10").
//! Separately, every input has a [`Class`]: a person's input is `User`, the
//! bot's own motivation is `Autonomous`, and the queue always serves `User`
//! first regardless of score.

use chrono::{DateTime, Utc};

use super::Input;
use super::impulse::Priority;
use super::percept::Percept;
use crate::settings::Settings;

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
    /// "addressed 0.60 + human 0.10 × recency 1.00"
    pub fn explain(&self) -> String {
        let (factors, terms): (Vec<_>, Vec<_>) = self
            .features
            .iter()
            .partition(|(name, _)| *name == "recency");
        let mut text = terms
            .iter()
            .map(|(name, w)| format!("{name} {w:+.2}"))
            .collect::<Vec<_>>()
            .join(" ");
        for (name, f) in factors {
            text.push_str(&format!(" × {name} {f:.2}"));
        }
        text
    }
}

/// What scoring needs to know besides the input itself.
pub struct Context<'a> {
    pub settings: &'a Settings,
    pub now: DateTime<Utc>,
    /// The input's channel is in an ACTIVE conversation with the bot.
    pub channel_active: bool,
}

// Feature weights. Addressing dominates: a mention must beat any vibe.
const ADDRESSED: f64 = 0.60;
const REPLY_CHANNEL: f64 = 0.25;
const DISCOVERY_CHANNEL: f64 = 0.05;
const ACTIVE: f64 = 0.15;
const HUMAN: f64 = 0.10;
const OTHER_BOT: f64 = -0.30;
const QUESTION: f64 = 0.10;
/// Minutes after which an old percept (e.g. redelivered after downtime) counts half.
const RECENCY_HALF_LIFE_MINUTES: f64 = 30.0;

pub fn score(input: &Input, ctx: &Context<'_>) -> Salience {
    let mut features: Vec<(&'static str, f64)> = Vec::new();
    let class;
    match input {
        Input::Percept(p) => {
            let human = !is_bot_author(p);
            class = if human {
                Class::User
            } else {
                Class::Autonomous
            };
            features.push(if human {
                ("human", HUMAN)
            } else {
                ("other_bot", OTHER_BOT)
            });
            if let Percept::Message(m) = p {
                if m.addressed.is_addressed() {
                    features.push(("addressed", ADDRESSED));
                }
                let replies = &ctx.settings.permissions.replies;
                if replies.reply_channel_ids.contains(&m.message.channel) {
                    features.push(("reply_channel", REPLY_CHANNEL));
                } else if replies.discovery_channel_ids.contains(&m.message.channel) {
                    features.push(("discovery_channel", DISCOVERY_CHANNEL));
                }
                if m.message.content.trim_end().ends_with('?') {
                    features.push(("question", QUESTION));
                }
            }
            if ctx.channel_active {
                features.push(("active", ACTIVE));
            }
            let age_minutes = (ctx.now - p.at()).num_seconds().max(0) as f64 / 60.0;
            features.push((
                "recency",
                0.5f64.powf(age_minutes / RECENCY_HALF_LIFE_MINUTES),
            ));
        }
        Input::Impulse(i) => {
            class = Class::Autonomous;
            let w = match i.priority {
                Priority::Low => 0.20,
                Priority::Normal => 0.40,
                Priority::High => 0.60,
            };
            features.push(("impulse_priority", w));
        }
    }
    let sum: f64 = features
        .iter()
        .filter(|(n, _)| *n != "recency")
        .map(|(_, w)| w)
        .sum();
    let factor = features
        .iter()
        .find(|(n, _)| *n == "recency")
        .map_or(1.0, |(_, f)| *f);
    Salience {
        score: (sum * factor).clamp(0.0, 1.0),
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
