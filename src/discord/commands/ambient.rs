//! `/ambient status`, `/ambient why`, `/ambient garden`, courtesy:
//! `/ambient hush`, `/ambient unhush`, `/ambient me`, and `/ambient pair`.

use serenity::all::CreateAllowedMentions;

use super::{Context, Error, asker, guild, say};
use crate::commands;
use crate::ids::ChannelId;

/// What the bot is up to here
#[poise::command(
    slash_command,
    subcommands("status", "why", "garden", "hush", "unhush", "me", "pair"),
    subcommand_required,
    guild_only
)]
pub(crate) async fn ambient(_: Context<'_>) -> Result<(), Error> {
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

/// Be quiet here for a while: no messages nobody asked for
#[poise::command(slash_command)]
async fn hush(
    ctx: Context<'_>,
    #[description = "How long: 30m, 2h, \"an hour\" (default 1 hour; over 3 hours needs Manage Server)"]
    duration: Option<String>,
    #[description = "here (default), another channel (#name, Manage Server), or server for all of it"]
    channel: Option<String>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    let said = commands::courtesy::hush(
        &ctx.data().app,
        &who,
        duration.as_deref().unwrap_or(""),
        channel.as_deref().unwrap_or(""),
    );
    answer_in_channel(ctx, said).await
}

/// End a hush early (whoever asked for it, or Manage Server)
#[poise::command(slash_command)]
async fn unhush(
    ctx: Context<'_>,
    #[description = "here (default), another channel (#name), or server"] channel: Option<String>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    let said = commands::courtesy::unhush(&ctx.data().app, &who, channel.as_deref().unwrap_or(""));
    answer_in_channel(ctx, said).await
}

/// A hush is confirmed once, for everyone in the channel to see; a refusal
/// only to the asker. Neither pings anyone.
async fn answer_in_channel(
    ctx: Context<'_>,
    said: Result<String, commands::courtesy::HushRefused>,
) -> Result<(), Error> {
    let (text, private) = match said {
        Ok(text) => (text, false),
        Err(why) => (why.to_string(), true),
    };
    let reply = poise::CreateReply::default()
        .content(text)
        .ephemeral(private)
        .allowed_mentions(CreateAllowedMentions::new());
    ctx.send(reply).await?;
    Ok(())
}

/// Your boundaries with the bot, on every server: show them, or set one
#[poise::command(slash_command, ephemeral)]
async fn me(
    ctx: Context<'_>,
    #[description = "no-ping, no-unprompted, no-memory, no-voice or no-voice-answers (empty: show yours)"]
    boundary: Option<String>,
    #[description = "on (default) or off"] state: Option<String>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    let text = commands::courtesy::me(
        &ctx.data().app,
        &who,
        boundary.as_deref().unwrap_or(""),
        state.as_deref().unwrap_or(""),
    );
    say(ctx, text).await
}

/// Let someone talk to the bot in direct messages: the code it gave them (owners only)
#[poise::command(slash_command, ephemeral)]
async fn pair(
    ctx: Context<'_>,
    #[description = "The pairing code the bot gave them, like K7QX2M"] code: String,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, commands::access::pair(&ctx.data().app, &who, &code)).await
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
