//! `ambient run`: the bot on Discord, reloading its settings file when it
//! changes (unless `--no-watch`) and on SIGHUP.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::app::Parts;
use crate::clock::{Chance, SystemClock};
use crate::live::{CommandLine, Watching};
use crate::settings::Secrets;

/// `--shards` and `--total-shards`: the settings' `discord.shards` and
/// `discord.totalShards` for this start only.
pub(crate) struct ShardFlags {
    pub shards: Option<String>,
    pub total_shards: Option<u32>,
}

impl ShardFlags {
    /// The flags written over the file's settings, and the shard problems
    /// checked again with the flags' names (the file's own stay as they were).
    /// Returns what was set, for live reloads to keep over the file.
    fn apply(self, loaded: &mut crate::settings::Loaded) -> CommandLine {
        if self.shards.is_none() && self.total_shards.is_none() {
            return Vec::new();
        }
        let mut held = CommandLine::new();
        let d = &mut loaded.settings.discord;
        if let Some(range) = self.shards {
            held.push(("discord.shards".into(), range.clone().into()));
            d.shards = range;
        }
        if let Some(total) = self.total_shards {
            held.push(("discord.totalShards".into(), total.into()));
            d.total_shards = total;
        }
        let keys = crate::settings::shards::KEYS;
        loaded.problems.retain(|p| !keys.contains(&p.path.as_str()));
        for mut p in crate::settings::shards::problems(&loaded.settings) {
            p.path = match p.path.as_str() {
                "discord.shards" => "--shards (discord.shards)".into(),
                "discord.totalShards" => "--total-shards (discord.totalShards)".into(),
                _ => p.path,
            };
            loaded.problems.push(p);
        }
        held
    }
}

pub(crate) async fn run(
    settings: Option<&Path>,
    no_watch: bool,
    flags: ShardFlags,
) -> anyhow::Result<ExitCode> {
    let mut loaded = super::load_once(settings)?;
    let command_line = flags.apply(&mut loaded);
    let loaded = match super::refuse_problems(loaded) {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    raise_open_files_limit();
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
            sharing: crate::store::Sharing::Shared,
        },
        token.expose(),
        Watching {
            files: !no_watch,
            sighup: true,
            command_line,
        },
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// Raises the process's open-file limit to the most it may have (its hard
/// limit). The usual soft limit, 1,024, is soon spent by a bot that serves
/// many servers, voice and a dashboard; the dashboard keeps a quarter of
/// whatever the limit is (`dashboard::serve`). A limit that cannot be
/// raised stays as it was.
fn raise_open_files_limit() {
    match crate::dashboard::open_files::raise() {
        Ok(Some(raised)) => tracing::debug!(
            from = raised.from,
            to = raised.to,
            "open-file limit raised to its hard limit"
        ),
        Ok(None) => {}
        Err(e) => tracing::debug!(error = %e, "open-file limit not raised; it stays as it was"),
    }
}
