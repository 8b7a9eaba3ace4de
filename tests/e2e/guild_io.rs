//! Moving a server between processes: `ambient guild export / import /
//! remove`, `ambient shards plan`, and `ambient run` refusing a data
//! directory that holds another shard range's servers — each command run as
//! the README shows it, each result read from the store, the state folders
//! and what the bot then answers.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use ambient::ids::GuildId;
use ambient::store::Store;
use ambient::store::partition::TABLES;
use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, FakeDiscord, GENERAL, GUILD, MANAGE_GUILD};
use crate::support::home::Home;
use crate::support::readme::example as readme_example;

/// A server on shard 1 of 2 (and 1 of 4): `(id >> 22) % total`.
const FAR: u64 = 1 << 22;
/// A server on shard 1 of 2 and 3 of 4.
const FARTHER: u64 = 3 << 22;

const SAVE: &str = r#"name: save-note
level: 1
trigger:
  pattern: "(?i)save (\\S+) (.+)$"
  extract: [path, text]
  addressed: true
pipeline:
  - action: write_file
    path: "{{path}}"
    content: "{{text}}"
  - action: reply
    message: "saved {{path}}"
"#;

/// `ambient run` on `home` against `discord`, killed when dropped.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        // Harmless if it fails: the process is already gone.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the bot on an existing home (its data directory as the move left
/// it) and waits until it has registered its commands.
fn run_on(home: &Home, discord: &FakeDiscord) -> Running {
    home.edit_settings(json!({
        "discord": {"apiBaseUrl": discord.url, "devGuildId": GUILD.to_string()},
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9", "maxRetries": 0},
    }));
    let log = std::fs::File::create(home.path().join("bot.log")).unwrap();
    let child = home
        .command(&["run"])
        .env("DISCORD_TOKEN", "test-token-abc")
        .env("RUST_LOG", "ambient=debug,serenity=warn,poise=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let running = Running(child);
    assert!(
        discord.wait_until(20, |w| !w.find("PUT", "/commands").is_empty()),
        "the bot did not connect:\n{}",
        read_log(home)
    );
    running
}

fn read_log(home: &Home) -> String {
    std::fs::read_to_string(home.path().join("bot.log")).unwrap_or_default()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Rows of `guild` per table, every table of the guild's data.
fn counts(data_dir: &Path, guild: u64) -> Vec<(&'static str, usize)> {
    Store::open(data_dir)
        .unwrap()
        .guilds()
        .guild_row_counts(GuildId(guild))
        .unwrap()
}

/// Everything in the data directory that an import could change: every
/// table's row count and every state file.
fn snapshot(data_dir: &Path) -> (Vec<(String, i64)>, Vec<String>) {
    let db = rusqlite::Connection::open(data_dir.join("ambient.db")).unwrap();
    let rows = TABLES
        .iter()
        .map(|t| {
            let n = db
                .query_row(&format!("SELECT count(*) FROM {}", t.name), [], |r| {
                    r.get(0)
                })
                .unwrap();
            (t.name.to_string(), n)
        })
        .collect();
    let mut files = Vec::new();
    let mut stack = vec![data_dir.join("state")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                files.push(e.path().display().to_string());
            }
        }
    }
    files.sort();
    (rows, files)
}

/// A data directory holding servers `guilds`, each with a name, a channel,
/// a message and a fact, and a state file for the first.
fn stocked(guilds: &[(u64, &str)]) -> Home {
    let home = Home::new(json!({}));
    Store::open(&home.data_dir()).unwrap();
    let db = rusqlite::Connection::open(home.data_dir().join("ambient.db")).unwrap();
    for (g, name) in guilds {
        db.execute_batch(&format!(
            "INSERT INTO guilds (id, name, updated_at) VALUES ({g}, '{name}', 0);
             INSERT INTO channels (id, guild_id, name, updated_at) VALUES ({g} + 1, {g}, 'general', 0);
             INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at)
                 VALUES ({g} + 2, {g}, {g} + 1, 3, 'alice', 'hello from {name}', 0);
             INSERT INTO facts (id, guild_id, scope, kind, importance, content, created_at, updated_at,
                                last_seen_at, tags)
                 VALUES ('fact-{g}', {g}, 'guild', 'fact', 'high', '{name} meets on Fridays', 0, 0, 0, 'g{g} active');"
        ))
        .unwrap();
    }
    let state = home
        .data_dir()
        .join(format!("state/guilds/{}/notes", guilds[0].0));
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("today.txt"), "buy milk").unwrap();
    home
}

