//! Times people give tasks and schedules: "in 10m", "in 2 hours",
//! "tomorrow 9:00", "2026-03-01 14:00", RFC 3339; and cron expressions, the
//! 5-field crontab form included (the cron crate wants a leading seconds
//! field, so `*/5 * * * *` becomes `0 */5 * * * *`). Wall-clock times are
//! read in the server's zone (`guild.timezone`, else `impulses.timezone`).

use std::str::FromStr;

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// A due time nobody can read; holds the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DueError {
    /// "tomorrow …" or "today …" with a time that is not one; `example` shows a good one.
    #[error("{text:?}: not a time of day (try \"{example}\")")]
    NotATimeOfDay { text: String, example: &'static str },
    #[error(
        "{text:?} is not a time I understand: use \"in 10m\", \"in 2 hours\", \"tomorrow 9:00\", \"18:30\" or \"2026-03-01 14:00\""
    )]
    NotUnderstood { text: String },
}

/// Why a cron expression is refused, with the expression as written.
#[derive(Debug, thiserror::Error)]
pub enum CronError {
    #[error("{expr:?} has {count} fields; a cron expression has 5 ({CRONTAB_GUIDE})")]
    FieldCount { expr: String, count: usize },
    /// One field's numbers or steps are wrong; `field` is its unit's name.
    #[error("{expr:?}: the {field} field {problem}")]
    Field {
        expr: String,
        field: &'static str,
        problem: FieldProblem,
    },
    /// The cron crate refused a crontab line: show the guide, not its internal 6-field form.
    #[error("{expr:?} is not a valid cron expression ({CRONTAB_GUIDE})")]
    Crontab { expr: String },
    #[error("{expr:?} is not a valid cron expression: {source}")]
    Invalid {
        expr: String,
        source: cron::error::Error,
    },
}

/// What is wrong inside one cron field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldProblem {
    #[error("has the step {step:?} in {item:?}; a step is a whole number of 1 or more")]
    BadStep { step: String, item: String },
    #[error("has {n}, but {plural} are {lo}–{hi}")]
    OutOfRange {
        n: u32,
        plural: &'static str,
        lo: u32,
        hi: u32,
    },
    #[error("has a bad step in {item:?}")]
    BadWeekdayStep { item: String },
    #[error("has {n:?}, but weekdays are 0–7 (Sunday is 0 or 7)")]
    NotAWeekday { n: String },
    #[error("has the empty range {item:?}")]
    EmptyRange { item: String },
}

/// When something is due, from what a person (or the model) wrote.
pub(crate) fn parse_due(text: &str, now: DateTime<Utc>, tz: Tz) -> Result<DateTime<Utc>, DueError> {
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
        .ok_or_else(|| DueError::NotATimeOfDay {
            text: text.into(),
            example: "tomorrow 9:00",
        });
    }
    if let Some(rest) = t.strip_prefix("today") {
        return at_day(
            local_now.date_naive(),
            rest.trim().trim_start_matches("at ").trim(),
        )
        .ok_or_else(|| DueError::NotATimeOfDay {
            text: text.into(),
            example: "today 18:30",
        });
    }
    for format in ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(t, format)
            && let Some(at) = tz.from_local_datetime(&naive).earliest()
        {
            return Ok(at.with_timezone(&Utc));
        }
    }
    if let Ok(day) = NaiveDate::parse_from_str(t, "%Y-%m-%d")
        && let Some(at) = at_day(day, "")
    {
        return Ok(at);
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
    Err(DueError::NotUnderstood { text: text.into() })
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
    // "at 9": a bare hour.
    if !t.is_empty() && t.len() <= 2 && t.chars().all(|c| c.is_ascii_digit()) {
        return NaiveTime::from_hms_opt(t.parse().ok()?, 0, 0);
    }
    // "7pm", "7:30 am" (chrono cannot read an hour without minutes this way).
    for (suffix, offset) in [("am", 0), ("pm", 12)] {
        if let Some(clock) = t.strip_suffix(suffix).map(str::trim_end) {
            let (h, m) = clock.split_once(':').unwrap_or((clock, "0"));
            let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
            if !(1..=12).contains(&h) {
                return None;
            }
            return NaiveTime::from_hms_opt(h % 12 + offset, m, 0);
        }
    }
    for format in ["%H:%M", "%H.%M"] {
        if let Ok(time) = NaiveTime::parse_from_str(t, format) {
            return Some(time);
        }
    }
    None
}

