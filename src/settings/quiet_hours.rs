//! `initiative.quietHours`: the hours a server wants the bot to keep to
//! itself, written as people say them and read in the server's own zone
//! (`guild.timezone`).
//!
//! ```text
//! "23:00-08:00"                            every night, across midnight
//! "fri,sat 01:00-10:00"                    only nights starting on those days
//! "sun-thu 23:00-07:00; fri,sat 01:00-10:00"   several rules, `;` between them
//! ```
//! A rule is optional days (`mon`…`sun`, lists with `,`, ranges with `-`,
//! wrapping allowed: `fri-mon`) and a time range `HH:MM-HH:MM`; the days are
//! the days a quiet period *starts*. An end not after the start wraps to the
//! next day. Empty: no quiet hours.
//!
//! Each period is the span between two instants: its start and end wall
//! times resolved in the zone on that date. A wall time that does not exist
//! (the hour skipped when clocks go forward) resolves to the first instant
//! after the gap; one that exists twice (clocks going back) to the first of
//! the two. So a period is never negative, never lost, and a DST night is an
//! hour shorter or longer, as it is on the wall.
//!
//! Pure: the settings validator parses with it, and the gates, reply path
//! and status widget ask [`QuietHours::until`] with the clock's time.

use chrono::{
    DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc,
    Weekday,
};
use chrono_tz::Tz;

/// Most rules one setting may hold.
pub(crate) const MAX_RULES: usize = 14;

/// What a valid setting looks like, for error messages.
pub(crate) const EXAMPLE: &str =
    "\"23:00-08:00\", \"fri,sat 01:00-10:00\" or \"sun-thu 23:00-07:00; fri,sat 01:00-10:00\"";

/// Why a quiet-hours setting does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QuietHoursError {
    #[error("has {count} rules; at most {MAX_RULES} are allowed")]
    TooManyRules { count: usize },
    /// One rule is wrong; the message adds what a valid setting looks like.
    #[error("{0}; write e.g. {EXAMPLE}")]
    Rule(#[from] RuleError),
}

/// What is wrong with one `;`-separated rule, naming the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RuleError {
    #[error("{text:?} is not a rule (optional days, then HH:MM-HH:MM)")]
    NotARule { text: String },
    #[error("{range:?} is not a time range (HH:MM-HH:MM)")]
    NotARange { range: String },
    #[error("{text:?} is not a time of day (HH:MM from 00:00 to 23:59)")]
    NotATime { text: String },
    #[error("{range:?} starts and ends at the same time; a quiet period needs two different times")]
    SameTime { range: String },
    #[error("{text:?} names no day")]
    NoDay { text: String },
    #[error("{text:?} is not a day (mon, tue, wed, thu, fri, sat, sun)")]
    NotADay { text: String },
}

/// Quiet hours, parsed. The default has no rules: never quiet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct QuietHours {
    rules: Vec<Rule>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    /// Monday first; the days a period starts.
    days: [bool; 7],
    start: NaiveTime,
    end: NaiveTime,
}

