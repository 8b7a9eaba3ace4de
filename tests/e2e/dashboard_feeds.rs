//! The dashboard's Feeds page: every server's subscriptions with where each
//! posts, its last delivery, its failed fetches in a row and why it is
//! paused — served by a running bot and from the store alone — and the
//! store's failure shown as the other pages show it.

use ambient::clock::{Clock, ManualClock};
use ambient::dashboard::{self, Served, Site};
use ambient::feeds::manage::AddRequest;
use ambient::ids::UserId;
use ambient::settings::Secrets;
use chrono::Duration;
use reqwest::StatusCode;

use crate::support::feed_server::FeedServer;
use crate::support::world::{GENERAL, GUILD_A, MEMES, World, settings};

const MANAGER: UserId = UserId(4242);

async fn serve(site: Site, w: &World) -> Served {
    dashboard::start(site, "127.0.0.1:0".parse().unwrap(), &w.app.data_dir, false)
        .await
        .unwrap()
}

async fn get(served: &Served, path: &str) -> (StatusCode, String) {
    let res = reqwest::get(format!("http://127.0.0.1:{}{path}", served.addr.port()))
        .await
        .unwrap();
    (res.status(), res.text().await.unwrap())
}

/// The table row of subscription `id`, its cells' text (unescaped) joined by `|`.
fn row(html: &str, id: i64) -> String {
    let start = html
        .find(&format!("<tr id=\"subscription-{id}\">"))
        .unwrap_or_else(|| panic!("no row for subscription {id}:\n{html}"));
    let end = start + html[start..].find("</tr>").unwrap();
    let cells = regex::Regex::new(r"<[^>]+>").unwrap();
    cells
        .replace_all(&html[start..end].replace("</td><td", "</td>|<td"), "")
        .replace("&#x2f;", "/")
}

#[tokio::test]
async fn the_feeds_page_lists_each_subscription_with_its_last_delivery_and_failures() {
    let server = FeedServer::start_at(ManualClock::at_test_epoch().now());
    let mut s = settings();
    s.network.allow_private_hosts = true;
    let w = World::start(s).await;
    let blog = format!("{}/blog/rss.xml", server.url);
    let atom = format!("{}/atom.xml", server.url);
    let mut req = AddRequest::new(&blog, GENERAL);
    req.backfill = 1;
    let delivered = w.app.feeds.add(GUILD_A, MANAGER, req).await.unwrap().id;
    let failing = w
        .app
        .feeds
        .add(GUILD_A, MANAGER, AddRequest::new(&atom, MEMES))
        .await
        .unwrap()
        .id;
    w.app.feeds.deliver_due().await;
    assert_eq!(w.said().len(), 1, "the backfilled item went out");
    for _ in 0..3 {
        w.app.store().feeds().note_feed_failure(failing).unwrap();
    }
    w.app.feeds.pause(GUILD_A, failing, MANAGER).unwrap();
    w.clock.advance(Duration::minutes(5));

    let served = serve(Site::of_app(&w.app), &w).await;
    let (status, html) = get(&served, "/feeds").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(
        html.contains(r#"<a href="/feeds" class="current">Feeds</a>"#),
        "in the navigation, marked: {html}"
    );
    assert_eq!(
        row(&html, delivered),
        format!("{delivered}|Guild A {GUILD_A}|{blog}|#general|messages|no|0|5m ago|1|0|0"),
    );
    assert_eq!(
        row(&html, failing),
        format!(
            "{failing}|Guild A {GUILD_A}|{atom}|#memes|messages|paused: paused by user {MANAGER}|3|never|0|0|0"
        ),
    );
    let (_, today) = get(&served, "/").await;
    assert!(
        today.contains(r#"<a href="/feeds">Feeds</a>"#),
        "every page links it"
    );

    // `ambient dashboard` has no bot running: the same rows from the store.
    let alone = Site::standalone(settings(), Secrets::default(), w.app.stores())
        .await
        .unwrap();
    let standalone = serve(alone, &w).await;
    let (status, from_store) = get(&standalone, "/feeds").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        row(&from_store, failing).starts_with(&format!(
            "{failing}|Guild A {GUILD_A}|{atom}|#memes|messages|paused:"
        )),
        "{from_store}"
    );
    assert!(row(&from_store, delivered).ends_with("|1|0|0"));
}

#[tokio::test]
async fn no_subscription_says_so_and_a_store_that_fails_is_named() {
    let w = World::start(settings()).await;
    let served = serve(Site::of_app(&w.app), &w).await;
    let (status, html) = get(&served, "/feeds").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("No server has a feed subscription yet"),
        "{html}"
    );

    w.break_table("feed_subscriptions");
    let (status, html) = get(&served, "/feeds").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{html}");
    assert!(
        html.contains("The database could not read the feed subscriptions just now"),
        "{html}"
    );
    assert!(
        html.contains("feed_subscriptions"),
        "the store's own error: {html}"
    );
}
