//! A local feed server on 127.0.0.1 with real-world-shaped samples: an RSS
//! 2.0 blog with HTML descriptions, an Atom feed, a Reddit listing, a YouTube
//! channel feed and Hacker News JSON — and hostile endpoints: malformed XML,
//! a "billion laughs" document, a 50 MB body, a redirect loop, a failing
//! server. Feeds carry ETags and answer a matching If-None-Match with 304.
//! Dates are relative to now, so freshness can be tested.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{Duration, Utc};

pub struct Served {
    /// The "now" the samples' dates are relative to (the test's clock).
    pub now: chrono::DateTime<Utc>,
    pub hits: HashMap<String, u32>,
    pub not_modified: u32,
    pub user_agents: Vec<String>,
    /// Overrides of a path's body (content type, body).
    pub bodies: HashMap<String, (String, String)>,
    /// Paths that answer 302 to a location.
    pub redirects: HashMap<String, String>,
    /// Every `Authorization` header received, with its path.
    pub authorizations: Vec<(String, String)>,
    /// Paths that answer 500 for now (a feed that worked and broke).
    pub failing: std::collections::HashSet<String>,
}

#[derive(Clone)]
pub struct FeedServer {
    pub url: String,
    pub served: Arc<Mutex<Served>>,
}

pub fn rss_blog(now: chrono::DateTime<Utc>) -> String {
    let rfc2822 = |h: i64| (now - Duration::hours(h)).to_rfc2822();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/">
  <channel>
    <title>This Week in Rust</title>
    <link>https://this-week-in-rust.example/</link>
    <description>Handpicked Rust updates</description>
    <item>
      <title>Tokio 2.0 released</title>
      <link>https://blog.example/tokio-2?utm_source=rss&amp;utm_medium=feed</link>
      <description>&lt;p&gt;The &lt;b&gt;async runtime&lt;/b&gt; gets a &lt;a href="https://x"&gt;major&lt;/a&gt; update.&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;</description>
      <pubDate>{}</pubDate>
      <guid>https://blog.example/tokio-2</guid>
    </item>
    <item>
      <title>Why we rewrote our bakery app in Rust</title>
      <link>https://bakery.example/rust</link>
      <description>Bread &amp;amp; borrow checkers.</description>
      <pubDate>{}</pubDate>
    </item>
    <item>
      <title>An old post nobody needs today</title>
      <link>https://blog.example/ancient</link>
      <description>From long ago.</description>
      <pubDate>{}</pubDate>
    </item>
  </channel>
</rss>"#,
        rfc2822(2),
        rfc2822(5),
        rfc2822(24 * 10)
    )
}

pub fn atom(now: chrono::DateTime<Utc>) -> String {
    let rfc3339 = |h: i64| (now - Duration::hours(h)).to_rfc3339();
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Example Atom</title>
  <id>urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6</id>
  <updated>{0}</updated>
  <entry>
    <title>Atom-powered robots run amok</title>
    <link href="https://atom.example/2003/12/13/atom03"/>
    <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
    <updated>{0}</updated>
    <summary>Some text about robots.</summary>
  </entry>
</feed>"#,
        rfc3339(1)
    )
}

