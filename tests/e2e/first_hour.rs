//! The first hour: what a newcomer tries, exactly as the README says it,
//! and what a busy channel costs. Each test shows what a person sees — the
//! console's output, a post, a reaction — and which model requests did *not*
//! happen.

use ambient::attention::Addressed;
use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::conversation::{model_env, with_env};
use crate::support::home::{Home, events_of, notices};
use crate::support::model_server::{ModelServer, Scripted};
use crate::support::readme::example as readme_example;
use crate::support::world::{self, GENERAL, World};

/// Runs the README's example starting with `prefix` exactly as written,
/// with `server` as the model; returns the home and what was printed.
fn run_readme_example(prefix: &str, server: &ModelServer) -> (Home, String) {
    let example = readme_example(prefix);
    let home = home();
    let out = home.shell(&example, &with_env(&model_env(server)));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (home, text)
}

fn home() -> Home {
    Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}))
}

#[test]
fn the_readme_greeting_example_waves_at_the_mention_without_a_model() {
    let server = ModelServer::start();
    server.fallback(Scripted::text("a paid answer that should not be needed"));
    let (_home, text) =
        run_readme_example("printf 'hi\\n@ambient hello\\n' | ambient console", &server);
    assert_eq!(
        text.matches("[#general] ambient reacted 👋").count(),
        1,
        "only the mention gets the wave: {text}"
    );
    assert!(!text.contains("a paid answer"), "{text}");
    assert!(server.requests().is_empty(), "no model was asked");
}

#[test]
fn addressed_reflexes_fire_in_the_console_as_on_discord() {
    let server = ModelServer::start();
    server.fallback(Scripted::text("a paid answer that should not be needed"));
    let home = home();
    let (events, out) = home.console_with(
        "@ambient what did you do today?\n\
         @ambient remind me in 10 minutes to stretch\n\
         /wait 11m\n",
        &with_env(&model_env(&server)),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said: Vec<&str> = events_of(&events, "message")
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(said.len(), 3, "{events:#?}");
    assert!(said[0].starts_with("Here is what I did today"), "{said:?}");
    assert!(
        said[1].starts_with("Okay ada, I'll remind you in 10 minutes: stretch"),
        "{said:?}"
    );
    assert!(
        said[2].ends_with("reminder: stretch"),
        "the reminder arrives after /wait: {said:?}"
    );
    assert!(server.requests().is_empty(), "no model was asked");
}

#[test]
fn the_readme_initiative_example_shows_an_ambient_post_in_five_simulated_minutes() {
    let server = ModelServer::start();
    server.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "Quiet in here. Anyone watching the eclipse?", "reason": "the room is idle"}),
    ));
    let (home, text) = run_readme_example(
        "printf '/channels\\n/settings set permissions.replies.discoveryChannelIds #general",
        &server,
    );
    let general = ambient::console::channel_id("general").to_string();
    assert!(
        text.contains(&format!("#general              {general}  (you are here)")),
        "/channels shows the id: {text}"
    );
    assert!(
        text.contains(&format!(
            "permissions.replies.discoveryChannelIds = [\"{general}\"] for this server."
        )),
        "#general was taken by name: {text}"
    );
    assert!(
        text.contains("[#general] ambient: Quiet in here. Anyone watching the eclipse?"),
        "{text}"
    );
    let journal = home.run(&["journal", "--since", "2h", "--type", "initiative_post"]);
    assert!(
        String::from_utf8_lossy(&journal.stdout).contains("posted in #general — the room is idle")
    );
}

