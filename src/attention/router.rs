//! The router: hands each attended input to the first handler that wants it.
//!
//! Handlers form a chain ordered by [`Handler::order`]: reflexes (cheap)
//! first, the executive (expensive) after them. A handler claims an input
//! synchronously and cheaply (`wants`, no model calls), then handles it; it
//! may still decline or escalate, and the input moves on down the chain. If
//! nobody takes it, the input is let pass. Every decision — claim, decline,
//! escalation, failure, pass — is written to the journal with the input's
//! salience and the reason.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;

use super::Input;
use super::percept::Percept;
use super::queue::Attended;
use crate::journal::Journal;
use crate::vocab::journal::{Entry, Kind};

/// How a handler finished with an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Handled; the handler journals what it did.
    Done,
    /// Not for this handler after all (e.g. a reflex's classifier said no).
    Declined(String),
    /// Worth more than this layer can give: pass it up the chain.
    Escalate(String),
    /// Something went wrong; the next handler may still take it.
    Failed(String),
}

#[async_trait]
pub trait Handler: Send + Sync {
    /// Shown in the journal, e.g. `executive:reply`, `reflex:greeting`.
    fn name(&self) -> String;

    /// Position in the chain; lower goes first. Reflexes use 0–999, the executive 1000.
    fn order(&self) -> i32;

    /// Cheap and synchronous: does this handler want the input? Returns why.
    fn wants(&self, item: &Attended) -> Option<String>;

    async fn handle(&self, item: &Attended) -> Outcome;
}

pub(crate) const ORDER_REFLEX: i32 = 100;
pub(crate) const ORDER_IMPULSE: i32 = 500;
pub const ORDER_EXECUTIVE: i32 = 1000;

/// The chain of handlers; later features register theirs at start-up.
#[derive(Default)]
pub struct Registry {
    handlers: RwLock<Vec<Arc<dyn Handler>>>,
}

impl Registry {
    pub fn register(&self, handler: Arc<dyn Handler>) {
        let mut hs = self.handlers.write().unwrap_or_else(|p| p.into_inner());
        hs.push(handler);
        hs.sort_by_key(|h| h.order());
    }

    pub(crate) fn snapshot(&self) -> Vec<Arc<dyn Handler>> {
        self.handlers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Routes one input through the chain, journaling every decision.
pub(crate) async fn route(registry: &Registry, journal: &Journal, item: &Attended) {
    let what = describe(&item.input);
    let mut item = std::borrow::Cow::Borrowed(item);
    for handler in registry.snapshot() {
        let Some(why) = handler.wants(&item) else {
            continue;
        };
        journal.record(entry(
            &item,
            Kind::Route,
            format!("{what} → {}", handler.name()),
            why,
        ));
        journal
            .metrics()
            .routed(&handler.name(), guild_of(&item.input));
        let outcome = handler.handle(&item).await;
        let (kind, verb, reason) = match outcome {
            Outcome::Done => return,
            Outcome::Declined(r) => (Kind::Outcome, "declined", r),
            Outcome::Escalate(r) => {
                item.to_mut().escalated = Some(format!("{}: {r}", handler.name()));
                (Kind::Outcome, "escalated", r)
            }
            Outcome::Failed(r) => (Kind::Error, "failed", r),
        };
        if kind == Kind::Error {
            tracing::warn!(handler = %handler.name(), reason = %reason, "handler failed");
        }
        journal.record(entry(
            &item,
            kind,
            format!("{what}: {} {verb}", handler.name()),
            reason,
        ));
    }
    record_pass(journal, &item, &what);
}

/// Journals the pass of an input no handler wants, if none does; whether
/// it did. Most of what a busy server says is such chatter, so the
/// dispatcher asks this itself and spares those a task of their own.
pub(crate) fn pass_if_unwanted(registry: &Registry, journal: &Journal, item: &Attended) -> bool {
    if registry.snapshot().iter().any(|h| h.wants(item).is_some()) {
        return false;
    }
    record_pass(journal, item, &describe(&item.input));
    true
}

fn record_pass(journal: &Journal, item: &Attended, what: &str) {
    journal.metrics().routed("pass", guild_of(&item.input));
    journal.record(entry(
        item,
        Kind::Route,
        format!("{what} → pass"),
        pass_reason(item),
    ));
}

fn entry(item: &Attended, kind: Kind, summary: String, reason: String) -> Entry {
    let mut e = Entry::new(kind, summary)
        .reason(reason)
        .salience(item.salience.score)
        .data(serde_json::json!({ "salience": item.salience.explain() }));
    match &item.input {
        Input::Percept(p) => {
            e = e.place(p.guild(), p.place().map(|pl| pl.channel));
            if let Percept::Message(m) = p {
                e = e.message(m.message.id);
            }
        }
        Input::Impulse(i) => e = e.place(i.guild, i.channel),
    }
    e
}

fn guild_of(input: &Input) -> Option<crate::ids::GuildId> {
    match input {
        Input::Percept(p) => p.guild(),
        Input::Impulse(i) => i.guild,
    }
}

fn describe(input: &Input) -> String {
    match input {
        Input::Percept(p) => p.describe(),
        Input::Impulse(i) => i.describe(),
    }
}

/// Why nobody took an input, in words a person reading the journal understands.
fn pass_reason(item: &Attended) -> String {
    match &item.input {
        Input::Percept(Percept::Message(m)) if m.message.author_is_bot => {
            "written by another bot; the bot does not talk to bots unprompted".into()
        }
        Input::Percept(Percept::Message(m)) if !m.addressed.is_addressed() => {
            "not addressed to the bot and below the unsolicited-reply bar; stored as context".into()
        }
        Input::Percept(Percept::Message(_)) => "addressed, but no handler could answer".into(),
        Input::Percept(_) => "nothing to do for this event; recorded".into(),
        Input::Impulse(i) => format!("no handler for {} yet", i.kind.label()),
    }
}
