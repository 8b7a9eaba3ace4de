//! Slash commands (poise). One file per feature; each command only parses
//! its arguments and shows what `crate::commands` returns.

mod ambient;
mod discovery;
mod memory;
mod settings;

use std::sync::Arc;

use crate::app::App;

/// Shared services, available to every command as `ctx.data()`.
pub struct Data {
    pub app: Arc<App>,
}

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Context<'a> = poise::Context<'a, Data, Error>;

pub fn all() -> Vec<poise::Command<Data, Error>> {
    vec![
        settings::settings(),
        ambient::ambient(),
        discovery::discovery(),
        memory::memory(),
    ]
}

/// Errors people can act on get a plain ephemeral answer; the rest are logged.
pub async fn on_error(err: poise::FrameworkError<'_, Data, Error>) {
    match err {
        poise::FrameworkError::MissingUserPermissions {
            ctx,
            missing_permissions,
            ..
        } => {
            let what = missing_permissions
                .map(|p| p.to_string())
                .unwrap_or_else(|| "the needed permissions".into());
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

/// The guild a command runs in (commands here are guild-only).
fn guild(ctx: &Context<'_>) -> Option<crate::ids::GuildId> {
    ctx.guild_id().map(|g| crate::ids::GuildId(g.get()))
}
