//! Budgets: refuse a model call *before* it is made when it would exceed a cap.
//!
//! Caps are per rolling 24 hours, counted from the usage records:
//! - `budget.dailyTokens.<role>`: tokens of that role;
//! - `budget.guildAutonomousDailyTokens`: one guild's autonomous tokens
//!   (ambient, reflex, extract);
//! - `budget.payPerTokenDailyTokens`: autonomous tokens spent on
//!   pay-per-token endpoints.
//!
//! The role caps and the pay-per-token cap are the whole bot's: a process
//! running part of its shards gets its share of them
//! (`Settings::process_cap`), so N processes never spend more than one
//! would. A guild lives in one process, so the guild cap stays whole.
//!
//! A call's cost is not known in advance, so it is estimated as the prompt's
//! size plus the most it may answer; a call is refused when the tokens
//! already used plus that estimate pass the cap. A cap of 0 means no cap.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::CallContext;
use super::endpoints::{Endpoint, Role};
use crate::settings::Settings;
use crate::store::usage::UsageFilter;
use crate::store::{Store, StoreError};

const AUTONOMOUS: [Role; 3] = [Role::Ambient, Role::Reflex, Role::Extract];

/// Why a call is refused before it is sent: which cap, how much is used, and
/// the setting that holds it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BudgetRefusal {
    /// The usage records could not be read, so no cap can be checked.
    #[error("cannot read usage: {0}")]
    Usage(#[source] Arc<StoreError>),
    #[error(
        "the {role} role has used {used} of its {cap} tokens in the last 24 h and this call may need {estimate} \
         (budget.dailyTokens.{role}{share})"
    )]
    Role {
        role: Role,
        used: u64,
        cap: u64,
        estimate: u64,
        /// ", this process's share 2/4" when the cap is split ([`share_note`]).
        share: String,
    },
    #[error(
        "this server's autonomous work has used {used} of its {cap} tokens in the last 24 h \
         (budget.guildAutonomousDailyTokens)"
    )]
    Guild { used: u64, cap: u64 },
    #[error(
        "autonomous pay-per-token use is at {used} of {cap} tokens in the last 24 h \
         (budget.payPerTokenDailyTokens{share})"
    )]
    PayPerToken { used: u64, cap: u64, share: String },
}

pub fn check(
    store: &Store,
    settings: &Settings,
    ctx: &CallContext,
    ep: &Endpoint,
    estimate: u64,
    now: DateTime<Utc>,
) -> Result<(), BudgetRefusal> {
    let since = Some(now - chrono::Duration::hours(24));
    let used = |f: UsageFilter| {
        store
            .usage_tokens(&f)
            .map_err(|e| BudgetRefusal::Usage(Arc::new(e)))
    };

    let cap = ctx.role.daily_budget(settings);
    if cap > 0 {
        let u = role_used(store, ctx.role, now).map_err(|e| BudgetRefusal::Usage(Arc::new(e)))?;
        if u + estimate > cap {
            return Err(BudgetRefusal::Role {
                role: ctx.role,
                used: u,
                cap,
                estimate,
                share: share_note(settings),
            });
        }
    }
    if !ctx.role.is_autonomous() {
        return Ok(());
    }
    let autonomous: Vec<String> = AUTONOMOUS.iter().map(|r| r.as_str().to_string()).collect();
    let guild_cap = settings.budget.guild_autonomous_daily_tokens;
    if let (Some(guild), true) = (ctx.guild, guild_cap > 0) {
        let u = used(UsageFilter {
            since,
            roles: autonomous.clone(),
            guild: Some(guild),
            ..Default::default()
        })?;
        if u + estimate > guild_cap {
            return Err(BudgetRefusal::Guild {
                used: u,
                cap: guild_cap,
            });
        }
    }
    let paid_cap = settings.process_cap(settings.budget.pay_per_token_daily_tokens);
    if ep.pay_per_token && paid_cap > 0 {
        let u = used(UsageFilter {
            since,
            roles: autonomous,
            pay_per_token: Some(true),
            ..Default::default()
        })?;
        if u + estimate > paid_cap {
            return Err(BudgetRefusal::PayPerToken {
                used: u,
                cap: paid_cap,
                share: share_note(settings),
            });
        }
    }
    Ok(())
}

/// The tokens `role` used in the 24 hours before `now`, as its cap counts them.
fn role_used(store: &Store, role: Role, now: DateTime<Utc>) -> Result<u64, StoreError> {
    store.usage_tokens(&UsageFilter {
        since: Some(now - chrono::Duration::hours(24)),
        roles: vec![role.as_str().into()],
        ..Default::default()
    })
}

/// What each role with a daily cap may still spend at `now` (its cap less
/// what it used, as [`check`] counts them), for `/metrics`.
pub fn left(
    store: &Store,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Result<Vec<(Role, u64)>, StoreError> {
    let mut left = Vec::new();
    for role in Role::ALL {
        let cap = role.daily_budget(settings);
        if cap > 0 {
            left.push((role, cap.saturating_sub(role_used(store, role, now)?)));
        }
    }
    Ok(left)
}

/// ", this process's share 2/16" when this process runs part of the bot's
/// shards (its caps are that part of the settings'), else nothing.
fn share_note(settings: &Settings) -> String {
    match settings.discord.shard_plan() {
        Some(p) if !p.is_whole() => format!(", this process's share {}", share_of(&p)),
        _ => String::new(),
    }
}

/// "2/16": a plan's shards over all shards.
pub fn share_of(plan: &crate::settings::shards::Shards) -> String {
    format!("{}/{}", plan.range.count(), plan.total)
}

/// The status line for a process running part of the bot: "this process's
/// share 2/16 of the daily caps"; `None` for one process running it all.
pub fn share_line(settings: &Settings) -> Option<String> {
    let plan = settings.discord.shard_plan().filter(|p| !p.is_whole())?;
    Some(format!(
        "this process's share {} of the daily caps ({plan})",
        share_of(&plan)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(shards: &str, total: u32) -> Settings {
        let mut s = Settings::default();
        s.discord.shards = shards.into();
        s.discord.total_shards = total;
        s
    }

    #[test]
    fn a_process_gets_its_share_of_the_bot_wide_caps_and_never_no_cap() {
        let half = plan("0-1", 4);
        assert_eq!(half.process_cap(1_000), 500);
        assert_eq!(half.process_cap(1), 1, "a tiny cap stays a cap");
        assert_eq!(half.process_cap(0), 0, "no cap stays no cap");
        assert_eq!(Role::Ambient.daily_budget(&half), 100_000);
        assert_eq!(
            share_line(&half).as_deref(),
            Some("this process's share 2/4 of the daily caps (shards 0-1 of 4)")
        );
        let whole = plan("0-3", 4);
        assert_eq!(whole.process_cap(1_000), 1_000);
        assert_eq!(share_line(&whole), None);
        assert_eq!(Settings::default().process_cap(1_000), 1_000);
    }
}
