//! Memory: browse and search the facts per server, channel and user, with
//! their type, importance, strength and when each was last used; forget a
//! fact, run forget-me for a person (the operator's power: whoever may use
//! the dashboard), and export in the `ambient memories export` format.
//!
//! Destructive actions go through a confirmation page that shows what will
//! go, then a POST carrying the CSRF token. Searching here does not count
//! as using a fact (memory's own search would refresh what it finds).

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::params::Params;
use super::problem::Problem;
use super::today::{Choice, channel_choices};
use super::view::stamp;
use super::{Dash, Site, Who};
use crate::ids::{GuildId, UserId};
use crate::memory::MemoryError;
use crate::memory::portable;
use crate::memory::search::{self, Reader};
use crate::settings::retention;
use crate::store::memory::FactFilter;
use crate::vocab::fact::{Fact, FactKind, Importance, ScopeKind};
use crate::when::ago;

/// Facts listed at most.
const LISTED: usize = 200;

/// Who the journal says asked, for the actions taken here.
const VIA: &str = "dashboard";

/// The `guild` filter: every server, direct messages, or one server.
#[derive(Clone, Copy, PartialEq)]
enum Where {
    All,
    Dms,
    Guild(GuildId),
}

fn where_of(p: &Params) -> Result<Where, Problem> {
    match p.get("guild") {
        None => Ok(Where::All),
        Some("dm") => Ok(Where::Dms),
        Some(_) => Ok(p
            .guild("guild")
            .map_err(Problem::NotAPlace)?
            .map_or(Where::All, Where::Guild)),
    }
}

#[derive(Serialize)]
struct View {
    guilds: Vec<Choice>,
    channels: Vec<Choice>,
    scopes: Vec<Choice>,
    kinds: Vec<Choice>,
    importances: Vec<Choice>,
    q: String,
    user: String,
    inactive: bool,
    searched: bool,
    facts: Vec<FactView>,
    full: bool,
    limit: usize,
    export: String,
    /// What is kept and how long: the operator's, or the chosen server's.
    kept: Vec<Kept>,
}

#[derive(Serialize)]
struct Kept {
    name: &'static str,
    what: &'static str,
    days: String,
    /// The server chosen keeps this kind for less than the operator.
    shorter: bool,
}

#[derive(Serialize)]
struct FactView {
    id: String,
    short: String,
    place: String,
    scope: &'static str,
    user: Option<(String, String)>,
    kind: &'static str,
    importance: &'static str,
    strength: u32,
    last_used: String,
    last_used_full: String,
    content: String,
    subject: Option<String>,
    told_by: Option<String>,
    state: &'static str,
    score: Option<String>,
}

pub(crate) async fn page(
    State(d): State<Arc<Dash>>,
    Extension(who): Extension<Who>,
    RawQuery(query): RawQuery,
) -> Response {
    super::blocking(d, move |d| {
        d.query_page(
            &who,
            ("memory", "Memory", "memory.html"),
            query.as_deref(),
            view,
        )
    })
    .await
}

/// What is kept and for how long: the operator's retention, or with a
/// server chosen, that server's (never longer; shorter where it asked).
fn kept(site: &Site, guild: Option<GuildId>) -> Vec<Kept> {
    let operator = site.settings.global().storage.retention.clone();
    let here = site.settings.for_guild(guild).storage.retention.clone();
    retention::KINDS
        .iter()
        .map(|d| Kept {
            name: d.name,
            what: d.what,
            days: retention::days_text(here.days(d.kind)),
            shorter: here.days(d.kind) != operator.days(d.kind),
        })
        .collect()
}

fn view(site: &Site, p: &Params) -> Result<View, Problem> {
    let place = where_of(p)?;
    let guild = match place {
        Where::Guild(g) => Some(g),
        _ => None,
    };
    let filter = fact_filter(p, place)?;
    let (scope, kind, importance) = (filter.scope, filter.kind, filter.importance);
    let (channel, user, inactive) = (filter.channel, filter.user, filter.include_inactive);
    let q = p.get("q").unwrap_or("").to_string();
    let now = site.now();
    let facts: Vec<(Fact, Option<f64>)> = if q.is_empty() {
        site.store
            .memory
            .list_facts(&filter)
            .map_err(Problem::Memory)?
            .into_iter()
            .map(|f| (f, None))
            .collect()
    } else {
        searched(site, place, &q, &filter, now)?
    };
    Ok(View {
        guilds: guild_choices(site, place)?,
        channels: channel_choices(site, guild, channel),
        scopes: choices(
            &["guild", "channel", "user"],
            scope.map(|s| s.as_str()),
            "every scope",
        ),
        kinds: choices(
            &FactKind::ALL.map(|k| k.as_str()),
            kind.map(|k| k.as_str()),
            "every type",
        ),
        importances: choices(
            &["high", "medium", "low"],
            importance.map(|i| i.as_str()),
            "any importance",
        ),
        user: user.map(|u| u.to_string()).unwrap_or_default(),
        full: facts.len() >= LISTED,
        facts: facts
            .iter()
            .map(|(f, score)| fact_view(site, f, *score, now))
            .collect(),
        searched: !q.is_empty(),
        q,
        inactive,
        limit: LISTED,
        export: match place {
            Where::All => String::new(),
            Where::Dms => "dm".into(),
            Where::Guild(g) => g.to_string(),
        },
        kept: kept(site, guild),
    })
}

