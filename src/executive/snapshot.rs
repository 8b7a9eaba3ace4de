//! The numbers the status widget and the garden's adaptive scheduler read:
//! how fast people are using the models, how much the bot spends on its own
//! work, and what the provider says is left in its rate-limit window.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Executive;
use crate::settings::Role;
use crate::store::usage::UsageFilter;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UsageSnapshot {
    pub at: Option<DateTime<Utc>>,
    /// Tokens spent answering people in the last hour.
    pub user_tokens_last_hour: u64,
    /// The same, per minute (the seed's "user usage rate").
    pub user_tokens_per_minute: f64,
    pub user_tokens_24h: u64,
    /// Tokens spent on the bot's own work (ambient, reflex, extract) in the last 24 h.
    pub ambient_tokens_24h: u64,
    /// Ambient share of all tokens in the last 24 h (0–1).
    pub ambient_share: f64,
    /// What the ambient role's provider says is left in its current window,
    /// if it said — nothing once that window has reset (the figures are stale).
    pub tokens_remaining: Option<u64>,
    pub tokens_limit: Option<u64>,
    pub window_reset: Option<DateTime<Utc>>,
    /// 429s seen in the last hour.
    pub rate_limited_last_hour: u64,
    /// Left of `budget.dailyTokens.ambient` (None when uncapped).
    pub ambient_budget_remaining: Option<u64>,
    /// "store read failed: the usage records: …" when the usage could not
    /// be read: the counts above are then not zero but unknown, and status
    /// shows this instead of them.
    pub unread: Option<String>,
}

impl Executive {
    pub fn snapshot(&self) -> UsageSnapshot {
        let now = self.clock.now();
        let hour = Some(now - chrono::Duration::hours(1));
        let day = Some(now - chrono::Duration::hours(24));
        let mut unread = None;
        let mut failed = |e: crate::store::StoreError| {
            unread.get_or_insert(format!("store read failed: the usage records: {e}"));
            0
        };
        let mut tokens = |f: UsageFilter| {
            self.store
                .usage
                .usage_tokens(&f)
                .unwrap_or_else(&mut failed)
        };
        let user = |since| UsageFilter {
            since,
            sources: vec!["user".into()],
            ..Default::default()
        };
        let user_hour = tokens(user(hour));
        let user_day = tokens(user(day));
        let ambient_day = tokens(UsageFilter {
            since: day,
            sources: vec!["ambient".into(), "reflex".into()],
            ..Default::default()
        });
        let ambient_role_day = tokens(UsageFilter {
            since: day,
            roles: vec![Role::Ambient.as_str().into()],
            ..Default::default()
        });
        let rate_limited = self
            .store
            .usage
            .usage_count(&UsageFilter {
                since: hour,
                outcome: Some("rate_limited".into()),
                ..Default::default()
            })
            .unwrap_or_else(failed);
        let limits = self
            .resolve(Role::Ambient)
            .endpoints
            .first()
            .and_then(|ep| {
                self.lock_providers()
                    .get(&ep.health_key())
                    .and_then(|s| s.limits.clone())
            })
            .filter(|l| l.tokens_reset.is_none_or(|reset| reset > now));
        let cap = Role::Ambient.daily_budget(&self.settings.global());
        let total = user_day + ambient_day;
        UsageSnapshot {
            at: Some(now),
            user_tokens_last_hour: user_hour,
            user_tokens_per_minute: user_hour as f64 / 60.0,
            user_tokens_24h: user_day,
            ambient_tokens_24h: ambient_day,
            ambient_share: if total == 0 {
                0.0
            } else {
                ambient_day as f64 / total as f64
            },
            tokens_remaining: limits.as_ref().and_then(|l| l.tokens_remaining),
            tokens_limit: limits.as_ref().and_then(|l| l.tokens_limit),
            window_reset: limits.as_ref().and_then(|l| l.tokens_reset),
            rate_limited_last_hour: rate_limited,
            ambient_budget_remaining: (cap > 0).then(|| cap.saturating_sub(ambient_role_day)),
            unread,
        }
    }
}
