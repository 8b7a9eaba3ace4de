//! Commands people run (slash commands in Discord, `/…` lines in the
//! console), as front-end-neutral functions that return the text to show.
//! The Discord and console layers only parse arguments and display results.

pub mod access;
pub mod courtesy;
pub(crate) mod discovery;
pub mod feeds;
pub mod garden;
pub mod impulses;
pub(crate) mod memory;
pub(crate) mod settings;
pub mod status;
pub(crate) mod voice;
pub mod why;

use crate::ids::{ChannelId, GuildId, UserId};

/// Who runs a command, and where.
pub struct Asker {
    pub guild: Option<GuildId>,
    pub channel: ChannelId,
    pub user: UserId,
    pub name: String,
    /// Has Manage Server here (always true in the operator's console).
    pub manage: bool,
}
