//! `ambient run`: the bot on Discord, reloading its settings file when it
//! changes (unless `--no-watch`) and on SIGHUP.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::app::Parts;
use crate::clock::{Chance, SystemClock};
use crate::live::Watching;
use crate::settings::Secrets;

pub async fn run(settings: Option<&Path>, no_watch: bool) -> anyhow::Result<ExitCode> {
    let loaded = match super::load_valid(settings)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    let secrets = Secrets::from_env();
    let Some(token) = secrets.discord_token.clone() else {
        eprintln!(
            "ambient run: DISCORD_TOKEN is not set.\n\
             Create an application at https://discord.com/developers/applications, open Bot → Reset Token,\n\
             and start again with DISCORD_TOKEN=<token> (the README's \"Discord setup\" walks through it).\n\
             To talk to the bot without Discord, run `ambient console` (`./dev.sh run console` if it is not installed)."
        );
        return Ok(ExitCode::FAILURE);
    };
    crate::discord::run(
        Parts {
            settings: loaded.settings,
            settings_source: Some(loaded.source),
            secrets,
            clock: Arc::new(SystemClock),
            chance: Chance::from_entropy(),
            stand_in: None,
        },
        token.expose(),
        Watching {
            files: !no_watch,
            sighup: true,
        },
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}
