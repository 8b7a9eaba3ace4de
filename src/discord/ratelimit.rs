//! Our own rate limiting for the chat transport, used when `discord.apiBaseUrl`
//! points at a Discord-compatible server that answers 429s with no
//! rate-limiting proxy in between (`discord.restProxyHandlesRateLimits: false`).
//!
//! Serenity's limiter cannot serve there: it sends every request to discord.com
//! (it ignores the base URL), and with it off serenity hands a 429 back with
//! `retry_after` and the headers gone. So the transport's requests are performed
//! here, with serenity's public `Request`/`Route` on the same reqwest client
//! serenity got, and the answer's headers are read:
//! - `X-RateLimit-Remaining: 0` blocks the route until `X-RateLimit-Reset-After`;
//! - a 429 blocks the route (or everything, when global) for `retry-after`
//!   (an exponential 1 s, 2 s, 4 s… when the server gave none), and the request
//!   is retried at most `RETRIES` times; a wait longer than `MAX_WAIT` is not
//!   waited for: the 429 is returned.
//!
//! Against discord.com itself serenity's limiter serves and this one is off:
//! never two limiters on one request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use serenity::http::{ErrorResponse, HttpError, Request};

use crate::metrics::Metrics;

/// Retries after a 429, per request.
const RETRIES: u32 = 4;
/// Waits the server asks for beyond this are not waited for.
const MAX_WAIT: Duration = Duration::from_secs(60);

pub(crate) struct Limiter {
    client: reqwest::Client,
    base: String,
    /// Route → the moment it may be used again.
    routes: Mutex<HashMap<String, Instant>>,
    global: Mutex<Option<Instant>>,
    /// Where 429s and retries are counted, once the app is built.
    metrics: OnceLock<Arc<Metrics>>,
}

/// Whether serenity's error is the server's 429 Too Many Requests.
pub(crate) fn is_rate_limited(e: &serenity::Error) -> bool {
    matches!(e, serenity::Error::Http(h) if h.status_code().map(|s| s.as_u16()) == Some(429))
}

fn header<T: std::str::FromStr>(headers: &HeaderMap, name: &str) -> Option<T> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// Seconds from a header, refused when not a finite, non-negative number.
fn seconds(headers: &HeaderMap, name: &str) -> Option<Duration> {
    let s: f64 = header(headers, name)?;
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(1e6)))
}

/// The wait a 429 asks for, and whether it is global.
fn retry_after(headers: &HeaderMap, attempt: u32) -> (Duration, bool) {
    let global = header::<String>(headers, "x-ratelimit-global")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || header::<String>(headers, "x-ratelimit-scope").as_deref() == Some("global");
    let wait =
        seconds(headers, "retry-after").unwrap_or_else(|| Duration::from_secs(1 << attempt.min(5)));
    (wait, global)
}

impl Limiter {
    /// `base` is `discord.apiBaseUrl`; `client` the one serenity was given.
    pub(crate) fn new(client: reqwest::Client, base: &str) -> Self {
        Self {
            client,
            base: base.trim_end_matches('/').to_string(),
            routes: Mutex::new(HashMap::new()),
            global: Mutex::new(None),
            metrics: OnceLock::new(),
        }
    }

    /// Counts 429s and retries into `metrics` from now on.
    pub(crate) fn count_into(&self, metrics: &Arc<Metrics>) {
        // Harmless when already set: one process has one `Metrics`.
        let _ = self.metrics.set(metrics.clone());
    }

    fn until(&self, route: &str) -> Option<Instant> {
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        let global = *self.global.lock().unwrap_or_else(|p| p.into_inner());
        routes.get(route).copied().max(global)
    }

    fn block(&self, route: &str, wait: Duration, global: bool) {
        let until = Instant::now() + wait;
        if global {
            let mut g = self.global.lock().unwrap_or_else(|p| p.into_inner());
            *g = (*g).max(Some(until));
        } else {
            let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
            let entry = routes.entry(route.to_string()).or_insert(until);
            *entry = (*entry).max(until);
        }
    }

