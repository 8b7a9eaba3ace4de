//! Courtesy: quiet hours in the server's zone, hushes, the empty room, and
//! each person's boundaries — what reaches the channel, the model and the
//! store, and what does not.

use ambient::attention::Addressed;
use ambient::clock::Clock;
use ambient::commands::Asker;
use ambient::ids::{ChannelId, GuildId, UserId, stable_id};
use ambient::impulses::RoutineFlags;
use ambient::store::boundaries::Boundary;
use ambient::store::messages::Source;
use ambient::vocab::journal::Kind;
use ambient::vocab::pending::PendingThought;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, BOT, GENERAL as D_GENERAL, GUILD as D_GUILD};
use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, GUILD_A, MEMES, World, settings};

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn gates(w: &World) -> Vec<String> {
    w.journal(Kind::Gate)
        .into_iter()
        .map(|e| format!("{}: {}", e.summary, e.reason))
        .collect()
}

fn post(text: &str) -> Scripted {
    Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": text, "reason": "worth it"}),
    )
}

/// Guild A's two channels open to posts, in Berlin, quiet 23:00–08:00.
fn berlin_nights() -> ambient::settings::Settings {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL, MEMES];
    s.guild.timezone = "Europe/Berlin".into();
    s.initiative.quiet_hours = "23:00-08:00".into();
    s
}

fn user(name: &str) -> UserId {
    UserId(stable_id("user", name))
}

#[tokio::test]
async fn quiet_hours_stop_the_initiative_before_the_model_and_the_held_thought_waits_for_morning() {
    let w = World::start(berlin_nights()).await;
    w.model.fallback(post("Morning! Coffee thoughts?"));
    // 23:30 in Berlin (UTC+1 in January).
    w.clock.set(at("2026-01-05T22:30:00Z"));
    w.hear(GENERAL, "ada", "good night everyone", Source::Text);
    let held = PendingThought::new(
        GUILD_A,
        "a thought from the evening".into(),
        Some(GENERAL),
        "later".into(),
        None,
        w.clock.now(),
        chrono::Duration::hours(12),
    );
    w.app
        .store()
        .initiative()
        .save_pending_thought(&held)
        .unwrap();
    w.tick().await;
    w.clock.set(at("2026-01-06T06:59:00Z"));
    w.tick().await;
    assert!(
        w.model.requests().is_empty(),
        "no model call during quiet hours"
    );
    assert!(w.said().is_empty(), "nothing posted during quiet hours");
    assert!(
        w.app
            .store()
            .initiative()
            .pending_thought(GUILD_A)
            .unwrap()
            .is_some(),
        "the held thought is kept, not posted"
    );
    let reasons = gates(&w);
    assert!(
        reasons.iter().any(|r| r
            == "initiative stopped at the quiet_hours gate: quiet hours until 08:00 Europe/Berlin (initiative.quietHours \"23:00-08:00\")"),
        "{reasons:#?}"
    );
    let status = ambient::commands::status::widget(
        &ambient::commands::status::Sources::of(&w.app),
        Some(GUILD_A),
    );
    assert!(
        status
            .iter()
            .any(|l| l
                == "quiet hours \"23:00-08:00\" (Europe/Berlin): quiet until 08:00 Europe/Berlin"),
        "{status:#?}"
    );

    // 08:00 in Berlin: the held thought is looked at again, and posted.
    w.clock.set(at("2026-01-06T07:00:00Z"));
    w.tick().await;
    assert_eq!(w.model.requests().len(), 1);
    let prompt = w.model.requests()[0].body.to_string();
    assert!(prompt.contains("a thought from the evening"), "{prompt}");
    let said = w.said();
    assert_eq!(said.len(), 1);
    assert_eq!(said[0].content, "Morning! Coffee thoughts?");
}

