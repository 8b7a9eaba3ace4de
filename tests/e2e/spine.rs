//! The attention spine: priority, per-channel order, journaling, resilience.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ambient::attention::router::ORDER_EXECUTIVE;
use ambient::attention::{
    Addressed, Attended, Handler, Impulse, ImpulseKind, Input, MessagePercept, Outcome, Percept,
    Spine,
};
use ambient::clock::{Clock, ManualClock};
use ambient::ids::{ChannelId, GuildId, MessageId, UserId};
use ambient::journal::Journal;
use ambient::settings::{Settings, SettingsService};
use ambient::store::Store;
use ambient::store::messages::StoredMessage;
use ambient::vocab::journal::{Filter, Kind};
use async_trait::async_trait;
use tokio::sync::watch;

/// Takes everything, records what it handled, optionally dawdles or panics.
struct Recorder {
    seen: Mutex<Vec<String>>,
    delay_ms: u64,
    panic_on: Option<String>,
}

#[async_trait]
impl Handler for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }
    fn order(&self) -> i32 {
        ORDER_EXECUTIVE
    }
    fn wants(&self, _: &Attended) -> Option<String> {
        Some("records everything".into())
    }
    async fn handle(&self, item: &Attended) -> Outcome {
        let label = label(&item.input);
        if self.delay_ms > 0 {
            // Vary the time taken so a broken lane would reorder.
            let jitter = (item.seq * 7) % self.delay_ms;
            tokio::time::sleep(Duration::from_millis(jitter)).await;
        }
        if self.panic_on.as_deref() == Some(label.as_str()) {
            panic!("boom");
        }
        self.seen.lock().unwrap().push(label);
        Outcome::Done
    }
}

fn label(input: &Input) -> String {
    match input {
        Input::Percept(Percept::Message(m)) => {
            format!("{}:{}", m.message.channel, m.message.content)
        }
        Input::Impulse(i) => format!("impulse:{}", i.guild.unwrap()),
        _ => "other".into(),
    }
}

fn message(channel: u64, text: &str, clock: &ManualClock, id: u64) -> Input {
    Input::Percept(Percept::Message(MessagePercept {
        message: StoredMessage::said(
            MessageId(id),
            Some(GuildId(1)),
            ChannelId(channel),
            UserId(9),
            "ada",
            text,
            clock.now(),
        ),
        addressed: Addressed::No,
        guild_name: None,
        channel_name: None,
        author_roles: None,
    }))
}

fn spine(max_concurrent: u32, recorder: Arc<Recorder>) -> (Arc<Spine>, Journal, Arc<ManualClock>) {
    spine_with(max_concurrent, recorder)
}

fn spine_with(
    max_concurrent: u32,
    handler: Arc<dyn Handler>,
) -> (Arc<Spine>, Journal, Arc<ManualClock>) {
    let clock = ManualClock::at_test_epoch();
    let store = Store::open_in_memory().unwrap();
    let mut settings = Settings::default();
    settings.attention.max_concurrent = max_concurrent;
    let settings = Arc::new(SettingsService::new(
        settings,
        store.overrides(),
        clock.clone(),
    ));
    let journal = Journal::new(store.journal(), clock.clone());
    let spine = Spine::new(journal.clone(), settings, clock.clone());
    spine.registry.register(handler);
    (spine, journal, clock)
}

fn recorder(delay_ms: u64, panic_on: Option<&str>) -> Arc<Recorder> {
    Arc::new(Recorder {
        seen: Mutex::new(Vec::new()),
        delay_ms,
        panic_on: panic_on.map(String::from),
    })
}

