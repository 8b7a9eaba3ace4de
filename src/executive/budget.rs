//! Budgets: refuse a model call *before* it is made when it would exceed a cap.
//!
//! Caps are per rolling 24 hours, counted from the usage records:
//! - `budget.dailyTokens.<role>`: tokens of that role;
//! - `budget.guildAutonomousDailyTokens`: one guild's autonomous tokens
//!   (ambient, reflex, extract);
//! - `budget.payPerTokenDailyTokens`: autonomous tokens spent on
//!   pay-per-token endpoints.
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
         (budget.dailyTokens.{role})"
    )]
    Role {
        role: Role,
        used: u64,
        cap: u64,
        estimate: u64,
    },
    #[error(
        "this server's autonomous work has used {used} of its {cap} tokens in the last 24 h \
         (budget.guildAutonomousDailyTokens)"
    )]
    Guild { used: u64, cap: u64 },
    #[error(
        "autonomous pay-per-token use is at {used} of {cap} tokens in the last 24 h \
         (budget.payPerTokenDailyTokens)"
    )]
    PayPerToken { used: u64, cap: u64 },
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
        let u = used(UsageFilter {
            since,
            roles: vec![ctx.role.as_str().into()],
            ..Default::default()
        })?;
        if u + estimate > cap {
            return Err(BudgetRefusal::Role {
                role: ctx.role,
                used: u,
                cap,
                estimate,
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
    let paid_cap = settings.budget.pay_per_token_daily_tokens;
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
            });
        }
    }
    Ok(())
}