#[tokio::test]
async fn during_quiet_hours_a_mention_is_answered_but_nobody_is_joined_unasked() {
    let mut s = berlin_nights();
    s.permissions.replies.discovery_channel_ids = vec![];
    s.permissions.replies.reply_channel_ids = vec![GENERAL];
    s.attention.unsolicited_reply_threshold = 0.0;
    let w = World::start(s).await;
    w.model
        .push(Scripted::text("Still here, Ada. Sleep well!"))
        .fallback(Scripted::tool(
            "chime_in",
            json!({"speak": true, "text": "Night owls unite!", "reason": "always"}),
        ));
    w.clock.set(at("2026-01-05T23:00:00Z")); // midnight in Berlin
    let unasked = w
        .message(
            GENERAL,
            "ada",
            "anyone still up for a chat about rust?",
            Addressed::No,
        )
        .await;
    assert!(w.model.requests().is_empty(), "no chime-in considered");
    let declined = w.journal(Kind::Outcome);
    assert!(
        declined.iter().any(|e| e.message == Some(unasked)
            && e.reason.starts_with(
                "did not chime in (quiet_hours gate): quiet hours until 08:00 Europe/Berlin"
            )),
        "{declined:#?}"
    );
    w.message(
        GENERAL,
        "ada",
        "@ambient are you awake?",
        Addressed::Mention,
    )
    .await;
    assert_eq!(w.model.requests().len(), 1, "the mention was answered");
    assert_eq!(w.said()[0].content, "Still here, Ada. Sleep well!");

    // Awake again, the same message is considered.
    w.clock.set(at("2026-01-06T07:30:00Z"));
    w.message(
        GENERAL,
        "ada",
        "anyone up for a chat about rust?",
        Addressed::No,
    )
    .await;
    assert_eq!(
        w.model.requests().len(),
        2,
        "chime-ins are back after 08:00"
    );
}

#[tokio::test]
async fn replies_during_quiet_hours_can_be_switched_off() {
    let mut s = berlin_nights();
    s.initiative.replies_during_quiet_hours = false;
    let w = World::start(s).await;
    w.model.fallback(Scripted::text("hi"));
    w.clock.set(at("2026-01-05T23:00:00Z"));
    let asked = w
        .message(
            GENERAL,
            "ada",
            "@ambient are you awake?",
            Addressed::Mention,
        )
        .await;
    assert!(w.model.requests().is_empty());
    assert!(w.said().is_empty());
    assert_eq!(
        w.reactions(),
        vec![(GENERAL, asked, "💤".to_string())],
        "one 💤 says it will not answer now"
    );
}

#[tokio::test]
async fn a_hush_stops_posts_in_its_channel_and_ends_on_time() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    s.guild.timezone = "Europe/Berlin".into();
    let w = World::start(s).await;
    w.model.fallback(post("back again"));
    w.hear(GENERAL, "ada", "talking", Source::Text);
    let ada = Asker {
        guild: Some(GUILD_A),
        channel: GENERAL,
        user: user("ada"),
        name: "ada".into(),
        manage: false,
    };
    let said = ambient::commands::courtesy::hush(&w.app, &ada, "2h", "").unwrap();
    assert_eq!(
        said,
        "Okay, I'll keep quiet in #general until 15:00 Europe/Berlin: nothing from me that nobody asked for. \
         I still answer when someone talks to me, and reminders still come. /ambient unhush ends it early."
    );
    w.tick().await;
    w.clock.advance(chrono::Duration::minutes(119));
    w.hear(GENERAL, "ada", "still talking", Source::Text);
    w.tick().await;
    assert!(w.model.requests().is_empty(), "hushed: no model call");
    assert!(w.said().is_empty());
    assert!(
        gates(&w).iter().any(|r| r
            == "initiative stopped at the hush gate: #general is hushed until 15:00 Europe/Berlin (asked by ada)"),
        "{:#?}",
        gates(&w)
    );
    w.clock.advance(chrono::Duration::minutes(1));
    w.tick().await;
    assert_eq!(w.model.requests().len(), 1, "the hush is over at 15:00");
    assert_eq!(w.said()[0].content, "back again");
}

