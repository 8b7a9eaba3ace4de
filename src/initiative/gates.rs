//! The deterministic gates, in the seed's order. Cheap by construction: they
//! read settings, counters and the clock, roll the seeded dice, and never
//! call a model. A guild stopped by a gate costs nothing.
//!
//! 1. `initiative.text.enabled`
//! 2. a non-empty eligible pool (`discoveryChannelIds` that belong to this
//!    guild, minus blocked or not-allowed channels, minus channels in an
//!    ACTIVE conversation, minus channels where nothing could be delivered
//!    now: at `maxMessagesPerHour`, or the platform refused the last send).
//!    The ids are a flat list, so a guild is only ever offered its own
//!    channels. A post that could not be sent is never paid for.
//! 3. the daily cap (`maxPostsPerDay`, rolling 24 h)
//! 4. a model for the role that decides
//! 5. the budget: the deciding role's next call (its recent prompts' size
//!    plus the most it may answer) fits every cap, or nothing is asked
//! 6. a pending thought is revisited here, before the fresh-thought gates
//! 7. for fresh thoughts: `minMinutesBetweenPosts` since the last consideration
//! 8. for fresh thoughts: the eagerness roll

use chrono::{DateTime, Utc};

use super::pending::PendingThought;
use crate::clock::Chance;
use crate::ids::ChannelId;
use crate::permissions;
use crate::settings::Settings;

/// What may happen this tick.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// A gate stopped the guild. `gate` names it for deduplication.
    Stop { gate: &'static str, reason: String },
    /// Look at the held thought again.
    Revisit { pool: Vec<ChannelId> },
    /// Think of something new.
    Fresh { pool: Vec<ChannelId> },
}

pub struct Inputs<'a> {
    pub settings: &'a Settings,
    /// The channels known to belong to this guild.
    pub guild_channels: &'a [ChannelId],
    pub now: DateTime<Utc>,
    pub posts_last_24h: u32,
    pub last_considered: Option<DateTime<Utc>>,
    pub pending: Option<&'a PendingThought>,
    /// Channels where someone is talking with the bot right now.
    pub active: &'a [ChannelId],
    /// Channels where nothing could be delivered now (hourly cap, a refused send).
    pub closed: &'a [ChannelId],
    /// Why the deciding model role cannot run, if it cannot.
    pub model_unavailable: Option<String>,
    /// Why a budget would refuse the deciding role's next call, if it would.
    pub over_budget: Option<String>,
}

/// The guild's channels the bot may post in on its own, before ACTIVE ones are taken out.
pub fn eligible_pool(settings: &Settings, guild_channels: &[ChannelId]) -> Vec<ChannelId> {
    settings
        .permissions
        .replies
        .discovery_channel_ids
        .iter()
        .copied()
        .filter(|c| guild_channels.contains(c))
        .filter(|c| permissions::channel_invisible_because(settings, *c).is_none())
        .collect()
}