/// The page's filters as the store's: each field checked, its problem
/// named when it is not one the page offers.
fn fact_filter(p: &Params, place: Where) -> Result<FactFilter, Problem> {
    let scope = p
        .get("scope")
        .map(|s| ScopeKind::parse(s).ok_or_else(|| Problem::Scope(s.to_string())))
        .transpose()?;
    let kind = p
        .get("kind")
        .map(FactKind::parse)
        .transpose()
        .map_err(|e| Problem::FactKind(e.to_string()))?;
    let importance = p
        .get("importance")
        .map(Importance::parse)
        .transpose()
        .map_err(|e| Problem::Importance(e.to_string()))?;
    Ok(FactFilter {
        guild: match place {
            Where::All => None,
            Where::Dms => Some(None),
            Where::Guild(g) => Some(Some(g)),
        },
        scope,
        channel: p.channel("channel")?,
        user: p.user("user")?,
        kind,
        importance,
        include_inactive: p.flag("inactive"),
        limit: Some(LISTED),
        ..Default::default()
    })
}

/// The best matches for `q`, ranked as memory ranks them, then narrowed by the filters.
fn searched(
    site: &Site,
    place: Where,
    q: &str,
    f: &FactFilter,
    now: DateTime<Utc>,
) -> Result<Vec<(Fact, Option<f64>)>, Problem> {
    let readers: Vec<Reader> = match place {
        Where::Guild(g) => vec![Reader::Guild(g)],
        Where::Dms => match f.user {
            Some(u) => vec![Reader::Dm(u)],
            None => {
                return Err(Problem::DmSearchNeedsUser);
            }
        },
        Where::All => site
            .store
            .memory
            .fact_guilds()?
            .into_iter()
            .flatten()
            .map(Reader::Guild)
            .collect(),
    };
    let mut found: Vec<(Fact, Option<f64>)> = readers
        .into_iter()
        .flat_map(|reader| {
            let guild = match reader {
                Reader::Guild(g) => Some(g),
                Reader::Dm(_) => None,
            };
            let half_life = site.settings.for_guild(guild).memory.search_half_life_days;
            search::search(
                &site.store.memory,
                reader,
                q,
                now,
                f64::from(half_life),
                LISTED,
            )
        })
        .filter(|s| {
            let fact = &s.fact;
            f.scope.is_none_or(|k| fact.scope.kind == k)
                && f.channel.is_none_or(|c| fact.scope.channel == Some(c))
                && f.user.is_none_or(|u| fact.scope.user == Some(u))
                && f.kind.is_none_or(|k| fact.kind == k)
                && f.importance.is_none_or(|i| fact.importance == i)
        })
        .map(|s| (s.fact, Some(s.score)))
        .collect();
    found.sort_by(|a, b| b.1.unwrap_or(0.0).total_cmp(&a.1.unwrap_or(0.0)));
    found.truncate(LISTED);
    Ok(found)
}

fn choices(values: &[&str], chosen: Option<&str>, any: &str) -> Vec<Choice> {
    let mut out = vec![Choice {
        value: String::new(),
        label: any.into(),
        selected: chosen.is_none(),
    }];
    out.extend(values.iter().map(|v| Choice {
        value: v.to_string(),
        label: v.replace('-', " "),
        selected: chosen == Some(v),
    }));
    out
}

fn guild_choices(site: &Site, place: Where) -> Result<Vec<Choice>, Problem> {
    let mut out = vec![
        Choice {
            value: String::new(),
            label: "every server".into(),
            selected: place == Where::All,
        },
        Choice {
            value: "dm".into(),
            label: "direct messages".into(),
            selected: place == Where::Dms,
        },
    ];
    let guilds = site.guilds().map_err(Problem::Servers)?;
    out.extend(guilds.into_iter().map(|(g, name)| Choice {
        value: g.to_string(),
        label: name,
        selected: place == Where::Guild(g),
    }));
    Ok(out)
}

