//! The composition root: builds every service from settings, wires the
//! handlers into the spine, starts the background loops, and stops them.
//!
//! Front ends (Discord, console) construct an [`App`] with their transport,
//! call [`App::start`], feed percepts to `app.senses`, and call
//! [`Running::stop`] on the way out. Nothing else creates services.

mod backups;
mod stores;

pub use stores::{attach, attach_with};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::attention::Spine;
use crate::chat::Transport;
use crate::clock::{Chance, SharedClock};
use crate::courtesy::people::{self, People};
use crate::discovery::Discovery;
use crate::executive::leases::Leases;
use crate::executive::{Executive, Prompts, StandIn};
use crate::feeds::Feeds;
use crate::garden::{Garden, GardenHandler};
use crate::ids::UserId;
use crate::impulses::Impulses;
use crate::impulses::handler::ImpulseHandler;
use crate::initiative::{Initiative, InitiativeHandler};
use crate::journal::Journal;
use crate::live::Live;
use crate::memory::Memory;
use crate::reflexes::pipeline::Services;
use crate::reflexes::{ReflexHandler, Reflexes};
use crate::reply::{ReplyHandler, ReplyTools};
use crate::senses::Senses;
use crate::settings::{Secrets, Settings, SettingsService, SettingsSource};
use crate::speech::Speech;
use crate::store::boundaries::Boundary;
use crate::store::lock::DataLock;
use crate::store::people::PersonEvent;
use crate::store::shared::SharedDb;
use crate::store::{Sharing, Store};
use crate::upkeep::Upkeep;
use crate::vocab::journal::{Entry, Kind};
use crate::voice::Voice;
use crate::voice::transcribe::Transcriber;

pub struct App {
    pub settings: Arc<SettingsService>,
    pub secrets: Secrets,
    /// The whole store: the front ends cut their handles from it with
    /// [`App::stores`]; only the roots (this and `cli`) and tests hold it whole.
    store: Store,
    pub journal: Journal,
    pub clock: SharedClock,
    pub chance: Arc<Chance>,
    pub spine: Arc<Spine>,
    pub speech: Arc<Speech>,
    pub senses: Senses,
    pub executive: Arc<Executive>,
    pub initiative: Arc<Initiative>,
    pub discovery: Arc<Discovery>,
    pub feeds: Arc<Feeds>,
    pub memory: Arc<Memory>,
    pub impulses: Arc<Impulses>,
    pub reflexes: Arc<Reflexes>,
    pub garden: Arc<Garden>,
    pub voice: Arc<Voice>,
    /// Removes what retention no longer keeps; keeps the file small.
    pub upkeep: Arc<Upkeep>,
    /// Reloads the settings file while running (watcher, SIGHUP, `/settings reload`).
    pub live: Arc<Live>,
    pub data_dir: PathBuf,
    /// What is unavailable and why, said plainly at start (console, logs, status).
    pub notices: Vec<String>,
    /// Applies the boundaries and forget-me other processes passed on
    /// (`storage.sharedDir`); `None` for a bot that shares with no one.
    people: Option<People>,
}

/// What a front end provides to build the app.
pub struct Parts {
    pub settings: Settings,
    /// Where `settings` were read from, for live reloads; `None` when made in
    /// code (replay, tests): there is no file to read again.
    pub settings_source: Option<SettingsSource>,
    pub secrets: Secrets,
    pub clock: SharedClock,
    pub chance: Arc<Chance>,
    /// Answers every model call in place of the providers (replay's offline mode).
    pub stand_in: Option<Arc<dyn StandIn>>,
    /// Whether other processes may use the store meanwhile (only the
    /// replay's is `Private`).
    pub sharing: Sharing,
}

