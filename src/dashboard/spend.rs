//! Spend: tokens and calls per model role per day for the last 30 days (two
//! stacked SVG charts), the budget bars, the rate-limit headroom, and the
//! garden's next wake. The budget's shares, the token line, the models, the
//! providers and the garden come from the status widget's own functions,
//! so the dashboard and `ambient status` never disagree.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::chart::{self, Chart, Series};
use super::problem::Problem;
use super::view::{compact, stamp};
use super::{Dash, Site, Who};
use crate::commands::{garden, status};
use crate::settings::Role;
use crate::store::usage::{DailyUsage, UsageFilter};

/// Days the charts cover, today included.
pub(crate) const DAYS: i64 = 30;

/// Roles in the order they stack, bottom-up; anything else stacks last.
const ROLES: &[&str] = &["reply", "ambient", "reflex", "extract", "transcribe"];

#[derive(Serialize)]
struct View {
    tokens: Chart,
    calls: Chart,
    totals: Vec<RoleTotal>,
    budget: Meter,
    budget_of: String,
    caps: Vec<Meter>,
    usage_line: String,
    headroom: Vec<String>,
    providers: Vec<String>,
    models: Vec<String>,
    garden: Vec<String>,
}

#[derive(Serialize)]
struct RoleTotal {
    role: String,
    class: String,
    calls: u64,
    refused: u64,
    tokens_in: String,
    tokens_out: String,
}

/// A bar of shares of a whole, in percent (the SVG is 100 units wide).
#[derive(Serialize)]
struct Meter {
    name: String,
    /// (class, x, width, title) of each share.
    parts: Vec<(String, u32, u32, String)>,
    caption: String,
}

pub(crate) async fn page(State(d): State<Arc<Dash>>, Extension(who): Extension<Who>) -> Response {
    super::blocking(d, move |d| {
        let frame = d.frame("spend", "Spend", &who);
        match view(&d.site) {
            Ok(v) => d.views.page("spend.html", &frame, &v),
            Err(e) => d.bad_input(&who, &e),
        }
    })
    .await
}

fn view(site: &Site) -> Result<View, Problem> {
    let now = site.now();
    let days = last_days(now);
    let first = days[0]
        .parse::<chrono::NaiveDate>()?
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc();
    let rows = site
        .store
        .usage
        .usage_by_day(first)
        .map_err(Problem::Usage)?;
    let settings = site.settings.global();
    let snapshot = site.executive.snapshot();
    let (user, ambient, whole) = status::budget_shares(&snapshot, &settings);
    let budget_of = if snapshot.tokens_limit.is_some() && snapshot.tokens_remaining.is_some() {
        format!(
            "of the {} tokens in the ambient role's rate-limit window",
            compact(whole)
        )
    } else {
        let share = (site.executive.leases().map(|l| l.status_line()))
            .or_else(|| crate::executive::budget::share_line(&settings))
            .map_or_else(String::new, |l| format!("; {l}"));
        format!(
            "of {} tokens a day (budget.dailyTokens.reply + ambient{share}), last 24 h",
            compact(whole)
        )
    };
    Ok(View {
        tokens: chart::stacked(
            "tokens-per-day",
            "Tokens per day and role, last 30 days",
            &days,
            &series(&days, &rows, |r| r.tokens_in + r.tokens_out),
            "tokens",
        ),
        calls: chart::stacked(
            "calls-per-day",
            "Model calls per day and role, last 30 days",
            &days,
            &series(&days, &rows, |r| r.calls),
            "calls",
        ),
        totals: totals(&rows),
        budget: shares_meter("people and the bot", user, ambient, whole),
        budget_of,
        caps: caps(site, now)?,
        usage_line: status::usage_line(&snapshot),
        headroom: headroom(site, now),
        providers: status::provider_lines(&site.executive),
        models: status::model_lines(&site.executive),
        garden: garden::widget(&site.store.garden, None, settings.garden.enabled, now),
    })
}

