//! Settings: one typed schema with defaults, loaded from a JSON file,
//! validated with path-named problems, and layered per guild.
//!
//! - `schema`: every key and its default (the single source of truth)
//! - `validate`: collects every problem in a document
//! - `load`: reads the file (or falls back to defaults)
//! - `secrets`: tokens and keys, from the environment only
//! - `service`: effective settings per guild, with stored overrides
//! - `paths`: dotted-path helpers
//! - `check`: a file's problems as `ambient settings check` and a live reload word them
//! - `diff`: what changed between two settings documents, and what waits for the next start
//! - `shards`: which gateway shards (and so which guilds) this process runs
//! - `quiet_hours`: the `initiative.quietHours` syntax and when a server is quiet

pub(crate) mod check;
pub(crate) mod diff;
pub(crate) mod load;
pub mod paths;
pub(crate) mod quiet_hours;
pub mod retention;
pub(crate) mod role;
pub(crate) mod schema;
pub(crate) mod secrets;
pub(crate) mod service;
pub mod shards;
pub mod validate;

pub use load::{Loaded, SettingsSource, load};
pub use role::Role;
pub use schema::*;
pub use secrets::{Secret, Secrets};
pub use service::{ChangeError, Origin, SettingsService};
pub use validate::{Problem, validate};

/// The defaults as pretty JSON: exactly what `settings.example.json` holds.
pub fn example_json() -> String {
    let mut text = serde_json::to_string_pretty(&Settings::default()).expect("settings serialize");
    text.push('\n');
    text
}
