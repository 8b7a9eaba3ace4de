//! The executive's roles: which kind of work a model call does.
//!
//! `reply` answers people, `ambient` serves initiative and the garden,
//! `reflex` the level-2 reflexes, `extract` memory extraction. Each role has
//! its own model settings (`executive.roles.<role>`) and daily budget
//! (`budget.dailyTokens.<role>`), so the role is settings' vocabulary: it
//! lives here, below the journal and the store that record it.

use std::fmt;

use serde::Serialize;

use super::{RoleSettings, Settings};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Reply,
    Ambient,
    Reflex,
    Extract,
}

impl Role {
    pub(crate) const ALL: [Role; 4] = [Role::Reply, Role::Ambient, Role::Reflex, Role::Extract];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Reply => "reply",
            Role::Ambient => "ambient",
            Role::Reflex => "reflex",
            Role::Extract => "extract",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Work nobody asked for right now: everything but answering people.
    pub(crate) fn is_autonomous(self) -> bool {
        self != Role::Reply
    }

    /// The roles that want the strongest model a provider offers.
    pub(crate) fn is_strong(self) -> bool {
        matches!(self, Role::Reply | Role::Ambient)
    }

    pub(crate) fn settings(self, s: &Settings) -> &RoleSettings {
        let r = &s.executive.roles;
        match self {
            Role::Reply => &r.reply,
            Role::Ambient => &r.ambient,
            Role::Reflex => &r.reflex,
            Role::Extract => &r.extract,
        }
    }

    /// This process's daily cap for the role (`budget.dailyTokens.<role>`
    /// times its share of the bot, [`Settings::process_cap`]); 0: no cap.
    pub(crate) fn daily_budget(self, s: &Settings) -> u64 {
        let b = &s.budget.daily_tokens;
        s.process_cap(match self {
            Role::Reply => b.reply,
            Role::Ambient => b.ambient,
            Role::Reflex => b.reflex,
            Role::Extract => b.extract,
        })
    }
}

impl Settings {
    /// A bot-wide daily cap as this process may spend it: its shards' part
    /// of `whole` (all of it when it runs them all), so N processes never
    /// spend more than one would; rounded down but never to 0 (which would
    /// mean no cap at all).
    pub(crate) fn process_cap(&self, whole: u64) -> u64 {
        if whole == 0 {
            return 0;
        }
        self.discord
            .shard_plan()
            .map_or(whole, |p| p.part_of(whole))
            .max(1)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
