//! What `/feeds`, the console and the dashboard do: add, list, edit,
//! pause, resume and remove a server's subscriptions, and show what a feed
//! would post (`test`) and which of its items pass the filters (`preview`).
//!
//! Adding checks everything before it saves anything: the feed named
//! ([`parse_feed`]), the template and filters, the channel (this server's,
//! one a feed can post into), the server's cap — and fetches the feed once,
//! so a feed that cannot be read is refused with why, and its items as of
//! now are noted as seen: adding a feed delivers nothing old, except the
//! newest `backfill` items when asked.
//!
//! Who may do this (Manage Server) is the front end's to check.

use chrono::{DateTime, Utc};

use super::Feeds;
use super::deliver::card;
use super::filter::Filters;
use super::intake::Kept;
use super::subscription::{Dedupe, Destination, Look, LookError};
use super::template::{Template, TemplateError};
use crate::chat::{Card, ChannelKind};
use crate::discovery::parse::Item;
use crate::discovery::sources::{SourceError, SourceKind, SourceSpec};
use crate::feeds::Stores;
use crate::ids::{ChannelId, GuildId, UserId};
use crate::net::fetch::Validators;
use crate::store::StoreError;
use crate::store::feeds::{DeliveryCounts, NewSubscription, SubscriptionRow};
use crate::vocab::journal::{Entry, Kind};

/// Most items `/feeds add … backfill` may deliver at once.
pub(crate) const MAX_BACKFILL: u32 = 20;

/// How many of a feed's latest items `/feeds preview` shows.
pub(crate) const PREVIEW_ITEMS: usize = 20;

/// Why a `/feeds` request was refused; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum ManageError {
    #[error(
        "{0:?} is not a feed: give the http(s) URL of an RSS or Atom feed, r/NAME (Reddit), youtube:CHANNEL_ID, x:HANDLE or hn"
    )]
    NotAFeed(String),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Look(#[from] LookError),
    #[error("feeds.defaultTemplate: {0}; give a template, or ask the operator to fix the setting")]
    DefaultTemplate(TemplateError),
    #[error("dedupe must be guid, link or title, got {0:?}")]
    Dedupe(String),
    #[error("backfill must be between 0 and {MAX_BACKFILL}, got {0}")]
    Backfill(u32),
    #[error(
        "this server has {count} feed subscriptions already (feeds.maxSubscriptionsPerGuild is {max}); remove one first"
    )]
    Full { count: usize, max: u32 },
    #[error("this feed already posts in <#{channel}> (subscription {id})")]
    Already { id: i64, channel: ChannelId },
    #[error(
        "the bot has not seen <#{0}> in this server; pick one of this server's text, announcement or forum channels, or a thread the bot is in"
    )]
    NotHere(ChannelId),
    #[error(
        "<#{0}> cannot take feed posts: pick a text, announcement or forum channel, or a thread"
    )]
    WrongChannel(ChannelId),
    #[error(
        "<#{0}> is a thread or a forum: only a text or announcement channel can start a thread per item"
    )]
    NoThreads(ChannelId),
    #[error("could not look at <#{channel}>: {why}")]
    Channel { channel: ChannelId, why: String },
    #[error("the feed could not be read ({0}); nothing was saved")]
    Fetch(String),
    #[error("the feed has no items to show yet")]
    NoItems,
    #[error("there is no subscription {0} in this server; /feeds list shows them")]
    Unknown(i64),
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
}

/// What `/feeds add` asks for.
#[derive(Clone, Debug)]
pub struct AddRequest {
    /// The feed as typed: a URL, `r/NAME`, `youtube:ID`, `x:HANDLE`, `hn`.
    pub feed: String,
    pub channel: ChannelId,
    /// In a text or announcement channel: start a thread from each item's message.
    pub thread_per_item: bool,
    /// None: `feeds.defaultTemplate`.
    pub template: Option<String>,
    pub filters: Option<String>,
    pub embed: bool,
    /// `guid`, `link` or `title`; None: guid.
    pub dedupe: Option<String>,
    /// The newest items delivered at once (0–20).
    pub backfill: u32,
}

