//! The composition root: builds every service from settings, wires the
//! handlers into the spine, starts the background loops, and stops them.
//!
//! Front ends (Discord, console) construct an [`App`] with their transport,
//! call [`App::start`], feed percepts to `app.senses`, and call
//! [`Running::stop`] on the way out. Nothing else creates services.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::attention::Spine;
use crate::chat::Transport;
use crate::clock::{Chance, SharedClock};
use crate::discovery::Discovery;
use crate::executive::{Executive, Prompts, StandIn};
use crate::garden::{Garden, GardenHandler};
use crate::impulses::Impulses;
use crate::impulses::handler::ImpulseHandler;
use crate::initiative::{Initiative, InitiativeHandler};
use crate::journal::{Entry, Journal, Kind};
use crate::live::Live;
use crate::memory::Memory;
use crate::reflexes::pipeline::Services;
use crate::reflexes::{ReflexHandler, Reflexes};
use crate::reply::{ReplyHandler, ReplyTools};
use crate::senses::Senses;
use crate::settings::{Secrets, Settings, SettingsService, SettingsSource};
use crate::speech::Speech;
use crate::store::Store;
use crate::store::lock::DataLock;
use crate::voice::Voice;
use crate::voice::transcribe::Transcriber;

pub struct App {
    pub settings: Arc<SettingsService>,
    pub secrets: Secrets,
    pub store: Store,
    pub journal: Journal,
    pub clock: SharedClock,
    pub chance: Arc<Chance>,
    pub spine: Arc<Spine>,
    pub speech: Arc<Speech>,
    pub senses: Senses,
    pub executive: Arc<Executive>,
    pub initiative: Arc<Initiative>,
    pub discovery: Arc<Discovery>,
    pub memory: Arc<Memory>,
    pub impulses: Arc<Impulses>,
    pub reflexes: Arc<Reflexes>,
    pub garden: Arc<Garden>,
    pub voice: Arc<Voice>,
    /// Reloads the settings file while running (watcher, SIGHUP, `/settings reload`).
    pub live: Arc<Live>,
    pub data_dir: PathBuf,
    /// What is unavailable and why, said plainly at start (console, logs, status).
    pub notices: Vec<String>,
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
}

