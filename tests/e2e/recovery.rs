//! After a crash, what did reach the channel is known once: an ambient post
//! is found there as it was posted — mentions neutralised — and not posted a
//! second time, and the bot's message left unconfirmed is stored once.

use ambient::attention::{Addressed, MessagePercept, Percept};
use ambient::chat::Outgoing;
use ambient::clock::Clock;
use ambient::ids::MessageId;
use ambient::store::messages::{StoredMessage, provisional_id};
use ambient::vocab::journal::Kind;

use ambient::vocab::pending::PendingThought;
use serde_json::json;

use crate::support::model_server::Scripted;
use crate::support::world::{self, GENERAL, GUILD_A, World};
use crate::writes::{allow, refuse};

/// The bot's own words in #general of guild A, as speech records them.
fn own_row(w: &World, id: MessageId, text: &str) -> StoredMessage {
    let me = w.app.speech.transport().me();
    StoredMessage {
        author_is_bot: true,
        is_self: true,
        ..StoredMessage::said(
            id,
            Some(GUILD_A),
            GENERAL,
            me.id,
            me.name,
            text,
            w.clock.now(),
        )
    }
}

/// The bot's own messages in #general, as its history holds them.
fn mine(w: &World) -> Vec<StoredMessage> {
    w.app
        .store()
        .messages()
        .recent_messages(GENERAL, 10)
        .unwrap()
        .into_iter()
        .filter(|m| m.is_self)
        .collect()
}

/// Guild A holds `text` as its thought for #general.
fn hold(w: &World, text: &str) {
    let held = PendingThought::new(
        GUILD_A,
        text.into(),
        Some(GENERAL),
        "waiting for a quiet moment".into(),
        None,
        w.clock.now(),
        chrono::Duration::hours(3),
    );
    w.app
        .store()
        .initiative()
        .save_pending_thought(&held)
        .unwrap();
}

/// The bot posted its held thought (through speech, as a tick does) and
/// stopped before marking the outbox row sent. The text had `@everyone`, so
/// the channel has it with a zero-width joiner, not as the outbox holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_with_everyone_delivered_before_a_crash_is_not_posted_again() {
    let w = World::start(world::settings()).await;
    let text = "Hey @everyone, the eclipse is tonight!";
    w.crashed_after_posting(GENERAL, "initiative-everyone", text)
        .await;

    // Past Discord's nonce window: a resend would be a second post.
    w.clock.advance(chrono::Duration::minutes(5));
    w.app.initiative.recover().await;

    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(
        said,
        vec!["Hey @\u{200D}everyone, the eclipse is tonight!"],
        "posted once"
    );
    assert!(
        w.app
            .store()
            .initiative()
            .outbox_unsent()
            .unwrap()
            .is_empty()
    );
    let posts = w.journal(Kind::InitiativePost);
    assert!(
        posts
            .iter()
            .any(|e| e.reason == "found in the channel after a restart; not sent again"),
        "{posts:#?}"
    );
}

/// The bot recorded its words (a provisional row, as speech does), sent
/// them, and stopped before confirming. After the restart the message comes
/// back under its Discord id (the gateway's echo or backfill): the channel's
/// history and the hourly count have it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bots_message_left_unconfirmed_by_a_crash_is_stored_once() {
    let w = World::start(world::settings()).await;
    let text = "The picnic is on Saturday.";
    let nonce = ambient::speech::nonce("crash-before-confirm", 0);
    w.app
        .store()
        .messages()
        .insert_message(&own_row(&w, provisional_id(&nonce), text))
        .unwrap();
    let outgoing = Outgoing::text(text, nonce);
    let real = w
        .app
        .speech
        .transport()
        .send(GENERAL, &outgoing)
        .await
        .unwrap();

    // Restarted: the message arrives under its real id.
    w.app
        .senses
        .perceive(Percept::Message(MessagePercept {
            message: own_row(&w, real, text),
            addressed: Addressed::No,
            guild_name: None,
            channel_name: None,
            author_roles: None,
        }))
        .unwrap();

    let mine = mine(&w);
    assert_eq!(mine.len(), 1, "stored once: {mine:#?}");
    assert_eq!(mine[0].id, real, "under the id Discord gave it");
}

