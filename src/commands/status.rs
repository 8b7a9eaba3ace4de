//! The status widget: what the bot is doing, what it can do and what it has
//! spent. One function ([`widget`]) behind `ambient status`, the console's
//! `/status` and `/ambient status` in Discord, so all three say the same.

use chrono::{DateTime, Utc};

use super::garden;
use crate::app::App;
use crate::attention::Place;
use crate::clock::Chance;
use crate::commands::Stores;
use crate::executive::{Executive, UsageSnapshot};
use crate::ids::{ChannelId, GuildId};
use crate::initiative::gates::{self, Verdict};
use crate::settings::Role;
use crate::settings::{Settings, SettingsService};
use crate::speech::MESSAGE_LIMIT;
use crate::vocab::pending::PendingThought;

/// The endpoints serving each role that can run, one line each; then the
/// roles that cannot, grouped by why (one missing key reads once, not four times).
pub(crate) fn model_lines(exec: &Executive) -> Vec<String> {
    let serving = Role::ALL.into_iter().filter_map(|role| {
        let r = exec.resolve(role);
        let names: Vec<String> = r
            .endpoints
            .iter()
            .map(|e| format!("{}:{}", e.provider_name(), e.model))
            .collect();
        let line = format!("model {:<8} {}", role.as_str(), names.join(", then "));
        (!names.is_empty()).then_some(line)
    });
    serving.chain(exec.unavailable_summary()).collect()
}

/// Providers that are failing or cooling down.
pub(crate) fn provider_lines(exec: &Executive) -> Vec<String> {
    exec.provider_states()
        .into_iter()
        .filter(|(_, s)| s.consecutive_failures > 0 || s.cooling_until.is_some())
        .map(|(name, s)| {
            let mut line = format!("{name}: {} failure(s) in a row", s.consecutive_failures);
            if let Some(until) = s.cooling_until {
                line.push_str(&format!(", skipped until {}", until.format("%H:%M UTC")));
            }
            if let Some(e) = s.last_error {
                line.push_str(&format!(" — {}", cut(&e, 100)));
            }
            line
        })
        .collect()
}

pub(crate) fn usage_line(s: &UsageSnapshot) -> String {
    if let Some(unread) = &s.unread {
        return unread.clone();
    }
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
pub(crate) fn budget_bar(user: u64, ambient: u64, cap: u64) -> String {
    if cap == 0 {
        return "no daily cap".into();
    }
    let cells = |n: u64| ((n.min(cap) * 10 + cap / 2) / cap) as usize;
    let u = cells(user);
    let a = cells(ambient).min(10 - u);
    let rest = 10 - u - a;
    let (people, bot, left) = budget_percents(user, ambient, cap);
    format!(
        "{}{}{} people {people}% · bot {bot}% · left {left}%",
        "▓".repeat(u),
        "▒".repeat(a),
        "░".repeat(rest),
    )
}

/// The budget bar's three shares in whole percent: people, the bot, left
/// (`cap` > 0). The dashboard draws the same figures as the text bar.
pub(crate) fn budget_percents(user: u64, ambient: u64, cap: u64) -> (u32, u32, u32) {
    let pct = |n: u64| (n.min(cap) * 100 / cap.max(1)) as u32;
    let (u, a) = (pct(user), pct(ambient));
    (u, a, 100u32.saturating_sub(u + a))
}

/// Everything the status widget reads. `ambient status` builds it from the
/// store alone; a running bot adds what only it knows (`running`).
pub struct Sources<'a> {
    pub store: Stores,
    pub settings: &'a SettingsService,
    pub executive: &'a Executive,
    pub now: DateTime<Utc>,
    /// The running bot, for a consideration in flight and live conversations.
    pub running: Option<&'a App>,
}

impl<'a> Sources<'a> {
    pub fn of(app: &'a App) -> Self {
        Self {
            store: app.stores(),
            settings: &app.settings,
            executive: &app.executive,
            now: app.clock.now(),
            running: Some(app),
        }
    }
}

