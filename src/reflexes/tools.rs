//! `reflex_create` and `reflex_disable`: the executive extending itself.
//!
//! Offered only to people trusted with it here — the operator
//! (`discord.ownerUserIds`), or anyone in a guild whose admins turned on
//! `reflexes.allowSelfCreate`. A new reflex goes through the same validation
//! as a file on disk and acts only in the guild it was made for.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Reflexes;
use crate::executive::tools::{Tool, ToolError, TypedTool, typed};
use crate::ids::GuildId;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateArgs {
    /// The whole reflex definition in YAML: name, description, level (0-3),
    /// priority, trigger (pattern + extract, event, or classifier) and pipeline.
    yaml: String,
}

pub(crate) struct ReflexCreate {
    reflexes: Arc<Reflexes>,
    guild: GuildId,
    by: String,
}

#[async_trait]
impl TypedTool for ReflexCreate {
    type Args = CreateArgs;

    fn name(&self) -> &'static str {
        "reflex_create"
    }

    fn description(&self) -> String {
        format!(
            "Create (or replace) a reflex for this server: a cheap YAML pipeline that runs before you are woken. \
             Actions: {}. Use {{{{var}}}} for variables ({} and the trigger's extract names). Example:\n\
             name: coffee\ndescription: React to coffee talk\nlevel: 0\ntrigger:\n  pattern: \"(?i)\\\\bcoffee\\\\b\"\npipeline:\n  - action: react\n    emoji: \"☕\"",
            super::def::ACTIONS.join(", "),
            super::def::BUILTIN_VARS.join(", ")
        )
    }

    async fn run(&self, args: CreateArgs) -> Result<String, ToolError> {
        self.reflexes
            .create(self.guild, &args.yaml, &self.by)
            .map_err(|e| ToolError(e.to_string()))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DisableArgs {
    /// The reflex's name.
    name: String,
    /// Why it should stop, in a sentence.
    reason: String,
}

pub(crate) struct ReflexDisable {
    reflexes: Arc<Reflexes>,
    guild: GuildId,
    by: String,
}

#[async_trait]
impl TypedTool for ReflexDisable {
    type Args = DisableArgs;

    fn name(&self) -> &'static str {
        "reflex_disable"
    }

    fn description(&self) -> String {
        let names: Vec<String> = self
            .reflexes
            .loaded()
            .reflexes
            .iter()
            .filter(|r| r.guild.is_none() || r.guild == Some(self.guild))
            .map(|r| r.name.clone())
            .collect();
        format!(
            "Stop a reflex from acting in this server. Reflexes here: {}.",
            names.join(", ")
        )
    }

    async fn run(&self, args: DisableArgs) -> Result<String, ToolError> {
        self.reflexes
            .disable(Some(self.guild), args.name.trim(), &args.reason, &self.by)
            .map_err(|e| ToolError(e.to_string()))
    }
}

/// Both tools, for one guild and the person who asked.
pub(crate) fn for_guild(reflexes: &Arc<Reflexes>, guild: GuildId, by: &str) -> Vec<Arc<dyn Tool>> {
    vec![
        typed(ReflexCreate {
            reflexes: reflexes.clone(),
            guild,
            by: by.to_string(),
        }),
        typed(ReflexDisable {
            reflexes: reflexes.clone(),
            guild,
            by: by.to_string(),
        }),
    ]
}
