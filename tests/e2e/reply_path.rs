//! The reply path, again (issue 35 and its review): an answer already paid
//! for and then dropped because the message it answers was unknown to the
//! server — now said as a plain message addressed to the person answered —
//! answers cut at four characters a token, or not cut at all when a level-2
//! reflex's model stopped at its limit, a streamed one-piece answer that
//! waited for a polling pause, and attachments on a Discord-compatible server
//! whose files live on another origin.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{
    ALICE, BOB, BOT, FakeDiscord, GENERAL, UnknownReference, World,
};
use crate::support::model_server::Scripted;
use crate::support::readme;

fn mention(text: &str) -> String {
    format!("<@{BOT}> {text}")
}

/// Waits until the journal says the bot answered `asked`: speech is done with
/// the answer then, nothing of it is still being sent.
fn answered(bot: &Bot, asked: u64) -> bool {
    let store = bot.store();
    bot.discord.wait_until(20, |_| {
        store
            .journal()
            .journal_query(&ambient::vocab::journal::Filter {
                kinds: vec![ambient::vocab::journal::Kind::Reply],
                message: Some(ambient::ids::MessageId(asked)),
                ..Default::default()
            })
            .unwrap()
            .iter()
            .any(|e| e.summary.starts_with("answered"))
    })
}

/// The bot's own messages in #general as its history keeps them.
fn our_rows(bot: &Bot) -> Vec<ambient::store::messages::StoredMessage> {
    bot.store()
        .messages()
        .recent_messages(ambient::ids::ChannelId(GENERAL), 20)
        .unwrap()
        .into_iter()
        .filter(|m| m.is_self)
        .collect()
}

/// `text` with Alice's mention as her name: the bot's history may hold an
/// answer as the gateway echoed it (a mention shown as a name) or as speech
/// recorded it, whichever was stored first.
fn as_history(text: &str) -> String {
    text.replace(&format!("<@{}>", ALICE.id), "@alice")
}

/// A short look for something that must not happen (a second post): the
/// only sleep here, and it can only hide a failure, never make one.
fn nothing_more_for_a_moment() {
    std::thread::sleep(Duration::from_millis(300));
}

/// Alice asks; the message she wrote is unknown to the server when the
/// answer is sent (`how` the server answers a reply to it). The answer is
/// posted once, after one model call, as a plain message that begins with her
/// mention — she is pinged by it, as the reply would have pinged her — and
/// every attempt carried the same nonce. The bot's history keeps it as said:
/// that text, a reply to nothing.
fn answered_though_the_message_is_unknown(how: UnknownReference, garbled: u32) {
    let answer = "Tuesday works: the hall is free from six.";
    let said = format!("<@{}> {answer}", ALICE.id);
    let bot = Bot::start(json!({}));
    bot.model.push(Scripted::text(answer));
    bot.discord.with(|w| {
        w.unknown_reference = how;
        w.saves_late = true;
        w.garble_sends = garbled;
    });
    let asked = bot
        .discord
        .say(GENERAL, ALICE, &mention("when can we meet?"));
    // The reply, refused; then the plain message, once more after each unreadable answer.
    let expected = 2 + garbled as usize;
    assert!(
        bot.discord
            .wait_until(20, |w| w.sent_in(GENERAL).len() >= expected),
        "{how:?}: the answer was dropped:\n{}",
        bot.log()
    );
    assert!(
        answered(&bot, asked),
        "{how:?}: not journaled:\n{}",
        bot.log()
    );
    let sent: Vec<Value> = bot.discord.with(|w| w.sent_in(GENERAL));
    assert_eq!(sent.len(), expected, "{how:?}: {sent:#?}");
    assert!(
        sent[0]["message_reference"].is_object(),
        "{how:?}: the first attempt was a reply: {:#}",
        sent[0]
    );
    assert!(
        sent[1..]
            .iter()
            .all(|b| b["message_reference"].is_null() && b["content"] == said.as_str()),
        "{how:?}: then plain and addressed: {sent:#?}"
    );
    assert!(
        sent.iter().all(|b| b["nonce"] == sent[0]["nonce"]),
        "{how:?}: one nonce for every attempt: {sent:#?}"
    );
    let posted = bot.discord.with(|w| w.posted_in(GENERAL));
    assert_eq!(posted.len(), 1, "{how:?}: posted once: {posted:#?}");
    assert_eq!(posted[0]["content"], said.as_str());
    assert!(posted[0]["message_reference"].is_null(), "{:#}", posted[0]);
    assert_eq!(
        bot.discord.with(|w| w.pinged_in(GENERAL)),
        [vec![ALICE.id]],
        "{how:?}: the person answered is pinged by the plain message"
    );
    assert_eq!(bot.model.requests().len(), 1, "{how:?}: one model call");
    let ours = our_rows(&bot);
    assert_eq!(ours.len(), 1, "{how:?}: one stored row: {ours:#?}");
    assert_eq!(as_history(&ours[0].content), as_history(&said));
    assert_eq!(ours[0].reply_to, None, "{how:?}: stored as said");
    assert_eq!(ours[0].id.to_string(), posted[0]["id"].as_str().unwrap());
    nothing_more_for_a_moment();
    assert_eq!(bot.discord.with(|w| w.sent_in(GENERAL).len()), expected);
    assert!(bot.stop().success());
}