/// A recurring schedule: one cron schedule, or two when a crontab line
/// restricts both the day of the month and the weekday (crontab then fires
/// on either, where the cron crate would want both).
#[derive(Clone, Debug)]
pub(crate) struct Cron {
    schedules: Vec<cron::Schedule>,
}

/// A cron expression. The 5-field crontab form (`*/5 * * * *`, `0 9 * * 1-5`)
/// means what it means in crontab: weekdays 0–7 with Sunday as 0 or 7. The
/// cron crate's own 6/7-field form (leading seconds, Sunday = 1) is passed
/// through as it is.
pub(crate) fn parse_cron(expr: &str) -> Result<Cron, CronError> {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let units: &[Unit] = match fields.len() {
        5 => &CRONTAB_UNITS,
        6 | 7 => &CRATE_UNITS[..fields.len()],
        count => {
            return Err(CronError::FieldCount {
                expr: expr.into(),
                count,
            });
        }
    };
    let in_field = |field: &'static str| {
        move |problem| CronError::Field {
            expr: expr.into(),
            field,
            problem,
        }
    };
    for (field, unit) in fields.iter().zip(units) {
        check_field(field, unit).map_err(in_field(unit.name))?;
    }
    // Errors past our own checks are rare (odd syntax); the cron crate's
    // message would show its internal 6-field form, so the crontab form's
    // error shows the valid fields instead.
    let parse = |full: String| {
        cron::Schedule::from_str(&full).map_err(|source| match fields.len() {
            5 => CronError::Crontab { expr: expr.into() },
            _ => CronError::Invalid {
                expr: expr.into(),
                source,
            },
        })
    };
    let schedules = match fields.as_slice() {
        [minute, hour, dom, month, dow] => {
            let dow = crontab_weekdays(dow).map_err(in_field("weekday"))?;
            let restricted = |f: &str| f != "*" && f != "?";
            if restricted(dom) && restricted(&dow) {
                vec![
                    parse(format!("0 {minute} {hour} {dom} {month} *"))?,
                    parse(format!("0 {minute} {hour} * {month} {dow}"))?,
                ]
            } else {
                vec![parse(format!("0 {minute} {hour} {dom} {month} {dow}"))?]
            }
        }
        _ => vec![parse(expr.trim().to_string())?],
    };
    Ok(Cron { schedules })
}

/// What a crontab expression's fields are, for error messages.
const CRONTAB_GUIDE: &str = "minute hour day-of-month month weekday: minute 0–59, hour 0–23, \
     day 1–31, month 1–12 or JAN–DEC, weekday 0–7 or SUN–SAT (Sunday is 0 or 7); \
     e.g. \"*/5 * * * *\" or \"0 9 * * 1-5\"";

/// One cron field's name and the numbers it accepts.
struct Unit {
    name: &'static str,
    plural: &'static str,
    lo: u32,
    hi: u32,
}

const fn unit(name: &'static str, plural: &'static str, lo: u32, hi: u32) -> Unit {
    Unit {
        name,
        plural,
        lo,
        hi,
    }
}

/// The weekday is checked by `crontab_weekdays`, which knows Sunday's two numbers.
const CRONTAB_UNITS: [Unit; 4] = [
    unit("minute", "minutes", 0, 59),
    unit("hour", "hours", 0, 23),
    unit("day-of-month", "days of the month", 1, 31),
    unit("month", "months", 1, 12),
];

