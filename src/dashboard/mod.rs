//! The dashboard: the bot's life at a glance, in a browser — what it did
//! and why (Today), what it costs (Spend), what it is thinking of saying and
//! where its material comes from (Initiative), the feeds that post every new
//! item (Feeds), and what it remembers (Memory, with forget, forget-me and
//! export).
//!
//! A front end like the console: each page reads through the same core
//! functions as the CLI and the slash commands (the journal's query, the
//! status widget's parts, memory's search and forget, the export format),
//! and shows them as server-rendered HTML — minijinja templates with every
//! value escaped, charts drawn as inline SVG, one stylesheet, no script, no
//! CDN. It is read-only except the memory actions, which are POSTs with a
//! CSRF token behind a confirmation page.
//!
//! Served by `ambient dashboard` (from the store), and by `ambient run` and
//! `ambient console` when `dashboard.enabled` is set. Who may use it is
//! `access`'s job; every response carries security headers that forbid
//! scripts, framing and sniffing. How long a client may take and how many
//! connections are kept is `serve`'s: never so many that the bot beside it
//! runs out of sockets.

use crate::store::cut;
use crate::store::{
    DiscoveryStore, FeedStore, GardenStore, GuildStore, ImpulseStore, InitiativeStore,
    JournalStore, MemoryStore, MessageStore, OverrideStore, PeopleStore, UsageStore,
};
pub(crate) mod access;
mod chart;
mod feeds;
mod initiative;
mod memory;
pub(crate) mod open_files;
mod params;
mod problem;
mod serve;
mod site;
mod spend;
mod today;
mod view;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, REFERRER_POLICY, SET_COOKIE,
    WWW_AUTHENTICATE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, extract::ConnectInfo};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::app::App;
pub use access::{Access, Who};
use params::Params;
pub use serve::{BODY_WITHIN, HEAD_WITHIN, MAX_HEAD_BYTES};
pub use site::Site;
use view::{Frame, Views};

/// The largest request body read (the forms are a few short fields).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// No script, style and images from this server only, forms post only
/// here, never inside a frame.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

/// What every handler reads: the data, who may come in, the templates.
pub(crate) struct Dash {
    pub site: Site,
    pub access: Access,
    views: Views,
}

impl Dash {
    pub(crate) fn new(site: Site, access: Access) -> Self {
        Self {
            site,
            access,
            views: Views::default(),
        }
    }

    fn frame(&self, page: &'static str, title: &str, who: &Who) -> Frame {
        view::frame(
            page,
            title,
            self.access.csrf_for(who),
            who,
            self.site.now(),
            self.site.served_by(),
        )
    }

    /// A 400 page naming the bad input and what would be valid.
    fn bad_input(&self, who: &Who, problem: impl std::fmt::Display) -> Response {
        self.views.error(
            StatusCode::BAD_REQUEST,
            &self.frame("", "Bad request", who),
            "This request has a value the dashboard cannot use.",
            &problem.to_string(),
        )
    }

    /// A 503 page for an action the store could not carry out now (a
    /// lock held too long, a full disk): the request was fine, so it is
    /// not a 400, and nothing was changed, so it may simply be tried again.
    fn store_failed(&self, who: &Who, what: &str, e: impl std::fmt::Display) -> Response {
        self.views.error(
            StatusCode::SERVICE_UNAVAILABLE,
            &self.frame("", "Not done", who),
            &format!("The database could not {what} just now; nothing was changed."),
            &format!("{e}. Try again in a moment; the log may say more."),
        )
    }

    /// The refusal of an action whose CSRF token is missing or wrong.
    fn csrf_refused(&self, who: &Who) -> Response {
        self.views.error(
            StatusCode::FORBIDDEN,
            &self.frame("", "Refused", who),
            "Refused: this form did not come from this dashboard (its CSRF token is missing or wrong).",
            "Nothing was changed. Reload the page and try again; a form kept open across a restart of the dashboard needs a reload too.",
        )
    }

