//! The journal: an append-only record of every decision and its reason.
//!
//! Every routing decision, reply, gate, post, skip, reflex and garden step
//! lands here with where it happened, why, and ids linking it to messages
//! and model calls. It is how the bot answers "what did you do today, and
//! why?" (`ambient journal`, `/ambient why`), and how an operator audits it.

use crate::store::JournalStore;
pub mod stream;
pub mod summary;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use crate::clock::SharedClock;
use crate::ids::GuildId;
use crate::metrics::Metrics;
use crate::store::StoreError;
use crate::store::journal::bound;
use crate::store::messages::Commit;

use crate::vocab::journal::{Entry, Filter, Kind};

/// Writes and reads the journal.
#[derive(Clone)]
pub struct Journal {
    store: JournalStore,
    clock: SharedClock,
    /// When each failed read was last journaled (see [`Journal::read_failed`]).
    failed_reads: Arc<Mutex<HashMap<FailedRead, DateTime<Utc>>>>,
    /// The process's metrics: every service holds the journal, so this is
    /// how they reach them.
    metrics: Arc<Metrics>,
}

/// A server (or none) and the read that failed there.
type FailedRead = (Option<GuildId>, &'static str);

/// A read that keeps failing is journaled once in this long.
const READ_FAILED_EVERY_MINUTES: i64 = 10;

impl Journal {
    /// A journal counting into metrics of its own, which nobody serves.
    pub fn new(store: JournalStore, clock: SharedClock) -> Self {
        Self::with_metrics(store, clock, Arc::default())
    }

    /// A journal counting into `metrics` (the running bot's, served).
    pub(crate) fn with_metrics(
        store: JournalStore,
        clock: SharedClock,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            store,
            clock,
            failed_reads: Arc::default(),
            metrics,
        }
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// A store read that would have let the bot speak or spend failed, and
    /// it kept quiet: one `error` line saying which read (`what`), at most
    /// every [`READ_FAILED_EVERY_MINUTES`] per server and read, so a broken
    /// store does not fill the journal (if it can still be written).
    pub(crate) fn read_failed(&self, guild: Option<GuildId>, what: &'static str, e: &StoreError) {
        let now = self.clock.now();
        {
            let mut last = self.failed_reads.lock().unwrap_or_else(|p| p.into_inner());
            let quiet = chrono::Duration::minutes(READ_FAILED_EVERY_MINUTES);
            if last.get(&(guild, what)).is_some_and(|at| now - *at < quiet) {
                return;
            }
            last.insert((guild, what), now);
        }
        self.record(
            Entry::new(Kind::Error, format!("store read failed: {what}"))
                .guild(guild)
                .reason(format!("{e}; kept quiet rather than guess")),
        );
    }

    /// Appends an entry stamped with the current time. A failure to write is
    /// logged, not propagated: losing a journal line must not stop a reply.
    /// Its summary and reason are cut as the store cuts them (see
    /// [`MAX_REASON_BYTES`](crate::store::journal::MAX_REASON_BYTES)) before
    /// they are logged too.
    ///
    /// The entry's context-stream line (see `stream`) is written with it.
    /// Routing lines (one or two for every message) join the store's open
    /// group of writes: committed within 100 ms, or with the next other
    /// use of the store, whichever comes first, and in order with
    /// everything else.
    pub fn record(&self, mut entry: Entry) -> Option<i64> {
        entry.at = self.clock.now();
        bound(&mut entry.summary);
        bound(&mut entry.reason);
        tracing::debug!(
            kind = entry.kind.as_str(),
            guild = ?entry.guild,
            channel = ?entry.channel,
            reason = %entry.reason,
            "{}",
            entry.summary
        );
        let line = stream::entry_event(&entry);
        let line = line.as_ref().map(|(guild, line)| (*guild, line));
        let commit = if entry.kind == Kind::Route {
            Commit::Grouped
        } else {
            Commit::Now
        };
        let written = self.store.journal_append_with(&entry, line, commit);
        match written {
            Ok(id) => {
                self.metrics.journaled(entry.kind.as_str());
                Some(id)
            }
            Err(e) => {
                tracing::error!(error = %e, summary = %entry.summary, "could not write to the journal");
                None
            }
        }
    }

    pub fn query(&self, filter: &Filter) -> Result<Vec<Entry>, StoreError> {
        self.store.journal_query(filter)
    }
}

/// One entry as a line of text, for the CLI and the console.
pub(crate) fn format_line(e: &Entry, channel_name: Option<&str>) -> String {
    let place = match (channel_name, e.channel) {
        (Some(name), _) => format!("#{name}"),
        (None, Some(c)) => format!("#{c}"),
        (None, None) => e
            .guild
            .map(|g| format!("guild {g}"))
            .unwrap_or_else(|| "-".into()),
    };
    let mut line = format!(
        "{}  {:<15} {:<14} {}",
        e.at.format("%Y-%m-%d %H:%M:%S"),
        e.kind.as_str(),
        place,
        e.summary
    );
    if let Some(s) = e.salience {
        line.push_str(&format!(" (salience {s:.2})"));
    }
    if !e.reason.is_empty() {
        line.push_str(" — ");
        line.push_str(&e.reason);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::ids::{ChannelId, GuildId, MessageId};
    use crate::store::Store;

    #[test]
    fn a_read_that_keeps_failing_is_journaled_once_in_ten_minutes() {
        let clock = ManualClock::at_test_epoch();
        let journal = Journal::new(Store::open_in_memory().unwrap().journal(), clock.clone());
        let e = StoreError::Corrupt("no such table: hushes".into());
        let lines = |j: &Journal| {
            j.query(&Filter {
                kinds: vec![Kind::Error],
                ..Default::default()
            })
            .unwrap()
            .len()
        };
        for _ in 0..5 {
            journal.read_failed(Some(GuildId(1)), "the hushes", &e);
            clock.advance(chrono::Duration::minutes(1));
        }
        assert_eq!(lines(&journal), 1);
        journal.read_failed(Some(GuildId(2)), "the hushes", &e);
        assert_eq!(lines(&journal), 2, "another server's is its own");
        clock.advance(chrono::Duration::minutes(6));
        journal.read_failed(Some(GuildId(1)), "the hushes", &e);
        assert_eq!(lines(&journal), 3, "ten minutes on, it is said again");
    }

    #[test]
    fn entries_are_queryable_by_window_type_and_place() {
        let clock = ManualClock::at_test_epoch();
        let journal = Journal::new(Store::open_in_memory().unwrap().journal(), clock.clone());
        journal.record(Entry::new(Kind::Route, "old").place(Some(GuildId(1)), Some(ChannelId(5))));
        clock.advance(chrono::Duration::hours(2));
        let t = clock.now();
        journal.record(
            Entry::new(Kind::Route, "new route")
                .place(Some(GuildId(1)), Some(ChannelId(5)))
                .salience(0.9)
                .reason("addressed"),
        );
        journal.record(
            Entry::new(Kind::Reply, "said hi")
                .place(Some(GuildId(2)), Some(ChannelId(6)))
                .message(MessageId(77)),
        );

        let recent = journal
            .query(&Filter {
                since: Some(t),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(
            recent
                .iter()
                .map(|e| e.summary.as_str())
                .collect::<Vec<_>>(),
            vec!["new route", "said hi"]
        );
        let routes = journal
            .query(&Filter {
                kinds: vec![Kind::Route],
                ..Default::default()
            })
            .unwrap();
        assert_eq!(routes.len(), 2);
        let g2 = journal
            .query(&Filter {
                guild: Some(GuildId(2)),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(g2.len(), 1);
        assert_eq!(g2[0].message, Some(MessageId(77)));
        let by_text = journal
            .query(&Filter {
                text: Some("addressed".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(by_text.len(), 1);
        let newest = journal
            .query(&Filter {
                limit: Some(1),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(newest[0].summary, "said hi");

        let line = format_line(&recent[0], Some("general"));
        assert!(
            line.contains("route")
                && line.contains("#general")
                && line.contains("(salience 0.90) — addressed"),
            "{line}"
        );
    }

    #[test]
    fn type_lists_name_the_bad_type() {
        assert_eq!(
            Kind::parse_list("route, reply").unwrap(),
            vec![Kind::Route, Kind::Reply]
        );
        let err = Kind::parse_list("route,rout").unwrap_err().to_string();
        assert!(
            err.contains("\"rout\"") && err.contains("initiative_post"),
            "{err}"
        );
    }
}