/// The one status widget behind the console's `/status`, `/ambient status`
/// and `ambient status`: the garden, the budget, tokens spent, models, then
/// the initiative of `guild` — or, for the operator (`None`), of every known
/// server under its name. Each line is short: a server's view fits one
/// Discord message.
pub fn widget(src: &Sources<'_>, guild: Option<GuildId>) -> Vec<String> {
    let settings = src.settings.for_guild(guild);
    let mut lines: Vec<String> =
        garden::widget(&src.store.garden, guild, settings.garden.enabled, src.now)
            .into_iter()
            .map(|l| format!("garden {l}"))
            .collect();
    let snapshot = src.executive.snapshot();
    let (user, ambient, whole) = budget_shares(&snapshot, &settings);
    lines.push(match &snapshot.unread {
        Some(unread) => format!("budget {unread}"),
        None => format!("budget {}", budget_bar(user, ambient, whole)),
    });
    if let Some(leases) = src.executive.leases() {
        lines.push(format!("budget: {}", leases.status_line()));
    } else if let Some(share) = crate::executive::budget::share_line(&settings) {
        lines.push(format!("budget: {share}"));
    }
    lines.push(format!("tokens {}", usage_line(&snapshot)));
    lines.extend(model_lines(src.executive));
    lines.extend(
        provider_lines(src.executive)
            .into_iter()
            .map(|l| format!("provider {l}")),
    );
    match guild {
        Some(g) => lines.extend(initiative_lines(src, g)),
        None => {
            // Unreadable servers are said so: "no server known yet" would be a guess.
            match src.store.messages.known_guilds() {
                Err(e) => lines.push(format!("initiative: store read failed: the servers: {e}")),
                Ok(known) if known.is_empty() => {
                    lines.push("initiative: no server known yet".into())
                }
                Ok(known) => {
                    for (g, name) in known {
                        lines.push(format!("server {name} ({g}):"));
                        lines.extend(initiative_lines(src, g));
                    }
                }
            }
            lines.extend(departed_lines(src));
        }
    }
    lines
}

/// The servers that removed the bot, and when their data goes.
fn departed_lines(src: &Sources<'_>) -> Vec<String> {
    let days = src.settings.global().storage.retention.departed_guild_days;
    let departures = match src.store.guilds.departures() {
        Ok(d) => d,
        Err(e) => return vec![format!("departed servers: ? (store read failed: {e})")],
    };
    departures
        .iter()
        .map(|d| {
            let due = d.at + chrono::Duration::days(i64::from(days));
            let when = if due > src.now {
                format!(
                    "its data will be deleted on {} unless ambient is invited back",
                    crate::store::departed::removal_date(d.at, days)
                )
            } else {
                "its data is deleted once the running bot has heard from Discord".into()
            };
            format!(
                "server {} removed the bot on {}; {when}",
                d.shown(),
                d.at.format("%Y-%m-%d")
            )
        })
        .collect()
}

/// The widget as one Discord message: cut at a line, never past 2,000 characters.
pub fn discord_text(lines: &[String]) -> String {
    let mut text = String::new();
    for line in lines {
        if text.chars().count() + line.chars().count() + 1 > MESSAGE_LIMIT - 2 {
            text.push('…');
            break;
        }
        text.push_str(line);
        text.push('\n');
    }
    text.trim_end().to_string()
}

/// Next look, held thought, posts today vs the daily cap: one server's initiative.
fn initiative_lines(src: &Sources<'_>, guild: GuildId) -> Vec<String> {
    let settings = src.settings.for_guild(Some(guild));
    let now = src.now;
    let pending = src
        .store
        .initiative
        .pending_thought(guild)
        .ok()
        .flatten()
        .filter(|p| !p.is_expired(now));
    let posts = match crate::initiative::posts_last_24h(&src.store.journal, guild, now) {
        Ok(n) => n.to_string(),
        Err(e) => format!("? (store read failed: {e})"),
    };
    let held = match &pending {
        Some(p) => format!(
            "\"{}\" (revision {}, since {}, expires {})",
            cut(&p.draft, 80),
            p.revision,
            p.created_at.format("%H:%M UTC"),
            p.expires_at.format("%H:%M UTC")
        ),
        None => "none".into(),
    };
    let mut lines = vec![
        format!(
            "initiative: {}",
            next_look(src, &settings, guild, pending.as_ref())
        ),
        format!("held thought: {held}"),
        format!(
            "posts today: {posts}/{} (last 24 h)",
            settings.initiative.text.max_posts_per_day
        ),
    ];
    lines.extend(courtesy_lines(src, &settings, guild));
    lines
}

/// Quiet hours, when set (and whether it is in them now), and the hushes in force.
fn courtesy_lines(src: &Sources<'_>, settings: &Settings, guild: GuildId) -> Vec<String> {
    let spec = settings.initiative.quiet_hours.trim();
    let tz = settings.zone();
    let mut lines = Vec::new();
    if !spec.is_empty() {
        lines.push(match crate::courtesy::quiet_until(settings, src.now) {
            Some(until) => format!(
                "quiet hours {spec:?} ({tz}): quiet until {}",
                crate::courtesy::local(until, tz, src.now)
            ),
            None => format!("quiet hours {spec:?} ({tz}): not now"),
        });
    }
    match src.store.people.hushes(guild, src.now) {
        Ok(hushes) => lines.extend(
            hushes
                .iter()
                .map(|h| crate::courtesy::hushed(&src.store.messages, settings, h, src.now).reason),
        ),
        // "Not hushed" would be a guess: the status says it cannot tell.
        Err(e) => lines.push(format!("hushes: store read failed: the hushes: {e}")),
    }
    lines
}

