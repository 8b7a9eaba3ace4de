//! `/settings show|set|reset`: per-guild overrides over the settings file,
//! validated by the same validator as the file; `/settings reload`: the
//! operator's file read again (`crate::live`), for owners only.
//!
//! Channel-valued settings (`…ChannelIds`, `…ChannelId`) take channels as
//! people name them: `#memes` (this server's channel of that name), Discord's
//! `<#id>`, or the id itself — in the console and on Discord alike.

use crate::app::App;
use crate::ids::{GuildId, UserId};
use crate::settings::ChangeError;
use crate::settings::service::render_value;
use crate::store::MessageStore;

/// Discord's message limit leaves room for this much of a value.
const MAX_SHOWN: usize = 1800;

pub(crate) fn show(app: &App, guild: Option<GuildId>, path: Option<&str>) -> String {
    match path.map(str::trim).filter(|p| !p.is_empty()) {
        None => {
            let Some(guild) = guild else {
                return "Settings come from the settings file here; name a path, e.g. `initiative.text.eagerness`.".into();
            };
            match app.settings.overrides(guild) {
                Ok(list) if list.is_empty() => {
                    "This server uses the settings file as is (no overrides). Name a path to see a value, e.g. `initiative.text.eagerness`.".into()
                }
                Ok(list) => {
                    let lines: Vec<String> = list
                        .iter()
                        .map(|(p, v)| format!("{p} = {}", render_value(v)))
                        .collect();
                    truncate(format!("This server's overrides:\n{}", lines.join("\n")))
                }
                Err(e) => format!("Cannot read the overrides: {e}"),
            }
        }
        Some(path) => match app.settings.show(guild, path) {
            Ok((value, origin)) => truncate(format!(
                "{path} = {} ({})",
                render_value(&value),
                origin.label()
            )),
            Err(e) => e.to_string(),
        },
    }
}

/// Why a server's override was not changed; the text is the answer the asker sees.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SettingsRefused {
    /// The settings service refused the value or the path (its words name the path).
    #[error("{0}")]
    Change(#[from] ChangeError),
    #[error("cannot read this server's channels: {0}")]
    ChannelsUnreadable(#[source] crate::store::StoreError),
    #[error(
        "{path}: this server has no channel named #{name} (channels the bot knows here: {known})"
    )]
    NoSuchChannel {
        path: String,
        name: String,
        /// The channel names the bot knows here, or "none seen yet".
        known: String,
    },
}

