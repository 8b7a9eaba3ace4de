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

use std::collections::HashMap;
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
    /// The shards READY since the start, with the total they were told.
    ready: Mutex<HashMap<u32, u32>>,
    wake: Notify,
}

impl Departures {
    pub fn new(app: Arc<App>, plan: Option<Shards>) -> Arc<Self> {
        Arc::new(Self {
            app,
            plan,
            ready: Mutex::new(HashMap::new()),
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
        self.back(guild, "its GUILD_CREATE");
    }

    /// A shard is READY, naming every server of it the bot is in: those
    /// are not departed (invited back while the bot was down), and the
    /// shard's departures may be removed from now on.
    pub fn ready(&self, shard: Option<(u32, u32)>, guilds: &[GuildId]) {
        for g in guilds {
            if self.admits(*g) {
                self.back(*g, "READY lists it");
            }
        }
        let (id, total) = shard.unwrap_or((0, 1));
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, total);
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

    /// Whether `guild`'s shard has been READY since the start (and so
    /// would have named it, had it invited the bot back meanwhile).
    fn heard(&self, guild: GuildId) -> bool {
        let ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
        ready
            .iter()
            .any(|(id, total)| shard_of(guild, *total) == *id)
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
            if d.at > due_by || !self.admits(d.guild) || !self.heard(d.guild) {
                continue;
            }
            self.remove(d, due_by, days).await;
        }
    }

    /// One departed server's rows and state folders, off the async threads:
    /// a large server's removal is one long transaction.
    async fn remove(&self, d: Departure, due_by: DateTime<Utc>, days: u32) {
        let (store, dir) = (self.app.store.clone(), self.app.data_dir.clone());
        let guild = d.guild;
        let removed = tokio::task::spawn_blocking(move || {
            let rows = store.remove_departed(guild, due_by)?;
            if rows.is_some() {
                guild_io::remove_state_folders(&dir, guild)?;
            }
            Ok::<_, guild_io::GuildIoError>(rows)
        })
        .await;
        let entry = match removed {
            // Invited back since it was read: nothing went.
            Ok(Ok(None)) => return,
            Ok(Ok(Some(rows))) => Entry::new(
                Kind::System,
                format!(
                    "deleted the data of {}, which removed the bot on {}",
                    d.shown(),
                    d.at.format("%Y-%m-%d")
                ),
            )
            .reason(format!(
                "{} and its state folders, after storage.retention.departedGuildDays ({days})",
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
