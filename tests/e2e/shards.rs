//! Shards across processes: `ambient run --shards S --total-shards N` runs
//! only its shards and answers only its servers; without flags one process
//! runs every shard Discord recommends; the fake Discord is as strict as
//! Discord about sharded IDENTIFY (see `support::fake_gateway`).

use std::time::{Duration, Instant};

use ambient::ids::MessageId;
use ambient::vocab::journal::{Filter, Kind};
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, BOT, DM_CHANNEL, FakeDiscord, GENERAL, World};
use crate::support::model_server::Scripted;
use crate::support::shards::{Pair, SERVERS, TOTAL, server, servers_of};

/// The README's "Shards across processes" section.
fn readme_section() -> String {
    let readme = crate::support::readme::text();
    let start = readme
        .find("### Shards across processes\n")
        .expect("the README has the section");
    let end = start + 4 + readme[start + 4..].find("\n### ").unwrap();
    readme[start..end].to_string()
}

/// The section's fenced blocks in `lang`, in order.
fn readme_blocks(lang: &str) -> Vec<String> {
    let section = readme_section();
    let open = format!("```{lang}\n");
    section
        .match_indices(&open)
        .map(|(i, _)| {
            let body = &section[i + open.len()..];
            body[..body.find("```").unwrap()].to_string()
        })
        .collect()
}

fn mention(text: &str) -> String {
    format!("<@{BOT}> {text}")
}

