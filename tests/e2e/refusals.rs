//! Discord refusing a shard is never silent: `ambient run` says which shard,
//! the close code and what to fix in its log and journal, stops retrying
//! the refused shard, goes on with the shards it has, and exits non-zero
//! when none is left. The fake Discord refuses as Discord does (see
//! `support::fake_gateway`): 4010 for a shard it does not serve, 4014 for a
//! privileged intent not switched on.

use std::time::{Duration, Instant};

use ambient::vocab::journal::{Entry, Filter, Kind};
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, FakeDiscord};
use crate::support::fake_gateway::MESSAGE_CONTENT;
use crate::support::home::Home;
use crate::support::model_server::Scripted;
use crate::support::shards::server;

const LOG: &str = "ambient=info,serenity=warn,poise=warn";

/// Whether `log` says what the README's `example` shows, its `…` standing for anything.
fn says_as_the_readme_shows(log: &str, example: &str) -> bool {
    let mut rest = log;
    for part in example.split('…').map(str::trim).filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// A fake Discord serving two servers (server 0 on shard 0 of 2, server 1
/// on shard 1) that has only the one shard it recommends: shard 1 of 2 is
/// refused with 4010. Its HELLO asks for a heartbeat every second, so a
/// refused shard that serenity retries (after its next heartbeat fails)
/// would identify again within seconds.
fn one_shard_discord() -> FakeDiscord {
    let discord = FakeDiscord::start_sharded(1, 2);
    discord.with(|w| {
        w.sharding.only_recommended = true;
        w.heartbeat_interval = Some(Duration::from_secs(1));
    });
    discord
}

/// The journal's error entries, once there is one (waiting up to 30 s).
fn journaled_errors(bot: &Bot) -> Vec<Entry> {
    let store = bot.store();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let errors = store
            .journal()
            .journal_query(&Filter {
                kinds: vec![Kind::Error],
                ..Default::default()
            })
            .unwrap();
        if !errors.is_empty() || Instant::now() > deadline {
            return errors;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// IDENTIFYs of shard `id` of 2 the fake refused with 4010.
fn refused_identifies(discord: &FakeDiscord, id: u32) -> usize {
    discord.with(|w| {
        w.identify_log
            .iter()
            .filter(|i| i.shard == [id, 2] && i.answer.close_code() == Some(4010))
            .count()
    })
}

#[test]
fn a_refused_shard_is_said_and_stopped_while_the_other_shard_answers() {
    let discord = one_shard_discord();
    let bot = Bot::spawn(
        discord.clone(),
        json!({}),
        &["--shards", "0-1", "--total-shards", "2"],
        LOG,
    );
    // Serenity starts shard 1 five seconds after shard 0 (the store is
    // opened alongside only once the bot has made it).
    assert!(
        discord.wait_until(30, |w| w.identify_log.iter().any(|i| i.shard == [1, 2])),
        "shard 1 never identified:\n{}",
        bot.log()
    );
    let errors = journaled_errors(&bot);
    assert_eq!(errors.len(), 1, "{errors:?}\n{}", bot.log());
    let said = &errors[0];
    assert_eq!(
        said.summary,
        "Discord refused shard 1 of 2 (4010 invalid shard)"
    );
    for words in [
        "discord.totalShards/--total-shards (2)",
        "the servers on shard 1 get no answers",
        "shard 0 still runs",
    ] {
        assert!(said.reason.contains(words), "{words:?} in {}", said.reason);
    }
    // As the README's "When Discord refuses a shard" shows it.
    let example = crate::support::readme::block("**When Discord refuses a shard.**", "");
    assert!(
        says_as_the_readme_shows(&bot.log(), example.trim()),
        "{example}\n{}",
        bot.log()
    );

    // Shard 0 goes on: its server is answered.
    let (guild, channel) = server(0);
    bot.wait_guild(guild);
    bot.model.push(Scripted::text("Shard zero is here."));
    discord.say_in(guild, channel, ALICE, &format!("<@{BOT}> anyone home?"));
    assert!(
        discord.wait_until(15, |w| !w.sent_in(channel).is_empty()),
        "shard 0's server got no answer:\n{}",
        bot.log()
    );

    // The refused shard is not identified again: serenity would, after its
    // next heartbeat (1 s here) and a back-off step, again and again.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(refused_identifies(&discord, 1), 1, "{}", bot.log());
    assert!(bot.stop().success());
}

#[test]
fn a_process_whose_only_shard_is_refused_exits_saying_what_to_fix() {
    let discord = one_shard_discord();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("shared")).unwrap();
    let mut bot = Bot::spawn_with(
        discord.clone(),
        json!({"storage": {"dataDir": "./data", "sharedDir": "../shared"}}),
        &["--shards", "1", "--total-shards", "2"],
        LOG,
        |s| Home::new_in(root.path(), s),
    );
    // Shard 1 waits its 6 s turn to identify, then is refused.
    let status = bot.wait_exit(Duration::from_secs(40));
    let log = bot.log();
    let status = status.unwrap_or_else(|| panic!("still running after the refusal:\n{log}"));
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains("ambient: Discord refused shard 1 of 2 (4010 invalid shard): the gateway does not accept shard 1 of 2"),
        "the last line says why:\n{log}"
    );
    let errors = journaled_errors(&bot);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .reason
            .contains("no shard of this process is left running"),
        "{}",
        errors[0].reason
    );
    assert_eq!(refused_identifies(&discord, 1), 1);
}

#[test]
fn a_privileged_intent_not_switched_on_is_said_and_the_process_exits() {
    let discord = FakeDiscord::start();
    discord.with(|w| w.sharding.privileged_off = MESSAGE_CONTENT);
    let mut bot = Bot::spawn(discord, json!({}), &[], LOG);
    let status = bot.wait_exit(Duration::from_secs(30));
    let log = bot.log();
    let status = status.unwrap_or_else(|| panic!("still running after the refusal:\n{log}"));
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains(
            "ambient: Discord refused shard 0 of 1 (4014 disallowed intents): the bot asks for a \
             privileged intent that is not switched on for it: on the Developer Portal's Bot page \
             switch on Message Content Intent"
        ),
        "{log}"
    );
    // As the README's Discord setup quotes it.
    let example = crate::support::readme::example("Discord refused shard 0 of 1");
    assert!(says_as_the_readme_shows(&log, &example), "{example}\n{log}");
    let errors = journaled_errors(&bot);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0].summary,
        "Discord refused shard 0 of 1 (4014 disallowed intents)"
    );
}
