//! Leaving a server: what the bot does when a server removes it.
//!
//! Discord says so with a GUILD_DELETE without `unavailable` (kicked,
//! banned, or the bot left); `unavailable: true` is an outage and changes
//! nothing, and neither does a server READY lists as unavailable (READY
//! lists every server the bot is in). A departure is stored and journaled
//! with the date its data goes; after `storage.retention.departedGuildDays`
//! (0: at once) the sweep removes the server's rows and state folders as
//! `ambient guild remove` does. A server that invites the bot back first
//! (its GUILD_CREATE, or READY naming it after a restart) keeps everything.
//!
//! The tables that grow with use (messages, the journal, reactions…) go in
//! short batches first, each its own transaction checking that the server
//! is still departed, at the retention sweep's pace; then the rest in one.
//! A server that invites the bot back meanwhile keeps what had not gone.
//!
//! The sweep runs at start, every [`SWEEP_EVERY`], when a departure or a
//! READY asks for it and when the settings change. It removes only this
//! process's servers, and only once their shard has been READY since the
//! start: a server that invited the bot back while it was down says so only
//! then, and must not lose its data to a sweep that ran first.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{Notify, watch};

use crate::app::App;
use crate::ids::GuildId;
use crate::store::GuildStore;
use crate::store::MessageStore;
use crate::store::departed::{Departure, removal_date};
use crate::store::guild_io::{self, End, Removal};
use crate::store::retention::Pace;
use crate::vocab::journal::{Entry, Kind};
use crate::vocab::shards::Shards;
use crate::vocab::shards::shard_of;

/// How often the sweep looks for departures whose grace has passed; the
/// grace is counted in days, so an hour late is on the date it said.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(3600);

pub(crate) struct Departures {
    app: Arc<App>,
    /// This process's shards; None: every shard.
    plan: Option<Shards>,
    heard: Mutex<Heard>,
    wake: Notify,
}

/// What Discord has said since the start: which shards were READY, and
/// which servers the bot is in.
#[derive(Default)]
struct Heard {
    /// Shard id → the total it was told.
    ready: HashMap<u32, u32>,
    /// Named by READY or a GUILD_CREATE and not removed since: never swept,
    /// even if cancelling their departure in the store failed.
    present: HashSet<GuildId>,
    /// The server whose data is being deleted now, if one is.
    removing: Option<GuildId>,
}

impl Heard {
    fn ready(&mut self, shard: Option<(u32, u32)>, guilds: &[GuildId]) {
        let (id, total) = shard.unwrap_or((0, 1));
        self.ready.insert(id, total);
        self.present.extend(guilds.iter().copied());
    }

    /// A GUILD_CREATE named `guild`; `false`: a GUILD_DELETE removed it.
    fn named(&mut self, guild: GuildId, present: bool) {
        if present {
            self.present.insert(guild);
        } else {
            self.present.remove(&guild);
        }
    }

    /// What a server invited back keeps: everything, unless its removal is
    /// under way (that stops at its next batch and journals what had gone).
    fn kept_when_back(&self, guild: GuildId) -> &'static str {
        if self.removing == Some(guild) {
            "what had not been deleted yet stays"
        } else {
            "nothing of it was deleted"
        }
    }

    /// Whether a departure of `guild` may be carried out: its shard was
    /// READY since the start (READY would have named it, had it invited the
    /// bot back meanwhile), and nothing has named it since it left.
    fn may_remove(&self, guild: GuildId) -> bool {
        !self.present.contains(&guild)
            && self
                .ready
                .iter()
                .any(|(id, total)| shard_of(guild, *total) == *id)
    }
}

impl Departures {
    pub(crate) fn new(app: Arc<App>, plan: Option<Shards>) -> Arc<Self> {
        Arc::new(Self {
            app,
            plan,
            heard: Mutex::new(Heard::default()),
            wake: Notify::new(),
        })
    }

