//! `/voice join|leave|optout|optin`.

use serenity::all::{ChannelType, GuildChannel};

use super::{Context, Error, asker, say};
use crate::commands::voice;
use crate::ids::ChannelId;

/// The voice channel the caller is in, from the cache.
fn callers_channel(ctx: &Context<'_>) -> Option<ChannelId> {
    let guild = ctx.guild()?;
    guild
        .voice_states
        .get(&ctx.author().id)
        .and_then(|v| v.channel_id)
        .map(|c| ChannelId(c.get()))
}

/// Listen in a voice channel and transcribe it into a text channel
#[poise::command(
    slash_command,
    subcommands("join", "leave", "optout", "optin"),
    subcommand_required,
    guild_only
)]
pub(crate) async fn voice(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

/// Join your voice channel (or the one you name) and transcribe it into this channel
#[poise::command(slash_command, ephemeral)]
async fn join(
    ctx: Context<'_>,
    #[description = "A voice channel (default: the one you are in)"]
    #[channel_types("Voice", "Stage")]
    channel: Option<GuildChannel>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    let requested = channel
        .filter(|c| matches!(c.kind, ChannelType::Voice | ChannelType::Stage))
        .map(|c| ChannelId(c.id.get()));
    let current = callers_channel(&ctx);
    ctx.defer_ephemeral().await?;
    say(
        ctx,
        voice::join(&ctx.data().app, &who, requested, current).await,
    )
    .await
}

/// Leave the voice channel and stop transcribing
#[poise::command(slash_command, ephemeral)]
async fn leave(ctx: Context<'_>) -> Result<(), Error> {
    let who = asker(&ctx).await;
    let current = callers_channel(&ctx);
    say(ctx, voice::leave(&ctx.data().app, &who, current).await).await
}

/// Never record or transcribe my voice (on any server)
#[poise::command(slash_command, ephemeral)]
async fn optout(ctx: Context<'_>) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, voice::opt_out(&ctx.data().app, &who)).await
}

/// Let the bot transcribe my voice again
#[poise::command(slash_command, ephemeral)]
async fn optin(ctx: Context<'_>) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, voice::opt_in(&ctx.data().app, &who)).await
}
