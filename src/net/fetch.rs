//! The guarded fetch client: every URL that comes from outside (a link in
//! chat, a feed, a reflex, a model's tool call) is fetched through here.
//!
//! - Only `http` and `https`.
//! - Private, loopback, link-local, site-local, CGNAT, multicast and
//!   unspecified addresses (also in their IPv6 transition forms: IPv4-mapped,
//!   -translated and -compatible, NAT64 and local-use NAT64, 6to4, Teredo) are
//!   refused unless `network.allowPrivateHosts` is on
//!   (or, for an operator's own endpoint, its own setting: `for_endpoint`). The
//!   check runs inside DNS resolution (so every connection, redirects
//!   included, is checked, and a name cannot be re-resolved to something
//!   else between check and connect) and on IP-literal URLs.
//! - Redirects are followed by hand, each hop checked, at most
//!   `network.maxRedirects`.
//! - The body is read in chunks and abandoned past `network.maxResponseBytes`
//!   (or, from a [`Fetcher::truncating`] fetcher, kept up to the limit and
//!   marked `truncated`: the start of a long text file is still worth reading).
//! - The whole request is bounded by `network.fetchTimeoutSeconds`.
//! - Conditional GET: an ETag / Last-Modified given back yields `not_modified`.
//! - POST (`Fetcher::post`, for the operator's image generator and
//!   speech-to-text endpoint): the same address checks, size limit and
//!   timeout, but a redirect is never followed (an upload is not re-sent to
//!   wherever a 3xx points; the error names where it pointed). Any status is
//!   answered with its bounded body and headers, because callers read the
//!   error message and `retry-after` out of a refusal; an error's body is
//!   read only up to [`MAX_ERROR_BODY_BYTES`] and marked `truncated` past it.
//! - Proxies: environment proxies (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`)
//!   are ignored, because a proxy resolves names itself and the resolver
//!   guard would never run. Only `network.proxy` is used; with it, every
//!   host name is resolved here and refused if any address is private,
//!   before the request and on every redirect hop.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{
    AUTHORIZATION, COOKIE, ETAG, HeaderMap, HeaderValue, IF_MODIFIED_SINCE, IF_NONE_MATCH,
    LAST_MODIFIED, LOCATION, PROXY_AUTHORIZATION,
};
use reqwest::redirect::Policy;
use url::Url;

use crate::settings::NetworkSettings;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("refused: {0}")]
    Refused(String),
    #[error("the response is larger than {0} bytes")]
    TooLarge(u64),
    #[error("no complete answer within {0} s")]
    Timeout(u64),
    #[error("more than {0} redirects")]
    TooManyRedirects(u32),
    #[error("HTTP {0}")]
    Status(u16),
    #[error("network error: {0}")]
    Network(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fetched {
    /// The URL finally answered, after redirects.
    pub url: String,
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The server said 304: nothing changed since the validators given.
    pub not_modified: bool,
    /// The body is only the first bytes of a longer one (a truncating fetcher).
    pub truncated: bool,
}

/// A request body for [`Fetcher::post`].
pub enum PostBody {
    Json(serde_json::Value),
    Multipart(reqwest::multipart::Form),
}

/// The most of an error answer's body (a status outside 2xx) that is read.
/// Its message is all a caller wants, and a refusal has no reason to be
/// large: an image generator may answer 35 MB of image, but not of refusal.
pub const MAX_ERROR_BODY_BYTES: u64 = 16 * 1024;

/// What a POST was answered with, whatever the status.
#[derive(Debug)]
pub(crate) struct Posted {
    pub status: u16,
    pub headers: HeaderMap,
    /// At most the fetcher's response limit; for an error, at most
    /// [`MAX_ERROR_BODY_BYTES`].
    pub body: Vec<u8>,
    /// The body is only the start of a longer error answer.
    pub truncated: bool,
}

impl FetchError {
    /// The refusal was for a private address (the endpoint or its name's):
    /// the caller can name the setting that would allow its own server.
    pub(crate) fn is_private_refusal(&self) -> bool {
        matches!(self, FetchError::Refused(why) if why.contains("private address"))
    }
}

/// Validators from an earlier fetch, for a conditional GET.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

pub struct Fetcher {
    client: reqwest::Client,
    allow_private: bool,
    max_bytes: u64,
    max_redirects: u32,
    timeout: Duration,
    /// Requests go through `network.proxy`, so names are checked before each hop.
    proxied: bool,
    /// The operator's own endpoint, allowed to be private: redirects may not leave it.
    pinned: Option<url::Origin>,
    /// A body past the limit is cut there instead of refused.
    truncate: bool,
}

/// Whether an address belongs to someone's own network rather than the internet.
pub(crate) fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
                || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18/15
        }
        IpAddr::V6(v6) => {
            if embedded_ipv4(v6)
                .into_iter()
                .any(|v4| is_private(IpAddr::V4(v4)))
            {
                return true;
            }
            // Site-local addresses are deprecated but still routed inside some
            // networks; a local-use NAT64 prefix is a translator inside this one.
            // Benchmarking and documentation ranges are never the internet's,
            // as their IPv4 counterparts (198.18/15, 192.0.2/24 …) are not.
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10
                || s[..3] == [0x64, 0xff9b, 1] // local-use NAT64 64:ff9b:1::/48
                || s[..3] == [0x2001, 2, 0] // benchmarking 2001:2::/48
                || s[..2] == [0x2001, 0xdb8] // documentation 2001:db8::/32
                || (s[0] == 0x3fff && s[1] < 0x1000) // documentation 3fff::/20
        }
    }
}

