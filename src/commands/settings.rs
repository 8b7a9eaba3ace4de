//! `/settings show|set|reset`: per-guild overrides over the settings file,
//! validated by the same validator as the file.

use crate::app::App;
use crate::ids::{GuildId, UserId};
use crate::settings::service::render_value;

/// Discord's message limit leaves room for this much of a value.
const MAX_SHOWN: usize = 1800;

pub fn show(app: &App, guild: Option<GuildId>, path: Option<&str>) -> String {
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

pub fn set(
    app: &App,
    guild: GuildId,
    by: Option<UserId>,
    path: &str,
    value: &str,
) -> Result<String, String> {
    match app.settings.set_override(guild, path, value, by) {
        Ok(stored) => {
            app.discovery.poke();
            app.journal.record(
                crate::journal::Entry::new(
                    crate::journal::Kind::Settings,
                    format!("{path} set to {stored}"),
                )
                .guild(Some(guild))
                .reason(by.map(|u| format!("by user {u}")).unwrap_or_default()),
            );
            Ok(format!(
                "{path} = {} for this server.",
                render_value(&stored)
            ))
        }
        Err(e) => Err(e.to_string()),
    }
}

pub fn reset(app: &App, guild: GuildId, by: Option<UserId>, path: &str) -> Result<String, String> {
    match app.settings.reset_override(guild, path) {
        Ok(true) => {
            app.journal.record(
                crate::journal::Entry::new(crate::journal::Kind::Settings, format!("{path} reset"))
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
        Err(e) => Err(e.to_string()),
    }
}

/// The console form: `show [PATH]`, `set PATH VALUE`, `reset PATH`.
pub fn run_text(
    app: &App,
    guild: Option<GuildId>,
    by: Option<UserId>,
    args: &str,
    may_change: bool,
) -> String {
    let (verb, rest) = args.trim().split_once(' ').unwrap_or((args.trim(), ""));
    let rest = rest.trim();
    let usage = "usage: /settings show [PATH] | /settings set PATH VALUE | /settings reset PATH";
    match (verb, guild) {
        ("show" | "", _) => show(app, guild, Some(rest)),
        ("set" | "reset", _) if !may_change => {
            "Only members with Manage Server may change settings.".into()
        }
        ("set", Some(g)) => match rest.split_once(' ') {
            Some((path, value)) => set(app, g, by, path, value).unwrap_or_else(|e| e),
            None => usage.into(),
        },
        ("reset", Some(g)) if !rest.is_empty() => reset(app, g, by, rest).unwrap_or_else(|e| e),
        ("set" | "reset", None) => "Settings can only be overridden inside a server.".into(),
        _ => usage.into(),
    }
}

fn truncate(mut text: String) -> String {
    if text.chars().count() > MAX_SHOWN {
        text = text.chars().take(MAX_SHOWN).collect();
        text.push_str("\n… (cut; name a deeper path to see the rest)");
    }
    text
}