pub fn reddit(now: chrono::DateTime<Utc>) -> String {
    let now = now.timestamp();
    serde_json::json!({
        "kind": "Listing",
        "data": {"after": "t3_zzz", "dist": 3, "children": [
            {"kind": "t3", "data": {"title": "Weekly questions thread", "stickied": true, "url": "https://www.reddit.com/r/rust/comments/1/weekly/",
                                     "permalink": "/r/rust/comments/1/weekly/", "is_self": true, "selftext": "ask here", "created_utc": now - 3600}},
            {"kind": "t3", "data": {"title": "Tokio 2.0 released!", "stickied": false, "over_18": false, "is_self": false,
                                     "url": "https://blog.example/tokio-2/", "permalink": "/r/rust/comments/2/tokio_20_released/",
                                     "post_hint": "link", "selftext": "", "created_utc": now - 7200}},
            {"kind": "t3", "data": {"title": "My crab drawing", "stickied": false, "is_self": false, "url": "https://i.redd.it/crab.png",
                                     "permalink": "/r/rust/comments/3/my_crab_drawing/", "post_hint": "image", "selftext": "", "created_utc": now - 1800}},
            {"kind": "t3", "data": {"title": "Show r/rust: a tiny kernel", "stickied": false, "is_self": true,
                                     "url": "https://www.reddit.com/r/rust/comments/4/show_rrust/", "permalink": "/r/rust/comments/4/show_rrust/",
                                     "selftext": "I wrote **a kernel** in 3,000 lines.", "created_utc": now - 900}}
        ]}
    })
    .to_string()
}

pub fn youtube(now: chrono::DateTime<Utc>) -> String {
    let rfc3339 = |h: i64| (now - Duration::hours(h)).to_rfc3339();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns:yt="http://www.youtube.com/xml/schemas/2015" xmlns:media="http://search.yahoo.com/mrss/" xmlns="http://www.w3.org/2005/Atom">
 <link rel="self" href="http://www.youtube.com/feeds/videos.xml?channel_id=UCaYhcUwRBNscFNUKTjgPFiA"/>
 <id>yt:channel:UCaYhcUwRBNscFNUKTjgPFiA</id>
 <yt:channelId>UCaYhcUwRBNscFNUKTjgPFiA</yt:channelId>
 <title>Rust</title>
 <published>2015-05-06T00:00:00+00:00</published>
 <entry>
  <id>yt:video:dQw4w9WgXcQ</id>
  <yt:videoId>dQw4w9WgXcQ</yt:videoId>
  <title>RustConf keynote</title>
  <link rel="alternate" href="https://www.youtube.com/watch?v=dQw4w9WgXcQ"/>
  <published>{}</published>
  <media:group>
   <media:title>RustConf keynote</media:title>
   <media:content url="https://www.youtube.com/v/dQw4w9WgXcQ" type="application/x-shockwave-flash" width="640" height="390"/>
   <media:thumbnail url="https://i1.ytimg.com/vi/dQw4w9WgXcQ/hqdefault.jpg" width="480" height="360"/>
   <media:description>The opening keynote.</media:description>
  </media:group>
 </entry>
</feed>"#,
        rfc3339(3)
    )
}

const BILLION_LAUGHS: &str = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<rss version="2.0"><channel><title>&lol9;</title><item><title>&lol9;</title><link>https://laughs.example/a</link></item></channel></rss>"#;

impl FeedServer {
    /// A server whose samples are dated relative to `now`.
    pub fn start_at(now: chrono::DateTime<Utc>) -> Self {
        let served = Arc::new(Mutex::new(Served {
            now,
            hits: HashMap::new(),
            not_modified: 0,
            user_agents: Vec::new(),
            bodies: HashMap::new(),
            redirects: HashMap::new(),
            authorizations: Vec::new(),
            failing: Default::default(),
        }));
        let (listener, url) = super::serve::bind();
        let app = Router::new().fallback(serve).with_state(served.clone());
        super::serve::spawn(listener, app);
        Self { url, served }
    }