/// The IPv4 addresses an IPv6 address stands for, where it is a transition
/// form that reaches them: IPv4-mapped (`::ffff:a.b.c.d`), SIIT's
/// IPv4-translated (`::ffff:0:a.b.c.d`), IPv4-compatible (`::a.b.c.d`),
/// NAT64 (`64:ff9b::a.b.c.d`), 6to4 (`2002:aabb:ccdd::`) and Teredo
/// (`2001:0:server:…:client`, two: the server in bits 32–63, the client in
/// the last 32 bits with every bit flipped).
fn embedded_ipv4(v6: std::net::Ipv6Addr) -> Vec<std::net::Ipv4Addr> {
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        std::net::Ipv4Addr::new(a, b, c, d)
    };
    if let Some(mapped) = v6.to_ipv4_mapped() {
        return vec![mapped];
    }
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return vec![v4(s[6], s[7])];
    }
    // `::` and `::1` are not IPv4; the loopback/unspecified checks classify them.
    if s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
        return vec![v4(s[6], s[7])];
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return vec![v4(s[6], s[7])];
    }
    if s[0] == 0x2002 {
        return vec![v4(s[1], s[2])];
    }
    if s[..2] == [0x2001, 0] {
        return vec![v4(s[2], s[3]), v4(!s[6], !s[7])];
    }
    Vec::new()
}

/// DNS resolution that never yields a private address (unless allowed).
struct GuardedResolver {
    allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = addrs
                .iter()
                .copied()
                .filter(|a| allow || !is_private(a.ip()))
                .collect();
            if public.is_empty() {
                let err: Box<dyn std::error::Error + Send + Sync> = if addrs.is_empty() {
                    format!("{host} does not resolve").into()
                } else {
                    format!(
                        "{host} resolves to a private address (network.allowPrivateHosts is off)"
                    )
                    .into()
                };
                return Err(err);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

impl Fetcher {
    pub(crate) fn new(n: &NetworkSettings) -> Self {
        let client = super::with_proxy(reqwest::Client::builder(), n)
            .redirect(Policy::none())
            .dns_resolver(Arc::new(GuardedResolver {
                allow_private: n.allow_private_hosts,
            }))
            .user_agent(n.user_agent.clone())
            .connect_timeout(Duration::from_secs(u64::from(n.fetch_timeout_seconds)))
            .build()
            .expect("fetch client builds");
        Self {
            client,
            allow_private: n.allow_private_hosts,
            max_bytes: n.max_response_bytes,
            max_redirects: n.max_redirects,
            timeout: Duration::from_secs(u64::from(n.fetch_timeout_seconds)),
            proxied: super::proxy(n).is_some(),
            pinned: None,
            truncate: false,
        }
    }

    /// A fetcher for one operator-configured endpoint (a search service…):
    /// its own response limit, and, where the operator's setting says so,
    /// that endpoint may be private; then no redirect may leave its origin.
    pub(crate) fn for_endpoint(
        n: &NetworkSettings,
        endpoint: &str,
        max_bytes: u64,
        endpoint_may_be_private: bool,
    ) -> Self {
        let mut limited = n.clone();
        limited.max_response_bytes = max_bytes;
        if !endpoint_may_be_private || n.allow_private_hosts {
            return Self::new(&limited);
        }
        limited.allow_private_hosts = true;
        Self {
            pinned: Url::parse(endpoint).ok().map(|u| u.origin()),
            ..Self::new(&limited)
        }
    }

    /// A GET's body past the response limit is kept up to the limit (and
    /// `Fetched::truncated` set) instead of refused; reading stops there.
    pub(crate) fn truncating(mut self) -> Self {
        self.truncate = true;
        self
    }

    /// The whole request bounded by `timeout` instead of `network.fetchTimeoutSeconds`.
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A POST with extra headers (Authorization…), checked like a GET, never
    /// redirected, bounded in size and time. A non-2xx answer is not an error.
    pub(crate) async fn post(
        &self,
        url: &str,
        body: PostBody,
        headers: &HeaderMap,
    ) -> Result<Posted, FetchError> {
        self.within_timeout(self.post_once(url, body, headers))
            .await
    }

    /// The whole request, answer included, within the fetcher's timeout.
    async fn within_timeout<T>(
        &self,
        request: impl std::future::Future<Output = Result<T, FetchError>>,
    ) -> Result<T, FetchError> {
        match tokio::time::timeout(self.timeout, request).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout(self.timeout.as_secs())),
        }
    }

