//! `memory_search`: the executive's tool for looking something up in memory,
//! confined to the guild (or DM) it runs for.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Memory;
use super::search::Reader;
use crate::executive::tools::{Tool, ToolError, TypedTool, typed};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// What to look for, in a few words.
    query: String,
    /// How many results at most (default 5).
    #[serde(default)]
    limit: Option<u8>,
}

pub(crate) struct MemorySearch {
    memory: Arc<Memory>,
    reader: Reader,
}

#[async_trait]
impl TypedTool for MemorySearch {
    type Args = SearchArgs;

    fn name(&self) -> &'static str {
        "memory_search"
    }

    fn description(&self) -> String {
        "Search what you remember about this server and its people.".into()
    }

    async fn run(&self, args: SearchArgs) -> Result<String, ToolError> {
        let limit = args.limit.unwrap_or(5).clamp(1, 20) as usize;
        let found = self.memory.search(self.reader, &args.query, limit);
        if found.is_empty() {
            return Ok(format!("nothing remembered about {:?}", args.query));
        }
        Ok(found
            .iter()
            .map(|s| {
                format!(
                    "[{} {} {}] {}",
                    s.fact.short_id(),
                    s.fact.kind,
                    s.fact.importance.as_str(),
                    s.fact.content
                )
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

pub(crate) fn memory_search(memory: &Arc<Memory>, reader: Reader) -> Arc<dyn Tool> {
    typed(MemorySearch {
        memory: memory.clone(),
        reader,
    })
}
