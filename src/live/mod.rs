//! Live settings: the settings file read again while the bot runs, and the
//! reflexes folder with it. One function, [`Live::reload`], serves every
//! trigger: the file watcher (`watch`), SIGHUP, and the owner's `/settings
//! reload` (Discord and console alike).
//!
//! A reload checks the file with the same code as `ambient settings check`
//! (`settings::check`): a file with any problem — a syntax error in a
//! half-saved file included — is refused as a whole, the settings in effect
//! stay, and the problems are logged and journaled in the words the check
//! prints. A valid file replaces the settings in the settings service; every
//! subsystem reads them there at each use (models, budgets, permissions,
//! initiative, discovery sources), and the few parts built from settings
//! are refreshed here: the executive looks for Ollama again, discovery
//! fetches new sources at once, reflexes are read again when their folder
//! or its files changed, and the loops' intervals count at once (they wait
//! on the settings service's changes). Settings bound at start
//! (`settings::diff::AT_NEXT_START`) keep their running values and are
//! reported as taking effect at the next start. The journal entry names
//! every changed path with both values, secret-shaped parts masked.
//!
//! It sits just below the composition root: `App::build` makes it from the
//! services it refreshes, and the front ends start it (`ambient run` watches
//! and listens for SIGHUP; the console reloads on `/settings reload` only).

mod reads;
pub(crate) mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::discovery::Discovery;
use crate::executive::Executive;
use crate::journal::Journal;
use crate::reflexes::Reflexes;
use crate::settings::check::Checked;
use crate::settings::diff::{self, Changed};
use crate::settings::load::DEFAULT_FILE;
use crate::settings::{Secrets, SettingsService, SettingsSource, validate};
use crate::vocab::journal::{Entry, Kind};
use reads::{FileSystem, NotRead, Reads};
use watch::{FileLook, FolderLook, Settle};

/// How long reading the settings file (or listing the reflexes folder) may
/// take. Past it the reload is refused, the settings in effect stay, and
/// the next trigger after that read has ended tries again (`reads`): a file
/// system that stops answering holds up no later reload, and no stop.
const READ_WITHIN: Duration = Duration::from_secs(10);

/// What asked for a reload; named in the journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The watcher saw the settings file or the reflexes folder change.
    Watched,
    /// SIGHUP.
    Signal,
    /// `/settings reload`, by this person.
    Command { by: String },
}

impl Trigger {
    fn describe(&self) -> String {
        match self {
            Trigger::Watched => "a change on disk".into(),
            Trigger::Signal => "SIGHUP".into(),
            Trigger::Command { by } => format!("/settings reload by {by}"),
        }
    }
}

/// What a front end turns on.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Watching {
    /// Poll the settings file and the reflexes folder.
    pub files: bool,
    /// Reload on SIGHUP.
    pub sighup: bool,
    /// Settings given on the command line (`ambient run --shards 0-3`):
    /// they win over the file at every reload, as they did at start.
    pub command_line: CommandLine,
}

/// Settings paths and the values the command line gave them for this
/// start. A reload lays them over the file before comparing, so a key the
/// file leaves out is neither reported as waiting for the next start nor
/// dropped.
pub(crate) type CommandLine = Vec<(String, Value)>;

/// What became of the settings file.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// The settings were built in code (replay, tests): there is no file.
    NoFile,
    /// The file has problems (as `settings check` words them); nothing changed.
    Refused(Vec<String>),
    Unchanged,
    /// `live` took effect now; `at_next_start` wait for the next start.
    Applied {
        live: Vec<String>,
        at_next_start: Vec<String>,
    },
}

/// One reload's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The file as people name it (`settings.json`).
    pub file: String,
    pub verdict: Verdict,
    /// The reflexes' summary, when their folder was read again.
    pub reflexes: Option<String>,
}