/// The cron crate's own form: a leading seconds field, Sunday = 1, a year.
const CRATE_UNITS: [Unit; 7] = [
    unit("seconds", "seconds", 0, 59),
    unit("minute", "minutes", 0, 59),
    unit("hour", "hours", 0, 23),
    unit("day-of-month", "days of the month", 1, 31),
    unit("month", "months", 1, 12),
    unit(
        "weekday",
        "weekdays (in the 6-field form, Sunday is 1)",
        1,
        7,
    ),
    unit("year", "years", 1970, 2100),
];

/// The numbers in one field (`5`, `1-5`, `*/15`, `0,30`) are in the unit's
/// range. Names and anything unusual are left to the cron crate.
fn check_field(field: &str, unit: &Unit) -> Result<(), FieldProblem> {
    for item in field.split(',') {
        let (base, step) = item.split_once('/').unwrap_or((item, "1"));
        if step.parse::<u32>().map_or(true, |s| s == 0) {
            return Err(FieldProblem::BadStep {
                step: step.into(),
                item: item.into(),
            });
        }
        let numbers = base.split_once('-').map_or(vec![base], |(a, b)| vec![a, b]);
        for n in numbers.iter().filter_map(|n| n.parse::<u32>().ok()) {
            if n < unit.lo || n > unit.hi {
                return Err(FieldProblem::OutOfRange {
                    n,
                    plural: unit.plural,
                    lo: unit.lo,
                    hi: unit.hi,
                });
            }
        }
    }
    Ok(())
}

/// Crontab weekdays (0–7, Sunday 0 or 7) as the cron crate's (1–7, Sunday 1).
/// Names (`MON-FRI`) mean the same in both and pass through.
fn crontab_weekdays(field: &str) -> Result<String, FieldProblem> {
    if field == "*" || field == "?" {
        return Ok(field.to_string());
    }
    let mut items = Vec::new();
    for item in field.split(',') {
        if item.chars().any(|c| c.is_ascii_alphabetic()) {
            items.push(item.to_string());
            continue;
        }
        let (base, step) = match item.split_once('/') {
            Some((b, s)) => (
                b,
                s.parse::<usize>()
                    .map_err(|_| FieldProblem::BadWeekdayStep { item: item.into() })?,
            ),
            None => (item, 1),
        };
        let num = |n: &str| match n.parse::<u32>() {
            Ok(v) if v <= 7 => Ok(v),
            _ => Err(FieldProblem::NotAWeekday { n: n.into() }),
        };
        let (from, to) = match base.split_once('-') {
            _ if base == "*" => (0, 6),
            Some((a, b)) => (num(a)?, num(b)?),
            None if step > 1 => (num(base)?, 6),
            None => (num(base)?, num(base)?),
        };
        if from > to || step == 0 {
            return Err(FieldProblem::EmptyRange { item: item.into() });
        }
        let mut days: Vec<u32> = (from..=to).step_by(step).map(|d| d % 7 + 1).collect();
        days.sort_unstable();
        days.dedup();
        items.extend(days.iter().map(u32::to_string));
    }
    Ok(items.join(","))
}