#[tokio::test]
async fn hush_in_words_through_the_reflex_costs_no_model_call() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    let w = World::start(s).await;
    w.message(
        GENERAL,
        "ada",
        "ambient, hush for an hour",
        Addressed::ByName,
    )
    .await;
    assert!(w.model.requests().is_empty());
    let said = w.said();
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(
        said[0]
            .content
            .starts_with("Okay, I'll keep quiet in #general until 13:00 UTC"),
        "{}",
        said[0].content
    );
    let hush = w
        .app
        .store()
        .people()
        .hush(GUILD_A, Some(GENERAL), w.clock.now())
        .unwrap()
        .expect("hushed");
    assert_eq!(hush.until - w.clock.now(), chrono::Duration::hours(1));
    // Longer than anyone may ask for, in words: told why, nothing changes.
    w.message(
        GENERAL,
        "bob",
        "ambient, hush for 5 hours",
        Addressed::ByName,
    )
    .await;
    assert!(
        w.said()[1].content.contains("up to 3 hours"),
        "{}",
        w.said()[1].content
    );
    // Bob cannot end Ada's hush; Ada can.
    w.message(
        GENERAL,
        "bob",
        "ambient, you can talk again",
        Addressed::ByName,
    )
    .await;
    assert!(
        w.said()[2].content.starts_with("Only ada"),
        "{}",
        w.said()[2].content
    );
    w.message(
        GENERAL,
        "ada",
        "ambient, you can talk again",
        Addressed::ByName,
    )
    .await;
    assert_eq!(w.said()[3].content, "Okay, the hush in #general is over.");
    assert!(
        w.app
            .store()
            .people()
            .hush(GUILD_A, Some(GENERAL), w.clock.now())
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn an_empty_room_is_not_talked_to() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    s.initiative.text.require_activity_within_hours = 24; // the default; test worlds turn it off
    let w = World::start(s).await;
    w.model.fallback(post("hello?"));
    w.tick().await;
    let reasons = gates(&w);
    assert!(
        reasons.iter().any(|r| r == "initiative stopped at the empty_room gate: nobody has posted in the channel open to posts yet (initiative.text.requireActivityWithinHours is 24); no point talking to an empty room"),
        "{reasons:#?}"
    );
    w.hear(GENERAL, "ada", "anyone here?", Source::Text);
    w.clock.advance(chrono::Duration::hours(25));
    w.tick().await;
    assert!(
        w.model.requests().is_empty(),
        "nobody to talk to: no model call"
    );
    let status = ambient::commands::status::widget(
        &ambient::commands::status::Sources::of(&w.app),
        Some(GUILD_A),
    );
    assert!(
        status.iter().any(|l| l.starts_with(
            "initiative: no next look: nobody has posted in the channel open to posts for 1d"
        )),
        "{status:#?}"
    );
    w.hear(GENERAL, "bob", "back from holiday!", Source::Text);
    w.tick().await;
    assert_eq!(
        w.model.requests().len(),
        1,
        "someone spoke: the room is alive"
    );
}

#[tokio::test]
async fn quiet_hours_skip_routines_unless_they_run_anyway_but_reminders_come() {
    let mut s = berlin_nights();
    s.permissions.replies.discovery_channel_ids = vec![];
    let w = World::start(s).await;
    w.model.fallback(Scripted::tool(
        "act",
        json!({"say": "routine says hi", "note": "said hi"}),
    ));
    let imp = &w.app.impulses;
    imp.add_routine_with(
        GUILD_A,
        Some(GENERAL),
        "polite",
        "30 23 * * *",
        "say hi",
        "ada",
        RoutineFlags {
            during_quiet_hours: false,
            ..RoutineFlags::default()
        },
    )
    .unwrap();
    imp.add_routine_with(
        GUILD_A,
        Some(MEMES),
        "owl",
        "30 23 * * *",
        "say hi",
        "ada",
        RoutineFlags {
            during_quiet_hours: true,
            ..RoutineFlags::default()
        },
    )
    .unwrap();
    imp.add_task(ambient::impulses::NewTask {
        guild: Some(GUILD_A),
        channel: Some(GENERAL),
        text: "remind ada".into(),
        due: "2026-01-05 23:45".into(),
        message: Some("ada: the night bus leaves at midnight".into()),
        context: String::new(),
        created_by: "ada".into(),
        owner: Some(user("ada")),
    })
    .unwrap();
    // 23:31 Berlin: both routines fire, the reminder is not due yet.
    w.clock.set(at("2026-01-05T22:31:00Z"));
    w.app.run_due().await;
    w.clock.set(at("2026-01-05T22:46:00Z"));
    w.app.run_due().await;
    let said: Vec<(ChannelId, String)> = w
        .said()
        .into_iter()
        .map(|s| (s.channel, s.content))
        .collect();
    assert_eq!(
        said,
        vec![
            (MEMES, "routine says hi".to_string()),
            (GENERAL, "ada: the night bus leaves at midnight".to_string()),
        ],
        "the routine that runs anyway and the reminder; not the polite routine"
    );
    assert_eq!(
        w.model.requests().len(),
        1,
        "the skipped routine cost nothing"
    );
    let skipped = w.journal(Kind::Impulse);
    assert!(
        skipped
            .iter()
            .any(|e| e.summary == "skipped the routine polite"
                && e.reason
                    .starts_with("quiet_hours gate: quiet hours until 08:00 Europe/Berlin")),
        "{skipped:#?}"
    );
}

