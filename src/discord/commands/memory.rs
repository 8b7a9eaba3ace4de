//! `/memory …` — what the bot remembers here, under people's control.

use serenity::all::CreateAttachment;

use super::{Context, Error, asker, say};
use crate::commands::memory;

/// What the bot remembers
#[poise::command(
    slash_command,
    subcommands("remember", "search", "list", "forget", "forget_me", "export"),
    subcommand_required
)]
pub(crate) async fn memory(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

/// Tell the bot something to remember (about you, or with Manage Server about the whole server)
#[poise::command(slash_command, ephemeral)]
async fn remember(
    ctx: Context<'_>,
    #[description = "What to remember"] text: String,
    #[description = "decision, fact, preference, error-resolution, task-update, behavior-guidance"]
    r#type: Option<String>,
    #[description = "high, medium or low"] importance: Option<String>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(
        ctx,
        memory::remember(
            &ctx.data().app,
            &who,
            &text,
            r#type.as_deref(),
            importance.as_deref(),
        ),
    )
    .await
}

/// Search what the bot remembers here
#[poise::command(slash_command, ephemeral)]
async fn search(
    ctx: Context<'_>,
    #[description = "What to look for"] query: String,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, memory::search(&ctx.data().app, &who, &query)).await
}

/// The latest things the bot remembers here
#[poise::command(slash_command, ephemeral)]
async fn list(
    ctx: Context<'_>,
    #[description = "Only this type"] r#type: Option<String>,
    #[description = "Only since: 24h, 7d, or a date"] since: Option<String>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(
        ctx,
        memory::list(&ctx.data().app, &who, r#type.as_deref(), since.as_deref()),
    )
    .await
}

/// Forget one memory (yours, or any with Manage Server)
#[poise::command(slash_command, ephemeral)]
async fn forget(
    ctx: Context<'_>,
    #[description = "The memory's id (the first 8 characters are enough)"] id: String,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(ctx, memory::forget(&ctx.data().app, &who, &id)).await
}

/// Forget everything the bot knows about you, in every server and DM
#[poise::command(slash_command, ephemeral, rename = "forget-me")]
async fn forget_me(
    ctx: Context<'_>,
    #[description = "Also erase the text of your messages the bot stored"] messages: Option<bool>,
) -> Result<(), Error> {
    let who = asker(&ctx).await;
    say(
        ctx,
        memory::forget_me(&ctx.data().app, &who, messages.unwrap_or(false)),
    )
    .await
}

/// Export this server's memory as a JSON file (Manage Server)
#[poise::command(slash_command, ephemeral)]
async fn export(ctx: Context<'_>) -> Result<(), Error> {
    let who = asker(&ctx).await;
    match memory::export(&ctx.data().app, &who) {
        Ok(json) => {
            ctx.send(
                poise::CreateReply::default()
                    .content("This server's memory:")
                    .attachment(CreateAttachment::bytes(json.into_bytes(), "memory.json")),
            )
            .await?;
            Ok(())
        }
        Err(e) => say(ctx, e.to_string()).await,
    }
}
