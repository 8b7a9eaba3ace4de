//! `add_task`: how a promise made in conversation ("I'll remind you
//! tomorrow") becomes a task that actually happens.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Impulses, NewTask};
use crate::executive::tools::{Tool, ToolError, TypedTool, typed};
use crate::ids::{ChannelId, GuildId, UserId};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddTaskArgs {
    /// What you will do, e.g. "remind Alice to water the plants".
    text: String,
    /// When: "in 10m", "in 2 hours", "tomorrow 9:00", "18:30" or "2026-03-01 14:00".
    due: String,
    /// For a plain reminder: the exact message to post when it is due. Leave out
    /// if you want to think about it then.
    #[serde(default)]
    message: Option<String>,
}

pub(crate) struct AddTask {
    impulses: Arc<Impulses>,
    guild: Option<GuildId>,
    channel: ChannelId,
    context: String,
    by: String,
    /// The person the turn answers: the task is theirs.
    owner: UserId,
}

#[async_trait]
impl TypedTool for AddTask {
    type Args = AddTaskArgs;

    fn name(&self) -> &'static str {
        "add_task"
    }

    fn description(&self) -> String {
        "Whenever you promise to do something later (remind someone, follow up, check back), record it here so it \
         really happens; it fires once, in this channel, when due."
            .into()
    }

    async fn run(&self, args: AddTaskArgs) -> Result<String, ToolError> {
        let task = self
            .impulses
            .add_task(NewTask {
                guild: self.guild,
                channel: Some(self.channel),
                text: args.text,
                due: args.due,
                message: args.message.filter(|m| !m.trim().is_empty()),
                context: self.context.clone(),
                created_by: self.by.clone(),
                owner: Some(self.owner),
            })
            // The tool's error arm is text for the model (see `executive::tools::Tool`).
            .map_err(|e| e.to_string())?;
        Ok(format!(
            "task {} recorded, due {}",
            task.short_id(),
            task.due.format("%Y-%m-%d %H:%M UTC")
        ))
    }
}

pub(crate) fn add_task(
    impulses: &Arc<Impulses>,
    guild: Option<GuildId>,
    channel: ChannelId,
    context: String,
    owner: UserId,
) -> Arc<dyn Tool> {
    typed(AddTask {
        impulses: impulses.clone(),
        guild,
        channel,
        context,
        by: "the bot (a promise in conversation)".into(),
        owner,
    })
}
