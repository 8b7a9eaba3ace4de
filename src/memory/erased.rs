//! What forget-me took stays out of what extraction learns.
//!
//! Extraction reads a channel's messages that have not been through it
//! yet, which may have been said, or may be about someone, before that
//! person asked to be forgotten: a forget-me without `messages` leaves the
//! text, and the extraction checkpoint can be behind it. So, against the
//! erasure log (`store::forget`):
//! - before the model is asked, the words a person said before their latest
//!   forget-me leave the batch (and the bot's replies to them): they are
//!   never sent, never paid for;
//! - after it answers, a fact about, told by or learned from someone who
//!   asked at or after the words it comes from is dropped — this also
//!   catches a forget-me that came while the model was reading;
//! - after the facts are stored, a forget-me logged since the extraction
//!   began (in the moment between the check and the store) that concerns a
//!   stored fact is carried out once more, bounded by when it was asked.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use super::AskError;
use crate::ids::{MessageId, UserId};
use crate::memory::Stores;
use crate::store::PeopleStore;
use crate::store::messages::StoredMessage;
use crate::vocab::fact::Fact;

/// `messages` without the words said by someone before their latest
/// forget-me, and without the bot's replies to those words.
pub(super) fn without_the_forgotten(
    store: &PeopleStore,
    messages: Vec<StoredMessage>,
) -> Result<Vec<StoredMessage>, AskError> {
    let authors: Vec<UserId> = people(messages.iter().filter(|m| !m.is_self).map(|m| m.author_id));
    let erased = last_erasures(store, &authors)?;
    if erased.is_empty() {
        return Ok(messages);
    }
    let said_before = |m: &StoredMessage| {
        erased
            .get(&m.author_id)
            .is_some_and(|at| m.created_at <= *at)
    };
    let gone: HashSet<MessageId> = messages
        .iter()
        .filter(|m| !m.is_self && said_before(m))
        .map(|m| m.id)
        .collect();
    Ok(messages
        .into_iter()
        .filter(|m| !gone.contains(&m.id))
        .filter(|m| !(m.is_self && m.reply_to.is_some_and(|r| gone.contains(&r))))
        .collect())
}

/// `facts` without those about, told by or learned from the words of a
/// person who asked to be forgotten at or after those words were said
/// (`messages`: the batch the facts come from).
pub(super) fn without_the_erased(
    store: &PeopleStore,
    facts: Vec<Fact>,
    messages: &[StoredMessage],
) -> Result<Vec<Fact>, AskError> {
    let concerned = people(facts.iter().flat_map(|f| involved(f, messages)));
    let erased = last_erasures(store, &concerned)?;
    if erased.is_empty() {
        return Ok(facts);
    }
    let oldest = messages.iter().map(|m| m.created_at).min();
    Ok(facts
        .into_iter()
        .filter(|f| {
            let learned = learned_at(f, messages).or(oldest);
            !involved(f, messages).any(|p| {
                erased
                    .get(&p)
                    .is_some_and(|at| learned.is_none_or(|l| l <= *at))
            })
        })
        .collect())
}

/// A forget-me logged after `mark` by a person a stored fact concerns is
/// carried out once more: it may have run between the check above and
/// the store, finding nothing then. Failing, it is logged: the erasure
/// itself already ran, and it is tried at the next extraction's check.
pub(super) fn erase_what_came_too_late(
    store: &Stores,
    mark: i64,
    stored: &[Fact],
    messages: &[StoredMessage],
) {
    let late = match store.people.erasures_after(mark) {
        Ok(late) => late,
        Err(e) => {
            return tracing::error!(error = %e, "store read failed: the erasure log, after an extraction");
        }
    };
    let concerned: HashSet<UserId> = stored.iter().flat_map(|f| involved(f, messages)).collect();
    for erasure in late.iter().filter(|e| concerned.contains(&e.user)) {
        if let Err(e) = store.people.erase_again(erasure) {
            tracing::error!(user = %erasure.user, error = %e, "could not carry out a forget-me again after an extraction");
        }
    }
}

/// The people a fact concerns: who it is about, who told it, and who
/// said the words it was learned from.
fn involved<'a>(f: &'a Fact, messages: &'a [StoredMessage]) -> impl Iterator<Item = UserId> + 'a {
    let authors = f
        .sources
        .iter()
        .filter_map(|id| messages.iter().find(|m| m.id == *id))
        .filter(|m| !m.is_self)
        .map(|m| m.author_id);
    f.scope
        .user
        .into_iter()
        .chain(f.author.as_ref().map(|a| a.0))
        .chain(authors)
}

/// When the oldest words a fact was learned from were said.
fn learned_at(f: &Fact, messages: &[StoredMessage]) -> Option<DateTime<Utc>> {
    f.sources
        .iter()
        .filter_map(|id| messages.iter().find(|m| m.id == *id))
        .map(|m| m.created_at)
        .min()
}

fn people(ids: impl Iterator<Item = UserId>) -> Vec<UserId> {
    ids.collect::<HashSet<_>>().into_iter().collect()
}

fn last_erasures(
    store: &PeopleStore,
    users: &[UserId],
) -> Result<HashMap<UserId, DateTime<Utc>>, AskError> {
    store
        .last_erasures(users)
        .map_err(|source| AskError::StoreRead {
            what: "the erasure log",
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{GuildId, next_snowflake};
    use crate::store::Store;
    use crate::store::messages::sample;
    use crate::vocab::fact::{FactKind, Importance, Scope};

    /// The forget-me ran in the moment between the check and the store,
    /// finding nothing; the fact stored just after goes when it is
    /// carried out again.
    #[test]
    fn a_forget_me_logged_between_the_check_and_the_store_is_carried_out_again() {
        let store = Store::open_in_memory().unwrap();
        let now = Utc::now();
        let dave = UserId(7);
        let before = now - chrono::Duration::minutes(1);
        let mut said = sample(next_snowflake(before), 5, "call me at 555-0101", before);
        said.author_id = dave;
        let mark = store.people().erasure_mark().unwrap();
        store.people().forget_person(dave, false, now).unwrap();
        let mut fact = Fact::new(
            Scope::user(Some(GuildId(1)), dave),
            FactKind::Fact,
            Importance::High,
            "Dave's number is 555-0101.",
            now,
        );
        fact.sources = vec![said.id];
        store.memory().insert_fact(&fact).unwrap();

        erase_what_came_too_late(&(&store).into(), mark, std::slice::from_ref(&fact), &[said]);
        assert!(store.memory().fact(&fact.id).unwrap().is_none());
    }
}
