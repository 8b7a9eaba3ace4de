//! Today: the journal as a timeline — replies, reflexes, ambient posts,
//! reminders and routines, skips, the gates that stopped a look, errors —
//! newest first, filterable by server, channel, kind and window, each entry
//! with its *why*, what the bot said (if it said something) and a link to
//! the message it was about.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::params::Params;
use super::problem::Problem;
use super::view::{short_time, stamp};
use super::{Dash, Site, Who};
use crate::console::markup::readable;
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::vocab::journal::{Entry, Filter, Kind};

/// What the timeline shows without a kind chosen: what the bot did —
/// impulses too, for a reminder or a routine's post is said on its own
/// (those that said something: see [`did_something`]).
const ACTS: &[Kind] = &[
    Kind::Reply,
    Kind::Reflex,
    Kind::InitiativePost,
    Kind::Impulse,
    Kind::InitiativeSkip,
    Kind::Gate,
    Kind::Error,
];

/// Entries shown at most; the counts above still cover the whole window.
pub(crate) const SHOWN: usize = 300;

/// Entries read at most (the newest): the counts say when they stop short.
pub(crate) const MAX_READ: usize = 20_000;

/// The longest window: the journal of a month.
const MAX_WINDOW_DAYS: i64 = 31;

#[derive(Serialize)]
struct View {
    since: String,
    from: String,
    guilds: Vec<Choice>,
    channels: Vec<Choice>,
    kinds: Vec<Choice>,
    counts: Vec<Count>,
    entries: Vec<EntryView>,
    total: usize,
    shown: usize,
    /// The window holds more than [`MAX_READ`] entries (of the kinds asked for).
    capped: bool,
    read_most: usize,
}

#[derive(Serialize)]
pub(crate) struct Choice {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

#[derive(Serialize)]
struct Count {
    label: &'static str,
    n: usize,
    class: &'static str,
}

#[derive(Serialize)]
struct EntryView {
    at: String,
    at_full: String,
    kind: &'static str,
    label: &'static str,
    place: String,
    summary: String,
    why: String,
    /// What the bot said in the channel, when the entry sent something.
    said: Option<String>,
    salience: Option<String>,
    link: Option<String>,
}

pub(crate) async fn page(
    State(d): State<Arc<Dash>>,
    Extension(who): Extension<Who>,
    RawQuery(query): RawQuery,
) -> Response {
    super::blocking(d, move |d| {
        d.query_page(
            &who,
            ("today", "Today", "today.html"),
            query.as_deref(),
            view,
        )
    })
    .await
}

fn view(site: &Site, p: &Params) -> Result<View, Problem> {
    let now = site.now();
    let since_spec = p.get("since").unwrap_or("24h").to_string();
    let since = window_start(&since_spec, now)?;
    let guild = p.guild("guild")?;
    let channel = p.channel("channel")?;
    let kind = p.get("kind").unwrap_or("");
    let kinds = match kind {
        "" => ACTS.to_vec(),
        "all" => Vec::new(),
        k => Kind::parse_list(k).map_err(|e| Problem::JournalKind(e.to_string()))?,
    };
    let mut entries = site
        .store
        .journal
        .journal_query(&Filter {
            since: Some(since),
            kinds,
            guild,
            channel,
            limit: Some(MAX_READ),
            ..Default::default()
        })
        .map_err(Problem::Journal)?;
    let capped = entries.len() == MAX_READ;
    if kind.is_empty() {
        entries.retain(did_something);
    }
    let counts = counts(&entries);
    let total = entries.len();
    let mut places = Places::new(site);
    let shown: Vec<EntryView> = entries
        .iter()
        .rev()
        .take(SHOWN)
        .map(|e| entry_view(site, e, now, &mut places))
        .collect();
    Ok(View {
        since: since_spec,
        from: stamp(since),
        guilds: guild_choices(site, guild)?,
        channels: channel_choices(site, guild, channel),
        kinds: kind_choices(kind),
        counts,
        shown: shown.len(),
        entries: shown,
        capped,
        read_most: MAX_READ,
        total,
    })
}

/// The window's start: a duration back from now (at most a month), or a date.
fn window_start(spec: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, Problem> {
    let too_long = || Problem::WindowTooLong {
        max_days: MAX_WINDOW_DAYS,
        spec: spec.to_string(),
    };
    if let Some(d) = crate::when::parse_duration(spec)
        && d > chrono::Duration::days(MAX_WINDOW_DAYS)
    {
        return Err(too_long());
    }
    let since = crate::when::parse_since(spec, now).map_err(|e| Problem::Since(e.to_string()))?;
    if now - since > chrono::Duration::days(MAX_WINDOW_DAYS) {
        return Err(too_long());
    }
    Ok(since)
}

/// Whether an entry is something the bot did, for the default timeline:
/// an impulse only when it said something (`data.sent`) — a reminder or a
/// routine's post, not a task added, an idea noted or a routine scheduled.
fn did_something(e: &Entry) -> bool {
    e.kind != Kind::Impulse || e.data["sent"].as_array().is_some_and(|s| !s.is_empty())
}

fn counts(entries: &[Entry]) -> Vec<Count> {
    let n = |k: Kind| {
        entries
            .iter()
            .filter(|e| e.kind == k && did_something(e))
            .count()
    };
    vec![
        Count {
            label: "replies",
            n: n(Kind::Reply),
            class: "k-reply",
        },
        Count {
            label: "reflexes",
            n: n(Kind::Reflex),
            class: "k-reflex",
        },
        Count {
            label: "ambient posts",
            n: n(Kind::InitiativePost),
            class: "k-initiative_post",
        },
        Count {
            label: "reminders and routines",
            n: n(Kind::Impulse),
            class: "k-impulse",
        },
        Count {
            label: "skips",
            n: n(Kind::InitiativeSkip),
            class: "k-initiative_skip",
        },
        Count {
            label: "gate stops",
            n: n(Kind::Gate),
            class: "k-gate",
        },
        Count {
            label: "errors",
            n: n(Kind::Error),
            class: "k-error",
        },
    ]
}

fn label(kind: Kind) -> &'static str {
    match kind {
        Kind::InitiativePost => "ambient post",
        Kind::InitiativeSkip => "skip",
        k => k.as_str(),
    }
}

/// Server and channel names, each looked up once per page.
struct Places<'a> {
    site: &'a Site,
    guilds: HashMap<GuildId, String>,
    channels: HashMap<ChannelId, String>,
}

