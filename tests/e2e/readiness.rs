//! `/readyz` of the real `ambient run` when its store cannot be written,
//! the two ways it really happens:
//! - another process holds SQLite's write lock on the bot's database (a
//!   `sqlite3` shell left in a transaction, a backup tool), and the bot's
//!   write waits out its patience;
//! - the disk is full: the lock is free, but a commit finds no room.
//!
//! Readiness says so, naming the store, and comes back once the lock is let
//! go or there is room again. We run as root, so a read-only mode on the
//! files would not stop a write.

use std::time::Duration;

use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, FakeDiscord, GENERAL};
use crate::support::health::{endpoints_of, wait_status};
use crate::support::home::Home;
use crate::support::tmpfs::Tmpfs;

/// Waits (bounded) until `/readyz` answers `status`; its body then.
fn readyz_becomes(addr: &str, status: u16) -> String {
    wait_status(addr, "/readyz", status)
}

#[test]
fn readiness_is_503_naming_the_store_while_another_process_holds_its_write_lock() {
    let bot = Bot::start_on(
        FakeDiscord::start(),
        json!({"metrics": {"bind": "127.0.0.1:0"}}),
        &[],
        "ambient=info,serenity=warn",
    );
    let addr = endpoints_of(&bot);
    assert_eq!(readyz_becomes(&addr, 200), "ready\n");

    let other = rusqlite::Connection::open(bot.home.data_dir().join("ambient.db")).unwrap();
    // The bot may be between writes of a group: wait for it to commit.
    other.busy_timeout(Duration::from_secs(10)).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let why = readyz_becomes(&addr, 503);
    assert!(
        why.starts_with("store: not writable: ") && why.contains("database is locked"),
        "{why}"
    );

    other.execute_batch("ROLLBACK").unwrap();
    assert_eq!(readyz_becomes(&addr, 200), "ready\n");
}

#[test]
fn readiness_is_503_naming_the_lost_writes_while_the_disk_is_full() {
    let mut disk = None;
    let bot = Bot::spawn_with(
        FakeDiscord::start(),
        json!({"metrics": {"bind": "127.0.0.1:0"}}),
        &[],
        "ambient=info,serenity=warn",
        |settings| {
            let home = Home::new(settings);
            disk = Tmpfs::mount(&home.data_dir());
            home
        },
    );
    let Some(disk) = disk else {
        eprintln!("SKIPPED: no tmpfs can be mounted here, so no disk can be filled");
        return;
    };
    bot.wait_registered();
    bot.wait_guild(crate::support::fake_discord::GUILD);
    let addr = endpoints_of(&bot);
    assert_eq!(readyz_becomes(&addr, 200), "ready\n");

    disk.leave_free(0);
    // The log grows only once its earlier frames are in use: talk until a
    // commit needs room (bounded).
    let said = "could not commit a group of writes";
    for i in 0..400 {
        if bot.log().contains(said) {
            break;
        }
        bot.discord.say(
            GENERAL,
            ALICE,
            &format!("{i} {}", "filling the disk ".repeat(100)),
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(bot.log().contains(said), "no commit failed:\n{}", bot.log());
    let why = readyz_becomes(&addr, 503);
    assert!(
        why.starts_with("store: not writable: the last group of writes could not be committed")
            && why.contains("full"),
        "{why}"
    );

    disk.leave_free(64 << 20);
    bot.discord.say(GENERAL, ALICE, "room again");
    assert_eq!(readyz_becomes(&addr, 200), "ready\n");
    drop(disk);
}