impl Outcome {
    /// The answer to `/settings reload`.
    pub(crate) fn lines(&self) -> Vec<String> {
        let file = &self.file;
        let mut lines = match &self.verdict {
            Verdict::NoFile => {
                vec!["These settings were not read from a file; there is nothing to reload.".into()]
            }
            Verdict::Refused(problems) => {
                let mut l = vec![format!(
                    "{file} was not applied; the settings in effect stay. Problems:"
                )];
                l.extend(problems.iter().cloned());
                l
            }
            Verdict::Unchanged => vec![format!(
                "{file}: nothing changed; the settings in effect stay."
            )],
            Verdict::Applied {
                live,
                at_next_start,
            } => {
                let mut l = if live.is_empty() {
                    vec![format!("{file} read: nothing changes now.")]
                } else {
                    let mut l = vec![format!("Reloaded {file}; in effect now:")];
                    l.extend(live.iter().cloned());
                    l
                };
                if !at_next_start.is_empty() {
                    l.push("Takes effect at the next start:".into());
                    l.extend(at_next_start.iter().cloned());
                }
                l
            }
        };
        lines.extend(self.reflexes.clone());
        lines
    }
}

/// What the last reload read, so the watcher knows what is new.
#[derive(Default)]
struct Seen {
    file: Option<FileLook>,
    reflexes: Option<FolderLook>,
}

pub struct Live {
    /// Where the running settings came from; `None` when built in code.
    source: Option<SettingsSource>,
    settings: Arc<SettingsService>,
    secrets: Secrets,
    journal: Journal,
    executive: Arc<Executive>,
    reflexes: Arc<Reflexes>,
    discovery: Arc<Discovery>,
    /// Held for a whole reload: one at a time, whoever asks.
    seen: Mutex<Seen>,
    /// The file system, read within [`READ_WITHIN`], one stuck read at most.
    reads: Reads,
    /// What the command line set for this start (see [`CommandLine`]).
    command_line: std::sync::Mutex<CommandLine>,
}

impl Live {
    pub(crate) fn new(
        source: Option<SettingsSource>,
        settings: Arc<SettingsService>,
        secrets: Secrets,
        journal: Journal,
        executive: Arc<Executive>,
        reflexes: Arc<Reflexes>,
        discovery: Arc<Discovery>,
    ) -> Self {
        // The reflexes were just read by `Reflexes::new`: that listing is the one in effect.
        let folder = watch::look_folder(&reflexes_dir(&settings));
        Self {
            source,
            settings,
            secrets,
            journal,
            executive,
            reflexes,
            discovery,
            seen: Mutex::new(Seen {
                // Unknown: the first look reloads, which is silent when nothing changed
                // (and catches an edit made while the bot was starting).
                file: None,
                reflexes: Some(folder),
            }),
            command_line: std::sync::Mutex::new(Vec::new()),
            reads: Reads::new(Arc::new(FileSystem), READ_WITHIN),
        }
    }

    /// Keeps `values` from the command line over the file at every reload.
    pub(crate) fn hold_command_line(&self, values: CommandLine) {
        *self
            .command_line
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = values;
    }

    fn holds_command_line(&self) -> bool {
        !self
            .command_line
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_empty()
    }

    /// The file a reload reads: the one the bot started from, or
    /// `settings.json` when it started on the defaults (it may appear).
    fn path(&self) -> Option<PathBuf> {
        match self.source.as_ref()? {
            SettingsSource::File(p) => Some(p.clone()),
            SettingsSource::Defaults => Some(PathBuf::from(DEFAULT_FILE)),
        }
    }