/// A subscription just added.
#[derive(Clone, Debug, PartialEq)]
pub struct Added {
    pub id: i64,
    pub feed: String,
    pub destination: Destination,
    /// Items the feed lists now, noted as seen.
    pub items: usize,
    /// Of them, queued to be delivered now (`backfill`).
    pub backfilled: usize,
}

/// One subscription as `/feeds list` and the dashboard show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub id: i64,
    pub guild: GuildId,
    pub feed: String,
    pub channel: ChannelId,
    pub destination: Destination,
    pub template: String,
    pub filters: String,
    pub embed: bool,
    pub dedupe: String,
    pub paused: Option<String>,
    /// Failed fetches in a row.
    pub failures: u32,
    pub last_delivered_at: Option<DateTime<Utc>>,
    pub counts: DeliveryCounts,
}

/// What `/feeds edit` changes; None leaves a part as it is.
#[derive(Clone, Debug, Default)]
pub(crate) struct Changes {
    pub template: Option<String>,
    pub filters: Option<String>,
    pub embed: Option<bool>,
    pub dedupe: Option<String>,
}

/// What the latest item would look like (`/feeds test`, shown to the asker only).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    pub content: String,
    pub cards: Vec<Card>,
    /// Whether the subscription's filters let the item through.
    pub passes: bool,
}

/// One of the latest items and whether the filters pass it (`/feeds preview`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PreviewLine {
    pub title: String,
    pub passes: bool,
}

/// The feed a person named: a URL (RSS or Atom, or a Reddit or YouTube
/// channel address), `r/NAME`, `youtube:ID`, `x:HANDLE` or `@HANDLE`, `hn`.
pub(crate) fn parse_feed(text: &str) -> Result<SourceSpec, ManageError> {
    let t = text.trim();
    if t.is_empty() || t.len() > 2_000 {
        return Err(ManageError::NotAFeed(t.chars().take(100).collect()));
    }
    let lower = t.to_ascii_lowercase();
    let spec = |kind, target: &str| Ok(SourceSpec::new(kind, target)?);
    if lower == "hn" || lower == "hackernews" || lower.contains("news.ycombinator.com") {
        return spec(SourceKind::Hackernews, "top");
    }
    if let Some(name) = t.strip_prefix("r/").or_else(|| t.strip_prefix("/r/")) {
        return spec(SourceKind::Reddit, name);
    }
    if let Some(id) = t.strip_prefix("youtube:") {
        return spec(SourceKind::Youtube, id);
    }
    if let Some(handle) = t.strip_prefix("x:").or_else(|| t.strip_prefix('@')) {
        return spec(SourceKind::X, handle);
    }
    let Ok(url) = url::Url::parse(t) else {
        return Err(ManageError::NotAFeed(t.chars().take(100).collect()));
    };
    let host = url.host_str().unwrap_or("").trim_start_matches("www.");
    let mut path = url.path_segments().into_iter().flatten();
    match (host, path.next(), path.next()) {
        ("reddit.com" | "old.reddit.com", Some("r"), Some(name)) => spec(SourceKind::Reddit, name),
        ("youtube.com", Some("channel"), Some(id)) => spec(SourceKind::Youtube, id),
        _ => spec(SourceKind::Rss, t),
    }
}

impl AddRequest {
    /// A plain subscription of `channel` to `feed`, with the default template.
    pub fn new(feed: impl Into<String>, channel: ChannelId) -> Self {
        Self {
            feed: feed.into(),
            channel,
            thread_per_item: false,
            template: None,
            filters: None,
            embed: false,
            dedupe: None,
            backfill: 0,
        }
    }
}

