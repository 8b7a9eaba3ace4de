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
//!
//! # Layers, top to bottom
//!
//! A module may use only the modules on lower rows of this table, never one
//! on its own row or above it. Shared vocabulary types (a role, a priority,
//! a fact) live at the lowest row that needs them. The e2e test `layers`
//! reads this table and every `crate::` path in `src/`, and names the file
//! and line of any import that climbs; a new module needs a row here before
//! that test passes.
//!
//! | row | modules | what they are |
//! |-----|---------|---------------|
//! | 1 | `cli` | the binary's commands: parse arguments, pick a front end |
//! | 2 | `discord` | the Discord front end: gateway, slash commands, REST |
//! | 3 | `dashboard`, `doctor` | the operator's web page over the core; checks of a setup against Discord and this machine |
//! | 4 | `console`, `replay`, `health` | the terminal front end; an export replayed offline; metrics, health and systemd's notifications |
//! | 5 | `commands` | slash commands, shared by every front end |
//! | 6 | `app` | the composition root: builds and runs the core |
//! | 7 | `live` | settings reloaded while running |
//! | 8 | `reply` | answering someone who spoke to the bot |
//! | 9 | `garden`, `reflexes` | memory kept tidy in the background; cheap reactions |
//! | 10 | `impulses` | what moves the bot from inside: tasks, schedules, ideas |
//! | 11 | `initiative`, `voice`, `feeds` | unprompted posts; voice channels; feeds delivered to the channels that subscribed |
//! | 12 | `speech`, `senses` | what the bot says; what it reads from attachments and speech |
//! | 13 | `discovery`, `memory`, `chat`, `permissions`, `courtesy` | feeds, remembered facts, channel history, who may see what, quiet hours and boundaries |
//! | 14 | `executive`, `attention`, `upkeep` | model calls under budgets; salience, the queue, the router; records kept no longer than set |
//! | 15 | `net`, `journal`, `httpd` | the guarded fetcher; the record of every decision; the small HTTP server the dashboard and the health endpoints share |
//! | 16 | `settings` | one schema with defaults, validated; the executive's roles |
//! | 17 | `store` | SQLite: every table and migration |
//! | 18 | `vocab`, `metrics` | the nouns several layers share and the store keeps; the Prometheus families |
//! | 19 | `when`, `words`, `ids`, `clock`, `backoff` | times in words, numbers in words, ids, the clock, retry waits |
//!
//! # The store's handles, by module
//!
//! The store is split by family of tables (`store::handles`): a module is
//! given only the handles of the tables it reads or writes, and names no
//! other. `app` (the composition root) and `cli` (the commands that open a
//! data directory) hold the whole `Store` and cut the handles from it; a
//! module not listed here touches no table. The e2e test `layers` holds
//! each module's code (outside its tests) to its line.
//!
//! | module | handles |
//! |--------|---------|
//! | `attention` | `MessageStore` |
//! | `commands` | `MessageStore`, `MemoryStore`, `JournalStore`, `UsageStore`, `InitiativeStore`, `PeopleStore`, `ImpulseStore`, `GardenStore`, `GuildStore` |
//! | `console` | `MessageStore` |
//! | `courtesy` | `MessageStore`, `PeopleStore` |
//! | `dashboard` | `MessageStore`, `MemoryStore`, `JournalStore`, `UsageStore`, `InitiativeStore`, `PeopleStore`, `DiscoveryStore`, `FeedStore`, `ImpulseStore`, `GardenStore`, `OverrideStore`, `GuildStore` |
//! | `discord` | `MessageStore`, `GuildStore`, `FileStore` |
//! | `discovery` | `MessageStore`, `DiscoveryStore`, `FeedStore` |
//! | `executive` | `MessageStore`, `UsageStore` |
//! | `feeds` | `MessageStore`, `DiscoveryStore`, `FeedStore` |
//! | `garden` | `MessageStore`, `MemoryStore`, `JournalStore`, `UsageStore`, `InitiativeStore`, `ImpulseStore`, `GardenStore` |
//! | `health` | `UsageStore`, `FileStore` |
//! | `impulses` | `MessageStore`, `InitiativeStore`, `PeopleStore`, `ImpulseStore` |
//! | `initiative` | `MessageStore`, `JournalStore`, `UsageStore`, `InitiativeStore`, `PeopleStore` |
//! | `journal` | `MessageStore`, `JournalStore` |
//! | `memory` | `MessageStore`, `MemoryStore`, `PeopleStore` |
//! | `permissions` | `PeopleStore` |
//! | `reflexes` | `MessageStore`, `JournalStore`, `PeopleStore`, `ImpulseStore` |
//! | `replay` | `MessageStore`, `UsageStore`, `InitiativeStore`, `ImpulseStore` |
//! | `reply` | `MessageStore`, `JournalStore`, `UsageStore`, `InitiativeStore`, `PeopleStore` |
//! | `senses` | `MessageStore`, `PeopleStore`, `DiscoveryStore` |
//! | `settings` | `OverrideStore` |
//! | `speech` | `MessageStore`, `PeopleStore` |
//! | `upkeep` | `JournalStore`, `OverrideStore`, `FileStore` |
//! | `voice` | `MessageStore`, `UsageStore`, `PeopleStore`, `VoiceStore` |
//!
//! These docs are for the people who work on the bot, read with
//! `cargo doc --document-private-items`: an item the binary and the tests
//! reach is public, and its doc may name the private parts it rests on.

#![allow(rustdoc::private_intra_doc_links)]

pub mod app;
pub mod attention;
pub(crate) mod backoff;
pub mod chat;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod console;
pub(crate) mod courtesy;
pub mod dashboard;
pub mod discord;
pub mod discovery;
pub mod doctor;
pub mod executive;
pub mod feeds;
pub mod garden;
pub(crate) mod health;
pub(crate) mod httpd;
pub mod ids;
pub mod impulses;
pub mod initiative;
pub mod journal;
pub(crate) mod live;
pub mod memory;
pub mod metrics;
pub(crate) mod net;
pub(crate) mod permissions;
pub mod reflexes;
pub mod replay;
pub(crate) mod reply;
pub(crate) mod senses;
pub mod settings;
pub mod speech;
pub mod store;
pub mod upkeep;
pub mod vocab;
pub mod voice;
pub(crate) mod when;
pub(crate) mod words;
