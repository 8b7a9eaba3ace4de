//! `ambient console`: builds the app with the console transport and runs the REPL.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::app::{App, Parts};
use crate::clock::{Chance, ShiftedClock};
use crate::console::{self, ConsoleOut, ConsoleTransport};
use crate::settings::Secrets;
use crate::store::lock::DataLock;

pub(crate) async fn console(
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
            settings_source: Some(loaded.source),
            secrets: Secrets::from_env(),
            clock: clock.clone(),
            chance: Chance::from_entropy(),
            stand_in: None,
            sharing: crate::store::Sharing::Shared,
        },
        |store| {
            Arc::new(ConsoleTransport::new(
                out.clone(),
                store.messages(),
                clock.clone(),
                me,
            ))
        },
    )
    .await?;
    let dashboard = crate::dashboard::start_for(&app).await?;
    let running = app.start(lock);
    let user = user.unwrap_or_else(default_user);
    let result = console::run(
        app,
        out,
        console::Options {
            user,
            channel,
            clock,
            notices: dashboard.iter().flat_map(|d| d.announce()).collect(),
        },
    )
    .await;
    match result {
        // Ctrl-C does not wait for an answer still on its way: words are
        // recorded before they are sent, so one cut short is never half-said.
        Ok(console::Ended::Interrupted) => {
            running
                .stop_by(Some(tokio::time::Instant::now() + INTERRUPTED_STOP_WITHIN))
                .await
        }
        Ok(console::Ended::Done) | Err(_) => running.stop().await,
    }
    if let Some(d) = dashboard {
        d.stop().await;
    }
    result.map(|_| ExitCode::SUCCESS)
}

/// How long the loops get to stop after Ctrl-C.
const INTERRUPTED_STOP_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The console's name for the person at the terminal without `--user`:
/// `$USER`, `$LOGNAME`, the login name of this process's user, or "operator".
/// When it is not the obvious one, stderr says how to choose another (stdout
/// may be JSON for a script).
fn default_user() -> String {
    let from_env = ["USER", "LOGNAME"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .map(|u| u.trim().to_string())
        .find(|u| !u.is_empty());
    if let Some(name) = from_env {
        return name;
    }
    let (name, from) = match login_name() {
        Some(name) => (name, "your login name, as $USER is not set"),
        None => ("operator".to_string(), "$USER is not set"),
    };
    eprintln!("ambient console: you are {name:?} ({from}); choose a name with --user NAME");
    name
}

/// The login name of this process's user without libc: the owner of
/// `/proc/self` looked up in `/etc/passwd` (Linux; elsewhere, none).
#[cfg(unix)]
fn login_name() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd_name(&passwd, uid)
}

#[cfg(not(unix))]
fn login_name() -> Option<String> {
    None
}

/// The name of `uid` in `/etc/passwd` text (`name:x:uid:gid:…`).
fn passwd_name(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_login_name_comes_from_the_passwd_line_with_the_uid() {
        let passwd =
            "root:x:0:0:root:/root:/bin/sh\n# comment\nada:x:1000:1000::/home/ada:/bin/sh\n";
        assert_eq!(super::passwd_name(passwd, 1000).as_deref(), Some("ada"));
        assert_eq!(super::passwd_name(passwd, 0).as_deref(), Some("root"));
        assert_eq!(super::passwd_name(passwd, 4242), None);
    }
}
