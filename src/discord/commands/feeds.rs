//! `/feeds add|list|remove|edit|test|pause|resume|preview` — the feeds that
//! post every new item in this server (Manage Server; answers to the asker only).

use serenity::all::ChannelId as DiscordChannel;

use super::{Context, Error, guild, say};
use crate::commands::feeds;
use crate::feeds::manage::{AddRequest, Changes};
use crate::ids::{ChannelId, UserId};

/// How a subscription recognises an item it delivered before.
#[derive(Debug, Clone, Copy, poise::ChoiceParameter)]
pub(crate) enum DedupeChoice {
    #[name = "guid (then link, then title)"]
    Guid,
    #[name = "link (then title)"]
    Link,
    #[name = "title"]
    Title,
}

impl DedupeChoice {
    fn word(self) -> &'static str {
        match self {
            DedupeChoice::Guid => "guid",
            DedupeChoice::Link => "link",
            DedupeChoice::Title => "title",
        }
    }
}

/// Feeds that post every new item in a channel, thread or forum
#[poise::command(
    slash_command,
    subcommands("add", "list", "remove", "edit", "test", "pause", "resume", "preview"),
    subcommand_required,
    guild_only,
    default_member_permissions = "MANAGE_GUILD"
)]
pub(crate) async fn feeds(_: Context<'_>) -> Result<(), Error> {
    Ok(())
}

/// Post every new item of a feed in a channel, a thread or a forum
#[allow(clippy::too_many_arguments)] // one per option Discord shows
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn add(
    ctx: Context<'_>,
    #[description = "An RSS or Atom URL, r/NAME, youtube:CHANNEL_ID, x:HANDLE or hn"]
    #[max_length = 2000]
    url: String,
    #[description = "Where items go: a text, announcement or forum channel, or a thread"]
    #[channel_types("Text", "News", "Forum", "PublicThread", "PrivateThread", "NewsThread")]
    channel: DiscordChannel,
    #[description = "In a text channel: start a thread from each item's message"]
    thread_per_item: Option<bool>,
    #[description = "e.g. **{title}**\\n{link}; also {author} {summary} {published} {feed} {categories}"]
    #[max_length = 2000]
    template: Option<String>,
    #[description = "e.g. include title: release; exclude any: /(?i)sponsored/"]
    #[max_length = 3000]
    filters: Option<String>,
    #[description = "Add a card with the title, link, summary and author"] embed: Option<bool>,
    #[description = "How an item already posted is recognised (default: guid)"] dedupe: Option<
        DedupeChoice,
    >,
    #[description = "Post the newest N items now (default 0: nothing old)"]
    #[min = 0]
    #[max = 20]
    backfill: Option<u32>,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    ctx.defer_ephemeral().await?;
    let req = AddRequest {
        feed: url,
        channel: ChannelId(channel.get()),
        thread_per_item: thread_per_item.unwrap_or(false),
        template,
        filters,
        embed: embed.unwrap_or(false),
        dedupe: dedupe.map(|d| d.word().to_string()),
        backfill: backfill.unwrap_or(0),
    };
    let text = feeds::add(&ctx.data().app, g, UserId(ctx.author().id.get()), req).await;
    say(ctx, text).await
}

/// This server's feed subscriptions: where each posts, how it is doing
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn list(ctx: Context<'_>) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    say(ctx, feeds::list(&ctx.data().app, g)).await
}

/// Stop a subscription and forget what it remembered
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn remove(
    ctx: Context<'_>,
    #[description = "The subscription's id from /feeds list"] id: i64,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    say(ctx, feeds::remove(&ctx.data().app, g, id)).await
}

/// Change a subscription's template, filters, card or dedupe rule
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn edit(
    ctx: Context<'_>,
    #[description = "The subscription's id from /feeds list"] id: i64,
    #[description = "A new template, e.g. **{title}**\\n{link}"]
    #[max_length = 2000]
    template: Option<String>,
    #[description = "New filters; none: every item passes"]
    #[max_length = 3000]
    filters: Option<String>,
    #[description = "Add a card with each item"] embed: Option<bool>,
    #[description = "How an item already posted is recognised"] dedupe: Option<DedupeChoice>,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    let changes = Changes {
        template,
        filters,
        embed,
        dedupe: dedupe.map(|d| d.word().to_string()),
    };
    say(ctx, feeds::edit(&ctx.data().app, g, id, changes)).await
}

/// Show the feed's latest item as the subscription would post it (to you only)
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn test(
    ctx: Context<'_>,
    #[description = "The subscription's id from /feeds list"] id: i64,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    ctx.defer_ephemeral().await?;
    say(ctx, feeds::test(&ctx.data().app, g, id).await).await
}

/// Stop posting a subscription's items until it is resumed
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn pause(
    ctx: Context<'_>,
    #[description = "The subscription's id from /feeds list"] id: i64,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    let by = UserId(ctx.author().id.get());
    say(ctx, feeds::pause(&ctx.data().app, g, by, id)).await
}

/// Post a paused subscription's new items again
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn resume(
    ctx: Context<'_>,
    #[description = "The subscription's id from /feeds list"] id: i64,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    say(ctx, feeds::resume(&ctx.data().app, g, id)).await
}

/// Which of the feed's latest 20 items the filters pass
#[poise::command(slash_command, ephemeral, required_permissions = "MANAGE_GUILD")]
async fn preview(
    ctx: Context<'_>,
    #[description = "The subscription's id from /feeds list"] id: i64,
    #[description = "Filters to try instead of the subscription's own"]
    #[max_length = 3000]
    filters: Option<String>,
) -> Result<(), Error> {
    let Some(g) = guild(&ctx) else { return Ok(()) };
    ctx.defer_ephemeral().await?;
    let text = feeds::preview(&ctx.data().app, g, id, filters.as_deref()).await;
    say(ctx, text).await
}