impl App {
    /// Opens the store and builds every service. `transport` is made once the
    /// store exists (the console's transport reads channel names from it).
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
        } = parts;
        let data_dir = PathBuf::from(&settings.storage.data_dir);
        let store = Store::open(&data_dir).with_context(|| {
            format!(
                "cannot open the store in {} (storage.dataDir)",
                data_dir.display()
            )
        })?;
        let settings = Arc::new(SettingsService::new(settings, store.clone(), clock.clone()));
        let journal = Journal::new(store.clone(), clock.clone());
        let spine = Spine::new(journal.clone(), settings.clone(), clock.clone());
        let transport = transport(&store);
        let me = transport.me();
        let speech = Arc::new(Speech::new(
            transport,
            store.clone(),
            settings.clone(),
            clock.clone(),
        ));
        let senses = Senses::new(
            store.clone(),
            settings.clone(),
            spine.clone(),
            clock.clone(),
            me.id,
        );

        let prompts = Prompts::load(Path::new(&settings.global().executive.prompts_dir))
            .context("a prompt template is broken (executive.promptsDir)")?;
        let executive = Arc::new(
            Executive::new(
                settings.clone(),
                secrets.clone(),
                store.clone(),
                journal.clone(),
                clock.clone(),
                chance.clone(),
                prompts,
                stand_in,
            )
            .await,
        );
        let mut notices = executive.unavailable_summary();

        let memory = Memory::new(
            store.clone(),
            settings.clone(),
            journal.clone(),
            clock.clone(),
            executive.clone(),
        );
        let impulses = Impulses::new(
            store.clone(),
            settings.clone(),
            journal.clone(),
            clock.clone(),
            spine.clone(),
        );
        let reflexes = Reflexes::new(Services {
            store: store.clone(),
            settings: settings.clone(),
            secrets: secrets.clone(),
            journal: journal.clone(),
            clock: clock.clone(),
            executive: executive.clone(),
            speech: speech.clone(),
            memory: memory.clone(),
            impulses: impulses.clone(),
            data_dir: data_dir.clone(),
        });
        if !reflexes.loaded().problems.is_empty() {
            notices.push(reflexes.summary());
        }
        spine.registry.register(Arc::new(ReplyHandler::new(
            speech.clone(),
            executive.clone(),
            spine.clone(),
            settings.clone(),
            store.clone(),
            clock.clone(),
            memory.clone(),
            ReplyTools {
                journal: journal.clone(),
                impulses: impulses.clone(),
                reflexes: reflexes.clone(),
                secrets: secrets.clone(),
            },
        )));
        spine.registry.register(Arc::new(ReflexHandler {
            reflexes: reflexes.clone(),
        }));
        spine.registry.register(Arc::new(ImpulseHandler {
            store: store.clone(),
            settings: settings.clone(),
            journal: journal.clone(),
            clock: clock.clone(),
            executive: executive.clone(),
            speech: speech.clone(),
            memory: memory.clone(),
            impulses: impulses.clone(),
        }));

        let garden = Garden::new(
            store.clone(),
            settings.clone(),
            journal.clone(),
            clock.clone(),
            executive.clone(),
            memory.clone(),
            impulses.clone(),
            spine.clone(),
            me.id,
        );
        spine.registry.register(Arc::new(GardenHandler {
            garden: garden.clone(),
        }));

        let voice = Voice::new(
            crate::voice::listener::Services {
                store: store.clone(),
                settings: settings.clone(),
                journal: journal.clone(),
                clock: clock.clone(),
                senses: senses.clone(),
                transcriber: Arc::new(Transcriber::new(
                    settings.clone(),
                    secrets.clone(),
                    store.clone(),
                    clock.clone(),
                )),
            },
            speech.clone(),
        );

        let discovery = Discovery::new(
            settings.clone(),
            store.clone(),
            journal.clone(),
            clock.clone(),
        );
        let initiative = Initiative::new(
            settings.clone(),
            store.clone(),
            journal.clone(),
            clock.clone(),
            chance.clone(),
            spine.clone(),
            executive.clone(),
            speech.clone(),
            secrets.clone(),
            discovery.clone(),
            memory.clone(),
        );
        spine.registry.register(Arc::new(InitiativeHandler {
            engine: initiative.clone(),
        }));
        let live = Arc::new(Live::new(
            settings_source,
            settings.clone(),
            secrets.clone(),
            journal.clone(),
            executive.clone(),
            reflexes.clone(),
            discovery.clone(),
        ));

        Ok(Arc::new(App {
            settings,
            secrets,
            store,
            journal,
            clock,
            chance,
            spine,
            speech,
            senses,
            executive,
            initiative,
            discovery,
            memory,
            impulses,
            reflexes,
            garden,
            voice,
            live,
            data_dir,
            notices,
        }))
    }

    /// Starts the background loops: the attention dispatcher, the initiative
    /// tick, discovery, memory, impulses and the garden. `lock` is the data
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

    pub fn start(self: &Arc<Self>, lock: DataLock) -> Running {
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
        let rx = running.shutdown.subscribe();
        running
            .tasks
            .push(tokio::spawn(self.memory.clone().run(rx)));
        let rx = running.shutdown.subscribe();
        running
            .tasks
            .push(tokio::spawn(self.impulses.clone().run(rx)));
        let rx = running.shutdown.subscribe();
        running
            .tasks
            .push(tokio::spawn(self.garden.clone().run(rx)));
        running
    }

    /// Starts only the attention dispatcher; tests drive the ticks themselves.
    pub fn start_spine(self: &Arc<Self>) -> Running {
        let (shutdown, rx) = watch::channel(false);
        self.journal
            .record(Entry::new(Kind::System, "started").reason(format!(
                "ambient {} with data in {}",
                env!("CARGO_PKG_VERSION"),
                self.data_dir.display()
            )));
        for notice in &self.notices {
            tracing::info!("{notice}");
        }
        let tasks = vec![tokio::spawn(self.spine.clone().run(rx))];
        Running {
            shutdown,
            tasks,
            journal: self.journal.clone(),
            lock: None,
        }
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
    /// Starts one more loop, stopped with the others (a front end's own, like
    /// the settings watcher).
    pub fn spawn<F>(&mut self, task: impl FnOnce(watch::Receiver<bool>) -> F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let rx = self.shutdown.subscribe();
        self.tasks.push(tokio::spawn(task(rx)));
    }

    /// Signals every loop to stop and waits for work in flight to finish.
    pub async fn stop(self) {
        // Harmless: it fails only when every loop has already stopped.
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            // Harmless: a task that panicked has already reported it; stopping goes on.
            let _ = task.await;
        }
        self.journal.record(Entry::new(Kind::System, "stopped"));
    }
}
