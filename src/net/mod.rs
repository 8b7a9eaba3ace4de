//! Outbound fetching of things people and feeds point at.
//!
//! - `fetch`: the guarded HTTP client (no private addresses, bounded size,
//!   time and redirects, conditional GET)
//! - `html`: readable text out of an HTML page

pub(crate) mod fetch;
pub(crate) mod html;

pub use fetch::{FetchError, Fetched, Fetcher, PostBody};

use crate::settings::NetworkSettings;

/// The proxy from `network.proxy`, if one is set (validation has checked the URL).
pub fn proxy(n: &NetworkSettings) -> Option<reqwest::Proxy> {
    if n.proxy.is_empty() {
        return None;
    }
    reqwest::Proxy::all(n.proxy.as_str()).ok()
}

/// Every client the project builds goes through here: the environment's
/// proxies (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`) are never used, only
/// `network.proxy`, so an environment cannot route requests around the guard.
pub fn with_proxy(builder: reqwest::ClientBuilder, n: &NetworkSettings) -> reqwest::ClientBuilder {
    match proxy(n) {
        Some(p) => builder.proxy(p),
        None => builder.no_proxy(),
    }
}

/// An error and its causes on one line: "connection refused" usually hides in a cause.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