async fn run_until_idle(spine: &Arc<Spine>) {
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(spine.clone().run(rx));
    tokio::time::timeout(Duration::from_secs(10), spine.drain())
        .await
        .expect("drained");
    stop.send(true).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn a_user_message_queued_after_ten_impulses_is_handled_first() {
    let rec = recorder(0, None);
    let (spine, journal, clock) = spine(1, rec.clone());
    for g in 0..10 {
        spine.submit(Input::Impulse(Impulse::new(
            ImpulseKind::InitiativeTick,
            Some(GuildId(100 + g)),
            clock.now(),
        )));
    }
    spine.submit(message(5, "hey", &clock, 1));
    assert_eq!(spine.queued(), 11);
    run_until_idle(&spine).await;

    let seen = rec.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 11);
    assert_eq!(seen[0], "5:hey", "the person goes first: {seen:?}");

    let routes = journal
        .query(&Filter {
            kinds: vec![Kind::Route],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(routes.len(), 11, "every routing decision is journaled");
    assert!(
        routes
            .iter()
            .all(|e| e.salience.is_some() && !e.reason.is_empty())
    );
}

#[tokio::test]
async fn per_channel_order_is_kept_while_channels_run_in_parallel() {
    let rec = recorder(15, None);
    let (spine, _, clock) = spine(4, rec.clone());
    let mut id = 0;
    for i in 0..20 {
        for ch in [1, 2, 3] {
            id += 1;
            spine.submit(message(ch, &format!("{i:02}"), &clock, id));
        }
    }
    run_until_idle(&spine).await;
    let seen = rec.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 60);
    for ch in [1, 2, 3] {
        let order: Vec<&str> = seen
            .iter()
            .filter_map(|s| s.strip_prefix(&format!("{ch}:")))
            .collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "channel {ch} out of order");
    }
}

#[tokio::test]
async fn a_panicking_handler_is_journaled_and_the_spine_carries_on() {
    let rec = recorder(0, Some("7:explode"));
    let (spine, journal, clock) = spine(2, rec.clone());
    spine.submit(message(7, "explode", &clock, 1));
    spine.submit(message(7, "after", &clock, 2));
    spine.submit(message(8, "elsewhere", &clock, 3));
    run_until_idle(&spine).await;
    let mut seen = rec.seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, vec!["7:after", "8:elsewhere"]);
    let errors = journal
        .query(&Filter {
            kinds: vec![Kind::Error],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].summary.contains("panicked"));
}

/// Wants only what says "please" (and panics when asked about "explode").
struct Picky {
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl Handler for Picky {
    fn name(&self) -> String {
        "picky".into()
    }
    fn order(&self) -> i32 {
        ORDER_EXECUTIVE
    }
    fn wants(&self, item: &Attended) -> Option<String> {
        let label = label(&item.input);
        if label.ends_with("explode") {
            panic!("boom in wants");
        }
        label.contains("please").then(|| "asked nicely".into())
    }
    async fn handle(&self, item: &Attended) -> Outcome {
        self.seen.lock().unwrap().push(label(&item.input));
        Outcome::Done
    }
}

/// Chatter no handler wants is passed by the dispatcher itself, not on a
/// task of its own: every pass is still journaled, in order with what a
/// handler took, and a panic in a handler's `wants` is journaled and
/// dropped there as it would be on a task, with the spine carrying on.
#[tokio::test]
async fn chatter_nobody_wants_is_passed_and_journaled_and_a_panicking_wants_is_survived() {
    let picky = Arc::new(Picky {
        seen: Mutex::new(Vec::new()),
    });
    let (spine, journal, clock) = spine_with(2, picky.clone());
    spine.submit(message(1, "hello", &clock, 1));
    spine.submit(message(1, "explode", &clock, 2));
    spine.submit(message(1, "please help", &clock, 3));
    spine.submit(message(2, "bye", &clock, 4));
    run_until_idle(&spine).await;

    assert_eq!(*picky.seen.lock().unwrap(), vec!["1:please help"]);
    let of = |kind: Kind| {
        journal
            .query(&Filter {
                kinds: vec![kind],
                ..Default::default()
            })
            .unwrap()
    };
    let mut passed: Vec<Option<MessageId>> = of(Kind::Route)
        .into_iter()
        .filter(|e| e.summary.ends_with("→ pass"))
        .map(|e| e.message)
        .collect();
    passed.sort();
    assert_eq!(passed, vec![Some(MessageId(1)), Some(MessageId(4))]);
    assert!(
        of(Kind::Route)
            .iter()
            .any(|e| e.message == Some(MessageId(3)) && e.summary.ends_with("→ picky")),
        "the wanted message is routed to its handler"
    );
    let errors = of(Kind::Error);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].summary.contains("panicked"));
}
