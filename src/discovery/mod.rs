//! Discovery: feeds the community likes, as optional material for ambient
//! posts (seed: ambient-text-cycle.md, "Discovery In The Unified Model").
//! Discovery collects; the initiative cycle decides whether to use any of it.
//!
//! - `sources`: source kinds and where each is fetched
//! - `parse`: bodies → normalised items (hostile input fails its source only)
//! - `canonical`: canonical URLs and title keys for de-duplication
//! - `rank`: candidates for YOUR FEED (freshness + overlap with community talk)
//! - `curation`: self-curation tools and the `/discovery` commands' core
//!
//! The background loop fetches each source on its own schedule through the
//! guarded fetcher, with conditional GET (a 304 costs no parse) and
//! exponential backoff on failure; items are stored once across sources.

use crate::store::{DiscoveryStore, FeedStore, MessageStore};
pub mod canonical;
pub mod curation;
pub mod parse;
pub(crate) mod rank;
pub mod sources;
pub(crate) mod topics;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use tokio::sync::watch;

use crate::clock::SharedClock;
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::journal::Journal;
use crate::net::fetch::Validators;
use crate::net::{FetchError, Fetcher};
use crate::settings::{NetworkSettings, Settings, SettingsService};
use crate::store::StoreError;
use crate::store::discovery::{FetchOutcome, NewItem};
use crate::vocab::journal::{Entry, Kind};
use crate::when::ago;
use parse::Item;
use sources::{SourceKind, SourceSpec};

/// How often the loop looks for sources that are due.
const LOOP_EVERY: Duration = Duration::from_secs(60);

/// Where a guild's source comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The settings (file or this server's `/settings` override): the operator's list.
    Settings,
    /// Added at runtime; `by` is `model` or `user:<id>`.
    Added { by: String },
}