impl Feeds {
    /// Subscribes `channel` to a feed, checking everything first.
    pub async fn add(
        &self,
        guild: GuildId,
        by: UserId,
        req: AddRequest,
    ) -> Result<Added, ManageError> {
        let settings = self.s.settings.for_guild(Some(guild));
        let f = &settings.feeds;
        let spec = parse_feed(&req.feed)?;
        let dedupe = parse_dedupe(req.dedupe.as_deref())?;
        if req.backfill > MAX_BACKFILL {
            return Err(ManageError::Backfill(req.backfill));
        }
        let template = match &req.template {
            Some(t) => t.clone(),
            None => {
                Template::parse(&f.default_template, &f.allowed_role_mentions)
                    .map_err(ManageError::DefaultTemplate)?;
                f.default_template.clone()
            }
        };
        let filters = req.filters.clone().unwrap_or_default();
        let look = Look::parse(
            &template,
            &filters,
            req.embed,
            dedupe,
            &f.allowed_role_mentions,
        )?;
        let existing = self.s.store.feeds.feed_subscriptions(guild)?;
        if existing.len() >= f.max_subscriptions_per_guild as usize {
            return Err(ManageError::Full {
                count: existing.len(),
                max: f.max_subscriptions_per_guild,
            });
        }
        let destination = self
            .destination(guild, req.channel, req.thread_per_item)
            .await?;
        let items = self.latest_items(&spec).await?;
        let source_id = self
            .s
            .store
            .discovery
            .upsert_source(spec.kind.as_str(), &spec.target)?;
        let now = self.s.clock.now();
        let Some(id) = self.s.store.feeds.add_feed_subscription(&NewSubscription {
            guild,
            source_id,
            channel: req.channel,
            destination: destination.as_str().into(),
            template: look.template.as_str().into(),
            filters: look.filters.as_str().into(),
            embed: look.embed,
            dedupe: look.dedupe.as_str().into(),
            backfill: req.backfill,
            created_by: by,
            created_at: now,
        })?
        else {
            let id = existing
                .iter()
                .find(|r| r.made.source_id == source_id && r.made.channel == req.channel)
                .map_or(0, |r| r.id);
            return Err(ManageError::Already {
                id,
                channel: req.channel,
            });
        };
        let row = self.row(guild, id)?;
        let backfilled = self.note(&row, &items, now);
        self.s.journal.record(
            Entry::new(Kind::Discovery, format!("feed subscription {id} added"))
                .place(Some(guild), Some(req.channel))
                .reason(format!(
                    "{} by user {by}: {} items noted, {backfilled} to deliver now",
                    spec.label(),
                    items.len()
                )),
        );
        self.s.discovery.poke();
        if backfilled > 0 {
            self.poke();
        }
        Ok(Added {
            id,
            feed: spec.label(),
            destination,
            items: items.len(),
            backfilled,
        })
    }

    /// Where a subscription to `channel` posts, or why it cannot.
    async fn destination(
        &self,
        guild: GuildId,
        channel: ChannelId,
        thread_per_item: bool,
    ) -> Result<Destination, ManageError> {
        if self.s.store.messages.channel_guild(channel)? != Some(Some(guild)) {
            return Err(ManageError::NotHere(channel));
        }
        let kind =
            self.s
                .transport
                .channel_kind(channel)
                .await
                .map_err(|e| ManageError::Channel {
                    channel,
                    why: e.to_string(),
                })?;
        match (kind, thread_per_item) {
            (ChannelKind::Forum { .. }, false) => Ok(Destination::Forum),
            (ChannelKind::Text | ChannelKind::Announcement, true) => Ok(Destination::ThreadPerItem),
            (ChannelKind::Text | ChannelKind::Announcement | ChannelKind::Thread, false) => {
                Ok(Destination::Channel)
            }
            (ChannelKind::Forum { .. } | ChannelKind::Thread, true) => {
                Err(ManageError::NoThreads(channel))
            }
            (ChannelKind::Other, _) => Err(ManageError::WrongChannel(channel)),
        }
    }

    /// The feed's items as it lists them now (no conditional request: this
    /// is a person asking, not the schedule).
    async fn latest_items(&self, spec: &SourceSpec) -> Result<Vec<Item>, ManageError> {
        let settings = self.s.settings.global();
        let d = &settings.initiative.discovery;
        let url = spec.url(d, d.source_fetch_limit)?;
        let fetcher = self.s.discovery.fetcher();
        crate::discovery::fetch_items(&fetcher, spec.kind, &url, &settings, &Validators::default())
            .await
            .map(|(items, _, _)| items)
            .map_err(|e| ManageError::Fetch(e.to_string()))
    }

    fn row(&self, guild: GuildId, id: i64) -> Result<SubscriptionRow, ManageError> {
        self.s
            .store
            .feeds
            .feed_subscription(guild, id)?
            .ok_or(ManageError::Unknown(id))
    }

    fn listed(&self, row: SubscriptionRow) -> Result<Listed, ManageError> {
        listed(&self.s.store, row)
    }