impl<'a> Places<'a> {
    fn new(site: &'a Site) -> Self {
        Self {
            site,
            guilds: HashMap::new(),
            channels: HashMap::new(),
        }
    }

    fn of(&mut self, guild: Option<GuildId>, channel: Option<ChannelId>) -> String {
        let site = self.site;
        let g = guild.map(|g| {
            self.guilds
                .entry(g)
                .or_insert_with(|| site.guild_name(g))
                .clone()
        });
        let c = channel.map(|c| {
            self.channels
                .entry(c)
                .or_insert_with(|| site.channel_label(c))
                .clone()
        });
        match (g, c) {
            (Some(g), Some(c)) => format!("{g} · {c}"),
            (Some(g), None) => g,
            (None, Some(c)) => format!("direct message {c}"),
            (None, None) => String::new(),
        }
    }
}

fn entry_view(site: &Site, e: &Entry, now: DateTime<Utc>, places: &mut Places<'_>) -> EntryView {
    EntryView {
        at: short_time(e.at, now),
        at_full: stamp(e.at),
        kind: e.kind.as_str(),
        label: label(e.kind),
        place: places.of(e.guild, e.channel),
        summary: readable(&e.summary, &site.store.messages),
        why: readable(&e.reason, &site.store.messages),
        said: said(site, e),
        salience: e.salience.map(|s| format!("{s:.2}")),
        link: message_link(e),
    }
}

/// What the bot said for an entry, as the channel reads it (mentions as
/// names): the messages a reply, reminder, routine or ambient post became
/// (`data.sent`), from the store — as they were sent, `@everyone` broken,
/// split, a GIF's link added — or, for a post re-sent after a restart or a
/// reflex's post into a channel, the message the entry names. An ambient
/// post whose messages are no longer kept shows its text as the journal
/// kept it. None where nothing was said.
pub(crate) fn said(site: &Site, e: &Entry) -> Option<String> {
    let mut ids: Vec<MessageId> = e.data["sent"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str()?.parse().ok().map(MessageId))
        .collect();
    if ids.is_empty() && matches!(e.kind, Kind::InitiativePost | Kind::Reflex) {
        ids.extend(e.message);
    }
    // Only the bot's own words: a reflex's entry may name the message it answered.
    let parts: Vec<String> = ids
        .into_iter()
        .filter_map(|id| site.store.messages.message(id).ok().flatten())
        .filter(|m| m.is_self && !m.content.is_empty())
        .map(|m| m.content)
        .collect();
    if !parts.is_empty() {
        return Some(readable(&parts.join("\n"), &site.store.messages));
    }
    let drafted = e.data["text"]
        .as_str()
        .filter(|_| e.kind == Kind::InitiativePost)?;
    Some(readable(drafted, &site.store.messages))
}

