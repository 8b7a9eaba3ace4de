//! `ambient doctor`, the real binary against the fake Discord, the fake
//! model server and a feed server: a healthy setup is all ✓ with exit 0, and each misconfiguration
//! it can find is one ✗ line with its fix, and exit 1.

use std::process::Output;

use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{
    BOT_ROLE, FakeDiscord, GATEWAY_MESSAGE_CONTENT, GENERAL, GUILD, LOUNGE, RANDOM, TOKEN,
};
use crate::support::feed_server::{FeedServer, rss_blog};
use crate::support::home::Home;
use crate::support::model_server::{ModelServer, Scripted};
use crate::support::readme;
use crate::support::tmpfs::Tmpfs;

/// Permissions @everyone has in a server set up the usual way: what the bot needs, no more.
const EVERYDAY: u64 = (1 << 10) | (1 << 11) | (1 << 14) | (1 << 15) | (1 << 6) | (1 << 16);

fn channels() -> Value {
    json!({"permissions": {"replies": {"replyChannelIds": [GENERAL.to_string()],
        "discoveryChannelIds": [RANDOM.to_string()]}}})
}

/// Discord permission bits for voice channels.
const CONNECT: u64 = 1 << 20;
const SPEAK: u64 = 1 << 21;

/// The server set up the usual way, but for an overwrite on #random that
/// denies @everyone Send Messages.
fn deny_send_in_random(bot: &Bot) {
    bot.discord.with(|w| {
        w.everyone_permissions = Some(EVERYDAY);
        w.overwrites.insert(
            RANDOM,
            vec![json!({"id": GUILD.to_string(), "type": 0,
            "allow": "0", "deny": (1u64 << 11).to_string()})],
        );
    });
}

/// A bot that ran once (so its commands are registered) and stopped, in its home.
fn ran_once(extra: Value) -> Bot {
    ran_once_in(extra, Home::new)
}

/// [`ran_once`] in the home `make` makes from the settings.
fn ran_once_in(extra: Value, make: impl FnOnce(Value) -> Home) -> Bot {
    let mut settings = channels();
    crate::support::home::merge(&mut settings, extra);
    let mut bot = Bot::spawn_with(
        FakeDiscord::start(),
        settings,
        &[],
        "ambient=debug,serenity=warn,poise=warn",
        make,
    );
    bot.wait_registered();
    bot.wait_guild(GUILD);
    bot.halt();
    bot.model
        .fallback(Scripted::tool("doctor_ping", json!({"ok": true})));
    bot
}

/// [`ran_once`] with its data directory on a tmpfs of its own, where one can
/// be mounted (else on the machine's disk, said on stderr). Bound as
/// `(bot, disk)`, the disk is let go first: it unmounts before the home goes.
fn ran_once_on_tmpfs(extra: Value) -> (Bot, Option<Tmpfs>) {
    let mut disk = None;
    let bot = ran_once_in(extra, |settings| {
        let home = Home::new(settings);
        disk = Tmpfs::mount(&home.data_dir());
        home
    });
    (bot, disk)
}

/// `ambient doctor ARGS` in the bot's home, with its token and model server.
fn doctor_of(bot: &Bot, args: &[&str], env: &[(&str, &str)]) -> (String, Output) {
    doctor(&bot.home, Some(&bot.model), args, env)
}

fn doctor(
    home: &Home,
    model: Option<&ModelServer>,
    args: &[&str],
    env: &[(&str, &str)],
) -> (String, Output) {
    let mut cmd = home.command(&[&["doctor"], args].concat());
    cmd.env("DISCORD_TOKEN", TOKEN);
    if let Some(m) = model {
        cmd.env("OPENAI_BASE_URL", m.openai_base())
            .env("OPENAI_API_KEY", "sk-test-doctor");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run ambient doctor");
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

/// The lines that start with `mark`.
fn marked<'a>(text: &'a str, mark: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(mark)).collect()
}

