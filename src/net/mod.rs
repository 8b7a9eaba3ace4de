//! Outbound fetching of things people and feeds point at, and the one other
//! client outside the model providers': the chat platform's own API.
//!
//! - `fetch`: the guarded HTTP client (no private addresses, bounded size,
//!   time and redirects, conditional GET)
//! - `html`: readable text out of an HTML page
//! - [`platform_client`]: Discord's REST (or the rate-limiting proxy in front of it)

pub(crate) mod fetch;
pub(crate) mod html;

pub use fetch::{FetchError, Fetched, Fetcher, MAX_ERROR_BODY_BYTES, PostBody};

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};

use crate::settings::{NetworkSettings, Secret};

/// The proxy from `network.proxy`, if one is set (validation has checked the URL).
pub(crate) fn proxy(n: &NetworkSettings) -> Option<reqwest::Proxy> {
    if n.proxy.is_empty() {
        return None;
    }
    reqwest::Proxy::all(n.proxy.as_str()).ok()
}

/// Every client the project builds goes through here: the environment's
/// proxies (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`) are never used, only
/// `network.proxy`, so an environment cannot route requests around the guard.
pub(crate) fn with_proxy(
    builder: reqwest::ClientBuilder,
    n: &NetworkSettings,
) -> reqwest::ClientBuilder {
    match proxy(n) {
        Some(p) => builder.proxy(p),
        None => builder.no_proxy(),
    }
}

/// The client for the chat platform's REST API: Discord's, or the
/// rate-limiting proxy the operator names in `discord.apiBaseUrl`. It does
/// not go through the [`Fetcher`]: its host is the operator's setting, never
/// something a message or a feed points at, and a shared REST proxy usually
/// runs on a private address the fetcher would refuse. Like every client,
/// it takes only `network.proxy`.
pub(crate) fn platform_client(n: &NetworkSettings) -> reqwest::Result<reqwest::Client> {
    with_proxy(reqwest::Client::builder().use_rustls_tls(), n).build()
}

/// The headers of a request to an operator's endpoint: `Authorization:
/// Bearer <key>` when there is a key, marked sensitive so no debug print
/// shows it. A key that is not a valid header value sends none (the
/// endpoint then says it wants one).
pub(crate) fn bearer(key: Option<&Secret>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(k) = key
        && let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", k.expose()))
    {
        v.set_sensitive(true);
        headers.insert(AUTHORIZATION, v);
    }
    headers
}

/// An error and its causes on one line: "connection refused" usually hides in a cause.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
