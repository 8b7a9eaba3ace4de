//! Live settings: the settings file edited while `ambient run` runs (against
//! the fake Discord), SIGHUP, the owner's `/settings reload`, the console's,
//! and the reflexes folder. Each test waits for what a person would see — a
//! post, an answer, a prompt, a journal line — with a generous deadline.

use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, BOT, GENERAL, MANAGE_GUILD};
use crate::support::home::{Home, LiveConsole};
use crate::support::model_server::Scripted;

fn quiet_initiative() -> serde_json::Value {
    json!({
        "permissions": {"replies": {"discoveryChannelIds": [GENERAL.to_string()]}},
        "initiative": {"text": {"eagerness": 0, "tickSeconds": 1, "minMinutesBetweenPosts": 0}},
    })
}

fn decide_to_post(bot: &Bot) {
    bot.model.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "Quiet in here. Anyone up for a puzzle?", "reason": "the room is idle"}),
    ));
}

#[test]
fn an_edited_settings_file_changes_eagerness_without_a_restart() {
    let bot = Bot::start(quiet_initiative());
    decide_to_post(&bot);
    bot.discord.say(GENERAL, ALICE, "morning all");
    // Ticks run and stop at the eagerness roll: nothing is asked, nothing posted.
    bot.wait_entry(Kind::Gate, |e| e.reason.contains("eagerness roll (0%)"));
    assert!(bot.model.requests().is_empty(), "eagerness 0 asks no model");

    let elsewhere = bot.home.path().join("other-data");
    bot.home.edit_settings(json!({
        "initiative": {"text": {"eagerness": 100}},
        "storage": {"dataDir": elsewhere.to_string_lossy()},
        "network": {"proxy": "http://ann:hunter2@127.0.0.1:9"},
    }));
    assert!(
        bot.discord
            .wait_until(30, |w| !w.sent_in(GENERAL).is_empty()),
        "no post after eagerness went to 100:\n{}",
        bot.log()
    );
    let sent = bot.discord.with(|w| w.sent_in(GENERAL));
    assert_eq!(sent[0]["content"], "Quiet in here. Anyone up for a puzzle?");

    // The journal (in the data directory in use, not the new one) says what changed.
    let entry = bot.wait_entry(Kind::Settings, |e| {
        e.summary.starts_with("settings reloaded")
    });
    assert_eq!(
        entry.summary,
        "settings reloaded from settings.json: 3 changed"
    );
    let reason = &entry.reason;
    assert!(reason.starts_with("a change on disk; "), "{reason}");
    assert!(
        reason.contains("initiative.text.eagerness: 0 → 100"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!(
            "storage.dataDir: {:?} → {:?} (takes effect at the next start)",
            bot.home.data_dir().to_string_lossy(),
            elsewhere.to_string_lossy()
        )),
        "{reason}"
    );
    assert!(
        reason.contains(
            "network.proxy: \"\" → \"http://***@127.0.0.1:9\" (takes effect at the next start)"
        ),
        "{reason}"
    );
    assert!(!elsewhere.exists(), "the data directory is bound at start");
    for (what, text) in [("journal", format!("{entry:?}")), ("log", bot.log())] {
        assert!(
            !text.contains("hunter2"),
            "the proxy's password is in the {what}"
        );
    }
    assert!(bot.stop().success());
}