pub fn evaluate(i: &Inputs<'_>, chance: &Chance) -> Verdict {
    let t = &i.settings.initiative.text;
    let stop = |gate, reason: String| Verdict::Stop { gate, reason };
    if !t.enabled {
        return stop("enabled", "initiative.text.enabled is off".into());
    }
    let eligible = eligible_pool(i.settings, i.guild_channels);
    if eligible.is_empty() {
        let listed = &i.settings.permissions.replies.discovery_channel_ids;
        let why = if listed.is_empty() {
            "no channel is open to unprompted posts (permissions.replies.discoveryChannelIds is empty)"
        } else if !listed.iter().any(|c| i.guild_channels.contains(c)) {
            "none of permissions.replies.discoveryChannelIds is a channel of this server"
        } else {
            "every channel of this server in permissions.replies.discoveryChannelIds is blocked or not allowed"
        };
        return stop("pool", why.into());
    }
    let pool: Vec<ChannelId> = eligible
        .iter()
        .copied()
        .filter(|c| !i.active.contains(c))
        .collect();
    if pool.is_empty() {
        return stop(
            "active",
            "people are talking with the bot in every eligible channel; replies come first".into(),
        );
    }
    let pool: Vec<ChannelId> = pool.into_iter().filter(|c| !i.closed.contains(c)).collect();
    if pool.is_empty() {
        return stop(
            "closed",
            "nothing could be delivered in any eligible channel now: each is at \
             permissions.replies.maxMessagesPerHour or refused the bot's last message"
                .into(),
        );
    }
    if i.posts_last_24h >= t.max_posts_per_day {
        return stop(
            "daily_cap",
            format!(
                "{} of {} posts in the last 24 h (initiative.text.maxPostsPerDay)",
                i.posts_last_24h, t.max_posts_per_day
            ),
        );
    }
    if let Some(why) = &i.model_unavailable {
        return stop("model", why.clone());
    }
    if let Some(why) = &i.over_budget {
        return stop("budget", why.clone());
    }
    if let Some(p) = i.pending {
        let next = p.updated_at + chrono::Duration::minutes(i64::from(t.revisit_minutes));
        if i.now >= next {
            return Verdict::Revisit { pool };
        }
        return stop(
            "pending",
            format!(
                "holding a thought (revision {}); looking at it again at {}",
                p.revision,
                next.format("%H:%M UTC")
            ),
        );
    }
    if let Some(last) = i.last_considered {
        let ready = last + chrono::Duration::minutes(i64::from(t.min_minutes_between_posts));
        if i.now < ready {
            let minutes = (i.now - last).num_minutes();
            return stop(
                "cooldown",
                format!(
                    "last considered {minutes} min ago; initiative.text.minMinutesBetweenPosts is {}",
                    t.min_minutes_between_posts
                ),
            );
        }
    }
    let eagerness = t.eagerness.min(100) as u8;
    if !chance.roll_percent(eagerness) {
        return stop(
            "eagerness",
            format!("the eagerness roll ({eagerness}%) said not now"),
        );
    }
    Verdict::Fresh { pool }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::GuildId;

    fn settings() -> Settings {
        let mut s = Settings::default();
        s.permissions.replies.discovery_channel_ids = vec![ChannelId(1), ChannelId(2)];
        s.initiative.text.eagerness = 100;
        s
    }

    const CHANNELS: &[ChannelId] = &[ChannelId(1), ChannelId(2)];

    fn inputs(s: &Settings) -> Inputs<'_> {
        Inputs {
            settings: s,
            guild_channels: CHANNELS,
            now: Utc::now(),
            posts_last_24h: 0,
            last_considered: None,
            pending: None,
            active: &[],
            closed: &[],
            model_unavailable: None,
            over_budget: None,
        }
    }

    #[test]
    fn an_exhausted_budget_stops_before_a_held_thought_or_the_dice() {
        let s = settings();
        let mut i = inputs(&s);
        i.over_budget =
            Some("this server's autonomous work has used 49000 of its 50000 tokens".into());
        assert_eq!(gate(evaluate(&i, &Chance::seeded(1))), "budget");
        i.model_unavailable = Some("no model".into());
        assert_eq!(
            gate(evaluate(&i, &Chance::seeded(1))),
            "model",
            "no model comes first"
        );
    }

    fn gate(v: Verdict) -> &'static str {
        match v {
            Verdict::Stop { gate, .. } => gate,
            Verdict::Revisit { .. } => "revisit",
            Verdict::Fresh { .. } => "fresh",
        }
    }

    #[test]
    fn each_gate_in_order() {
        let chance = Chance::seeded(1);
        let mut s = settings();
        assert_eq!(gate(evaluate(&inputs(&s), &chance)), "fresh");

        s.initiative.text.enabled = false;
        assert_eq!(gate(evaluate(&inputs(&s), &chance)), "enabled");
        s.initiative.text.enabled = true;

        let mut blocked = s.clone();
        blocked.permissions.replies.blocked_channel_ids = vec![ChannelId(1), ChannelId(2)];
        assert_eq!(gate(evaluate(&inputs(&blocked), &chance)), "pool");

        assert_eq!(
            gate(evaluate(
                &Inputs {
                    guild_channels: &[ChannelId(9)],
                    ..inputs(&s)
                },
                &chance
            )),
            "pool",
            "another guild's channels are not offered"
        );

        let active = [ChannelId(1), ChannelId(2)];
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    active: &active,
                    ..inputs(&s)
                },
                &chance
            )),
            "active"
        );
        match evaluate(
            &Inputs {
                active: &active[..1],
                ..inputs(&s)
            },
            &chance,
        ) {
            Verdict::Fresh { pool } => {
                assert_eq!(pool, vec![ChannelId(2)], "an ACTIVE channel is left out")
            }
            other => panic!("{other:?}"),
        }

        assert_eq!(
            gate(evaluate(
                &Inputs {
                    posts_last_24h: 6,
                    ..inputs(&s)
                },
                &chance
            )),
            "daily_cap"
        );
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    closed: &[ChannelId(1), ChannelId(2)],
                    ..inputs(&s)
                },
                &chance
            )),
            "closed",
            "no model is asked for a post nobody could see"
        );
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    closed: &[ChannelId(1)],
                    ..inputs(&s)
                },
                &chance
            )),
            "fresh"
        );
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    model_unavailable: Some("no model".into()),
                    ..inputs(&s)
                },
                &chance
            )),
            "model"
        );

        let now = Utc::now();
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    last_considered: Some(now),
                    now,
                    ..inputs(&s)
                },
                &chance
            )),
            "cooldown"
        );

        s.initiative.text.eagerness = 0;
        assert_eq!(gate(evaluate(&inputs(&s), &chance)), "eagerness");
    }

    #[test]
    fn a_pending_thought_is_revisited_before_cooldown_and_eagerness() {
        let chance = Chance::seeded(1);
        let mut s = settings();
        s.initiative.text.eagerness = 0;
        s.initiative.text.revisit_minutes = 10;
        let now = Utc::now();
        let p = PendingThought::new(
            GuildId(1),
            "draft".into(),
            None,
            "later".into(),
            None,
            now - chrono::Duration::minutes(11),
            chrono::Duration::hours(3),
        );
        let i = Inputs {
            pending: Some(&p),
            last_considered: Some(now),
            now,
            ..inputs(&s)
        };
        assert_eq!(gate(evaluate(&i, &chance)), "revisit");
        let fresh = PendingThought {
            updated_at: now,
            ..p
        };
        let i = Inputs {
            pending: Some(&fresh),
            now,
            ..inputs(&s)
        };
        assert_eq!(gate(evaluate(&i, &chance)), "pending");
    }
}