    /// Performs `request` on `route` (a key like "send 123": one bucket per
    /// channel and kind), honouring the route's and the global block; returns
    /// the successful answer, or the server's refusal as serenity's error.
    /// `form` (a multipart body) is rebuilt per attempt: it cannot be cloned.
    pub(crate) async fn perform(
        &self,
        token: &str,
        route: &str,
        request: Request<'_>,
        form: Option<&(dyn Fn() -> reqwest::multipart::Form + Send + Sync)>,
    ) -> Result<reqwest::Response, serenity::Error> {
        let mut attempt = 0;
        loop {
            if let Some(until) = self.until(route) {
                tokio::time::sleep_until(until.into()).await;
            }
            let mut built = request
                .clone()
                .build(&self.client, token, Some(&self.base))?
                .build()?;
            if let Some(form) = form {
                // Serenity set `Content-Length: 0` for the empty body; the form sets its own.
                let mut headers = built.headers().clone();
                headers.remove(reqwest::header::CONTENT_LENGTH);
                built = self
                    .client
                    .request(built.method().clone(), built.url().clone())
                    .headers(headers)
                    .multipart(form())
                    .build()?;
            }
            let method = built.method().clone();
            let response = self.client.execute(built).await?;
            let headers = response.headers();
            let spent = header::<u32>(headers, "x-ratelimit-remaining") == Some(0);
            if let Some(reset) = seconds(headers, "x-ratelimit-reset-after").filter(|_| spent) {
                self.block(route, reset.min(MAX_WAIT), false);
            }
            if response.status().as_u16() == 429 {
                let metrics = self.metrics.get();
                if let Some(m) = metrics {
                    m.rate_limited(header::<String>(headers, "x-ratelimit-scope").as_deref());
                }
                let (wait, global) = retry_after(headers, attempt);
                tracing::warn!(
                    route,
                    wait_ms = wait.as_millis() as u64,
                    global,
                    attempt,
                    "429 from Discord"
                );
                if wait <= MAX_WAIT {
                    self.block(route, wait, global);
                    if attempt < RETRIES {
                        attempt += 1;
                        metrics.inspect(|m| m.retried());
                        continue;
                    }
                }
            }
            if !response.status().is_success() {
                let refused = ErrorResponse::from_response(response, method).await;
                return Err(HttpError::UnsuccessfulRequest(refused).into());
            }
            return Ok(response);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn retry_after_is_read_and_global_recognised_either_way() {
        let h = headers(&[("retry-after", "0.25")]);
        assert_eq!(retry_after(&h, 0), (Duration::from_millis(250), false));
        let h = headers(&[("retry-after", "2"), ("x-ratelimit-global", "true")]);
        assert_eq!(retry_after(&h, 0), (Duration::from_secs(2), true));
        let h = headers(&[("retry-after", "2"), ("x-ratelimit-scope", "global")]);
        assert!(retry_after(&h, 0).1);
    }

    #[test]
    fn a_missing_or_hostile_retry_after_falls_back_to_doubling_waits() {
        for bad in ["", "-1", "NaN", "inf", "soon"] {
            let h = headers(&[("retry-after", bad)]);
            assert_eq!(retry_after(&h, 0).0, Duration::from_secs(1), "{bad:?}");
            assert_eq!(retry_after(&h, 2).0, Duration::from_secs(4), "{bad:?}");
        }
        assert_eq!(
            retry_after(&HeaderMap::new(), 40).0,
            Duration::from_secs(32)
        );
    }

    #[test]
    fn a_block_is_never_shortened_and_a_global_one_covers_every_route() {
        let client = crate::net::platform_client(&Default::default()).unwrap();
        let l = Limiter::new(client, "http://127.0.0.1:1/");
        l.block("send 1", Duration::from_secs(9), false);
        let long = l.until("send 1").unwrap();
        l.block("send 1", Duration::ZERO, false);
        assert_eq!(l.until("send 1"), Some(long));
        assert_eq!(l.until("send 2"), None);
        l.block("send 1", Duration::from_secs(30), true);
        assert!(l.until("send 2").is_some());
        assert!(l.until("send 1").unwrap() > long);
    }
}