#[test]
fn a_server_moves_to_a_fresh_data_dir_and_the_bot_there_answers_from_its_memory() {
    let reflexes = tempfile::tempdir().unwrap();
    std::fs::write(reflexes.path().join("save.yaml"), SAVE).unwrap();
    let reflex_dir = json!({"reflexes": {"dir": reflexes.path().to_string_lossy()}});
    let mut bot = Bot::start(reflex_dir.clone());
    let said = bot.discord.say(GENERAL, ALICE, "hello everyone");
    assert!(bot.wait_stored(said), "{}", bot.log());
    let reply = |id: u64| {
        bot.discord
            .interaction_text(id)
            .unwrap_or_else(|| panic!("no reply:\n{}", bot.log()))
    };
    let remembered = bot.discord.slash(
        GENERAL,
        ALICE,
        MANAGE_GUILD,
        "memory",
        "remember",
        &[
            ("text", "Movie night is every Sunday"),
            ("type", "decision"),
        ],
    );
    assert!(reply(remembered).starts_with("Remembered"));
    let set = bot.discord.slash(
        GENERAL,
        ALICE,
        MANAGE_GUILD,
        "settings",
        "set",
        &[("path", "initiative.text.eagerness"), ("value", "80")],
    );
    assert_eq!(
        reply(set),
        "initiative.text.eagerness = 80 for this server."
    );
    bot.discord.say(
        GENERAL,
        ALICE,
        &format!("<@{BOT}> save notes/today.txt buy milk"),
    );
    let note = bot
        .home
        .data_dir()
        .join(format!("state/guilds/{GUILD}/notes/today.txt"));
    assert!(
        bot.discord.wait_until(10, |_| note.exists()),
        "the reflex never wrote its file:\n{}",
        bot.log()
    );
    // The home outlives the stopped bot (the move reads it afterwards).
    let old = std::mem::replace(&mut bot.home, Home::new(json!({})));
    assert!(bot.stop().success());
    let before = counts(&old.data_dir(), GUILD);
    for table in [
        "guilds",
        "channels",
        "messages",
        "journal",
        "facts",
        "guild_settings",
    ] {
        assert!(
            before.iter().any(|(t, _)| *t == table),
            "{table}: {before:?}"
        );
    }

    let exported = old.shell(&readme_example("ambient guild export 100 > 100.json"), &[]);
    assert!(exported.status.success(), "{}", text(&exported));
    let new = Home::new(reflex_dir.clone());
    std::fs::copy(old.path().join("100.json"), new.path().join("100.json")).unwrap();
    let imported = new.shell(&readme_example("ambient guild import 100.json"), &[]);
    assert!(imported.status.success(), "{}", text(&imported));
    assert!(
        text(&imported).starts_with("Imported server 100: guilds 1, channels"),
        "{}",
        text(&imported)
    );

    assert_eq!(counts(&new.data_dir(), GUILD), before);
    let moved = Store::open(&new.data_dir()).unwrap();
    assert_eq!(
        moved.overrides().guild_overrides(GuildId(GUILD)).unwrap(),
        vec![("initiative.text.eagerness".to_string(), json!(80))]
    );
    assert_eq!(
        std::fs::read_to_string(
            new.data_dir()
                .join(format!("state/guilds/{GUILD}/notes/today.txt"))
        )
        .unwrap(),
        "buy milk"
    );

    // The bot on the new data directory recalls what it learned on the old one.
    let discord = FakeDiscord::start();
    let _moved_bot = run_on(&new, &discord);
    let found = discord.slash(
        GENERAL,
        ALICE,
        0,
        "memory",
        "search",
        &[("query", "movie night")],
    );
    let answered = discord.wait_until(10, |w| !w.interaction_replies(found).is_empty());
    assert!(answered, "no answer:\n{}", read_log(&new));
    let answer = discord.interaction_text(found).unwrap_or_default();
    assert!(answer.contains("Movie night is every Sunday"), "{answer}");
}

