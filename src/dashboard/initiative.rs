//! Initiative, per server: the held thought and its revisions, posts (with
//! their text) in the last 24 h against the cap, the gates' recent refusals, when the engine
//! looks next (asked of the gates, as the status widget asks them), and the
//! discovery sources with what they yielded, what was shared and how it was
//! received, and their failures.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::problem::Problem;
use super::today::{message_link, said};
use super::view::{short_time, stamp};
use super::{Dash, Site, Who};
use crate::commands::status;
use crate::console::markup::readable;
use crate::discovery::Origin;
use crate::ids::GuildId;
use crate::store::discovery::SourceRow;
use crate::vocab::journal::{Entry, Filter, Kind};
use crate::vocab::pending::PendingThought;
use crate::when::{ago, until};

/// Gate refusals and posts listed per server, newest first.
const LISTED: usize = 10;

#[derive(Serialize)]
struct View {
    guilds: Vec<GuildView>,
}

#[derive(Serialize)]
struct GuildView {
    id: String,
    name: String,
    next_look: String,
    /// None when the journal could not be read: then `posts_unread` says why.
    posts: Option<u32>,
    posts_unread: Option<String>,
    cap: u32,
    posted: Vec<Line>,
    held: Option<Held>,
    refusals: Vec<Line>,
    sources: Vec<SourceView>,
}

#[derive(Serialize)]
struct Line {
    at: String,
    at_full: String,
    summary: String,
    why: String,
    /// A post's text (none for a gate's stop).
    said: Option<String>,
    link: Option<String>,
}

#[derive(Serialize)]
struct Held {
    draft: String,
    channel: String,
    revision: u32,
    since: String,
    expires: String,
    reason: String,
    media: Option<String>,
    revisions: Vec<Revision>,
}

#[derive(Serialize)]
struct Revision {
    at: String,
    revision: String,
    draft: String,
    why: String,
}

#[derive(Serialize)]
struct SourceView {
    label: String,
    kind: String,
    origin: &'static str,
    fetched: String,
    status: String,
    failures: u32,
    next: String,
    items: u64,
    shared: u64,
    reactions: u64,
    replies: u64,
}

pub(crate) async fn page(State(d): State<Arc<Dash>>, Extension(who): Extension<Who>) -> Response {
    super::blocking(d, move |d| {
        let frame = d.frame("initiative", "Initiative", &who);
        let guilds = match d.site.guilds() {
            Ok(guilds) => guilds,
            Err(e) => return d.bad_input(&who, Problem::Servers(e)),
        };
        let view = View {
            guilds: guilds
                .into_iter()
                .map(|(g, name)| guild_view(&d.site, g, name))
                .collect(),
        };
        d.views.page("initiative.html", &frame, &view)
    })
    .await
}

fn guild_view(site: &Site, guild: GuildId, name: String) -> GuildView {
    let now = site.now();
    let settings = site.settings.for_guild(Some(guild));
    let pending = site
        .store
        .initiative
        .pending_thought(guild)
        .ok()
        .flatten()
        .filter(|p| !p.is_expired(now));
    // Unreadable, the count is not a number: 0 would say the bot has its whole day's posts left.
    let (posts, posts_unread) =
        match crate::initiative::posts_last_24h(&site.store.journal, guild, now) {
            Ok(n) => (Some(n), None),
            Err(e) => (None, Some(format!("store read failed: {e}"))),
        };
    let day = |kinds| {
        site.store
            .journal
            .journal_query(&Filter {
                since: Some(now - Duration::hours(24)),
                kinds,
                guild: Some(guild),
                ..Default::default()
            })
            .unwrap_or_default()
    };
    let lines = |entries: Vec<Entry>| -> Vec<Line> {
        entries
            .iter()
            .rev()
            .take(LISTED)
            .map(|e| line(site, e, now))
            .collect()
    };
    GuildView {
        id: guild.to_string(),
        next_look: status::next_look(&site.sources(), &settings, guild, pending.as_ref()),
        posts,
        posts_unread,
        cap: settings.initiative.text.max_posts_per_day,
        posted: lines(day(vec![Kind::InitiativePost])),
        refusals: lines(day(vec![Kind::Gate])),
        held: pending.map(|p| held(site, &p, now)),
        sources: sources(site, guild, now),
        name,
    }
}

fn line(site: &Site, e: &Entry, now: DateTime<Utc>) -> Line {
    Line {
        at: short_time(e.at, now),
        at_full: stamp(e.at),
        summary: readable(&e.summary, &site.store.messages),
        why: readable(&e.reason, &site.store.messages),
        said: said(site, e),
        link: message_link(e),
    }
}

/// The held thought, with each revision the journal kept of it.
fn held(site: &Site, p: &PendingThought, now: DateTime<Utc>) -> Held {
    let revisions = site
        .store
        .journal
        .journal_query(&Filter {
            since: Some(p.created_at),
            kinds: vec![Kind::InitiativeSkip],
            guild: Some(p.guild),
            ..Default::default()
        })
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.data["action"] == "hold")
        .map(|e| Revision {
            at: short_time(e.at, now),
            revision: e.data["revision"].to_string(),
            draft: e.data["draft"].as_str().unwrap_or_default().to_string(),
            why: e.reason,
        })
        .collect();
    Held {
        draft: p.draft.clone(),
        channel: p
            .channel
            .map(|c| site.channel_label(c))
            .unwrap_or_else(|| "no channel yet".into()),
        revision: p.revision,
        since: ago(p.created_at, now),
        expires: until(p.expires_at, now),
        reason: p.last_reason.clone(),
        media: p
            .media
            .as_ref()
            .map(|m| format!("{}: {}", m.kind.as_str(), m.prompt)),
        revisions,
    }
}

/// The server's feed sources and how each has done for it.
fn sources(site: &Site, guild: GuildId, now: DateTime<Utc>) -> Vec<SourceView> {
    let rows: Vec<SourceRow> = site.store.discovery.sources().unwrap_or_default();
    site.discovery
        .guild_sources(guild)
        .into_iter()
        .map(|(spec, origin)| {
            let row = rows
                .iter()
                .find(|r| r.kind == spec.kind.as_str() && r.target == spec.target);
            let stats = row
                .and_then(|r| site.store.discovery.source_stats(r.id, guild).ok())
                .unwrap_or_default();
            SourceView {
                label: spec.label(),
                kind: spec.kind.to_string(),
                origin: match origin {
                    Origin::Settings => "settings",
                    Origin::Added { by } if by == "model" => "added by the bot",
                    Origin::Added { .. } => "added by a member",
                },
                fetched: row
                    .and_then(|r| r.last_fetch_at)
                    .map_or("not yet".into(), |t| ago(t, now)),
                status: row.map(|r| r.last_status.clone()).unwrap_or_default(),
                failures: row.map_or(0, |r| r.failures),
                next: row.map_or(String::new(), |r| until(r.next_fetch_at, now)),
                items: stats.items,
                shared: stats.shared,
                reactions: stats.reactions,
                replies: stats.replies,
            }
        })
        .collect()
}