    /// Reads the settings file (and the reflexes folder) again and applies
    /// what is valid; see the module comment. Journals what it did.
    pub(crate) async fn reload(&self, trigger: Trigger) -> Outcome {
        let mut seen = self.seen.lock().await;
        let Some(path) = self.path() else {
            return Outcome {
                file: "(no file)".into(),
                verdict: Verdict::NoFile,
                reflexes: None,
            };
        };
        let explicit = matches!(self.source, Some(SettingsSource::File(_)));
        let (look, mut checked) = read_settings(&self.reads, &path, explicit).await;
        if let Some(look) = look {
            seen.file = Some(look);
        }
        if self.holds_command_line() {
            // `apply` checks them again with the command line's values laid over.
            checked.leave_to_the_command_line(&crate::settings::shards::KEYS);
        }
        let file = path.display().to_string();
        let refused: Vec<String> = checked
            .shown_problems()
            .iter()
            .map(|l| self.mask(l))
            .collect();
        let verdict = match checked.loaded.filter(|_| refused.is_empty()) {
            None => Verdict::Refused(refused),
            Some(loaded) => {
                self.apply(
                    &file,
                    serde_json::to_value(&loaded.settings).expect("settings serialize"),
                )
                .await
            }
        };
        if matches!(verdict, Verdict::Applied { .. }) {
            // Said at start for the file then; said again for a file that changed.
            for w in &checked.warnings {
                tracing::warn!("{}", self.mask(w));
            }
        }
        let reflexes = self.reflexes_again(&mut seen).await;
        drop(seen);
        let outcome = Outcome {
            file,
            verdict,
            reflexes,
        };
        self.record(&outcome, &trigger);
        outcome
    }

    /// Replaces the settings in effect with `new` (start-bound paths kept).
    async fn apply(&self, file: &str, mut new: Value) -> Verdict {
        let held = self
            .command_line
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        for (path, value) in held {
            crate::settings::paths::set(&mut new, &path, value);
        }
        let running = serde_json::to_value(&*self.settings.global()).expect("settings serialize");
        let all = diff::changes(&running, &new);
        if all.is_empty() {
            return Verdict::Unchanged;
        }
        diff::keep_start_bound(&mut new, &running);
        let (settings, problems) = validate(&new);
        if !problems.is_empty() {
            // Only a rule tying a live key to a start-bound one could say no here.
            return Verdict::Refused(
                problems
                    .iter()
                    .map(|p| {
                        self.mask(&format!(
                            "{file}: {p} (with the settings that wait for the next start kept)"
                        ))
                    })
                    .collect(),
            );
        }
        let (at_next_start, live): (Vec<Changed>, Vec<Changed>) =
            all.into_iter().partition(|c| diff::bound_at_start(&c.path));
        if !live.is_empty() {
            self.settings.replace_global(settings);
            self.refresh(&live).await;
        }
        Verdict::Applied {
            live: live
                .iter()
                .map(|c| diff::describe(c, &self.secrets))
                .collect(),
            at_next_start: at_next_start
                .iter()
                .map(|c| diff::describe(c, &self.secrets))
                .collect(),
        }
    }

    /// The parts built from settings, brought up to date with `changed`.
    async fn refresh(&self, changed: &[Changed]) {
        let touched = |prefix: &str| changed.iter().any(|c| c.path.starts_with(prefix));
        if touched("executive.") {
            self.executive.look_again().await;
            for notice in self.executive.unavailable_summary() {
                tracing::warn!("after the reload: {notice}");
            }
        }
        if touched("initiative.discovery.") || touched("network.") {
            self.discovery.poke();
        }
    }

    /// Reads the reflexes again if their folder (or which folder) changed;
    /// a folder not read now is looked at again at the next reload.
    async fn reflexes_again(&self, seen: &mut Seen) -> Option<String> {
        let dir = reflexes_dir(&self.settings);
        let Ok(now) = self.reads.read(move |disk| disk.look_folder(&dir)).await else {
            return None;
        };
        if seen.reflexes.as_ref() == Some(&now) {
            return None;
        }
        seen.reflexes = Some(now);
        self.reflexes.reload();
        Some(self.reflexes.summary())
    }

    fn mask(&self, text: &str) -> String {
        diff::mask(&self.secrets.redact(text))
    }

