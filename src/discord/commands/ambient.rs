//! `/ambient status`, `/ambient why` and `/ambient garden`.

use serenity::all::CreateAllowedMentions;

use super::{Context, Error, guild};
use crate::commands;
use crate::ids::ChannelId;

/// What the bot is up to here
#[poise::command(
    slash_command,
    subcommands("status", "why", "garden"),
    subcommand_required,
    guild_only
)]
pub async fn ambient(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

/// State, next initiative, posts today and the budget
#[poise::command(slash_command, ephemeral)]
async fn status(ctx: Context<'_>) -> Result<(), Error> {
    // Without a server the widget would be the operator's view of every server.
    let Some(g) = guild(&ctx) else { return Ok(()) };
    let app = &ctx.data().app;
    let lines = commands::status::widget(&commands::status::Sources::of(app), Some(g));
    // A held draft is the model's text: it may name people, but never pings them.
    let reply = poise::CreateReply::default()
        .content(commands::status::discord_text(&lines))
        .allowed_mentions(CreateAllowedMentions::new());
    ctx.send(reply).await?;
    Ok(())
}

/// Tend this server's memory now (still within the budget)
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn garden(ctx: Context<'_>) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    let by = ctx
        .author()
        .global_name
        .clone()
        .unwrap_or_else(|| ctx.author().name.clone());
    ctx.say(ctx.data().app.garden.request(g, &by)).await?;
    Ok(())
}

/// Why the bot said (or did not say) something
#[poise::command(slash_command, ephemeral)]
async fn why(
    ctx: Context<'_>,
    #[description = "Message link (… → Copy Message Link); empty: my latest decisions here"]
    message: Option<String>,
) -> Result<(), Error> {
    let channel = ChannelId(ctx.channel_id().get());
    let mut text = commands::why::why(&ctx.data().app, guild(&ctx), channel, message.as_deref());
    if text.chars().count() > 1990 {
        text = text.chars().take(1980).collect::<String>() + "\n…";
    }
    ctx.say(text).await?;
    Ok(())
}