/// Asserts exactly one ✗ line, that it contains `line`, that the fix after it
/// contains `fix`, and exit 1.
fn fails_once_with(text: &str, out: &Output, line: &str, fix: &str) {
    let failed = marked(text, "✗");
    assert_eq!(failed.len(), 1, "one ✗ expected:\n{text}");
    assert!(failed[0].contains(line), "{line:?} expected:\n{text}");
    let after: Vec<&str> = text.lines().skip_while(|l| !l.starts_with('✗')).collect();
    assert!(
        after
            .get(1)
            .is_some_and(|l| l.trim_start().starts_with('→') && l.contains(fix)),
        "the fix {fix:?} expected under it:\n{text}"
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
}

#[test]
fn a_healthy_setup_is_all_ticks_and_exit_zero() {
    let bot = ran_once(json!({}));
    let (text, out) = doctor_of(&bot, &[], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in [
        "✓ settings",
        "✓ data directory",
        "✓ free disk",
        "✓ database: ",
        "✓ discord token: logs in as ambient",
        "✓ clock",
        "✓ message content intent: on",
        "✓ #general (Test Server): has View Channel, Send Messages",
        "✓ #random (Test Server)",
        "✓ slash commands: 9 registered in server 100",
    ] {
        assert!(text.contains(name), "{name:?} expected:\n{text}");
    }
    assert!(
        marked(&text, "✗").is_empty() && marked(&text, "!").is_empty(),
        "{text}"
    );
    assert!(!text.contains(TOKEN) && !String::from_utf8_lossy(&out.stderr).contains(TOKEN));
    assert!(!text.contains("sk-test-doctor"), "{text}");
    // Each role's model made one forced tool call; the line says what it took.
    let models = marked(&text, "✓ model ");
    assert!(
        !models.is_empty()
            && models.iter().all(|l| l
                .contains("called the tool; 100 tokens in, 20 out, no charge (a local endpoint)")),
        "{text}"
    );
    let asked = bot.model.requests();
    assert_eq!(asked.len(), models.len(), "one request per model:\n{text}");
    for r in &asked {
        assert_eq!(
            r.body["tool_choice"]["function"]["name"], "doctor_ping",
            "{:#}",
            r.body
        );
        assert_eq!(
            r.body["tools"].as_array().map(Vec::len),
            Some(1),
            "{:#}",
            r.body
        );
    }
}

#[test]
fn a_model_that_answers_without_the_tool_fails_and_no_model_skips_the_call() {
    let bot = ran_once(json!({}));
    bot.model.fallback(Scripted::text("pong"));
    let (text, out) = doctor_of(&bot, &[], &[]);
    let failed = marked(&text, "✗");
    assert!(!failed.is_empty(), "{text}");
    for line in &failed {
        assert!(
            line.starts_with("✗ model ") && line.contains("answered without calling the tool"),
            "{text}"
        );
    }
    assert!(
        text.contains("→ choose a model that supports tool calls in executive.roles.reply.model"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
    let asked = bot.model.requests().len();
    let (text, out) = doctor_of(&bot, &["--no-model"], &[]);
    assert!(
        text.contains("! models: not checked (--no-model)"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(
        bot.model.requests().len(),
        asked,
        "--no-model asked a model:\n{text}"
    );
}

#[test]
fn a_wrong_token_is_said_with_where_to_get_the_right_one() {
    let bot = ran_once(json!({}));
    let (text, out) = doctor_of(&bot, &[], &[("DISCORD_TOKEN", "not-the-token")]);
    fails_once_with(
        &text,
        &out,
        "the token in DISCORD_TOKEN is not valid: Discord answered 401",
        "copy the bot token again from the Developer Portal",
    );
    assert!(!text.contains("not-the-token"), "{text}");
}

#[test]
fn the_message_content_intent_off_names_the_portal_page() {
    let bot = ran_once(json!({}));
    bot.discord.with(|w| w.app_flags = 0);
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        "✗ message content intent: off",
        "turn on Message Content Intent in the Developer Portal",
    );
}

#[test]
fn server_members_is_checked_only_when_the_settings_ask_for_it() {
    let bot = ran_once(json!({}));
    bot.discord.with(|w| w.app_flags = GATEWAY_MESSAGE_CONTENT);
    let (text, out) = doctor_of(&bot, &[], &[]);
    assert!(!text.contains("server members intent"), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    bot.home
        .edit_settings(json!({"discord": {"membersIntent": true}}));
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        "✗ server members intent: off, but discord.membersIntent asks for it",
        "turn on Server Members Intent in the Developer Portal",
    );
}

#[test]
fn a_channel_overwrite_denying_send_fails_that_channel_only() {
    let bot = ran_once(json!({}));
    deny_send_in_random(&bot);
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        "✗ #random (Test Server): missing Send Messages",
        "allow Send Messages for the bot's role",
    );
    assert!(text.contains("✓ #general (Test Server)"), "{text}");
}

#[test]
fn commands_not_registered_say_to_start_the_bot_once() {
    let discord = FakeDiscord::start();
    let mut settings = channels();
    crate::support::home::merge(
        &mut settings,
        json!({"discord": {"apiBaseUrl": discord.url, "devGuildId": GUILD.to_string()}}),
    );
    let home = Home::new(settings);
    let (text, out) = doctor(&home, None, &["--no-model"], &[]);
    let failed = marked(&text, "✗");
    assert_eq!(failed.len(), 1, "{text}");
    assert!(
        failed[0].starts_with(
            "✗ slash commands: not registered in server 100 (discord.devGuildId): /settings"
        ),
        "{text}"
    );
    assert!(
        text.contains("start the bot once with `ambient run`"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_feed_that_answers_404_is_named_with_its_setting() {
    let feeds = FeedServer::start_at(chrono::Utc::now());
    feeds.set(
        "/blog.xml",
        "application/rss+xml",
        rss_blog(chrono::Utc::now()),
    );
    let bot = ran_once(json!({"network": {"allowPrivateHosts": true},
        "initiative": {"discovery": {"rssFeeds": [format!("{}/blog.xml", feeds.url), format!("{}/gone.xml", feeds.url)]}}}));
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        "/gone.xml: HTTP 404",
        "remove it from initiative.discovery.rssFeeds",
    );
    assert!(
        text.contains(&format!("✓ rss source {}/blog.xml", feeds.url)),
        "{text}"
    );
}

/// The data directory on a real filesystem that is nearly full: ✗ under
/// 256 MiB free, ! under 2 GiB (and still exit 0), read from the filesystem itself.
#[test]
fn a_nearly_full_disk_fails_and_a_low_one_warns() {
    let (bot, Some(disk)) = ran_once_on_tmpfs(json!({})) else {
        eprintln!(
            "SKIPPED: no tmpfs can be mounted here; the unit tests of doctor::local cover the levels"
        );
        return;
    };
    let at = bot.home.data_dir();
    disk.leave_free(10 * 1024 * 1024);
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        &format!("✗ free disk: 10 MiB free for {}", at.display()),
        "free space on that filesystem (at least 256 MiB",
    );
    disk.leave_free(1024 * 1024 * 1024);
    let (text, out) = doctor_of(&bot, &[], &[]);
    assert!(
        marked(&text, "! free disk: 1024 MiB free").len() == 1,
        "{text}"
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning alone is not a failure:\n{text}"
    );
}

#[test]
fn a_corrupt_database_says_to_restore_a_backup() {
    let bot = ran_once(json!({}));
    let db = bot.home.data_dir().join("ambient.db");
    for side in ["ambient.db-wal", "ambient.db-shm"] {
        // Harmless: a stopped bot may have left neither.
        let _ = std::fs::remove_file(bot.home.data_dir().join(side));
    }
    std::fs::write(&db, vec![0x5a; 8192]).unwrap();
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        "✗ database:",
        "restore the newest backup with `ambient restore FILE`",
    );
}

#[test]
fn a_clock_a_minute_off_discords_date_fails() {
    let bot = ran_once(json!({}));
    bot.discord.with(|w| w.clock_skew = -60);
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        "✗ clock: 60 s ahead of Discord's",
        "synchronise the clock",
    );
}

#[test]
fn json_is_one_document_of_checks_for_scripts() {
    let bot = ran_once(json!({}));
    bot.discord.with(|w| w.app_flags = 0);
    let (text, out) = doctor_of(&bot, &["--json"], &[]);
    let report: Value = serde_json::from_str(&text).expect("one JSON document");
    let checks = report["checks"].as_array().unwrap();
    let intent = checks
        .iter()
        .find(|c| c["name"] == "message content intent")
        .unwrap();
    assert_eq!(intent["status"], "fail");
    assert!(
        intent["fix"]
            .as_str()
            .unwrap()
            .contains("Message Content Intent")
    );
    let token = checks
        .iter()
        .find(|c| c["name"] == "discord token")
        .unwrap();
    assert_eq!(
        (token["status"].clone(), token["fix"].clone()),
        (json!("ok"), Value::Null)
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_readmes_example_is_what_it_prints() {
    // The README shows a data directory with 50 GB free: a tmpfs with that
    // much free where one can be mounted, else this machine's own free space.
    let (bot, disk) = ran_once_on_tmpfs(json!({"storage": {"dataDir": "data"}}));
    if let Some(disk) = &disk {
        disk.leave_free(51_200_000_000);
    }
    deny_send_in_random(&bot);
    let line = readme::example("ambient doctor --no-model");
    let out = bot.home.shell(&line, &[("DISCORD_TOKEN", TOKEN)]);
    let shown = readme::block("denies @everyone Send Messages in #random", "");
    let mut printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if disk.is_none() {
        eprintln!("the free disk line is this machine's: compared without its number");
        let readmes = shown.lines().find(|l| l.starts_with("✓ free disk: "));
        let ours = printed.lines().find(|l| l.starts_with("✓ free disk: "));
        if let (Some(readmes), Some(ours)) = (readmes, ours) {
            printed = printed.replace(ours, readmes);
        }
    }
    assert_eq!(printed, shown.trim());
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_role_turned_off_is_as_chosen_and_asks_no_model() {
    let bot = ran_once(
        json!({"executive": {"roles": {"reflex": {"provider": "none"},
        "extract": {"provider": "none"}}}}),
    );
    let (text, out) = doctor_of(&bot, &[], &[]);
    assert!(
        text.contains("✓ model for reflex: none, as executive.roles.reflex.provider says"),
        "{text}"
    );
    assert!(
        !text.contains("(reflex") && !text.contains("extract)"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(
        bot.model.requests().len(),
        1,
        "only the reply and ambient roles' model is asked:\n{text}"
    );
}

#[test]
fn a_channel_in_no_server_of_the_bots_is_named_with_its_setting() {
    let bot = ran_once(json!({}));
    bot.home.edit_settings(
        json!({"permissions": {"replies": {"replyChannelIds": [GENERAL.to_string(), "999"]}}}),
    );
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        "✗ channel 999: named in permissions.replies.replyChannelIds but in no server the bot is in",
        "invite the bot to that channel's server, or remove the id from permissions.replies.replyChannelIds",
    );
}

/// A voice channel the settings name (`voice.links`) is checked for Connect
/// and Speak: ✓ as the server allows them, ✗ naming the channel and the
/// permission once an overwrite denies the bot's role Connect there.
#[test]
fn a_voice_channel_denying_the_bots_role_connect_fails_naming_both() {
    let bot = ran_once(
        json!({"voice": {"links": [{"voiceChannelId": LOUNGE.to_string(),
        "textChannelId": GENERAL.to_string()}]}}),
    );
    bot.discord.with(|w| {
        w.voice_channel = true;
        w.everyone_permissions = Some(EVERYDAY | CONNECT | SPEAK);
    });
    let (text, out) = doctor_of(&bot, &[], &[]);
    assert!(
        text.contains("✓ #lounge (Test Server): has View Channel, Connect, Speak\n"),
        "{text}"
    );
    assert!(marked(&text, "✗").is_empty(), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");

    bot.discord.with(|w| {
        w.overwrites.insert(
            LOUNGE,
            vec![json!({"id": BOT_ROLE.to_string(), "type": 0,
                "allow": "0", "deny": CONNECT.to_string()})],
        );
    });
    let (text, out) = doctor_of(&bot, &[], &[]);
    fails_once_with(
        &text,
        &out,
        "✗ #lounge (Test Server): missing Connect",
        "in Discord, Edit Channel #lounge → Permissions: allow Connect for the bot's role",
    );
}
