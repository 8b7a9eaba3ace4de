//! What the bot sends, and how it knows it was sent: mentions that cannot
//! ping anyone but the person answered, whatever the server honours, and a
//! send whose outcome was unknown settled by its nonce — one message, recorded
//! once; a post that went out just before a crash neither sent nor held again.

use ambient::clock::Clock;
use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, BOT, GENERAL};
use crate::support::model_server::Scripted;
use crate::support::world::{self, GENERAL as WGENERAL, GUILD_A, World};

#[test]
fn a_model_answer_cannot_ping_everyone_roles_or_bystanders() {
    let bot = Bot::start(json!({}));
    let earlier = bot.discord.say(GENERAL, BOB, "I'm around too");
    assert!(bot.wait_stored(earlier));
    bot.model.push(Scripted::text(&format!(
        "Hey @everyone and @here! <@&555> <@{}> you asked, <@{}> take note.",
        ALICE.id, BOB.id
    )));
    bot.discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> announce it please"));
    assert!(
        bot.discord
            .wait_until(15, |w| w.sent_in(GENERAL).len() == 1),
        "{}",
        bot.log()
    );
    let posted = bot
        .discord
        .with(|w| w.find("POST", &format!("/channels/{GENERAL}/messages")))[0]
        .body
        .clone();
    assert_eq!(
        posted["content"],
        format!(
            "Hey @\u{200D}everyone and @\u{200D}here! @role <@{}> you asked, @bob take note.",
            ALICE.id
        )
    );
    // What Discord would compute from that request: one ping, for the asker.
    let created = bot.discord.with(|w| {
        w.log_of("MESSAGE_CREATE")
            .into_iter()
            .find(|m| m["author"]["id"] == json!(BOT.to_string()))
            .expect("the bot's message was dispatched")
    });
    assert_eq!(
        created["mentions"].as_array().unwrap().len(),
        1,
        "{created}"
    );
    assert_eq!(created["mentions"][0]["id"], ALICE.id.to_string());
    assert_eq!(created["mention_everyone"], false);
    assert_eq!(created["mention_roles"], json!([]));
}