/// When the engine looks next, or why it will not. The gates decide, so
/// the status asks them rather than restating them; a throwaway die stands
/// in for the eagerness roll, which only ever delays a look to a later tick.
pub(crate) fn next_look(
    src: &Sources<'_>,
    settings: &Settings,
    guild: GuildId,
    pending: Option<&PendingThought>,
) -> String {
    if src
        .running
        .is_some_and(|app| app.initiative.is_thinking(guild))
    {
        return "thinking about a post now".into();
    }
    let t = &settings.initiative.text;
    let reads = match gates::Reads::read(&(&src.store).into(), settings, guild, src.now) {
        Ok(r) => r,
        Err(refused) => return format!("cannot tell: {}", refused.reason),
    };
    let last = reads.last_considered;
    let active = src
        .running
        .map(|app| app.spine.active.active_channels(Some(guild), src.now))
        .unwrap_or_default();
    let role = crate::initiative::decider(settings);
    let closed: Vec<ChannelId> = gates::eligible_pool(settings, &reads.guild_channels)
        .into_iter()
        .filter(|c| !deliverable(src, settings, guild, *c))
        .collect();
    let verdict = gates::evaluate(
        &gates::Inputs {
            settings,
            guild_channels: &reads.guild_channels,
            now: src.now,
            posts_last_24h: reads.posts_last_24h,
            last_considered: last,
            pending,
            active: &active,
            closed: &closed,
            model_unavailable: src.executive.unavailable(role),
            over_budget: src.executive.over_budget(
                &crate::executive::CallContext::new(role, Some(guild)),
                src.executive.likely_call_tokens(role),
            ),
            server_hush: reads.room.server_hush,
            hushed: &reads.room.hushed,
            last_human: reads.room.last_human,
            unsettled: reads.unsettled,
            unanswered: &reads.unanswered,
        },
        &Chance::seeded(0),
    );
    // A held thought, the cooldown and the dice only move the look to a later tick.
    if let Verdict::Stop { gate, reason } = &verdict
        && !matches!(*gate, "pending" | "cooldown" | "eagerness")
    {
        return format!("no next look: {reason}");
    }
    let minutes = |m: u32| chrono::Duration::minutes(i64::from(m));
    let next = match (pending, last) {
        (Some(p), _) => p.updated_at + minutes(t.revisit_minutes),
        (None, Some(l)) => l + minutes(t.min_minutes_between_posts),
        (None, None) => src.now,
    };
    if next <= src.now {
        format!("next look at the next tick (every {}s)", t.tick_seconds)
    } else {
        format!("next look at {}", next.format("%H:%M UTC"))
    }
}

/// Whether a post could be sent in `channel` now, as the engine's gate asks
/// it. The running bot also remembers sends the platform refused; the store
/// alone knows the hourly cap.
fn deliverable(src: &Sources<'_>, settings: &Settings, guild: GuildId, channel: ChannelId) -> bool {
    if let Some(app) = src.running {
        let place = Place {
            guild: Some(guild),
            channel,
        };
        return app.speech.deliverable(place).is_ok();
    }
    // A store that cannot be read says nothing against it, as before.
    !matches!(
        crate::speech::hourly_room(&src.store.messages, settings, channel, src.now),
        Err(crate::speech::SpeechError::Undeliverable(_))
    )
}

fn cut(text: &str, n: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= n {
        return one_line;
    }
    one_line.chars().take(n).collect::<String>() + "…"
}

/// (people's tokens, the bot's tokens, the whole) for the budget bar: the
/// provider's rate-limit window when it told us one, else the daily caps.
pub(crate) fn budget_shares(
    s: &UsageSnapshot,
    settings: &crate::settings::Settings,
) -> (u64, u64, u64) {
    if let (Some(limit), Some(remaining)) = (s.tokens_limit, s.tokens_remaining) {
        let used = limit.saturating_sub(remaining);
        let ambient = (used as f64 * s.ambient_share).round() as u64;
        return (used - ambient.min(used), ambient.min(used), limit);
    }
    // This process's caps: its share of the bot's when it runs part of it.
    let cap = Role::Ambient.daily_budget(settings) + Role::Reply.daily_budget(settings);
    (s.user_tokens_24h, s.ambient_tokens_24h, cap)
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

    #[test]
    fn discord_text_cuts_at_a_line_within_one_message() {
        let lines: Vec<String> = (0..40)
            .map(|i| format!("{i:02} {}", "y".repeat(97)))
            .collect();
        let text = discord_text(&lines);
        assert!(text.chars().count() <= 2000, "{}", text.chars().count());
        assert!(text.ends_with("\n…"), "an ellipsis says lines are missing");
        assert!(text.lines().rev().nth(1).unwrap().starts_with("18 "));
        let short = vec!["a".to_string(), "b".to_string()];
        assert_eq!(discord_text(&short), "a\nb");
    }
}
