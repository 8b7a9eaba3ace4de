//! Who may use the dashboard, and proof that an action came from its own pages.
//!
//! Bound to a loopback address, the dashboard is open to whoever can reach
//! it there — the operator's own machine — but answers only requests whose
//! `Host` is a loopback name or address, so a web page elsewhere cannot
//! reach it through DNS rebinding. Bound beyond loopback it needs a token:
//! 32 random bytes, shown once at first start and stored only as its
//! SHA-256 (`<dataDir>/dashboard-token.sha256`, a 256-bit random secret
//! needs no slow password hash). A request carries it as
//! `Authorization: Bearer …`, or signs in once on `/login` and then carries
//! an HttpOnly, SameSite=Strict session cookie. Tokens and sessions are
//! compared in constant time.
//!
//! Every action (a POST) carries a CSRF token: an HMAC of who is asking (the
//! session, the bearer, or the open loopback page) under a key made at
//! start, so a form from another site, which cannot read our pages, cannot
//! forge one.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, COOKIE, HOST};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The file holding the token's hash, in the data directory.
pub(crate) const TOKEN_FILE: &str = "dashboard-token.sha256";

/// The session cookie's name.
pub(crate) const SESSION_COOKIE: &str = "ambient_session";

/// How long a sign-in lasts.
pub(crate) const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// Sessions kept at once; signing in past this forgets the oldest.
const MAX_SESSIONS: usize = 32;

#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenError {
    #[error("cannot read the dashboard token's hash {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot store the dashboard token's hash in {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// A request on loopback that named another host (a page elsewhere that
/// rebound its own name to this machine).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this dashboard answers only to its loopback address (127.0.0.1, [::1] or localhost), \
     and this request was for {host:?}"
)]
pub(crate) struct ForeignHost {
    pub host: String,
}

/// The stored token: its hash, and the token itself when it was made just now
/// (to be shown once).
pub(crate) struct Token {
    pub hash: [u8; 32],
    pub fresh: Option<String>,
    pub file: PathBuf,
}

