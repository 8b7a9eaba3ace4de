//! Leaving a server: the real `ambient run` against the fake Discord, which
//! sends a removal (GUILD_DELETE with only the server's id) and an outage
//! (GUILD_DELETE with `unavailable: true`) as Discord does. What is checked
//! is what an operator would find: the journal's lines, `ambient status`,
//! and every row and state file of the server in the data directory.

use std::path::Path;
use std::time::{Duration, Instant};

use ambient::ids::GuildId;
use ambient::vocab::journal::{Entry, Kind};
use chrono::Utc;
use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{
    ALICE, BOB, FakeDiscord, GENERAL, GUILD, extra_channel, extra_guild,
};
use crate::support::shards::{Pair, server};

const LOG: &str = "ambient=debug,serenity=warn,poise=warn";

/// The bot in the test guild and `extra` more servers of one channel each.
fn start(extra: u32, settings: Value) -> Bot {
    let bot = Bot::start_on(FakeDiscord::start_with_guilds(extra, 1), settings, &[], LOG);
    for i in 0..extra {
        bot.wait_guild(extra_guild(i));
    }
    bot
}

/// Gives `guild` what a server leaves behind: two stored messages, a
/// remembered fact and a file its reflexes keep.
fn stock(bot: &Bot, guild: u64, channel: u64) {
    for (who, text) in [(ALICE, "we meet on fridays"), (BOB, "bring snacks")] {
        let id = bot.discord.say_in(guild, channel, who, text);
        assert!(bot.wait_stored(id), "{}", bot.log());
    }
    let db = rusqlite::Connection::open(bot.home.data_dir().join("ambient.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    db.execute(
        "INSERT INTO facts (id, guild_id, scope, kind, importance, content, created_at, updated_at,
                            last_seen_at, tags)
         VALUES (?1, ?2, 'guild', 'fact', 'high', 'The club meets on Fridays', ?3, ?3, ?3, 'active')",
        rusqlite::params![
            format!("fact-{guild}"),
            guild as i64,
            Utc::now().timestamp_millis()
        ],
    )
    .unwrap();
    let notes = state_dir(&bot.home.data_dir(), guild);
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("notes.txt"), "snacks: bob").unwrap();
}

fn state_dir(data_dir: &Path, guild: u64) -> std::path::PathBuf {
    data_dir.join(format!("state/guilds/{guild}"))
}

/// Every row of a server: the store's count per table of a server's data
/// (`own`), and — not trusting that list — every table with a `guild_id`
/// column, and `guilds` itself, read directly (`direct`).
#[derive(Clone, Debug, PartialEq)]
struct Rows {
    own: Vec<(&'static str, usize)>,
    direct: Vec<(String, i64)>,
}

fn rows(data_dir: &Path, guild: u64) -> Rows {
    let store = ambient::store::Store::open(data_dir).unwrap();
    let own = store.guilds().guild_row_counts(GuildId(guild)).unwrap();
    let db = rusqlite::Connection::open(data_dir.join("ambient.db")).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut direct = Vec::new();
    for t in tables {
        let has_guild_id: i64 = db
            .query_row(
                "SELECT count(*) FROM pragma_table_info(?1) WHERE name = 'guild_id'",
                [&t],
                |r| r.get(0),
            )
            .unwrap();
        let column = match (t.as_str(), has_guild_id) {
            ("guilds", _) => "id",
            (_, 1) => "guild_id",
            _ => continue,
        };
        let n: i64 = db
            .query_row(
                &format!("SELECT count(*) FROM {t} WHERE {column} = ?1"),
                [guild as i64],
                |r| r.get(0),
            )
            .unwrap();
        if n > 0 {
            direct.push((t, n));
        }
    }
    Rows { own, direct }
}

impl Rows {
    fn none() -> Self {
        Rows {
            own: vec![],
            direct: vec![],
        }
    }

    fn count(&self, table: &str) -> usize {
        self.own
            .iter()
            .find(|(t, _)| *t == table)
            .map_or(0, |(_, n)| *n)
    }