    fn grace_days(&self) -> u32 {
        // The operator's setting: a server cannot override storage.*.
        self.app
            .settings
            .global()
            .storage
            .retention
            .departed_guild_days
    }

    /// A GUILD_DELETE of one of this process's servers.
    pub(crate) fn deleted(&self, guild: GuildId, unavailable: bool) {
        if unavailable {
            tracing::info!(%guild, "a server is unavailable (a Discord outage); nothing changes");
            return;
        }
        lock(&self.heard).named(guild, false);
        let now = self.app.clock.now();
        match self.app.stores::<GuildStore>().record_departure(guild, now) {
            Ok(true) => {}
            // Delivered again: the first time stands, and was journaled.
            Ok(false) => return,
            Err(e) => {
                self.app.journal.record(
                    Entry::new(
                        Kind::Error,
                        format!("could not record leaving server {guild}"),
                    )
                    .guild(Some(guild))
                    .reason(format!("{e}; its data stays until it is removed by hand")),
                );
                return;
            }
        }
        let days = self.grace_days();
        let name = self.name(guild);
        let when = match days {
            0 => "its data is deleted now".to_string(),
            d => format!(
                "its data will be deleted on {} unless ambient is invited back",
                removal_date(now, d)
            ),
        };
        self.app.journal.record(
            Entry::new(Kind::System, format!("removed from {name}; {when}"))
                .guild(Some(guild))
                .reason(format!(
                    "Discord says the bot was removed from the server (kicked, banned or left), \
                     not an outage; storage.retention.departedGuildDays is {days}"
                )),
        );
        self.wake.notify_one();
    }

    /// A GUILD_CREATE: the bot is in `guild`, so a departure of it is cancelled.
    pub(crate) fn created(&self, guild: GuildId) {
        lock(&self.heard).named(guild, true);
        self.back(guild, "its GUILD_CREATE");
    }