/// The last [`DAYS`] UTC days, oldest first, as `YYYY-MM-DD`.
fn last_days(now: DateTime<Utc>) -> Vec<String> {
    (0..DAYS)
        .rev()
        .map(|back| (now - Duration::days(back)).format("%Y-%m-%d").to_string())
        .collect()
}

fn role_class(role: &str) -> String {
    if ROLES.contains(&role) {
        format!("role-{role}")
    } else {
        "role-other".into()
    }
}

fn role_order(role: &str) -> usize {
    ROLES.iter().position(|r| *r == role).unwrap_or(ROLES.len())
}

/// One series per role seen, in stacking order, with `value` per day.
fn series(days: &[String], rows: &[DailyUsage], value: impl Fn(&DailyUsage) -> u64) -> Vec<Series> {
    let mut by_role: BTreeMap<(usize, String), Vec<u64>> = BTreeMap::new();
    for r in rows {
        let Some(i) = days.iter().position(|d| *d == r.day) else {
            continue;
        };
        by_role
            .entry((role_order(&r.role), r.role.clone()))
            .or_insert_with(|| vec![0; days.len()])[i] += value(r);
    }
    by_role
        .into_iter()
        .map(|((_, name), values)| Series {
            class: role_class(&name),
            name,
            values,
        })
        .collect()
}

fn totals(rows: &[DailyUsage]) -> Vec<RoleTotal> {
    let mut by_role: BTreeMap<(usize, String), (u64, u64, u64, u64)> = BTreeMap::new();
    for r in rows {
        let t = by_role
            .entry((role_order(&r.role), r.role.clone()))
            .or_default();
        t.0 += r.calls;
        t.1 += r.refused;
        t.2 += r.tokens_in;
        t.3 += r.tokens_out;
    }
    by_role
        .into_iter()
        .map(|((_, role), (calls, refused, tin, tout))| RoleTotal {
            class: role_class(&role),
            role,
            calls,
            refused,
            tokens_in: compact(tin),
            tokens_out: compact(tout),
        })
        .collect()
}

/// People's share, the bot's and what is left, as the status widget's bar has them.
fn shares_meter(name: &str, user: u64, ambient: u64, whole: u64) -> Meter {
    if whole == 0 {
        return Meter {
            name: name.into(),
            parts: Vec::new(),
            caption: "no daily cap".into(),
        };
    }
    let (p, b, left) = status::budget_percents(user, ambient, whole);
    Meter {
        name: name.into(),
        parts: vec![
            (
                "people".into(),
                0,
                p,
                format!("people: {user} tokens ({p}%)"),
            ),
            (
                "bot".into(),
                p,
                b,
                format!("the bot: {ambient} tokens ({b}%)"),
            ),
            ("left".into(), p + b, left, format!("left: {left}%")),
        ],
        caption: format!("people {p}% · the bot {b}% · left {left}%"),
    }
}

/// One cap's use in the last 24 h.
fn cap_meter(name: String, used: u64, cap: u64, key: &str) -> Meter {
    if cap == 0 {
        return Meter {
            name,
            parts: Vec::new(),
            caption: format!("{} tokens in 24 h, no cap ({key})", compact(used)),
        };
    }
    let (u, _, left) = status::budget_percents(used, 0, cap);
    Meter {
        name,
        parts: vec![
            ("used".into(), 0, u, format!("used: {used} tokens ({u}%)")),
            ("left".into(), u, left, format!("left: {left}%")),
        ],
        caption: format!(
            "{} of {} tokens in 24 h ({u}%; {key})",
            compact(used),
            compact(cap)
        ),
    }
}

