//! Backups while running and restoring them: `ambient backup` beside a bot
//! that stores a stream, `ambient restore` and what it refuses, scheduled
//! backups and their settings.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use ambient::ids::MessageId;
use ambient::store::Store;
use ambient::store::migrations;
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::support::home::{Home, LiveConsole};
use crate::support::readme;

/// Every file under `dir` with a digest of its bytes, by path: what "nothing
/// changed" compares. The lock file (it holds the pid of whoever last tried
/// the lock) and SQLite's shared-memory index (a cache any reader rewrites)
/// are not the data.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, u64> {
    use std::hash::{Hash, Hasher};
    let mut out = BTreeMap::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if !p.ends_with("ambient.lock") && !p.ends_with("ambient.db-shm") {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&p).unwrap().hash(&mut h);
                out.insert(p.clone(), h.finish());
            }
        }
    }
    out
}

/// The names in `dir` (the home: the data directory and anything beside it).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn integrity(db: &Path) -> String {
    Connection::open(db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A home whose data directory holds `lines` said in the console, and a
/// state file; the console has ended.
fn home_with(lines: &[&str]) -> Home {
    let home = Home::new(json!({}));
    let (events, out) = home.console(&format!("{}\n", lines.join("\n")));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        events.iter().filter(|e| e["event"] == "stored").count(),
        lines.len()
    );
    let notes = home.data_dir().join("state/guilds/1");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("today.txt"), "water the plants").unwrap();
    home
}

#[test]
fn a_backup_taken_while_a_bot_stores_a_stream_restores_every_acknowledged_message() {
    const SENT: usize = 1500;
    let home = Home::new(json!({}));
    let LiveConsole {
        mut child,
        mut stdin,
        stdout: events,
    } = home.spawn_console();
    let writer = std::thread::spawn(move || {
        for i in 0..SENT {
            writeln!(stdin, "line {i}").unwrap();
            if i % 50 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        // The console ends at the end of its input.
    });
    let file = home.path().join("backups/during.backup");
    let mut before: Vec<MessageId> = Vec::new();
    let mut after = 0;
    let mut backup = None;
    for line in events.lines() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["event"] != "stored" {
            continue;
        }
        let id = MessageId(v["id"].as_str().unwrap().parse().unwrap());
        if backup.is_none() {
            before.push(id);
            if before.len() == 300 {
                // Every message acknowledged so far is in `before`; the
                // bot holds the data lock and goes on storing.
                backup = Some(
                    home.command(&["backup", file.to_str().unwrap()])
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap(),
                );
            }
        } else {
            after += 1;
        }
    }
    writer.join().unwrap();
    let out = backup.unwrap().wait_with_output().unwrap();
    assert!(child.wait().unwrap().success());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Backed up"), "{}", stdout(&out));
    assert!(after > 0, "the stream went on after the backup began");

    let restored = home.run(&["restore", file.to_str().unwrap()]);
    assert!(restored.status.success(), "{}", stderr(&restored));
    assert_eq!(integrity(&home.data_dir().join("ambient.db")), "ok");
    let store = Store::open(&home.data_dir()).unwrap();
    for (n, id) in before.iter().enumerate() {
        let row = store
            .messages()
            .message(*id)
            .unwrap()
            .unwrap_or_else(|| panic!("acknowledged message #{n} ({id}) is not in the backup"));
        assert_eq!(row.content, format!("line {n}"));
    }
    // The directory it replaced is kept beside it, whole.
    let previous = names(home.path())
        .into_iter()
        .find(|n| n.starts_with("data.before-restore-"))
        .expect("the replaced directory is kept");
    let old = Store::open(&home.path().join(previous)).unwrap();
    assert_eq!(
        old.messages()
            .message(*before.last().unwrap())
            .unwrap()
            .map(|m| m.content),
        Some(format!("line {}", before.len() - 1))
    );
}

