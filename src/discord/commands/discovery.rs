//! `/discovery list|add|remove` — this server's feed sources.

use super::{Context, Error, guild};
use crate::commands;
use crate::ids::UserId;

/// The feeds the bot follows for this server
#[poise::command(
    slash_command,
    subcommands("list", "add", "remove"),
    subcommand_required,
    guild_only,
    default_member_permissions = "MANAGE_GUILD"
)]
pub(crate) async fn discovery(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

/// List the feed sources, where each comes from, and how it is doing
#[poise::command(slash_command, ephemeral)]
async fn list(ctx: Context<'_>) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    let mut text = commands::discovery::list(&ctx.data().app, g);
    if text.chars().count() > 1990 {
        text = text.chars().take(1980).collect::<String>() + "\n…";
    }
    ctx.say(text).await?;
    Ok(())
}

/// Add a feed source
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn add(
    ctx: Context<'_>,
    #[description = "rss, reddit, youtube, x or hackernews"] kind: String,
    #[description = "Feed URL, subreddit, YouTube channel id (UC…) or X handle"] target: String,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    let text = commands::discovery::add(
        &ctx.data().app,
        g,
        UserId(ctx.author().id.get()),
        &kind,
        &target,
    );
    ctx.say(text).await?;
    Ok(())
}

/// Remove a feed source added here
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn remove(
    ctx: Context<'_>,
    #[description = "rss, reddit, youtube, x or hackernews"] kind: String,
    #[description = "The source to remove"] target: String,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    let text = commands::discovery::remove(
        &ctx.data().app,
        g,
        UserId(ctx.author().id.get()),
        &kind,
        &target,
    );
    ctx.say(text).await?;
    Ok(())
}