    /// The journal entries and log lines for one reload.
    fn record(&self, o: &Outcome, trigger: &Trigger) {
        let why = trigger.describe();
        log(&o.verdict, &why);
        if let Some(entry) = settings_entry(o, trigger) {
            self.journal.record(entry);
        }
        if let Some(summary) = &o.reflexes {
            tracing::info!(trigger = %why, "{summary}");
            self.journal.record(
                Entry::new(Kind::Reflex, "reflexes read again").reason(format!("{why}; {summary}")),
            );
        }
    }

    /// Watches until `shutdown`: polls the files and/or listens for SIGHUP.
    /// A look or a reload under way is dropped when the stop comes: the
    /// stop never waits on a file.
    pub(crate) async fn run(
        self: Arc<Self>,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
        watching: Watching,
    ) {
        let mut hangups = if watching.sighup {
            hangup_signal()
        } else {
            None
        };
        let mut poll = tokio::time::interval(watch::POLL_EVERY);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut file, mut folder) = (Settle::default(), Settle::default());
        loop {
            let trigger = tokio::select! {
                _ = poll.tick(), if watching.files => Trigger::Watched,
                _ = next_hangup(&mut hangups) => Trigger::Signal,
                _ = shutdown.changed() => return,
            };
            let work = async {
                if trigger == Trigger::Signal || self.changed_on_disk(&mut file, &mut folder).await
                {
                    self.reload(trigger).await;
                }
            };
            tokio::select! {
                () = work => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// Whether the file or the folder settled on something the last reload did not read.
    async fn changed_on_disk(
        &self,
        file: &mut Settle<FileLook>,
        folder: &mut Settle<FolderLook>,
    ) -> bool {
        let Some(path) = self.path() else {
            return false;
        };
        let dir = reflexes_dir(&self.settings);
        let look = self
            .reads
            .read(move |disk| (disk.look_file(&path), disk.look_folder(&dir)))
            .await;
        let (f, d) = match look {
            Ok(seen) => seen,
            Err(NotRead::Late(_)) => {
                tracing::warn!(
                    "the settings file or the reflexes folder was not read within {} s; \
                     looking again once that read has ended",
                    READ_WITHIN.as_secs()
                );
                return false;
            }
            Err(NotRead::Waiting(_)) => return false,
        };
        let seen = self.seen.lock().await;
        let file_new = file.feed(f).is_some_and(|f| seen.file.as_ref() != Some(f));
        let folder_new = folder
            .feed(d)
            .is_some_and(|d| seen.reflexes.as_ref() != Some(d));
        file_new || folder_new
    }
}

fn log(verdict: &Verdict, why: &str) {
    match verdict {
        Verdict::Refused(problems) => {
            for p in problems {
                tracing::warn!(trigger = %why, "settings not applied: {p}");
            }
        }
        Verdict::Applied {
            live,
            at_next_start,
        } => {
            for line in live {
                tracing::info!(trigger = %why, "setting changed: {line}");
            }
            for line in at_next_start {
                tracing::info!(trigger = %why, "setting changed, takes effect at the next start: {line}");
            }
        }
        Verdict::NoFile | Verdict::Unchanged => {}
    }
}

/// The journal's words for what became of the file (none for a look that found nothing new).
fn settings_entry(o: &Outcome, trigger: &Trigger) -> Option<Entry> {
    let why = trigger.describe();
    let file = &o.file;
    match &o.verdict {
        Verdict::NoFile => None,
        Verdict::Unchanged if *trigger == Trigger::Watched => None,
        Verdict::Unchanged => Some(
            Entry::new(
                Kind::Settings,
                format!("{file} read again: nothing changed"),
            )
            .reason(why),
        ),
        Verdict::Refused(problems) => Some(
            Entry::new(
                Kind::Settings,
                format!("{file} not applied: the settings in effect stay"),
            )
            .reason(format!("{why}; {}", problems.join("\n")))
            .data(json!({"file": file, "trigger": why, "problems": problems})),
        ),
        Verdict::Applied {
            live,
            at_next_start,
        } => {
            let mut parts = live.clone();
            parts.extend(
                at_next_start
                    .iter()
                    .map(|l| format!("{l} (takes effect at the next start)")),
            );
            let summary = if live.is_empty() {
                format!(
                    "{file} read: {} change(s) wait for the next start",
                    parts.len()
                )
            } else {
                format!("settings reloaded from {file}: {} changed", parts.len())
            };
            Some(
                Entry::new(Kind::Settings, summary)
                    .reason(format!("{why}; {}", parts.join("; ")))
                    .data(json!({
                        "file": file, "trigger": why,
                        "changed": live, "atNextStart": at_next_start,
                    })),
            )
        }
    }
}

/// The settings file as a reload reads it: what the watcher compares
/// (`None` when it was not read) and what the check found. A file not read
/// in time, or while an earlier read is stuck, is a problem of its own.
async fn read_settings(
    reads: &Reads,
    path: &std::path::Path,
    explicit: bool,
) -> (Option<FileLook>, Checked) {
    let p = path.to_path_buf();
    let read = reads
        .read(move |disk| {
            (
                disk.look_file(&p),
                disk.check(explicit.then_some(p.as_path())),
            )
        })
        .await;
    match read {
        Ok((look, checked)) => (Some(look), checked),
        Err(why) => (
            None,
            Checked {
                loaded: None,
                problems: vec![format!("{}: {why}", path.display())],
                warnings: Vec::new(),
            },
        ),
    }
}

fn reflexes_dir(settings: &SettingsService) -> PathBuf {
    PathBuf::from(&settings.global().reflexes.dir)
}

#[cfg(unix)]
type Hangups = tokio::signal::unix::Signal;
#[cfg(not(unix))]
type Hangups = std::convert::Infallible;

#[cfg(unix)]
fn hangup_signal() -> Option<Hangups> {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP; reload with /settings reload");
            None
        }
    }
}

