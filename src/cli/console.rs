//! `ambient console`: builds the app with the console transport and runs the REPL.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::app::{App, Parts};
use crate::clock::{Chance, ShiftedClock};
use crate::console::{self, ConsoleOut, ConsoleTransport};
use crate::settings::Secrets;
use crate::store::lock::DataLock;

pub async fn console(
    settings: Option<&Path>,
    json: bool,
    channel: String,
    user: Option<String>,
) -> anyhow::Result<ExitCode> {
    let loaded = match super::load_valid(settings)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    // One bot per data directory: refused before anything touches the data.
    let lock = DataLock::acquire(Path::new(&loaded.settings.storage.data_dir))?;
    let out = ConsoleOut::new(json);
    let clock = Arc::new(ShiftedClock::default());
    let me = console::bot_author(&loaded.settings.bot.name);
    let app = App::build(
        Parts {
            settings: loaded.settings,
            secrets: Secrets::from_env(),
            clock: clock.clone(),
            chance: Chance::from_entropy(),
        },
        |store| {
            Arc::new(ConsoleTransport::new(
                out.clone(),
                store.clone(),
                clock.clone(),
                me,
            ))
        },
    )
    .await?;
    let running = app.start(lock);
    let user = user
        .or_else(|| std::env::var("USER").ok())
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "you".into());
    let result = console::run(
        app,
        out,
        console::Options {
            user,
            channel,
            clock,
        },
    )
    .await;
    running.stop().await;
    result.map(|()| ExitCode::SUCCESS)
}
