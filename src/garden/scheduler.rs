//! The adaptive interval between garden cycles (seed: "Adaptive Interval
//! Algorithm" and its behaviour table), as a pure function of its inputs so
//! every row of the table is tested exactly.
//!
//! ```text
//! base = over 80 % of the budget used          → max interval
//!      | rate-limit headers known              → the seed's headroom formula:
//!            ambient_budget = (tokens_remaining − user_rate × window_left) × 0.8
//!            cycles         = ambient_budget / tokens_per_cycle (last 5 cycles)
//!            interval       = window_left / cycles  (or window_left if none fit)
//!        (after a 429 the backed-off interval wins if it is longer)
//!      | no headers                            → the adaptive interval (starts at
//!                                                garden.defaultIntervalMinutes)
//! people talking with the bot → pause (garden.pauseOnActive) or × activeMultiplier
//! nobody talking for hours    → × 0.5, unless over 80 % or backing off after a 429
//!                               (quiet never undoes what the budget asked for)
//! the last n passes found nothing to do, and nobody has talked since
//!                             → × 2ⁿ (a garden at rest is looked at less and less)
//! clamp to [minIntervalMinutes, maxIntervalMinutes]
//! ```
//!
//! The adaptive interval itself moves after each cycle: a real 429 doubles
//! the interval last in use (the headroom's, when the provider sends
//! headers); `cleanCyclesToShorten` cycles in a row without one shorten it
//! by a quarter; other failures (a 500, a timeout) leave it alone. A pass
//! that finds nothing to do counts toward the rest's doubling; any cycle
//! that does something ends it. What the
//! agent asks for (`next_schedule`, `schedule_ambient`) is a proposal: it is
//! pushed later to the safe interval, or pulled earlier to the maximum.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::settings::GardenSettings;

/// Token cost assumed for a cycle before any has been measured.
pub(crate) const ASSUMED_TOKENS_PER_CYCLE: f64 = 6_000.0;

/// The scheduler's memory between cycles (persisted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub interval_minutes: f64,
    pub consecutive_rate_limits: u32,
    pub clean_cycles: u32,
    /// Completed cycles so far (proactive work unlocks after `garden.warmupCycles`).
    pub good_cycles: u32,
    /// The safe interval planned at the last cycle's end: what a 429 doubles.
    /// With rate-limit headers that is the headroom's, not `interval_minutes`.
    #[serde(default)]
    pub last_interval_minutes: Option<f64>,
    /// Passes in a row that found nothing to do (the rest's doubling).
    #[serde(default)]
    pub idle_passes: u32,
}

impl State {
    pub(crate) fn new(settings: &GardenSettings) -> Self {
        Self {
            interval_minutes: f64::from(settings.default_interval_minutes),
            consecutive_rate_limits: 0,
            clean_cycles: 0,
            good_cycles: 0,
            last_interval_minutes: None,
            idle_passes: 0,
        }
    }
}

/// What the provider said is left in its rate-limit window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Window {
    pub tokens_remaining: u64,
    pub tokens_limit: u64,
    pub resets_at: DateTime<Utc>,
}

#[derive(Clone, Debug)]
pub(crate) struct Inputs {
    pub now: DateTime<Utc>,
    pub people_active: bool,
    /// Since anyone last said anything to any channel the bot sees.
    pub idle_for: Option<Duration>,
    pub window: Option<Window>,
    pub user_tokens_per_minute: f64,
    /// Mean token cost of the last five cycles, when any were measured.
    pub tokens_per_cycle: Option<f64>,
    /// Share of the ambient budget already used (0–1): the daily ambient cap,
    /// or the provider's window, whichever is fuller.
    pub budget_used: f64,
    /// Someone has talked since the last cycle ended: the garden is not at
    /// rest, however many passes before found nothing.
    pub talk_since_last_cycle: bool,
    /// What could not be read of the spend (`store read failed: …`): the
    /// budget is then taken as spent, never as untouched.
    pub unread: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// `None`: paused until people stop talking with the bot.
    pub wait: Option<Duration>,
    /// Why, in the order the rules applied.
    pub why: Vec<String>,
}

pub(crate) fn minutes(d: Duration) -> f64 {
    d.num_seconds() as f64 / 60.0
}

