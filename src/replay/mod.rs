//! `ambient replay`: a real chat export lived through the whole bot on a
//! simulated clock, to show a server's owner how chatty and how costly the
//! bot would be there. A front end like the console: it feeds percepts to
//! the same core and knows nothing the core does not tell it.
//!
//! - `export`: the chat exports read, streaming and in time order
//!   (DiscordChatExporter JSON, or a simple JSONL)
//! - `bounded`: JSON with every field bounded before the parser holds it
//! - `sim`: the bot living through them on a manual clock
//! - `transport`: what the bot would have said, kept instead of sent
//! - `offline`: the models' stand-in when nothing may be sent anywhere
//! - `run`: one replay from the files to the report
//! - `keep`: the replay's own data directory, empty or new, locked and marked
//! - `report`, `text`, `timeline`: what it found, as data, as text, as a timeline
//! - `html`: the report and the timeline as one self-contained page

use crate::store::{ImpulseStore, InitiativeStore, MessageStore};
pub(crate) mod bounded;
pub mod export;
pub mod html;
pub mod keep;
pub(crate) mod offline;
pub(crate) mod report;
pub mod run;
pub mod sim;
pub mod text;
pub(crate) mod timeline;
pub mod transport;

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub(crate) struct Stores {
    pub messages: MessageStore,
    pub initiative: InitiativeStore,
    pub impulses: ImpulseStore,
}
