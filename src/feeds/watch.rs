//! Discovery's fetches, heard by feeds: each fetch of a subscribed source
//! becomes noted items for every subscription of it, or a failure counted.
//!
//! - Items: [`intake::keyed`] and [`intake::plan`] say what each is to the subscription (seen,
//!   filtered, queued); all of one fetch is noted in one transaction, which
//!   also ends a run of failures. A paused subscription notes new items as
//!   seen: pausing is silence, and resuming goes on with what comes next.
//! - Not modified: only the run of failures ends.
//! - Failed: the subscription's run of failures grows; at
//!   `feeds.pauseAfterFailures` it pauses itself, and the next delivery
//!   round says so once where it posts.
//!
//! A store read that fails here notes nothing (the items are met again at
//! the next fetch) and says so in the journal: nothing is queued on a guess.

use std::collections::HashSet;
use std::sync::Weak;

use chrono::{DateTime, Utc};

use super::intake;
use super::{Feeds, PauseNotice};
use crate::discovery::parse::Item;
use crate::discovery::sources::SourceSpec;
use crate::discovery::{FetchWatcher, Fetched};
use crate::store::feeds::SubscriptionRow;
use crate::vocab::journal::{Entry, Kind};

/// How much of a fetch's failure a pause reason keeps.
const WHY_CHARS: usize = 300;

/// What discovery holds: the service, as long as it lives.
pub(super) struct Watcher(pub(super) Weak<Feeds>);

impl FetchWatcher for Watcher {
    fn fetched(&self, source_id: i64, spec: &SourceSpec, outcome: Fetched<'_>) {
        if let Some(feeds) = self.0.upgrade() {
            feeds.heard(source_id, spec, outcome);
        }
    }
}

impl Feeds {
    fn heard(&self, source_id: i64, spec: &SourceSpec, outcome: Fetched<'_>) {
        let subscriptions = match self.s.store.feeds.feed_subscriptions_of_source(source_id) {
            Ok(s) => s,
            Err(e) => {
                return self.read_failed(&format!("the subscriptions of {}", spec.label()), &e);
            }
        };
        let now = self.s.clock.now();
        let mut queued = 0;
        for row in subscriptions {
            match outcome {
                Fetched::Items(items) => queued += self.note(&row, items, now),
                Fetched::NotModified => {
                    // Harmless if lost: the run of failures ends at the next fetch with items.
                    let _ = self.s.store.feeds.clear_feed_failures(row.id);
                }
                Fetched::Failed(why) => self.count_failure(&row, spec, why),
            }
        }
        if queued > 0 {
            self.poke();
        }
    }

    /// Notes one fetch's items for one subscription; how many were queued.
    pub(super) fn note(&self, row: &SubscriptionRow, items: &[Item], now: DateTime<Utc>) -> usize {
        let look = match self.look(row) {
            Ok(look) => look,
            Err(e) => {
                self.pause_later(row, format!("its template or filters no longer hold: {e}"));
                return 0;
            }
        };
        let keyed = intake::keyed(&look, items);
        let keys: Vec<String> = keyed.iter().map(|(k, _)| k.clone()).collect();
        let known: HashSet<String> = match self.s.store.feeds.known_feed_items(row.id, &keys) {
            Ok(k) => k.into_iter().collect(),
            Err(e) => {
                self.read_failed("which feed items were met before", &e);
                return 0;
            }
        };
        let mut met = intake::plan(&look, row.primed, row.made.backfill as usize, keyed, |k| {
            known.contains(k)
        });
        if row.paused.is_some() {
            for m in met.iter_mut().filter(|m| m.state == "queued") {
                m.state = "seen";
                m.item = None;
            }
        }
        let queued = met.iter().filter(|m| m.state == "queued").count();
        match self.s.store.feeds.note_feed_items(row.id, &met, now) {
            Ok(_) => queued,
            Err(e) => {
                self.s.journal.record(
                    Entry::new(Kind::Error, "feed items not noted")
                        .guild(Some(row.made.guild))
                        .reason(format!(
                            "subscription {}: {e}; they are met again at the next fetch",
                            row.id
                        )),
                );
                0
            }
        }
    }

    fn count_failure(&self, row: &SubscriptionRow, spec: &SourceSpec, why: &str) {
        if row.paused.is_some() {
            return;
        }
        let failures = match self.s.store.feeds.note_feed_failure(row.id) {
            Ok(n) => n,
            Err(e) => return self.read_failed("a feed's failures", &e),
        };
        let limit = self
            .s
            .settings
            .for_guild(Some(row.made.guild))
            .feeds
            .pause_after_failures;
        if failures >= limit {
            let why: String = why.chars().take(WHY_CHARS).collect();
            self.pause_later(
                row,
                format!(
                    "{} failed {failures} fetches in a row (the last: {why})",
                    spec.label()
                ),
            );
        }
    }

    /// Pauses a subscription now and leaves saying so to the next delivery
    /// round (this runs inside discovery's fetch, which must not wait on Discord).
    fn pause_later(&self, row: &SubscriptionRow, why: String) {
        match self
            .s
            .store
            .feeds
            .set_feed_paused(row.made.guild, row.id, Some(&why))
        {
            Ok(true) => {
                self.journal_pause(row, &why);
                self.lock_notices().push(PauseNotice {
                    row: row.clone(),
                    why,
                });
                self.poke();
            }
            Ok(false) => {}
            Err(e) => self.read_failed("pausing a feed subscription", &e),
        }
    }

    pub(super) fn journal_pause(&self, row: &SubscriptionRow, why: &str) {
        tracing::warn!(subscription = row.id, reason = %why, "a feed subscription paused itself");
        self.s.journal.record(
            Entry::new(
                Kind::Discovery,
                format!("feed subscription {} paused", row.id),
            )
            .place(Some(row.made.guild), Some(row.made.channel))
            .reason(why.to_string()),
        );
    }

    /// A store read that decides what feeds do failed: nothing is done on a
    /// guess, and the journal says so.
    pub(super) fn read_failed(&self, what: &str, e: &crate::store::StoreError) {
        tracing::warn!(error = %e, "feeds: store read failed: {what}");
        self.s.journal.record(
            Entry::new(Kind::Error, "store read failed").reason(format!("feeds: {what}: {e}")),
        );
    }
}
