//! Memory upkeep's own schedule across an extraction back-off: when a
//! failed extraction holds a channel back, upkeep says it has nothing to
//! do there until the back-off ends (what lets a replay skip those
//! minutes), and extraction itself agrees: nothing is tried before, and
//! the batch is tried again then.

use ambient::clock::Clock;
use ambient::store::messages::Source;

use crate::support::model_server::Scripted;
use crate::support::world::{GENERAL, World, settings};

#[tokio::test]
async fn upkeep_says_its_next_work_is_when_an_extraction_back_off_ends() {
    let mut s = settings();
    // The provider's own cooldown would hide the back-off: only the back-off is measured here.
    s.executive.failure_threshold = 1000;
    s.memory.listen_batch_size = 2;
    let world = World::start(s).await;
    for text in [
        "the harbour ferry leaves at nine tonight from the northern pier",
        "bring a warm coat for the crossing, the wind gets bitter after dark",
    ] {
        world.hear(GENERAL, "ada", text, Source::Text);
    }
    let memory = &world.app.memory;
    let now = world.clock.now();
    assert_eq!(
        memory.next_upkeep(now),
        Some(now),
        "a listened batch is due at once"
    );

    world
        .model
        .fallback(Scripted::status(500, "the extraction model is down"));
    memory.extract_due().await;
    assert_eq!(world.model.requests().len(), 1, "tried once, and failed");
    let ends = now + chrono::Duration::minutes(1);
    assert_eq!(
        memory.next_upkeep(now),
        Some(ends),
        "the channel waits out its one-minute back-off"
    );

    // Checked against extraction itself: nothing is tried before then, and the batch is then.
    world.clock.set(ends - chrono::Duration::milliseconds(1));
    memory.maintain().await;
    assert_eq!(
        world.model.requests().len(),
        1,
        "nothing before the back-off ends"
    );
    world.clock.set(ends);
    assert_eq!(memory.next_upkeep(ends), Some(ends));
    memory.maintain().await;
    assert_eq!(world.model.requests().len(), 2, "tried again when it ends");
}