impl QuietHours {
    /// Parses the setting; the error says what is wrong and what is valid.
    pub(crate) fn parse(spec: &str) -> Result<Self, QuietHoursError> {
        let rules: Vec<&str> = spec
            .split(';')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .collect();
        if rules.len() > MAX_RULES {
            return Err(QuietHoursError::TooManyRules { count: rules.len() });
        }
        let rules = rules.into_iter().map(rule).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { rules })
    }

    /// When the quiet period containing `now` ends, if `now` is inside one.
    /// Back-to-back or overlapping periods count as one.
    pub(crate) fn until(&self, now: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        let mut end = self.containing(now, tz)?;
        // A period may end where the next begins ("fri 22:00-00:00; sat 00:00-10:00").
        for _ in 0..=2 * MAX_RULES {
            match self.containing(end, tz) {
                Some(later) if later > end => end = later,
                _ => break,
            }
        }
        Some(end)
    }

    /// When quiet hours next begin or end after `now`: the end of the
    /// period containing `now`, else the first start after it (a week
    /// ahead at most: every rule starts on some day of one). `None`: never.
    pub(crate) fn next_change(&self, now: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        if let Some(end) = self.until(now, tz) {
            return Some(end);
        }
        let today = now.with_timezone(&tz).date_naive();
        (0..=7)
            .filter_map(|d| today.checked_add_days(chrono::Days::new(d)))
            .flat_map(|day| self.periods_starting(day, tz))
            .map(|(start, _)| start)
            .filter(|start| *start > now)
            .min()
    }

    /// The end of the latest-ending period that contains `t`.
    fn containing(&self, t: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        let today = t.with_timezone(&tz).date_naive();
        // A period lasts less than a day, so only yesterday's and today's can hold `t`.
        [today.pred_opt(), Some(today)]
            .into_iter()
            .flatten()
            .flat_map(|day| self.periods_starting(day, tz))
            .filter(|(start, end)| *start <= t && t < *end)
            .map(|(_, end)| end)
            .max()
    }

    /// The periods (as instants) that start on the local date `day`.
    fn periods_starting(&self, day: NaiveDate, tz: Tz) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let weekday = day.weekday().num_days_from_monday() as usize;
        self.rules
            .iter()
            .filter(|r| r.days[weekday])
            .filter_map(|r| {
                let end_day = if r.end > r.start {
                    day
                } else {
                    day.succ_opt()?
                };
                Some((
                    resolve(day.and_time(r.start), tz),
                    resolve(end_day.and_time(r.end), tz),
                ))
            })
            .collect()
    }
}

/// The instant a wall time names: the first of two when it repeats, the end
/// of the gap when it was skipped.
pub(crate) fn resolve(wall: NaiveDateTime, tz: Tz) -> DateTime<Utc> {
    let mut t = wall;
    // Gaps are at most a few hours (most are one); minutes find where the wall clock resumes.
    for _ in 0..=24 * 60 {
        match tz.from_local_datetime(&t) {
            LocalResult::Single(at) => return at.with_timezone(&Utc),
            LocalResult::Ambiguous(first, _) => return first.with_timezone(&Utc),
            LocalResult::None => t += Duration::minutes(1),
        }
    }
    // No zone skips a whole day; read the wall time as UTC rather than fail.
    wall.and_utc()
}

fn rule(text: &str) -> Result<Rule, RuleError> {
    let mut parts = text.split_whitespace();
    let (days, range) = match (parts.next(), parts.next(), parts.next()) {
        (Some(range), None, None) => (None, range),
        (Some(days), Some(range), None) => (Some(days), range),
        _ => {
            return Err(RuleError::NotARule { text: text.into() });
        }
    };
    let (start, end) = range.split_once('-').ok_or_else(|| RuleError::NotARange {
        range: range.into(),
    })?;
    let (start, end) = (time(start)?, time(end)?);
    if start == end {
        return Err(RuleError::SameTime {
            range: range.into(),
        });
    }
    let days = match days {
        None => [true; 7],
        Some(d) => weekdays(d)?,
    };
    Ok(Rule { days, start, end })
}

