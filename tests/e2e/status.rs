//! One status widget: the console's `/status`, `ambient status` and
//! `/ambient status` in Discord show the same lines from one function, and
//! the initiative part says what the engine will do next and why.

use std::sync::Arc;

use ambient::clock::{Clock, SystemClock};
use ambient::commands::status::{Sources, discord_text, widget};
use ambient::ids::{ChannelId, GuildId};
use ambient::journal::Journal;
use ambient::store::Store;
use ambient::vocab::journal::{Entry, Kind};
use ambient::vocab::pending::PendingThought;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{BOB, GENERAL, GUILD, RANDOM};
use crate::support::home::{Home, events_of};
use crate::support::model_server::{ModelServer, Scripted};
use crate::support::world::{self, GUILD_A, GUILD_B, MEMES, World};

const DRAFT: &str = "cats are liquid, discuss";

/// Settings shared by the binary tests: a model for every role, one channel
/// open to ambient posts, a 45-minute revisit. The garden is off so its
/// "next: ~30m" (relative to the wall clock) cannot differ between two runs.
fn binary_settings(pool: u64) -> Value {
    json!({
        "garden": {"enabled": false},
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9", "allowPayPerTokenForAutonomous": true},
        "initiative": {"text": {"revisitMinutes": 45, "eagerness": 0}},
        "permissions": {"replies": {"discoveryChannelIds": [pool.to_string()]}},
    })
}

/// Stores a held thought and one ambient post, as the engine would; returns when the thought was held.
fn seed(store: &Store, guild: GuildId, channel: ChannelId) -> DateTime<Utc> {
    let held_at = Utc::now() - Duration::minutes(5);
    let p = PendingThought::new(
        guild,
        DRAFT.into(),
        Some(channel),
        "the channel is quiet".into(),
        None,
        held_at,
        Duration::minutes(180),
    );
    store.initiative().save_pending_thought(&p).unwrap();
    // Someone spoke there lately: the room is not empty.
    store
        .messages()
        .insert_message(&ambient::store::messages::StoredMessage::said(
            ambient::ids::MessageId(ambient::ids::next_snowflake(held_at)),
            Some(guild),
            channel,
            ambient::ids::UserId(77),
            "ada",
            "cats, though",
            held_at,
        ))
        .unwrap();
    Journal::new(store.journal(), Arc::new(SystemClock)).record(
        Entry::new(Kind::InitiativePost, "posted in #memes").place(Some(guild), Some(channel)),
    );
    held_at
}

/// The initiative lines `seed` leads to with `binary_settings`.
fn seeded_lines(held_at: DateTime<Utc>) -> Vec<String> {
    let hm = |t: DateTime<Utc>| t.format("%H:%M UTC").to_string();
    vec![
        format!(
            "initiative: next look at {}",
            hm(held_at + Duration::minutes(45))
        ),
        format!(
            "held thought: \"{DRAFT}\" (revision 1, since {}, expires {})",
            hm(held_at),
            hm(held_at + Duration::minutes(180))
        ),
        "posts today: 1/6 (last 24 h)".into(),
    ]
}

/// `ambient status`'s widget lines: without the version line, and without
/// the operator view's one header naming the server.
fn cli_widget(out: &std::process::Output, server_header: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let lines: Vec<String> = text.lines().skip(1).map(String::from).collect();
    let at = lines
        .iter()
        .position(|l| l == server_header)
        .unwrap_or_else(|| panic!("no {server_header:?} in:\n{text}"));
    assert!(lines[at + 1].starts_with("initiative: "), "{text}");
    // The widget is shared with /status; what is kept for how long follows
    // it in `ambient status` alone (the retention tests read that part).
    let kept = lines
        .iter()
        .position(|l| l.starts_with("What is kept"))
        .unwrap_or_else(|| panic!("no retention after the widget in:\n{text}"));
    let mut widget = lines[..kept].to_vec();
    widget.remove(at);
    widget
}

