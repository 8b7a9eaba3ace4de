//! Memory extraction against a model that does not do the job: one that
//! answers in words instead of calling `remember_facts`. Its requests stay
//! bounded however many messages keep coming, in however many channels,
//! and it is tried again at once when it does the job.

use ambient::store::messages::Source;
use serde_json::json;

use crate::support::model_server::Scripted;
use crate::support::world::{B_GENERAL, GENERAL, MEMES, World, settings};

const CHANNELS: [ambient::ids::ChannelId; 3] = [GENERAL, MEMES, B_GENERAL];

fn extraction_requests(world: &World) -> usize {
    world
        .model
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("remember_facts"))
        .count()
}

fn failures(world: &World) -> Vec<String> {
    world
        .journal(ambient::vocab::journal::Kind::Memory)
        .into_iter()
        .filter(|e| e.summary == "could not extract memories")
        .map(|e| e.reason)
        .collect()
}

/// `minutes` of the maintenance loop's one-minute turn, with someone
/// saying something in one of the three channels every minute.
async fn talk_for(world: &World, minutes: u32, said: &mut u32) {
    for _ in 0..minutes {
        let channel = CHANNELS[*said as usize % CHANNELS.len()];
        world.hear(
            channel,
            "ada",
            &format!("note {said}: the study group reads chapter {said} on thursday"),
            Source::Text,
        );
        *said += 1;
        world.app.memory.extract_due().await;
        world.clock.advance(chrono::Duration::minutes(1));
    }
}

#[tokio::test]
async fn a_model_that_answers_in_words_is_asked_less_and_less_however_many_messages_come() {
    let mut s = settings();
    // Only the back-off is measured: no provider cooldown, no budget in the way.
    s.executive.failure_threshold = 1000;
    s.budget.daily_tokens.extract = 0;
    s.budget.guild_autonomous_daily_tokens = 0;
    let world = World::start(s).await;
    world
        .model
        .fallback(Scripted::text("Sure! Here is what I noticed in the chat."));
    let mut said = 0;
    // Enough waiting in every channel for a listened batch (50 messages).
    for _ in 0..150 {
        world.hear(
            CHANNELS[said as usize % 3],
            "ada",
            &format!("note {said}: the study group reads chapter {said} on thursday"),
            Source::Text,
        );
        said += 1;
    }

    talk_for(&world, 48 * 60, &mut said).await;

    // One request per try, for all three channels together, at minutes 0, 1,
    // 3, 7, … 1023, 2047: the wait doubles to a day, whatever keeps coming.
    assert_eq!(said, 150 + 2_880);
    assert_eq!(extraction_requests(&world), 12);
    let lines = failures(&world);
    assert_eq!(lines.len(), 12, "one journal line per back-off: {lines:?}");
    assert!(
        lines[0].contains(
            "scripted (openai) does not call remember_facts, so extraction waits in every channel, \
             trying again in 1 minute (failure 1 in a row)"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[11].contains("trying again in 24 hours (failure 12 in a row)"),
        "{}",
        lines[11]
    );

    // The model does the job again: once its wait is over (minute 3487), every
    // channel's waiting messages are read, and the back-off is over.
    world
        .model
        .fallback(Scripted::tool("remember_facts", json!({"facts": []})));
    talk_for(&world, 3487 - 48 * 60 + 1, &mut said).await;
    let done: Vec<String> = world
        .journal(ambient::vocab::journal::Kind::Memory)
        .into_iter()
        .filter(|e| e.summary.starts_with("extracted 0 fact(s)"))
        .map(|e| e.reason)
        .collect();
    assert_eq!(done.len(), 3, "each channel once: {done:?}");
    assert_eq!(
        done[0],
        "extraction works again after 12 failure(s) in a row"
    );
    assert_eq!(extraction_requests(&world), 12 + 3);
}
