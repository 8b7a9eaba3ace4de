//! Commands people run (slash commands in Discord, `/…` lines in the
//! console), as front-end-neutral functions that return the text to show.
//! The Discord and console layers only parse arguments and display results.

pub mod discovery;
pub mod memory;
pub mod settings;
pub mod status;
pub mod why;
