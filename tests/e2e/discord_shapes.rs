//! The fake Discord's Discord-shaped payloads (`World::shaped`, the load
//! harness's `--shaped`): the bot takes in a server of 500 members and 100
//! channels and messages as big and as full as Discord's, stores every one
//! with what it carries, and answers a question sent that way. A payload
//! serenity could not decode would be dropped without a word, so the fake
//! parses each with serenity's own types before sending it, and this test
//! checks each arrived.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::bot::Bot;
use crate::support::discord_shapes::{CATEGORIES, CHANNELS, IN_VOICE, MEMBERS};
use crate::support::fake_discord::{ALICE, BOB, BOT, FakeDiscord, GENERAL, GUILD};
use crate::support::model_server::Scripted;
use ambient::ids::{GuildId, MessageId};

#[test]
fn discord_shaped_messages_and_a_large_server_are_all_taken_in_and_answered() {
    let discord = FakeDiscord::start();
    discord.with(|w| w.shaped = true);
    let bot = Bot::start_on(
        discord,
        json!({}),
        &[],
        "ambient=info,serenity=warn,poise=warn",
    );
    bot.model
        .fallback(Scripted::text("The ferry leaves at nine."));

    // The server as Discord sends it to a bot without the Presences intent.
    let guild = bot.discord.with(|w| w.log_of("GUILD_CREATE"))[0].clone();
    assert_eq!(guild["channels"].as_array().unwrap().len() as u64, CHANNELS);
    assert_eq!(guild["member_count"], json!(MEMBERS));
    assert_eq!(guild["large"], json!(true));
    assert_eq!(
        guild["members"].as_array().unwrap().len() as u64,
        1 + IN_VOICE,
        "the bot and the people in voice"
    );
    // Every channel but the categories is one the bot keeps a name for.
    let store = bot.store();
    let deadline = Instant::now() + Duration::from_secs(20);
    let kept = CHANNELS - CATEGORIES;
    while store
        .messages()
        .guild_channels(GuildId(GUILD))
        .unwrap()
        .len() as u64
        != kept
    {
        assert!(
            Instant::now() < deadline,
            "the server's {kept} channels were not all stored: {:?}",
            store.messages().guild_channels(GuildId(GUILD))
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Eight messages: each kind twice (a reply, a link, a picture, a mention).
    let said: Vec<u64> = (0..8)
        .map(|i| {
            let who = if i % 2 == 0 { ALICE } else { BOB };
            bot.discord
                .say(GENERAL, who, &format!("message {i} about the quay"))
        })
        .collect();
    for id in &said {
        assert!(bot.wait_stored(*id), "message {id} never reached the store");
    }
    let sent = bot.discord.with(|w| w.log_of("MESSAGE_CREATE"));
    for m in &sent {
        let size = m.to_string().len();
        assert!(
            (2_000..=6_144).contains(&size),
            "a shaped message is {size} bytes, not 2–6 KB like Discord's:\n{m:#}"
        );
        assert!(
            m["member"]["roles"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        );
        assert!(m["author"]["avatar"].is_string());
    }
    let has = |what: &str| {
        sent.iter()
            .filter(|m| m[what] != json!([]) && !m[what].is_null())
            .count()
    };
    assert!(has("referenced_message") >= 1, "no reply among {sent:#?}");
    assert!(has("attachments") >= 2 && has("embeds") >= 6);
    assert!(
        sent.iter()
            .any(|m| m["mentions"].as_array().is_some_and(|a| !a.is_empty()))
    );

    // What the messages carried reached the store: the replies' targets and the pictures.
    let stored: Vec<_> = said
        .iter()
        .map(|id| store.messages().message(MessageId(*id)).unwrap().unwrap())
        .collect();
    assert!(stored.iter().any(|m| m.reply_to.is_some()));
    let pictures: Vec<&str> = stored
        .iter()
        .flat_map(|m| m.attachments.iter().map(|a| a.name.as_str()))
        .collect();
    assert_eq!(pictures.len(), 2, "{pictures:?}");
    assert!(pictures.iter().all(|p| p.starts_with("IMG_")));

    // A question sent the same way is answered.
    bot.discord.say(
        GENERAL,
        ALICE,
        &format!("<@{BOT}> when does the ferry leave?"),
    );
    let answered = bot.discord.wait_until(30, |w| {
        w.sent_in(GENERAL)
            .iter()
            .any(|b| b["content"] == "The ferry leaves at nine.")
    });
    assert!(
        answered,
        "the shaped question was not answered:\n{}",
        bot.log()
    );
}