fn time(text: &str) -> Result<NaiveTime, RuleError> {
    let bad = || RuleError::NotATime { text: text.into() };
    let (h, m) = text.split_once(':').ok_or_else(bad)?;
    let digits = |s: &str, max: u32| {
        (!s.is_empty() && s.len() <= 2 && s.chars().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
            .filter(|n| *n <= max)
    };
    match (digits(h, 23), digits(m, 59).filter(|_| m.len() == 2)) {
        (Some(h), Some(m)) => NaiveTime::from_hms_opt(h, m, 0).ok_or_else(bad),
        _ => Err(bad()),
    }
}

fn weekdays(text: &str) -> Result<[bool; 7], RuleError> {
    let mut days = [false; 7];
    for item in text.split(',').filter(|i| !i.is_empty()) {
        let (from, to) = match item.split_once('-') {
            Some((a, b)) => (weekday(a)?, weekday(b)?),
            None => (weekday(item)?, weekday(item)?),
        };
        let mut d = from;
        loop {
            days[d.num_days_from_monday() as usize] = true;
            if d == to {
                break;
            }
            d = d.succ();
        }
    }
    if days.iter().all(|d| !d) {
        return Err(RuleError::NoDay { text: text.into() });
    }
    Ok(days)
}

fn weekday(text: &str) -> Result<Weekday, RuleError> {
    let lower = text.to_ascii_lowercase();
    const NAMES: [(&str, Weekday); 7] = [
        ("monday", Weekday::Mon),
        ("tuesday", Weekday::Tue),
        ("wednesday", Weekday::Wed),
        ("thursday", Weekday::Thu),
        ("friday", Weekday::Fri),
        ("saturday", Weekday::Sat),
        ("sunday", Weekday::Sun),
    ];
    NAMES
        .iter()
        .find(|(full, _)| lower.len() >= 3 && full.starts_with(&lower))
        .map(|(_, d)| *d)
        .ok_or_else(|| RuleError::NotADay { text: text.into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn berlin() -> Tz {
        "Europe/Berlin".parse().unwrap()
    }

    #[test]
    fn a_night_wraps_midnight_in_the_servers_zone() {
        let q = QuietHours::parse("23:00-08:00").unwrap();
        let tz = berlin();
        // 2026-01-05 is a Monday; Berlin is UTC+1 in winter.
        assert_eq!(
            q.until(utc("2026-01-05T21:59:00Z"), tz),
            None,
            "22:59 Berlin"
        );
        assert_eq!(
            q.until(utc("2026-01-05T22:00:00Z"), tz),
            Some(utc("2026-01-06T07:00:00Z")),
            "23:00 Berlin is quiet until 08:00 Berlin"
        );
        assert_eq!(
            q.until(utc("2026-01-06T03:00:00Z"), tz),
            Some(utc("2026-01-06T07:00:00Z"))
        );
        assert_eq!(
            q.until(utc("2026-01-06T07:00:00Z"), tz),
            None,
            "08:00 is awake"
        );
    }

    #[test]
    fn next_change_is_the_first_minute_quiet_hours_begin_or_end() {
        let tz = berlin();
        // Across the spring change (2026-03-29) and a week of rules.
        let q =
            QuietHours::parse("fri,sat 01:00-10:00; sun-thu 23:00-07:00; wed 12:00-12:30").unwrap();
        let start = utc("2026-03-24T00:00:00Z");
        let mut t = start;
        while t < start + Duration::days(10) {
            let change = q.next_change(t, tz).expect("a change within the week");
            assert!(change > t);
            let quiet = q.until(t, tz).is_some();
            let mut m = t + Duration::minutes(1);
            while m < change {
                assert_eq!(
                    q.until(m, tz).is_some(),
                    quiet,
                    "no change at {m} before {change}"
                );
                m += Duration::minutes(1);
            }
            assert_ne!(q.until(change, tz).is_some(), quiet, "a change at {change}");
            t = change;
        }
        assert_eq!(QuietHours::default().next_change(start, tz), None);
    }

    #[test]
    fn days_are_the_days_a_period_starts() {
        let q = QuietHours::parse("fri,sat 01:00-10:00; sun-thu 23:00-07:00").unwrap();
        let tz: Tz = "UTC".parse().unwrap();
        // 2026-01-09 is a Friday.
        assert_eq!(
            q.until(utc("2026-01-09T05:00:00Z"), tz),
            Some(utc("2026-01-09T10:00:00Z")),
            "Friday 05:00: the Friday rule"
        );
        assert_eq!(
            q.until(utc("2026-01-09T00:30:00Z"), tz),
            Some(utc("2026-01-09T10:00:00Z")),
            "Friday 00:30: Thursday night's period runs into Friday's"
        );
        assert_eq!(
            q.until(utc("2026-01-09T23:30:00Z"), tz),
            None,
            "Friday 23:30: no rule starts Friday at 23:00"
        );
        assert_eq!(
            q.until(utc("2026-01-11T23:30:00Z"), tz),
            Some(utc("2026-01-12T07:00:00Z")),
            "Sunday night"
        );
    }

    #[test]
    fn back_to_back_periods_are_one() {
        let q = QuietHours::parse("fri 22:00-00:00; sat 00:00-10:00").unwrap();
        let tz: Tz = "UTC".parse().unwrap();
        assert_eq!(
            q.until(utc("2026-01-09T22:30:00Z"), tz),
            Some(utc("2026-01-10T10:00:00Z"))
        );
    }

    #[test]
    fn the_spring_forward_night_is_an_hour_shorter() {
        // Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 never happens.
        let tz = berlin();
        let q = QuietHours::parse("23:00-08:00").unwrap();
        assert_eq!(
            q.until(utc("2026-03-28T22:30:00Z"), tz),
            Some(utc("2026-03-29T06:00:00Z")),
            "08:00 CEST is 06:00 UTC"
        );
        // A period ending at the skipped 02:30 ends when the clocks jump, at 03:00 CEST.
        let gap = QuietHours::parse("23:00-02:30").unwrap();
        assert_eq!(
            gap.until(utc("2026-03-29T00:30:00Z"), tz),
            Some(utc("2026-03-29T01:00:00Z"))
        );
        assert_eq!(gap.until(utc("2026-03-29T01:00:00Z"), tz), None);
        // One starting in the gap starts then too.
        let starts = QuietHours::parse("02:30-06:00").unwrap();
        assert_eq!(starts.until(utc("2026-03-29T00:59:00Z"), tz), None);
        assert_eq!(
            starts.until(utc("2026-03-29T01:00:00Z"), tz),
            Some(utc("2026-03-29T04:00:00Z"))
        );
    }

    #[test]
    fn the_fall_back_night_is_an_hour_longer_and_ends_at_the_first_repeat() {
        // Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:00–02:59 happen twice.
        let tz = berlin();
        let q = QuietHours::parse("23:00-08:00").unwrap();
        assert_eq!(
            q.until(utc("2026-10-24T21:00:00Z"), tz),
            Some(utc("2026-10-25T07:00:00Z")),
            "23:00 CEST to 08:00 CET: ten hours"
        );
        let twice = QuietHours::parse("23:00-02:30").unwrap();
        assert_eq!(
            twice.until(utc("2026-10-24T23:00:00Z"), tz),
            Some(utc("2026-10-25T00:30:00Z")),
            "the first 02:30 (CEST)"
        );
        assert_eq!(
            twice.until(utc("2026-10-25T01:15:00Z"), tz),
            None,
            "the second 02:15 (CET) is after the period"
        );
    }

    #[test]
    fn bad_settings_say_what_is_wrong_and_what_is_valid() {
        let e = QuietHours::parse("25:00-08:00").unwrap_err().to_string();
        assert!(
            e.starts_with("\"25:00\" is not a time of day (HH:MM from 00:00 to 23:59); write e.g. \"23:00-08:00\""),
            "{e}"
        );
        assert!(
            QuietHours::parse("23:00")
                .unwrap_err()
                .to_string()
                .contains("not a time range")
        );
        assert!(
            QuietHours::parse("23:00-23:00")
                .unwrap_err()
                .to_string()
                .contains("same time")
        );
        assert!(
            QuietHours::parse("fry 23:00-01:00")
                .unwrap_err()
                .to_string()
                .contains("\"fry\" is not a day")
        );
        assert!(
            QuietHours::parse("8:5-9:00").is_err(),
            "minutes take two digits"
        );
        assert!(QuietHours::parse("").unwrap().rules.is_empty());
        assert!(QuietHours::parse(" ; ").unwrap().rules.is_empty());
        let many = vec!["01:00-02:00"; MAX_RULES + 1].join(";");
        assert!(
            QuietHours::parse(&many)
                .unwrap_err()
                .to_string()
                .contains("at most")
        );
        assert_eq!(
            QuietHours::parse("Friday-Monday 8:00-9:30").unwrap(),
            QuietHours::parse("fri,sat,sun,mon 08:00-09:30").unwrap(),
            "full names, wrapping ranges, one-digit hours"
        );
    }
}
