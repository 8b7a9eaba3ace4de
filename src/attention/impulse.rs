//! Impulses: what moves the bot from inside — the initiative tick, a task
//! coming due, a cron schedule entry, an idea worth exploring when idle, the
//! garden waking up. They compete for attention with percepts, and always
//! lose to a person talking to the bot.

use chrono::{DateTime, Utc};

use crate::ids::{ChannelId, GuildId};

use crate::vocab::Priority;

#[derive(Clone, Debug, PartialEq)]
pub enum ImpulseKind {
    /// The 60 s ambient text tick for one guild.
    InitiativeTick,
    /// A task ("I will do X by T") is due.
    TaskDue { task_id: String },
    /// A recurring schedule entry fired.
    Scheduled { name: String },
    /// An idea to explore while idle.
    Idea { idea_id: String },
    /// The garden (background memory consolidation) is due.
    GardenDue,
}

impl ImpulseKind {
    pub(crate) fn label(&self) -> &'static str {
        match self {
            ImpulseKind::InitiativeTick => "initiative tick",
            ImpulseKind::TaskDue { .. } => "task due",
            ImpulseKind::Scheduled { .. } => "schedule entry",
            ImpulseKind::Idea { .. } => "idea",
            ImpulseKind::GardenDue => "garden due",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Impulse {
    pub kind: ImpulseKind,
    pub guild: Option<GuildId>,
    pub channel: Option<ChannelId>,
    pub priority: Priority,
    /// Free text for the journal: what the task/idea/schedule says.
    pub detail: String,
    pub at: DateTime<Utc>,
}

impl Impulse {
    pub fn new(kind: ImpulseKind, guild: Option<GuildId>, at: DateTime<Utc>) -> Self {
        Self {
            kind,
            guild,
            channel: None,
            priority: Priority::Normal,
            detail: String::new(),
            at,
        }
    }

    pub(crate) fn describe(&self) -> String {
        if self.detail.is_empty() {
            self.kind.label().to_string()
        } else {
            format!("{}: {}", self.kind.label(), self.detail)
        }
    }
}
