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
use crate::journal::{Entry, Kind};
use crate::settings::shards::Shards;
use crate::store::departed::{Departure, removal_date};
use crate::store::guild_io;
use crate::vocab::shards::shard_of;

/// How often the sweep looks for departures whose grace has passed; the
/// grace is counted in days, so an hour late is on the date it said.
pub const SWEEP_EVERY: Duration = Duration::from_secs(3600);

pub struct Departures {
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
    pub fn new(app: Arc<App>, plan: Option<Shards>) -> Arc<Self> {
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
    pub fn deleted(&self, guild: GuildId, unavailable: bool) {
        if unavailable {
            tracing::info!(%guild, "a server is unavailable (a Discord outage); nothing changes");
            return;
        }
        lock(&self.heard).named(guild, false);
        let now = self.app.clock.now();
        match self.app.store.record_departure(guild, now) {
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
    pub fn created(&self, guild: GuildId) {
        lock(&self.heard).named(guild, true);
        self.back(guild, "its GUILD_CREATE");
    }

    /// A shard is READY, naming every server of it the bot is in: those
    /// are not departed (invited back while the bot was down), and the
    /// shard's departures may be removed from now on.
    pub fn ready(&self, shard: Option<(u32, u32)>, guilds: &[GuildId]) {
        // Read once: a shard may list thousands, and few if any departed.
        match self.app.store.departures() {
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
        match self.app.store.cancel_departure(guild) {
            Ok(None) => {}
            Ok(Some(left)) => {
                self.app.journal.record(
                    Entry::new(
                        Kind::System,
                        format!(
                            "invited back to {}; nothing of it was deleted",
                            self.name(guild)
                        ),
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
        match self.app.store.guild_name(guild) {
            Ok(Some(n)) => format!("{n} ({guild})"),
            _ => format!("server {guild}"),
        }
    }

    fn admits(&self, guild: GuildId) -> bool {
        super::shards::admits(self.plan.as_ref(), Some(guild))
    }

    /// Removes the data of every departure of this process's servers whose
    /// grace has passed.
    pub async fn sweep(&self) {
        let departures = match self.app.store.departures() {
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
            if d.at <= due_by && mine {
                self.remove(d, due_by, days).await;
            }
        }
    }

    /// One departed server's rows and state folders, off the async threads:
    /// a large server's removal is one long transaction.
    async fn remove(&self, d: Departure, due_by: DateTime<Utc>, days: u32) {
        let (store, dir) = (self.app.store.clone(), self.app.data_dir.clone());
        let guild = d.guild;
        let removed = tokio::task::spawn_blocking(move || {
            let rows = store.remove_departed(guild, due_by)?;
            // The rows and the departure are gone: a folder left behind is
            // said, for the operator to delete, and not tried again.
            let folders = rows
                .as_ref()
                .and_then(|_| guild_io::remove_state_folders(&dir, guild).err());
            Ok::<_, guild_io::GuildIoError>(rows.map(|r| (r, folders)))
        })
        .await;
        let deleted = format!(
            "deleted the data of {}, which removed the bot on {}",
            d.shown(),
            d.at.format("%Y-%m-%d")
        );
        let after = format!("after storage.retention.departedGuildDays ({days})");
        let entry = match removed {
            // Invited back since it was read: nothing went.
            Ok(Ok(None)) => return,
            Ok(Ok(Some((rows, None)))) => Entry::new(Kind::System, deleted).reason(format!(
                "{} and its state folders, {after}",
                guild_io::describe(&rows)
            )),
            Ok(Ok(Some((rows, Some(e))))) => Entry::new(Kind::Error, deleted).reason(format!(
                "{}, {after}; but not all its state folders: {e} — delete them by hand",
                guild_io::describe(&rows)
            )),
            Ok(Err(e)) => Entry::new(
                Kind::Error,
                format!("could not delete the data of {}", d.shown()),
            )
            .reason(format!("{e}; tried again at the next sweep")),
            Err(e) => Entry::new(
                Kind::Error,
                format!("could not delete the data of {}", d.shown()),
            )
            .reason(format!(
                "the removal stopped: {e}; tried again at the next sweep"
            )),
        };
        // No server on the entry: it outlives the server's journal.
        self.app.journal.record(entry);
    }

    /// Sweeps at start, then every [`SWEEP_EVERY`], on a departure or a
    /// READY, and when the settings change (a shorter grace), until `shutdown`.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut changes = self.app.settings.changes();
        loop {
            tokio::select! {
                () = self.sweep() => {}
                _ = shutdown.changed() => return,
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
}