fn from_minutes(m: f64) -> Duration {
    Duration::seconds((m * 60.0).round() as i64)
}

/// The interval the budget allows, before people's activity is weighed:
/// the longest when most of the budget is used; else what fits in the
/// rate-limit window (or the back-off, if longer); without headers, the
/// adaptive interval.
fn base_interval(i: &Inputs, state: &State, max: f64, why: &mut Vec<String>) -> f64 {
    if let Some(unread) = &i.unread {
        why.push(format!(
            "{unread}: the budget counts as spent, the longest interval"
        ));
        return max;
    }
    if i.budget_used > 0.8 {
        why.push(format!(
            "{:.0}% of the budget is used: the longest interval",
            i.budget_used * 100.0
        ));
        return max;
    }
    let Some(w) = i.window.filter(|w| w.resets_at > i.now) else {
        why.push(format!(
            "no rate-limit headers: the adaptive interval, {:.0} min",
            state.interval_minutes
        ));
        return state.interval_minutes;
    };
    let left = minutes(w.resets_at - i.now).max(1.0);
    let user_projected = i.user_tokens_per_minute * left;
    let ambient_budget = (w.tokens_remaining as f64 - user_projected).max(0.0) * 0.8;
    let per_cycle = i
        .tokens_per_cycle
        .unwrap_or(ASSUMED_TOKENS_PER_CYCLE)
        .max(1.0);
    let cycles = (ambient_budget / per_cycle).floor();
    let headroom = if cycles >= 1.0 { left / cycles } else { left };
    why.push(if cycles >= 1.0 {
        format!("{cycles:.0} cycle(s) of ~{per_cycle:.0} tokens fit in the {left:.0} min left of the window: every {headroom:.0} min")
    } else {
        format!("no cycle fits in what is left of the window: wait {left:.0} min for it to reset")
    });
    if state.consecutive_rate_limits > 0 && state.interval_minutes > headroom {
        why.push(format!(
            "backing off after {} rate limit(s): {:.0} min",
            state.consecutive_rate_limits, state.interval_minutes
        ));
        state.interval_minutes
    } else {
        headroom
    }
}

/// The most the rest doubles the interval by (2⁶ = 64): past that the maximum interval binds anyway.
const MAX_REST_DOUBLINGS: u32 = 6;

/// The rest: after passes in a row that found nothing to do, while nobody
/// has talked since, the interval doubles with each — a quiet bot's garden
/// looks less and less often, and is back to its interval once there is
/// something to tend.
fn rest(i: &Inputs, state: &State, interval: f64, why: &mut Vec<String>) -> f64 {
    if state.idle_passes == 0 {
        return interval;
    }
    if i.talk_since_last_cycle {
        why.push("people talked since the last pass: no longer at rest".into());
        return interval;
    }
    let doublings = state.idle_passes.min(MAX_REST_DOUBLINGS);
    why.push(format!(
        "the last {} pass(es) found nothing to do and nobody has talked since: × {}",
        state.idle_passes,
        1u32 << doublings
    ));
    interval * f64::from(1u32 << doublings)
}

/// The safe interval until the next cycle.
pub(crate) fn plan(i: &Inputs, state: &State, s: &GardenSettings) -> Plan {
    let (min, max) = (
        f64::from(s.min_interval_minutes),
        f64::from(s.max_interval_minutes),
    );
    let mut why = Vec::new();
    // Over budget or backing off: nothing below may shorten the interval.
    let holding = i.budget_used > 0.8 || i.unread.is_some() || state.consecutive_rate_limits > 0;
    let mut interval = base_interval(i, state, max, &mut why);
    if i.people_active {
        if s.pause_on_active {
            why.push("people are talking with the bot: paused (garden.pauseOnActive)".into());
            return Plan { wait: None, why };
        }
        interval *= f64::from(s.active_multiplier);
        why.push(format!(
            "people are talking with the bot: × {}",
            s.active_multiplier
        ));
    } else if i
        .idle_for
        .is_some_and(|d| d >= Duration::hours(i64::from(s.idle_hours_for_more_often)))
    {
        if holding {
            why.push(format!(
                "nobody has talked for {}h or more, but the budget holds the interval",
                s.idle_hours_for_more_often
            ));
        } else {
            interval *= 0.5;
            why.push(format!(
                "nobody has talked for {}h or more: twice as often",
                s.idle_hours_for_more_often
            ));
        }
    }
    let interval = rest(i, state, interval, &mut why);
    let clamped = interval.clamp(min, max);
    if (clamped - interval).abs() > 0.01 {
        why.push(format!(
            "clamped to {clamped:.0} min (garden.minIntervalMinutes–maxIntervalMinutes)"
        ));
    }
    Plan {
        wait: Some(from_minutes(clamped)),
        why,
    }
}