    pub fn hits(&self, path: &str) -> u32 {
        self.served
            .lock()
            .unwrap()
            .hits
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    /// `path` answers 302 with `location`.
    pub fn redirect(&self, path: &str, location: &str) {
        self.served
            .lock()
            .unwrap()
            .redirects
            .insert(path.into(), location.into());
    }

    /// The `Authorization` headers `path` received.
    pub fn authorizations(&self, path: &str) -> Vec<String> {
        let s = self.served.lock().unwrap();
        s.authorizations
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// `path` answers 500 (`true`) or what it served before (`false`).
    pub fn fail(&self, path: &str, failing: bool) {
        let mut s = self.served.lock().unwrap();
        if failing {
            s.failing.insert(path.into());
        } else {
            s.failing.remove(path);
        }
    }

    pub fn set(&self, path: &str, content_type: &str, body: String) {
        self.served
            .lock()
            .unwrap()
            .bodies
            .insert(path.into(), (content_type.into(), body));
    }
}

fn etag_of(body: &str) -> String {
    format!(
        "\"{:x}\"",
        body.len() * 31 + body.bytes().map(|b| b as usize).sum::<usize>()
    )
}

async fn serve(State(served): State<Arc<Mutex<Served>>>, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path().to_string();
    let (overridden, now) = {
        let mut s = served.lock().unwrap();
        *s.hits.entry(path.clone()).or_default() += 1;
        if let Some(ua) = headers.get("user-agent").and_then(|v| v.to_str().ok()) {
            s.user_agents.push(ua.to_string());
        }
        if let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
            s.authorizations.push((path.clone(), auth.to_string()));
        }
        if s.failing.contains(&path) {
            return (StatusCode::INTERNAL_SERVER_ERROR, "down for maintenance").into_response();
        }
        if let Some(to) = s.redirects.get(&path) {
            return (StatusCode::FOUND, [("location", to.clone())]).into_response();
        }
        (s.bodies.get(&path).cloned(), s.now)
    };
    let (content_type, body) = match (path.as_str(), overridden) {
        (_, Some(b)) => b,
        ("/blog/rss.xml", _) => ("application/rss+xml".into(), rss_blog(now)),
        ("/atom.xml", _) => ("application/atom+xml".into(), atom(now)),
        ("/r/rust/hot.json", _) => ("application/json".into(), reddit(now)),
        ("/feeds/videos.xml", _) => ("application/atom+xml".into(), youtube(now)),
        ("/v0/topstories.json", _) => ("application/json".into(), "[101, 102, 103]".into()),
        ("/v0/item/101.json", _) => ("application/json".into(), serde_json::json!({"id": 101, "type": "story", "title": "Show HN: Rust in the browser", "url": "https://hn-story.example/rust-browser", "score": 321, "time": now.timestamp() - 600}).to_string()),
        ("/v0/item/102.json", _) => ("application/json".into(), serde_json::json!({"id": 102, "type": "story", "title": "Ask HN: favourite crates?", "score": 99, "time": now.timestamp() - 1200}).to_string()),
        ("/v0/item/103.json", _) => ("application/json".into(), serde_json::json!({"id": 103, "deleted": true}).to_string()),
        ("/broken.xml", _) => ("application/rss+xml".into(), "<rss><channel><item><title>cut off".into()),
        ("/laughs.xml", _) => ("application/rss+xml".into(), BILLION_LAUGHS.into()),
        ("/fail.xml", _) => return (StatusCode::INTERNAL_SERVER_ERROR, "down for maintenance").into_response(),
        ("/loop", _) => return (StatusCode::FOUND, [("location", "/loop2")]).into_response(),
        ("/loop2", _) => return (StatusCode::FOUND, [("location", "/loop")]).into_response(),
        ("/huge.xml", _) => {
            // 50 MB, streamed without a Content-Length, so only a reading cap stops it.
            let chunk = bytes_of(10 * 1024);
            let stream = futures_util::stream::iter((0..5_000).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
            return Response::builder()
                .header("content-type", "application/rss+xml")
                .body(Body::from_stream(stream))
                .unwrap();
        }
        _ => return (StatusCode::NOT_FOUND, "no such feed").into_response(),
    };
    let etag = etag_of(&body);
    if headers.get("if-none-match").and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
        served.lock().unwrap().not_modified += 1;
        return (StatusCode::NOT_MODIFIED, [("etag", etag)]).into_response();
    }
    (
        StatusCode::OK,
        [("content-type", content_type), ("etag", etag)],
        body,
    )
        .into_response()
}

fn bytes_of(n: usize) -> axum::body::Bytes {
    axum::body::Bytes::from(vec![b'x'; n])
}
