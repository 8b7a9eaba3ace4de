//! What a supervisor asks of a running bot: `/metrics` (Prometheus),
//! `/healthz` (the process answers) and `/readyz` (the gateway connected
//! and the store writable) on `metrics.bind`, and systemd's readiness and
//! watchdog ([`notify`]) when it started the bot with `NOTIFY_SOCKET`.
//!
//! The endpoints answer loopback only (`metrics.bind` refuses anything
//! else) and carry no token. They are served by the small server the
//! dashboard uses too ([`crate::httpd`]): each connection's request head
//! must arrive within [`HEAD_WITHIN`] and be at most [`MAX_HEAD_BYTES`]
//! (431 past that), and at most [`MOST_CONNECTIONS`] are open at once, so a
//! stuck scraper cannot hold the bot's sockets.

use crate::store::{FileStore, UsageStore};
pub mod notify;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{Response, StatusCode, header};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::httpd::{self, Bounds};
use crate::metrics::State;

/// How long a request's head may take to arrive.
const HEAD_WITHIN: Duration = Duration::from_secs(5);
/// The largest request head read: a scraper sends a few hundred bytes.
/// hyper's read buffer stops there (it takes no less than 8 KiB).
const MAX_HEAD_BYTES: usize = 8 * 1024;
/// The most connections open at once; one more is closed as it arrives.
const MOST_CONNECTIONS: usize = 16;

/// These endpoints' bounds on the shared server. Every client is on
/// loopback, one client to [`httpd`]: it may keep them all.
const BOUNDS: Bounds = Bounds {
    name: "metrics",
    head_within: HEAD_WITHIN,
    max_head_bytes: MAX_HEAD_BYTES,
    most: || MOST_CONNECTIONS,
    most_why: "",
    per_client: |most| most,
};

/// How often readiness is asked until systemd has been told READY=1.
const READY_LOOK_EVERY: Duration = Duration::from_millis(250);

/// The front end's gateway as it is now, asked when needed (see
/// `discord::gateway_state`).
pub(crate) type Gateway =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = GatewayNow> + Send>> + Send + Sync>;

/// The gateway at one moment.
#[derive(Debug, Default)]
pub(crate) struct GatewayNow {
    /// Each shard this process runs, and whether it is connected.
    pub shards: Vec<(u32, bool)>,
    /// Why the gateway is not ready, in a few words; `None` when it is.
    pub down: Option<String>,
}

/// Why the bot is not ready, in a few words; `None` when it is.
pub(crate) async fn not_ready(app: &App, gateway: &Gateway) -> Option<String> {
    if let Some(why) = gateway().await.down {
        return Some(format!("gateway: {why}"));
    }
    let file: FileStore = app.stores();
    match tokio::task::spawn_blocking(move || file.writable()).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("store: not writable: {e}")),
        Err(e) => Some(format!("store: the check did not finish: {e}")),
    }
}

/// The health endpoints (when `metrics.bind` is set) and systemd's
/// notifications (when `NOTIFY_SOCKET` is), running.
pub(crate) struct Health {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    notifier: notify::Notifier,
}

impl Health {
    /// Binds `metrics.bind` (if set) and starts serving it, and tells
    /// systemd READY=1 once the bot is ready, then WATCHDOG=1 as it asks.
    pub(crate) async fn start(app: &Arc<App>, gateway: Gateway) -> anyhow::Result<Self> {
        let (stop, stopped) = watch::channel(false);
        let mut tasks = Vec::new();
        let bind = app.settings.global().metrics.address()?;
        if let Some(bind) = bind {
            let listener = httpd::listen(bind)
                .map_err(|e| anyhow::anyhow!("metrics.bind: cannot listen on {bind}: {e}"))?;
            let bound = listener.local_addr()?;
            tracing::info!("metrics: /metrics, /healthz and /readyz on http://{bound}");
            let endpoints = Endpoints {
                app: app.clone(),
                gateway: gateway.clone(),
            };
            let mut stop = stopped.clone();
            tasks.push(tokio::spawn(httpd::serve(
                listener,
                endpoints.router(),
                BOUNDS,
                async move {
                    // Harmless: the sender gone is a stop as well.
                    let _ = stop.changed().await;
                },
            )));
        }
        let notifier = notify::Notifier::from_env();
        if notifier.is_on() {
            tasks.push(tokio::spawn(supervise(
                app.clone(),
                gateway,
                notifier.clone(),
                stopped,
            )));
        }
        Ok(Self {
            stop,
            tasks,
            notifier,
        })
    }

