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
use super::endpoints::Endpoint;
use super::leases::{Leased, Leases};
use crate::settings::Role;
use crate::settings::Settings;
use crate::store::StoreError;
use crate::store::UsageStore;
use crate::store::usage::UsageFilter;

const AUTONOMOUS: [Role; 3] = [Role::Ambient, Role::Reflex, Role::Extract];

/// Why a call is refused before it is sent: which cap, how much is used, and
/// the setting that holds it.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum BudgetRefusal {
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

/// Refuses a call for `ctx` on `ep` of about `estimate` tokens that would
/// pass a cap. With `leases`, a role's cap is the whole bot's, counted
/// since UTC midnight against what this process leased (the static share
/// again while PostgreSQL cannot be reached).
pub(crate) fn check(
    store: &UsageStore,
    settings: &Settings,
    leases: Option<&Arc<Leases>>,
    ctx: &CallContext,
    ep: &Endpoint,
    estimate: u64,
    now: DateTime<Utc>,
) -> Result<(), BudgetRefusal> {
    for cap in caps(settings, ctx, ep, now) {
        if let (CapKind::Role, Some(leases)) = (cap.kind, leases) {
            let whole = whole_role_cap(ctx.role, settings);
            match leases
                .fits(store, ctx.role, whole, estimate, now)
                .map_err(|e| BudgetRefusal::Usage(Arc::new(e)))?
            {
                Leased::Fits => continue,
                Leased::Spent { used, .. } => {
                    return Err(BudgetRefusal::Role {
                        role: ctx.role,
                        used,
                        cap: whole,
                        estimate,
                        share: ", the whole bot's since midnight UTC".into(),
                    });
                }
                // The static share below decides.
                Leased::Unreachable => {}
            }
        }
        let used = store
            .usage_tokens(&cap.counts)
            .map_err(|e| BudgetRefusal::Usage(Arc::new(e)))?;
        if used + estimate > cap.limit {
            return Err(cap.refusal(settings, ctx, used, estimate));
        }
    }
    Ok(())
}

/// When a call of about `estimate` tokens for `ctx` on `ep` would fit every
/// cap again if nothing more were spent: `now` if it fits now, else the
/// instant the last spend it must wait for leaves the rolling 24 h (it
/// fits from the next millisecond on), `None` if it never will (the
/// estimate alone passes a cap). With no new spend each cap's total only
/// falls, record by record, so nothing fits earlier; new spend only makes
/// it later. The replay skips ticks stopped at the budget up to here.
pub(crate) fn fits_again_at(
    store: &UsageStore,
    settings: &Settings,
    ctx: &CallContext,
    ep: &Endpoint,
    estimate: u64,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let mut at = now;
    for cap in caps(settings, ctx, ep, now) {
        let Some(room) = cap.limit.checked_sub(estimate) else {
            return Ok(None);
        };
        let spent = store.usage_list(&cap.counts, None)?;
        let mut used: u64 = spent.iter().map(|r| r.tokens()).sum();
        // Oldest first: each record that leaves the window takes its tokens along.
        for r in &spent {
            if used <= room {
                break;
            }
            used -= r.tokens();
            at = at.max(r.at + chrono::Duration::hours(24));
        }
    }
    Ok(Some(at))
}

/// Which cap a [`Cap`] is, for its refusal.
#[derive(Clone, Copy)]
enum CapKind {
    Role,
    Guild,
    PayPerToken,
}

/// One cap a call faces: its limit and the usage in the rolling 24 h it counts.
struct Cap {
    kind: CapKind,
    limit: u64,
    counts: UsageFilter,
}

impl Cap {
    fn refusal(
        &self,
        settings: &Settings,
        ctx: &CallContext,
        used: u64,
        estimate: u64,
    ) -> BudgetRefusal {
        let cap = self.limit;
        match self.kind {
            CapKind::Role => BudgetRefusal::Role {
                role: ctx.role,
                used,
                cap,
                estimate,
                share: share_note(settings),
            },
            CapKind::Guild => BudgetRefusal::Guild { used, cap },
            CapKind::PayPerToken => BudgetRefusal::PayPerToken {
                used,
                cap,
                share: share_note(settings),
            },
        }
    }
}