/// What the bot posted in `channel`, as text.
fn said_in(w: &World, channel: u64) -> Vec<String> {
    w.sent_in(channel)
        .iter()
        .map(|b| b["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Waits until `channel` holds `n` posts of the bot, then a moment more for
/// a second process's answer, which must not come.
fn wait_posts(discord: &FakeDiscord, channel: u64, n: usize, log: impl Fn() -> String) {
    assert!(
        discord.wait_until(30, |w| w.sent_in(channel).len() >= n),
        "channel {channel} never got {n} answer(s):\n{}",
        log()
    );
}

#[test]
fn two_processes_each_answer_their_own_servers_and_store_only_theirs() {
    // As the README says: its settings in each process's directory, its commands run as written.
    let settings: serde_json::Value = serde_json::from_str(&readme_blocks("json")[0]).unwrap();
    let commands: Vec<String> = readme_blocks("sh")[0].lines().map(String::from).collect();
    let pair = Pair::start_with(settings, json!({}), &commands);
    for (shard, bot) in pair.bots.iter().enumerate() {
        bot.model
            .fallback(Scripted::text(&format!("Shard {shard} answering.")));
    }
    let logs = || {
        pair.bots
            .iter()
            .map(|b| b.log())
            .collect::<Vec<_>>()
            .join("\n----\n")
    };

    // Discord's rule held: each process identified its one shard, and the
    // later one waited its turn, so no IDENTIFY was refused.
    let (shards, refused, bot_gateway) = pair.discord.with(|w| {
        (
            w.identified_shards(),
            w.identifies_refused(),
            w.find("GET", "/gateway/bot").len(),
        )
    });
    assert_eq!(shards, vec![[0, TOTAL], [1, TOTAL]], "{}", logs());
    assert!(refused.is_empty(), "refused: {refused:?}\n{}", logs());
    assert_eq!(
        bot_gateway, 0,
        "a process with a plan needs no recommendation"
    );

    let asked: Vec<u64> = (0..SERVERS)
        .map(|i| {
            let (guild, channel) = server(i);
            pair.discord.say_in(
                guild,
                channel,
                ALICE,
                &mention("what do you make of the plan?"),
            )
        })
        .collect();
    for i in 0..SERVERS {
        wait_posts(&pair.discord, server(i).1, 1, logs);
    }
    for shard in 0..TOTAL {
        let bot = &pair.bots[shard as usize];
        for i in servers_of(shard) {
            let channel = server(i).1;
            assert_eq!(
                pair.discord.with(|w| said_in(w, channel)),
                vec![format!("Shard {shard} answering.")],
                "server {i} is answered by shard {shard}'s process alone"
            );
            assert!(bot.wait_stored(asked[i as usize]));
        }
        // Its data directory holds only its own servers' messages.
        let store = bot.store();
        for i in (0..SERVERS).filter(|i| i % TOTAL != shard) {
            assert_eq!(
                store
                    .messages()
                    .message(MessageId(asked[i as usize]))
                    .unwrap(),
                None,
                "shard {shard}'s process stored server {i}'s message"
            );
        }
        assert_eq!(
            bot.model.requests().len(),
            2,
            "one model call per own mention"
        );
    }

    // Behind a Discord-compatible server that ignores sharding, every event
    // reaches both processes: each still handles only its own servers, and
    // only shard 0's process answers a direct message.
    pair.discord.with(|w| w.sharding.ignore_sharding = true);
    let (guild, channel) = server(1);
    let again = pair
        .discord
        .say_in(guild, channel, ALICE, &mention("and now?"));
    pair.discord.dm(ALICE, "are you there?");
    wait_posts(&pair.discord, channel, 2, logs);
    wait_posts(&pair.discord, DM_CHANNEL, 1, logs);
    // The other process had as long to answer as the owner took, and more.
    std::thread::sleep(Duration::from_secs(2));
    let (in_server, in_dm) = pair
        .discord
        .with(|w| (said_in(w, channel), said_in(w, DM_CHANNEL)));
    assert_eq!(in_server, vec!["Shard 1 answering."; 2]);
    assert_eq!(in_dm, vec!["Shard 0 answering."]);
    assert_eq!(
        pair.bots[0]
            .store()
            .messages()
            .message(MessageId(again))
            .unwrap(),
        None,
        "shard 0's process dropped server 1's message"
    );
    assert_eq!(pair.bots[0].model.requests().len(), 3);
    assert_eq!(pair.bots[1].model.requests().len(), 3);
    for bot in pair.bots {
        assert!(bot.stop().success());
    }
}

#[test]
fn without_flags_one_process_runs_every_shard_discord_recommends() {
    let discord = FakeDiscord::start_sharded(TOTAL, SERVERS);
    let bot = Bot::spawn(
        discord.clone(),
        json!({}),
        &[],
        "ambient=debug,serenity=warn,poise=warn",
    );
    // Serenity starts one shard per 5 s.
    assert!(
        discord.wait_until(30, |w| w.identified_shards().len() == 2),
        "both shards never identified:\n{}",
        bot.log()
    );
    for i in 0..SERVERS {
        bot.wait_guild(server(i).0);
    }
    let (shards, refused, bot_gateway) = discord.with(|w| {
        (
            w.identified_shards(),
            w.identifies_refused(),
            w.find("GET", "/gateway/bot").len(),
        )
    });
    assert_eq!(shards, vec![[0, TOTAL], [1, TOTAL]]);
    assert!(refused.is_empty(), "refused: {refused:?}");
    assert!(
        bot_gateway >= 1,
        "the recommendation is asked through discord.apiBaseUrl"
    );
    bot.model.fallback(Scripted::text("One process for all."));
    for i in [0, 1] {
        let (guild, channel) = server(i);
        discord.say_in(guild, channel, ALICE, &mention("which shard is this?"));
        wait_posts(&discord, channel, 1, || bot.log());
    }
    assert!(bot.stop().success());
}

/// A bot on shard 0 of 1 from `settings` and `args`; its settings file is
/// then saved with `executive.maxRetries` 1 and reloaded by SIGHUP. Returns
/// the bot and the journal's first settings entry, the reload's.
fn started_on_shard_zero_and_reloaded(
    settings: serde_json::Value,
    args: &[&str],
) -> (Bot, ambient::vocab::journal::Entry) {
    let bot = Bot::start_with(settings, args);
    assert!(
        bot.log().contains("this process runs shards 0 of 1"),
        "{}",
        bot.log()
    );
    bot.home
        .edit_settings(json!({"executive": {"maxRetries": 1}}));
    bot.signal("HUP");
    let store = bot.store();
    let mut reloads = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while reloads.is_empty() {
        assert!(Instant::now() < deadline, "no reload:\n{}", bot.log());
        std::thread::sleep(Duration::from_millis(100));
        reloads = store
            .journal()
            .journal_query(&Filter {
                kinds: vec![Kind::Settings],
                ..Default::default()
            })
            .unwrap();
    }
    let entry = reloads.swap_remove(0);
    assert!(
        entry.summary.starts_with("settings reloaded"),
        "{}: {}",
        entry.summary,
        entry.reason
    );
    (bot, entry)
}

#[test]
fn the_run_flags_stay_in_effect_and_unreported_across_a_reload() {
    let (bot, entry) = started_on_shard_zero_and_reloaded(
        json!({}),
        &["--no-watch", "--shards", "0", "--total-shards", "1"],
    );
    // The file has no discord.shards: the command line's value is neither
    // reported as waiting for the next start nor dropped.
    assert_eq!(entry.reason, "SIGHUP; executive.maxRetries: 0 → 1");
    bot.model.push(Scripted::text("Still here."));
    bot.discord
        .say(GENERAL, ALICE, &mention("still on shard zero?"));
    wait_posts(&bot.discord, GENERAL, 1, || bot.log());
    assert!(bot.stop().success());
}

/// A file that names the range but leaves the total to `--total-shards`
/// is whole only with the command line: a reload checks it so, not alone.
#[test]
fn a_reload_checks_the_file_with_the_command_lines_shard_values() {
    let (bot, entry) = started_on_shard_zero_and_reloaded(
        json!({"discord": {"shards": "0"}}),
        &["--no-watch", "--total-shards", "1"],
    );
    assert_eq!(entry.reason, "SIGHUP; executive.maxRetries: 0 → 1");
    assert!(bot.stop().success());
}

#[test]
fn the_readmes_shard_and_proxy_settings_pass_the_check() {
    let blocks = readme_blocks("json");
    assert_eq!(blocks.len(), 2, "a process's settings and the proxy's");
    for block in blocks {
        let home = crate::support::home::Home::new(json!({}));
        let file = home.path().join("example.json");
        std::fs::write(&file, &block).unwrap();
        let out = home.run(&["settings", "check", file.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{block}\n{}",
            String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Waits until `done` holds, polling; false after `secs` seconds.
fn eventually(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    done()
}

/// The issue's two processes over four servers, living together: a person's
/// forget-me asked of one process reaches the other's servers too, and when
/// the bot shrinks to one process, a server exported from the other's data
/// directory is imported, answered from what was said there before, and
/// removed from where it was.
#[test]
fn forget_me_reaches_both_processes_and_a_server_moves_between_them() {
    let mut pair = Pair::start(json!({}));
    for bot in &pair.bots {
        bot.model.fallback(Scripted::text("Noted."));
    }
    let ((g0, c0), (g1, c1)) = (server(0), server(1));
    let hers0 = pair
        .discord
        .say_in(g0, c0, ALICE, "my locker code is 4471, keep it to yourself");
    let hers1 = pair
        .discord
        .say_in(g1, c1, ALICE, "the spare key is under the blue flowerpot");
    let his1 = pair.discord.say_in(
        g1,
        c1,
        BOB,
        "the meetup moved to Thursday at the old library",
    );
    assert!(pair.bots[0].wait_stored(hers0), "{}", pair.bots[0].log());
    assert!(pair.bots[1].wait_stored(hers1), "{}", pair.bots[1].log());
    assert!(pair.bots[1].wait_stored(his1), "{}", pair.bots[1].log());

    // Alice asks shard 0's process to forget her; shard 1's forgets her too.
    let forget = pair.discord.slash_in(
        g0,
        c0,
        ALICE,
        0,
        "memory",
        "forget-me",
        &[("messages", "true")],
    );
    let answer = pair.discord.interaction_text(forget).unwrap_or_default();
    assert!(answer.starts_with("Done: I forgot"), "{answer}");
    // A forgotten message keeps its row (replies still point at it), not its words.
    let gone = |bot: usize, id: u64| {
        pair.bots[bot]
            .store()
            .messages()
            .message(MessageId(id))
            .unwrap()
            .is_none_or(|m| m.content.is_empty())
    };
    assert!(gone(0, hers0));
    assert!(
        eventually(20, || gone(1, hers1)),
        "shard 1's process still holds her words:\n{}",
        pair.bots[1].log()
    );
    assert!(!gone(1, his1), "Bob's words stay");

    // The bot shrinks to one process: both stop, shard 0's data directory
    // takes the whole bot's plan, and server 1 moves into it.
    for bot in &mut pair.bots {
        assert!(bot.halt().success(), "{}", bot.log());
    }
    let guild = g1.to_string();
    let (a, b) = (&pair.bots[0], &pair.bots[1]);
    let exported = b.home.run(&["guild", "export", &guild]);
    assert!(exported.status.success(), "{exported:?}");
    let file = a.home.path().join("server1.json");
    std::fs::write(&file, &exported.stdout).unwrap();
    let import =
        |home: &crate::support::home::Home| home.run(&["guild", "import", file.to_str().unwrap()]);
    let refused = import(&a.home);
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("which this data directory's plan"),
        "still shard 0's directory: {refused:?}"
    );
    a.home
        .edit_settings(json!({"discord": {"shards": "0-1", "totalShards": TOTAL}}));
    let imported = import(&a.home);
    assert!(imported.status.success(), "{imported:?}");
    let removed = b.home.run(&["guild", "remove", &guild, "--yes"]);
    assert!(removed.status.success(), "{removed:?}");
    assert!(
        b.store()
            .messages()
            .message(MessageId(his1))
            .unwrap()
            .is_none()
    );

    // The one process answers in server 1 from what Bob said there before
    // the move, and has nothing of Alice's forgotten words.
    let a = &mut pair.bots[0];
    a.relaunch(&[], "ambient=debug,serenity=warn,poise=warn");
    a.wait_guild_for(g1, Duration::from_secs(20));
    let asked = pair
        .discord
        .say_in(g1, c1, BOB, &mention("where is the meetup now?"));
    assert!(a.wait_stored(asked), "{}", a.log());
    assert!(
        eventually(20, || a
            .model
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains("where is the meetup now?"))),
        "no model call for server 1:\n{}",
        a.log()
    );
    let prompt = a
        .model
        .requests()
        .into_iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("where is the meetup now?"))
        .unwrap();
    assert!(prompt.contains("Thursday at the old library"), "{prompt}");
    assert!(!prompt.contains("blue flowerpot"), "{prompt}");
}
