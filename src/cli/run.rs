//! `ambient run`: the bot on Discord.

use std::path::Path;
use std::process::ExitCode;

pub async fn run(settings: Option<&Path>) -> anyhow::Result<ExitCode> {
    let _loaded = match super::load_valid(settings)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    eprintln!(
        "ambient run: this build has no Discord connection yet (it arrives with the Discord presence work).\n\
         To talk to the bot now, run `ambient console`: the same bot against a simulated guild in this terminal."
    );
    Ok(ExitCode::FAILURE)
}