    /// A shard is READY, naming every server of it the bot is in: those
    /// are not departed (invited back while the bot was down), and the
    /// shard's departures may be removed from now on.
    pub(crate) fn ready(&self, shard: Option<(u32, u32)>, guilds: &[GuildId]) {
        // Read once: a shard may list thousands, and few if any departed.
        match self.app.stores::<GuildStore>().departures() {
            Ok(departed) => {
                for d in departed.iter().filter(|d| guilds.contains(&d.guild)) {
                    self.back(d.guild, "READY lists it");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the departed servers at READY"),
        }
        lock(&self.heard).ready(shard, guilds);
        self.wake.notify_one();
    }

    fn back(&self, guild: GuildId, how: &str) {
        match self.app.stores::<GuildStore>().cancel_departure(guild) {
            Ok(None) => {}
            Ok(Some(left)) => {
                let kept = lock(&self.heard).kept_when_back(guild);
                self.app.journal.record(
                    Entry::new(
                        Kind::System,
                        format!("invited back to {}; {kept}", self.name(guild)),
                    )
                    .guild(Some(guild))
                    .reason(format!(
                        "it had removed the bot {} ({how})",
                        crate::when::ago(left, self.app.clock.now())
                    )),
                );
            }
            Err(e) => tracing::warn!(%guild, error = %e, "could not cancel a departure"),
        }
    }

    fn name(&self, guild: GuildId) -> String {
        match self.app.stores::<MessageStore>().guild_name(guild) {
            Ok(Some(n)) => format!("{n} ({guild})"),
            _ => format!("server {guild}"),
        }
    }

    fn admits(&self, guild: GuildId) -> bool {
        super::shards::admits(self.plan.as_ref(), Some(guild))
    }

    /// Removes the data of every departure of this process's servers whose
    /// grace has passed; once `shutdown` says so, a removal under way stops
    /// between two of its transactions (the rest goes at the next start).
    pub(crate) async fn sweep(&self, shutdown: &watch::Receiver<bool>) {
        let departures = match self.app.stores::<GuildStore>().departures() {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the departed servers; trying again later");
                return;
            }
        };
        let days = self.grace_days();
        let due_by = self.app.clock.now() - chrono::Duration::days(i64::from(days));
        for d in departures {
            let mine = self.admits(d.guild) && lock(&self.heard).may_remove(d.guild);
            if d.at <= due_by && mine && !*shutdown.borrow() {
                self.remove(d, due_by, days, shutdown.clone()).await;
            }
        }
    }

    /// One departed server's rows and state folders, off the async threads:
    /// the tables that grow with use go in short batches, resting between
    /// them so the bot's own writes wait little.
    async fn remove(
        &self,
        d: Departure,
        due_by: DateTime<Utc>,
        days: u32,
        shutdown: watch::Receiver<bool>,
    ) {
        let (store, dir): (GuildStore, _) = (self.app.stores(), self.app.data_dir.clone());
        let guild = d.guild;
        lock(&self.heard).removing = Some(guild);
        let removed = tokio::task::spawn_blocking(move || {
            let go_on = || !*shutdown.borrow();
            let removal = store.remove_departed(guild, due_by, Pace::default(), &go_on)?;
            // The rows and the departure are gone: a folder left behind is
            // said, for the operator to delete, and not tried again.
            let folders = match &removal {
                Some(r) if r.end == End::Complete => {
                    guild_io::remove_state_folders(&dir, guild).err()
                }
                _ => None,
            };
            Ok::<_, guild_io::GuildIoError>(removal.map(|r| (r, folders)))
        })
        .await;
        lock(&self.heard).removing = None;
        let entry = match removed {
            // Invited back since it was read, before anything went.
            Ok(Ok(None)) => None,
            Ok(Ok(Some((removal, folders)))) => Some(said(&d, days, &removal, folders)),
            Ok(Err(e)) => Some(
                Entry::new(
                    Kind::Error,
                    format!("could not delete the data of {}", d.shown()),
                )
                .reason(format!("{e}; tried again at the next sweep")),
            ),
            Err(e) => Some(
                Entry::new(
                    Kind::Error,
                    format!("could not delete the data of {}", d.shown()),
                )
                .reason(format!(
                    "the removal stopped: {e}; tried again at the next sweep"
                )),
            ),
        };
        // No server on the entry: it outlives the server's journal.
        if let Some(entry) = entry {
            self.app.journal.record(entry);
        }
    }

    /// Sweeps at start, then every [`SWEEP_EVERY`], on a departure or a
    /// READY, and when the settings change (a shorter grace), until `shutdown`.
    pub(crate) async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut changes = self.app.settings.changes();
        loop {
            // Not raced against the shutdown: a removal under way stops at
            // its next transaction's end, and journals what went.
            self.sweep(&shutdown).await;
            if *shutdown.borrow() {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(SWEEP_EVERY) => {}
                () = self.wake.notified() => {}
                _ = changes.next() => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// The journal line of a removal that took rows: what went (batches and
/// the final transaction together), how it shared the writer, and — when it
/// stopped before the end — what stays.
fn said(
    d: &Departure,
    days: u32,
    removal: &Removal,
    folders: Option<guild_io::GuildIoError>,
) -> Entry {
    let rows = guild_io::describe(&removal.counts);
    let holds = format!(
        "in {} short transactions, the longest holding the writer {} ms",
        removal.holds.count(),
        removal.holds.longest().as_millis()
    );
    let after = format!("after storage.retention.departedGuildDays ({days})");
    let deleted = format!(
        "deleted the data of {}, which removed the bot on {}",
        d.shown(),
        d.at.format("%Y-%m-%d")
    );
    match (removal.end, folders) {
        (End::Complete, None) => Entry::new(Kind::System, deleted).reason(format!(
            "{rows} and its state folders, {holds}, {after}"
        )),
        (End::Complete, Some(e)) => Entry::new(Kind::Error, deleted).reason(format!(
            "{rows}, {holds}, {after}; but not all its state folders: {e} — delete them by hand"
        )),
        (End::NoLongerDue, _) => Entry::new(
            Kind::System,
            format!(
                "deleted part of the data of {} before it invited ambient back; the rest stays",
                d.shown()
            ),
        )
        .reason(format!("{rows} had gone, {holds}, {after}")),
        (End::Stopped, _) => Entry::new(
            Kind::System,
            format!(
                "deleted part of the data of {}, which removed the bot on {}; the rest goes at the next start",
                d.shown(),
                d.at.format("%Y-%m-%d")
            ),
        )
        .reason(format!("{rows}, {holds}, {after}; stopped with the bot")),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guild 7 is on shard 0 of 2, guild 1 << 22 on shard 1 of 2.
    const ZERO: GuildId = GuildId(7);
    const ONE: GuildId = GuildId(1 << 22);

    #[test]
    fn a_departure_waits_for_its_shards_ready_and_not_one_that_named_it() {
        let mut heard = Heard::default();
        assert!(!heard.may_remove(ZERO), "nothing heard since the start");
        heard.ready(Some((0, 2)), &[]);
        assert!(heard.may_remove(ZERO));
        assert!(!heard.may_remove(ONE), "shard 1 has not been READY");
        heard.ready(Some((1, 2)), &[ONE]);
        assert!(!heard.may_remove(ONE), "READY named it: it is back");
        heard.named(ONE, false);
        assert!(heard.may_remove(ONE), "removed again since");
        heard.named(ONE, true);
        assert!(!heard.may_remove(ONE), "invited back by a GUILD_CREATE");
        let mut alone = Heard::default();
        alone.ready(None, &[]);
        assert!(
            alone.may_remove(ONE),
            "one shard of one serves every server"
        );
    }

    #[test]
    fn a_server_back_while_its_removal_is_under_way_is_not_told_nothing_went() {
        let mut heard = Heard::default();
        assert_eq!(heard.kept_when_back(ZERO), "nothing of it was deleted");
        heard.removing = Some(ZERO);
        assert_eq!(
            heard.kept_when_back(ZERO),
            "what had not been deleted yet stays"
        );
        assert_eq!(heard.kept_when_back(ONE), "nothing of it was deleted");
    }

    #[test]
    fn the_journal_line_says_what_went_in_how_many_transactions_and_what_stays() {
        let d = Departure {
            guild: GuildId(7),
            name: Some("Seven".into()),
            at: DateTime::parse_from_rfc3339("2026-01-30T10:00:00Z")
                .unwrap()
                .with_timezone(&Utc),
        };
        let mut holds = crate::store::retention::Holds::default();
        for ms in [3, 41, 7] {
            holds.push(Duration::from_millis(ms));
        }
        let removal = |end| Removal {
            counts: vec![("messages", 1_000), ("journal", 998)],
            holds: holds.clone(),
            end,
        };
        let line = |end| {
            let e = said(&d, 30, &removal(end), None);
            (e.kind, e.summary, e.reason)
        };
        assert_eq!(
            line(End::Complete),
            (
                Kind::System,
                "deleted the data of Seven (7), which removed the bot on 2026-01-30".into(),
                "messages 1000, journal 998 and its state folders, in 3 short transactions, \
                 the longest holding the writer 41 ms, after storage.retention.departedGuildDays (30)"
                    .into()
            )
        );
        assert_eq!(
            line(End::NoLongerDue),
            (
                Kind::System,
                "deleted part of the data of Seven (7) before it invited ambient back; the rest stays"
                    .into(),
                "messages 1000, journal 998 had gone, in 3 short transactions, the longest holding \
                 the writer 41 ms, after storage.retention.departedGuildDays (30)"
                    .into()
            )
        );
        let (kind, summary, reason) = line(End::Stopped);
        assert_eq!(kind, Kind::System);
        assert!(
            summary.ends_with("; the rest goes at the next start"),
            "{summary}"
        );
        assert!(reason.ends_with("; stopped with the bot"), "{reason}");
    }
}