#[test]
fn a_broken_settings_edit_keeps_the_old_settings_and_says_what_is_wrong() {
    let bot = Bot::start(json!({}));
    bot.model.fallback(Scripted::text("Hello there."));
    let original = std::fs::read_to_string(bot.home.path().join("settings.json")).unwrap();

    // Half a file, as a crash or a slow write leaves it.
    std::fs::write(
        bot.home.path().join("settings.json"),
        &original[..original.len() / 2],
    )
    .unwrap();
    let check = bot.home.run(&["settings", "check"]);
    let syntax = String::from_utf8_lossy(&check.stdout).trim().to_string();
    assert!(
        syntax.starts_with("settings.json:") && syntax.contains("not valid JSON"),
        "{syntax}"
    );
    let refused = bot.wait_entry(Kind::Settings, |e| e.reason.contains("not valid JSON"));
    assert_eq!(
        refused.summary,
        "settings.json not applied: the settings in effect stay"
    );
    assert_eq!(refused.reason, format!("a change on disk; {syntax}"));

    // Valid JSON with one bad value: nothing of it applies, not even the good part.
    bot.home.write_settings(&original);
    bot.home.edit_settings(json!({
        "bot": {"persona": "You are Captain Flint, a pirate of few words."},
        "initiative": {"text": {"eagerness": 150}},
    }));
    let problem = "settings.json: initiative.text.eagerness: must be between 0 and 100, got 150";
    let check = bot.home.run(&["settings", "check"]);
    assert!(
        String::from_utf8_lossy(&check.stdout).contains(problem),
        "settings check words it so"
    );
    bot.wait_entry(Kind::Settings, |e| e.reason.contains(problem));
    assert!(bot.log().contains(problem), "logged too:\n{}", bot.log());

    bot.discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> who are you?"));
    assert!(
        bot.discord
            .wait_until(15, |w| w.sent_in(GENERAL).len() == 1),
        "{}",
        bot.log()
    );
    let prompt = bot.model.requests()[0].body.to_string();
    assert!(
        !prompt.contains("Captain Flint") && prompt.contains("low-key member"),
        "the persona in effect stays: {prompt}"
    );

    // Fixed: the whole file applies.
    bot.home
        .edit_settings(json!({"initiative": {"text": {"eagerness": 50}}}));
    let applied = bot.wait_entry(Kind::Settings, |e| {
        e.summary.starts_with("settings reloaded")
    });
    assert!(
        applied
            .reason
            .contains("initiative.text.eagerness: 20 → 50"),
        "{}",
        applied.reason
    );
    bot.discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> and now?"));
    assert!(
        bot.discord
            .wait_until(15, |w| w.sent_in(GENERAL).len() == 2),
        "{}",
        bot.log()
    );
    let prompt = bot.model.requests()[1].body.to_string();
    assert!(prompt.contains("Captain Flint"), "{prompt}");

    // The README's journal example is what `ambient journal` prints (after each line's time).
    let out = bot
        .home
        .run(&["journal", "--since", "1h", "--type", "settings"]);
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let untimed = |l: &str| l.get(TIMESTAMP_WIDTH..).unwrap_or_default().to_string();
    let printed: Vec<String> = printed.lines().map(untimed).collect();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let example = readme
        .split("$ ambient journal --since 1h --type settings\n")
        .nth(1)
        .expect("the README shows the settings journal");
    for line in example.lines().take_while(|l| !l.starts_with("```")) {
        assert!(
            printed.contains(&untimed(line)),
            "the README shows {line:?}; the journal printed:\n{}",
            printed.join("\n")
        );
    }
    assert!(bot.stop().success());
}

/// `2026-03-02 14:05:11  ` at the start of each `ambient journal` line.
const TIMESTAMP_WIDTH: usize = 21;

#[test]
fn sighup_reloads_and_settings_reload_is_for_the_owner_only() {
    // An hour between ticks: only a tick interval that counts at once can post in time.
    let mut settings = quiet_initiative();
    settings["initiative"]["text"]["tickSeconds"] = json!(3600);
    let bot = Bot::start_with(settings, &["--no-watch"]);
    decide_to_post(&bot);
    // Someone is in the room: the initiative does not talk to an empty one.
    bot.discord.say(GENERAL, ALICE, "morning all");
    let text = |id: u64| {
        bot.discord
            .interaction_text(id)
            .unwrap_or_else(|| panic!("no answer:\n{}", bot.log()))
    };

    // A server manager is not the bot's owner.
    let by_bob = text(
        bot.discord
            .slash(GENERAL, BOB, MANAGE_GUILD, "settings", "reload", &[]),
    );
    assert_eq!(
        by_bob,
        "Only the bot's owner (the application's owner or discord.ownerUserIds) can reload the settings file."
    );
    // The application's owner is; nothing has changed yet.
    let by_alice = text(
        bot.discord
            .slash(GENERAL, ALICE, 0, "settings", "reload", &[]),
    );
    assert_eq!(
        by_alice,
        "settings.json: nothing changed; the settings in effect stay."
    );

    bot.home.edit_settings(json!({
        "initiative": {"text": {"eagerness": 100, "tickSeconds": 1}},
        "discord": {"ownerUserIds": [BOB.id.to_string()]},
    }));
    bot.signal("HUP");
    assert!(
        bot.discord
            .wait_until(30, |w| !w.sent_in(GENERAL).is_empty()),
        "no post after SIGHUP:\n{}",
        bot.log()
    );
    let entry = bot.wait_entry(Kind::Settings, |e| {
        e.summary.starts_with("settings reloaded")
    });
    assert_eq!(
        entry.reason,
        "SIGHUP; discord.ownerUserIds: [] → [\"4\"]; initiative.text.eagerness: 0 → 100; \
         initiative.text.tickSeconds: 3600 → 1"
    );
    // Owners are read live: bob is one now.
    let by_bob = text(
        bot.discord
            .slash(GENERAL, BOB, MANAGE_GUILD, "settings", "reload", &[]),
    );
    assert_eq!(
        by_bob,
        "settings.json: nothing changed; the settings in effect stay."
    );
    assert!(bot.stop().success());
}