#[test]
fn an_answer_a_server_refuses_to_reference_is_sent_as_a_plain_message() {
    answered_though_the_message_is_unknown(UnknownReference::Refused, 0);
}

#[test]
fn an_answer_to_a_message_a_compatible_server_has_not_saved_is_sent_as_a_plain_message() {
    answered_though_the_message_is_unknown(UnknownReference::NotFound, 0);
}

#[test]
fn an_answer_sent_again_without_its_reference_is_still_posted_once() {
    // The plain send is made but its answer is unreadable: speech asks again
    // with the same nonce, and the server answers with the message it made.
    answered_though_the_message_is_unknown(UnknownReference::NotFound, 1);
}

/// Bob asked never to be pinged: an answer to him said as a plain message
/// names him instead, and pings nobody.
#[test]
fn a_plain_answer_to_someone_who_asked_not_to_be_pinged_names_them() {
    let bot = Bot::start(json!({}));
    let id = bot
        .discord
        .slash(GENERAL, BOB, 0, "ambient", "me", &[("boundary", "no-ping")]);
    assert!(
        bot.discord
            .interaction_text(id)
            .is_some_and(|t| t.starts_with("Done — don't ping me")),
        "{}",
        bot.log()
    );
    bot.model.push(Scripted::text("The blue one."));
    bot.discord.with(|w| {
        w.unknown_reference = UnknownReference::NotFound;
        w.saves_late = true;
    });
    let asked = bot.discord.say(GENERAL, BOB, &mention("which one?"));
    assert!(answered(&bot, asked), "{}", bot.log());
    let posted = bot.discord.with(|w| w.posted_in(GENERAL));
    assert_eq!(posted.len(), 1, "{posted:#?}");
    assert_eq!(posted[0]["content"], "@bob The blue one.");
    assert_eq!(
        bot.discord.with(|w| w.pinged_in(GENERAL)),
        [Vec::<u64>::new()]
    );
    let sent = bot.discord.with(|w| w.sent_in(GENERAL));
    assert_eq!(sent.last().unwrap()["allowed_mentions"]["users"], json!([]));
    assert!(bot.stop().success());
}

/// A streamed answer whose first message is refused as a reply: posted plain
/// with Alice's mention in front, which every edit and the final text keep —
/// the messages end as a plain answer to her would have been split.
#[test]
fn a_streamed_answer_said_as_a_plain_message_keeps_its_addressee_to_the_end() {
    let answer = "The hall is free on Tuesday from six, and the key is with Sam. ".repeat(45);
    let answer = answer.trim();
    let expected = ambient::speech::split_message(&format!("<@{}> {answer}", ALICE.id), 2000);
    assert_eq!(expected.len(), 2);
    let bot = Bot::start(json!({"discord": {"streamEditIntervalMs": 1000}}));
    bot.model
        .push(Scripted::streamed(answer, 200, Duration::from_millis(40)));
    bot.discord.with(|w| {
        w.unknown_reference = UnknownReference::NotFound;
        w.saves_late = true;
    });
    let asked = bot
        .discord
        .say(GENERAL, ALICE, &mention("when is the hall free?"));
    assert!(answered(&bot, asked), "{}", bot.log());
    let first = &bot.discord.with(|w| w.sent_in(GENERAL))[1];
    assert!(
        first["message_reference"].is_null() && first["content"].as_str().unwrap().len() < 2000,
        "posted while the answer was written: {first:#}"
    );
    assert_eq!(bot.discord.with(|w| shown(w)), expected);
    let posted = bot.discord.with(|w| w.posted_in(GENERAL));
    assert!(posted.iter().all(|m| m["message_reference"].is_null()));
    assert_eq!(bot.discord.with(|w| w.pinged_in(GENERAL))[0], [ALICE.id]);
    let ours = our_rows(&bot);
    assert_eq!(
        ours.iter()
            .map(|m| as_history(&m.content))
            .collect::<Vec<_>>(),
        expected.iter().map(|t| as_history(t)).collect::<Vec<_>>(),
        "history keeps what was said"
    );
    assert!(ours.iter().all(|m| m.reply_to.is_none()));
    assert!(bot.stop().success());
}

