//! `ambient doctor`'s checks: is this setup able to run the bot, and if not,
//! what to do about it — one [`Check`] per thing looked at, each with a
//! status and, when it is not fine, the fix in one sentence.
//!
//! Each family of checks has its own file: `local` (settings, the data
//! directory, free disk, the database), `discord` (the token, the clock,
//! intents, channel permissions, slash commands — against the real API, or
//! whatever `discord.apiBaseUrl` names), `feeds` (discovery sources, through
//! the guarded fetcher), `models` (each role's endpoint makes a forced tool
//! call), `shared` (the PostgreSQL database of `storage.sharedUrl`), with `perms` the pure computation of a member's
//! permissions in a channel as Discord does it. The CLI only prints a
//! [`Report`]; nothing here writes to a terminal.

pub mod discord;
pub mod feeds;
pub mod local;
pub mod models;
pub mod perms;
pub mod shared;

use std::path::Path;

use serde::Serialize;

use crate::settings::Secrets;
use crate::settings::check::Checked;

/// How one check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// Fine.
    Ok,
    /// Works, but worth a look (low disk, a database not made yet, a check skipped).
    Warn,
    /// Would keep the bot from working.
    Fail,
}

impl Status {
    /// The mark a person reads at the start of the line.
    pub(crate) fn mark(self) -> &'static str {
        match self {
            Status::Ok => "✓",
            Status::Warn => "!",
            Status::Fail => "✗",
        }
    }
}

/// One thing looked at: what, how it came out, what was seen, and what to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    pub name: String,
    pub status: Status,
    pub detail: String,
    /// One sentence; only for a `warn` or a `fail`.
    pub fix: Option<String>,
}

impl Check {
    pub(crate) fn ok(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(crate) fn warn(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::with_fix(Status::Warn, name.into(), detail.into(), fix.into())
    }

    pub(crate) fn fail(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::with_fix(Status::Fail, name.into(), detail.into(), fix.into())
    }

    fn with_fix(status: Status, name: String, detail: String, fix: String) -> Self {
        Self {
            name,
            status,
            detail,
            fix: Some(fix),
        }
    }
}

/// Every check, in the order they ran.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// True when nothing would keep the bot from working (warnings allowed).
    pub(crate) fn healthy(&self) -> bool {
        self.checks.iter().all(|c| c.status != Status::Fail)
    }
}

/// Reads the bytes free to an unprivileged user on the filesystem holding a
/// path (`statvfs`'s `f_bavail × f_frsize`); a test passes its own.
pub(crate) type FreeSpace<'a> = &'a dyn Fn(&Path) -> std::io::Result<u64>;

/// What the doctor needs from outside the settings.
pub(crate) struct Options<'a> {
    /// The names of the slash commands the bot registers (its front end knows them).
    pub commands: Vec<String>,
    pub free_space: FreeSpace<'a>,
    /// Skip the model calls (`--no-model`): they cost a few tokens each.
    pub no_model: bool,
}

/// Runs every check against the settings `checked` read and the secrets in
/// the environment. Settings that could not be read at all leave only that
/// check: every other one depends on them.
pub(crate) async fn examine(checked: &Checked, secrets: &Secrets, options: &Options<'_>) -> Report {
    let mut checks = vec![local::settings(checked)];
    let Some(loaded) = &checked.loaded else {
        return Report { checks };
    };
    let settings = &loaded.settings;
    let data_dir = Path::new(&settings.storage.data_dir);
    checks.push(local::data_dir(data_dir));
    checks.push(local::disk(data_dir, options.free_space));
    checks.push(local::database(data_dir));
    checks.extend(shared::check(settings, secrets).await);
    checks.extend(discord::checks(settings, secrets, &options.commands).await);
    checks.extend(feeds::checks(settings).await);
    checks.extend(models::checks(settings, secrets, options.no_model).await);
    Report { checks }
}