    async fn post_once(
        &self,
        url: &str,
        body: PostBody,
        headers: &HeaderMap,
    ) -> Result<Posted, FetchError> {
        let url = self.check_url(url)?;
        if self.pinned.as_ref().is_some_and(|o| *o != url.origin()) {
            return Err(FetchError::Refused(format!(
                "{url} is not the operator's endpoint"
            )));
        }
        self.check_name_behind_proxy(&url).await?;
        let req = self.client.post(url.clone()).headers(headers.clone());
        let req = match body {
            PostBody::Json(value) => req.json(&value),
            PostBody::Multipart(form) => req.multipart(form),
        };
        let resp = req.send().await.map_err(network_error)?;
        let status = resp.status();
        if status.is_redirection() {
            let location = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("no Location");
            return Err(FetchError::Refused(format!(
                "a POST is not redirected: {url} answered {} pointing to {location}",
                status.as_u16()
            )));
        }
        let headers = resp.headers().clone();
        let (body, truncated) = if status.is_success() {
            self.read_body(resp, self.max_bytes, false).await?
        } else {
            let limit = self.max_bytes.min(MAX_ERROR_BODY_BYTES);
            self.read_body(resp, limit, true).await?
        };
        Ok(Posted {
            status: status.as_u16(),
            headers,
            body,
            truncated,
        })
    }