#[test]
fn the_readme_quiet_hours_example_is_quiet_at_half_past_eleven_in_berlin() {
    let server = ModelServer::start();
    server.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "a post at night", "reason": "r"}),
    ));
    let (home, text) = run_readme_example(
        "printf '/settings set guild.timezone Europe/Berlin",
        &server,
    );
    assert!(
        text.contains("23:30 Europe/Berlin)"),
        "the wait ends at 23:30: {text}"
    );
    assert!(
        text.contains("initiative: no next look: quiet hours until 08:00 Europe/Berlin (initiative.quietHours \"23:00-08:00\")"),
        "{text}"
    );
    assert!(
        text.contains(
            "quiet hours \"23:00-08:00\" (Europe/Berlin): quiet until 08:00 Europe/Berlin"
        ),
        "{text}"
    );
    assert!(!text.contains("a post at night"), "{text}");
    let journal = home.run(&["journal", "--since", "48h", "--type", "gate"]);
    assert!(
        String::from_utf8_lossy(&journal.stdout)
            .contains("initiative stopped at the quiet_hours gate"),
        "{}",
        String::from_utf8_lossy(&journal.stdout)
    );
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.body.to_string().contains("AMBIENT TEXT MODE")),
        "no initiative call"
    );
}

#[test]
fn a_channel_named_that_does_not_exist_is_refused_with_the_known_names() {
    let home = home();
    let (events, _) = home.console(
        "/channel memes\n/settings set permissions.replies.replyChannelIds #memes, #nope\n\
         /settings set permissions.replies.replyChannelIds <#123>, #memes\n",
    );
    let notices = notices(&events);
    assert!(
        notices.contains(
            &"permissions.replies.replyChannelIds: this server has no channel named #nope \
              (channels the bot knows here: #general, #memes)"
        ),
        "{notices:#?}"
    );
    let memes = ambient::console::channel_id("memes").to_string();
    assert!(
        notices.contains(
            &format!(
                "permissions.replies.replyChannelIds = [\"123\",\"{memes}\"] for this server."
            )
            .as_str()
        ),
        "{notices:#?}"
    );
}

#[test]
fn a_line_that_is_not_utf8_is_skipped_and_the_session_goes_on() {
    let home = home();
    let mut input = b"first line\n".to_vec();
    input.extend_from_slice(b"caf\xe9 latin-1\n");
    input.extend_from_slice(b"@ambient hello\n");
    let (events, out) = home.console_bytes(&input);
    assert!(out.status.success());
    let notices = notices(&events);
    assert!(
        notices.contains(&"line 2 skipped: it is not valid UTF-8 text"),
        "{notices:#?}"
    );
    assert_eq!(events_of(&events, "stored").len(), 2, "{events:#?}");
    assert_eq!(
        events_of(&events, "reaction").len(),
        1,
        "the later line was heard: {events:#?}"
    );
}