#[test]
fn refused_imports_name_the_problem_and_leave_the_target_unchanged() {
    let from = stocked(&[(GUILD, "Home"), (FAR, "Far")]);
    let out = from.run(&["guild", "export", "100"]);
    assert!(out.status.success(), "{}", text(&out));
    let good = String::from_utf8(out.stdout).unwrap();
    let target = stocked(&[(FARTHER, "Farther")]);
    let import = |doc: &str, args: &[&str]| -> String {
        let before = snapshot(&target.data_dir());
        std::fs::write(target.path().join("g.json"), doc).unwrap();
        let out = target.run(&[&["guild", "import", "g.json"], args].concat());
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert_eq!(snapshot(&target.data_dir()), before, "{}", text(&out));
        text(&out)
    };

    let schema = ambient::store::migrations::latest();
    let older = good.replace(&format!("\"schema\":{schema}"), "\"schema\":12");
    let err = import(&older, &[]);
    assert!(
        err.contains("schema version 12, this data directory is at version"),
        "{err}"
    );

    let bad = good.replace("\"content\":\"hello from Home\"", "\"content\":[1]");
    let err = import(&bad, &[]);
    assert!(
        err.contains("g.json: tables.messages[0].content: must be an integer, a real, a text or null; nothing was imported"),
        "{err}"
    );

    let smuggled = good.replace(
        "\"guild_id\":100,\"name\":\"general\"",
        &format!("\"guild_id\":{FARTHER},\"name\":\"general\""),
    );
    let err = import(&smuggled, &[]);
    assert!(
        err.contains("tables.channels[0] is not guild 100's: its guild_id must be 100"),
        "{err}"
    );

    let padded = format!("{good}{}", " ".repeat(1024 * 1024));
    let err = import(&padded, &["--max-mb", "1"]);
    assert!(err.contains("g.json is over 1 MB"), "{err}");

    Store::open(&target.data_dir())
        .unwrap()
        .guilds()
        .record_plan(
            Some(ambient::vocab::shards::Shards {
                range: ambient::vocab::shards::ShardRange { first: 1, last: 1 },
                total: 2,
            }),
            chrono::Utc::now(),
        )
        .unwrap();
    let err = import(&good, &[]);
    assert!(
        err.contains("server 100 is on shard 0 of 2, which this data directory's plan (shards 1 of 2, recorded when the bot last started here) does not own"),
        "{err}"
    );
    Store::open(&target.data_dir())
        .unwrap()
        .guilds()
        .record_plan(None, chrono::Utc::now())
        .unwrap();

    let first = target.run(&["guild", "import", "g.json"]);
    assert!(first.status.success(), "{}", text(&first));
    let err = import(&good, &[]);
    assert!(
        err.contains("already holds rows of guild 100 (guilds 1, channels 1, messages 1, facts 1)"),
        "{err}"
    );
    let replaced = target.run(&["guild", "import", "g.json", "--replace"]);
    assert!(replaced.status.success(), "{}", text(&replaced));
    assert_eq!(
        counts(&target.data_dir(), GUILD),
        counts(&from.data_dir(), GUILD)
    );
    assert_eq!(
        counts(&target.data_dir(), FAR),
        vec![],
        "only the exported server came"
    );
}

