//! Commands people run (slash commands in Discord, `/…` lines in the
//! console), as front-end-neutral functions that return the text to show.
//! The Discord and console layers only parse arguments and display results.

use crate::store::cut;
use crate::store::{
    GardenStore, GuildStore, ImpulseStore, InitiativeStore, JournalStore, MemoryStore,
    MessageStore, PeopleStore, UsageStore,
};
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

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub messages: MessageStore,
    pub memory: MemoryStore,
    pub journal: JournalStore,
    pub usage: UsageStore,
    pub initiative: InitiativeStore,
    pub people: PeopleStore,
    pub impulses: ImpulseStore,
    pub garden: GardenStore,
    pub guilds: GuildStore,
}

cut!(Stores => crate::initiative::Stores { messages, journal, usage, initiative, people });
