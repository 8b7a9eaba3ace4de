//! A local feed server for benchmarks: `feeds` RSS feeds of `items` items
//! each on 127.0.0.1, with ETags (a matching `If-None-Match` gets 304).
//! [`FeedServer::next_round`] adds one new item to every feed, so each
//! body and its ETag change.
//!
//! It runs on a thread and runtime of its own, marked with
//! [`super::counting_alloc::not_the_bot`] and with its CPU time readable
//! ([`FeedServer::cpu`]), so a benchmark can leave the server's share out
//! of what it counts for the bot in the same process.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};

struct Shared {
    feeds: usize,
    items: u64,
    /// Round 0 lists items 0..items; each round adds the next one.
    round: AtomicU64,
    /// When item 0 was published; item n an hour after item n-1.
    epoch: DateTime<Utc>,
}

pub struct FeedServer {
    pub url: String,
    shared: Arc<Shared>,
    /// The server thread's id, for its CPU time.
    tid: Arc<AtomicI32>,
}

impl FeedServer {
    /// Serves `feeds` feeds of `items` items, the newest published an hour
    /// before `now` at round 0.
    pub fn start(feeds: usize, items: u64, now: DateTime<Utc>) -> Self {
        let shared = Arc::new(Shared {
            feeds,
            items,
            round: AtomicU64::new(0),
            epoch: now - chrono::Duration::hours(items as i64),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let app = Router::new()
            .route("/feed/{n}", axum::routing::get(feed))
            .with_state(shared.clone());
        let tid = Arc::new(AtomicI32::new(0));
        let told = tid.clone();
        std::thread::Builder::new()
            .name("feed-server".into())
            .spawn(move || {
                super::counting_alloc::not_the_bot();
                // SAFETY: gettid has no preconditions.
                told.store(unsafe { libc::gettid() }, Ordering::SeqCst);
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the server's runtime");
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                    axum::serve(listener, app).await.expect("the feed server");
                });
            })
            .expect("the server's thread");
        while tid.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        Self { url, shared, tid }
    }

    /// The URL of feed `n`.
    pub fn feed_url(&self, n: usize) -> String {
        format!("{}/feed/{n}", self.url)
    }

    /// Every feed gains one item, published an hour after the last.
    pub fn next_round(&self) -> u64 {
        self.shared.round.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The title of item `n` of feed `feed` (what a delivery of it shows).
    pub fn title(feed: usize, n: u64) -> String {
        format!("Feed {feed} post {n}: notes on crates, compilers and coffee")
    }

    /// The newest item's number this round.
    pub fn newest(&self) -> u64 {
        self.shared.round.load(Ordering::SeqCst) + self.shared.items - 1
    }

    /// CPU time the server's thread has used (the kernel's nanosecond count).
    pub fn cpu(&self) -> Duration {
        let tid = self.tid.load(Ordering::SeqCst);
        let path = format!("/proc/self/task/{tid}/schedstat");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let ns = text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{path}: no run time in {text:?}"));
        Duration::from_nanos(ns)
    }
}

fn body(s: &Shared, feed: usize) -> String {
    let round = s.round.load(Ordering::SeqCst);
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\"><channel>\
         <title>Bench feed {feed}</title><link>https://feed{feed}.example/</link>\
         <description>Posts of feed {feed}</description>"
    );
    // Newest first, as feeds list them.
    for n in (round..round + s.items).rev() {
        let published = s.epoch + chrono::Duration::hours(n as i64);
        xml.push_str(&format!(
            "<item><title>{title}</title><link>https://feed{feed}.example/posts/{n}</link>\
             <guid>https://feed{feed}.example/posts/{n}</guid>\
             <description>&lt;p&gt;Post {n} of feed {feed}: a paragraph of &lt;b&gt;HTML&lt;/b&gt; \
             about what changed this week, why, and what comes next.&lt;/p&gt;</description>\
             <author>editor{feed}@feed.example (Editor {feed})</author>\
             <category>news</category><category>rust</category>\
             <pubDate>{date}</pubDate></item>",
            title = FeedServer::title(feed, n),
            date = published.to_rfc2822(),
        ));
    }
    xml.push_str("</channel></rss>");
    xml
}

async fn feed(State(s): State<Arc<Shared>>, Path(n): Path<usize>, headers: HeaderMap) -> Response {
    if n >= s.feeds {
        return (StatusCode::NOT_FOUND, "no such feed").into_response();
    }
    let etag = format!("\"{n}-{}\"", s.round.load(Ordering::SeqCst));
    if headers.get("if-none-match").and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
        return (StatusCode::NOT_MODIFIED, [("etag", etag)]).into_response();
    }
    (
        StatusCode::OK,
        [
            ("content-type", "application/rss+xml".to_string()),
            ("etag", etag),
        ],
        body(&s, n),
    )
        .into_response()
}