#[test]
fn removing_a_server_asks_first_and_leaves_the_others() {
    let home = stocked(&[(GUILD, "Home"), (FAR, "Far")]);
    let before = snapshot(&home.data_dir());
    let asked = home.run(&["guild", "remove", "100"]);
    assert_eq!(asked.status.code(), Some(1));
    assert!(
        text(&asked).starts_with(
            "Would remove server 100: guilds 1, channels 1, messages 1, facts 1; the folders state/guilds/100/.\nNothing removed: add --yes"
        ),
        "{}",
        text(&asked)
    );
    assert_eq!(snapshot(&home.data_dir()), before);
    let far = counts(&home.data_dir(), FAR);
    let removed = home.shell(&readme_example("ambient guild remove 100 --yes"), &[]);
    assert!(removed.status.success(), "{}", text(&removed));
    assert_eq!(counts(&home.data_dir(), GUILD), vec![]);
    assert!(!home.data_dir().join("state/guilds/100").exists());
    assert_eq!(counts(&home.data_dir(), FAR), far);
    assert_eq!(far.len(), 4, "{far:?}");
}

#[test]
fn the_plan_gives_each_servers_shard_and_what_must_move() {
    let home = stocked(&[(GUILD, "Home"), (FAR, "Far"), (FARTHER, "Farther")]);
    let out = home.shell(
        &readme_example("ambient shards plan --total 2 --shards 0-0"),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "3 server(s) in this data directory, over 2 shard(s):\n  \
         guild     name     shard\n  \
         100       Home     0      stays\n  \
         4194304   Far      1      moves to shard 1's process\n  \
         12582912  Farther  1      moves to shard 1's process\n\
         2 server(s) must move out before shards 0 of 2 runs here: for each, `ambient guild export GUILD > GUILD.json`, \
         `ambient guild import GUILD.json` on the owner's data directory, then `ambient guild remove GUILD --yes` here.\n"
    );
    let out = home.run(&["shards", "plan", "--total", "4", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shards: Vec<(String, u64)> = doc["guilds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["guild"].as_str().unwrap().into(),
                g["shard"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shards,
        vec![
            ("100".into(), 0),
            ("4194304".into(), 1),
            ("12582912".into(), 3)
        ]
    );
    let bad = home.run(&["shards", "plan", "--total", "2", "--shards", "0-2"]);
    assert!(
        text(&bad).contains("--shards: shard 2 does not exist: with --total 2 the shards are 0-1")
    );
}

#[test]
fn run_with_a_range_refuses_a_data_dir_holding_another_ranges_server_before_logging_in() {
    let discord = FakeDiscord::start();
    let home = stocked(&[(GUILD, "Home"), (FAR, "Far")]);
    let shared = tempfile::tempdir().unwrap();
    home.edit_settings(json!({
        "discord": {"apiBaseUrl": discord.url},
        "storage": {"sharedDir": shared.path().to_string_lossy()},
    }));
    let child = home
        .command(&["run", "--shards", "0-0", "--total-shards", "2"])
        .env("DISCORD_TOKEN", "test-token-abc")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A bot that starts instead of refusing runs until stopped: stop it
    // after a while, so the failure is the assertion below, not a hang.
    let mut running = Running(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while running.0.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Harmless if it fails: the process has exited already.
    let _ = running.0.kill();
    let out = std::mem::replace(&mut running.0, Command::new("true").spawn().unwrap())
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("this data directory holds rows of 1 server(s) that shard 0 of 2 does not own: 4194304 (Far)"),
        "{err}"
    );
    assert!(
        err.contains("`ambient shards plan --total 2 --shards 0`"),
        "{err}"
    );
    assert!(err.contains("`ambient guild remove GUILD --yes`"), "{err}");
    let requests = discord.with(|w| w.requests.len());
    assert_eq!(requests, 0, "the refused process called Discord");
}
