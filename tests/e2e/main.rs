//! End-to-end and cross-module tests, in one binary (linking dominates build
//! time on small machines, so there is one test crate with modules).

#[path = "../support/mod.rs"]
mod support;

mod attachments;
mod bounds;
mod busy;
mod console;
mod conversation;
mod courtesy;
mod courtesy_gaps;
mod dashboard;
mod discord;
mod discovery;
mod door;
mod durability;
mod executive;
mod fail_closed;
mod first_hour;
mod first_hour_35;
mod footprint;
mod forget;
mod garden;
mod guild_io;
mod hostile;
mod initiative;
mod inputs_35;
mod layers;
mod live;
mod media;
mod memory;
mod newcomer;
mod people;
mod ratelimits;
mod reconnect;
mod recovery;
mod reflexes;
mod refusals;
mod replay;
mod replay_cli;
mod replay_html;
mod reply_35;
mod secrets;
mod sends;
mod settings_cli;
mod shards;
mod spine;
mod status;
mod store_upgrade;
mod streaming;
mod voice;
mod writes;
