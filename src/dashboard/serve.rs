//! How the dashboard is served: on the shared small server ([`crate::httpd`],
//! which holds the listener, the connections and their head bounds), with
//! the dashboard's own bounds, and its requests' bodies read here.
//!
//! - A request head must arrive within [`HEAD_WITHIN`] and be at most
//!   [`MAX_HEAD_BYTES`] (431 past that);
//! - a request's body within [`BODY_WITHIN`] of its head, or the answer is
//!   408 and the connection closes ([`read_body_within`]) — read only once
//!   the request is let in: a refusal answers at once, `Connection: close`;
//! - at most a quarter of the process's open-file limit are open at once
//!   ([`cap`]). The bot's own sockets (the gateway, Discord's REST, the
//!   models, the store) keep the other three quarters, whatever the
//!   dashboard is sent;
//! - at most a quarter of those come from one client ([`per_client`]), so
//!   a client that keeps its connections busy (a request every few seconds,
//!   under the idle timeout) cannot keep every slot: others still get in.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use tokio::net::TcpListener;

use super::MAX_BODY_BYTES;
use crate::httpd::{self, Bounds};

/// How long a request's head (its line and headers) may take to arrive.
pub const HEAD_WITHIN: Duration = Duration::from_secs(10);
/// How long a request's body may take to arrive once its head has.
pub const BODY_WITHIN: Duration = Duration::from_secs(10);
/// The largest request head (its line and headers) read; a browser sends
/// one or two kilobytes. hyper's read buffer stops there (it takes no less
/// than 8 KiB).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most connections kept open, however high the open-file limit.
const MOST_CONNECTIONS: usize = 256;
/// The fewest, however low the limit: the operator's browser opens a few.
const FEWEST_CONNECTIONS: usize = 8;

/// The dashboard's bounds on the shared server.
const BOUNDS: Bounds = Bounds {
    name: "dashboard",
    head_within: HEAD_WITHIN,
    max_head_bytes: MAX_HEAD_BYTES,
    most: cap,
    most_why: " (a quarter of the open-file limit)",
    per_client,
};

/// Listens on `addr`, with room for a burst of connections.
pub(super) fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    httpd::listen(addr)
}

/// Serves `app` on `listener` until `stop`; then each connection finishes
/// the request it is in, and the task ends when they all have.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    stop: impl std::future::Future<Output = ()>,
) {
    httpd::serve(listener, app, BOUNDS, stop).await;
}

/// How many connections the dashboard keeps open: a quarter of the
/// process's open-file limit as it is now, between [`FEWEST_CONNECTIONS`]
/// and [`MOST_CONNECTIONS`].
fn cap() -> usize {
    super::open_files::limit().map_or(MOST_CONNECTIONS, |n| {
        (n / 4).clamp(FEWEST_CONNECTIONS, MOST_CONNECTIONS)
    })
}

/// The most connections one client may keep open: a quarter of `cap`, but
/// never fewer than a browser opens (or all of `cap`, if that is fewer).
fn per_client(cap: usize) -> usize {
    (cap / 4).max(FEWEST_CONNECTIONS).min(cap)
}

/// Reads a request's body (at most [`MAX_BODY_BYTES`]) within
/// [`BODY_WITHIN`] before the request goes on: a body that stops coming
/// gets 408, one over the limit 413, and either closes the connection.
pub(super) async fn read_body_within(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(BODY_WITHIN, collect(body)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(refused)) => *refused,
        Err(_) => closing(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request's body did not arrive within {} s",
                BODY_WITHIN.as_secs()
            ),
        ),
    }
}

/// The whole body, or the answer that refuses it (boxed: a response is
/// large and a body that fits is the usual case).
async fn collect(body: Body) -> Result<Bytes, Box<Response>> {
    let mut chunks = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|_| {
            Box::new(closing(
                StatusCode::BAD_REQUEST,
                "the request's body broke off".into(),
            ))
        })?;
        if bytes.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(Box::new(closing(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request bodies are at most {} KiB", MAX_BODY_BYTES / 1024),
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}

/// A plain-text answer after which the connection closes (what is left of
/// the request is not read).
fn closing(status: StatusCode, text: String) -> Response {
    closes((status, text).into_response())
}

/// `res`, after which the connection closes: a refusal answered before the
/// request's body was read, which is then not waited for.
pub(super) fn closes(mut res: Response) -> Response {
    res.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_may_keep_a_quarter_of_the_cap_but_never_fewer_than_a_browser_opens() {
        assert_eq!(per_client(256), 64);
        assert_eq!(per_client(32), 8);
        assert_eq!(per_client(8), 8);
    }
}