/// What every service is built on: the store and the settings over it, the
/// journal, the spine, and the two ends of chat (speech out, senses in).
/// [`App::build`] makes it first and builds the thinking services from it.
struct Base {
    settings: Arc<SettingsService>,
    secrets: Secrets,
    store: Store,
    journal: Journal,
    clock: SharedClock,
    chance: Arc<Chance>,
    spine: Arc<Spine>,
    speech: Arc<Speech>,
    senses: Senses,
    /// The bot's own user (its messages are not percepts to answer).
    me: UserId,
    data_dir: PathBuf,
    /// The database of `storage.sharedUrl`: the people ledger's, and the
    /// daily budgets' leases.
    shared: Option<SharedDb>,
}

impl Base {
    /// Opens the store in `storage.dataDir` and builds what talks to it directly.
    fn open(
        settings: Settings,
        secrets: Secrets,
        clock: SharedClock,
        chance: Arc<Chance>,
        sharing: Sharing,
        transport: impl FnOnce(&Store) -> Arc<dyn Transport>,
    ) -> anyhow::Result<Self> {
        let data_dir = PathBuf::from(&settings.storage.data_dir);
        let store = Store::open_as(&data_dir, sharing).with_context(|| {
            format!(
                "cannot open the store in {} (storage.dataDir)",
                data_dir.display()
            )
        })?;
        let ledger = "cannot open the people ledger (storage.sharedDir or storage.sharedUrl)";
        let shared = people::shared_db_if_set(&settings.storage, &secrets).context(ledger)?;
        let store = attach_with(store, &settings, shared.clone()).context(ledger)?;
        let metrics = Arc::new(crate::metrics::Metrics::new(settings.metrics.per_guild));
        let settings = Arc::new(SettingsService::new(
            settings,
            store.overrides(),
            clock.clone(),
        ));
        let journal = Journal::with_metrics(store.journal(), clock.clone(), metrics);
        let spine = Spine::new(journal.clone(), settings.clone(), clock.clone());
        let transport = transport(&store);
        let me = transport.me().id;
        let speech = Arc::new(Speech::new(
            transport,
            (&store).into(),
            settings.clone(),
            clock.clone(),
        ));
        let senses = Senses::new(
            (&store).into(),
            settings.clone(),
            spine.clone(),
            clock.clone(),
            me,
        );
        Ok(Self {
            settings,
            secrets,
            store,
            journal,
            clock,
            chance,
            spine,
            speech,
            senses,
            me,
            data_dir,
            shared,
        })
    }

    /// The executive, with the prompt templates it renders (a broken one stops the start).
    async fn executive(
        &self,
        stand_in: Option<Arc<dyn StandIn>>,
    ) -> anyhow::Result<Arc<Executive>> {
        let prompts = Prompts::load(Path::new(&self.settings.global().executive.prompts_dir))
            .context("a prompt template is broken (executive.promptsDir)")?;
        Ok(Arc::new(
            Executive::new(crate::executive::Services {
                settings: self.settings.clone(),
                secrets: self.secrets.clone(),
                store: (&self.store).into(),
                journal: self.journal.clone(),
                clock: self.clock.clone(),
                chance: self.chance.clone(),
                prompts,
                stand_in,
            })
            .await,
        ))
    }

    fn reflexes(
        &self,
        executive: &Arc<Executive>,
        memory: &Arc<Memory>,
        impulses: &Arc<Impulses>,
    ) -> Arc<Reflexes> {
        Reflexes::new(Services {
            store: (&self.store).into(),
            settings: self.settings.clone(),
            secrets: self.secrets.clone(),
            journal: self.journal.clone(),
            clock: self.clock.clone(),
            executive: executive.clone(),
            speech: self.speech.clone(),
            memory: memory.clone(),
            impulses: impulses.clone(),
            data_dir: self.data_dir.clone(),
        })
    }