#[cfg(not(unix))]
fn hangup_signal() -> Option<Hangups> {
    None
}

/// The next SIGHUP; never, without a listener.
async fn next_hangup(hangups: &mut Option<Hangups>) {
    #[cfg(unix)]
    if let Some(h) = hangups {
        if h.recv().await.is_some() {
            return;
        }
        // The signal stream ended: nothing more will come.
        *hangups = None;
    }
    #[cfg(not(unix))]
    let _ = hangups;
    std::future::pending::<()>().await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::reads::tests::HeldDisk;
    use super::*;

    /// A reload's read of a settings file on a mount that stopped answering:
    /// refused with why, then refused without a new read while the first is
    /// stuck, then read and checked once it ends.
    #[tokio::test]
    async fn a_settings_file_on_a_stuck_disk_is_refused_until_its_read_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{}").unwrap();
        let disk = Arc::new(HeldDisk::default());
        let reads = Reads::new(disk.clone(), Duration::from_millis(50));
        let held = disk.hold();

        let (look, checked) = read_settings(&reads, &path, true).await;
        assert_eq!(look, None);
        assert!(checked.loaded.is_none());
        assert_eq!(
            checked.problems,
            [format!(
                "{}: not read within 50 ms (the file system did not answer)",
                path.display()
            )]
        );
        for _ in 0..10 {
            let (look, checked) = read_settings(&reads, &path, true).await;
            assert_eq!(look, None);
            let shown = format!("{}: not read: a read started ", path.display());
            assert!(checked.problems[0].starts_with(&shown), "{checked:?}");
            assert!(checked.problems[0].ends_with("it is read again once that one ends"));
        }
        assert_eq!(
            disk.reads.load(Ordering::SeqCst),
            1,
            "no read while one is stuck"
        );

        drop(held);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let (look, checked) = loop {
            let (look, checked) = read_settings(&reads, &path, true).await;
            if look.is_some() || std::time::Instant::now() > deadline {
                break (look, checked);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(look, Some(FileLook::Content(b"{}".to_vec())));
        assert!(checked.problems.is_empty(), "{:?}", checked.problems);
        assert!(checked.loaded.is_some());
        assert_eq!(disk.reads.load(Ordering::SeqCst), 2);
    }
}
