//! Feeds people subscribe to: every new item of a feed delivered to a
//! channel, a thread per item, or a forum post — beside the initiative's
//! own judgement, on discovery's fetchers.
//!
//! - `template`: what a delivered item says (`{title}`, `{link}` …), checked
//!   when saved and rendered within Discord's limits;
//! - `filter`: which items a subscription delivers (include/exclude rules);
//! - `intake`: what one fetch means for a subscription (new, filtered, queued);
//! - `subscription`: one guild's subscription, as saved and shown;
//! - `watch`: discovery's fetches heard, each turned into noted items, or a
//!   failure counted (and a subscription paused after too many);
//! - `deliver`: the waiting items posted, within the hourly rates, each once;
//! - `manage`: what `/feeds`, the console and the dashboard do.
//!
//! Nothing here fetches on a schedule of its own: discovery fetches every
//! subscribed source (at `feeds.fetchIntervalMinutes`) and tells [`Feeds`]
//! what it found. The store's `feed_deliveries` rows are the queue and the
//! outbox both, so a restart loses no item and posts none twice.

use crate::store::{DiscoveryStore, FeedStore, MessageStore};
pub mod deliver;
pub mod filter;
pub mod intake;
pub mod manage;
pub mod subscription;
pub mod template;
mod watch;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch as signal};

use crate::chat::Transport;
use crate::clock::SharedClock;
use crate::discovery::Discovery;
use crate::discovery::sources::{SourceKind, SourceSpec};
use crate::journal::Journal;
use crate::settings::SettingsService;
use crate::store::feeds::SubscriptionRow;
use subscription::{Dedupe, Look, LookError};

/// How often the delivery loop looks for waiting items when nothing wakes it
/// (an item held back by an hourly rate is sent when the hour has room).
const LOOP_EVERY: Duration = Duration::from_secs(30);

/// What the feeds service is built on.
pub(crate) struct Services {
    pub settings: Arc<SettingsService>,
    pub store: Stores,
    pub journal: Journal,
    pub clock: SharedClock,
    pub transport: Arc<dyn Transport>,
    pub discovery: Arc<Discovery>,
}

/// A subscription that paused itself, to be said once where it posts.
struct PauseNotice {
    row: SubscriptionRow,
    why: String,
}

pub struct Feeds {
    s: Services,
    /// Pauses heard from discovery's fetches, said by the next delivery round.
    notices: Mutex<Vec<PauseNotice>>,
    /// Failed attempts in a row at each subscription's next item.
    attempts: Mutex<HashMap<i64, deliver::Attempts>>,
    /// Wakes the delivery loop: items were queued, or a subscription resumed.
    wake: Notify,
    /// One delivery round at a time (the loop, a test, `/feeds resume`).
    round: tokio::sync::Mutex<()>,
}

impl Feeds {
    /// Builds the service and has discovery tell it of every fetch.
    pub(crate) fn new(s: Services) -> Arc<Self> {
        let discovery = s.discovery.clone();
        let feeds = Arc::new(Self {
            s,
            notices: Mutex::new(Vec::new()),
            attempts: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            round: tokio::sync::Mutex::new(()),
        });
        discovery.watch(Arc::new(watch::Watcher(Arc::downgrade(&feeds))));
        feeds
    }

    /// Asks the delivery loop to look for waiting items now.
    pub(crate) fn poke(&self) {
        self.wake.notify_one();
    }

    fn lock_notices(&self) -> std::sync::MutexGuard<'_, Vec<PauseNotice>> {
        self.notices.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_attempts(&self) -> std::sync::MutexGuard<'_, HashMap<i64, deliver::Attempts>> {
        self.attempts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The subscription's template and filters, checked again as read back
    /// (against the roles its server lets a feed ping today).
    fn look(&self, row: &SubscriptionRow) -> Result<Look, LookError> {
        let settings = self.s.settings.for_guild(Some(row.made.guild));
        Look::parse(
            &row.made.template,
            &row.made.filters,
            row.made.embed,
            Dedupe::parse(&row.made.dedupe).unwrap_or_default(),
            &settings.feeds.allowed_role_mentions,
        )
    }

    /// How a source is named to people (`{feed}`, `/feeds list`).
    fn feed_label(&self, source_id: i64) -> String {
        feed_label(&self.s.store.discovery, source_id)
    }

    /// Delivers waiting items until `shutdown`.
    pub(crate) async fn run(self: Arc<Self>, mut shutdown: signal::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = self.deliver_due() => {}
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

/// How a source is named to people: its label, or what the store says of
/// it when the kind is unknown, or "a feed" when it cannot be read.
fn feed_label(store: &DiscoveryStore, source_id: i64) -> String {
    match store.source(source_id) {
        Ok(Some(row)) => SourceKind::parse(&row.kind)
            .map(|kind| {
                SourceSpec {
                    kind,
                    target: row.target.clone(),
                }
                .label()
            })
            .unwrap_or(row.target),
        _ => "a feed".into(),
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
