//! `ambient journal`: what the bot decided, and why.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use serde_json::json;

use super::out::outln;
use crate::ids::GuildId;
use crate::journal::format_line;
use crate::store::Store;
use crate::vocab::journal::{Filter, Kind};

pub(crate) fn journal(
    settings: Option<&Path>,
    since: &str,
    kinds: Option<&str>,
    guild: Option<u64>,
    limit: Option<usize>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let now = chrono::Utc::now();
    let filter = Filter {
        since: Some(crate::when::parse_since(since, now).map_err(|e| anyhow!("--since: {e}"))?),
        kinds: match kinds {
            Some(k) => Kind::parse_list(k).map_err(|e| anyhow!("--type: {e}"))?,
            None => Vec::new(),
        },
        guild: guild.map(GuildId),
        limit,
        ..Default::default()
    };
    let store = open_existing(&loaded.settings.storage.data_dir)?;
    let entries = store.journal().journal_query(&filter)?;
    if entries.is_empty() && !as_json {
        outln!("The journal has no entries since {since}.")?;
    }
    for e in &entries {
        let channel = e
            .channel
            .and_then(|c| store.messages().channel_name(c).ok().flatten());
        if as_json {
            outln!(
                "{}",
                json!({
                    "id": e.id,
                    "at": e.at.to_rfc3339(),
                    "type": e.kind.as_str(),
                    "guild": e.guild.map(|g| g.to_string()),
                    "channel": e.channel.map(|c| c.to_string()),
                    "channel_name": channel,
                    "message": e.message.map(|m| m.to_string()),
                    "model_call": e.model_call,
                    "summary": e.summary,
                    "reason": e.reason,
                    "salience": e.salience,
                    "data": e.data,
                })
            )?;
        } else {
            outln!("{}", format_line(e, channel.as_deref()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the store for reading; a missing data directory is an error, not a new empty store.
pub(super) fn open_existing(data_dir: &str) -> anyhow::Result<Store> {
    let path = PathBuf::from(data_dir);
    if !path.join(crate::store::DB_FILE).exists() {
        return Err(anyhow!(
            "no database in {} (storage.dataDir): the bot has not run here yet",
            path.display()
        ));
    }
    Store::open(&path).with_context(|| format!("cannot open the store in {}", path.display()))
}