#[tokio::test]
async fn no_unprompted_means_no_chime_in_on_that_persons_messages() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![];
    s.permissions.replies.reply_channel_ids = vec![GENERAL];
    s.attention.unsolicited_reply_threshold = 0.0;
    s.attention.chime_in_cooldown_minutes = 0;
    let w = World::start(s).await;
    w.model.fallback(Scripted::tool(
        "chime_in",
        json!({"speak": false, "reason": "nothing to add"}),
    ));
    w.app
        .store()
        .people()
        .set_boundary(user("bob"), Boundary::NoUnprompted, true, w.clock.now())
        .unwrap();
    let bobs = w
        .message(
            GENERAL,
            "bob",
            "what do people think about tabs?",
            Addressed::No,
        )
        .await;
    assert!(
        w.model.requests().is_empty(),
        "Bob's message: not considered"
    );
    assert!(w.journal(Kind::Outcome).iter().any(|e| e.message == Some(bobs)
        && e.reason
            == "did not chime in (boundary gate): the person asked not to be answered unprompted (/ambient me no-unprompted)"));
    w.message(
        GENERAL,
        "ada",
        "what do people think about tabs?",
        Addressed::No,
    )
    .await;
    assert_eq!(w.model.requests().len(), 1, "Ada's is");
}

#[tokio::test]
async fn no_memory_means_nothing_is_extracted_from_that_persons_messages() {
    let w = World::start(settings()).await;
    w.app
        .store()
        .people()
        .set_boundary(user("ada"), Boundary::NoMemory, true, w.clock.now())
        .unwrap();
    let hers = w
        .message(
            GENERAL,
            "ada",
            "my secret hobby is competitive knitting every sunday",
            Addressed::No,
        )
        .await;
    w.app.memory.extract_channel(Some(GUILD_A), GENERAL).await;
    assert!(
        w.model.requests().is_empty(),
        "only her words: not even sent to the model"
    );
    w.message(
        GENERAL,
        "ada",
        "and I really love knitting patterns from norway",
        Addressed::No,
    )
    .await;
    w.message(
        GENERAL,
        "bob",
        "we decided game night moves to fridays at eight",
        Addressed::No,
    )
    .await;
    w.model.push(Scripted::tool(
        "remember_facts",
        json!({"facts": [
            {"kind": "decision", "importance": "high", "scope": "guild", "subject": "game night", "content": "Game night is on Fridays at 8.", "sources": [1]},
            {"kind": "preference", "importance": "low", "scope": "user", "about": "ada", "subject": "ada's hobby", "content": "ada knits.", "sources": [1]}
        ]}),
    ));
    let stored = w.app.memory.extract_channel(Some(GUILD_A), GENERAL).await;
    assert_eq!(stored, 1, "the fact pinned on her is dropped");
    let prompt = w.model.requests()[0].body.to_string();
    assert!(
        !prompt.contains("knitting"),
        "her words never reach the model: {prompt}"
    );
    assert!(prompt.contains("game night"), "{prompt}");
    let facts = w.app.store().memory().all_facts().unwrap();
    assert_eq!(facts.len(), 1, "{facts:#?}");
    assert!(!facts[0].content.contains("knit"));
    assert!(
        facts.iter().all(|f| !f.sources.contains(&hers)
            && f.author.as_ref().is_none_or(|(a, _)| *a != user("ada")))
    );
}

