//! After a crash, an ambient post that did reach the channel is found there
//! as it was posted — mentions neutralised — and not posted a second time.

use ambient::attention::Place;
use ambient::clock::Clock;
use ambient::initiative::pending::PendingThought;
use ambient::journal::Kind;

use crate::support::world::{self, GENERAL, GUILD_A, World};

/// The bot posted its held thought (through speech, as a tick does) and
/// stopped before marking the outbox row sent. The text had `@everyone`, so
/// the channel has it with a zero-width joiner, not as the outbox holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_with_everyone_delivered_before_a_crash_is_not_posted_again() {
    let w = World::start(world::settings()).await;
    let text = "Hey @everyone, the eclipse is tonight!";
    let now = w.clock.now();
    let held = PendingThought::new(
        GUILD_A,
        text.into(),
        Some(GENERAL),
        "waiting for a quiet moment".into(),
        None,
        now,
        chrono::Duration::hours(3),
    );
    w.app.store.save_pending_thought(&held).unwrap();
    w.app
        .store
        .outbox_insert("initiative-everyone", GUILD_A, GENERAL, text, now)
        .unwrap();
    let place = Place {
        guild: Some(GUILD_A),
        channel: GENERAL,
    };
    w.app
        .speech
        .say(place, text, None, "initiative-everyone")
        .await
        .unwrap();

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
