//! Issue 35, servers and signals: what `ambient run` serves and how it
//! stops. A FIFO swapped in for the settings file does not wedge live
//! reloads; SIGTERM ends the process whatever the gateway is doing; the
//! dashboard's half-sent requests are closed and never starve the bot.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ambient::journal::{Entry, Filter, Kind};
use serde_json::json;

use crate::support::bot::Bot;

/// Polls the bot's journal (for up to `secs`) until an entry of `kind` satisfies `found`.
fn wait_entry(bot: &Bot, kind: Kind, secs: u64, found: impl Fn(&Entry) -> bool) -> Option<Entry> {
    let store = bot.store();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        let entries = store
            .journal_query(&Filter {
                kinds: vec![kind],
                ..Default::default()
            })
            .unwrap();
        if let Some(e) = entries.into_iter().find(|e| found(e)) {
            return Some(e);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Makes a FIFO at `path` (nobody ever opens it for writing).
fn mkfifo(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path for the length of the call.
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(made, 0, "mkfifo {}", path.display());
}

/// The settings file and a FIFO renamed over each other as fast as a
/// thread can while SIGHUPs ask for reloads: some reload sees a plain file
/// and then opens the FIFO (3 times in 10 in the issue), which blocked for
/// ever — no reload after it, and no stop. Now the FIFO is refused by name,
/// a good file afterwards is applied, and SIGTERM stops the bot.
#[test]
fn a_fifo_swapped_in_for_the_settings_file_is_refused_and_reloads_go_on() {
    let mut bot = Bot::start(json!({}));
    let path = bot.home.path().join("settings.json");
    let good = std::fs::read_to_string(&path).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, path) = (stop.clone(), path.clone());
        let (fifo, file) = (path.with_extension("fifo"), path.with_extension("tmp"));
        std::thread::spawn(move || {
            let mut flips = 0u64;
            // Ends on the plain file, so the path is a file once it stops.
            while !stop.load(Ordering::Relaxed) {
                mkfifo(&fifo);
                std::fs::rename(&fifo, &path).unwrap();
                std::fs::write(&file, &good).unwrap();
                std::fs::rename(&file, &path).unwrap();
                flips += 1;
            }
            flips
        })
    };
    for _ in 0..60 {
        bot.signal("HUP");
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 100, "only {flips} swaps");

    let refused = wait_entry(&bot, Kind::Settings, 10, |e| {
        e.summary.contains("not applied") && e.reason.contains("a FIFO (named pipe)")
    });
    assert!(
        refused.is_some(),
        "no reload refused the FIFO by name:\n{}",
        bot.log()
    );
    bot.home
        .edit_settings(json!({"initiative": {"text": {"eagerness": 42}}}));
    bot.signal("HUP");
    let applied = wait_entry(&bot, Kind::Settings, 30, |e| {
        e.summary.starts_with("settings reloaded") && e.reason.contains("eagerness")
    });
    assert!(
        applied.is_some(),
        "the good file was not applied after the FIFO:\n{}",
        bot.log()
    );
    bot.signal("TERM");
    let exit = bot.wait_exit(Duration::from_secs(10));
    assert!(
        exit.is_some_and(|s| s.success()),
        "SIGTERM did not stop the bot after the FIFO ({exit:?}):\n{}",
        bot.log()
    );
}