    /// Tells systemd the bot is stopping, and stops serving.
    pub(crate) fn stop(self) {
        self.notifier.send("STOPPING=1");
        // Nobody may be listening any more: the tasks are aborted below.
        let _ = self.stop.send(true);
        for task in self.tasks {
            task.abort();
        }
    }
}

/// READY=1 once [`not_ready`] says nothing, then WATCHDOG=1 at half the
/// watchdog's period for as long as the runtime runs it.
async fn supervise(
    app: Arc<App>,
    gateway: Gateway,
    notifier: notify::Notifier,
    mut stopped: watch::Receiver<bool>,
) {
    let watchdog = notify::watchdog_every();
    let mut pinged = tokio::time::Instant::now();
    let mut ready = false;
    loop {
        if !ready && not_ready(&app, &gateway).await.is_none() {
            notifier.send("READY=1");
            ready = true;
        }
        if let Some(every) = watchdog
            && pinged.elapsed() >= every
        {
            notifier.send("WATCHDOG=1");
            pinged = tokio::time::Instant::now();
        }
        let wait = match watchdog {
            Some(every) if ready => every,
            Some(every) => every.min(READY_LOOK_EVERY),
            None if ready => return,
            None => READY_LOOK_EVERY,
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stopped.changed() => return,
        }
    }
}

#[derive(Clone)]
struct Endpoints {
    app: Arc<App>,
    gateway: Gateway,
}

impl Endpoints {
    /// Every request goes to [`Endpoints::answer`], which knows the paths.
    fn router(self) -> Router {
        Router::new().fallback(move |req: Request| async move { self.answer(req).await })
    }

    async fn answer(&self, req: Request) -> Response<Body> {
        match (req.method().as_str(), req.uri().path()) {
            ("GET", "/healthz") => text(StatusCode::OK, "ok\n".into()),
            ("GET", "/readyz") => match not_ready(&self.app, &self.gateway).await {
                None => text(StatusCode::OK, "ready\n".into()),
                Some(why) => text(StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
            },
            ("GET", "/metrics") => self.metrics().await,
            (_, "/healthz" | "/readyz" | "/metrics") => {
                text(StatusCode::METHOD_NOT_ALLOWED, "GET only\n".into())
            }
            _ => text(
                StatusCode::NOT_FOUND,
                "not found: /metrics, /healthz and /readyz are served here\n".into(),
            ),
        }
    }

    async fn metrics(&self) -> Response<Body> {
        let state = self.state().await;
        match self.app.journal.metrics().encode(&state) {
            Ok(body) => {
                let mut r = text(StatusCode::OK, body);
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static(
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    ),
                );
                r
            }
            Err(e) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot encode the metrics: {e}\n"),
            ),
        }
    }

    /// What the process is now, for the gauges a scrape sets: the store's
    /// size and each role's budget left are read off the runtime's threads.
    async fn state(&self) -> State {
        let (store, settings): (Stores, _) = (self.app.stores(), self.app.settings.global());
        let now = self.app.clock.now();
        let read = tokio::task::spawn_blocking(move || {
            let left = crate::executive::budget::left(&store.usage, &settings, now);
            (store.file.bytes_on_disk(), left)
        });
        let (store_bytes, budget_left) = match read.await {
            Ok((bytes, Ok(left))) => (bytes, left),
            Ok((bytes, Err(e))) => {
                // The gauges are left out of this scrape rather than shown wrong.
                tracing::warn!(error = %e, "metrics: cannot read the day's usage for budget_tokens_left");
                (bytes, Vec::new())
            }
            Err(_) => (0, Vec::new()),
        };
        let gateway = (self.gateway)().await;
        State {
            gateway_connected: gateway.down.is_none(),
            shards: gateway.shards,
            budget_left: budget_left
                .into_iter()
                .map(|(role, left)| (role.as_str(), left))
                .collect(),
            store_bytes,
            queue_depth: self.app.spine.queued(),
        }
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub(crate) struct Stores {
    pub usage: UsageStore,
    pub file: FileStore,
}