/// A Discord-compatible server announces Alice's message before it has saved
/// it; by the time the answer is sent it has. The answer is an ordinary reply:
/// one request, with its reference, pinging her as a reply does.
#[test]
fn an_answer_to_a_message_saved_late_is_a_reply_once_it_is_saved() {
    let release = Arc::new(tokio::sync::Notify::new());
    let bot = Bot::start(json!({}));
    bot.model
        .push(Scripted::held(Scripted::text("Six o'clock."), &release));
    bot.discord.with(|w| {
        w.unknown_reference = UnknownReference::NotFound;
        w.saves_late = true;
    });
    let asked = bot.discord.say(GENERAL, ALICE, &mention("what time?"));
    assert!(
        bot.discord
            .wait_until(20, |_| !bot.model.requests().is_empty()),
        "{}",
        bot.log()
    );
    bot.discord.save_late();
    release.notify_one();
    assert!(answered(&bot, asked), "{}", bot.log());
    let sent = bot.discord.with(|w| w.sent_in(GENERAL));
    assert_eq!(sent.len(), 1, "{sent:#?}");
    let posted = bot.discord.with(|w| w.posted_in(GENERAL));
    assert_eq!(posted[0]["content"], "Six o'clock.");
    assert_eq!(
        posted[0]["message_reference"]["message_id"],
        asked.to_string()
    );
    assert_eq!(bot.discord.with(|w| w.pinged_in(GENERAL)), [vec![ALICE.id]]);
    assert_eq!(
        our_rows(&bot)[0].reply_to,
        Some(ambient::ids::MessageId(asked))
    );
    assert!(bot.stop().success());
}

/// On Discord, a reply to a message deleted while the model wrote is posted
/// by Discord itself as a plain message (the bot sends the reference with
/// `fail_if_not_exists: false`): one request, the answer as written.
#[test]
fn an_answer_to_a_message_deleted_meanwhile_is_posted_plain_by_discord() {
    let answer = "It was the blue one, I think.";
    let release = Arc::new(tokio::sync::Notify::new());
    let bot = Bot::start(json!({}));
    bot.model
        .push(Scripted::held(Scripted::text(answer), &release));
    let asked = bot
        .discord
        .say(GENERAL, ALICE, &mention("which one was it?"));
    assert!(
        bot.discord
            .wait_until(20, |_| !bot.model.requests().is_empty()),
        "{}",
        bot.log()
    );
    bot.discord.delete(GENERAL, asked);
    release.notify_one();
    assert!(
        answered(&bot, asked),
        "the answer was dropped:\n{}",
        bot.log()
    );
    let sent = bot.discord.with(|w| w.sent_in(GENERAL));
    assert_eq!(sent.len(), 1, "Discord took the first request: {sent:#?}");
    assert_eq!(
        sent[0]["message_reference"]["fail_if_not_exists"], false,
        "{:#}",
        sent[0]
    );
    let posted = bot.discord.with(|w| w.posted_in(GENERAL));
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0]["content"], answer);
    assert!(posted[0]["message_reference"].is_null(), "{:#}", posted[0]);
    assert_eq!(bot.model.requests().len(), 1);
    assert!(bot.stop().success());
}

