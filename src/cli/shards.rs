//! `ambient shards plan --total N [--shards RANGE]`: the shard of every
//! server this data directory holds under N shards, and with a range, which
//! of them must move out before a process runs that range here — the plan
//! of a reshard, carried out with `ambient guild export / import / remove`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::json;

use super::out::{OutputError, outln};
use crate::settings::shards::MAX_TOTAL_SHARDS;
use crate::store::Store;
use crate::vocab::shards::{ShardRange, Shards, shard_of};

pub(crate) fn plan(
    settings: Option<&Path>,
    total: u32,
    range: Option<&str>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    if total == 0 || total > MAX_TOTAL_SHARDS {
        bail!("--total must be between 1 and {MAX_TOTAL_SHARDS}, got {total}");
    }
    let range = match range {
        None => None,
        Some(r) => {
            let r: ShardRange = r.parse().map_err(|e| anyhow::anyhow!("--shards: {e}"))?;
            if let Some(why) = r.past(total, &format!("--total {total}")) {
                bail!("--shards: {why}");
            }
            Some(Shards { range: r, total })
        }
    };
    let loaded = super::load_lenient(settings)?;
    let dir = PathBuf::from(&loaded.settings.storage.data_dir);
    let store =
        Store::open(&dir).with_context(|| format!("cannot open the store in {}", dir.display()))?;
    let guilds = store.guilds().stored_guilds()?;
    let rows: Vec<(String, String, u32, bool)> = guilds
        .iter()
        .map(|g| {
            let shard = shard_of(g.id, total);
            let moves = range.is_some_and(|p| !p.owns(g.id));
            (
                g.id.to_string(),
                g.name.clone().unwrap_or_default(),
                shard,
                moves,
            )
        })
        .collect();
    if as_json {
        let list: Vec<_> = rows
            .iter()
            .map(|(id, name, shard, moves)| {
                json!({"guild": id, "name": name, "shard": shard, "moves": moves})
            })
            .collect();
        let doc = json!({
            "total": total,
            "shards": range.map(|p| p.range.to_string()),
            "guilds": list,
        });
        outln!("{doc}")?;
        return Ok(ExitCode::SUCCESS);
    }
    print_plan(&rows, total, range)?;
    Ok(ExitCode::SUCCESS)
}

fn print_plan(
    rows: &[(String, String, u32, bool)],
    total: u32,
    range: Option<Shards>,
) -> Result<(), OutputError> {
    outln!(
        "{} server(s) in this data directory, over {total} shard(s):",
        rows.len()
    )?;
    let id_w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(5);
    let name_w = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    outln!("  {:<id_w$}  {:<name_w$}  shard", "guild", "name")?;
    for (id, name, shard, moves) in rows {
        let verdict = match range {
            None => String::new(),
            Some(_) if *moves => format!("  moves to shard {shard}'s process"),
            Some(_) => "  stays".into(),
        };
        outln!("  {id:<id_w$}  {name:<name_w$}  {shard:<5}{verdict}")?;
    }
    if let Some(plan) = range {
        let moving: Vec<&String> = rows.iter().filter(|r| r.3).map(|r| &r.0).collect();
        if moving.is_empty() {
            outln!("Nothing moves: {plan} owns every server here.")?;
        } else {
            outln!(
                "{} server(s) must move out before {plan} runs here: for each, \
                 `ambient guild export GUILD > GUILD.json`, `ambient guild import GUILD.json` on the \
                 owner's data directory, then `ambient guild remove GUILD --yes` here.",
                moving.len()
            )?;
        }
    }
    Ok(())
}
