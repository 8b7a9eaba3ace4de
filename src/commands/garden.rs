//! The garden, as people see it: the seed's status widget (`/ambient
//! status`, `ambient status`), `/ambient garden`, and `ambient garden log`.
//!
//! A server's view shows only that server's queue and the cycles that
//! tended it: a summary the model wrote about one server never shows in
//! another. A memory-pass-only cycle names no server and its figures add up
//! every server's, so a server sees just that one ran, without its numbers.

use chrono::{DateTime, Utc};

use crate::commands::Stores;
use crate::garden::read_status;
use crate::ids::GuildId;
use crate::store::GardenStore;
use crate::store::garden::{Cycle, CycleStatus};
use crate::when::{ago, until};

/// The widget's lines: state, queue, last cycle, next wake. `guild: None` is the operator's view.
pub fn widget(
    store: &GardenStore,
    guild: Option<GuildId>,
    enabled: bool,
    now: DateTime<Utc>,
) -> Vec<String> {
    if !enabled {
        return vec!["○ off (garden.enabled)".into()];
    }
    let status = read_status(store);
    let mut lines = Vec::new();
    let state = match status.state.as_str() {
        "running" if !status.detail.is_empty() => {
            format!("● running ({})", shown_detail(&status.detail, guild))
        }
        "paused" => format!("● paused ({})", status.detail),
        "" => "● idle".into(),
        other => format!("● {other}"),
    };
    lines.push(state);
    let queue: Vec<_> = store
        .queue_open()
        .unwrap_or_default()
        .into_iter()
        .filter(|q| guild.is_none() || q.guild == guild)
        .collect();
    lines.push(match queue.first() {
        Some(next) => format!(
            "queue: {} item(s) (next: {})",
            queue.len(),
            cut(&next.context, 60)
        ),
        None => "queue: empty".into(),
    });
    let last = store.cycles(50).unwrap_or_default().into_iter().find(|c| {
        c.status != CycleStatus::Running
            && (guild.is_none() || c.guild.is_none() || c.guild == guild)
    });
    lines.push(match last {
        Some(c) => format!(
            "last: {} — {}",
            ago(c.ended_at.unwrap_or(c.started_at), now),
            if guild.is_some() && c.guild.is_none() {
                neutral_summary(&c)
            } else {
                last_summary(&c)
            }
        ),
        None => "last: never".into(),
    });
    if let Some(next) = status.next_wake {
        let how = if status.adaptive_moved {
            " (adaptive)"
        } else {
            ""
        };
        lines.push(format!(
            "next: ~{}{how}",
            until(next, now).trim_start_matches("in ")
        ));
    }
    lines
}

fn shown_detail(detail: &str, guild: Option<GuildId>) -> &str {
    // "tending <server>" names a server; another server only learns that the garden is busy.
    if guild.is_some() && detail.starts_with("tending ") {
        "tending memory"
    } else {
        detail
    }
}

/// `[incomplete] ` and the like; nothing for a completed cycle.
fn status_mark(c: &Cycle) -> String {
    if c.status == CycleStatus::Completed {
        String::new()
    } else {
        format!("[{}] ", c.status.as_str())
    }
}

fn last_summary(c: &Cycle) -> String {
    format!("{}{}", status_mark(c), cut(&c.summary, 120))
}

/// A memory-pass-only cycle, as a server sees it: no other server's figures.
fn neutral_summary(c: &Cycle) -> String {
    format!("{}a memory pass only, across all servers", status_mark(c))
}

fn cut(text: &str, n: usize) -> String {
    let t: String = text.chars().take(n).collect();
    if t.len() < text.len() {
        format!("{t}…")
    } else {
        t
    }
}

/// Every stored cycle, newest first, with its plan and transcript (`ambient garden log`).
pub fn log(store: &Stores, limit: usize, only: Option<i64>, full: bool) -> String {
    let cycles: Vec<Cycle> = match only {
        Some(id) => store.garden.cycle(id).ok().flatten().into_iter().collect(),
        None => store.garden.cycles(limit).unwrap_or_default(),
    };
    if cycles.is_empty() {
        return "no garden cycles yet".into();
    }
    let mut out = String::new();
    for c in cycles {
        let guild = c
            .guild
            .map_or("no server (memory pass only)".to_string(), |g| {
                store
                    .messages
                    .guild_name(g)
                    .ok()
                    .flatten()
                    .map_or(g.to_string(), |n| format!("{n} ({g})"))
            });
        out.push_str(&format!(
            "cycle {} — {} — {} — trigger: {}\n  started {}, {}\n  summary: {}\n  memories modified {}, compactions {}, tokens {} in / {} out{}\n",
            c.id,
            c.status.as_str(),
            guild,
            c.trigger,
            c.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
            c.ended_at.map_or("not ended".to_string(), |e| format!("ended {}", e.format("%H:%M:%S"))),
            c.summary,
            c.memories_modified,
            c.compactions,
            c.tokens_in,
            c.tokens_out,
            if c.rate_limited { ", rate limited" } else { "" },
        ));
        if let Some(p) = &c.proactive_work {
            out.push_str(&format!("  prepared: {p}\n"));
        }
        if let Some(n) = c.next_wake_at {
            out.push_str(&format!(
                "  next wake: {}\n",
                n.format("%Y-%m-%d %H:%M UTC")
            ));
        }
        if !c.todos.is_empty() {
            out.push_str("  plan:\n");
            for t in &c.todos {
                out.push_str(&format!(
                    "    [{}] {}\n",
                    if t.done { "x" } else { " " },
                    t.text
                ));
            }
        }
        if full {
            for s in &c.steps {
                out.push_str(&format!(
                    "    {} {:<6} {}\n",
                    s.at.format("%H:%M:%S"),
                    s.kind,
                    cut(&s.text.replace('\n', " "), 300)
                ));
            }
        } else if !c.steps.is_empty() {
            out.push_str(&format!(
                "  {} transcript step(s) (--cycle {} shows them)\n",
                c.steps.len(),
                c.id
            ));
        }
    }
    out
}
