//! An executive wired to a scripted model server, on a manual clock.

use std::sync::Arc;

use ambient::clock::{Chance, ManualClock};
use ambient::executive::{Executive, Prompts};
use ambient::journal::Journal;
use ambient::settings::{ProviderKind, Secrets, Settings, SettingsService};
use ambient::store::Store;

use super::model_server::ModelServer;

pub struct Fixture {
    pub exec: Arc<Executive>,
    pub store: Store,
    pub clock: Arc<ManualClock>,
    pub journal: Journal,
    pub server: ModelServer,
}

/// Settings every executive test starts from: no Ollama probing, fast timeouts.
pub fn base_settings() -> Settings {
    let mut s = Settings::default();
    s.executive.ollama_base_url = "http://127.0.0.1:9".into();
    s.executive.request_timeout_seconds = 5;
    s
}

/// The reply and ambient roles on the server's OpenAI-compatible API (local, so not pay-per-token).
pub async fn openai(mut settings: Settings) -> Fixture {
    let server = ModelServer::start();
    for role in [
        &mut settings.executive.roles.reply,
        &mut settings.executive.roles.ambient,
    ] {
        role.provider = ProviderKind::Openai;
        role.base_url = server.openai_base();
        role.model = "scripted-model".into();
    }
    build(
        settings,
        server,
        &[("OPENAI_API_KEY", "sk-test-key-123456")],
    )
    .await
}

/// The reply role on the server's Anthropic API.
pub async fn anthropic(mut settings: Settings) -> Fixture {
    let server = ModelServer::start();
    settings.executive.roles.reply.provider = ProviderKind::Anthropic;
    settings.executive.roles.reply.base_url = server.url.clone();
    build(
        settings,
        server,
        &[("ANTHROPIC_API_KEY", "sk-ant-test-123456")],
    )
    .await
}

pub async fn build(settings: Settings, server: ModelServer, vars: &[(&str, &str)]) -> Fixture {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let secrets =
        Secrets::from_lookup(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()));
    let clock = ManualClock::at_test_epoch();
    let store = Store::open_in_memory().unwrap();
    let journal = Journal::new(store.journal(), clock.clone());
    let service = Arc::new(SettingsService::new(
        settings,
        store.overrides(),
        clock.clone(),
    ));
    let exec = Executive::new(ambient::executive::Services {
        settings: service,
        secrets,
        store: (&store).into(),
        journal: journal.clone(),
        clock: clock.clone(),
        chance: Chance::seeded(1),
        prompts: Prompts::builtin(),
        stand_in: None,
    })
    .await;
    Fixture {
        exec: Arc::new(exec),
        store,
        clock,
        journal,
        server,
    }
}