#[tokio::test]
async fn the_initiative_prompt_names_who_asked_not_to_be_pinged() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    let w = World::start(s).await;
    w.model.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": format!("Nice one <@{}>!", user("ada").get()), "reason": "r"}),
    ));
    w.message(GENERAL, "ada", "I finished the marathon", Addressed::No)
        .await;
    w.message(GENERAL, "bob", "congrats!", Addressed::No).await;
    w.app
        .store()
        .people()
        .set_boundary(user("ada"), Boundary::NoPing, true, w.clock.now())
        .unwrap();
    w.tick().await;
    let prompt = w.model.requests()[0].body.to_string();
    assert!(
        prompt.contains("Asked not to be pinged: ada. Write their names; never @mention them."),
        "{prompt}"
    );
    assert!(!prompt.contains("pinged: ada, bob"), "only who asked");
    assert_eq!(
        w.said()[0].content,
        "Nice one @ada!",
        "a mention of her is her name"
    );
}

/// A reply, a reminder and a voice-style answer to someone who asked not to be pinged,
/// as the fake Discord (strict like Discord about `allowed_mentions` and
/// `replied_user`) received them — with Alice, who did not ask, pinged as before.
#[test]
fn a_no_ping_person_is_never_in_a_messages_allowed_mentions() {
    let bot = Bot::start(json!({"impulses": {"idleCheckSeconds": 1, "activeCheckSeconds": 1}}));
    let id = bot.discord.slash(
        D_GENERAL,
        BOB,
        0,
        "ambient",
        "me",
        &[("boundary", "no-ping")],
    );
    let answer = bot.discord.interaction_text(id).unwrap_or_default();
    assert!(
        answer.starts_with("Done — don't ping me: I write your name instead"),
        "{answer}:\n{}",
        bot.log()
    );
    let shown =
        bot.discord
            .interaction_text(bot.discord.slash(D_GENERAL, BOB, 0, "ambient", "me", &[]));
    assert!(
        shown
            .as_deref()
            .unwrap_or("")
            .contains("- no-ping (don't ping me): on since"),
        "{shown:?}"
    );

    bot.model
        .push(Scripted::text(&format!("Sure <@{}>, here it is.", BOB.id)))
        .push(Scripted::text(&format!(
            "Sure <@{}>, here it is.",
            ALICE.id
        )));
    let bobs = bot
        .discord
        .say(D_GENERAL, BOB, &format!("<@{BOT}> can you help?"));
    let sent = |n: usize| -> Vec<Value> {
        assert!(
            bot.discord
                .wait_until(15, |w| w.sent_in(D_GENERAL).len() >= n),
            "expected {n} messages:\n{}",
            bot.log()
        );
        bot.discord.with(|w| w.sent_in(D_GENERAL))
    };
    let to_bob = &sent(1)[0];
    assert_eq!(to_bob["content"], "Sure @bob, here it is.");
    assert_eq!(to_bob["message_reference"]["message_id"], bobs.to_string());
    assert_eq!(to_bob["allowed_mentions"]["users"], json!([]), "{to_bob}");
    assert_eq!(
        to_bob["allowed_mentions"]["replied_user"], false,
        "{to_bob}"
    );

    let alices = bot
        .discord
        .say(D_GENERAL, ALICE, &format!("<@{BOT}> can you help?"));
    let to_alice = &sent(2)[1];
    assert_eq!(
        to_alice["content"],
        format!("Sure <@{}>, here it is.", ALICE.id)
    );
    assert_eq!(
        to_alice["message_reference"]["message_id"],
        alices.to_string()
    );
    assert_eq!(
        to_alice["allowed_mentions"]["users"],
        json!([ALICE.id.to_string()])
    );
    assert_eq!(to_alice["allowed_mentions"]["replied_user"], true);

    // Bob's reminder, due now.
    let store = bot.store();
    let now = Utc::now();
    store
        .impulses()
        .insert_task(&ambient::store::impulses::Task {
            id: "reminder-for-bob".into(),
            guild: Some(GuildId(D_GUILD)),
            channel: Some(ChannelId(D_GENERAL)),
            text: "remind bob to stretch".into(),
            message: Some(format!("<@{}> reminder: stretch", BOB.id)),
            due: now,
            priority: 1,
            context: String::new(),
            created_by: "reflex:remind-me".into(),
            owner: Some(UserId(BOB.id)),
            created_at: now,
            fired_at: None,
            done_at: None,
        })
        .unwrap();
    let reminder = &sent(3)[2];
    assert_eq!(reminder["content"], "@bob reminder: stretch");
    assert_eq!(
        reminder["allowed_mentions"]["users"],
        json!([]),
        "{reminder}"
    );

    // As Discord saw them: Bob was never pinged; Alice was, once.
    let pinged = bot.discord.with(|w| w.pinged_in(D_GENERAL));
    assert_eq!(pinged, vec![vec![], vec![ALICE.id], vec![]]);
    assert!(bot.stop().success());
}

