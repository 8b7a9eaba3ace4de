//! Parsing the time windows people type: `--since 24h`, `7d`, `30m`, `2w`,
//! `2026-01-01`, or a full RFC 3339 timestamp. Used by every CLI verb and
//! slash command that filters by time.

use chrono::{DateTime, NaiveDate, Utc};

/// A time window nobody can read: the text as typed, for the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{spec:?} is not a time window: use a duration like 30m, 24h, 7d or 2w, or a date like 2026-01-31"
)]
pub(crate) struct NotAWindow {
    pub spec: String,
}

/// The instant `spec` refers to, relative to `now` for durations.
pub(crate) fn parse_since(spec: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, NotAWindow> {
    let spec = spec.trim();
    if let Some(d) = parse_duration(spec) {
        return Ok(now - d);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(spec) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(spec, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    Err(NotAWindow {
        spec: spec.to_string(),
    })
}

/// `90s`, `30m`, `24h`, `7d`, `2w` (one number and one unit).
pub(crate) fn parse_duration(spec: &str) -> Option<chrono::Duration> {
    let spec = spec.trim();
    let split = spec.find(|c: char| !c.is_ascii_digit())?;
    let (num, unit) = spec.split_at(split);
    let n: i64 = num.parse().ok()?;
    let seconds = match unit {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    chrono::Duration::try_seconds(n.checked_mul(seconds)?)
}

/// "3m ago", "2h ago", "5d ago" — short and human.
pub(crate) fn ago(then: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let s = (now - then).num_seconds();
    if s < 0 {
        return "in the future".into();
    }
    format!("{} ago", span(s))
}

/// "in 10m", "in 3h", or "now" for the past; rounded to the nearest unit,
/// so a task due "in 2 hours" still reads "in 2h" a second later.
pub(crate) fn until(then: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let s = (then - now).num_seconds();
    if s <= 0 {
        return "now".into();
    }
    let rounded = match s {
        s if s < 60 => s,
        s if s < 3_600 => (s + 30) / 60 * 60,
        s if s < 86_400 => (s + 1_800) / 3_600 * 3_600,
        s => (s + 43_200) / 86_400 * 86_400,
    };
    format!("in {}", span(rounded))
}

fn span(s: i64) -> String {
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3_600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3_600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse() {
        let now = DateTime::parse_from_rfc3339("2026-03-10T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            parse_since("24h", now).unwrap(),
            now - chrono::Duration::hours(24)
        );
        assert_eq!(
            parse_since("7d", now).unwrap(),
            now - chrono::Duration::days(7)
        );
        assert_eq!(
            parse_since("2026-03-01", now).unwrap().to_rfc3339(),
            "2026-03-01T00:00:00+00:00"
        );
        let err = parse_since("yesterday", now).unwrap_err().to_string();
        assert!(err.contains("30m, 24h, 7d"), "{err}");
        assert_eq!(ago(now - chrono::Duration::minutes(3), now), "3m ago");
    }
}