/// The caps a call for `ctx` on `ep` faces now, in the order they are
/// checked (a cap of 0 is none): its role's; for autonomous work, its
/// guild's and, on a pay-per-token endpoint, the pay-per-token cap.
fn caps(settings: &Settings, ctx: &CallContext, ep: &Endpoint, now: DateTime<Utc>) -> Vec<Cap> {
    let since = Some(now - chrono::Duration::hours(24));
    let mut caps = Vec::new();
    let role_cap = ctx.role.daily_budget(settings);
    if role_cap > 0 {
        caps.push(Cap {
            kind: CapKind::Role,
            limit: role_cap,
            counts: role_counts(ctx.role, now),
        });
    }
    if !ctx.role.is_autonomous() {
        return caps;
    }
    let autonomous: Vec<String> = AUTONOMOUS.iter().map(|r| r.as_str().to_string()).collect();
    let guild_cap = settings.budget.guild_autonomous_daily_tokens;
    if let (Some(guild), true) = (ctx.guild, guild_cap > 0) {
        caps.push(Cap {
            kind: CapKind::Guild,
            limit: guild_cap,
            counts: UsageFilter {
                since,
                roles: autonomous.clone(),
                guild: Some(guild),
                ..Default::default()
            },
        });
    }
    let paid_cap = settings.process_cap(settings.budget.pay_per_token_daily_tokens);
    if ep.pay_per_token && paid_cap > 0 {
        caps.push(Cap {
            kind: CapKind::PayPerToken,
            limit: paid_cap,
            counts: UsageFilter {
                since,
                roles: autonomous,
                pay_per_token: Some(true),
                ..Default::default()
            },
        });
    }
    caps
}

/// `budget.dailyTokens.<role>` as the settings say it: the whole bot's.
fn whole_role_cap(role: Role, settings: &Settings) -> u64 {
    let b = &settings.budget.daily_tokens;
    match role {
        Role::Reply => b.reply,
        Role::Ambient => b.ambient,
        Role::Reflex => b.reflex,
        Role::Extract => b.extract,
    }
}

/// The usage `role`'s daily cap counts at `now`: its own in the last 24 hours.
fn role_counts(role: Role, now: DateTime<Utc>) -> UsageFilter {
    UsageFilter {
        since: Some(now - chrono::Duration::hours(24)),
        roles: vec![role.as_str().into()],
        ..Default::default()
    }
}

