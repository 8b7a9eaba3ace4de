//! `ambient usage`: every model call, its tokens and outcome; and totals.
//! Calls older than `storage.retention.usageDays` are shown as the daily
//! totals they were rolled into, first, and counted in the totals.

use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use serde_json::json;

use super::out::outln;
use crate::settings::Role;
use crate::store::usage::UsageFilter;

pub(crate) fn usage(
    settings: Option<&Path>,
    since: &str,
    role: Option<&str>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let loaded = super::load_lenient(settings)?;
    let store = super::journal::open_existing(&loaded.settings.storage.data_dir)?;
    let now = chrono::Utc::now();
    let roles = match role {
        // Speech to text is not a model role, but its calls are usage too.
        Some("transcribe") => vec!["transcribe".to_string()],
        Some(r) => {
            let r = Role::parse(r).ok_or_else(|| {
                anyhow!(
                    "--role: {r:?} is not a role; use reply, ambient, reflex, extract or transcribe"
                )
            })?;
            vec![r.as_str().to_string()]
        }
        None => Vec::new(),
    };
    let filter = UsageFilter {
        since: Some(crate::when::parse_since(since, now).map_err(|e| anyhow!("--since: {e}"))?),
        roles,
        ..Default::default()
    };
    let records = store.usage().usage_list(&filter, None)?;
    // Days whose calls storage.retention.usageDays rolled up into totals.
    let days = store.usage().usage_daily_totals(&filter)?;
    if as_json {
        for d in &days {
            outln!(
                "{}",
                json!({
                    "day": d.day, "role": d.role, "source": d.source,
                    "guild": d.guild.map(|g| g.to_string()), "provider": d.provider, "model": d.model,
                    "pay_per_token": d.pay_per_token, "calls": d.calls, "ok": d.ok, "refused": d.refused,
                    "tokens_in": d.tokens_in, "tokens_out": d.tokens_out, "latency_ms": d.latency_ms,
                })
            )?;
        }
        for r in &records {
            outln!(
                "{}",
                json!({
                    "id": r.id, "at": r.at.to_rfc3339(), "role": r.role, "source": r.source,
                    "guild": r.guild.map(|g| g.to_string()), "provider": r.provider, "model": r.model,
                    "pay_per_token": r.pay_per_token, "tokens_in": r.tokens_in, "tokens_out": r.tokens_out,
                    "latency_ms": r.latency_ms, "outcome": r.outcome, "detail": r.detail,
                })
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if records.is_empty() && days.is_empty() {
        outln!("No model calls since {since}.")?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<19}  {:<7}  {:<7}  {:<28}  {:>8}  {:>8}  {:>7}  outcome",
        "time",
        "role",
        "source",
        "provider:model",
        "in",
        "out",
        "ms"
    )?;
    for d in &days {
        outln!(
            "{:<19}  {:<7}  {:<7}  {:<28}  {:>8}  {:>8}  {:>7}  {} calls, {} ok (daily total)",
            d.day,
            d.role,
            d.source,
            format!("{}:{}", d.provider, d.model),
            d.tokens_in,
            d.tokens_out,
            d.latency_ms / d.calls.max(1),
            d.calls,
            d.ok
        )?;
    }
    for r in &records {
        let mut line = format!(
            "{:<19}  {:<7}  {:<7}  {:<28}  {:>8}  {:>8}  {:>7}  {}",
            r.at.format("%Y-%m-%d %H:%M:%S"),
            r.role,
            r.source,
            format!("{}:{}", r.provider, r.model),
            r.tokens_in,
            r.tokens_out,
            r.latency_ms,
            r.outcome
        );
        if !r.detail.is_empty() {
            line.push_str(&format!(" — {}", r.detail));
        }
        outln!("{line}")?;
    }
    let (tin, tout): (u64, u64) = records
        .iter()
        .map(|r| (r.tokens_in, r.tokens_out))
        .chain(days.iter().map(|d| (d.tokens_in, d.tokens_out)))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let ok = records.iter().filter(|r| r.outcome == "ok").count() as u64
        + days.iter().map(|d| d.ok).sum::<u64>();
    let calls = records.len() as u64 + days.iter().map(|d| d.calls).sum::<u64>();
    outln!("{calls} calls ({ok} ok), {tin} tokens in, {tout} tokens out")?;
    Ok(ExitCode::SUCCESS)
}