    /// Behind a proxy the proxy resolves names and the resolver guard never
    /// runs: resolve the name here and refuse it if any address is private
    /// (or if it cannot be resolved, since then it cannot be checked).
    async fn check_name_behind_proxy(&self, url: &Url) -> Result<(), FetchError> {
        if !self.proxied || self.allow_private {
            return Ok(());
        }
        // IP literals were checked by `check_url`.
        let Some(url::Host::Domain(host)) = url.host() else {
            return Ok(());
        };
        let port = url.port_or_known_default().unwrap_or(0);
        let unchecked = |why: String| {
            FetchError::Refused(format!(
                "{host} cannot be checked before going through network.proxy ({why})"
            ))
        };
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| unchecked(e.to_string()))?
            .collect();
        if addrs.is_empty() {
            return Err(unchecked("it does not resolve".into()));
        }
        if let Some(private) = addrs.iter().find(|a| is_private(a.ip())) {
            return Err(FetchError::Refused(format!(
                "{host} resolves to a private address {} (network.allowPrivateHosts is off)",
                private.ip()
            )));
        }
        Ok(())
    }

    /// Checks a URL before any connection: scheme, and IP literals.
    pub(crate) fn check_url(&self, raw: &str) -> Result<Url, FetchError> {
        let url = Url::parse(raw)
            .map_err(|e| FetchError::Refused(format!("{raw:?} is not a URL ({e})")))?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(FetchError::Refused(format!(
                "only http and https URLs are fetched, not {}:",
                url.scheme()
            )));
        }
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) => None,
            None => return Err(FetchError::Refused(format!("{raw:?} has no host"))),
        };
        if let Some(ip) = ip
            && !self.allow_private
            && is_private(ip)
        {
            return Err(FetchError::Refused(format!(
                "{ip} is a private address (network.allowPrivateHosts is off)"
            )));
        }
        Ok(url)
    }

    pub(crate) async fn get(&self, url: &str) -> Result<Fetched, FetchError> {
        self.get_with(url, &Validators::default(), &HeaderMap::new())
            .await
    }

    /// A GET with optional validators (conditional GET) and extra headers.
    pub(crate) async fn get_with(
        &self,
        url: &str,
        validators: &Validators,
        headers: &HeaderMap,
    ) -> Result<Fetched, FetchError> {
        self.within_timeout(self.follow(url, validators, headers))
            .await
    }

    async fn follow(
        &self,
        start: &str,
        validators: &Validators,
        extra: &HeaderMap,
    ) -> Result<Fetched, FetchError> {
        let mut url = self.check_url(start)?;
        if self.pinned.as_ref().is_some_and(|o| *o != url.origin()) {
            return Err(FetchError::Refused(format!(
                "{url} is not the operator's endpoint"
            )));
        }
        let mut extra = extra.clone();
        for _ in 0..=self.max_redirects {
            self.check_name_behind_proxy(&url).await?;
            let mut req = self.client.get(url.clone()).headers(extra.clone());
            if let Some(etag) = &validators.etag
                && let Ok(v) = HeaderValue::from_str(etag)
            {
                req = req.header(IF_NONE_MATCH, v);
            }
            if let Some(lm) = &validators.last_modified
                && let Ok(v) = HeaderValue::from_str(lm)
            {
                req = req.header(IF_MODIFIED_SINCE, v);
            }
            let resp = req.send().await.map_err(network_error)?;
            let status = resp.status();
            if status.is_redirection() && status.as_u16() != 304 {
                let location = resp
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| FetchError::Network(format!("a {status} without a Location")))?;
                let next = url.join(location).map_err(|e| {
                    FetchError::Refused(format!("bad redirect target {location:?}: {e}"))
                })?;
                let next = self.check_url(next.as_str())?;
                if self.pinned.as_ref().is_some_and(|o| *o != next.origin()) {
                    return Err(FetchError::Refused(format!(
                        "a redirect away from the operator's endpoint, to {next}"
                    )));
                }
                // Credentials were meant for the first host, not wherever it redirects.
                if next.origin() != url.origin() {
                    for name in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION] {
                        extra.remove(name);
                    }
                }
                url = next;
                continue;
            }
            let header = |name| {
                resp.headers()
                    .get(name)
                    .and_then(|v: &HeaderValue| v.to_str().ok())
                    .map(String::from)
            };
            let mut fetched = Fetched {
                url: url.to_string(),
                status: status.as_u16(),
                content_type: header(reqwest::header::CONTENT_TYPE),
                etag: header(ETAG),
                last_modified: header(LAST_MODIFIED),
                not_modified: status.as_u16() == 304,
                body: Vec::new(),
                truncated: false,
            };
            if fetched.not_modified {
                return Ok(fetched);
            }
            if !status.is_success() {
                return Err(FetchError::Status(status.as_u16()));
            }
            (fetched.body, fetched.truncated) =
                self.read_body(resp, self.max_bytes, self.truncate).await?;
            return Ok(fetched);
        }
        Err(FetchError::TooManyRedirects(self.max_redirects))
    }

    /// The body read in chunks, abandoned as soon as it passes `limit`
    /// (with `truncate`: cut at the limit, and `true` returned with it).
    async fn read_body(
        &self,
        mut resp: reqwest::Response,
        limit: u64,
        truncate: bool,
    ) -> Result<(Vec<u8>, bool), FetchError> {
        if !truncate && resp.content_length().is_some_and(|n| n > limit) {
            return Err(FetchError::TooLarge(limit));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(network_error)? {
            if body.len() as u64 + chunk.len() as u64 > limit {
                if !truncate {
                    return Err(FetchError::TooLarge(limit));
                }
                let room = limit as usize - body.len();
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }
}

fn network_error(e: reqwest::Error) -> FetchError {
    let text = super::error_chain(&e);
    if text.contains("private address") {
        // The resolver refused; say so plainly.
        let why = text.rsplit(": ").next().unwrap_or(&text).to_string();
        return FetchError::Refused(why);
    }
    if e.is_timeout() {
        return FetchError::Timeout(0);
    }
    FetchError::Network(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_private(ips: &[&str]) {
        for ip in ips {
            assert!(is_private(ip.parse().unwrap()), "{ip} should be private");
        }
    }

    fn all_public(ips: &[&str]) {
        for ip in ips {
            assert!(!is_private(ip.parse().unwrap()), "{ip} should be public");
        }
    }

    #[test]
    fn private_addresses_are_recognised() {
        all_private(&[
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.5.5",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ]);
        all_public(&["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"]);
    }

    #[test]
    fn transition_forms_of_private_ipv4_are_private() {
        all_private(&[
            "::127.0.0.1",
            "::10.0.0.1",
            "::169.254.169.254",
            "::ffff:10.0.0.1",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
        ]);
        // The same forms of public addresses stay public.
        all_public(&[
            "::1.1.1.1",
            "64:ff9b::8.8.8.8",
            "2002:5db8:d822::1",
            "::ffff:1.1.1.1",
        ]);
    }

    #[test]
    fn transition_forms_are_refused_as_url_literals() {
        let f = Fetcher::new(&NetworkSettings::default());
        for url in [
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:a9fe:a9fe::]/",
        ] {
            assert!(
                matches!(f.check_url(url), Err(FetchError::Refused(_))),
                "{url}"
            );
        }
    }

    /// Private IPv4 addresses as the other IPv6 transition forms carry them,
    /// and the IPv6 ranges that are someone's own network whatever they carry.
    const MORE_PRIVATE_FORMS: &[&str] = &[
        // Site-local fec0::/10.
        "fec0::1",
        "feff:ffff::1",
        // SIIT's IPv4-translated ::ffff:0:a.b.c.d.
        "::ffff:0:10.0.0.1",
        "::ffff:0:127.0.0.1",
        "::ffff:0:169.254.169.254",
        // Local-use NAT64 64:ff9b:1::/48, whatever it embeds.
        "64:ff9b:1::1",
        "64:ff9b:1::8.8.8.8",
        "64:ff9b:1:ffff::1",
        // Teredo: a private server (bits 32–63)…
        "2001:0:a00:1::",
        "2001:0:7f00:1:8000:63bf:fefe:fefe",
        // …or a private client (the last 32 bits, every bit flipped): 10.0.0.1, 127.0.0.1.
        "2001:0:4136:e378:8000:63bf:f5ff:fffe",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
        // 6to4 and NAT64 embedding a private address.
        "2002:a00:1::1",
        "64:ff9b::10.0.0.1",
        "64:ff9b::192.168.1.1",
    ];

    #[test]
    fn site_local_siit_local_nat64_and_teredo_forms_are_private() {
        let public: Vec<&str> = MORE_PRIVATE_FORMS
            .iter()
            .copied()
            .filter(|ip| !is_private(ip.parse().unwrap()))
            .collect();
        assert_eq!(public, Vec::<&str>::new(), "taken for public");
        // The same forms around public addresses stay public.
        all_public(&[
            "::ffff:0:1.1.1.1",
            "64:ff9b::1.1.1.1",
            "2002:101:101::1",
            // Teredo: server 65.54.227.120, client 1.1.1.1.
            "2001:0:4136:e378:8000:63bf:fefe:fefe",
            "fe00::1",
            "64:ff9b:2::1",
        ]);
    }

    #[test]
    fn benchmarking_and_documentation_ranges_are_private_as_in_ipv4() {
        all_private(&[
            "2001:2::1",
            "2001:2:0:ffff::1",
            "2001:db8::1",
            "2001:db8:ffff:ffff::1",
            "3fff::1",
            "3fff:fff:ffff::1",
            // Their IPv4 counterparts.
            "198.18.0.1",
            "192.0.2.1",
            "198.51.100.1",
            "203.0.113.1",
        ]);
        // Just outside them: public.
        all_public(&["2001:2:1::1", "2001:db9::1", "2001:da8::1", "3fff:1000::1"]);
        let f = Fetcher::new(&NetworkSettings::default());
        for url in ["http://[2001:2::1]/", "http://[2001:db8::1]/feed.xml"] {
            let refused = f.check_url(url);
            assert!(refused.is_err_and(|e| e.is_private_refusal()), "{url}");
        }
    }

    #[test]
    fn the_other_transition_forms_are_refused_as_url_literals() {
        let f = Fetcher::new(&NetworkSettings::default());
        let allowed: Vec<&str> = MORE_PRIVATE_FORMS
            .iter()
            .copied()
            .filter(|ip| {
                let refused = f.check_url(&format!("http://[{ip}]/feed.xml"));
                !refused.is_err_and(|e| e.is_private_refusal())
            })
            .collect();
        assert_eq!(allowed, Vec::<&str>::new(), "not refused");
        assert!(
            f.check_url("http://[2001:0:4136:e378:8000:63bf:fefe:fefe]/")
                .is_ok()
        );
    }

    #[test]
    fn urls_are_checked_before_connecting() {
        let f = Fetcher::new(&NetworkSettings::default());
        assert!(matches!(
            f.check_url("file:///etc/passwd"),
            Err(FetchError::Refused(_))
        ));
        assert!(matches!(
            f.check_url("http://127.0.0.1:8080/x"),
            Err(FetchError::Refused(_))
        ));
        assert!(matches!(
            f.check_url("http://[::1]/"),
            Err(FetchError::Refused(_))
        ));
        assert!(f.check_url("https://example.com/feed").is_ok());
        let open = NetworkSettings {
            allow_private_hosts: true,
            ..Default::default()
        };
        assert!(
            Fetcher::new(&open)
                .check_url("http://127.0.0.1:8080/x")
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_name_resolving_to_a_private_address_is_refused() {
        let f = Fetcher::new(&NetworkSettings::default());
        let err = f.get("http://localhost:9/").await.unwrap_err();
        assert!(matches!(err, FetchError::Refused(_)), "{err}");
    }

    /// A server on 127.0.0.1 answering every request with `answer`,
    /// counting requests and keeping the last body.
    async fn server(
        answer: axum::response::Response,
    ) -> (String, Arc<std::sync::Mutex<Vec<Vec<u8>>>>) {
        use axum::response::IntoResponse;
        let got: Arc<std::sync::Mutex<Vec<Vec<u8>>>> = Arc::default();
        let seen = got.clone();
        let (parts, body) = answer.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        let app = axum::Router::new().fallback(move |bytes: axum::body::Bytes| {
            let seen = seen.clone();
            let (parts, body) = (parts.clone(), body.clone());
            async move {
                seen.lock().unwrap().push(bytes.to_vec());
                if parts.status == axum::http::StatusCode::REQUEST_TIMEOUT {
                    std::future::pending::<()>().await;
                }
                (parts.status, parts.headers, body).into_response()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, got)
    }

    fn answer(
        status: u16,
        headers: &[(&'static str, &str)],
        body: &str,
    ) -> axum::response::Response {
        let mut r = axum::response::Response::new(axum::body::Body::from(body.to_string()));
        *r.status_mut() = axum::http::StatusCode::from_u16(status).unwrap();
        for (k, v) in headers {
            r.headers_mut().insert(*k, v.parse().unwrap());
        }
        r
    }

    fn own_endpoint(url: &str, max_bytes: u64) -> Fetcher {
        Fetcher::for_endpoint(&NetworkSettings::default(), url, max_bytes, true)
    }

    #[tokio::test]
    async fn a_post_to_a_private_address_is_refused_before_any_request() {
        let (url, got) = server(answer(200, &[], "{}")).await;
        let f = Fetcher::new(&NetworkSettings::default());
        let literal = f
            .post(
                &url,
                PostBody::Json(serde_json::json!({})),
                &HeaderMap::new(),
            )
            .await
            .unwrap_err();
        assert!(literal.is_private_refusal(), "{literal}");
        let by_name = f
            .post(
                &url.replace("127.0.0.1", "localhost"),
                PostBody::Json(serde_json::json!({})),
                &HeaderMap::new(),
            )
            .await
            .unwrap_err();
        assert!(by_name.is_private_refusal(), "{by_name}");
        assert!(got.lock().unwrap().is_empty(), "the server was reached");
    }

    #[tokio::test]
    async fn a_refusal_comes_back_with_its_status_headers_and_body() {
        let (url, got) = server(answer(429, &[("retry-after", "7")], "slow down")).await;
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer k"));
        let posted = own_endpoint(&url, 1_024)
            .post(
                &format!("{url}/v1/x"),
                PostBody::Json(serde_json::json!({"prompt": "a crab"})),
                &headers,
            )
            .await
            .unwrap();
        assert_eq!(posted.status, 429);
        assert_eq!(posted.headers.get("retry-after").unwrap(), "7");
        assert_eq!(posted.body, b"slow down");
        assert_eq!(got.lock().unwrap()[0], br#"{"prompt":"a crab"}"#);
    }

    #[tokio::test]
    async fn a_post_is_never_redirected_and_the_error_names_where_it_pointed() {
        let (target, reached) = server(answer(200, &[], "{}")).await;
        let location = format!("{target}/elsewhere");
        let (url, _) = server(answer(307, &[("location", &location)], "")).await;
        let err = own_endpoint(&url, 1_024)
            .post(
                &url,
                PostBody::Json(serde_json::json!({})),
                &HeaderMap::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err,
            FetchError::Refused(format!(
                "a POST is not redirected: {url}/ answered 307 pointing to {location}"
            ))
        );
        assert!(
            reached.lock().unwrap().is_empty(),
            "the redirect was followed"
        );
    }

    #[tokio::test]
    async fn a_truncating_fetcher_keeps_the_start_of_a_long_body() {
        let (url, _) = server(answer(200, &[], &"abc".repeat(1_000))).await;
        let got = own_endpoint(&url, 1_024)
            .truncating()
            .get(&url)
            .await
            .unwrap();
        assert!(got.truncated);
        assert_eq!(got.body, "abc".repeat(1_000).as_bytes()[..1_024]);
        let short = own_endpoint(&url, 5_000)
            .truncating()
            .get(&url)
            .await
            .unwrap();
        assert!(!short.truncated);
        assert_eq!(short.body.len(), 3_000);
        let err = own_endpoint(&url, 1_024).get(&url).await.unwrap_err();
        assert_eq!(
            err,
            FetchError::TooLarge(1_024),
            "without truncating it is refused"
        );
    }

    #[tokio::test]
    async fn an_error_answer_is_read_only_as_far_as_its_message_needs() {
        let huge = format!(r#"{{"error": {{"message": "{}"}}}}"#, "x".repeat(1_000_000));
        let (url, _) = server(answer(400, &[], &huge)).await;
        let posted = own_endpoint(&url, 35_000_000)
            .post(
                &url,
                PostBody::Json(serde_json::json!({})),
                &HeaderMap::new(),
            )
            .await
            .unwrap();
        assert_eq!(posted.status, 400);
        assert_eq!(posted.body.len() as u64, MAX_ERROR_BODY_BYTES);
        assert_eq!(posted.body, huge.as_bytes()[..posted.body.len()]);
        assert!(posted.truncated);
        let (url, _) = server(answer(401, &[], "bad key")).await;
        let short = own_endpoint(&url, 35_000_000)
            .post(
                &url,
                PostBody::Json(serde_json::json!({})),
                &HeaderMap::new(),
            )
            .await
            .unwrap();
        assert_eq!(
            (short.body.as_slice(), short.truncated),
            (&b"bad key"[..], false)
        );
    }

    #[tokio::test]
    async fn a_posts_answer_past_the_limit_is_abandoned() {
        let (url, _) = server(answer(200, &[], &"x".repeat(5_000))).await;
        let err = own_endpoint(&url, 1_024)
            .post(
                &url,
                PostBody::Json(serde_json::json!({})),
                &HeaderMap::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(err, FetchError::TooLarge(1_024));
    }

    #[tokio::test]
    async fn a_post_without_an_answer_ends_at_the_timeout() {
        // 408 makes the test server hang instead of answering.
        let (url, got) = server(answer(408, &[], "")).await;
        let err = own_endpoint(&url, 1_024)
            .with_timeout(Duration::from_millis(200))
            .post(
                &url,
                PostBody::Json(serde_json::json!({})),
                &HeaderMap::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(err, FetchError::Timeout(0));
        assert_eq!(got.lock().unwrap().len(), 1);
    }
}