    /// A read-only page drawn from its query string: `view` makes the page's
    /// data, or names the bad parameter.
    fn query_page<V: serde::Serialize>(
        &self,
        who: &Who,
        (id, title, template): (&'static str, &str, &str),
        query: Option<&str>,
        view: impl FnOnce(&Site, &Params) -> Result<V, problem::Problem>,
    ) -> Response {
        let frame = self.frame(id, title, who);
        match Params::from_query(query)
            .map_err(problem::Problem::from)
            .and_then(|p| view(&self.site, &p))
        {
            Ok(v) => self.views.page(template, &frame, &v),
            Err(e) => self.bad_input(who, &e),
        }
    }

    /// A posted form, once it parses and carries `who`'s CSRF token; or the
    /// answer that refuses it (bad input, or a forged form), boxed: a
    /// response is large and the form is the usual case.
    fn posted_form(&self, who: &Who, body: &[u8]) -> Result<Params, Box<Response>> {
        let form = Params::from_form(body).map_err(|e| Box::new(self.bad_input(who, &e)))?;
        if !self.access.csrf_ok(who, form.raw("csrf")) {
            return Err(Box::new(self.csrf_refused(who)));
        }
        Ok(form)
    }
}

/// Runs a page on the blocking pool: the store is read synchronously, and a
/// running bot's tasks must not wait behind a month of usage being summed.
async fn blocking(d: Arc<Dash>, page: impl FnOnce(&Dash) -> Response + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(move || page(&d)).await {
        Ok(res) => res,
        Err(e) => {
            tracing::error!(error = %e, "a dashboard page failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page failed; the log says why",
            )
                .into_response()
        }
    }
}

pub(crate) fn router(dash: Arc<Dash>) -> Router {
    Router::new()
        .route("/", get(today::page))
        .route("/spend", get(spend::page))
        .route("/initiative", get(initiative::page))
        .route("/feeds", get(feeds::page))
        .route("/memory", get(memory::page))
        .route(
            "/memory/forget",
            get(memory::confirm_forget).post(memory::forget),
        )
        .route(
            "/memory/forget-me",
            get(memory::confirm_forget_me).post(memory::forget_me),
        )
        .route("/memory/export", get(memory::export))
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
        .route("/assets/style.css", get(style))
        .route("/assets/icon.svg", get(icon))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        // Inside the guard: a request refused is answered at once, its body unread.
        .layer(middleware::from_fn(serve::read_body_within))
        .layer(middleware::from_fn_with_state(dash.clone(), guard))
        .layer(middleware::map_response(security_headers))
        .with_state(dash)
}

/// A dashboard listening in the background; [`Served::stop`] ends it.
pub struct Served {
    pub addr: SocketAddr,
    /// A token made at this start, to be shown once.
    pub new_token: Option<String>,
    /// Where the token's hash is kept, when a token is needed.
    pub token_file: Option<PathBuf>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Served {
    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// What to tell the operator at start: where it is and how to get in.
    pub(crate) fn announce(&self) -> Vec<String> {
        let mut lines = Vec::new();
        match &self.token_file {
            None => lines.push(format!(
                "dashboard on {} (this machine only; whoever can reach it here is its operator)",
                self.url()
            )),
            Some(file) => {
                lines.push(format!(
                    "dashboard on {} (beyond loopback: the token is required)",
                    self.url()
                ));
                lines.push(match &self.new_token {
                    Some(token) => format!(
                        "dashboard token (shown this once; only its hash is kept, in {}): {token}",
                        file.display()
                    ),
                    None => format!(
                        "dashboard token: the one shown when it was made (only its hash is kept, in {}; \
                         `ambient dashboard --new-token` makes a new one)",
                        file.display()
                    ),
                });
            }
        }
        lines
    }

    /// Stops listening; requests in flight get a few seconds to finish.
    pub async fn stop(self) {
        self.stop_by(tokio::time::Instant::now() + Duration::from_secs(5))
            .await;
    }

    /// Stops listening; requests in flight get until `deadline` to finish.
    pub(crate) async fn stop_by(self, deadline: tokio::time::Instant) {
        // Harmless: it fails only when the server has already stopped.
        let _ = self.stop.send(());
        let mut task = self.task;
        if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
            task.abort();
        }
    }
}

/// Listens on `bind` and serves `site`. Beyond loopback the token from
/// `data_dir` is required (made there now if there is none, or `renew`).
pub async fn start(
    site: Site,
    bind: SocketAddr,
    data_dir: &Path,
    renew_token: bool,
) -> anyhow::Result<Served> {
    // Listening first: a token made for a dashboard that then cannot listen
    // would be stored but never shown.
    let listener =
        serve::listen(bind).with_context(|| format!("cannot listen on {bind} (dashboard.bind)"))?;
    let (access, new_token, token_file) = if Access::needs_token(bind) {
        let token = access::load_or_make_token(data_dir, renew_token)?;
        (Access::token(token.hash), token.fresh, Some(token.file))
    } else {
        if renew_token {
            anyhow::bail!(
                "--new-token: the dashboard on {bind} is on loopback, where no token is used; \
                 a token is made for a dashboard.bind (or --bind) beyond loopback"
            );
        }
        (Access::loopback(), None, None)
    };
    let addr = listener.local_addr()?;
    let app = router(Arc::new(Dash::new(site, access)));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve::serve(listener, app, async {
        // Harmless: a dropped sender stops the server as well.
        let _ = stopped.await;
    }));
    Ok(Served {
        addr,
        new_token,
        token_file,
        stop,
        task,
    })
}

/// The dashboard of a running bot, when `dashboard.enabled` is set.
pub(crate) async fn start_for(app: &Arc<App>) -> anyhow::Result<Option<Served>> {
    let settings = app.settings.global();
    if !settings.dashboard.enabled {
        return Ok(None);
    }
    let bind = settings
        .dashboard
        .address()
        .map_err(|e| anyhow::anyhow!("dashboard.bind: {e}"))?;
    start(Site::of_app(app), bind, &app.data_dir, false)
        .await
        .map(Some)
}