/// 600 unaddressed messages over two hours in a reply channel, with a model
/// that would chime in every time: the model is asked at most once per
/// cooldown, on the ambient role's budget, and the bot's own chime-ins do not
/// make the next messages look more worth answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_reply_channel_costs_a_bounded_number_of_considerations() {
    let mut settings = world::settings();
    settings.permissions.replies.reply_channel_ids = vec![GENERAL];
    settings.permissions.replies.discovery_channel_ids = vec![];
    settings.attention.unsolicited_reply_threshold = 0.45;
    let w = World::start(settings).await;
    w.model.fallback(Scripted::tool(
        "chime_in",
        json!({"speak": true, "text": "Good point!", "reason": "always"}),
    ));
    for i in 0..600 {
        w.message(
            GENERAL,
            "ada",
            &format!("what about item {i}?"),
            Addressed::No,
        )
        .await;
        w.clock.advance(chrono::Duration::seconds(12));
    }
    let asked = w.model.requests().len();
    assert!(
        (12..=14).contains(&asked),
        "two hours at one consideration per 10 minutes: {asked}"
    );
    assert_eq!(
        w.said().len(),
        asked,
        "each consideration spoke, none was dropped"
    );
    let usage = w
        .app
        .store()
        .usage()
        .usage_tokens(&ambient::store::usage::UsageFilter {
            roles: vec!["reply".into()],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(usage, 0, "chime-ins are autonomous work, not replies");
    let routes = w.journal(Kind::Route);
    assert_eq!(routes.len(), 600);
    let warmed = routes
        .iter()
        .find(|e| e.data["salience"].as_str().unwrap_or("").contains("active"));
    assert!(
        warmed.is_none(),
        "a chime-in never makes the channel active: {warmed:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guilds_autonomous_budget_stops_chime_ins_before_the_model() {
    let mut settings = world::settings();
    settings.permissions.replies.reply_channel_ids = vec![GENERAL];
    settings.attention.unsolicited_reply_threshold = 0.45;
    settings.attention.chime_in_cooldown_minutes = 0;
    settings.budget.guild_autonomous_daily_tokens = 1;
    let w = World::start(settings).await;
    w.model.fallback(Scripted::tool(
        "chime_in",
        json!({"speak": true, "text": "Good point!", "reason": "always"}),
    ));
    w.message(GENERAL, "ada", "anyone here?", Addressed::No)
        .await;
    assert!(w.model.requests().is_empty(), "over budget: no model call");
    assert!(w.said().is_empty());
}

#[test]
fn discord_settings_take_channels_by_name_and_by_mention() {
    use crate::support::bot::Bot;
    use crate::support::fake_discord::{ALICE, GENERAL, MANAGE_GUILD, RANDOM};
    let bot = Bot::start(json!({}));
    let set = bot.discord.slash(
        GENERAL,
        ALICE,
        MANAGE_GUILD,
        "settings",
        "set",
        &[
            ("path", "permissions.replies.discoveryChannelIds"),
            ("value", &format!("#general, <#{RANDOM}>")),
        ],
    );
    let reply = bot
        .discord
        .interaction_reply(set)
        .unwrap_or_else(|| panic!("no reply:\n{}", bot.log()));
    assert_eq!(
        reply["data"]["content"],
        format!(
            "permissions.replies.discoveryChannelIds = [\"{GENERAL}\",\"{RANDOM}\"] for this server."
        )
    );
    let unknown = bot.discord.slash(
        GENERAL,
        ALICE,
        MANAGE_GUILD,
        "settings",
        "set",
        &[
            ("path", "permissions.replies.replyChannelIds"),
            ("value", "#memes"),
        ],
    );
    let reply = bot.discord.interaction_reply(unknown).unwrap();
    assert_eq!(
        reply["data"]["content"],
        "permissions.replies.replyChannelIds: this server has no channel named #memes \
         (channels the bot knows here: #general, #random)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_2_reflex_is_not_paid_for_where_nothing_could_be_posted() {
    let pages = crate::support::feed_server::FeedServer::start_at(chrono::Utc::now());
    pages.set(
        "/octopus",
        "text/html",
        "<html><body><p>Octopuses have three hearts.</p></body></html>".into(),
    );
    let mut settings = world::settings();
    settings.reflexes.dir = concat!(env!("CARGO_MANIFEST_DIR"), "/reflexes").into();
    settings.network.allow_private_hosts = true;
    settings.permissions.replies.max_messages_per_hour = 1;
    let w = World::start(settings).await;
    w.model.fallback(Scripted::text("Sure."));
    w.message(GENERAL, "ada", "@ambient can you help?", Addressed::Mention)
        .await;
    assert_eq!(w.said().len(), 1);
    let asked = w
        .message(
            GENERAL,
            "ada",
            &format!("@ambient summarize {}/octopus", pages.url),
            Addressed::Mention,
        )
        .await;
    assert_eq!(
        w.model.requests().len(),
        1,
        "neither the reflex model nor the executive was asked"
    );
    assert_eq!(w.said().len(), 1);
    assert!(
        w.reactions()
            .iter()
            .any(|(_, m, e)| *m == asked && e == "💤"),
        "{:?}",
        w.reactions()
    );
}

/// A world whose #general already had its one message this hour (the cap is 1).
async fn world_at_its_hourly_cap() -> World {
    let mut settings = world::settings();
    settings.permissions.replies.max_messages_per_hour = 1;
    let w = World::start(settings).await;
    w.model.fallback(Scripted::text("Sure."));
    w.message(
        GENERAL,
        "ada",
        "@ambient hi, quick question",
        Addressed::Mention,
    )
    .await;
    assert_eq!(w.said().len(), 1);
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routine_due_where_the_cap_is_reached_is_not_paid_for() {
    let w = world_at_its_hourly_cap().await;
    w.app
        .impulses
        .add_schedule(
            world::GUILD_A,
            Some(GENERAL),
            "standup",
            "*/5 * * * *",
            "ask how it's going",
            "test",
        )
        .unwrap();
    w.clock.advance(chrono::Duration::minutes(5));
    assert_eq!(w.app.impulses.check().len(), 1, "the routine is due");
    w.app.spine.drain().await;
    assert_eq!(
        w.model.requests().len(),
        1,
        "only the first answer was paid for"
    );
    assert_eq!(w.said().len(), 1);
}

#[test]
fn a_server_override_that_does_nothing_yet_says_so() {
    let home = home();
    let (events, _) = home.console("/settings set initiative.discovery.xHandles @rustlang\n");
    let notices = notices(&events);
    assert!(
        notices.contains(
            &"initiative.discovery.xHandles = [\"@rustlang\"] for this server.\n\
              Note: initiative.discovery.xHandles: ignored while initiative.discovery.sources.x \
              is false; set it to true to use it"
        ),
        "{notices:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_on_any_part_of_a_long_answer_explains_it() {
    let w = World::start(world::settings()).await;
    w.model
        .push(Scripted::text(&"A long story, told slowly. ".repeat(200)));
    w.message(
        GENERAL,
        "ada",
        "@ambient tell me a story",
        Addressed::Mention,
    )
    .await;
    assert_eq!(w.said().len(), 3, "5,400 characters are three parts");
    let parts: Vec<_> = w
        .app
        .store()
        .messages()
        .recent_messages(GENERAL, 10)
        .unwrap()
        .into_iter()
        .filter(|m| m.is_self)
        .collect();
    assert_eq!(parts.len(), 3);
    for part in &parts {
        let text = ambient::commands::why::why(
            &w.app,
            Some(world::GUILD_A),
            GENERAL,
            Some(&part.id.to_string()),
        );
        assert!(
            text.starts_with("Why I said that:") && text.contains("answered ada"),
            "part {}: {text}",
            part.id
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_due_where_the_cap_is_reached_waits_and_is_not_lost() {
    let w = world_at_its_hourly_cap().await;
    w.app
        .impulses
        .add_task(ambient::impulses::NewTask {
            guild: Some(world::GUILD_A),
            channel: Some(GENERAL),
            text: "remind ada to stretch".into(),
            due: "in 5m".into(),
            message: Some("ada: stretch!".into()),
            context: "test".into(),
            created_by: "ada".into(),
            owner: None,
        })
        .unwrap();
    for _ in 0..14 {
        w.clock.advance(chrono::Duration::minutes(5));
        w.app.impulses.check();
        w.app.spine.drain().await;
    }
    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(
        said,
        vec!["Sure.", "ada: stretch!"],
        "said once the hour had room"
    );
    let postponed = w
        .journal(Kind::Impulse)
        .into_iter()
        .filter(|e| e.summary == "postponed a task: remind ada to stretch")
        .count();
    assert!(postponed >= 1, "the wait is journaled");
}

#[test]
fn the_readme_console_block_runs_as_written() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme.split("## The console").nth(1).unwrap();
    let block = section
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let lines: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 2, "{block}");
    let home = home();
    let plain = home.shell(lines[0], &[]);
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.status.success(), "{text}");
    assert!(text.starts_with("ambient console — you are "), "{text}");
    let json = home.shell(lines[1], &[]);
    let first = String::from_utf8_lossy(&json.stdout);
    let ready: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(ready["event"], "ready", "{first}");
}