#[test]
fn a_backup_restores_the_database_and_the_state_files_exactly_as_the_readme_shows() {
    let home = home_with(&["the plants need water", "and the cat wants food"]);
    let backup = readme::example("ambient backup ");
    let restore = readme::example("ambient restore ");
    let out = home.shell(&backup, &[]);
    assert!(out.status.success(), "{backup}: {}", stderr(&out));
    // What changes after the backup is what the restore takes back.
    std::fs::remove_dir_all(home.data_dir().join("state")).unwrap();
    let (_, later) = home.console("said after the backup\n");
    assert!(later.status.success());

    let out = home.shell(&restore, &[]);
    assert!(out.status.success(), "{restore}: {}", stderr(&out));
    assert!(stdout(&out).contains("1 state file(s)"), "{}", stdout(&out));
    assert_eq!(
        std::fs::read_to_string(home.data_dir().join("state/guilds/1/today.txt")).unwrap(),
        "water the plants"
    );
    let db = Connection::open(home.data_dir().join("ambient.db")).unwrap();
    let said: Vec<String> = db
        .prepare("SELECT content FROM messages ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(said, ["the plants need water", "and the cat wants food"]);
    // Restored, it is a database, not a backup: no backup tables, no mark.
    let tables: i64 = db
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'ambient_backup%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0);
    let app: i32 = db
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    assert_eq!(app, 0);
}

#[test]
fn restore_is_refused_while_a_bot_holds_the_data_directory_and_nothing_changes() {
    let home = home_with(&["before the backup"]);
    let file = home.path().join("b.backup");
    assert!(
        home.run(&["backup", file.to_str().unwrap()])
            .status
            .success()
    );
    let mut bot = home.spawn_console();
    bot.send("the bot is running");
    let id = bot.next_event("stored")["id"].as_str().unwrap().to_string();
    let around = names(home.path());
    let inside = names(&home.data_dir());

    let out = home.run(&["restore", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("(pid {})", bot.child.id())),
        "the refusal names the running bot: {err}"
    );
    assert!(err.contains("nothing was restored"), "{err}");
    assert_eq!(names(home.path()), around, "nothing was made beside it");
    assert_eq!(names(&home.data_dir()), inside);
    drop(bot.stdin);
    assert!(bot.child.wait().unwrap().success());
    let store = Store::open(&home.data_dir()).unwrap();
    let row = store
        .messages()
        .message(MessageId(id.parse().unwrap()))
        .unwrap();
    assert_eq!(
        row.map(|m| m.content).as_deref(),
        Some("the bot is running")
    );
}

#[test]
fn a_backup_of_a_newer_schema_is_refused_and_nothing_is_touched() {
    let home = home_with(&["kept as it is"]);
    let file = home.path().join("b.backup");
    assert!(
        home.run(&["backup", file.to_str().unwrap()])
            .status
            .success()
    );
    let newer = migrations::latest() + 1;
    Connection::open(&file)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let backup_bytes = std::fs::read(&file).unwrap();
    let data = snapshot(&home.data_dir());
    let around = names(home.path());

    let out = home.run(&["restore", "b.backup"]);
    assert_eq!(out.status.code(), Some(1));
    // As the README shows it, with this build's versions.
    let shown = readme::block("newer ambient is refused with both versions", "");
    let latest = migrations::latest();
    let expected = shown
        .trim()
        .replace("version 19", &format!("version {newer}"))
        .replace("version 18", &format!("version {latest}"));
    assert_eq!(stderr(&out).trim(), expected);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        backup_bytes,
        "the backup is untouched"
    );
    assert_eq!(
        snapshot(&home.data_dir()),
        data,
        "the data directory is untouched"
    );
    assert_eq!(names(home.path()), around, "nothing was left beside it");
}