    /// A server's subscriptions, oldest first.
    pub fn list(&self, guild: GuildId) -> Result<Vec<Listed>, ManageError> {
        self.s
            .store
            .feeds
            .feed_subscriptions(guild)?
            .into_iter()
            .map(|row| self.listed(row))
            .collect()
    }

    /// Every server's subscriptions (the operator's dashboard).
    pub(crate) fn list_all(&self) -> Result<Vec<Listed>, ManageError> {
        list_stored(&self.s.store)
    }

    /// Removes a subscription and what it remembered of its items.
    pub(crate) fn remove(&self, guild: GuildId, id: i64) -> Result<Listed, ManageError> {
        let listed = self.listed(self.row(guild, id)?)?;
        if !self.s.store.feeds.remove_feed_subscription(guild, id)? {
            return Err(ManageError::Unknown(id));
        }
        self.s.journal.record(
            Entry::new(Kind::Discovery, format!("feed subscription {id} removed"))
                .place(Some(guild), Some(listed.channel)),
        );
        Ok(listed)
    }

    /// Changes a subscription's template, filters, embed or dedupe rule,
    /// checked as when it was added.
    pub(crate) fn edit(
        &self,
        guild: GuildId,
        id: i64,
        changes: Changes,
    ) -> Result<Listed, ManageError> {
        let row = self.row(guild, id)?;
        let settings = self.s.settings.for_guild(Some(guild));
        let dedupe = match changes.dedupe.as_deref() {
            Some(d) => parse_dedupe(Some(d))?,
            None => Dedupe::parse(&row.made.dedupe).unwrap_or_default(),
        };
        let look = Look::parse(
            changes.template.as_deref().unwrap_or(&row.made.template),
            changes.filters.as_deref().unwrap_or(&row.made.filters),
            changes.embed.unwrap_or(row.made.embed),
            dedupe,
            &settings.feeds.allowed_role_mentions,
        )?;
        self.s.store.feeds.edit_feed_look(
            guild,
            id,
            look.template.as_str(),
            look.filters.as_str(),
            look.embed,
            look.dedupe.as_str(),
        )?;
        self.listed(self.row(guild, id)?)
    }

    /// Pauses a subscription: new items are noted as seen, none posted.
    pub fn pause(&self, guild: GuildId, id: i64, by: UserId) -> Result<Listed, ManageError> {
        self.row(guild, id)?;
        self.s
            .store
            .feeds
            .set_feed_paused(guild, id, Some(&format!("paused by user {by}")))?;
        self.listed(self.row(guild, id)?)
    }

    /// Resumes a subscription (its run of failures starts again from none).
    pub fn resume(&self, guild: GuildId, id: i64) -> Result<Listed, ManageError> {
        self.row(guild, id)?;
        self.s.store.feeds.set_feed_paused(guild, id, None)?;
        self.lock_attempts().remove(&id);
        self.poke();
        self.listed(self.row(guild, id)?)
    }

    /// The feed's latest item as the subscription would post it.
    pub(crate) async fn test(&self, guild: GuildId, id: i64) -> Result<Sample, ManageError> {
        let row = self.row(guild, id)?;
        let look = self.look(&row)?;
        let spec = self.spec(&row)?;
        let items = self.latest_items(&spec).await?;
        let newest = items
            .iter()
            .max_by_key(|i| i.published)
            .ok_or(ManageError::NoItems)?;
        let kept = Kept::of(newest);
        let feed = spec.label();
        let settings = self.s.settings.for_guild(Some(guild));
        let summary_chars = settings.feeds.summary_chars as usize;
        let fields = kept.fields(&feed);
        let rendered = look
            .template
            .render(&fields, settings.zone(), summary_chars);
        Ok(Sample {
            content: rendered.content,
            cards: if look.embed {
                vec![card(&kept, &feed, summary_chars)]
            } else {
                Vec::new()
            },
            passes: look.filters.passes(&fields),
        })
    }

