//! Feeds: every server's feed subscriptions — where each posts, whether it
//! is paused and why, its failed fetches in a row, its last delivery and
//! what it has sent, has waiting and filtered out. Read-only: `/feeds`
//! changes them.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use serde::Serialize;

use super::view::stamp;
use super::{Dash, Site, Who};
use crate::feeds::manage::{self, Listed, ManageError};
use crate::feeds::subscription::Destination;
use crate::when::ago;

#[derive(Serialize)]
struct View {
    subscriptions: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    id: i64,
    guild: String,
    guild_id: String,
    feed: String,
    channel: String,
    destination: &'static str,
    paused: Option<String>,
    failures: u32,
    last_delivery: String,
    last_delivery_full: String,
    sent: u64,
    waiting: u64,
    filtered: u64,
}

pub(crate) async fn page(State(d): State<Arc<Dash>>, Extension(who): Extension<Who>) -> Response {
    super::blocking(d, move |d| match listed(&d.site) {
        Ok(all) => {
            let frame = d.frame("feeds", "Feeds", &who);
            let view = View {
                subscriptions: all.into_iter().map(|l| row(&d.site, l)).collect(),
            };
            d.views.page("feeds.html", &frame, &view)
        }
        Err(e) => d.store_failed(&who, "read the feed subscriptions", e),
    })
    .await
}

/// The running bot's feeds service when it serves the page, else the store.
fn listed(site: &Site) -> Result<Vec<Listed>, ManageError> {
    match &site.app {
        Some(app) => app.feeds.list_all(),
        None => manage::list_stored(&(&site.store).into()),
    }
}

fn row(site: &Site, l: Listed) -> Row {
    let now = site.now();
    Row {
        id: l.id,
        guild: site.guild_name(l.guild),
        guild_id: l.guild.to_string(),
        feed: l.feed,
        channel: site.channel_label(l.channel),
        destination: match l.destination {
            Destination::Channel => "messages",
            Destination::ThreadPerItem => "a thread per item",
            Destination::Forum => "forum posts",
        },
        paused: l.paused,
        failures: l.failures,
        last_delivery: l.last_delivered_at.map_or("never".into(), |t| ago(t, now)),
        last_delivery_full: l.last_delivered_at.map(stamp).unwrap_or_default(),
        sent: l.counts.sent,
        waiting: l.counts.waiting,
        filtered: l.counts.filtered,
    }
}