    /// The handlers that answer a percept: the reply, the reflexes and the
    /// due impulses, registered in that order.
    fn register_conversation(
        &self,
        executive: &Arc<Executive>,
        memory: &Arc<Memory>,
        impulses: &Arc<Impulses>,
        reflexes: &Arc<Reflexes>,
        voice: &Arc<Voice>,
    ) {
        self.spine
            .registry
            .register(Arc::new(ReplyHandler::new(crate::reply::Services {
                speech: self.speech.clone(),
                executive: executive.clone(),
                spine: self.spine.clone(),
                settings: self.settings.clone(),
                store: (&self.store).into(),
                clock: self.clock.clone(),
                memory: memory.clone(),
                tools: ReplyTools {
                    journal: self.journal.clone(),
                    impulses: impulses.clone(),
                    reflexes: reflexes.clone(),
                    secrets: self.secrets.clone(),
                    voice: voice.clone(),
                },
            })));
        self.spine.registry.register(Arc::new(ReflexHandler {
            reflexes: reflexes.clone(),
        }));
        self.spine.registry.register(Arc::new(ImpulseHandler {
            store: (&self.store).into(),
            settings: self.settings.clone(),
            journal: self.journal.clone(),
            clock: self.clock.clone(),
            executive: executive.clone(),
            speech: self.speech.clone(),
            memory: memory.clone(),
            impulses: impulses.clone(),
        }));
    }

    /// The garden, registered as a handler (it tends memory between conversations).
    fn garden(
        &self,
        executive: &Arc<Executive>,
        memory: &Arc<Memory>,
        impulses: &Arc<Impulses>,
    ) -> Arc<Garden> {
        let garden = Garden::new(crate::garden::Services {
            store: (&self.store).into(),
            settings: self.settings.clone(),
            journal: self.journal.clone(),
            clock: self.clock.clone(),
            executive: executive.clone(),
            memory: memory.clone(),
            impulses: impulses.clone(),
            spine: self.spine.clone(),
            me: self.me,
        });
        self.spine.registry.register(Arc::new(GardenHandler {
            garden: garden.clone(),
        }));
        garden
    }

    fn voice(&self) -> Arc<Voice> {
        Voice::new(
            crate::voice::listener::Services {
                store: (&self.store).into(),
                settings: self.settings.clone(),
                journal: self.journal.clone(),
                clock: self.clock.clone(),
                senses: self.senses.clone(),
                transcriber: Arc::new(Transcriber::new(
                    self.settings.clone(),
                    self.secrets.clone(),
                    (&self.store).into(),
                    self.clock.clone(),
                )),
                secrets: self.secrets.clone(),
            },
            self.speech.clone(),
        )
    }

    /// Initiative, registered last: it speaks only when nothing else did.
    fn initiative(
        &self,
        executive: &Arc<Executive>,
        discovery: &Arc<Discovery>,
        memory: &Arc<Memory>,
    ) -> Arc<Initiative> {
        let initiative = Initiative::new(crate::initiative::Services {
            settings: self.settings.clone(),
            store: (&self.store).into(),
            journal: self.journal.clone(),
            clock: self.clock.clone(),
            chance: self.chance.clone(),
            spine: self.spine.clone(),
            executive: executive.clone(),
            speech: self.speech.clone(),
            secrets: self.secrets.clone(),
            discovery: discovery.clone(),
            memory: memory.clone(),
        });
        self.spine.registry.register(Arc::new(InitiativeHandler {
            engine: initiative.clone(),
        }));
        initiative
    }
}

