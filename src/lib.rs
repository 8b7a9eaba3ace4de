//! ambient: a Discord companion that is present.
//!
//! It listens to text and voice, remembers what matters, and now and then
//! decides on its own that something is worth saying — cheaply: reflexes
//! first, the strong model only when it is worth it, inside budgets.
//!
//! The flow (see DESIGN.md): senses and impulses → attention (salience, one
//! queue, user input first) → router → reflexes / executive / pass →
//! actions (speech) → journal and store. Front ends (`console`, Discord) are
//! adapters over this core.

pub mod app;
pub mod attention;
pub mod backoff;
pub mod chat;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod console;
pub mod dashboard;
pub mod courtesy;
pub mod discord;
pub mod discovery;
pub mod executive;
pub mod garden;
pub mod ids;
pub mod impulses;
pub mod initiative;
pub mod journal;
pub mod live;
pub mod memory;
pub mod net;
pub mod permissions;
pub mod reflexes;
pub mod replay;
pub mod reply;
pub mod senses;
pub mod settings;
pub mod speech;
pub mod store;
pub mod voice;
pub mod when;