/// What the channel shows of the bot's answers, in order (a streamed answer
/// reaches it through edits).
fn shown(w: &World) -> Vec<String> {
    w.posted_in(GENERAL)
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// An answer of 4,695 characters in sentences whose 4,096th character falls
/// inside a word.
fn long_complete_answer() -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.chars().count() < 4_695 {
        i += 1;
        text.push_str(&format!("Reason {i} is a consideration of its own. "));
    }
    let text: String = text
        .chars()
        .take(4_694)
        .collect::<String>()
        .trim_end()
        .to_string();
    let text = format!("{}.", text.trim_end_matches('.'));
    assert!(
        text.chars().nth(4_095).is_some_and(char::is_alphanumeric)
            && text.chars().nth(4_096).is_some_and(char::is_alphanumeric),
        "the old cut falls mid-word"
    );
    text
}

/// The answer the model reported complete (finish reason `stop`) is said
/// whole, however few tokens it claims and however many characters it has:
/// `maxOutputTokens` × 4 characters is not a limit.
#[test]
fn a_complete_answer_is_never_cut_by_a_character_estimate() {
    let answer = long_complete_answer();
    let expected = ambient::speech::split_message(&answer, 2000);
    assert_eq!(expected.len(), 3);
    for stream in [true, false] {
        let bot = Bot::start(json!({"discord": {"streamReplies": stream}}));
        bot.model.push(Scripted::Text {
            text: answer.clone(),
            tokens_in: 120,
            tokens_out: 7,
        });
        bot.discord
            .say(GENERAL, ALICE, &mention("why did we move the meetup?"));
        assert!(
            bot.discord.wait_until(30, |w| shown(w) == expected),
            "stream {stream}: shown {:#?}\n{}",
            bot.discord.with(|w| shown(w)),
            bot.log()
        );
        assert!(
            !bot.discord
                .with(|w| shown(w))
                .concat()
                .contains(ambient::speech::CUT_MARKER),
            "nothing is marked cut"
        );
        assert!(bot.stop().success());
    }
}

/// The model stopped at its token limit (it says `length`): the answer ends at
/// its last whole word and says it was cut — streamed or not.
#[test]
fn an_answer_the_model_stopped_at_its_limit_ends_at_a_word_and_says_so() {
    let written = "Two reasons.\n\nFirst, the rent went up. Second, the hall is far from \
                   the station and the buses stop runn";
    let expected = format!(
        "Two reasons.\n\nFirst, the rent went up. Second, the hall is far from the station \
         and the buses stop\n{}",
        ambient::speech::CUT_MARKER
    );
    for stream in [true, false] {
        let bot = Bot::start(json!({"discord": {"streamReplies": stream}}));
        bot.model.push(Scripted::AtLimit {
            text: written.into(),
            tokens_out: 1024,
        });
        bot.discord
            .say(GENERAL, ALICE, &mention("why did we move the meetup?"));
        assert!(
            bot.discord
                .wait_until(30, |w| w.posted_in(GENERAL).len() == 1),
            "{}",
            bot.log()
        );
        assert!(
            bot.discord
                .wait_until(10, |w| shown(w) == [expected.clone()]),
            "stream {stream}: shown {:#?}",
            bot.discord.with(|w| shown(w))
        );
        assert!(bot.stop().success());
    }
}