/// Each file restore must refuse, with what it must say; the data directory
/// and what is beside it stay as they were.
#[test]
fn files_that_are_not_sound_ambient_backups_are_refused_and_nothing_changes() {
    let home = home_with(&["kept as it is"]);
    let good = home.path().join("good.backup");
    assert!(
        home.run(&["backup", good.to_str().unwrap()])
            .status
            .success()
    );
    let variant = |name: &str, change: &str| {
        let path = home.path().join(name);
        std::fs::copy(&good, &path).unwrap();
        Connection::open(&path)
            .unwrap()
            .execute_batch(change)
            .unwrap();
        path
    };
    let garbage = home.path().join("garbage.backup");
    std::fs::write(&garbage, b"PK\x03\x04 this is a zip, not a backup").unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (garbage, "does not begin as a SQLite database does"),
        (
            home.data_dir().join("ambient.db"),
            "is not an ambient backup: it is a SQLite database without an ambient backup's mark",
        ),
        (
            variant(
                "trigger.backup",
                "CREATE TRIGGER sneaky AFTER INSERT ON messages BEGIN DELETE FROM facts; END;",
            ),
            "it holds trigger \"sneaky\", which ambient's schema version",
        ),
        (
            variant(
                "escape.backup",
                "INSERT INTO ambient_backup_files (path, bytes) VALUES ('guilds/../../../escaped.txt', x'41');",
            ),
            "state file \"guilds/../../../escaped.txt\": a path is plain names",
        ),
        (
            variant(
                "absolute.backup",
                "INSERT INTO ambient_backup_files (path, bytes) VALUES ('/tmp/escaped.txt', x'41');",
            ),
            "state file \"/tmp/escaped.txt\"",
        ),
        (
            variant(
                "no-manifest.backup",
                "DELETE FROM ambient_backup WHERE key = 'format';",
            ),
            "its manifest has no \"format\"",
        ),
    ];
    let data = snapshot(&home.data_dir());
    let around = names(home.path());
    for (file, said) in cases {
        let out = home.run(&["restore", file.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", file.display());
        assert!(err.contains(said), "{}: {err}", file.display());
        assert_eq!(snapshot(&home.data_dir()), data, "{}", file.display());
        assert_eq!(names(home.path()), around, "{}", file.display());
    }
    assert!(!home.path().join("escaped.txt").exists());
    assert!(!Path::new("/tmp/escaped.txt").exists());
}

#[test]
fn a_backup_of_an_older_schema_restores_and_is_migrated_with_its_rows() {
    let old = Home::new(json!({}));
    let store = Store::open_at_version(&old.data_dir(), 17).unwrap();
    drop(store);
    Connection::open(old.data_dir().join("ambient.db"))
        .unwrap()
        .execute(
            "INSERT INTO messages (id, channel_id, author_id, author_name, content, created_at) \
             VALUES (42, 7, 9, 'ada', 'from an older ambient', 1700000000000)",
            [],
        )
        .unwrap();
    let file = old.path().join("v17.backup");
    let out = old.run(&["backup", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("schema version 17"),
        "{}",
        stdout(&out)
    );

    let home = Home::new(json!({}));
    let out = home.run(&["restore", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!(
            "brought from version 17 to {}",
            migrations::latest()
        )),
        "{}",
        stdout(&out)
    );
    let store = Store::open(&home.data_dir()).unwrap();
    assert_eq!(store.file().schema_version().unwrap(), migrations::latest());
    let row = store.messages().message(MessageId(42)).unwrap();
    assert_eq!(
        row.map(|m| m.content).as_deref(),
        Some("from an older ambient")
    );
    assert_eq!(integrity(&home.data_dir().join("ambient.db")), "ok");
}

#[test]
fn scheduled_backups_are_made_journaled_and_pruned_to_keep() {
    let dir = tempfile::tempdir().unwrap();
    let backups = dir.path().join("backups");
    let home = Home::new_in(dir.path(), json!({}));
    let (_, out) = home.console("stored before the first backup\n");
    assert!(out.status.success());
    home.edit_settings(
        json!({ "storage": { "backup": { "everyHours": 24, "keep": 2, "dir": backups } } }),
    );
    std::fs::create_dir_all(&backups).unwrap();
    for old in [
        "ambient-20250101-000000.backup",
        "ambient-20250102-000000.backup",
        "ambient-20250103-000000.backup",
    ] {
        std::fs::write(backups.join(old), "an old backup").unwrap();
    }
    std::fs::write(backups.join("notes.txt"), "not a backup of ours").unwrap();
    let mut bot = home.spawn_console();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let made = loop {
        let out = home.run(&["journal", "--type", "system", "--json"]);
        let text = stdout(&out);
        if let Some(line) = text.lines().find(|l| l.contains("backup made")) {
            break serde_json::from_str::<Value>(line).unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no backup was journaled: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    // The README's journal line, as `ambient journal` prints it.
    let shown = readme::block("journals each with its size", "");
    let command = shown.lines().next().unwrap().strip_prefix("$ ").unwrap();
    let out = home.shell(command, &[]);
    let printed = stdout(&out);
    let line = printed
        .lines()
        .find(|l| l.contains("backup made"))
        .unwrap_or_else(|| panic!("{command}: {printed}"));
    let example = shown.lines().nth(1).unwrap();
    let columns = |l: &str| {
        l.split_whitespace()
            .skip(2)
            .take(4)
            .map(|w| if w.starts_with('/') { "PATH" } else { w })
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(columns(line), columns(example), "{line}");
    drop(bot.stdin);
    assert!(bot.child.wait().unwrap().success());

    let mut left = names(&backups);
    left.retain(|n| n != "notes.txt");
    assert_eq!(left.len(), 2, "kept 2: {left:?}");
    assert_eq!(left[0], "ambient-20250103-000000.backup", "{left:?}");
    let new = backups.join(&left[1]);
    assert!(backups.join("notes.txt").exists(), "a file not ours stays");
    let size = std::fs::metadata(&new).unwrap().len();
    let summary = made["summary"].as_str().unwrap();
    assert!(
        summary.contains(&left[1]) && summary.contains(&format!("({size} bytes)")),
        "{summary}"
    );
    assert!(
        made["reason"]
            .as_str()
            .unwrap()
            .contains("2 older backup(s) removed to keep 2")
    );
    assert_eq!(integrity(&new), "ok");

    // What was scheduled restores like any other backup.
    let other = Home::new(json!({}));
    let out = other.run(&["restore", new.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = Connection::open(other.data_dir().join("ambient.db")).unwrap();
    let n: i64 = db
        .query_row(
            "SELECT count(*) FROM messages WHERE content = 'stored before the first backup'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn the_settings_check_refuses_a_backup_dir_in_the_data_directory() {
    let home = Home::new(json!({}));
    let inside = home.data_dir().join("backups");
    home.edit_settings(json!({ "storage": { "backup": { "everyHours": 6, "dir": inside } } }));
    let out = home.run(&["settings", "check"]);
    assert_eq!(out.status.code(), Some(1));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("storage.backup.dir") && said.contains("is storage.dataDir"),
        "{said}"
    );
    // Relative, through `..`: the same folder.
    home.edit_settings(
        json!({ "storage": { "dataDir": "data", "backup": { "dir": "./other/../data" } } }),
    );
    let out = home.run(&["settings", "check"]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("storage.backup.dir"), "{said}");
    // On without a folder.
    home.edit_settings(json!({ "storage": { "backup": { "dir": "" } } }));
    let out = home.run(&["settings", "check"]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("say where the backups go"), "{said}");
    // Beside it is fine.
    home.edit_settings(json!({ "storage": { "backup": { "dir": "backups" } } }));
    let out = home.run(&["settings", "check"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

/// A restore never brings back what someone asked to be forgotten after the
/// backup was made, nor drops a boundary they set since.
#[test]
fn a_forget_me_and_a_boundary_made_after_the_backup_hold_in_the_restored_data() {
    let home = Home::new(json!({}));
    let (events, out) = home.console("my address is 12 Elm Street\n");
    assert!(out.status.success());
    let id: u64 = events.iter().find(|e| e["event"] == "stored").unwrap()["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let file = home.path().join("before-forget.backup");
    assert!(
        home.run(&["backup", file.to_str().unwrap()])
            .status
            .success()
    );
    let store = Store::open(&home.data_dir()).unwrap();
    let ada = store
        .messages()
        .message(MessageId(id))
        .unwrap()
        .unwrap()
        .author_id;
    store
        .people()
        .forget_person(ada, true, chrono::Utc::now())
        .unwrap();
    store
        .people()
        .set_boundary(
            ada,
            ambient::store::boundaries::Boundary::NoPing,
            true,
            chrono::Utc::now(),
        )
        .unwrap();
    drop(store);

    let out = home.run(&["restore", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .contains("Forgotten again, as people asked after the backup was made: 1 forget-me(s)"),
        "{}",
        stdout(&out)
    );
    let store = Store::open(&home.data_dir()).unwrap();
    let row = store.messages().message(MessageId(id)).unwrap().unwrap();
    assert_eq!(row.content, "", "the forgotten words stay forgotten");
    assert!(
        store
            .people()
            .has_boundary(ada, ambient::store::boundaries::Boundary::NoPing)
            .unwrap()
    );
    drop(store);
    let kept = crate::support::files::files_containing(&home.data_dir(), b"12 Elm Street");
    assert!(kept.is_empty(), "the words are on disk in {kept:?}");
}