#[test]
fn the_console_status_and_ambient_status_show_the_same_lines() {
    let server = ModelServer::start();
    let memes = ambient::console::channel_id("memes");
    let guild = ambient::console::guild_id();
    let home = Home::new(binary_settings(memes.0));
    let held_at = {
        let store = Store::open(&home.data_dir()).unwrap();
        store
            .messages()
            .upsert_guild(guild, "console", Utc::now())
            .unwrap();
        store
            .messages()
            .upsert_channel(memes, Some(guild), "memes", Utc::now())
            .unwrap();
        seed(&store, guild, memes)
    };
    let env = [
        ("OPENAI_BASE_URL", server.openai_base()),
        ("OPENAI_API_KEY", "sk-test-status".to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let (events, out) = home.console_with("/status\n", &env);
    assert!(out.status.success());
    let notices: Vec<String> = events_of(&events, "notice")
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    let from = notices
        .iter()
        .position(|n| n.starts_with("garden "))
        .unwrap_or_else(|| panic!("no widget in {notices:#?}"));
    let console = notices[from..].to_vec();
    assert_eq!(console[0], "garden ○ off (garden.enabled)");
    assert!(
        console.contains(&"model reply    openai:gpt-5.2".to_string()),
        "{console:#?}"
    );
    assert!(
        console.ends_with(&seeded_lines(held_at)),
        "the initiative lines close the widget: {console:#?}"
    );

    let mut cli = home.command(&["status"]);
    for (k, v) in &env {
        cli.env(k, v);
    }
    let cli = cli_widget(
        &cli.output().unwrap(),
        &format!("server console ({guild}):"),
    );
    assert_eq!(cli, console, "ambient status and the console's /status");
    assert!(server.requests().is_empty(), "status calls no model");
}

#[test]
fn ambient_status_in_discord_shows_the_same_lines_in_one_message() {
    let bot = Bot::start(binary_settings(RANDOM));
    let guild = GuildId(GUILD);
    let held_at = seed(&bot.store(), guild, ChannelId(RANDOM));

    let id = bot.discord.slash(GENERAL, BOB, 0, "ambient", "status", &[]);
    let reply = bot
        .discord
        .interaction_reply(id)
        .unwrap_or_else(|| panic!("no reply:\n{}", bot.log()));
    let text = reply["data"]["content"].as_str().unwrap();
    assert!(text.chars().count() <= 2000, "one Discord message: {text}");
    let discord: Vec<String> = text.lines().map(String::from).collect();
    assert!(discord.ends_with(&seeded_lines(held_at)), "{text}");

    let cli = bot
        .home
        .command(&["status"])
        .env("OPENAI_BASE_URL", bot.model.openai_base())
        .env("OPENAI_API_KEY", "sk-test-bot")
        .output()
        .unwrap();
    let cli = cli_widget(&cli, &format!("server Test Server ({GUILD}):"));
    assert_eq!(cli, discord, "ambient status and /ambient status");
    assert!(bot.model.requests().is_empty(), "status calls no model");
}

fn initiative(world: &World, guild: GuildId) -> Vec<String> {
    let lines = widget(&Sources::of(&world.app), Some(guild));
    lines[lines.len() - 3..].to_vec()
}

#[tokio::test]
async fn the_initiative_lines_follow_the_engine_from_fresh_to_held_to_posted_to_capped() {
    let mut s = world::settings();
    s.initiative.text.min_minutes_between_posts = 30;
    s.initiative.text.revisit_minutes = 10;
    let world = World::start(s).await;
    let set = |g, path: &str, value: &str| {
        world
            .app
            .settings
            .set_override(g, path, value, None)
            .unwrap();
    };
    set(GUILD_B, "initiative.text.enabled", "false");
    assert_eq!(
        initiative(&world, GUILD_A),
        [
            "initiative: next look at the next tick (every 60s)",
            "held thought: none",
            "posts today: 0/6 (last 24 h)"
        ]
    );
    assert_eq!(
        initiative(&world, GUILD_B)[0],
        "initiative: no next look: initiative.text.enabled is off"
    );

    let decide = |v: Value| Scripted::tool("decide", v);
    world.model.push(decide(
        json!({"action": "hold", "channel": "memes", "text": "draft one", "reason": "wait"}),
    ));
    world.tick().await;
    assert_eq!(
        initiative(&world, GUILD_A),
        [
            "initiative: next look at 12:10 UTC",
            "held thought: \"draft one\" (revision 1, since 12:00 UTC, expires 15:00 UTC)",
            "posts today: 0/6 (last 24 h)"
        ],
        "the test clock starts at 12:00 UTC"
    );

    world.clock.advance(Duration::minutes(10));
    world.model.push(decide(
        json!({"action": "post", "channel": "memes", "text": "cats are liquid", "reason": "now"}),
    ));
    world.tick().await;
    assert_eq!(world.said().len(), 1);
    assert_eq!(
        initiative(&world, GUILD_A),
        [
            "initiative: next look at 12:40 UTC",
            "held thought: none",
            "posts today: 1/6 (last 24 h)"
        ]
    );

    set(GUILD_A, "permissions.replies.maxMessagesPerHour", "1");
    set(
        GUILD_A,
        "permissions.replies.discoveryChannelIds",
        &format!("[\"{}\"]", MEMES.0),
    );
    let closed = "initiative: no next look: nothing could be delivered in any eligible channel now: each is at permissions.replies.maxMessagesPerHour or refused the bot's last message";
    assert_eq!(initiative(&world, GUILD_A)[0], closed, "the running bot");
    let store_only = Sources {
        running: None,
        ..Sources::of(&world.app)
    };
    assert_eq!(
        widget(&store_only, Some(GUILD_A))
            .iter()
            .rev()
            .nth(2)
            .unwrap(),
        closed,
        "ambient status, from the store alone"
    );
    world
        .app
        .settings
        .reset_override(GUILD_A, "permissions.replies.maxMessagesPerHour")
        .unwrap();

    set(GUILD_A, "initiative.text.maxPostsPerDay", "1");
    assert_eq!(
        initiative(&world, GUILD_A)[0],
        "initiative: no next look: 1 of 1 posts in the last 24 h (initiative.text.maxPostsPerDay)"
    );
    set(GUILD_A, "permissions.replies.discoveryChannelIds", "[]");
    assert_eq!(
        initiative(&world, GUILD_A)[0],
        "initiative: no next look: no channel is open to unprompted posts (permissions.replies.discoveryChannelIds is empty)"
    );

    let operator = widget(&Sources::of(&world.app), None);
    let at = operator
        .iter()
        .position(|l| l == &format!("server Guild A ({GUILD_A}):"))
        .unwrap_or_else(|| panic!("{operator:#?}"));
    assert_eq!(
        operator[at + 1..at + 4],
        initiative(&world, GUILD_A)[..],
        "the operator sees each server's lines under its name"
    );
    assert!(operator.contains(&format!("server Guild B ({GUILD_B}):")));
}

#[tokio::test]
async fn a_long_held_thought_is_cut_and_the_widget_fits_one_discord_message() {
    let world = World::start(world::settings()).await;
    let now = world.clock.now();
    let long = format!("first line\n{}", "x".repeat(5_000));
    let p = PendingThought::new(
        GUILD_A,
        long,
        Some(MEMES),
        "r".into(),
        None,
        now,
        Duration::hours(3),
    );
    world
        .app
        .store()
        .initiative()
        .save_pending_thought(&p)
        .unwrap();
    let lines = widget(&Sources::of(&world.app), Some(GUILD_A));
    let held = lines
        .iter()
        .find(|l| l.starts_with("held thought: "))
        .unwrap();
    assert!(
        held.starts_with(&format!("held thought: \"first line {}…\"", "x".repeat(69))),
        "{held}"
    );
    assert!(lines.iter().all(|l| l.chars().count() <= 300), "{lines:#?}");
    let text = discord_text(&lines);
    assert_eq!(text, lines.join("\n"), "nothing is dropped");
    assert!(text.chars().count() <= 2000, "{}", text.chars().count());
}