impl App {
    /// The store whole, for the roots (`cli`) and tests: a module is given its handles instead.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The handles a front end's `Stores` names (`let store: dashboard::Stores = app.stores();`),
    /// cut from the one store: the whole of it stays here.
    pub fn stores<T>(&self) -> T
    where
        T: for<'a> From<&'a Store>,
    {
        (&self.store).into()
    }
    /// Opens the store and builds every service. `transport` is made once the
    /// store exists (the console's transport reads channel names from it).
    ///
    /// The order is the layers' (DESIGN.md): the base, the executive, then
    /// the services that think with it; handlers register in the order the
    /// spine consults them (reply, reflexes, impulses, garden, initiative).
    pub async fn build(
        parts: Parts,
        transport: impl FnOnce(&Store) -> Arc<dyn Transport>,
    ) -> anyhow::Result<Arc<App>> {
        let Parts {
            settings,
            settings_source,
            secrets,
            clock,
            chance,
            stand_in,
            sharing,
        } = parts;
        let b = Base::open(settings, secrets, clock, chance, sharing, transport)?;
        // What people asked on the other processes' servers holds here
        // before this one hears anyone: before the gateway connects.
        let people = People::new(&(&b.store).into(), &b.journal);
        if let Some(p) = &people {
            p.catch_up().context(
                "cannot apply the people ledger (storage.sharedDir or storage.sharedUrl)",
            )?;
        }
        let executive = b.executive(stand_in).await?;
        if let Some(db) = b.shared.clone() {
            // The whole bot's daily budgets, leased from the database the ledger is in.
            executive.lease_with(Arc::new(Leases::new(db, b.journal.clone())));
        }
        let mut notices = executive.unavailable_summary();
        let memory = Memory::new(
            (&b.store).into(),
            b.settings.clone(),
            b.journal.clone(),
            b.clock.clone(),
            executive.clone(),
        );
        let impulses = Impulses::new(
            (&b.store).into(),
            b.settings.clone(),
            b.journal.clone(),
            b.clock.clone(),
            b.spine.clone(),
        );
        let reflexes = b.reflexes(&executive, &memory, &impulses);
        if !reflexes.loaded().problems.is_empty() {
            notices.push(reflexes.summary());
        }
        let voice = b.voice();
        b.register_conversation(&executive, &memory, &impulses, &reflexes, &voice);
        let garden = b.garden(&executive, &memory, &impulses);
        let discovery = Discovery::new(
            b.settings.clone(),
            (&b.store).into(),
            b.journal.clone(),
            b.clock.clone(),
        );
        let feeds = Feeds::new(crate::feeds::Services {
            settings: b.settings.clone(),
            store: (&b.store).into(),
            journal: b.journal.clone(),
            clock: b.clock.clone(),
            transport: b.speech.transport().clone(),
            discovery: discovery.clone(),
        });
        let initiative = b.initiative(&executive, &discovery, &memory);
        let live = Arc::new(Live::new(
            settings_source,
            b.settings.clone(),
            b.secrets.clone(),
            b.journal.clone(),
            executive.clone(),
            reflexes.clone(),
            discovery.clone(),
        ));
        let upkeep = Arc::new(Upkeep::new(
            (&b.store).into(),
            b.settings.clone(),
            b.journal.clone(),
            b.clock.clone(),
        ));
        Ok(Arc::new(App {
            upkeep,
            settings: b.settings,
            secrets: b.secrets,
            store: b.store,
            journal: b.journal,
            clock: b.clock,
            chance: b.chance,
            spine: b.spine,
            speech: b.speech,
            senses: b.senses,
            executive,
            initiative,
            discovery,
            feeds,
            memory,
            impulses,
            reflexes,
            garden,
            voice,
            live,
            data_dir: b.data_dir,
            notices,
            people,
        }))
    }

    /// Starts the background loops: the attention dispatcher, the initiative
    /// tick, discovery, memory, impulses, the garden and upkeep. `lock` is the data
    /// directory's (one running bot per data directory), taken by the front
    /// end before anything else touches the data; it is held until `stop`.
    /// What is due once the clock has moved on by one tick (due impulses,
    /// the initiative tick), run to the end. Simulated time (the console's
    /// `/wait`, replay) is driven with it instead of the background loops.
    pub async fn run_due(&self) {
        self.impulses.check();
        self.initiative.tick();
        self.spine.drain().await;
    }

