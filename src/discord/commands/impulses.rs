//! `/task add|list|done`, `/schedule add|list|remove` (Manage Server),
//! `/idea list|add`.

use super::{Context, Error, asker, say};
use crate::commands::impulses;
use crate::impulses::RoutineFlags;

/// Tasks: reminders and things the bot will do
#[poise::command(
    slash_command,
    subcommands("task_add", "task_list", "task_done"),
    subcommand_required
)]
pub(crate) async fn task(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

/// Add a task; by default the bot reminds you when it is due
#[poise::command(slash_command, ephemeral, rename = "add")]
async fn task_add(
    ctx: Context<'_>,
    #[description = "What, e.g. \"water the plants\""] text: String,
    #[description = "When: in 10m, in 2 hours, tomorrow 9:00, 18:30, 2026-03-01 14:00"] due: String,
    #[description = "Remind me with a message (default); false: let the bot decide what to do then"]
    remind: Option<bool>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(
        ctx,
        impulses::task_add(&ctx.data().app, &who, &text, &due, remind.unwrap_or(true)),
    )
    .await
}

/// The open tasks here
#[poise::command(slash_command, ephemeral, rename = "list")]
async fn task_list(ctx: Context<'_>) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, impulses::task_list(&ctx.data().app, &who)).await
}

/// Close a task (yours, or any with Manage Server)
#[poise::command(slash_command, ephemeral, rename = "done")]
async fn task_done(
    ctx: Context<'_>,
    #[description = "The task's id from /task list (the first characters are enough)"] id: String,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, impulses::task_done(&ctx.data().app, &who, &id)).await
}

/// Routines the bot runs on a cron schedule
#[poise::command(
    slash_command,
    subcommands("schedule_add", "schedule_list", "schedule_remove"),
    subcommand_required,
    guild_only,
    default_member_permissions = "MANAGE_GUILD"
)]
pub(crate) async fn schedule(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

/// Add a routine in this channel
#[poise::command(
    slash_command,
    ephemeral,
    rename = "add",
    required_permissions = "MANAGE_GUILD"
)]
async fn schedule_add(
    ctx: Context<'_>,
    #[description = "A short name, e.g. standup"] name: String,
    #[description = "Cron: minute hour day month weekday, e.g. \"0 9 * * 1-5\""] cron: String,
    #[description = "What the bot should do, e.g. \"ask how everyone's week is going\""]
    action: String,
    #[description = "Run during the server's quiet hours too (default: skipped then)"]
    during_quiet_hours: Option<bool>,
    #[description = "Post even when nobody answered the bot's last posts (default: skipped then)"]
    even_if_unanswered: Option<bool>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    let flags = RoutineFlags {
        during_quiet_hours: during_quiet_hours.unwrap_or(false),
        even_if_unanswered: even_if_unanswered.unwrap_or(false),
    };
    say(
        ctx,
        impulses::schedule_add(&ctx.data().app, &who, &name, &cron, &action, flags),
    )
    .await
}

/// The routines here, with their next run
#[poise::command(slash_command, ephemeral, rename = "list")]
async fn schedule_list(ctx: Context<'_>) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, impulses::schedule_list(&ctx.data().app, &who)).await
}

/// Remove a routine
#[poise::command(
    slash_command,
    ephemeral,
    rename = "remove",
    required_permissions = "MANAGE_GUILD"
)]
async fn schedule_remove(
    ctx: Context<'_>,
    #[description = "The routine's name"] name: String,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, impulses::schedule_remove(&ctx.data().app, &who, &name)).await
}

/// Ideas the bot explores when it is quiet
#[poise::command(
    slash_command,
    subcommands("idea_list", "idea_add"),
    subcommand_required,
    guild_only
)]
pub(crate) async fn idea(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

/// The bot's ideas here, and which it has explored
#[poise::command(slash_command, ephemeral, rename = "list")]
async fn idea_list(ctx: Context<'_>) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, impulses::idea_list(&ctx.data().app, &who)).await
}

/// Suggest something for the bot to look into when it is quiet
#[poise::command(slash_command, ephemeral, rename = "add")]
async fn idea_add(ctx: Context<'_>, #[description = "The idea"] text: String) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, impulses::idea_add(&ctx.data().app, &who, &text)).await
}
