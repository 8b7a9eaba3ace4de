//! Slash commands (poise). One file per feature; each command only parses
//! its arguments and shows what `crate::commands` returns.

mod ambient;
mod discovery;
mod feeds;
mod impulses;
mod memory;
mod settings;
mod voice;

use std::sync::Arc;

use crate::app::App;
use crate::commands::Asker;
use crate::ids::{ChannelId, GuildId, UserId};

/// Shared services, available to every command as `ctx.data()`.
pub(crate) struct Data {
    pub app: Arc<App>,
}

pub(crate) type Error = Box<dyn std::error::Error + Send + Sync>;
pub(crate) type Context<'a> = poise::Context<'a, Data, Error>;

pub(crate) fn all() -> Vec<poise::Command<Data, Error>> {
    vec![
        settings::settings(),
        ambient::ambient(),
        discovery::discovery(),
        feeds::feeds(),
        memory::memory(),
        impulses::task(),
        impulses::schedule(),
        impulses::idea(),
        voice::voice(),
    ]
}

/// Errors people can act on get a plain ephemeral answer; the rest are logged.
pub(crate) async fn on_error(err: poise::FrameworkError<'_, Data, Error>) {
    match err {
        poise::FrameworkError::MissingUserPermissions {
            ctx,
            missing_permissions,
            ..
        } => {
            let what = missing_permissions
                .map(|p| p.to_string())
                .unwrap_or_else(|| "the needed permissions".into());
            // Harmless: a courtesy answer; Discord then shows its own "did not respond".
            let _ = ctx
                .send(
                    poise::CreateReply::default()
                        .ephemeral(true)
                        .content(format!("Only members with **{what}** can do that.")),
                )
                .await;
        }
        poise::FrameworkError::Command { error, ctx, .. } => {
            tracing::error!(command = %ctx.command().qualified_name, error = %error, "slash command failed");
            // Harmless: a courtesy answer; the error is logged above.
            let _ = ctx
                .send(
                    poise::CreateReply::default()
                        .ephemeral(true)
                        .content("Sorry, that did not work; the error is in the bot's log."),
                )
                .await;
        }
        other => {
            if let Err(e) = poise::builtins::on_error(other).await {
                tracing::error!(error = %e, "while handling a command error");
            }
        }
    }
}

/// Who runs the command, and whether they may manage the server.
pub(super) async fn asker(ctx: &Context<'_>) -> Asker {
    let manage = match ctx.author_member().await {
        Some(m) => m
            .permissions
            .is_some_and(|p| p.manage_guild() || p.administrator()),
        // In a DM everything is about the one person there.
        None => true,
    };
    Asker {
        guild: ctx.guild_id().map(|g| GuildId(g.get())),
        channel: ChannelId(ctx.channel_id().get()),
        user: UserId(ctx.author().id.get()),
        name: ctx
            .author()
            .global_name
            .clone()
            .unwrap_or_else(|| ctx.author().name.clone()),
        manage,
    }
}

pub(super) async fn say(ctx: Context<'_>, mut text: String) -> Result<(), Error> {
    if text.chars().count() > 1990 {
        text = text.chars().take(1980).collect::<String>() + "\n…";
    }
    ctx.say(text).await?;
    Ok(())
}

/// Whether `user` owns the bot: listed in `discord.ownerUserIds` (read now,
/// so a reload can name new owners), or the Discord application's owner (or
/// an admin of the team that owns it), asked of Discord at the time.
pub(super) async fn is_owner(ctx: &Context<'_>, user: UserId) -> bool {
    let app = &ctx.data().app;
    if app.settings.global().discord.owner_user_ids.contains(&user) {
        return true;
    }
    let info = match ctx.http().get_current_application_info().await {
        Ok(info) => info,
        Err(e) => {
            tracing::warn!(error = %e, "cannot ask Discord who owns the application");
            return false;
        }
    };
    let is = |id: serenity::all::UserId| id.get() == user.get();
    info.owner.as_ref().is_some_and(|o| is(o.id))
        || info.team.as_ref().is_some_and(|t| {
            is(t.owner_user_id)
                || t.members.iter().any(|m| {
                    is(m.user.id)
                        && m.role == serenity::all::TeamMemberRole::Admin
                        && m.membership_state == serenity::all::MembershipState::Accepted
                })
        })
}

/// The guild a command runs in (commands here are guild-only).
fn guild(ctx: &Context<'_>) -> Option<crate::ids::GuildId> {
    ctx.guild_id().map(|g| crate::ids::GuildId(g.get()))
}
