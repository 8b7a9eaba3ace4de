//! Rate-limit information learned from provider response headers.
//!
//! OpenAI-compatible servers send `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`
//! with resets as durations (`6m0s`, `20ms`); Anthropic sends
//! `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`
//! with RFC 3339 resets. Both may send `retry-after` (seconds or an HTTP date).
//! The garden's adaptive scheduler and the status widget read these.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RateLimits {
    pub requests_limit: Option<u64>,
    pub requests_remaining: Option<u64>,
    pub requests_reset: Option<DateTime<Utc>>,
    pub tokens_limit: Option<u64>,
    pub tokens_remaining: Option<u64>,
    pub tokens_reset: Option<DateTime<Utc>>,
    /// When these numbers were read.
    pub observed_at: Option<DateTime<Utc>>,
}

impl RateLimits {
    pub(crate) fn has_any(&self) -> bool {
        self.requests_limit.is_some() || self.tokens_limit.is_some()
    }
}

/// Reads whatever rate-limit headers are present; `None` if there are none.
pub(crate) fn parse(headers: &HeaderMap, now: DateTime<Utc>) -> Option<RateLimits> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let num = |name: &str| get(name).and_then(|v| v.parse::<u64>().ok());
    let reset = |name: &str| get(name).and_then(|v| parse_reset(v, now));
    let first_num = |names: &[&str]| names.iter().find_map(|n| num(n));
    let first_reset = |names: &[&str]| names.iter().find_map(|n| reset(n));

    let limits = RateLimits {
        requests_limit: first_num(&[
            "x-ratelimit-limit-requests",
            "anthropic-ratelimit-requests-limit",
        ]),
        requests_remaining: first_num(&[
            "x-ratelimit-remaining-requests",
            "anthropic-ratelimit-requests-remaining",
        ]),
        requests_reset: first_reset(&[
            "x-ratelimit-reset-requests",
            "anthropic-ratelimit-requests-reset",
        ]),
        tokens_limit: first_num(&[
            "x-ratelimit-limit-tokens",
            "anthropic-ratelimit-tokens-limit",
            "anthropic-ratelimit-input-tokens-limit",
        ]),
        tokens_remaining: first_num(&[
            "x-ratelimit-remaining-tokens",
            "anthropic-ratelimit-tokens-remaining",
            "anthropic-ratelimit-input-tokens-remaining",
        ]),
        tokens_reset: first_reset(&[
            "x-ratelimit-reset-tokens",
            "anthropic-ratelimit-tokens-reset",
            "anthropic-ratelimit-input-tokens-reset",
        ]),
        observed_at: Some(now),
    };
    limits.has_any().then_some(limits)
}

/// `retry-after`: whole or fractional seconds, or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let v = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = DateTime::parse_from_rfc2822(v).ok()?.with_timezone(&Utc);
    (at - now).to_std().ok()
}

/// A reset given as an RFC 3339 time, a Go-style duration (`1m30s`, `250ms`), or seconds.
fn parse_reset(v: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(v) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(secs) = v.parse::<f64>() {
        return Some(now + chrono::Duration::milliseconds((secs * 1000.0) as i64));
    }
    parse_go_duration(v).map(|d| now + d)
}

fn parse_go_duration(v: &str) -> Option<chrono::Duration> {
    let mut total_ms = 0.0;
    let mut rest = v;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let (unit_ms, len) = if rest.starts_with("ms") {
            (1.0, 2)
        } else if rest.starts_with('h') {
            (3_600_000.0, 1)
        } else if rest.starts_with('m') {
            (60_000.0, 1)
        } else if rest.starts_with('s') {
            (1_000.0, 1)
        } else {
            return None;
        };
        total_ms += n * unit_ms;
        rest = &rest[len..];
    }
    Some(chrono::Duration::milliseconds(total_ms as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn openai_style_headers() {
        let now = Utc::now();
        let l = parse(
            &headers(&[
                ("x-ratelimit-limit-tokens", "100000"),
                ("x-ratelimit-remaining-tokens", "85000"),
                ("x-ratelimit-reset-tokens", "6m0s"),
                ("x-ratelimit-remaining-requests", "42"),
                ("x-ratelimit-reset-requests", "120ms"),
            ]),
            now,
        )
        .unwrap();
        assert_eq!(l.tokens_limit, Some(100_000));
        assert_eq!(l.tokens_remaining, Some(85_000));
        assert_eq!(l.tokens_reset, Some(now + chrono::Duration::minutes(6)));
        assert_eq!(
            l.requests_reset,
            Some(now + chrono::Duration::milliseconds(120))
        );
    }

    #[test]
    fn anthropic_style_headers_and_retry_after() {
        let now = Utc::now();
        let l = parse(
            &headers(&[
                ("anthropic-ratelimit-tokens-limit", "400000"),
                ("anthropic-ratelimit-tokens-remaining", "390000"),
                ("anthropic-ratelimit-tokens-reset", "2026-02-08T15:00:00Z"),
            ]),
            now,
        )
        .unwrap();
        assert_eq!(l.tokens_remaining, Some(390_000));
        assert_eq!(
            l.tokens_reset.unwrap().to_rfc3339(),
            "2026-02-08T15:00:00+00:00"
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
        assert!(parse(&headers(&[("content-type", "json")]), now).is_none());
    }
}