pub(crate) fn set(
    app: &App,
    guild: GuildId,
    by: Option<UserId>,
    path: &str,
    value: &str,
) -> Result<String, SettingsRefused> {
    let value = channel_names_to_ids(app, guild, path, value)?;
    match app.settings.set_override(guild, path, &value, by) {
        Ok(stored) => {
            app.discovery.poke();
            app.journal.record(
                crate::vocab::journal::Entry::new(
                    crate::vocab::journal::Kind::Settings,
                    format!("{path} set to {stored}"),
                )
                .guild(Some(guild))
                .reason(by.map(|u| format!("by user {u}")).unwrap_or_default()),
            );
            let mut text = format!("{path} = {} for this server.", render_value(&stored));
            // A key that does nothing yet (X handles while X is off) is said so at once.
            for w in crate::settings::validate::warnings(&app.settings.for_guild(Some(guild))) {
                if w.path.contains(path.trim()) {
                    text.push_str(&format!("\nNote: {w}"));
                }
            }
            Ok(text)
        }
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn reset(
    app: &App,
    guild: GuildId,
    by: Option<UserId>,
    path: &str,
) -> Result<String, SettingsRefused> {
    match app.settings.reset_override(guild, path) {
        Ok(true) => {
            app.journal.record(
                crate::vocab::journal::Entry::new(
                    crate::vocab::journal::Kind::Settings,
                    format!("{path} reset"),
                )
                .guild(Some(guild))
                .reason(by.map(|u| format!("by user {u}")).unwrap_or_default()),
            );
            Ok(format!(
                "{path} is back to the settings file's value for this server."
            ))
        }
        Ok(false) => Ok(format!(
            "{path} had no override on this server; nothing changed."
        )),
        Err(e) => Err(e.into()),
    }
}

/// `/settings reload`: the settings file (and reflexes folder) read again and
/// applied if valid. The front end has checked that `by` is an owner.
pub(crate) async fn reload(app: &App, by: &str) -> String {
    let outcome = app
        .live
        .reload(crate::live::Trigger::Command { by: by.to_string() })
        .await;
    truncate(outcome.lines().join("\n"))
}

/// Said to anyone else who tries `/settings reload`.
pub(crate) const RELOAD_IS_FOR_OWNERS: &str = "Only the bot's owner (the application's owner or discord.ownerUserIds) can reload the settings file.";

/// The console form: `show [PATH]`, `set PATH VALUE`, `reset PATH`.
pub(crate) fn run_text(
    app: &App,
    guild: Option<GuildId>,
    by: Option<UserId>,
    args: &str,
    may_change: bool,
) -> String {
    let (verb, rest) = args.trim().split_once(' ').unwrap_or((args.trim(), ""));
    let rest = rest.trim();
    let usage = "usage: /settings show [PATH] | /settings set PATH VALUE | /settings reset PATH | /settings reload";
    match (verb, guild) {
        ("show" | "", _) => show(app, guild, Some(rest)),
        ("set" | "reset", _) if !may_change => {
            "Only members with Manage Server may change settings.".into()
        }
        ("set", Some(g)) => match rest.split_once(' ') {
            Some((path, value)) => set(app, g, by, path, value).unwrap_or_else(|e| e.to_string()),
            None => usage.into(),
        },
        ("reset", Some(g)) if !rest.is_empty() => {
            reset(app, g, by, rest).unwrap_or_else(|e| e.to_string())
        }
        ("set" | "reset", None) => "Settings can only be overridden inside a server.".into(),
        _ => usage.into(),
    }
}

/// For a channel-valued setting, each `#name` becomes the id of this
/// server's channel of that name; other values pass unchanged (a JSON list
/// is taken as written).
fn channel_names_to_ids(
    app: &App,
    guild: GuildId,
    path: &str,
    value: &str,
) -> Result<String, SettingsRefused> {
    let leaf = path.trim().rsplit('.').next().unwrap_or_default();
    let channel_valued = leaf.ends_with("ChannelIds") || leaf.ends_with("ChannelId");
    if !channel_valued || !value.contains('#') || value.trim_start().starts_with('[') {
        return Ok(value.to_string());
    }
    let mut ids = Vec::new();
    for token in value.split(|c: char| c == ',' || c.is_whitespace()) {
        let Some(name) = token.strip_prefix('#').filter(|n| !n.is_empty()) else {
            ids.push(token.to_string());
            continue;
        };
        match app
            .stores::<MessageStore>()
            .channel_by_name(guild, name)
            .map_err(SettingsRefused::ChannelsUnreadable)?
        {
            Some(id) => ids.push(id.to_string()),
            None => return Err(no_such_channel(app, guild, path, name)),
        }
    }
    Ok(ids
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(", "))
}

fn no_such_channel(app: &App, guild: GuildId, path: &str, name: &str) -> SettingsRefused {
    let mut known: Vec<String> = app
        .stores::<MessageStore>()
        .guild_channels(guild)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| app.stores::<MessageStore>().channel_name(c).ok().flatten())
        .map(|n| format!("#{n}"))
        .collect();
    known.sort();
    let known = if known.is_empty() {
        "none seen yet".to_string()
    } else {
        known.join(", ")
    };
    SettingsRefused::NoSuchChannel {
        path: path.to_string(),
        name: name.to_string(),
        known,
    }
}

fn truncate(mut text: String) -> String {
    if text.chars().count() > MAX_SHOWN {
        text = text.chars().take(MAX_SHOWN).collect();
        text.push_str("\n… (cut; name a deeper path to see the rest)");
    }
    text
}