/// What a fetch of a source came to, as a [`FetchWatcher`] hears it.
pub enum Fetched<'a> {
    /// Every item the feed lists now, fresh or not, in the feed's order.
    Items(&'a [Item]),
    /// The feed said nothing changed since the last fetch (HTTP 304).
    NotModified,
    /// The fetch failed; why, as the journal says it.
    Failed(&'a str),
}

/// Told of every fetch of every source, after what it found is stored:
/// how feeds people subscribe to (a layer above) hear of new items without
/// fetching anything twice.
pub trait FetchWatcher: Send + Sync {
    fn fetched(&self, source_id: i64, spec: &SourceSpec, outcome: Fetched<'_>);
}

/// What one fetch of one source did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FetchReport {
    pub not_modified: bool,
    pub parsed: usize,
    pub stale: usize,
    pub stored: usize,
    pub duplicates: usize,
}

pub struct Discovery {
    settings: Arc<SettingsService>,
    store: Stores,
    journal: Journal,
    clock: SharedClock,
    /// The guarded fetcher and the `network` settings it was built with:
    /// rebuilt when they change (a live reload), so new limits hold at once.
    fetcher: Mutex<(NetworkSettings, Arc<Fetcher>)>,
    /// Sources being fetched right now, so a slow one is never fetched twice at once.
    fetching: Mutex<HashSet<i64>>,
    /// Wakes the loop early: a guild appeared or its sources changed.
    wake: tokio::sync::Notify,
    /// Who hears of each fetch (feeds), once set.
    watcher: std::sync::OnceLock<Arc<dyn FetchWatcher>>,
}

impl Discovery {
    pub(crate) fn new(
        settings: Arc<SettingsService>,
        store: Stores,
        journal: Journal,
        clock: SharedClock,
    ) -> Arc<Self> {
        let network = settings.global().network.clone();
        let fetcher = Mutex::new((network.clone(), Arc::new(Fetcher::new(&network))));
        Arc::new(Self {
            settings,
            store,
            journal,
            clock,
            fetcher,
            fetching: Mutex::new(HashSet::new()),
            wake: tokio::sync::Notify::new(),
            watcher: std::sync::OnceLock::new(),
        })
    }

    /// Tells `watcher` of every fetch from now on (there is one: feeds).
    pub(crate) fn watch(&self, watcher: Arc<dyn FetchWatcher>) {
        if self.watcher.set(watcher).is_err() {
            tracing::warn!("a second fetch watcher was refused: feeds already watch discovery");
        }
    }

    /// Asks the loop to look for due sources now rather than at its next round.
    pub(crate) fn poke(&self) {
        self.wake.notify_one();
    }

    /// The guarded fetcher for the `network` settings in effect now.
    pub(crate) fn fetcher(&self) -> Arc<Fetcher> {
        let network = &self.settings.global().network;
        let mut built = self.fetcher.lock().unwrap_or_else(|p| p.into_inner());
        if built.0 != *network {
            *built = (network.clone(), Arc::new(Fetcher::new(network)));
        }
        built.1.clone()
    }

    /// A guild's sources: its settings' lists and those added for it, enabled kinds only.
    pub(crate) fn guild_sources(&self, guild: GuildId) -> Vec<(SourceSpec, Origin)> {
        let settings = self.settings.for_guild(Some(guild));
        let d = &settings.initiative.discovery;
        let mut out: Vec<(SourceSpec, Origin)> = sources::configured(&settings)
            .into_iter()
            .map(|s| (s, Origin::Settings))
            .collect();
        if d.sources.hacker_news {
            out.push((
                SourceSpec {
                    kind: SourceKind::Hackernews,
                    target: "top".into(),
                },
                Origin::Settings,
            ));
        }
        for (kind, target, by) in self
            .store
            .discovery
            .guild_sources(guild)
            .unwrap_or_default()
        {
            let Some(kind) = SourceKind::parse(&kind) else {
                continue;
            };
            if !kind.enabled(d)
                || out
                    .iter()
                    .any(|(s, _)| s.kind == kind && s.target == target)
            {
                continue;
            }
            out.push((SourceSpec { kind, target }, Origin::Added { by }));
        }
        out
    }

    /// Whether a guild uses discovery at all (a source of any kind).
    fn in_use(&self, guild: GuildId) -> bool {
        !self.guild_sources(guild).is_empty()
    }

    /// Every source some known guild uses or subscribed to, each once.
    pub(crate) fn all_sources(&self) -> Vec<SourceSpec> {
        let mut all: Vec<SourceSpec> = self
            .store
            .messages
            .known_guilds()
            .unwrap_or_default()
            .into_iter()
            .filter(|(g, _)| self.in_use(*g))
            .flat_map(|(g, _)| self.guild_sources(g).into_iter().map(|(s, _)| s))
            .collect();
        all.extend(self.subscribed_sources());
        all.sort();
        all.dedup();
        all
    }

    /// The sources feeds subscribe to, whatever kinds the initiative reads:
    /// a subscription is the owner's explicit choice.
    fn subscribed_sources(&self) -> Vec<SourceSpec> {
        let rows = self.store.feeds.subscribed_sources().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "subscribed feeds unreadable; they wait for the next round");
            Vec::new()
        });
        rows.into_iter()
            .filter_map(|(kind, target)| {
                Some(SourceSpec {
                    kind: SourceKind::parse(&kind)?,
                    target,
                })
            })
            .collect()
    }

    /// How long until a source is fetched again: the initiative's interval,
    /// or the feeds' when someone subscribed to it and that is shorter.
    fn interval(&self, id: i64) -> chrono::Duration {
        let global = self.settings.global();
        let mut minutes = global.initiative.discovery.fetch_interval_minutes;
        if self.store.feeds.is_subscribed_source(id).unwrap_or(false) {
            minutes = minutes.min(global.feeds.fetch_interval_minutes);
        }
        chrono::Duration::minutes(i64::from(minutes))
    }

    /// Fetches every source whose time has come; failures only affect their own source.
    pub async fn fetch_due(&self) -> Vec<(SourceSpec, Result<FetchReport, FetchFailure>)> {
        let now = self.clock.now();
        let mut due = Vec::new();
        for spec in self.all_sources() {
            let Ok(id) = self
                .store
                .discovery
                .upsert_source(spec.kind.as_str(), &spec.target)
            else {
                continue;
            };
            if let Ok(Some(row)) = self.store.discovery.source(id)
                && row.next_fetch_at <= now
            {
                due.push(spec);
            }
        }
        let mut results = Vec::new();
        for chunk in due.chunks(4) {
            let reports =
                futures_util::future::join_all(chunk.iter().map(|s| self.fetch_source(s))).await;
            results.extend(chunk.iter().cloned().zip(reports));
        }
        results
    }

    /// Fetches one source now and stores what is new.
    pub async fn fetch_source(&self, spec: &SourceSpec) -> Result<FetchReport, FetchFailure> {
        let id = self
            .store
            .discovery
            .upsert_source(spec.kind.as_str(), &spec.target)?;
        if !self
            .fetching
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id)
        {
            return Err(FetchFailure::Busy);
        }
        let result = self.fetch_and_store(id, spec).await;
        self.fetching
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        let interval = self.interval(id);
        let now = self.clock.now();
        self.journal.metrics().feed_fetched(match &result {
            Ok((report, _)) if report.not_modified => "not_modified",
            Ok(_) => "ok",
            Err(_) => "failed",
        });
        match &result {
            Ok((report, validators)) => {
                let outcome = if report.not_modified {
                    FetchOutcome::NotModified
                } else {
                    FetchOutcome::Ok {
                        etag: validators.etag.clone(),
                        last_modified: validators.last_modified.clone(),
                        status: format!(
                            "ok: {} new, {} already seen",
                            report.stored, report.duplicates
                        ),
                    }
                };
                // A lost success record only means this source is fetched again early.
                let _ = self
                    .store
                    .discovery
                    .record_fetch(id, &outcome, now, interval);
                tracing::debug!(source = %spec.label(), ?report, "fetched");
            }
            Err(why) => {
                // One journal line per back-off: the source is not tried again before it ends.
                let later = match self.store.discovery.record_fetch(
                    id,
                    &FetchOutcome::Failed(why.to_string()),
                    now,
                    interval,
                ) {
                    Ok(Some(setback)) => format!("; {}", setback.describe()),
                    Ok(None) => String::new(),
                    Err(e) => format!(
                        "; its back-off was not recorded ({e}), so it may be tried again soon"
                    ),
                };
                tracing::warn!(source = %spec.label(), reason = %why, "a feed source failed");
                if !matches!(why, FetchFailure::Busy)
                    && let Some(w) = self.watcher.get()
                {
                    w.fetched(id, spec, Fetched::Failed(&why.to_string()));
                }
                self.journal.record(
                    Entry::new(Kind::Discovery, format!("could not fetch {}", spec.label()))
                        .reason(format!("{why}{later}")),
                );
            }
        }
        result.map(|(r, _)| r)
    }

    async fn fetch_and_store(
        &self,
        id: i64,
        spec: &SourceSpec,
    ) -> Result<(FetchReport, Validators), FetchFailure> {
        let settings = self.settings.global();
        let d = &settings.initiative.discovery;
        let row = self.store.discovery.source(id)?;
        let validators = Validators {
            etag: row.as_ref().and_then(|r| r.etag.clone()),
            last_modified: row.as_ref().and_then(|r| r.last_modified.clone()),
        };
        let url = spec.url(d, d.source_fetch_limit)?;
        let (items, fresh_validators, not_modified) =
            fetch_items(&self.fetcher(), spec.kind, &url, &settings, &validators).await?;
        if not_modified {
            if let Some(w) = self.watcher.get() {
                w.fetched(id, spec, Fetched::NotModified);
            }
            return Ok((
                FetchReport {
                    not_modified: true,
                    ..Default::default()
                },
                validators,
            ));
        }
        let now = self.clock.now();
        let fresh_since = now - chrono::Duration::hours(i64::from(d.freshness_hours));
        let parsed = items.len();
        let mut fresh: Vec<Item> = items
            .iter()
            .filter(|i| i.published.is_none_or(|p| p >= fresh_since))
            .cloned()
            .collect();
        let stale = parsed - fresh.len();
        fresh.sort_by_key(|i| std::cmp::Reverse(i.published));
        fresh.truncate(d.source_fetch_limit as usize);
        let keyed: Vec<NewItem> = fresh.into_iter().map(keyed).collect();
        let dedupe_since = now - chrono::Duration::hours(i64::from(d.dedupe_hours));
        let (stored, duplicates) =
            self.store
                .discovery
                .insert_feed_items(id, &keyed, now, dedupe_since)?;
        // Told after the items are stored, so a delivery can find its item
        // among them (and the initiative then never shares it again).
        if let Some(w) = self.watcher.get() {
            w.fetched(id, spec, Fetched::Items(&items));
        }
        Ok((
            FetchReport {
                not_modified: false,
                parsed,
                stale,
                stored,
                duplicates,
            },
            fresh_validators,
        ))
    }

    /// YOUR FEED and FEED SOURCES for one guild's ambient prompt; `None`
    /// when the guild uses no discovery at all.
    pub fn prompt_sections(
        &self,
        guild: GuildId,
        interests: &[String],
        now: DateTime<Utc>,
    ) -> Option<(Vec<String>, Vec<String>)> {
        if !self.in_use(guild) {
            return None;
        }
        let settings = self.settings.for_guild(Some(guild));
        let sources = self.guild_sources(guild);
        let ids: Vec<(i64, SourceSpec)> = sources
            .iter()
            .filter_map(|(s, _)| {
                self.store
                    .discovery
                    .upsert_source(s.kind.as_str(), &s.target)
                    .ok()
                    .map(|id| (id, s.clone()))
            })
            .collect();
        let fresh_since =
            now - chrono::Duration::hours(i64::from(settings.initiative.discovery.freshness_hours));
        let source_ids: Vec<i64> = ids.iter().map(|(id, _)| *id).collect();
        let items = self
            .store
            .discovery
            .feed_candidates(&source_ids, guild, fresh_since, 200)
            .unwrap_or_default();
        let ranked = rank::rank(
            items,
            interests,
            now,
            settings.initiative.discovery.freshness_hours,
            8,
        );
        let feed = ranked
            .iter()
            .map(|c| {
                let source = ids
                    .iter()
                    .find(|(id, _)| *id == c.item.source_id)
                    .map(|(_, s)| s.label())
                    .unwrap_or_default();
                rank::line(c, &source, now)
            })
            .collect();
        let performance = sources
            .iter()
            .zip(&ids)
            .map(|((spec, origin), (id, _))| {
                let stats = self.store.discovery.source_stats(*id, guild).unwrap_or_default();
                let row = self.store.discovery.source(*id).ok().flatten();
                let state = match row.as_ref().and_then(|r| r.last_fetch_at) {
                    None => "not fetched yet".to_string(),
                    Some(t) => format!("fetched {} ({})", ago(t, now), row.map(|r| r.last_status).unwrap_or_default()),
                };
                let origin = match origin {
                    Origin::Settings => "",
                    Origin::Added { by } if by == "model" => ", added by you",
                    Origin::Added { .. } => ", added by a member",
                };
                format!(
                    "{} ({}{origin}): {} items, {} shared, {} reactions and {} replies to what you shared; {state}",
                    spec.label(),
                    spec.kind,
                    stats.items,
                    stats.shared,
                    stats.reactions,
                    stats.replies
                )
            })
            .collect();
        Some((feed, performance))
    }

    /// Records which feed items a post shared (links it contains), for FEED SOURCES.
    pub(crate) fn note_post(
        &self,
        guild: GuildId,
        channel: ChannelId,
        message: MessageId,
        text: &str,
        at: DateTime<Utc>,
    ) {
        for word in text.split_whitespace() {
            let link = word.trim_matches(|c: char| {
                matches!(c, '<' | '>' | '(' | ')' | '"' | '\'' | ',' | '.')
            });
            if !link.starts_with("http") {
                continue;
            }
            if let Ok(Some((item, _))) = self
                .store
                .discovery
                .feed_item_by_canonical(&canonical::canonical_url(link))
            {
                // Harmless if lost: the item may only be offered once more; the post itself is stored.
                let _ = self
                    .store
                    .discovery
                    .record_share(item, guild, channel, message, at);
            }
        }
    }

    /// A feed subscription posted the item at `link` in `guild`: it counts
    /// as shared there, so the initiative never offers it again.
    pub(crate) fn note_delivered(
        &self,
        guild: GuildId,
        channel: ChannelId,
        message: MessageId,
        link: &str,
        at: DateTime<Utc>,
    ) {
        if link.trim().is_empty() {
            return;
        }
        if let Ok(Some((item, _))) = self
            .store
            .discovery
            .feed_item_by_canonical(&canonical::canonical_url(link))
            && let Err(e) = self
                .store
                .discovery
                .record_share(item, guild, channel, message, at)
        {
            tracing::warn!(error = %e, "a delivered feed item was not noted as shared; the initiative may offer it once");
        }
    }

    /// Fetches due sources until `shutdown`.
    pub(crate) async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = self.fetch_due() => {}
                _ = shutdown.changed() => return,
            }
            tokio::select! {
                _ = tokio::time::sleep(LOOP_EVERY) => {}
                _ = self.wake.notified() => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// Why one source's fetch failed; the text goes to the journal and the source's status.
#[derive(Debug, thiserror::Error)]
pub enum FetchFailure {
    /// Another fetch of the same source is under way.
    #[error("already being fetched")]
    Busy,
    #[error(transparent)]
    Source(#[from] sources::SourceError),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Parse(#[from] parse::ParseError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Fetches and parses one source URL (no storing): (items, new validators, not modified).
pub(crate) async fn fetch_items(
    fetcher: &Fetcher,
    kind: SourceKind,
    url: &str,
    settings: &Settings,
    validators: &Validators,
) -> Result<(Vec<Item>, Validators, bool), FetchFailure> {
    let d = &settings.initiative.discovery;
    let page = fetcher.get_with(url, validators, &HeaderMap::new()).await?;
    let new_validators = Validators {
        etag: page.etag.clone(),
        last_modified: page.last_modified.clone(),
    };
    if page.not_modified {
        return Ok((Vec::new(), new_validators, true));
    }
    let items = match kind {
        SourceKind::Rss | SourceKind::Youtube | SourceKind::X => parse::feed(&page.body)?,
        SourceKind::Reddit => parse::reddit(&page.body, &d.reddit_base_url)?,
        SourceKind::Hackernews => {
            let ids = parse::hn_top(&page.body)?;
            let base = url.trim_end_matches("topstories.json");
            hn_items(fetcher, base, &ids, d.source_fetch_limit as usize).await
        }
    };
    Ok((items, new_validators, false))
}

/// The first `limit` stories of a Hacker News id list (a failing item is skipped).
async fn hn_items(fetcher: &Fetcher, base: &str, ids: &[u64], limit: usize) -> Vec<Item> {
    let fetches = ids.iter().take(limit).map(|id| {
        let url = format!("{base}item/{id}.json");
        async move {
            let page = fetcher.get(&url).await.ok()?;
            parse::hn_item(&page.body).ok().flatten()
        }
    });
    futures_util::future::join_all(fetches)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// An item with its de-duplication keys, ready to store.
pub fn keyed(i: Item) -> NewItem {
    NewItem {
        canonical_url: canonical::canonical_url(&i.url),
        title_key: canonical::title_key(&i.title),
        url: i.url,
        title: i.title,
        summary: i.summary,
        published_at: i.published,
        media: i.media.map(|m| m.as_str().to_string()),
    }
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub(crate) struct Stores {
    pub messages: MessageStore,
    pub discovery: DiscoveryStore,
    pub feeds: FeedStore,
}