/// The caps a call is checked against before it is made (`executive::budget`).
fn caps(site: &Site, now: DateTime<Utc>) -> Result<Vec<Meter>, Problem> {
    let settings = site.settings.global();
    let since = Some(now - Duration::hours(24));
    let used = |f: UsageFilter| site.store.usage.usage_tokens(&f).map_err(Problem::Usage);
    let autonomous: Vec<String> = Role::ALL
        .iter()
        .filter(|r| r.is_autonomous())
        .map(|r| r.as_str().to_string())
        .collect();
    let mut out: Vec<Meter> = Role::ALL
        .iter()
        .map(|role| {
            Ok(cap_meter(
                format!("{role} role"),
                used(UsageFilter {
                    since,
                    roles: vec![role.as_str().into()],
                    ..Default::default()
                })?,
                role.daily_budget(&settings),
                &format!("budget.dailyTokens.{role}"),
            ))
        })
        .collect::<Result<_, Problem>>()?;
    out.push(cap_meter(
        "pay-per-token, the bot's own work".into(),
        used(UsageFilter {
            since,
            roles: autonomous.clone(),
            pay_per_token: Some(true),
            ..Default::default()
        })?,
        settings.process_cap(settings.budget.pay_per_token_daily_tokens),
        "budget.payPerTokenDailyTokens",
    ));
    for (guild, name) in site.guilds().map_err(Problem::Servers)? {
        out.push(cap_meter(
            format!("{name}: the bot's own work"),
            used(UsageFilter {
                since,
                roles: autonomous.clone(),
                guild: Some(guild),
                ..Default::default()
            })?,
            settings.budget.guild_autonomous_daily_tokens,
            "budget.guildAutonomousDailyTokens",
        ));
    }
    Ok(out)
}

/// What the providers said is left in their rate-limit windows.
fn headroom(site: &Site, now: DateTime<Utc>) -> Vec<String> {
    let snapshot = site.executive.snapshot();
    let mut lines = Vec::new();
    match (snapshot.tokens_remaining, snapshot.tokens_limit) {
        (Some(left), Some(limit)) => lines.push(format!(
            "ambient role's provider: {left} of {limit} tokens left in its window{}",
            snapshot
                .window_reset
                .map(|r| format!(", resets {}", crate::when::until(r, now)))
                .unwrap_or_default()
        )),
        _ if site.app.is_none() => lines.push(
            "the providers' windows are known to the running bot only (they come with its replies)"
                .into(),
        ),
        _ => lines.push("no provider has told its rate-limit window yet".into()),
    }
    for (name, state) in site.executive.provider_states() {
        let Some(l) = state.limits.filter(|l| l.has_any()) else {
            continue;
        };
        let part = |what: &str, left: Option<u64>, limit: Option<u64>| match (left, limit) {
            (Some(left), Some(limit)) => Some(format!("{what} {left}/{limit}")),
            _ => None,
        };
        let parts: Vec<String> = [
            part("requests", l.requests_remaining, l.requests_limit),
            part("tokens", l.tokens_remaining, l.tokens_limit),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !parts.is_empty() {
            lines.push(format!(
                "{name}: {} left{}",
                parts.join(", "),
                l.observed_at
                    .map(|t| format!(" (as of {})", stamp(t)))
                    .unwrap_or_default()
            ));
        }
    }
    lines.push(format!(
        "rate limited {} time(s) in the last hour",
        snapshot.rate_limited_last_hour
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_days_end_today() {
        let now = "2026-03-31T10:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let days = last_days(now);
        assert_eq!(days.len(), 30);
        assert_eq!(days[0], "2026-03-02");
        assert_eq!(days[29], "2026-03-31");
    }

    #[test]
    fn the_meters_share_the_status_bars_figures() {
        let m = shares_meter("x", 45, 12, 100);
        let widths: Vec<u32> = m.parts.iter().map(|p| p.2).collect();
        assert_eq!(widths, vec![45, 12, 43]);
        assert_eq!(m.caption, "people 45% · the bot 12% · left 43%");
        assert!(shares_meter("x", 1, 1, 0).parts.is_empty());
        let c = cap_meter("r".into(), 150, 100, "k");
        assert_eq!(c.parts[0].2, 100);
        assert_eq!(c.parts[1].2, 0);
    }
}