#[test]
fn a_new_reflex_file_works_without_a_restart() {
    let bot = Bot::start(json!({}));
    let dir = bot.home.path().join("reflexes");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("ping.yaml"),
        "name: ping\ndescription: Answer a ping\nlevel: 0\ntrigger:\n  pattern: \"^!ping$\"\npipeline:\n  - action: reply\n    message: pong\n",
    )
    .unwrap();
    let entry = bot.wait_entry(Kind::Reflex, |e| e.summary == "reflexes read again");
    assert!(
        entry
            .reason
            .contains("reflexes: 1 loaded from reflexes (1 files)"),
        "{}",
        entry.reason
    );
    bot.discord.say(GENERAL, ALICE, "!ping");
    assert!(
        bot.discord.wait_until(15, |w| w
            .sent_in(GENERAL)
            .iter()
            .any(|m| m["content"] == "pong")),
        "{}",
        bot.log()
    );
    assert!(
        bot.model.requests().is_empty(),
        "a level-0 reflex asks no model"
    );
    assert!(bot.stop().success());
}

/// The console's next notice that starts with `start` (the banner's come first).
fn notice_starting(console: &mut LiveConsole, start: &str) -> String {
    loop {
        let n = console.next_event("notice");
        let text = n["text"].as_str().unwrap().to_string();
        if text.starts_with(start) {
            return text;
        }
    }
}

#[test]
fn the_console_reloads_on_request_and_refuses_a_broken_file() {
    let home = Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}));
    let mut console = home.spawn_console();
    console.next_event("ready");

    let elsewhere = home.path().join("other-data");
    home.edit_settings(json!({
        "initiative": {"text": {"eagerness": 80}},
        "storage": {"dataDir": elsewhere.to_string_lossy()},
    }));
    console.send("/settings reload");
    assert_eq!(
        notice_starting(&mut console, "Reloaded"),
        format!(
            "Reloaded settings.json; in effect now:\n\
             initiative.text.eagerness: 20 → 80\n\
             Takes effect at the next start:\n\
             storage.dataDir: {:?} → {:?}",
            home.data_dir().to_string_lossy(),
            elsewhere.to_string_lossy()
        )
    );
    console.send("/settings show initiative.text.eagerness");
    assert_eq!(
        notice_starting(&mut console, "initiative.text.eagerness"),
        "initiative.text.eagerness = 80 (settings file)"
    );
    console.send("/settings show storage.dataDir");
    assert_eq!(
        notice_starting(&mut console, "storage.dataDir"),
        format!(
            "storage.dataDir = {:?} (settings file)",
            home.data_dir().to_string_lossy()
        ),
        "what is in use until the next start"
    );

    home.edit_settings(json!({"initiative": {"text": {"eagerness": "lots"}}}));
    console.send("/settings reload");
    let refused = notice_starting(&mut console, "settings.json was not applied");
    assert!(
        refused.ends_with(
            "\nsettings.json: initiative.text.eagerness: expected a whole number of 0 or more, got the text \"lots\""
        ),
        "{refused}"
    );
    console.send("/settings show initiative.text.eagerness");
    assert_eq!(
        notice_starting(&mut console, "initiative.text.eagerness"),
        "initiative.text.eagerness = 80 (settings file)"
    );
    drop(console.stdin);
    let _ = console.child.wait();
}