/// The first time `schedule` fires after `after`, in `tz`.
pub(crate) fn next_fire(schedule: &Cron, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
    schedule
        .schedules
        .iter()
        .filter_map(|s| s.after(&after.with_timezone(&tz)).next())
        .map(|d| d.with_timezone(&Utc))
        .min()
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
            parse_due("tomorrow at 9", now, utc).unwrap(),
            at("2026-01-06T09:00:00Z")
        );
        assert_eq!(
            parse_due("at 7pm", now, utc).unwrap(),
            at("2026-01-05T19:00:00Z")
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
                .to_string()
                .contains("in 10m")
        );
    }

    #[test]
    fn crontab_expressions_are_accepted() {
        let s = parse_cron("*/5 * * * *").unwrap();
        let utc: Tz = "UTC".parse().unwrap();
        let next = next_fire(&s, at("2026-01-05T12:03:00Z"), utc).unwrap();
        assert_eq!(next, at("2026-01-05T12:05:00Z"));
        assert!(
            parse_cron("* * *")
                .unwrap_err()
                .to_string()
                .contains("5 (minute hour")
        );
        assert!(
            parse_cron("0 9 * * 8")
                .unwrap_err()
                .to_string()
                .contains("weekdays are 0–7")
        );
    }

    #[test]
    fn cron_errors_show_the_expression_as_written_and_the_real_range() {
        assert_eq!(
            parse_cron("61 * * * *").unwrap_err().to_string(),
            "\"61 * * * *\": the minute field has 61, but minutes are 0–59"
        );
        assert_eq!(
            parse_cron("0 24 * * *").unwrap_err().to_string(),
            "\"0 24 * * *\": the hour field has 24, but hours are 0–23"
        );
        assert_eq!(
            parse_cron("0 9 0 * *").unwrap_err().to_string(),
            "\"0 9 0 * *\": the day-of-month field has 0, but days of the month are 1–31"
        );
        assert_eq!(
            parse_cron("0 9 * 1-13 *").unwrap_err().to_string(),
            "\"0 9 * 1-13 *\": the month field has 13, but months are 1–12"
        );
        assert!(
            parse_cron("*/0 * * * *")
                .unwrap_err()
                .to_string()
                .contains("a step is a whole number of 1 or more")
        );
        // Syntax the crate refuses: the guide, never the internal 6-field form.
        let odd = parse_cron("5-x * * * *").unwrap_err().to_string();
        assert!(
            odd.starts_with("\"5-x * * * *\" is not a valid cron"),
            "{odd}"
        );
        assert!(odd.contains("minute 0–59, hour 0–23"), "{odd}");
        assert!(!odd.contains("0 5-x"), "{odd}");
        // The crate's own 6-field form is checked in its own terms.
        assert_eq!(
            parse_cron("0 60 * * * *").unwrap_err().to_string(),
            "\"0 60 * * * *\": the minute field has 60, but minutes are 0–59"
        );
    }

    #[test]
    fn crontab_weekdays_mean_what_they_mean_in_crontab() {
        let utc: Tz = "UTC".parse().unwrap();
        // 2026-01-09 is a Friday.
        let weekdays = parse_cron("0 9 * * 1-5").unwrap();
        assert_eq!(
            next_fire(&weekdays, at("2026-01-09T10:00:00Z"), utc).unwrap(),
            at("2026-01-12T09:00:00Z"),
            "Friday → Monday"
        );
        let sunday = parse_cron("0 9 * * 0").unwrap();
        assert_eq!(
            next_fire(&sunday, at("2026-01-09T10:00:00Z"), utc).unwrap(),
            at("2026-01-11T09:00:00Z")
        );
        let also_sunday = parse_cron("0 9 * * 7").unwrap();
        assert_eq!(
            next_fire(&also_sunday, at("2026-01-09T10:00:00Z"), utc).unwrap(),
            at("2026-01-11T09:00:00Z")
        );
        let weekend = parse_cron("0 9 * * 6-7").unwrap();
        assert_eq!(
            next_fire(&weekend, at("2026-01-09T10:00:00Z"), utc).unwrap(),
            at("2026-01-10T09:00:00Z"),
            "Saturday"
        );
        let names = parse_cron("0 9 * * MON-FRI").unwrap();
        assert_eq!(
            next_fire(&names, at("2026-01-09T10:00:00Z"), utc).unwrap(),
            at("2026-01-12T09:00:00Z")
        );
        // Day of month and weekday both set: either one (crontab's rule).
        let either = parse_cron("0 9 13 * 1").unwrap();
        assert_eq!(
            next_fire(&either, at("2026-01-09T10:00:00Z"), utc).unwrap(),
            at("2026-01-12T09:00:00Z"),
            "Monday the 12th"
        );
        assert_eq!(
            next_fire(&either, at("2026-01-12T10:00:00Z"), utc).unwrap(),
            at("2026-01-13T09:00:00Z"),
            "then the 13th"
        );
        // In the guild's timezone.
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let nine = parse_cron("0 9 * * *").unwrap();
        assert_eq!(
            next_fire(&nine, at("2026-01-09T10:00:00Z"), berlin).unwrap(),
            at("2026-01-10T08:00:00Z")
        );
    }
}