/// The Discord link of the message an entry is about, when it has one that
/// Discord would know (not a message still being sent, not the console's).
pub(crate) fn message_link(e: &Entry) -> Option<String> {
    let (channel, message) = (e.channel?, e.message?);
    if crate::store::messages::is_provisional(message)
        || e.guild == Some(crate::console::guild_id())
    {
        return None;
    }
    let guild = e.guild.map_or("@me".to_string(), |g| g.to_string());
    Some(format!(
        "https://discord.com/channels/{guild}/{channel}/{message}"
    ))
}

pub(crate) fn guild_choices(site: &Site, chosen: Option<GuildId>) -> Result<Vec<Choice>, Problem> {
    let mut out = vec![Choice {
        value: String::new(),
        label: "every server".into(),
        selected: chosen.is_none(),
    }];
    let guilds = site.guilds().map_err(Problem::Servers)?;
    out.extend(guilds.into_iter().map(|(g, name)| Choice {
        value: g.to_string(),
        label: name,
        selected: chosen == Some(g),
    }));
    Ok(out)
}

/// The chosen server's channels (none to choose from before a server is chosen).
pub(crate) fn channel_choices(
    site: &Site,
    guild: Option<GuildId>,
    chosen: Option<ChannelId>,
) -> Vec<Choice> {
    let mut out = vec![Choice {
        value: String::new(),
        label: "every channel".into(),
        selected: chosen.is_none(),
    }];
    let channels = guild
        .map(|g| site.store.messages.guild_channels(g).unwrap_or_default())
        .unwrap_or_default();
    let mut named: Vec<(String, ChannelId)> = channels
        .into_iter()
        .map(|c| (site.channel_label(c), c))
        .collect();
    named.sort();
    if let Some(c) = chosen.filter(|c| !named.iter().any(|(_, n)| n == c)) {
        named.push((site.channel_label(c), c));
    }
    out.extend(named.into_iter().map(|(label, c)| Choice {
        value: c.to_string(),
        selected: chosen == Some(c),
        label,
    }));
    out
}

fn kind_choices(chosen: &str) -> Vec<Choice> {
    let mut out = vec![
        Choice {
            value: String::new(),
            label: "what it did (replies, reflexes, posts, reminders and routines, skips, gates, errors)".into(),
            selected: chosen.is_empty(),
        },
        Choice {
            value: "all".into(),
            label: "everything (routing too)".into(),
            selected: chosen == "all",
        },
    ];
    out.extend(Kind::ALL.iter().map(|k| Choice {
        value: k.as_str().into(),
        label: k.as_str().replace('_', " "),
        selected: chosen == k.as_str(),
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_links_point_at_discord_and_skip_what_discord_cannot_show() {
        let e = Entry::new(Kind::Reply, "said hi")
            .place(Some(GuildId(10)), Some(ChannelId(20)))
            .message(crate::ids::MessageId(30));
        assert_eq!(
            message_link(&e).as_deref(),
            Some("https://discord.com/channels/10/20/30")
        );
        let dm = Entry::new(Kind::Reply, "dm")
            .place(None, Some(ChannelId(20)))
            .message(crate::ids::MessageId(30));
        assert_eq!(
            message_link(&dm).as_deref(),
            Some("https://discord.com/channels/@me/20/30")
        );
        let pending = Entry::new(Kind::Reply, "sending").place(None, Some(ChannelId(20)));
        assert_eq!(message_link(&pending), None);
        let console = Entry::new(Kind::Reply, "console")
            .place(Some(crate::console::guild_id()), Some(ChannelId(20)))
            .message(crate::ids::MessageId(30));
        assert_eq!(message_link(&console), None);
    }

    #[test]
    fn the_window_is_at_most_a_month() {
        let now = chrono::Utc::now();
        assert!(window_start("24h", now).is_ok());
        assert_eq!(
            window_start("9999w", now).unwrap_err().to_string(),
            "since: at most 31 days back, got \"9999w\""
        );
        assert!(window_start("1990-01-01", now).is_err());
        assert!(
            window_start("yesterday", now)
                .unwrap_err()
                .to_string()
                .starts_with("since: ")
        );
    }
}