    pub(crate) fn start(self: &Arc<Self>, lock: DataLock) -> Running {
        let mut running = self.start_spine();
        running.lock = Some(lock);
        let rx = running.shutdown.subscribe();
        running
            .tasks
            .push(tokio::spawn(self.initiative.clone().run(rx)));
        let rx = running.shutdown.subscribe();
        running
            .tasks
            .push(tokio::spawn(self.discovery.clone().run(rx)));
        running.spawn(|rx| self.feeds.clone().run(rx));
        let rx = running.shutdown.subscribe();
        running
            .tasks
            .push(tokio::spawn(self.memory.clone().run(rx)));
        let rx = running.shutdown.subscribe();
        running
            .tasks
            .push(tokio::spawn(self.impulses.clone().run(rx)));
        // Before any front end takes a request (the console reads its
        // input, the gateway connects): see `Garden::recover`.
        self.garden.recover();
        let rx = running.shutdown.subscribe();
        running
            .tasks
            .push(tokio::spawn(self.garden.clone().run(rx)));
        running.spawn(|rx| self.upkeep.clone().run(rx));
        let backups = backups::Backups {
            settings: self.settings.clone(),
            journal: self.journal.clone(),
            clock: self.clock.clone(),
            data_dir: self.data_dir.clone(),
        };
        running.spawn(|rx| backups.run(rx));
        if let Some(leases) = self.executive.leases().cloned() {
            let store = self.store.clone();
            running.spawn(move |mut rx| async move {
                // An error is a dropped sender: stopping all the same.
                let _ = rx.changed().await;
                leases.give_back(&store.usage()).await;
            });
        }
        if let Some(people) = self.people.clone() {
            let rx = running.shutdown.subscribe();
            let voice = self.voice.clone();
            running.tasks.push(tokio::spawn(people.run(rx, move |e| {
                if let PersonEvent::Boundary {
                    user,
                    boundary: Boundary::NoVoice,
                    on,
                } = *e
                {
                    voice.boundary_changed(user, on);
                }
            })));
        }
        running
    }

    /// Starts only the attention dispatcher; tests drive the ticks themselves.
    pub fn start_spine(self: &Arc<Self>) -> Running {
        self.journal
            .record(Entry::new(Kind::System, "started").reason(format!(
                "ambient {} with data in {}",
                env!("CARGO_PKG_VERSION"),
                self.data_dir.display()
            )));
        for notice in &self.notices {
            tracing::info!("{notice}");
        }
        let mut running = Running::new(self.journal.clone());
        running.spawn(|rx| self.spine.clone().run(rx));
        running
    }
}

/// The running loops; [`Running::stop`] ends them gracefully.
pub struct Running {
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    journal: Journal,
    /// Held until the loops have stopped.
    lock: Option<DataLock>,
}

impl Running {
    /// No loops yet: [`Running::spawn`] starts them; the journal hears of the stop.
    pub(crate) fn new(journal: Journal) -> Self {
        Self {
            shutdown: watch::channel(false).0,
            tasks: Vec::new(),
            journal,
            lock: None,
        }
    }

    /// Starts one more loop, stopped with the others (a front end's own, like
    /// the settings watcher).
    pub(crate) fn spawn<F>(&mut self, task: impl FnOnce(watch::Receiver<bool>) -> F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let rx = self.shutdown.subscribe();
        self.tasks.push(tokio::spawn(task(rx)));
    }

    /// Signals every loop to stop and waits for work in flight to finish.
    pub async fn stop(self) {
        self.stop_by(None).await;
    }

    /// Signals every loop to stop and waits for work in flight to finish —
    /// with a `deadline`, only until then: a loop still busy then (an answer
    /// waiting on its model, a garden cycle) is cut short, and the journal
    /// says how many were. Cutting is safe: words are recorded before they
    /// are sent, and a garden cycle cut short is continued at the next start.
    pub(crate) async fn stop_by(self, deadline: Option<tokio::time::Instant>) {
        // Harmless: it fails only when every loop has already stopped.
        let _ = self.shutdown.send(true);
        let mut cut = 0;
        for mut task in self.tasks {
            let ended = match deadline {
                Some(d) => tokio::time::timeout_at(d, &mut task).await.is_ok(),
                None => {
                    // Harmless: a task that panicked has already reported it; stopping goes on.
                    let _ = (&mut task).await;
                    true
                }
            };
            if !ended {
                task.abort();
                cut += 1;
            }
        }
        let stopped = Entry::new(Kind::System, "stopped");
        self.journal.record(match cut {
            0 => stopped,
            n => stopped.reason(format!(
                "{n} loop(s) still at work were cut short to stop in time"
            )),
        });
    }
}