/// A small opaque PNG.
fn png() -> Vec<u8> {
    let img = image::RgbImage::from_fn(64, 48, |x, y| image::Rgb([x as u8 * 4, y as u8 * 5, 90]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// The text of the last user message the model was sent.
fn prompt_of(body: &Value) -> String {
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    match &user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// A Discord-compatible server whose files live on another port: what
/// `discord.attachmentOrigins` names is read (as `apiBaseUrl`'s origin is,
/// though it is a private address), and an attachment anywhere else is still
/// refused before any connection.
#[test]
fn attachments_from_a_named_file_origin_are_read_and_from_nowhere_else() {
    let example = readme::block("whose attachments are served from port 8081", "json");
    let home = crate::support::home::Home::new(json!({}));
    let file = home.path().join("files.json");
    std::fs::write(&file, &example).unwrap();
    let out = home.run(&["settings", "check", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Two more fake Discords play file hosts on ports of their own: one named, one not.
    let files = FakeDiscord::start();
    let elsewhere = FakeDiscord::start();
    let refused = "its address is not Discord's CDN, discord.apiBaseUrl's server or one of discord.attachmentOrigins";
    for named in [true, false] {
        let origins = if named {
            vec![files.url.clone()]
        } else {
            vec![]
        };
        let bot = Bot::start(json!({
            "discord": {"attachmentOrigins": origins},
            "executive": {"roles": {"reply": {"vision": true}}},
        }));
        bot.model.push(Scripted::text("A floor plan."));
        let plan = files.upload(GENERAL, "plan.png", &png(), "image/png");
        let other = elsewhere.upload(GENERAL, "other.png", &png(), "image/png");
        let before = files.with(|w| w.find("GET", "/attachments/").len());
        bot.discord.say_with(
            GENERAL,
            ALICE,
            &mention("what's on the plan?"),
            None,
            vec![plan, other],
        );
        assert!(
            bot.discord
                .wait_until(20, |w| !w.sent_in(GENERAL).is_empty()),
            "no answer:\n{}",
            bot.log()
        );
        let prompt = prompt_of(&bot.model.requests()[0].body);
        let plan_line = if named {
            "- [image: plan.png — image 1 below], from alice's message".to_string()
        } else {
            format!("- [image: plan.png, not shown: {refused}], from alice's message")
        };
        assert!(prompt.contains(&plan_line), "named {named}: {prompt}");
        assert!(
            prompt.contains(&format!(
                "- [image: other.png, not shown: {refused}], from alice's message"
            )),
            "{prompt}"
        );
        let fetched = files.with(|w| w.find("GET", "/attachments/").len()) - before;
        assert_eq!(fetched, usize::from(named), "named {named}");
        assert!(bot.stop().success());
    }
    assert!(
        elsewhere.with(|w| w.find("GET", "/attachments/").is_empty()),
        "an origin nobody named was reached"
    );
}

/// A level-2 reflex that sums up what it is asked, in a reply.
const SUM_UP: &str = "name: sum-up\nlevel: 2\ntrigger:\n  pattern: \"(?i)^sum up: (.+)$\"\n  extract: [text]\npipeline:\n  - action: llm_prompt\n    prompt: \"Sum up: {{text}}\"\n    output: summary\n  - action: reply\n    message: \"{{summary}}\"\n";

/// A level-2 reflex's answer the model stopped at its limit — OpenAI's
/// `length`, or Anthropic's context window running out — is posted ending at
/// its last whole word with the cut marker, as a reply's is; not mid-word.
#[tokio::test]
async fn a_reflex_answer_the_model_stopped_at_its_limit_ends_at_a_word_and_says_so() {
    use crate::support::model_server::ModelServer;
    use crate::support::world::{self, World};
    use ambient::attention::Addressed;
    use ambient::settings::{ProviderKind, Secrets};

    let written =
        "The meetup moved to Tuesday because the hall is booked on Mondays and the buses stop runn";
    let expected = format!(
        "The meetup moved to Tuesday because the hall is booked on Mondays and the buses stop\n{}",
        ambient::speech::CUT_MARKER
    );
    let anthropic_body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": written}],
        "stop_reason": "model_context_window_exceeded",
        "usage": {"input_tokens": 120, "output_tokens": 64}
    });
    for anthropic in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sum-up.yaml"), SUM_UP).unwrap();
        let mut s = world::settings();
        s.reflexes.dir = dir.path().to_string_lossy().into_owned();
        let small = ModelServer::start();
        if anthropic {
            s.executive.roles.reflex.provider = ProviderKind::Anthropic;
            s.executive.roles.reflex.base_url = small.url.clone();
            small.push(Scripted::status(200, &anthropic_body.to_string()));
        } else {
            s.executive.roles.reflex.provider = ProviderKind::Openai;
            s.executive.roles.reflex.base_url = small.openai_base();
            small.push(Scripted::AtLimit {
                text: written.into(),
                tokens_out: 256,
            });
        }
        s.executive.roles.reflex.model = "small".into();
        let secrets = Secrets::from_lookup(|k| {
            (k == "ANTHROPIC_API_KEY").then(|| "sk-ant-test-123456".to_string())
        });
        let w = World::start_with_secrets(s, secrets).await;
        w.message(
            world::GENERAL,
            "ada",
            "<@1> sum up: why did the meetup move?",
            Addressed::Mention,
        )
        .await;
        let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
        assert_eq!(
            said,
            std::slice::from_ref(&expected),
            "anthropic {anthropic}"
        );
        assert_eq!(small.requests().len(), 1);
    }
}
