//! `/settings show|set|reset` — this server's overrides of the settings file;
//! all three for members with Manage Server. `/settings reload` — the
//! operator's settings file read again; for the bot's owner only (a server's
//! admins manage their server, not the operator's file).

use serenity::all::{AutocompleteChoice, CreateAutocompleteResponse};

use super::{Context, Error, guild};
use crate::commands;
use crate::ids::UserId;
use crate::settings::{paths, service::is_guild_scoped, validate::defaults_tree};

/// Show or change this server's settings
#[poise::command(
    slash_command,
    subcommands("show", "set", "reset", "reload"),
    subcommand_required,
    guild_only,
    default_member_permissions = "MANAGE_GUILD"
)]
pub(crate) async fn settings(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

async fn complete_path(_ctx: Context<'_>, partial: &str) -> CreateAutocompleteResponse {
    let partial = partial.to_lowercase();
    let choices = paths::leaf_paths(&defaults_tree())
        .into_iter()
        .filter(|p| is_guild_scoped(p) && p.to_lowercase().contains(&partial))
        .take(25)
        .map(AutocompleteChoice::from)
        .collect();
    CreateAutocompleteResponse::new().set_choices(choices)
}

/// Show a setting in effect here, or this server's overrides
///
/// For managers, like `set` and `reset`: a server's settings name the people
/// and channels the bot is told to ignore, which a member should not be able
/// to read. The check holds even where a server lets more roles see the
/// `/settings` command.
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn show(
    ctx: Context<'_>,
    #[description = "Setting path, e.g. initiative.text.eagerness"]
    #[autocomplete = "complete_path"]
    path: Option<String>,
) -> Result<(), Error> {
    let text = commands::settings::show(&ctx.data().app, guild(&ctx), path.as_deref());
    ctx.say(text).await?;
    Ok(())
}

/// Override a setting for this server (checked like the settings file)
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn set(
    ctx: Context<'_>,
    #[description = "Setting path, e.g. permissions.replies.discoveryChannelIds"]
    #[autocomplete = "complete_path"]
    path: String,
    #[description = "New value: a number, true/false, text, or a list (commas or #channel mentions)"]
    value: String,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else {
        ctx.say("Settings can only be changed inside a server.")
            .await?;
        return Ok(());
    };
    let by = Some(UserId(ctx.author().id.get()));
    let text = commands::settings::set(&ctx.data().app, g, by, &path, &value)
        .unwrap_or_else(|e| e.to_string());
    ctx.say(text).await?;
    Ok(())
}

/// Remove this server's override of a setting
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn reset(
    ctx: Context<'_>,
    #[description = "Setting path"]
    #[autocomplete = "complete_path"]
    path: String,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else {
        ctx.say("Settings can only be changed inside a server.")
            .await?;
        return Ok(());
    };
    let by = Some(UserId(ctx.author().id.get()));
    let text =
        commands::settings::reset(&ctx.data().app, g, by, &path).unwrap_or_else(|e| e.to_string());
    ctx.say(text).await?;
    Ok(())
}

/// Read the settings file again and apply it if it is valid (the bot's owner only)
#[poise::command(slash_command, ephemeral)]
async fn reload(ctx: Context<'_>) -> Result<(), Error> {
    let user = UserId(ctx.author().id.get());
    if !super::is_owner(&ctx, user).await {
        ctx.say(commands::settings::RELOAD_IS_FOR_OWNERS).await?;
        return Ok(());
    }
    // Reading, checking and looking for a local model again can outlast
    // Discord's three seconds for a first answer.
    ctx.defer_ephemeral().await?;
    let by = format!("{} ({user})", ctx.author().name);
    let text = commands::settings::reload(&ctx.data().app, &by).await;
    super::say(ctx, text).await
}