/// The post went out, and the write that confirms it failed (here the
/// store refuses to let go of the held thought, as a crash right between
/// marking the post sent and settling the thought left it): after a
/// restart the model is not shown the thought again, and the channel has
/// the post once — sent again under its own nonce, which the platform
/// answers with the message it already made, and in the bot's history once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_whose_confirmation_was_lost_is_settled_not_posted_twice() {
    // Guild A alone, and no fresh thought for an hour: after the restart
    // only a held thought could make the model be asked.
    let mut s = world::settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    s.initiative.text.min_minutes_between_posts = 60;
    let w = World::start(s.clone()).await;
    hold(&w, "The eclipse is tonight!");
    refuse(&w, "DELETE", "pending_thoughts", "");
    let post = json!({"action": "post", "channel": "general", "text": "The eclipse is tonight!", "reason": "people asked"});
    w.model.push(Scripted::tool("decide", post.clone()));
    w.model.push(Scripted::tool("decide", post));
    w.tick().await;
    assert_eq!(w.said().len(), 1, "posted");
    let asked = w.model.requests().len();

    allow(&w, "DELETE");
    let w = w.restart(s).await;
    w.app.initiative.recover().await;
    w.clock.advance(chrono::Duration::minutes(1));
    w.tick().await;

    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(said, vec!["The eclipse is tonight!"], "posted once");
    let asked_after: Vec<String> = w.model.requests()[asked..]
        .iter()
        .map(|r| r.body.to_string().chars().take(600).collect())
        .collect();
    assert!(
        asked_after.is_empty(),
        "the model was asked again: {asked_after:#?}"
    );
    assert!(
        w.app
            .store()
            .initiative()
            .pending_thought(GUILD_A)
            .unwrap()
            .is_none()
    );
    assert!(
        w.app
            .store()
            .initiative()
            .outbox_unsent()
            .unwrap()
            .is_empty()
    );
    let mine = mine(&w);
    assert_eq!(mine.len(), 1, "in the bot's history once: {mine:#?}");
}

/// The bot recorded its post and its words (the outbox row, and the
/// provisional row speech writes before a send) and stopped before sending
/// them: after the restart the post goes out once, and the bot's history
/// — its prompts, the hourly cap — has it once, under Discord's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_recorded_but_never_sent_is_sent_and_stored_once() {
    let w = World::start(world::settings()).await;
    let now = w.clock.now();
    let (cause, text) = (
        "initiative-crash-before-send",
        "Anyone up for the meteor shower?",
    );
    w.app
        .store()
        .initiative()
        .outbox_insert(cause, GUILD_A, GENERAL, text, now)
        .unwrap();
    let recorded = own_row(&w, provisional_id(&ambient::speech::nonce(cause, 0)), text);
    w.app.store().messages().insert_message(&recorded).unwrap();

    let w = w.restart(world::settings()).await;
    w.app.initiative.recover().await;

    let said = w.said();
    assert_eq!(said.len(), 1, "sent once: {said:#?}");
    let mine = mine(&w);
    assert_eq!(mine.len(), 1, "stored once: {mine:#?}");
    assert_eq!(mine[0].id, said[0].id, "under the id Discord gave it");
}

/// The same failed confirmation, with the bot running on: the next tick
/// stops at the `unsettled` gate instead of showing the model the thought,
/// the post is settled before the tick after (resent under its nonce, which
/// the platform answers with the message it made), and it counts once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_whose_confirmation_failed_is_settled_before_the_next_look() {
    let mut s = world::settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    let w = World::start(s).await;
    hold(&w, "The eclipse is tonight!");
    refuse(&w, "DELETE", "pending_thoughts", "");
    let post = json!({"action": "post", "channel": "general", "text": "The eclipse is tonight!", "reason": "people asked"});
    w.model.push(Scripted::tool("decide", post.clone()));
    w.model.fallback(Scripted::tool("decide", post));
    w.tick().await;
    assert_eq!(w.said().len(), 1, "posted");
    let asked = w.model.requests().len();

    allow(&w, "DELETE");
    w.tick().await;
    assert_eq!(
        w.model.requests().len(),
        asked,
        "the thought was not shown again"
    );
    let stops: Vec<String> = w
        .journal(Kind::Gate)
        .into_iter()
        .map(|e| e.summary)
        .collect();
    assert!(
        stops.contains(&"initiative stopped at the unsettled gate".to_string()),
        "{stops:#?}"
    );

    w.app.initiative.settle_unconfirmed().await;
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
            .is_none()
    );
    assert_eq!(w.said().len(), 1, "not posted twice");
    let counted =
        ambient::initiative::posts_last_24h(&w.app.store().journal(), GUILD_A, w.clock.now())
            .unwrap();
    assert_eq!(counted, 1, "counted once against maxPostsPerDay");
}