#[test]
fn a_send_whose_answer_was_unreadable_is_settled_by_its_nonce() {
    let bot = Bot::start(json!({}));
    bot.model.push(Scripted::text("Here you go."));
    bot.discord.with(|w| w.garble_sends = 1);
    let asked = bot
        .discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> what's the plan?"));
    assert!(
        bot.discord
            .wait_until(15, |w| w.sent_in(GENERAL).len() == 2),
        "the bot asks again with the same nonce:\n{}",
        bot.log()
    );
    let (posts, created) = bot.discord.with(|w| {
        (
            w.sent_in(GENERAL),
            w.log_of("MESSAGE_CREATE")
                .into_iter()
                .filter(|m| m["author"]["id"] == json!(BOT.to_string()))
                .collect::<Vec<_>>(),
        )
    });
    assert_eq!(posts[0]["nonce"], posts[1]["nonce"]);
    assert_eq!(created.len(), 1, "one message in the channel");
    let id = created[0]["id"].as_str().unwrap().to_string();
    let store = bot.store();
    assert!(
        bot.discord.wait_until(15, |_| {
            store
                .journal()
                .journal_query(&ambient::vocab::journal::Filter {
                    message: Some(ambient::ids::MessageId(asked)),
                    kinds: vec![ambient::vocab::journal::Kind::Reply],
                    ..Default::default()
                })
                .unwrap()
                .iter()
                .any(|e| e.data["sent"] == json!([id]))
        }),
        "the reply is journaled with the id the channel has:\n{}",
        bot.log()
    );
    let mine: Vec<_> = store
        .messages()
        .recent_messages(ambient::ids::ChannelId(GENERAL), 10)
        .unwrap()
        .into_iter()
        .filter(|m| m.is_self)
        .collect();
    assert_eq!(mine.len(), 1, "recorded once: {mine:#?}");
    assert_eq!(mine[0].id.to_string(), id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_that_went_out_before_a_crash_is_neither_sent_nor_held_again() {
    let w = World::start(world::settings()).await;
    w.crashed_after_posting(WGENERAL, "initiative-crash", "The eclipse is tonight!")
        .await;
    // Past Discord's nonce window: a resend would be a second post.
    w.clock.advance(chrono::Duration::minutes(5));
    w.app.initiative.recover().await;
    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(said, vec!["The eclipse is tonight!"], "posted once");
    assert!(
        w.app
            .store()
            .initiative()
            .outbox_unsent()
            .unwrap()
            .is_empty()
    );
    assert!(
        w.app
            .store()
            .initiative()
            .pending_thought(GUILD_A)
            .unwrap()
            .is_none(),
        "the held thought was what went out: the model is not shown it again"
    );
    let posts = w.journal(Kind::InitiativePost);
    assert!(
        posts
            .iter()
            .any(|e| e.reason == "found in the channel after a restart; not sent again"),
        "{posts:#?}"
    );
    assert!(
        w.journal(Kind::InitiativeSkip)
            .iter()
            .any(|e| e.summary.starts_with("settled a held thought"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_the_channel_never_got_is_sent_after_a_crash() {
    let w = World::start(world::settings()).await;
    let now = w.clock.now();
    w.app
        .store()
        .initiative()
        .outbox_insert(
            "initiative-lost",
            GUILD_A,
            WGENERAL,
            "Lost in the crash",
            now,
        )
        .unwrap();
    w.clock.advance(chrono::Duration::minutes(5));
    w.app.initiative.recover().await;
    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(said, vec!["Lost in the crash"]);
    assert!(
        w.app
            .store()
            .initiative()
            .outbox_unsent()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bots_words_are_recorded_before_they_are_sent() {
    let w = World::start(world::settings()).await;
    w.model.push(Scripted::text("Noted, thanks."));
    w.message(
        WGENERAL,
        "ada",
        "@ambient remember the picnic",
        ambient::attention::Addressed::Mention,
    )
    .await;
    let said = w.said();
    assert_eq!(said.len(), 1);
    assert!(
        said[0].recorded_first,
        "a crash right after the send must not lose it"
    );
    let mine: Vec<_> = w
        .app
        .store()
        .messages()
        .recent_messages(WGENERAL, 10)
        .unwrap()
        .into_iter()
        .filter(|m| m.is_self)
        .collect();
    assert_eq!(mine.len(), 1, "one row, with the platform's id: {mine:#?}");
    assert_eq!(mine[0].id, said[0].id);
}

/// The connection drops and Discord refuses to resume: what was said in the
/// gap is fetched once the bot is back — a recent question answered, an old
/// one told the bot was away, the chatter kept — and nothing twice.
#[test]
fn what_was_said_while_the_bot_was_away_is_caught_up_on() {
    let bot = Bot::start(json!({}));
    bot.model.fallback(Scripted::text("Yes, I'm back now."));
    let before = bot.discord.say(GENERAL, BOB, "morning all");
    assert!(bot.wait_stored(before));

    bot.discord.drop_session();
    let old = bot
        .discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> did the build pass?"));
    bot.discord.backdate(old, 60);
    let chatter = bot.discord.say(GENERAL, BOB, "coffee time");
    let recent = bot
        .discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> are you there?"));

    assert!(
        bot.discord.wait_until(30, |w| w.identifies >= 2),
        "the bot identified anew:\n{}",
        bot.log()
    );
    assert!(
        bot.discord
            .wait_until(20, |w| w.sent_in(GENERAL).len() == 2),
        "{}",
        bot.log()
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let sent = bot.discord.with(|w| w.sent_in(GENERAL));
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let answer = sent
        .iter()
        .find(|b| b["message_reference"]["message_id"] == json!(recent.to_string()))
        .expect("the recent question is answered");
    assert_eq!(answer["content"], "Yes, I'm back now.");
    let away = sent
        .iter()
        .find(|b| b["message_reference"]["message_id"] == json!(old.to_string()))
        .expect("the old question hears the bot was away");
    assert!(
        away["content"]
            .as_str()
            .unwrap()
            .starts_with("Sorry, I was away")
    );
    assert_eq!(
        bot.model.requests().len(),
        1,
        "only the recent question was paid for"
    );

    let store = bot.store();
    for id in [old, chatter, recent] {
        assert!(
            store
                .messages()
                .message(ambient::ids::MessageId(id))
                .unwrap()
                .is_some(),
            "missed message {id} is stored"
        );
    }
    let caught: Vec<_> = store
        .journal()
        .journal_query(&ambient::vocab::journal::Filter {
            kinds: vec![Kind::System],
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.summary.starts_with("caught up on"))
        .collect();
    assert_eq!(caught.len(), 1, "{caught:#?}");
    assert_eq!(
        caught[0].summary,
        "caught up on 3 message(s) said while I was away"
    );
}
