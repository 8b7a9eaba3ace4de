//! Times people give tasks and schedules: "in 10m", "in 2 hours",
//! "tomorrow 9:00", "2026-03-01 14:00", RFC 3339; and cron expressions, the
//! 5-field crontab form included (the cron crate wants a leading seconds
//! field, so `*/5 * * * *` becomes `0 */5 * * * *`). Wall-clock times are
//! read in the guild's timezone (`impulses.timezone`).

use std::str::FromStr;

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// When something is due, from what a person (or the model) wrote.
pub fn parse_due(text: &str, now: DateTime<Utc>, tz: Tz) -> Result<DateTime<Utc>, String> {
    let t = text.trim().to_lowercase();
    let t = t
        .strip_prefix("in ")
        .or_else(|| t.strip_prefix("at "))
        .unwrap_or(&t)
        .trim();
    if let Some(d) = relative(t) {
        return Ok(now + d);
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(at.with_timezone(&Utc));
    }
    let local_now = now.with_timezone(&tz);
    let at_day = |day: NaiveDate, time: &str| -> Option<DateTime<Utc>> {
        let time = if time.is_empty() {
            NaiveTime::from_hms_opt(9, 0, 0)?
        } else {
            parse_time(time)?
        };
        tz.from_local_datetime(&day.and_time(time))
            .earliest()
            .map(|d| d.with_timezone(&Utc))
    };
    if let Some(rest) = t.strip_prefix("tomorrow") {
        return at_day(
            local_now.date_naive() + Duration::days(1),
            rest.trim().trim_start_matches("at ").trim(),
        )
        .ok_or_else(|| format!("{text:?}: not a time of day (try \"tomorrow 9:00\")"));
    }
    if let Some(rest) = t.strip_prefix("today") {
        return at_day(
            local_now.date_naive(),
            rest.trim().trim_start_matches("at ").trim(),
        )
        .ok_or_else(|| format!("{text:?}: not a time of day (try \"today 18:30\")"));
    }
    for format in ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(t, format) {
            if let Some(at) = tz.from_local_datetime(&naive).earliest() {
                return Ok(at.with_timezone(&Utc));
            }
        }
    }
    if let Ok(day) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        if let Some(at) = at_day(day, "") {
            return Ok(at);
        }
    }
    if let Some(time) = parse_time(t) {
        // A bare time: the next time the clock shows it.
        let today = tz
            .from_local_datetime(&local_now.date_naive().and_time(time))
            .earliest()
            .map(|d| d.with_timezone(&Utc));
        if let Some(at) = today {
            return Ok(if at > now { at } else { at + Duration::days(1) });
        }
    }
    Err(format!(
        "{text:?} is not a time I understand: use \"in 10m\", \"in 2 hours\", \"tomorrow 9:00\", \"18:30\" or \"2026-03-01 14:00\""
    ))
}

/// "10m", "2 hours", "3d", "1 week".
fn relative(t: &str) -> Option<Duration> {
    let split = t.find(|c: char| !c.is_ascii_digit())?;
    let n: i64 = t[..split].parse().ok()?;
    let unit = t[split..].trim();
    let minutes = match unit {
        "m" | "min" | "mins" | "minute" | "minutes" => 1,
        "h" | "hr" | "hrs" | "hour" | "hours" => 60,
        "d" | "day" | "days" => 1_440,
        "w" | "week" | "weeks" => 10_080,
        _ => return None,
    };
    Duration::try_minutes(n.checked_mul(minutes)?)
}

fn parse_time(t: &str) -> Option<NaiveTime> {
    let t = t.trim();
    for format in ["%H:%M", "%H.%M", "%I:%M%P", "%I%P", "%I:%M %P", "%I %P"] {
        if let Ok(time) = NaiveTime::parse_from_str(t, format) {
            return Some(time);
        }
    }
    None
}

/// A cron expression; 5 fields (crontab) or the cron crate's 6/7.
pub fn parse_cron(expr: &str) -> Result<cron::Schedule, String> {
    let fields = expr.split_whitespace().count();
    let full = match fields {
        5 => format!("0 {}", expr.trim()),
        6 | 7 => expr.trim().to_string(),
        n => {
            return Err(format!(
                "{expr:?} has {n} fields; a cron expression has 5 (minute hour day month weekday)"
            ));
        }
    };
    cron::Schedule::from_str(&full)
        .map_err(|e| format!("{expr:?} is not a valid cron expression: {e}"))
}

/// The first time `schedule` fires after `after`, in `tz`.
pub fn next_fire(schedule: &cron::Schedule, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
    schedule
        .after(&after.with_timezone(&tz))
        .next()
        .map(|d| d.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn people_write_times_many_ways() {
        let now = at("2026-01-05T12:00:00Z");
        let utc: Tz = "UTC".parse().unwrap();
        assert_eq!(
            parse_due("in 10m", now, utc).unwrap(),
            at("2026-01-05T12:10:00Z")
        );
        assert_eq!(
            parse_due("2 hours", now, utc).unwrap(),
            at("2026-01-05T14:00:00Z")
        );
        assert_eq!(
            parse_due("tomorrow 9:00", now, utc).unwrap(),
            at("2026-01-06T09:00:00Z")
        );
        assert_eq!(
            parse_due("11:30", now, utc).unwrap(),
            at("2026-01-06T11:30:00Z"),
            "a past time means tomorrow"
        );
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        assert_eq!(
            parse_due("2026-01-05 14:00", now, berlin).unwrap(),
            at("2026-01-05T13:00:00Z")
        );
        assert!(
            parse_due("whenever", now, utc)
                .unwrap_err()
                .contains("in 10m")
        );
    }

    #[test]
    fn crontab_expressions_are_accepted() {
        let s = parse_cron("*/5 * * * *").unwrap();
        let utc: Tz = "UTC".parse().unwrap();
        let next = next_fire(&s, at("2026-01-05T12:03:00Z"), utc).unwrap();
        assert_eq!(next, at("2026-01-05T12:05:00Z"));
        assert!(parse_cron("* * *").unwrap_err().contains("5 (minute hour"));
        assert!(parse_cron("61 * * * *").is_err());
    }
}