    /// Fails unless `now` holds every row these held: the same in every
    /// table but the journal, which only gains (the lines about leaving),
    /// and a departure row while the server is `departed`.
    fn all_kept_in(&self, now: &Rows, departed: bool) {
        let rest = |r: &Rows| -> Rows {
            let skip = |t: &str| t == "journal" || t == "departed_guilds";
            Rows {
                own: r.own.iter().filter(|(t, _)| !skip(t)).cloned().collect(),
                direct: r.direct.iter().filter(|(t, _)| !skip(t)).cloned().collect(),
            }
        };
        assert_eq!(rest(now), rest(self));
        assert!(now.count("journal") >= self.count("journal"), "{now:?}");
        assert_eq!(
            now.count("departed_guilds"),
            usize::from(departed),
            "{now:?}"
        );
        let direct =
            |r: &Rows, t: &str| r.direct.iter().find(|(n, _)| n == t).map_or(0, |(_, n)| *n);
        assert_eq!(
            direct(now, "departed_guilds"),
            i64::from(departed),
            "{now:?}"
        );
    }
}

/// Waits (a generous 30 s) until `guild` has no row left in the data directory.
fn wait_gone(bot: &Bot, guild: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while rows(&bot.home.data_dir(), guild) != Rows::none() {
        assert!(
            Instant::now() < deadline,
            "server {guild} still has rows {:?}:\n{}",
            rows(&bot.home.data_dir(), guild),
            bot.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn journal_says(bot: &Bot, text: &str) -> Vec<Entry> {
    bot.store()
        .journal()
        .journal_query(&ambient::vocab::journal::Filter {
            text: Some(text.into()),
            ..Default::default()
        })
        .unwrap()
}

/// Adds `n` messages of `guild` in `channel`, each with its routing line,
/// straight into the data directory (the bot is stopped meanwhile).
fn pile(data_dir: &Path, guild: u64, channel: u64, n: i64) {
    let mut db = rusqlite::Connection::open(data_dir.join("ambient.db")).unwrap();
    let tx = db.transaction().unwrap();
    for i in 0..n {
        let id = 9_000_000_000 + i;
        tx.execute(
            "INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at)
             VALUES (?1, ?2, ?3, ?4, 'alice', 'see you friday', 1)",
            rusqlite::params![id, guild as i64, channel as i64, ALICE.id as i64],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO journal (ts, kind, guild_id, channel_id, message_id, summary)
             VALUES (1, 'route', ?2, ?3, ?1, 'let pass')",
            rusqlite::params![id, guild as i64, channel as i64],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// Moves `guild`'s stored departure `days` into the past, as if that long
/// had passed since (the bot is stopped meanwhile).
fn backdate(data_dir: &Path, guild: u64, days: i64) {
    let db = rusqlite::Connection::open(data_dir.join("ambient.db")).unwrap();
    let changed = db
        .execute(
            "UPDATE departed_guilds SET departed_at = departed_at - ?1 WHERE guild_id = ?2",
            rusqlite::params![days * 86_400_000, guild as i64],
        )
        .unwrap();
    assert_eq!(changed, 1, "server {guild} had not departed");
}

fn in_days(days: i64) -> String {
    (Utc::now() + chrono::Duration::days(days))
        .format("%Y-%m-%d")
        .to_string()
}

#[test]
fn a_server_gone_longer_than_the_grace_loses_every_row_and_one_gone_less_keeps_all_across_a_restart()
 {
    let mut bot = start(2, json!({}));
    let (gone, kept) = (extra_guild(0), extra_guild(1));
    stock(&bot, gone, extra_channel(0, 0));
    stock(&bot, kept, extra_channel(1, 0));
    stock(&bot, GUILD, GENERAL);
    let before = |g| rows(&bot.home.data_dir(), g);
    let (gone_before, kept_before, home_before) = (before(gone), before(kept), before(GUILD));
    assert!(gone_before.own.len() >= 4, "{gone_before:?}");

    bot.discord.remove_bot(gone);
    bot.discord.remove_bot(kept);
    for (i, g) in [(0, gone), (1, kept)] {
        let said = format!(
            "removed from Server {i} ({g}); its data will be deleted on {} unless ambient is invited back",
            in_days(30)
        );
        bot.wait_entry(Kind::System, |e| e.summary == said);
    }
    gone_before.all_kept_in(&rows(&bot.home.data_dir(), gone), true);
    assert!(
        state_dir(&bot.home.data_dir(), gone)
            .join("notes.txt")
            .exists()
    );
    let status = bot.home.run(&["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    let today = in_days(0);
    assert!(
        status.contains(&format!(
            "server Server 1 ({kept}) removed the bot on {today}; its data will be deleted on {} \
             unless ambient is invited back",
            in_days(30)
        )),
        "{status}"
    );

    // A month and a day pass for one, four weeks and a day for the other,
    // while the bot is down; Discord no longer lists either server.
    // Meanwhile it had been busy: more messages, and their routing lines,
    // than one batch of the removal takes.
    bot.halt();
    pile(&bot.home.data_dir(), gone, extra_channel(0, 0), 1_200);
    backdate(&bot.home.data_dir(), gone, 31);
    backdate(&bot.home.data_dir(), kept, 29);
    bot.relaunch(&[], LOG);
    let said = format!("deleted the data of Server 0 ({gone})");
    let deleted = bot.wait_entry(Kind::System, |e| e.summary.starts_with(&said));
    // One line: what the batches took and what the final transaction took.
    for part in [
        "messages 1202, ",
        "facts 1, ",
        "departed_guilds 1 and its state folders, in ",
    ] {
        assert!(deleted.reason.contains(part), "{part}: {}", deleted.reason);
    }
    let routing_lines = gone_before.count("journal") + 1_200;
    let journal = deleted
        .reason
        .split(", ")
        .find_map(|p| p.strip_prefix("journal "))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("{}", deleted.reason));
    assert!(journal >= routing_lines, "{}", deleted.reason);
    let transactions: usize = deleted
        .reason
        .split_once(" and its state folders, in ")
        .and_then(|(_, rest)| {
            rest.split_once(" short transactions, the longest holding the writer ")
        })
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", deleted.reason));
    assert!(transactions > 2 * 1_200 / 500, "{}", deleted.reason);
    assert!(
        deleted
            .reason
            .ends_with(" ms, after storage.retention.departedGuildDays (30)"),
        "{}",
        deleted.reason
    );
    assert_eq!(
        deleted.guild, None,
        "the line outlives the server's journal"
    );
    assert_eq!(journal_says(&bot, &said).len(), 1);
    wait_gone(&bot, gone);
    assert!(!state_dir(&bot.home.data_dir(), gone).exists());
    // The sweep that removed one looked at the other, and kept it whole.
    kept_before.all_kept_in(&rows(&bot.home.data_dir(), kept), true);
    assert!(
        state_dir(&bot.home.data_dir(), kept)
            .join("notes.txt")
            .exists()
    );
    home_before.all_kept_in(&rows(&bot.home.data_dir(), GUILD), false);
    let status = bot.home.run(&["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains(&format!(
            "server Server 1 ({kept}) removed the bot on {}; its data will be deleted on {} unless",
            in_days(-29),
            in_days(1)
        )),
        "{status}"
    );
    assert!(!status.contains(&gone.to_string()), "{status}");
    assert!(bot.stop().success());
}

#[test]
fn a_server_that_invites_the_bot_back_within_the_grace_keeps_everything_even_while_the_bot_was_down()
 {
    let mut bot = start(1, json!({}));
    let g = extra_guild(0);
    stock(&bot, g, extra_channel(0, 0));
    let before = rows(&bot.home.data_dir(), g);

    bot.discord.remove_bot(g);
    bot.wait_entry(Kind::System, |e| {
        e.summary.starts_with("removed from Server 0")
    });
    bot.discord.invite_bot(g);
    let back = bot.wait_entry(Kind::System, |e| {
        e.summary == format!("invited back to Server 0 ({g}); nothing of it was deleted")
    });
    assert!(back.reason.contains("its GUILD_CREATE"), "{}", back.reason);
    before.all_kept_in(&rows(&bot.home.data_dir(), g), false);
    assert!(bot.store().guilds().departures().unwrap().is_empty());

    // Removed again, and invited back while the bot is down past the grace:
    // READY names the server, and nothing goes.
    bot.discord.remove_bot(g);
    bot.wait_entry(Kind::System, |e| {
        e.summary.starts_with("removed from Server 0") && e.id > back.id
    });
    bot.halt();
    backdate(&bot.home.data_dir(), g, 31);
    bot.discord.invite_bot(g);
    bot.relaunch(&[], LOG);
    // READY or the GUILD_CREATE after it, whichever is handled first.
    bot.wait_entry(Kind::System, |e| {
        e.summary.starts_with("invited back to Server 0") && e.id > back.id
    });
    bot.wait_guild(g);
    before.all_kept_in(&rows(&bot.home.data_dir(), g), false);
    assert!(
        state_dir(&bot.home.data_dir(), g)
            .join("notes.txt")
            .exists()
    );
    assert!(journal_says(&bot, "deleted the data of").is_empty());
    assert!(bot.stop().success());
}

#[test]
fn an_outage_keeps_everything_and_says_nothing_of_leaving_while_a_removal_with_no_grace_is_at_once()
{
    let bot = start(
        1,
        json!({"storage": {"retention": {"departedGuildDays": 0}}}),
    );
    let g = extra_guild(0);
    stock(&bot, g, extra_channel(0, 0));
    stock(&bot, GUILD, GENERAL);
    let before = rows(&bot.home.data_dir(), g);

    bot.discord.outage(g);
    // With no grace, a removal is carried out at once: the test guild's,
    // sent after the outage, is the sign the outage was heard before it.
    bot.discord.remove_bot(GUILD);
    // The line saying so was the server's, and went with its journal; the
    // line saying what was deleted is no server's.
    let deleted = bot.wait_entry(Kind::System, |e| {
        e.summary.starts_with(&format!(
            "deleted the data of Test Server ({GUILD}), which removed the bot on {}",
            in_days(0)
        ))
    });
    assert!(
        deleted
            .reason
            .ends_with("after storage.retention.departedGuildDays (0)"),
        "{}",
        deleted.reason
    );
    wait_gone(&bot, GUILD);
    assert!(!state_dir(&bot.home.data_dir(), GUILD).exists());

    before.all_kept_in(&rows(&bot.home.data_dir(), g), false);
    assert!(bot.store().guilds().departures().unwrap().is_empty());
    for said in ["removed from Server 0", "deleted the data of Server 0"] {
        assert!(journal_says(&bot, said).is_empty(), "{said}");
    }
    // The outage ends: the server is there again, and heard.
    bot.discord.outage_over(g);
    let id = bot
        .discord
        .say_in(g, extra_channel(0, 0), ALICE, "back online");
    assert!(bot.wait_stored(id), "{}", bot.log());
    assert!(
        state_dir(&bot.home.data_dir(), g)
            .join("notes.txt")
            .exists()
    );
    assert!(bot.stop().success());
}

#[test]
fn a_process_acts_only_on_the_departures_of_its_own_shards() {
    let pair = Pair::start(json!({"storage": {"retention": {"departedGuildDays": 0}}}));
    // A Discord-compatible server that ignores sharding: both processes
    // hear each removal, and only the owner acts on it.
    pair.discord.with(|w| w.sharding.ignore_sharding = true);
    let removed = [server(0).0, server(1).0];
    for g in removed {
        pair.discord.remove_bot(g);
    }
    // Heard after the removals by both processes, stored by the owner only.
    for i in [2, 3] {
        let (g, channel) = server(i);
        let id = pair.discord.say_in(g, channel, ALICE, "still here");
        assert!(pair.owner(i).wait_stored(id), "{}", pair.owner(i).log());
    }
    for (s, g) in removed.into_iter().enumerate() {
        let owner = &pair.bots[s];
        owner.wait_entry(Kind::System, |e| {
            e.summary
                .starts_with(&format!("deleted the data of Server {s} ({g})"))
        });
        wait_gone(owner, g);
        let other = &pair.bots[1 - s];
        assert_eq!(journal_says(other, &g.to_string()), vec![]);
        assert!(other.store().guilds().departures().unwrap().is_empty());
    }
    for bot in pair.bots {
        assert!(bot.stop().success());
    }
}
