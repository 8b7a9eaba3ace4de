//! `/memory remember|search|list|forget|forget-me|export`: people's control
//! over what the bot remembers about their server and about them.
//!
//! Anyone may tell the bot something about themselves (a user-scoped fact);
//! server-wide facts and behavior guidance need Manage Server. Anyone may
//! forget facts about themselves; Manage Server may forget anything here.

use crate::app::App;
use crate::memory::search::Reader;
use crate::memory::{manual, portable};
use crate::store::MemoryStore;
use crate::store::memory::FactFilter;
use crate::vocab::fact::{FactKind, Importance, Scope, ScopeKind};

use super::Asker;

pub(crate) fn remember(
    app: &App,
    who: &Asker,
    text: &str,
    kind: Option<&str>,
    importance: Option<&str>,
) -> String {
    let kind = match kind.map(FactKind::parse).transpose() {
        Ok(k) => k.unwrap_or(FactKind::Fact),
        Err(e) => return e.to_string(),
    };
    let importance = match importance.map(Importance::parse).transpose() {
        Ok(i) => i,
        Err(e) => return e.to_string(),
    };
    if kind == FactKind::BehaviorGuidance && !who.manage {
        return "Only members with Manage Server can give the bot behavior guidance.".into();
    }
    let scope = match (who.guild, who.manage) {
        (Some(g), true) => Scope::guild(g),
        (guild, _) => Scope::user(guild, who.user),
    };
    let fact = manual(
        scope,
        kind,
        importance,
        text,
        Some((who.user, who.name.clone())),
        app.clock.now(),
    );
    match app.memory.remember(fact, None) {
        Ok(stored) => {
            let about = if scope.kind == ScopeKind::User {
                " (about you)"
            } else {
                ""
            };
            format!("{}{about}", stored.describe())
        }
        Err(e) => e.to_string(),
    }
}

pub(crate) fn search(app: &App, who: &Asker, query: &str) -> String {
    let reader = match who.guild {
        Some(g) => Reader::Guild(g),
        None => Reader::Dm(who.user),
    };
    let found = app.memory.search(reader, query, 10);
    if found.is_empty() {
        return format!("Nothing remembered about {query:?}.");
    }
    found
        .iter()
        .map(|s| {
            format!(
                "`{}` [{} · {}] {}",
                s.fact.short_id(),
                s.fact.kind,
                s.fact.importance.as_str(),
                s.fact.content
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn list(app: &App, who: &Asker, kind: Option<&str>, since: Option<&str>) -> String {
    let kind = match kind.map(FactKind::parse).transpose() {
        Ok(k) => k,
        Err(e) => return e.to_string(),
    };
    let since = match since
        .map(|s| crate::when::parse_since(s, app.clock.now()))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    let facts = app
        .stores::<MemoryStore>()
        .list_facts(&FactFilter {
            guild: Some(who.guild),
            user: who.guild.is_none().then_some(who.user),
            kind,
            since,
            limit: Some(20),
            ..Default::default()
        })
        .unwrap_or_default();
    if facts.is_empty() {
        return "Nothing remembered here yet.".into();
    }
    facts
        .iter()
        .map(|f| {
            format!(
                "`{}` {} [{} · {}] {}",
                f.short_id(),
                f.updated_at.format("%Y-%m-%d"),
                f.kind,
                f.importance.as_str(),
                f.content
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn forget(app: &App, who: &Asker, id: &str) -> String {
    match app.memory.forget(who.guild, id, who.user, who.manage) {
        Ok(f) => format!("Forgotten: \"{}\".", f.content),
        Err(e) => e.to_string(),
    }
}

pub(crate) fn forget_me(app: &App, who: &Asker, messages: bool) -> String {
    match app.memory.forget_me(who.guild, who.user, messages) {
        Ok((facts, 0)) => format!(
            "Done: I forgot {facts} thing(s) I knew about you, in every server and in our direct messages."
        ),
        Ok((facts, erased)) => format!(
            "Done: I forgot {facts} thing(s) I knew about you and erased the text of {erased} of your messages, \
             in every server and in our direct messages."
        ),
        Err(e) => e.to_string(),
    }
}

/// Why the memory was not exported; the text is the answer the asker sees.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportRefused {
    #[error("Only members with Manage Server can export the server's memory.")]
    NotManager,
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// This server's facts as an export document (JSON text), for Manage Server.
pub(crate) fn export(app: &App, who: &Asker) -> Result<String, ExportRefused> {
    if !who.manage {
        return Err(ExportRefused::NotManager);
    }
    let facts: Vec<_> = app
        .stores::<MemoryStore>()
        .all_facts()?
        .into_iter()
        .filter(|f| {
            f.scope.guild == who.guild && (who.guild.is_some() || f.scope.user == Some(who.user))
        })
        .collect();
    Ok(serde_json::to_string_pretty(&portable::export(
        &facts,
        app.clock.now(),
    ))?)
}

/// The console form: `remember TEXT`, `search Q`, `list`, `forget ID`, `forget-me`.
pub(crate) fn run_text(app: &App, who: &Asker, args: &str) -> String {
    let (verb, rest) = args.trim().split_once(' ').unwrap_or((args.trim(), ""));
    let rest = rest.trim();
    match verb {
        "remember" if !rest.is_empty() => remember(app, who, rest, None, None),
        "search" if !rest.is_empty() => search(app, who, rest),
        "list" | "" => list(app, who, None, None),
        "forget" if !rest.is_empty() => forget(app, who, rest),
        "forget-me" => forget_me(app, who, rest == "messages"),
        "export" => export(app, who).unwrap_or_else(|e| e.to_string()),
        _ => "usage: /memory remember TEXT | search QUERY | list | forget ID | forget-me [messages] | export".into(),
    }
}