/// A person's name as the store knows it.
fn person(site: &Site, fact: Option<&Fact>, user: UserId) -> String {
    fact.and_then(|f| f.author.as_ref())
        .filter(|(id, _)| *id == user)
        .map(|(_, n)| n.clone())
        .or_else(|| site.store.messages.author_name(user).ok().flatten())
        .unwrap_or_else(|| format!("member {user}"))
}

fn fact_view(site: &Site, f: &Fact, score: Option<f64>, now: DateTime<Utc>) -> FactView {
    let server = f
        .scope
        .guild
        .map_or("direct messages".to_string(), |g| site.guild_name(g));
    let place = match (f.scope.channel, f.scope.user) {
        (Some(c), _) => format!("{server} · {}", site.channel_label(c)),
        _ => server,
    };
    FactView {
        id: f.id.clone(),
        short: f.short_id().to_string(),
        place,
        scope: f.scope.kind.as_str(),
        user: f
            .scope
            .user
            .map(|u| (u.to_string(), person(site, Some(f), u))),
        kind: f.kind.as_str(),
        importance: f.importance.as_str(),
        strength: f.strength,
        last_used: ago(f.last_seen_at, now),
        last_used_full: stamp(f.last_seen_at),
        content: f.content.clone(),
        subject: f.subject.clone(),
        told_by: f.author.as_ref().map(|(_, n)| n.clone()),
        state: if f.superseded_by.is_some() {
            "superseded"
        } else if f.archived_at.is_some() {
            "archived"
        } else {
            ""
        },
        score: score.map(|s| format!("{s:.3}")),
    }
}