/// What each role with a daily cap may still spend at `now` (its cap less
/// what it used, as [`check`] counts them), for `/metrics`.
pub(crate) fn left(
    store: &UsageStore,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Result<Vec<(Role, u64)>, StoreError> {
    let mut left = Vec::new();
    for role in Role::ALL {
        let cap = role.daily_budget(settings);
        if cap > 0 {
            let used = store.usage_tokens(&role_counts(role, now))?;
            left.push((role, cap.saturating_sub(used)));
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
pub(crate) fn share_of(plan: &crate::vocab::shards::Shards) -> String {
    format!("{}/{}", plan.range.count(), plan.total)
}

/// The status line for a process running part of the bot: "this process's
/// share 2/16 of the daily caps"; `None` for one process running it all.
/// With `storage.sharedUrl` the role caps are leased whole instead (a
/// running process says whether it reaches PostgreSQL: `Leases::status_line`).
pub(crate) fn share_line(settings: &Settings) -> Option<String> {
    if !settings.storage.shared_url.trim().is_empty() {
        return Some(format!(
            "the whole bot's daily caps, leased from PostgreSQL in {}% chunks",
            super::leases::CHUNK_PERCENT
        ));
    }
    let plan = settings.discord.shard_plan().filter(|p| !p.is_whole())?;
    Some(format!(
        "this process's share {} of the daily caps ({plan})",
        share_of(&plan)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn plan(shards: &str, total: u32) -> Settings {
        let mut s = Settings::default();
        s.discord.shards = shards.into();
        s.discord.total_shards = total;
        s
    }

    fn paid_endpoint() -> Endpoint {
        Endpoint {
            provider: crate::settings::ProviderKind::Openai,
            wire: super::super::endpoints::Wire::OpenAi,
            base_url: "http://127.0.0.1:9".into(),
            key: None,
            model: "m".into(),
            pay_per_token: true,
            vision: false,
        }
    }

    fn spent(store: &Store, at: DateTime<Utc>, role: Role, guild: u64, tokens: u64) {
        store
            .usage()
            .usage_append(&crate::store::usage::UsageRecord {
                id: 0,
                at,
                role: role.as_str().into(),
                source: "ambient".into(),
                guild: Some(crate::ids::GuildId(guild)),
                provider: "openai".into(),
                model: "m".into(),
                pay_per_token: true,
                tokens_in: tokens,
                tokens_out: 0,
                latency_ms: 1,
                outcome: "ok".into(),
                detail: String::new(),
            })
            .unwrap();
    }

    #[test]
    fn a_refused_call_fits_again_exactly_when_fits_again_at_says() {
        // Spend by the hour over the last day, in the guild's cap and the
        // pay-per-token cap (another guild's counts there only); checked
        // against `check` at every minute of the next 25 h.
        let store = Store::open_in_memory().unwrap();
        let now: DateTime<Utc> = "2026-05-04T12:00:30Z".parse().unwrap();
        let mut s = Settings::default();
        s.budget.guild_autonomous_daily_tokens = 10_000;
        s.budget.pay_per_token_daily_tokens = 14_000;
        for h in 1..=20 {
            let at = now - chrono::Duration::hours(24) + chrono::Duration::minutes(h * 67);
            spent(&store, at, Role::Extract, 1, 400 + 10 * h as u64);
            spent(&store, at, Role::Extract, 2, 300);
        }
        let ctx = CallContext::new(Role::Ambient, Some(crate::ids::GuildId(1)));
        let ep = paid_endpoint();
        let estimate = 3_000;
        assert!(check(&store.usage(), &s, None, &ctx, &ep, estimate, now).is_err());
        let at = fits_again_at(&store.usage(), &s, &ctx, &ep, estimate, now)
            .unwrap()
            .unwrap();
        assert!(at > now && at < now + chrono::Duration::hours(24), "{at}");
        let mut t = now;
        while t < now + chrono::Duration::hours(25) {
            let fits = check(&store.usage(), &s, None, &ctx, &ep, estimate, t).is_ok();
            assert_eq!(fits, t > at, "at {t}, said {at}");
            t += chrono::Duration::seconds(59);
        }
        let from_later = fits_again_at(&store.usage(), &s, &ctx, &ep, estimate, at).unwrap();
        assert_eq!(from_later, Some(at), "the same instant seen from later");
        assert_eq!(
            fits_again_at(
                &store.usage(),
                &s,
                &ctx,
                &ep,
                estimate,
                at + chrono::Duration::milliseconds(1)
            )
            .unwrap(),
            Some(at + chrono::Duration::milliseconds(1)),
            "fitting now: now"
        );
        assert_eq!(
            fits_again_at(&store.usage(), &s, &ctx, &ep, 10_001, now).unwrap(),
            None,
            "an estimate over the cap never fits"
        );
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
        let mut leased = plan("0-1", 4);
        leased.storage.shared_url = "postgres://a@db/x".into();
        assert_eq!(
            share_line(&leased).as_deref(),
            Some("the whole bot's daily caps, leased from PostgreSQL in 5% chunks")
        );
        assert_eq!(Settings::default().process_cap(1_000), 1_000);
    }
}
