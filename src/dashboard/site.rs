//! What the dashboard's pages read from: the store and the core services,
//! either those of a running bot (`ambient run`, `ambient console`), which
//! also know what is in flight, or built from the store alone (`ambient
//! dashboard`), as `ambient status` does.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use chrono::{DateTime, Utc};

use crate::app::App;
use crate::clock::{Chance, SharedClock, SystemClock};
use crate::commands::status::Sources;
use crate::dashboard::Stores;
use crate::discovery::Discovery;
use crate::executive::{Executive, Prompts};
use crate::ids::{ChannelId, GuildId};
use crate::journal::Journal;
use crate::memory::Memory;
use crate::settings::{Secrets, Settings, SettingsService};
use crate::store::StoreError;

pub struct Site {
    pub store: Stores,
    pub settings: Arc<SettingsService>,
    pub executive: Arc<Executive>,
    pub memory: Arc<Memory>,
    pub discovery: Arc<Discovery>,
    pub clock: SharedClock,
    /// The running bot serving the dashboard, if it is one.
    pub app: Option<Arc<App>>,
}

impl Site {
    /// The running bot's services.
    pub fn of_app(app: &Arc<App>) -> Self {
        Self {
            store: app.stores(),
            settings: app.settings.clone(),
            executive: app.executive.clone(),
            memory: app.memory.clone(),
            discovery: app.discovery.clone(),
            clock: app.clock.clone(),
            app: Some(app.clone()),
        }
    }

    /// Services over `store` alone, with no bot running in this process.
    pub async fn standalone(
        settings: Settings,
        secrets: Secrets,
        store: Stores,
    ) -> anyhow::Result<Self> {
        let clock: SharedClock = Arc::new(SystemClock);
        let prompts = Prompts::load(Path::new(&settings.executive.prompts_dir))
            .context("a prompt template is broken (executive.promptsDir)")?;
        let service = Arc::new(SettingsService::new(
            settings,
            store.overrides.clone(),
            clock.clone(),
        ));
        let journal = Journal::new(store.journal.clone(), clock.clone());
        let executive = Arc::new(
            Executive::new(crate::executive::Services {
                settings: service.clone(),
                secrets,
                store: (&store).into(),
                journal: journal.clone(),
                clock: clock.clone(),
                chance: Chance::from_entropy(),
                prompts,
                stand_in: None,
            })
            .await,
        );
        let memory = Memory::new(
            (&store).into(),
            service.clone(),
            journal.clone(),
            clock.clone(),
            executive.clone(),
        );
        let discovery = Discovery::new(service.clone(), (&store).into(), journal, clock.clone());
        Ok(Self {
            store,
            settings: service,
            executive,
            memory,
            discovery,
            clock,
            app: None,
        })
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// What the status widget reads, for the pages that show its parts.
    pub(crate) fn sources(&self) -> Sources<'_> {
        Sources {
            store: (&self.store).into(),
            settings: &self.settings,
            executive: &self.executive,
            now: self.now(),
            running: self.app.as_deref(),
        }
    }

    /// Every server the bot knows, by name: an error, not an empty list,
    /// when they cannot be read, so that a page shows it.
    pub(crate) fn guilds(&self) -> Result<Vec<(GuildId, String)>, StoreError> {
        self.store.messages.known_guilds()
    }

    /// A server's name, or its id when the name is unknown.
    pub(crate) fn guild_name(&self, guild: GuildId) -> String {
        self.store
            .messages
            .guild_name(guild)
            .ok()
            .flatten()
            .unwrap_or_else(|| guild.to_string())
    }

    /// `#name`, or `#id` when the name is unknown.
    pub(crate) fn channel_label(&self, channel: ChannelId) -> String {
        let name = self
            .store
            .messages
            .channel_name(channel)
            .ok()
            .flatten()
            .unwrap_or_else(|| channel.to_string());
        format!("#{name}")
    }

    /// Where the dashboard's figures come from, said at the foot of each page.
    pub(crate) fn served_by(&self) -> &'static str {
        if self.app.is_some() {
            "served by the running bot"
        } else {
            "read from the store (the bot is not running in this process: what only a running bot knows, such as a provider's rate-limit window, is not shown)"
        }
    }
}
