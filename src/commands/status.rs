//! What the bot can do right now and what it has spent: the text behind
//! `ambient status` (and, with Discord, `/ambient status`).

use crate::executive::{Executive, Role, UsageSnapshot};

/// One line per model role: the endpoints serving it, or why none can.
pub fn model_lines(exec: &Executive) -> Vec<String> {
    Role::ALL
        .into_iter()
        .map(|role| {
            let r = exec.resolve(role);
            if r.endpoints.is_empty() {
                return format!(
                    "{:<8} unavailable: {}",
                    role.as_str(),
                    r.why_unavailable(role)
                );
            }
            let names: Vec<String> = r
                .endpoints
                .iter()
                .map(|e| format!("{}:{}", e.provider_name(), e.model))
                .collect();
            format!("{:<8} {}", role.as_str(), names.join(", then "))
        })
        .collect()
}

/// Providers that are failing or cooling down.
pub fn provider_lines(exec: &Executive) -> Vec<String> {
    exec.provider_states()
        .into_iter()
        .filter(|(_, s)| s.consecutive_failures > 0 || s.cooling_until.is_some())
        .map(|(name, s)| {
            let mut line = format!("{name}: {} failure(s) in a row", s.consecutive_failures);
            if let Some(until) = s.cooling_until {
                line.push_str(&format!(", skipped until {}", until.format("%H:%M UTC")));
            }
            if let Some(e) = s.last_error {
                line.push_str(&format!(" — {e}"));
            }
            line
        })
        .collect()
}

pub fn usage_line(s: &UsageSnapshot) -> String {
    let mut line = format!(
        "last 24 h: people {} tokens, the bot's own work {} ({:.0}%); {:.0} tokens/min from people in the last hour",
        s.user_tokens_24h,
        s.ambient_tokens_24h,
        s.ambient_share * 100.0,
        s.user_tokens_per_minute
    );
    if s.rate_limited_last_hour > 0 {
        line.push_str(&format!(
            "; rate limited {} time(s) in the last hour",
            s.rate_limited_last_hour
        ));
    }
    line
}

/// A ten-cell bar: people ▓, the bot's own work ▒, remaining ░.
pub fn budget_bar(user: u64, ambient: u64, cap: u64) -> String {
    if cap == 0 {
        return "no daily cap".into();
    }
    let cells = |n: u64| ((n.min(cap) * 10 + cap / 2) / cap) as usize;
    let u = cells(user);
    let a = cells(ambient).min(10 - u);
    let rest = 10 - u - a;
    let pct = |n: u64| (n.min(cap) * 100 / cap) as u32;
    format!(
        "{}{}{} people {}% · bot {}% · left {}%",
        "▓".repeat(u),
        "▒".repeat(a),
        "░".repeat(rest),
        pct(user),
        pct(ambient),
        100u32.saturating_sub(pct(user) + pct(ambient))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_bar_shows_three_shares() {
        assert_eq!(
            budget_bar(45, 12, 100),
            "▓▓▓▓▓▒░░░░ people 45% · bot 12% · left 43%"
        );
        assert_eq!(budget_bar(0, 0, 0), "no daily cap");
        assert_eq!(
            budget_bar(200, 50, 100),
            "▓▓▓▓▓▓▓▓▓▓ people 100% · bot 50% · left 0%"
        );
    }
}

/// The info widget for one server, as an embed: a headline and named fields.
pub struct GuildReport {
    pub headline: String,
    pub fields: Vec<(String, String)>,
}

pub fn guild_report(app: &crate::app::App, guild: Option<crate::ids::GuildId>) -> GuildReport {
    use crate::journal::{Filter, Kind};
    use crate::when::ago;

    let settings = app.settings.for_guild(guild);
    let now = app.clock.now();
    let exec = &app.executive;
    let engine = guild.map(|g| app.initiative.status(g)).unwrap_or_default();
    let headline = match exec.unavailable(crate::executive::Role::Reply) {
        Some(why) => format!("● paused — {why}"),
        None if engine.thinking => "● running — thinking about an ambient post".to_string(),
        None => {
            let active = app.spine.active.active_channels(guild, now).len();
            if active > 0 {
                format!("● running — in conversation in {active} channel(s)")
            } else {
                "● idle — listening".to_string()
            }
        }
    };
    let posts = app
        .journal
        .query(&Filter {
            since: Some(now - chrono::Duration::hours(24)),
            kinds: vec![Kind::InitiativePost],
            guild,
            ..Default::default()
        })
        .map(|e| e.len())
        .unwrap_or(0);
    let pool = settings.permissions.replies.discovery_channel_ids.len();
    let initiative = if !settings.initiative.text.enabled {
        "off (initiative.text.enabled)".to_string()
    } else if pool == 0 {
        "nowhere to post: no channels in permissions.replies.discoveryChannelIds".to_string()
    } else {
        let mut text = format!(
            "{pool} channel(s), eagerness {}%",
            settings.initiative.text.eagerness
        );
        if let Some(next) = engine.next_consideration {
            text.push_str(&format!("; next look at {}", next.format("%H:%M UTC")));
        }
        if let Some(gate) = &engine.last_gate {
            text.push_str(&format!("\nlast stopped because {gate}"));
        }
        text
    };
    let pending = match &engine.pending {
        Some(p) => format!(
            "\"{}\" (revision {}, held since {}, expires {})",
            p.draft.chars().take(200).collect::<String>(),
            p.revision,
            ago(p.created_at, now),
            p.expires_at.format("%H:%M UTC")
        ),
        None => "none".to_string(),
    };
    let snapshot = exec.snapshot();
    let (user, ambient, cap) = budget_shares(&snapshot, &settings);
    let models = model_lines(exec)
        .into_iter()
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    GuildReport {
        headline,
        fields: vec![
            ("Initiative".into(), initiative),
            ("Pending thought".into(), pending),
            (
                "Posts today".into(),
                format!("{posts} of {}", settings.initiative.text.max_posts_per_day),
            ),
            (
                "Garden".into(),
                super::garden::widget(&app.store, guild, settings.garden.enabled, now).join("\n"),
            ),
            ("Budget".into(), budget_bar(user, ambient, cap)),
            ("Models".into(), format!("```\n{models}\n```")),
        ],
    }
}

/// (people's tokens, the bot's tokens, the whole) for the budget bar: the
/// provider's rate-limit window when it told us one, else the daily caps.
pub fn budget_shares(s: &UsageSnapshot, settings: &crate::settings::Settings) -> (u64, u64, u64) {
    if let (Some(limit), Some(remaining)) = (s.tokens_limit, s.tokens_remaining) {
        let used = limit.saturating_sub(remaining);
        let ambient = (used as f64 * s.ambient_share).round() as u64;
        return (used - ambient.min(used), ambient.min(used), limit);
    }
    let caps = &settings.budget.daily_tokens;
    let cap = caps.ambient + caps.reply;
    (s.user_tokens_24h, s.ambient_tokens_24h, cap)
}