#[derive(Serialize)]
struct Confirm {
    action: &'static str,
    question: String,
    /// What will go, shown before it goes.
    items: Vec<String>,
    fields: Vec<(&'static str, String)>,
    /// A checkbox: (name, label).
    option: Option<(&'static str, &'static str)>,
    button: &'static str,
}

#[derive(Serialize)]
struct Done {
    message: String,
}

pub(crate) async fn confirm_forget(
    State(d): State<Arc<Dash>>,
    Extension(who): Extension<Who>,
    RawQuery(query): RawQuery,
) -> Response {
    super::blocking(d, move |d| {
        let frame = d.frame("memory", "Forget a memory", &who);
        let id = match Params::from_query(query.as_deref()) {
            Ok(p) => p.get("id").map(str::to_string),
            Err(e) => return d.bad_input(&who, &e),
        };
        let Some(id) = id else {
            return d.bad_input(&who, "id: which memory to forget (its whole id) is missing");
        };
        let fact = match d.site.store.memory.fact(&id) {
            Ok(Some(f)) => f,
            Ok(None) => return not_found(d, &who, &id),
            Err(e) => return d.store_failed(&who, "read the memory", e),
        };
        let view = Confirm {
            action: "/memory/forget",
            question: "Forget this memory? It is deleted, not archived; the journal keeps a line saying it was forgotten.".into(),
            items: vec![describe(&d.site, &fact)],
            fields: vec![("id", fact.id.clone())],
            option: None,
            button: "Forget it",
        };
        d.views.page("confirm.html", &frame, &view)
    })
    .await
}

pub(crate) async fn forget(
    State(d): State<Arc<Dash>>,
    Extension(who): Extension<Who>,
    body: Bytes,
) -> Response {
    super::blocking(d, move |d| {
        let form = match d.posted_form(&who, &body) {
            Ok(f) => f,
            Err(refused) => return *refused,
        };
        let Some(id) = form.get("id") else {
            return d.bad_input(&who, "id: which memory to forget (its whole id) is missing");
        };
        match d.site.store.memory.fact(id) {
            Ok(Some(_)) => {}
            Ok(None) => return not_found(d, &who, id),
            // Not a 404: the fact may well be there, and nothing was changed.
            Err(e) => return d.store_failed(&who, "read the memory", e),
        }
        let frame = d.frame("memory", "Forgotten", &who);
        match d.site.memory.forget_by_operator(id, VIA) {
            Ok(f) => d.views.page(
                "done.html",
                &frame,
                &Done {
                    message: format!("Forgotten: \"{}\".", f.content),
                },
            ),
            Err(MemoryError::NoSuchId(id)) => not_found(d, &who, &id),
            Err(e) => d.store_failed(&who, "forget this memory", e),
        }
    })
    .await
}

fn not_found(d: &Dash, who: &Who, id: &str) -> Response {
    d.views.error(
        StatusCode::NOT_FOUND,
        &d.frame("memory", "Not found", who),
        "There is no such memory (it may have been forgotten already).",
        &format!(
            "id: no memory has the id {:?}; the Memory page lists them",
            super::view::cut(id, 40)
        ),
    )
}

fn describe(site: &Site, f: &Fact) -> String {
    let v = fact_view(site, f, None, site.now());
    format!(
        "[{} · {} · {}] {} — {}",
        v.kind, v.importance, v.place, v.content, v.short
    )
}

pub(crate) async fn confirm_forget_me(
    State(d): State<Arc<Dash>>,
    Extension(who): Extension<Who>,
    RawQuery(query): RawQuery,
) -> Response {
    super::blocking(d, move |d| {
        let frame = d.frame("memory", "Forget a person", &who);
        let user = match Params::from_query(query.as_deref()).and_then(|p| p.user("user")) {
            Ok(Some(u)) => u,
            Ok(None) => return d.bad_input(&who, "user: whose memory to erase (their user id) is missing"),
            Err(e) => return d.bad_input(&who, &e),
        };
        let about = d
            .site
            .store
            .memory.list_facts(&FactFilter {
                scope: Some(ScopeKind::User),
                user: Some(user),
                include_inactive: true,
                limit: Some(LISTED),
                ..Default::default()
            })
            .unwrap_or_default();
        let name = person(&d.site, about.first(), user);
        let mut items: Vec<String> = about.iter().map(|f| describe(&d.site, f)).collect();
        if items.is_empty() {
            items.push(format!("no fact is kept about {name}"));
        } else if items.len() == LISTED {
            items.push(format!("… the first {LISTED} are listed; the rest go too"));
        }
        let view = Confirm {
            action: "/memory/forget-me",
            question: format!(
                "Run forget-me for {name} ({user})? Everything the bot remembers about them goes, in every \
                 server and direct message, and every quote of it is redacted. This cannot be undone."
            ),
            items,
            fields: vec![("user", user.to_string())],
            option: Some((
                "messages",
                "also erase the text of everything they said, and the facts they told",
            )),
            button: "Forget this person",
        };
        d.views.page("confirm.html", &frame, &view)
    })
    .await
}

pub(crate) async fn forget_me(
    State(d): State<Arc<Dash>>,
    Extension(who): Extension<Who>,
    body: Bytes,
) -> Response {
    super::blocking(d, move |d| {
        let form = match d.posted_form(&who, &body) {
            Ok(f) => f,
            Err(refused) => return *refused,
        };
        let user = match form.user("user") {
            Ok(Some(u)) => u,
            Ok(None) => return d.bad_input(&who, "user: whose memory to erase (their user id) is missing"),
            Err(e) => return d.bad_input(&who, &e),
        };
        let messages = form.flag("messages");
        let frame = d.frame("memory", "Forgotten", &who);
        match d.site.memory.forget_person(
            None,
            user,
            messages,
            &format!("by the operator ({VIA})"),
        ) {
            Ok((facts, erased)) => d.views.page(
                "done.html",
                &frame,
                &Done {
                    message: if messages {
                        format!("Done: {facts} fact(s) about member {user} forgotten and the text of {erased} of their messages erased, everywhere.")
                    } else {
                        format!("Done: {facts} fact(s) about member {user} forgotten, everywhere.")
                    },
                },
            ),
            // The store's own words: memory's wrapping speaks to the person
            // ("I could not forget you") and says "nothing was changed" again.
            Err(MemoryError::ForgetPerson(e)) => d.store_failed(&who, "run forget-me", e),
            Err(e) => d.store_failed(&who, "run forget-me", e),
        }
    })
    .await
}

/// The memory as an export document (`ambient memories import` reads it back).
pub(crate) async fn export(
    State(d): State<Arc<Dash>>,
    Extension(who): Extension<Who>,
    RawQuery(query): RawQuery,
) -> Response {
    super::blocking(d, move |d| {
        let place = match Params::from_query(query.as_deref())
            .map_err(Problem::from)
            .and_then(|p| where_of(&p))
        {
            Ok(p) => p,
            Err(e) => return d.bad_input(&who, &e),
        };
        let facts: Vec<Fact> = match d.site.store.memory.all_facts() {
            Ok(all) => all
                .into_iter()
                .filter(|f| match place {
                    Where::All => true,
                    Where::Dms => f.scope.guild.is_none(),
                    Where::Guild(g) => f.scope.guild == Some(g),
                })
                .collect(),
            Err(e) => return d.store_failed(&who, "read the memory", e),
        };
        let now = d.site.now();
        let Ok(json) = serde_json::to_string_pretty(&portable::export(&facts, now)) else {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the export could not be written",
            )
                .into_response();
        };
        let what = match place {
            Where::All => "all".to_string(),
            Where::Dms => "dm".to_string(),
            Where::Guild(g) => g.to_string(),
        };
        let file = format!(
            "attachment; filename=\"ambient-memory-{what}-{}.json\"",
            now.format("%Y-%m-%d")
        );
        (
            [
                (CONTENT_TYPE, "application/json".to_string()),
                (CONTENT_DISPOSITION, file),
            ],
            json,
        )
            .into_response()
    })
    .await
}