    /// The feed's latest items and whether `filters` (as typed, or the
    /// subscription's own) pass each.
    pub(crate) async fn preview(
        &self,
        guild: GuildId,
        id: i64,
        filters: Option<&str>,
    ) -> Result<Vec<PreviewLine>, ManageError> {
        let row = self.row(guild, id)?;
        let filters = match filters {
            Some(text) => Filters::parse(text).map_err(LookError::from)?,
            None => self.look(&row)?.filters,
        };
        let spec = self.spec(&row)?;
        let mut items = self.latest_items(&spec).await?;
        items.sort_by_key(|i| std::cmp::Reverse(i.published));
        Ok(items
            .iter()
            .take(PREVIEW_ITEMS)
            .map(|i| {
                let kept = Kept::of(i);
                PreviewLine {
                    title: kept.title.clone(),
                    passes: filters.passes(&kept.fields(&spec.label())),
                }
            })
            .collect())
    }

    fn spec(&self, row: &SubscriptionRow) -> Result<SourceSpec, ManageError> {
        let source = self
            .s
            .store
            .discovery
            .source(row.made.source_id)?
            .ok_or(ManageError::Unknown(row.id))?;
        let kind = SourceKind::parse(&source.kind).ok_or(ManageError::Unknown(row.id))?;
        Ok(SourceSpec {
            kind,
            target: source.target,
        })
    }
}

/// Every server's subscriptions read from the store alone, as
/// [`Feeds::list_all`] shows them: the dashboard's Feeds page when no bot
/// runs in its process (`ambient dashboard`).
pub(crate) fn list_stored(store: &Stores) -> Result<Vec<Listed>, ManageError> {
    store
        .feeds
        .all_feed_subscriptions()?
        .into_iter()
        .map(|row| listed(store, row))
        .collect()
}

/// One stored subscription as it is shown.
fn listed(store: &Stores, row: SubscriptionRow) -> Result<Listed, ManageError> {
    Ok(Listed {
        id: row.id,
        guild: row.made.guild,
        feed: super::feed_label(&store.discovery, row.made.source_id),
        channel: row.made.channel,
        destination: Destination::parse(&row.made.destination).unwrap_or(Destination::Channel),
        counts: store.feeds.feed_delivery_counts(row.id)?,
        template: row.made.template,
        filters: row.made.filters,
        embed: row.made.embed,
        dedupe: row.made.dedupe,
        paused: row.paused,
        failures: row.failures,
        last_delivered_at: row.last_delivered_at,
    })
}

fn parse_dedupe(text: Option<&str>) -> Result<Dedupe, ManageError> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(Dedupe::default()),
        Some(t) => {
            Dedupe::parse(t).ok_or_else(|| ManageError::Dedupe(t.chars().take(40).collect()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feed_is_named_by_url_or_by_its_kind() {
        let kind = |t: &str| parse_feed(t).map(|s| (s.kind, s.target));
        assert_eq!(
            kind("https://blog.example/feed.xml").unwrap(),
            (SourceKind::Rss, "https://blog.example/feed.xml".into())
        );
        assert_eq!(kind("r/rust").unwrap(), (SourceKind::Reddit, "rust".into()));
        assert_eq!(
            kind("https://www.reddit.com/r/Rust/").unwrap(),
            (SourceKind::Reddit, "rust".into())
        );
        let id = "UCaaaaaaaaaaaaaaaaaaaaaa";
        assert_eq!(
            kind(&format!("youtube:{id}")).unwrap(),
            (SourceKind::Youtube, id.into())
        );
        assert_eq!(
            kind(&format!("https://www.youtube.com/channel/{id}")).unwrap(),
            (SourceKind::Youtube, id.into())
        );
        assert_eq!(kind("hn").unwrap().0, SourceKind::Hackernews);
        assert_eq!(kind("@rustlang").unwrap().0, SourceKind::X);
        let e = parse_feed("not a feed").unwrap_err().to_string();
        assert!(
            e.starts_with("\"not a feed\" is not a feed: give the http(s) URL"),
            "{e}"
        );
        assert!(parse_feed("ftp://x.example/feed").is_err());
    }

    #[test]
    fn a_dedupe_rule_is_one_of_three() {
        assert_eq!(parse_dedupe(None).unwrap(), Dedupe::Guid);
        assert_eq!(parse_dedupe(Some(" link ")).unwrap(), Dedupe::Link);
        let e = parse_dedupe(Some("hash")).unwrap_err().to_string();
        assert_eq!(e, "dedupe must be guid, link or title, got \"hash\"");
    }
}