/// Lets in whom `access` lets in; the sign-in page and the stylesheet are
/// open (they show nothing), everything else needs a [`Who`]. A refusal
/// comes before the request's body is read, and closes the connection: the
/// body is not waited for, and the next request on it would be refused too.
async fn guard(State(d): State<Arc<Dash>>, mut req: Request, next: Next) -> Response {
    if let Err(why) = d.access.host_allowed(req.headers()) {
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.to_string());
        tracing::warn!(peer, "dashboard: refused a request for another host");
        return serve::closes((StatusCode::FORBIDDEN, why.to_string()).into_response());
    }
    let path = req.uri().path();
    if path == "/login" || path.starts_with("/assets/") {
        return next.run(req).await;
    }
    match d.access.identify(req.headers()) {
        Some(who) => {
            req.extensions_mut().insert(who);
            next.run(req).await
        }
        None => {
            let mut page = login_view(&d, StatusCode::UNAUTHORIZED, None);
            page.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"ambient dashboard\""),
            );
            serve::closes(page)
        }
    }
}

async fn security_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    res
}

fn login_view(d: &Dash, status: StatusCode, problem: Option<&str>) -> Response {
    #[derive(serde::Serialize)]
    struct View<'a> {
        problem: Option<&'a str>,
    }
    let frame = Frame {
        page: "",
        title: "Sign in".into(),
        csrf: String::new(),
        session: false,
        now: view::stamp(d.site.now()),
        served_by: d.site.served_by(),
    };
    d.views
        .render(status, "login.html", &frame, &View { problem })
}

fn see_other(to: &'static str) -> Response {
    (StatusCode::SEE_OTHER, [(LOCATION, to)]).into_response()
}

async fn login_page(State(d): State<Arc<Dash>>) -> Response {
    if !d.access.uses_token() {
        return see_other("/");
    }
    login_view(&d, StatusCode::OK, None)
}

/// The sign-in form. It carries no CSRF token: there is no session to
/// ride yet, and a forged sign-in would need the token it signs in with.
async fn login(State(d): State<Arc<Dash>>, body: Bytes) -> Response {
    if !d.access.uses_token() {
        return see_other("/");
    }
    let form = match Params::from_form(&body) {
        Ok(f) => f,
        Err(e) => return login_view(&d, StatusCode::BAD_REQUEST, Some(&e.to_string())),
    };
    if !form.raw("token").is_some_and(|t| d.access.token_matches(t)) {
        return login_view(
            &d,
            StatusCode::UNAUTHORIZED,
            Some("That is not this dashboard's token."),
        );
    }
    let id = d.access.sign_in();
    let mut res = see_other("/");
    if let Ok(cookie) = HeaderValue::from_str(&access::session_cookie(Some(&id))) {
        res.headers_mut().insert(SET_COOKIE, cookie);
    }
    res
}

async fn logout(
    State(d): State<Arc<Dash>>,
    Extension(who): Extension<Who>,
    body: Bytes,
) -> Response {
    if let Err(refused) = d.posted_form(&who, &body) {
        return *refused;
    }
    d.access.sign_out(&who);
    let mut res = see_other("/login");
    if let Ok(cookie) = HeaderValue::from_str(&access::session_cookie(None)) {
        res.headers_mut().insert(SET_COOKIE, cookie);
    }
    res
}

async fn style() -> Response {
    ([(CONTENT_TYPE, "text/css; charset=utf-8")], view::STYLE).into_response()
}

async fn icon() -> Response {
    ([(CONTENT_TYPE, "image/svg+xml")], view::ICON).into_response()
}

async fn not_found(State(d): State<Arc<Dash>>, who: Option<Extension<Who>>) -> Response {
    let who = who.map_or(Who::Loopback, |Extension(w)| w);
    d.views.error(
        StatusCode::NOT_FOUND,
        &d.frame("", "Not found", &who),
        "There is no such page.",
        "The pages are Today (/), Spend (/spend), Initiative (/initiative) and Memory (/memory).",
    )
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub messages: MessageStore,
    pub memory: MemoryStore,
    pub journal: JournalStore,
    pub usage: UsageStore,
    pub initiative: InitiativeStore,
    pub people: PeopleStore,
    pub discovery: DiscoveryStore,
    pub feeds: FeedStore,
    pub impulses: ImpulseStore,
    pub garden: GardenStore,
    pub overrides: OverrideStore,
    pub guilds: GuildStore,
}

cut!(Stores => crate::commands::Stores { messages, memory, journal, usage, initiative, people, impulses, garden, guilds });

cut!(Stores => crate::discovery::Stores { messages, discovery, feeds });

cut!(Stores => crate::executive::Stores { messages, usage });

cut!(Stores => crate::feeds::Stores { messages, discovery, feeds });

cut!(Stores => crate::memory::Stores { messages, memory, people });
