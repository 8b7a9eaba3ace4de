//! After a crash, what did reach the channel is known once: an ambient post
//! is found there as it was posted — mentions neutralised — and not posted a
//! second time, and the bot's message left unconfirmed is stored once.

use ambient::attention::{Addressed, MessagePercept, Percept};
use ambient::chat::Outgoing;
use ambient::clock::Clock;
use ambient::journal::Kind;
use ambient::store::messages::{Source, StoredMessage, provisional_id};

use crate::support::world::{self, GENERAL, GUILD_A, World};

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
    assert!(w.app.store.outbox_unsent().unwrap().is_empty());
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
    let me = w.app.speech.transport().me();
    let now = w.clock.now();
    let text = "The picnic is on Saturday.";
    let provisional = provisional_id(now);
    let row = |id| StoredMessage {
        id,
        guild: Some(GUILD_A),
        channel: GENERAL,
        author_id: me.id,
        author_name: me.name.clone(),
        author_is_bot: true,
        is_self: true,
        content: text.into(),
        attachments: vec![],
        reply_to: None,
        source: Source::Text,
        created_at: now,
        edited_at: None,
        deleted_at: None,
    };
    w.app.store.insert_message(&row(provisional)).unwrap();
    let outgoing = Outgoing {
        content: text.into(),
        reply_to: None,
        nonce: ambient::speech::nonce("crash-before-confirm", 0),
        files: vec![],
        pings: vec![],
        ping_replied: false,
    };
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
            message: row(real),
            addressed: Addressed::No,
            guild_name: None,
            channel_name: None,
        }))
        .unwrap();

    let mine: Vec<_> = w
        .app
        .store
        .recent_messages(GENERAL, 10)
        .unwrap()
        .into_iter()
        .filter(|m| m.is_self)
        .collect();
    assert_eq!(mine.len(), 1, "stored once: {mine:#?}");
    assert_eq!(mine[0].id, real, "under the id Discord gave it");
}