#[tokio::test]
async fn quiet_hours_and_the_zone_are_validated_with_the_path_and_what_is_valid() {
    let w = World::start(settings()).await;
    let set = |path: &str, value: &str| {
        w.app
            .settings
            .set_override(GUILD_A, path, value, None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        set("initiative.quietHours", "25:00-08:00"),
        Err("initiative.quietHours: \"25:00\" is not a time of day (HH:MM from 00:00 to 23:59); write e.g. \"23:00-08:00\", \"fri,sat 01:00-10:00\" or \"sun-thu 23:00-07:00; fri,sat 01:00-10:00\"".into())
    );
    assert!(
        set("guild.timezone", "Mars/Olympus")
            .unwrap_err()
            .starts_with("guild.timezone: must be an IANA timezone such as \"Europe/Berlin\"")
    );
    assert_eq!(set("initiative.quietHours", "fri,sat 01:00-10:00"), Ok(()));
    assert_eq!(set("guild.timezone", "America/New_York"), Ok(()));
    let s = w.app.settings.for_guild(Some(GUILD_A));
    assert_eq!(s.initiative.quiet_hours, "fri,sat 01:00-10:00");
    assert_eq!(s.zone().name(), "America/New_York");
    assert!(
        w.app
            .settings
            .for_guild(Some(ambient::ids::GuildId(1002)))
            .initiative
            .quiet_hours
            .is_empty(),
        "another server keeps its own"
    );
}

/// The fake Discord refuses what Discord refuses about replies and pings, so
/// the tests above cannot pass on a body Discord would not take.
#[tokio::test]
async fn the_fake_discord_is_as_strict_as_discord_about_replies_and_pings() {
    use crate::support::fake_discord::{FakeDiscord, RANDOM};
    let discord = FakeDiscord::start();
    let asked = discord.say(D_GENERAL, ALICE, "hello there");
    let client = crate::support::fake_discord::bot_http();
    let send = |channel: u64, body: Value| {
        let client = client.clone();
        let url = format!("{}/api/v10/channels/{channel}/messages", discord.url);
        async move {
            let r = client.post(url).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let reply_to = |id: u64, channel: u64, fail: Option<bool>| {
        let mut r = json!({"message_id": id.to_string(), "channel_id": channel.to_string()});
        if let Some(f) = fail {
            r["fail_if_not_exists"] = json!(f);
        }
        r
    };
    let (status, body) = send(
        D_GENERAL,
        json!({"content": "hi", "message_reference": reply_to(999, D_GENERAL, None)}),
    )
    .await;
    assert_eq!(status, 400, "an unknown message: {body}");
    assert_eq!(
        body["errors"]["message_reference"]["_errors"][0]["code"],
        "MESSAGE_REFERENCE_UNKNOWN_MESSAGE"
    );
    let (status, body) = send(
        D_GENERAL,
        json!({"content": "hi", "message_reference": reply_to(999, D_GENERAL, Some(false))}),
    )
    .await;
    assert_eq!(status, 200, "sent as a plain message when asked: {body}");
    assert!(body.get("message_reference").is_none(), "{body}");
    let (status, _) = send(
        RANDOM,
        json!({"content": "hi", "message_reference": reply_to(asked, D_GENERAL, None)}),
    )
    .await;
    assert_eq!(status, 400, "a reply cannot cross channels");
    let (status, _) = send(
        D_GENERAL,
        json!({"content": "hi", "allowed_mentions": {"users": (0..101).map(|i| i.to_string()).collect::<Vec<_>>()}}),
    )
    .await;
    assert_eq!(status, 400, "at most 100 users");
    // A reply pings its author unless replied_user is false; without allowed_mentions, it does.
    for (allowed, pinged) in [
        (json!({"parse": [], "users": []}), json!([])),
        (
            json!({"parse": [], "users": [], "replied_user": false}),
            json!([]),
        ),
        (
            json!({"parse": [], "users": [], "replied_user": true}),
            json!([ALICE.id.to_string()]),
        ),
        (Value::Null, json!([ALICE.id.to_string()])),
    ] {
        let mut body =
            json!({"content": "sure", "message_reference": reply_to(asked, D_GENERAL, None)});
        if !allowed.is_null() {
            body["allowed_mentions"] = allowed.clone();
        }
        let (status, made) = send(D_GENERAL, body).await;
        assert_eq!(status, 200, "{made}");
        let ids: Vec<Value> = made["mentions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["id"].clone())
            .collect();
        assert_eq!(json!(ids), pinged, "allowed_mentions {allowed}");
    }
}

/// In Discord, a hush is confirmed once for the whole channel to see; a
/// refusal only to the asker; neither pings anyone.
#[test]
fn a_slash_hush_is_confirmed_in_the_channel_and_a_refusal_privately() {
    let bot = Bot::start(json!({"guild": {"timezone": "Europe/Berlin"}}));
    let reply = |id: u64| -> Value {
        bot.discord
            .interaction_reply(id)
            .unwrap_or_else(|| panic!("no reply:\n{}", bot.log()))
    };
    let refused = reply(bot.discord.slash(
        D_GENERAL,
        BOB,
        0,
        "ambient",
        "hush",
        &[("duration", "2h"), ("channel", "server")],
    ));
    assert_eq!(refused["data"]["flags"], 64, "only Bob sees it: {refused}");
    assert!(
        refused["data"]["content"]
            .as_str()
            .unwrap()
            .contains("another channel or the whole server needs Manage Server"),
        "{refused}"
    );
    let done =
        reply(
            bot.discord
                .slash(D_GENERAL, BOB, 0, "ambient", "hush", &[("duration", "2h")]),
        );
    let text = done["data"]["content"].as_str().unwrap();
    assert!(
        text.starts_with("Okay, I'll keep quiet in #general until ")
            && text.contains(" Europe/Berlin: "),
        "{done}"
    );
    assert!(
        done["data"]["flags"].as_u64().unwrap_or(0) & 64 == 0,
        "everyone in the channel sees it: {done}"
    );
    assert_eq!(
        done["data"]["allowed_mentions"]["parse"],
        json!([]),
        "{done}"
    );
    let store = bot.store();
    let hush = store
        .people()
        .hush(GuildId(D_GUILD), Some(ChannelId(D_GENERAL)), Utc::now())
        .unwrap()
        .expect("hushed");
    assert_eq!(hush.by, UserId(BOB.id));
    // Alice, without Manage Server, cannot end Bob's hush.
    let not_hers = reply(
        bot.discord
            .slash(D_GENERAL, ALICE, 0, "ambient", "unhush", &[]),
    );
    assert!(
        not_hers["data"]["content"]
            .as_str()
            .unwrap()
            .starts_with("Only bob"),
        "{not_hers}"
    );
    assert!(bot.stop().success());
}