/// Reads the token's hash from `data_dir`, or makes a new token when there is
/// none (or `renew`), storing only its hash (written to a temporary file and
/// renamed, readable by its owner only).
pub(crate) fn load_or_make_token(data_dir: &Path, renew: bool) -> Result<Token, TokenError> {
    let file = data_dir.join(TOKEN_FILE);
    if !renew {
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                if let Some(hash) = parse_hash(&text) {
                    return Ok(Token {
                        hash,
                        fresh: None,
                        file,
                    });
                }
                // A damaged file: a new token replaces it, and is shown.
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(TokenError::Read {
                    path: file.display().to_string(),
                    source,
                });
            }
        }
    }
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = format!(
        "amb_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = sha256(token.as_bytes());
    let write_err = |source| TokenError::Write {
        path: file.display().to_string(),
        source,
    };
    std::fs::create_dir_all(data_dir).map_err(write_err)?;
    let mut tmp = tempfile::NamedTempFile::new_in(data_dir).map_err(write_err)?;
    std::io::Write::write_all(&mut tmp, format!("{}\n", hex::encode(hash)).as_bytes())
        .map_err(write_err)?;
    tmp.persist(&file).map_err(|e| write_err(e.error))?;
    Ok(Token {
        hash,
        fresh: Some(token),
        file,
    })
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    hex::decode(text.trim()).ok()?.try_into().ok()
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Who a request is, once let in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Who {
    /// Anyone on the loopback interface (no token configured).
    Loopback,
    /// A request carrying the token in its `Authorization` header.
    Bearer,
    /// A signed-in browser; the hash of its session id.
    Session([u8; 32]),
}

enum Gate {
    Loopback,
    Token([u8; 32]),
}

pub struct Access {
    gate: Gate,
    csrf_key: [u8; 32],
    sessions: Mutex<HashMap<[u8; 32], Instant>>,
}

impl Access {
    /// Open to loopback clients: for a dashboard bound to a loopback address.
    pub(crate) fn loopback() -> Self {
        Self::with(Gate::Loopback)
    }

    /// Closed without the token whose SHA-256 is `hash`.
    pub(crate) fn token(hash: [u8; 32]) -> Self {
        Self::with(Gate::Token(hash))
    }

    /// Whether `bind` needs a token: any address but a loopback one.
    pub fn needs_token(bind: SocketAddr) -> bool {
        !bind.ip().is_loopback()
    }

    fn with(gate: Gate) -> Self {
        let mut csrf_key = [0u8; 32];
        rand::rng().fill_bytes(&mut csrf_key);
        Self {
            gate,
            csrf_key,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn uses_token(&self) -> bool {
        matches!(self.gate, Gate::Token(_))
    }

    /// On loopback, a request must name a loopback host: anything else is a
    /// page elsewhere that rebound its own name to this machine.
    pub(crate) fn host_allowed(&self, headers: &HeaderMap) -> Result<(), ForeignHost> {
        if self.uses_token() {
            return Ok(());
        }
        let host = headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if is_loopback_host(host) {
            Ok(())
        } else {
            Err(ForeignHost {
                host: host.to_string(),
            })
        }
    }

    /// Who is asking, or `None` when the request must sign in first.
    pub(crate) fn identify(&self, headers: &HeaderMap) -> Option<Who> {
        let Gate::Token(hash) = &self.gate else {
            return Some(Who::Loopback);
        };
        if let Some(given) = bearer(headers) {
            return bool::from(sha256(given.as_bytes()).ct_eq(hash)).then_some(Who::Bearer);
        }
        let id = cookie(headers, SESSION_COOKIE)?;
        let key = sha256(id.as_bytes());
        let mut sessions = self.lock_sessions();
        sessions.retain(|_, at| at.elapsed() < SESSION_LIFETIME);
        // A map lookup by the hash of a 256-bit random id: learning where a
        // guess differs from a real id says nothing about the id itself.
        sessions.contains_key(&key).then_some(Who::Session(key))
    }

    /// Checks a token typed into the sign-in form.
    pub(crate) fn token_matches(&self, given: &str) -> bool {
        match &self.gate {
            Gate::Token(hash) => bool::from(sha256(given.trim().as_bytes()).ct_eq(hash)),
            Gate::Loopback => false,
        }
    }

    /// Starts a session; returns its id, for the cookie.
    pub(crate) fn sign_in(&self) -> String {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let id = hex::encode(bytes);
        let mut sessions = self.lock_sessions();
        sessions.retain(|_, at| at.elapsed() < SESSION_LIFETIME);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.iter().min_by_key(|(_, at)| **at).map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(sha256(id.as_bytes()), Instant::now());
        id
    }

    pub(crate) fn sign_out(&self, who: &Who) {
        if let Who::Session(key) = who {
            self.lock_sessions().remove(key);
        }
    }

    /// The CSRF token the pages give `who` for its forms.
    pub(crate) fn csrf_for(&self, who: &Who) -> String {
        hex::encode(self.csrf_mac(who))
    }

    /// Whether `given` is `who`'s CSRF token (constant time).
    pub(crate) fn csrf_ok(&self, who: &Who, given: Option<&str>) -> bool {
        let Some(given) = given.and_then(|g| hex::decode(g.trim()).ok()) else {
            return false;
        };
        given.len() == 32 && bool::from(self.csrf_mac(who).as_slice().ct_eq(&given))
    }

    fn csrf_mac(&self, who: &Who) -> [u8; 32] {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.csrf_key).expect("HMAC takes a key of any length");
        match who {
            Who::Loopback => mac.update(b"loopback"),
            Who::Bearer => mac.update(b"bearer"),
            Who::Session(key) => {
                mac.update(b"session:");
                mac.update(key);
            }
        }
        mac.finalize().into_bytes().into()
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Instant>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `127.0.0.1`, `[::1]`, `localhost` (or any loopback address), with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split_once(']').map_or(rest, |(ip, _)| ip)
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// The `Set-Cookie` value that starts a session (`id`) or, with `None`, ends it.
pub(crate) fn session_cookie(id: Option<&str>) -> String {
    match id {
        Some(id) => format!(
            "{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
            SESSION_LIFETIME.as_secs()
        ),
        None => format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn loopback_hosts_pass_and_rebound_names_do_not() {
        for ok in [
            "127.0.0.1:8377",
            "127.0.0.1",
            "localhost:8377",
            "LOCALHOST",
            "[::1]:8377",
            "127.0.0.2:1",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8377",
            "localhost.evil.example",
            "10.0.0.5:8377",
            "",
            "[::2]:1",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
        let open = Access::loopback();
        assert!(
            open.host_allowed(&headers(&[("host", "evil.example")]))
                .is_err()
        );
        assert!(open.host_allowed(&headers(&[])).is_err());
        assert!(
            open.host_allowed(&headers(&[("host", "127.0.0.1:5")]))
                .is_ok()
        );
    }

    #[test]
    fn the_token_lets_in_by_header_or_by_a_signed_in_session() {
        let dir = tempfile::tempdir().unwrap();
        let made = load_or_make_token(dir.path(), false).unwrap();
        let token = made.fresh.clone().unwrap();
        let stored = std::fs::read_to_string(dir.path().join(TOKEN_FILE)).unwrap();
        assert!(!stored.contains(&token), "only the hash is stored");
        let again = load_or_make_token(dir.path(), false).unwrap();
        assert_eq!(again.hash, made.hash);
        assert!(again.fresh.is_none(), "shown once");

        let access = Access::token(made.hash);
        assert_eq!(access.identify(&headers(&[])), None);
        assert_eq!(
            access.identify(&headers(&[("authorization", &format!("Bearer {token}"))])),
            Some(Who::Bearer)
        );
        assert_eq!(
            access.identify(&headers(&[("authorization", "Bearer amb_wrong")])),
            None
        );
        assert!(access.token_matches(&format!(" {token}\n")));
        assert!(!access.token_matches("amb_wrong"));
        let id = access.sign_in();
        let cookie = format!("theme=dark; {SESSION_COOKIE}={id}");
        let who = access.identify(&headers(&[("cookie", &cookie)])).unwrap();
        assert!(matches!(who, Who::Session(_)));
        access.sign_out(&who);
        assert_eq!(access.identify(&headers(&[("cookie", &cookie)])), None);

        let renewed = load_or_make_token(dir.path(), true).unwrap();
        assert_ne!(renewed.hash, made.hash);
        assert!(renewed.fresh.is_some());
    }

    #[test]
    fn csrf_tokens_belong_to_one_asker() {
        let access = Access::token([7; 32]);
        let a = Who::Session([1; 32]);
        let b = Who::Session([2; 32]);
        let token = access.csrf_for(&a);
        assert!(access.csrf_ok(&a, Some(&token)));
        assert!(!access.csrf_ok(&b, Some(&token)));
        assert!(!access.csrf_ok(&a, None));
        assert!(!access.csrf_ok(&a, Some("zz")));
        assert!(!access.csrf_ok(&a, Some(&token[..32])));
        let other = Access::token([7; 32]);
        assert!(
            !other.csrf_ok(&a, Some(&token)),
            "a restart makes a new key"
        );
    }

    #[test]
    fn only_loopback_binds_go_without_a_token() {
        assert!(!Access::needs_token("127.0.0.1:8377".parse().unwrap()));
        assert!(!Access::needs_token("[::1]:8377".parse().unwrap()));
        assert!(Access::needs_token("0.0.0.0:8377".parse().unwrap()));
        assert!(Access::needs_token("192.168.1.5:8377".parse().unwrap()));
    }
}
