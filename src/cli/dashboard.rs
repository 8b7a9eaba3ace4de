//! `ambient dashboard`: the dashboard on its own, read from the store (the
//! bot need not run in this process; `dashboard.enabled` serves it from
//! `ambient run` and `ambient console` instead).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};

use super::out::outln;
use crate::dashboard::{self, Site};
use crate::settings::{DashboardSettings, Secrets};

pub(crate) async fn dashboard(
    settings: Option<&Path>,
    bind: Option<&str>,
    new_token: bool,
) -> anyhow::Result<ExitCode> {
    let loaded = match super::load_valid(settings)? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    let addr = match bind {
        Some(b) => DashboardSettings {
            bind: b.to_string(),
            ..Default::default()
        }
        .address()
        .map_err(|e| anyhow!("--bind: {e}"))?,
        None => loaded
            .settings
            .dashboard
            .address()
            .map_err(|e| anyhow!("dashboard.bind: {e}"))?,
    };
    let data_dir = loaded.settings.storage.data_dir.clone();
    // Its forget-me reaches the bot's other processes like the bot's own.
    let store = crate::app::attach(super::journal::open_existing(&data_dir)?, &loaded.settings)
        .context("cannot open the people ledger (storage.sharedDir)")?;
    let site = Site::standalone(loaded.settings, Secrets::from_env(), (&store).into()).await?;
    let served = dashboard::start(site, addr, Path::new(&data_dir), new_token).await?;
    // Listening for the stop before saying where it serves: whoever reads the
    // address may stop it at once.
    let signalled = crate::discord::wait_for_signal();
    // The dashboard serves whether or not anyone reads where: a reader gone
    // (`ambient dashboard | head -1`) must not stop it. The token, if this
    // was its one showing, can be made again with --new-token.
    let mut said = served.announce();
    said.push("Ctrl-C stops it.".into());
    for line in said {
        if let Err(e) = outln!("{line}") {
            tracing::warn!(error = %e, "the dashboard's address was not shown");
            break;
        }
    }
    signalled.await;
    served.stop().await;
    Ok(ExitCode::SUCCESS)
}
