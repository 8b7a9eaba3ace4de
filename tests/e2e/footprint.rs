//! What the running bot costs the machine: the pages only start-up ran are
//! given back once start-up has settled (also when a server is still in an
//! outage), and the bot runs on without them; its tasks run on one worker
//! thread unless the operator asks for more. The bots that give pages back
//! run their own copy of the binary (`Home::with_own_binary`): other tests'
//! bots mapping the same file would keep its pages resident.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, FakeDiscord, GENERAL, GUILD};
use crate::support::home::Home;
use crate::support::model_server::Scripted;

/// The `(before, after)` resident MB in the bot's "start-up settled" line.
fn settled(log: &str) -> Option<(f64, f64)> {
    let line = log
        .lines()
        .find(|l| l.contains("start-up settled: gave back"))?;
    let (_, figures) = line.split_once("(resident ")?;
    let (before, rest) = figures.split_once(" → ")?;
    let (after, _) = rest.split_once(" MB")?;
    Some((before.parse().ok()?, after.parse().ok()?))
}

/// Waits (a minute at most) for the bot's "start-up settled" line and
/// returns its figures.
fn wait_settled(bot: &Bot) -> (f64, f64) {
    // Settling takes discord::startup_pages::SETTLE (10 s) after the last arrival.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(figures) = settled(&bot.log()) {
            return figures;
        }
        assert!(
            Instant::now() < deadline,
            "start-up never settled:\n{}",
            bot.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A bot against `discord` on its own copy of the binary (see the file
/// comment), returned at once.
fn on_own_binary(discord: FakeDiscord) -> Bot {
    Bot::spawn_with(
        discord,
        json!({}),
        &[],
        "ambient=debug,serenity=warn,poise=warn",
        |settings| Home::new(settings).with_own_binary(),
    )
}

#[test]
fn start_up_pages_are_given_back_once_settled_and_the_bot_answers_on() {
    let bot = on_own_binary(FakeDiscord::start());
    bot.wait_registered();
    bot.wait_guild(GUILD);
    let (before, after) = wait_settled(&bot);
    assert!(
        after < before,
        "resident {before} MB before, {after} MB after"
    );
    assert_eq!(
        bot.log().matches("start-up settled").count(),
        1,
        "given back once"
    );

    // The code paged out is read back as it runs: a mention is answered.
    bot.model.push(Scripted::text("Still here, alice."));
    bot.discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> are you there?"));
    assert!(
        bot.discord
            .wait_until(15, |w| !w.sent_in(GENERAL).is_empty()),
        "no answer after the pages were given back:\n{}",
        bot.log()
    );
    let sent = bot.discord.with(|w| w.sent_in(GENERAL));
    assert_eq!(sent[0]["content"], "Still here, alice.");
}

/// A server in an outage when the bot connects arrives only when the
/// outage is over, perhaps never: start-up settles without it.
#[test]
fn start_up_settles_while_a_server_is_still_in_an_outage() {
    let discord = FakeDiscord::start();
    discord.with(|w| w.unavailable.push(GUILD));
    let bot = on_own_binary(discord);
    bot.wait_registered();
    let (before, after) = wait_settled(&bot);
    assert!(
        after < before,
        "resident {before} MB before, {after} MB after"
    );
    assert!(
        bot.store()
            .messages()
            .guild_channels(ambient::ids::GuildId(GUILD))
            .map_or(true, |c| c.is_empty()),
        "settled before the server arrived"
    );

    // The outage ends: the server arrives, its people are answered, and
    // the pages are not given back a second time.
    bot.discord.outage_over(GUILD);
    bot.wait_guild(GUILD);
    bot.model.push(Scripted::text("Back with you, alice."));
    bot.discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> are you there?"));
    assert!(
        bot.discord
            .wait_until(15, |w| !w.sent_in(GENERAL).is_empty()),
        "no answer once the server arrived:\n{}",
        bot.log()
    );
    assert_eq!(
        bot.log().matches("start-up settled").count(),
        1,
        "given back once"
    );
}

#[test]
fn the_bot_runs_its_tasks_on_one_worker_thread_and_says_so() {
    let bot = Bot::start(json!({}));
    assert!(
        bot.log()
            .contains("tasks run on 1 worker thread (TOKIO_WORKER_THREADS sets how many)"),
        "{}",
        bot.log()
    );
}

#[test]
fn more_worker_threads_answer_the_same_and_none_is_refused() {
    let home = Home::new(json!({}));
    let (events, more) = home.console_with("/help\n", &[("TOKIO_WORKER_THREADS", "3")]);
    assert!(more.status.success(), "{more:?}");
    assert!(
        events.iter().any(|e| e.to_string().contains("/settings")),
        "the help, on three workers: {events:?}"
    );

    let (events, none) = home.console_with("/help\n", &[("TOKIO_WORKER_THREADS", "0")]);
    assert!(!none.status.success());
    assert!(events.is_empty(), "nothing ran: {events:?}");
    assert_eq!(
        String::from_utf8_lossy(&none.stderr).trim(),
        "ambient: TOKIO_WORKER_THREADS=\"0\": expected a whole number of worker threads, \
         1 or more (unset, the bot uses 1)"
    );
}
