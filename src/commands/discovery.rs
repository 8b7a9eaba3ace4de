//! `/discovery list|add|remove`: a server's feed sources (Manage Server to change).

use crate::app::App;
use crate::discovery::curation::{self, Actor};
use crate::ids::{GuildId, UserId};

pub(crate) fn list(app: &App, guild: GuildId) -> String {
    curation::list(&app.discovery, guild)
}

pub(crate) fn add(app: &App, guild: GuildId, by: UserId, kind: &str, target: &str) -> String {
    curation::add(&app.discovery, guild, kind, target, Actor::Member(by))
        .unwrap_or_else(|e| e.to_string())
}

pub(crate) fn remove(app: &App, guild: GuildId, by: UserId, kind: &str, target: &str) -> String {
    curation::remove(&app.discovery, guild, kind, target, Actor::Member(by))
        .unwrap_or_else(|e| e.to_string())
}

/// The console form: `list`, `add KIND TARGET`, `remove KIND TARGET`.
pub(crate) fn run_text(app: &App, guild: GuildId, by: UserId, args: &str) -> String {
    let words: Vec<&str> = args.split_whitespace().collect();
    match words.as_slice() {
        [] | ["list"] => list(app, guild),
        ["add", kind, target] => add(app, guild, by, kind, target),
        ["remove", kind, target] => remove(app, guild, by, kind, target),
        _ => "usage: /discovery list | /discovery add KIND TARGET | /discovery remove KIND TARGET (KIND: rss, reddit, youtube, x, hackernews)".into(),
    }
}
