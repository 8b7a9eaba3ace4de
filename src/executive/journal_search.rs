//! `journal_search`: the executive reading its own journal, to answer
//! "what did you do today?" and "why did you do that?" — confined to what
//! the people in the channel asking may read (see [`Audience`]).

use async_trait::async_trait;
use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

use super::tools::{Tool, ToolError, TypedTool, typed};
use crate::clock::SharedClock;
use crate::executive::Stores;
use crate::journal::Journal;
use crate::journal::summary::{self, Audience};
use crate::vocab::journal::Kind;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// "today", "yesterday", or a window like "2h", "3d" (default: today).
    #[serde(default)]
    since: Option<String>,
    /// Entry types, comma-separated: reply, initiative_post, initiative_skip, reflex,
    /// impulse, memory, garden, route, outcome, gate (default: what you did, not routing).
    #[serde(default, rename = "type")]
    kinds: Option<String>,
    /// Only entries whose summary or reason contains this text.
    #[serde(default)]
    text: Option<String>,
}

pub(crate) struct JournalSearch {
    journal: Journal,
    store: Stores,
    clock: SharedClock,
    audience: Audience,
    tz: Tz,
}

#[async_trait]
impl TypedTool for JournalSearch {
    type Args = SearchArgs;

    fn name(&self) -> &'static str {
        "journal_search"
    }

    fn description(&self) -> String {
        "Read your own journal: what you did and why (answers, posts, decisions to stay quiet, reflexes, tasks). \
         Use it to answer \"what did you do today?\" or \"why did you do that?\"."
            .into()
    }

    async fn run(&self, args: SearchArgs) -> Result<String, ToolError> {
        let now = self.clock.now();
        // The tool's error arm is text for the model (see `executive::tools::Tool`).
        let since = summary::parse_window(args.since.as_deref().unwrap_or("today"), now, self.tz)
            .map_err(|e| e.to_string())?;
        let kinds = match args
            .kinds
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            Some(list) => Kind::parse_list(list).map_err(|e| e.to_string())?,
            None => summary::DEEDS.to_vec(),
        };
        let filter = self
            .audience
            .filter(since, kinds, args.text.filter(|t| !t.trim().is_empty()));
        let entries = self.audience.read(&self.journal, &filter, 30);
        if entries.is_empty() {
            return Ok("no journal entries match".into());
        }
        Ok(entries
            .iter()
            .map(|e| summary::line(e, &self.store.messages, self.tz))
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// For what the people in one channel (or DM) may read.
pub(crate) fn journal_search(
    journal: &Journal,
    store: &Stores,
    clock: &SharedClock,
    audience: Audience,
    tz: Tz,
) -> Arc<dyn Tool> {
    typed(JournalSearch {
        journal: journal.clone(),
        store: store.clone(),
        clock: clock.clone(),
        audience,
        tz,
    })
}