/// The agent's requested wake against the safe interval: pushed later when
/// too soon, pulled earlier to the maximum when too late. Returns the wait
/// and whether the system moved it.
pub(crate) fn settle(requested: Duration, safe: Duration, s: &GardenSettings) -> (Duration, bool) {
    let max = Duration::minutes(i64::from(s.max_interval_minutes));
    let settled = requested.max(safe).min(max.max(safe));
    (settled, settled != requested)
}

/// How a cycle ended, for the adaptive interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    Clean,
    /// The provider answered 429 during the cycle.
    RateLimited,
    /// Any other failure: it says nothing about rate limits.
    Failed,
    /// No model call was made (a memory pass only): nothing learned either way.
    Neutral,
    /// A pass that found nothing to do: the garden is at rest.
    Idle,
}

/// The adaptive interval after a cycle.
pub(crate) fn after_cycle(mut state: State, ended: Ended, s: &GardenSettings) -> State {
    let (min, max) = (
        f64::from(s.min_interval_minutes),
        f64::from(s.max_interval_minutes),
    );
    // Anything but rest ends it: the interval is back to what the budget says.
    state.idle_passes = match ended {
        Ended::Idle => state.idle_passes.saturating_add(1),
        _ => 0,
    };
    match ended {
        Ended::RateLimited => {
            let in_use = state
                .last_interval_minutes
                .unwrap_or(state.interval_minutes);
            state.interval_minutes = (in_use * 2.0).clamp(min, max);
            state.consecutive_rate_limits += 1;
            state.clean_cycles = 0;
        }
        Ended::Clean => {
            state.consecutive_rate_limits = 0;
            state.clean_cycles += 1;
            state.good_cycles += 1;
            if state.clean_cycles >= s.clean_cycles_to_shorten {
                state.interval_minutes = (state.interval_minutes * 0.75).max(min);
                state.clean_cycles = 0;
            }
        }
        Ended::Failed | Ended::Neutral | Ended::Idle => {}
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-05T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn quiet() -> Inputs {
        Inputs {
            now: now(),
            people_active: false,
            idle_for: Some(Duration::minutes(20)),
            window: None,
            user_tokens_per_minute: 0.0,
            tokens_per_cycle: None,
            budget_used: 0.1,
            talk_since_last_cycle: false,
            unread: None,
        }
    }

    fn wait(p: &Plan) -> i64 {
        p.wait.expect("not paused").num_minutes()
    }

    #[test]
    fn without_headers_it_starts_at_thirty_minutes() {
        let s = GardenSettings::default();
        let p = plan(&quiet(), &State::new(&s), &s);
        assert_eq!(wait(&p), 30);
        assert!(p.why[0].starts_with("no rate-limit headers"), "{:?}", p.why);
    }

    #[test]
    fn people_talking_pause_it_or_slow_it_down() {
        let mut s = GardenSettings::default();
        let active = Inputs {
            people_active: true,
            ..quiet()
        };
        assert_eq!(
            wait(&plan(&active, &State::new(&s), &s)),
            120,
            "30 × 4, within max"
        );
        s.max_interval_minutes = 600;
        assert_eq!(wait(&plan(&active, &State::new(&s), &s)), 120);
        s.pause_on_active = true;
        let p = plan(&active, &State::new(&s), &s);
        assert_eq!(p.wait, None);
        assert!(p.why.last().unwrap().contains("paused"));
    }

    #[test]
    fn hours_of_quiet_make_it_run_more_often() {
        let s = GardenSettings::default();
        let idle = Inputs {
            idle_for: Some(Duration::hours(5)),
            ..quiet()
        };
        assert_eq!(wait(&plan(&idle, &State::new(&s), &s)), 15);
    }

    #[test]
    fn a_429_doubles_the_interval_and_other_failures_do_not() {
        let s = GardenSettings::default();
        let st = State::new(&s);
        let failed = after_cycle(st.clone(), Ended::Failed, &s);
        assert_eq!(
            wait(&plan(&quiet(), &failed, &s)),
            30,
            "a 500 is not a rate limit"
        );
        let once = after_cycle(st, Ended::RateLimited, &s);
        assert_eq!(wait(&plan(&quiet(), &once, &s)), 60);
        let twice = after_cycle(once, Ended::RateLimited, &s);
        assert_eq!(wait(&plan(&quiet(), &twice, &s)), 120);
        let thrice = after_cycle(twice, Ended::RateLimited, &s);
        assert_eq!(
            wait(&plan(&quiet(), &thrice, &s)),
            120,
            "never past the maximum"
        );
    }

    #[test]
    fn hours_of_quiet_never_undo_the_budget_or_a_back_off() {
        let s = GardenSettings::default();
        let idle = Inputs {
            idle_for: Some(Duration::hours(3)),
            ..quiet()
        };
        let spent = Inputs {
            budget_used: 0.85,
            ..idle.clone()
        };
        let p = plan(&spent, &State::new(&s), &s);
        assert_eq!(wait(&p), 120, "85 % used and idle 3 h: still the maximum");
        assert!(p.why[1].contains("the budget holds"), "{:?}", p.why);
        let backed_off = after_cycle(State::new(&s), Ended::RateLimited, &s);
        assert_eq!(
            wait(&plan(&idle, &backed_off, &s)),
            60,
            "a doubled interval is not halved again"
        );
        // Both at once.
        let p = plan(&spent, &backed_off, &s);
        assert_eq!(wait(&p), 120);
        assert_eq!(
            wait(&plan(&idle, &State::new(&s), &s)),
            15,
            "with the budget healthy, quiet still means more often"
        );
    }

    #[test]
    fn with_headers_a_429_doubles_the_interval_in_use() {
        let s = GardenSettings::default();
        let window = Inputs {
            window: Some(Window {
                tokens_remaining: 20_000,
                tokens_limit: 100_000,
                resets_at: now() + Duration::minutes(60),
            }),
            tokens_per_cycle: Some(5_000.0),
            ..quiet()
        };
        let mut st = State::new(&s);
        assert_eq!(wait(&plan(&window, &st, &s)), 20, "the headroom's interval");
        st.last_interval_minutes = Some(20.0);
        let once = after_cycle(st, Ended::RateLimited, &s);
        let p = plan(&window, &once, &s);
        assert_eq!(
            wait(&p),
            40,
            "20 doubled, not the 30 min default doubled: {:?}",
            p.why
        );
        let mut twice = once;
        twice.last_interval_minutes = Some(40.0);
        let twice = after_cycle(twice, Ended::RateLimited, &s);
        assert_eq!(wait(&plan(&window, &twice, &s)), 80);
        let mut thrice = twice;
        thrice.last_interval_minutes = Some(80.0);
        let thrice = after_cycle(thrice, Ended::RateLimited, &s);
        assert_eq!(wait(&plan(&window, &thrice, &s)), 120, "clamped");
    }

    #[test]
    fn clean_cycles_shorten_it_gradually() {
        let s = GardenSettings::default();
        let mut st = State::new(&s);
        for _ in 0..2 {
            st = after_cycle(st, Ended::Clean, &s);
        }
        assert_eq!(wait(&plan(&quiet(), &st, &s)), 30, "not yet");
        st = after_cycle(st, Ended::Clean, &s);
        assert_eq!(wait(&plan(&quiet(), &st, &s)), 22, "30 × 0.75");
        for _ in 0..30 {
            st = after_cycle(st, Ended::Clean, &s);
        }
        assert_eq!(wait(&plan(&quiet(), &st, &s)), 5, "never below the minimum");
        assert_eq!(st.good_cycles, 33);
    }

    #[test]
    fn the_headroom_formula_spreads_cycles_over_the_window() {
        let s = GardenSettings::default();
        let window = |remaining, reset_in| Inputs {
            window: Some(Window {
                tokens_remaining: remaining,
                tokens_limit: 100_000,
                resets_at: now() + Duration::minutes(reset_in),
            }),
            tokens_per_cycle: Some(5_000.0),
            ..quiet()
        };
        // (20,000 − 0) × 0.8 = 16,000 → 3 cycles in 60 min → every 20 min.
        assert_eq!(wait(&plan(&window(20_000, 60), &State::new(&s), &s)), 20);
        // People use 200 tokens a minute: 12,000 of it → (8,000 × 0.8) → 1 cycle → 60 min.
        let busy = Inputs {
            user_tokens_per_minute: 200.0,
            ..window(20_000, 60)
        };
        assert_eq!(wait(&plan(&busy, &State::new(&s), &s)), 60);
        // Nothing fits: wait for the reset.
        assert_eq!(wait(&plan(&window(1_000, 45), &State::new(&s), &s)), 45);
    }

    #[test]
    fn a_window_ending_with_budget_left_squeezes_cycles_in() {
        let s = GardenSettings::default();
        let ending = Inputs {
            window: Some(Window {
                tokens_remaining: 20_000,
                tokens_limit: 100_000,
                resets_at: now() + Duration::minutes(10),
            }),
            tokens_per_cycle: Some(5_000.0),
            ..quiet()
        };
        // Three cycles fit in the last ten minutes: as often as allowed.
        assert_eq!(wait(&plan(&ending, &State::new(&s), &s)), 5);
    }

    #[test]
    fn over_eighty_percent_of_the_budget_means_the_longest_interval() {
        let s = GardenSettings::default();
        let spent = Inputs {
            budget_used: 0.85,
            ..quiet()
        };
        let p = plan(&spent, &State::new(&s), &s);
        assert_eq!(wait(&p), 120);
        assert!(p.why[0].contains("85% of the budget"));
    }

    #[test]
    fn passes_with_nothing_to_do_double_the_interval_until_something_happens() {
        let s = GardenSettings::default();
        let mut st = State::new(&s);
        let mut waits = Vec::new();
        for _ in 0..4 {
            st = after_cycle(st, Ended::Idle, &s);
            waits.push(wait(&plan(&quiet(), &st, &s)));
        }
        assert_eq!(waits, [60, 120, 120, 120], "30 doubled, then the maximum");
        let p = plan(&quiet(), &st, &s);
        assert!(
            p.why.iter().any(|w| w.contains("found nothing to do")),
            "{:?}",
            p.why
        );
        let talked = Inputs {
            talk_since_last_cycle: true,
            ..quiet()
        };
        let p = plan(&talked, &st, &s);
        assert_eq!(wait(&p), 30, "talk ends the rest at once: {:?}", p.why);
        let worked = after_cycle(st.clone(), Ended::Neutral, &s);
        assert_eq!(
            wait(&plan(&quiet(), &worked, &s)),
            30,
            "a pass that did something ends it too"
        );
        assert_eq!(worked.idle_passes, 0);
        let long = GardenSettings {
            max_interval_minutes: 100_000,
            ..GardenSettings::default()
        };
        let mut st = State::new(&long);
        for _ in 0..40 {
            st = after_cycle(st, Ended::Idle, &long);
        }
        assert_eq!(
            wait(&plan(&quiet(), &st, &long)),
            30 * 64,
            "the doubling stops at 64 times, whatever the maximum"
        );
    }

    #[test]
    fn the_agents_wish_is_a_proposal() {
        let s = GardenSettings::default();
        let (w, moved) = settle(Duration::minutes(10), Duration::minutes(30), &s);
        assert_eq!(
            (w.num_minutes(), moved),
            (30, true),
            "asked 10, headroom says 30: 30"
        );
        let (w, moved) = settle(Duration::hours(6), Duration::minutes(30), &s);
        assert_eq!(
            (w.num_minutes(), moved),
            (120, true),
            "asked 6 h: pulled to the maximum"
        );
        let (w, moved) = settle(Duration::minutes(45), Duration::minutes(30), &s);
        assert_eq!((w.num_minutes(), moved), (45, false));
    }
}
