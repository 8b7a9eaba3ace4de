//! Attention: the spine every input goes through.
//!
//! ```text
//! percepts, impulses ─► submit (score salience, queue) ─► dispatcher ─► router ─► handler
//! ```
//! [`Spine::submit`] scores an input and queues it; [`Spine::run`] pops the
//! best ready item (user input first, per-channel order kept) and routes it
//! on its own task, at most `attention.maxConcurrent` at once. A handler that
//! panics is journaled and its lane released; it never takes the bot down.

pub(crate) mod active;
pub(crate) mod impulse;
pub(crate) mod percept;
pub(crate) mod queue;
pub mod router;
pub(crate) mod salience;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;

pub use active::ActiveChannels;
pub use impulse::{Impulse, ImpulseKind};
pub use percept::{
    Addressed, Author, MessagePercept, Percept, Place, addressed_by_name, bot_mention,
    readable_mentions,
};
pub use queue::{Attended, Lane};
pub use router::{Handler, Outcome, Registry};
pub use salience::{Class, Salience};

use crate::clock::SharedClock;
use crate::journal::Journal;
use crate::settings::SettingsService;
use crate::vocab::journal::{Entry, Kind};
use queue::AttentionQueue;

/// Anything that competes for attention.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Percept(Percept),
    Impulse(Impulse),
}

pub struct Spine {
    queue: Mutex<AttentionQueue>,
    /// Woken when an item is queued or a lane is released.
    wake: Notify,
    /// Woken when the spine may have become idle.
    idle: Notify,
    in_flight: AtomicUsize,
    seq: AtomicU64,
    pub registry: Registry,
    pub active: ActiveChannels,
    journal: Journal,
    settings: Arc<SettingsService>,
    clock: SharedClock,
}

impl Spine {
    pub fn new(journal: Journal, settings: Arc<SettingsService>, clock: SharedClock) -> Arc<Self> {
        Arc::new(Self {
            queue: Mutex::new(AttentionQueue::default()),
            wake: Notify::new(),
            idle: Notify::new(),
            in_flight: AtomicUsize::new(0),
            seq: AtomicU64::new(0),
            registry: Registry::default(),
            active: ActiveChannels::default(),
            journal,
            settings,
            clock,
        })
    }

    /// Scores an input and queues it; returns its sequence number.
    pub fn submit(&self, input: Input) -> u64 {
        let guild = match &input {
            Input::Percept(p) => p.guild(),
            Input::Impulse(i) => i.guild,
        };
        let settings = self.settings.for_guild(guild);
        let now = self.clock.now();
        let channel_active = match &input {
            Input::Percept(p) => p
                .place()
                .is_some_and(|pl| self.active.is_active(pl.channel, now)),
            Input::Impulse(_) => false,
        };
        let salience = salience::score(
            &input,
            &salience::Context {
                settings: &settings,
                now,
                channel_active,
            },
        );
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let item = Attended {
            seq,
            lane: Lane::of(&input),
            input,
            salience,
            queued_at: now,
            escalated: None,
        };
        self.lock_queue().push(item);
        self.wake.notify_one();
        seq
    }

    /// Items waiting (not counting those being handled).
    pub fn queued(&self) -> usize {
        self.lock_queue().len()
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.lock_queue().is_empty() && self.in_flight.load(Ordering::SeqCst) == 0
    }

    /// Waits until nothing is queued or in flight (needs [`Spine::run`] going).
    pub async fn drain(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_idle() {
                return;
            }
            notified.await;
        }
    }

    /// The dispatcher. Runs until `shutdown` turns true, then waits for the
    /// items already being handled (queued ones stay unhandled).
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let max = self.settings.global().attention.max_concurrent.max(1) as usize;
        let permits = Arc::new(Semaphore::new(max));
        let mut tasks = JoinSet::new();
        loop {
            while let Some(done) = tasks.try_join_next() {
                log_join(done);
            }
            let permit = tokio::select! {
                p = permits.clone().acquire_owned() => p.expect("semaphore never closed"),
                _ = shutdown.changed() => break,
            };
            let item = loop {
                if *shutdown.borrow() {
                    break None;
                }
                if let Some(item) = self.pop_ready() {
                    break Some(item);
                }
                tokio::select! {
                    _ = self.wake.notified() => {}
                    _ = shutdown.changed() => {}
                }
            };
            let Some(item) = item else { break };
            if self.passed_here(&item) {
                continue;
            }
            let spine = self.clone();
            tasks.spawn(async move {
                let _permit = permit;
                let _guard = InFlight {
                    spine: &spine,
                    lane: item.lane,
                };
                router::route(&spine.registry, &spine.journal, &item).await;
            });
        }
        while let Some(done) = tasks.join_next().await {
            log_join(done);
        }
    }

    /// Routes an item no handler wants on the dispatcher itself (one
    /// journal line, not worth a task); whether it was one. A panic in a
    /// handler's `wants` is journaled and the item dropped, as on a task.
    fn passed_here(&self, item: &Attended) -> bool {
        let passed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            router::pass_if_unwanted(&self.registry, &self.journal, item)
        }));
        match passed {
            Ok(false) => return false,
            Ok(true) => {}
            Err(_) => {
                self.journal.record(panicked());
            }
        }
        self.finish(item.lane);
        true
    }

    fn pop_ready(&self) -> Option<Attended> {
        let mut q = self.lock_queue();
        let item = q.pop_ready()?;
        // Counted under the queue lock so `is_idle` never sees a gap.
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Some(item)
    }

    fn finish(&self, lane: Lane) {
        self.lock_queue().release(lane);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.wake.notify_one();
        self.idle.notify_waiters();
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, AttentionQueue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn journal(&self) -> &Journal {
        &self.journal
    }
}

/// Releases an item's lane when its handling ends, even by panic.
struct InFlight<'a> {
    spine: &'a Spine,
    lane: Lane,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.spine.journal.record(panicked());
        }
        self.spine.finish(self.lane);
    }
}

fn panicked() -> Entry {
    Entry::new(Kind::Error, "a handler panicked")
        .reason("the input was dropped; see the log for the panic message")
}

fn log_join(done: Result<(), tokio::task::JoinError>) {
    if let Err(e) = done
        && e.is_panic()
    {
        tracing::error!("a handler task panicked; the bot carries on");
    }
}
