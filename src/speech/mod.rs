//! Speech: the one place the bot says anything.
//!
//! Every reply and post goes through [`Speech::say`], which
//! - refuses empty text,
//! - honours `permissions.replies.maxMessagesPerHour` per channel, sending
//!   what still fits and marking the cut instead of dropping the whole answer,
//! - splits long text at Discord's 2,000 characters on paragraph, line or
//!   sentence boundaries (keeping code fences balanced), at most
//!   `permissions.replies.maxPartsPerAnswer` parts,
//! - gives each part a nonce derived from what caused it, so a retry is
//!   deduplicated by the platform instead of posted twice,
//! - records what it says in channel history before sending it (the bot must
//!   know its own words, even after a crash right after a send), then gives
//!   the row the platform's id,
//! - says a reply the platform refuses for the message it answers (unknown
//!   to it: deleted, or not saved yet) at once as a plain message, under the
//!   same nonce, beginning with the mention of the person answered — or their
//!   name, under the no-ping boundary — so it still reaches them.
//!
//! A long answer can also be shown while it is written: [`Speech::stream`]
//! (in `stream`) posts its start and edits it, under the same rules.
//!
//! [`Speech::deliverable`] answers, before anyone pays a model for the words,
//! whether anything could be said in a place now: the channel still visible
//! under the current settings, under its hourly cap, and not one whose last
//! send the platform refused (missing permission) within the last
//! [`REFUSAL_MEMORY_MINUTES`].
//!
//! Mentions are safe twice over. The text itself is neutralised here
//! ([`neutralise_mentions`]): `@everyone` and `@here` get a zero-width joiner
//! after the `@`, a role mention becomes `@role`, and a user mention becomes
//! that person's name unless they may be pinged — the person being answered,
//! or whom the caller names (a reminder's owner, a speaker) — and have not
//! asked never to be (the `no-ping` boundary: their name is written instead,
//! and a reply to them does not ping them either). So even a server that
//! ignores `allowed_mentions` pings nobody else. The Discord transport also
//! sends `allowed_mentions` with exactly those users, and `replied_user`
//! only when the person answered may be pinged.

use crate::store::{MessageStore, PeopleStore};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use crate::attention::Place;
use crate::chat::{ChatError, Outgoing, OutgoingFile, Transport};
use crate::clock::SharedClock;
use crate::executive::StopReason;
use crate::ids::{ChannelId, MessageId, UserId};
use crate::permissions;
use crate::settings::SettingsService;
use crate::store::StoreError;
use crate::store::boundaries::Boundary;
use crate::store::messages::StoredMessage;

pub(crate) mod stream;

/// Discord's message length limit, in characters.
pub(crate) const MESSAGE_LIMIT: usize = 2000;

/// How long a channel that refused the bot's message (403) is taken as closed to it.
pub(crate) const REFUSAL_MEMORY_MINUTES: i64 = 15;

/// Ends the last part of an answer that did not fit whole.
pub const CUT_MARKER: &str = "… (cut: the rest did not fit here)";

/// Why nothing can be said in a place right now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Undeliverable {
    #[error("the bot may not speak there: {0}")]
    Invisible(&'static str),
    #[error(
        "this channel already had {sent} messages from the bot in the last hour (limit {limit}, permissions.replies.maxMessagesPerHour)"
    )]
    HourlyCap { sent: u64, limit: u32 },
    #[error("the platform refused the bot's last message there ({0}); trying again later")]
    Refused(String),
}

#[derive(Debug, thiserror::Error)]
pub enum SpeechError {
    #[error("nothing to say: the text is empty")]
    Empty,
    #[error(transparent)]
    Undeliverable(#[from] Undeliverable),
    #[error(transparent)]
    Chat(#[from] ChatError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct Speech {
    transport: Arc<dyn Transport>,
    store: Stores,
    settings: Arc<SettingsService>,
    clock: SharedClock,
    /// Channels whose last send was refused, and when.
    refused: Mutex<HashMap<ChannelId, (DateTime<Utc>, String)>>,
    /// Texts made ready and then turned away at the door: each one is work
    /// (often a paid model call) nobody saw. Every gate before a model call
    /// exists to keep this at 0; replay's report shows it.
    turned_away: AtomicU64,
}

impl Speech {
    pub(crate) fn new(
        transport: Arc<dyn Transport>,
        store: Stores,
        settings: Arc<SettingsService>,
        clock: SharedClock,
    ) -> Self {
        Self {
            transport,
            store,
            settings,
            clock,
            refused: Mutex::new(HashMap::new()),
            turned_away: AtomicU64::new(0),
        }
    }

    /// How many texts were ready to say but could not be delivered.
    pub(crate) fn turned_away(&self) -> u64 {
        self.turned_away.load(Ordering::Relaxed)
    }

    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }

    /// How many messages may still be sent in `place` now, or why none may.
    /// Every path that pays a model for words asks this first.
    pub(crate) fn deliverable(&self, place: Place) -> Result<u64, SpeechError> {
        let settings = self.settings.for_guild(place.guild);
        if !place.is_dm()
            && let Some(why) = permissions::channel_invisible_because(&settings, place.channel)
        {
            return Err(Undeliverable::Invisible(why).into());
        }
        let now = self.clock.now();
        if let Some((at, why)) = self.lock_refused().get(&place.channel)
            && now - *at < chrono::Duration::minutes(REFUSAL_MEMORY_MINUTES)
        {
            return Err(Undeliverable::Refused(why.clone()).into());
        }
        hourly_room(&self.store.messages, &settings, place.channel, now)
    }

    fn lock_refused(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<ChannelId, (DateTime<Utc>, String)>> {
        self.refused.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Says `text` in `place`, as a reply to `reply_to` if given. `cause` is a
    /// stable key for what prompted it (e.g. the message being answered): the
    /// same cause yields the same nonces.
    /// Only the author of `reply_to` may be pinged.
    pub async fn say(
        &self,
        place: Place,
        text: &str,
        reply_to: Option<MessageId>,
        cause: &str,
    ) -> Result<Vec<MessageId>, SpeechError> {
        self.speak(place, text, reply_to, cause, Vec::new(), &[])
            .await
    }

    /// Like [`Speech::say`]; `pings` may be pinged too (a reminder's owner, a speaker).
    pub(crate) async fn say_pinging(
        &self,
        place: Place,
        text: &str,
        reply_to: Option<MessageId>,
        cause: &str,
        pings: &[UserId],
    ) -> Result<Vec<MessageId>, SpeechError> {
        self.speak(place, text, reply_to, cause, Vec::new(), pings)
            .await
    }

    /// Like [`Speech::say`], with files attached to the first part.
    pub(crate) async fn say_with_files(
        &self,
        place: Place,
        text: &str,
        reply_to: Option<MessageId>,
        cause: &str,
        files: Vec<OutgoingFile>,
    ) -> Result<Vec<MessageId>, SpeechError> {
        self.speak(place, text, reply_to, cause, files, &[]).await
    }

    /// Who may be pinged — the author of the message being answered and
    /// whoever the caller names, less those who asked never to be — and how
    /// the answered author is addressed.
    fn addressing(&self, reply_to: Option<MessageId>, also: &[UserId]) -> Addressing {
        let answered = reply_to
            .and_then(|id| self.store.messages.message(id).ok().flatten())
            .filter(|m| !m.is_self);
        let author = answered.as_ref().map(|m| m.author_id);
        let mut pings: Vec<UserId> = also.iter().copied().chain(author).collect();
        pings.sort_unstable_by_key(|u| u.get());
        pings.dedup();
        // Unreadable boundaries fail closed: a name instead of a ping costs nothing.
        let unpingable = self
            .store
            .people
            .with_boundary(&pings, Boundary::NoPing)
            .unwrap_or_else(|_| pings.iter().copied().collect());
        pings.retain(|u| !unpingable.contains(u));
        let ping_replied = author.is_some_and(|a| pings.contains(&a));
        let addressee = answered.map(|m| match ping_replied {
            true => format!("<@{}>", m.author_id),
            // The no-ping boundary: their name, made as safe as any text.
            false => neutralise_mentions(&format!("@{}", m.author_name), &[], |_| None),
        });
        Addressing {
            pings,
            ping_replied,
            addressee,
        }
    }

    async fn speak(
        &self,
        place: Place,
        text: &str,
        reply_to: Option<MessageId>,
        cause: &str,
        mut files: Vec<OutgoingFile>,
        also: &[UserId],
    ) -> Result<Vec<MessageId>, SpeechError> {
        let Addressing {
            pings,
            ping_replied,
            addressee,
        } = self.addressing(reply_to, also);
        let text = neutralise_mentions(text, &pings, |u| {
            self.store.messages.author_name(u).ok().flatten()
        });
        let text = text.trim();
        if text.is_empty() {
            return Err(SpeechError::Empty);
        }
        let room = self.deliverable(place).inspect_err(|_| {
            self.turned_away.fetch_add(1, Ordering::Relaxed);
        })?;
        let max_parts = self
            .settings
            .for_guild(place.guild)
            .permissions
            .replies
            .max_parts_per_answer;
        let fits = room.min(u64::from(max_parts)).max(1) as usize;
        let mut parts = split_within(text, MESSAGE_LIMIT, fits);

        let mut ids = Vec::with_capacity(parts.len());
        let mut i = 0;
        while i < parts.len() {
            let mut outgoing = Outgoing {
                content: parts[i].clone(),
                // Only the first part is a reply; the rest follow it.
                reply_to: if i == 0 { reply_to } else { None },
                nonce: nonce(cause, i),
                files: std::mem::take(&mut files),
                pings: pings.clone(),
                ping_replied: i == 0 && ping_replied,
                ping_roles: Vec::new(),
                cards: Vec::new(),
            };
            let id = self
                .post_reply(place, &mut outgoing, || {
                    // Said plain, the answer begins with whom it answers: split anew.
                    let text = addressed(text, addressee.as_deref());
                    parts = split_within(&text, MESSAGE_LIMIT, fits);
                    parts.first().cloned().unwrap_or(text)
                })
                .await?;
            ids.push(id);
            i += 1;
        }
        self.lock_refused().remove(&place.channel);
        Ok(ids)
    }
}

/// Who an answer may ping, and how it names the person it answers.
struct Addressing {
    /// The only people the answer may ping.
    pings: Vec<UserId>,
    /// Whether the reply pings the author of the message answered.
    ping_replied: bool,
    /// The author of the message answered, as a plain message addresses them
    /// (their mention, or `@name` under the no-ping boundary); none when
    /// nobody is answered.
    addressee: Option<String>,
}

/// `text` as a plain message answering someone: `addressee` in front of it.
fn addressed(text: &str, addressee: Option<&str>) -> String {
    match addressee {
        Some(who) if !text.starts_with(who) => format!("{who} {text}"),
        _ => text.to_string(),
    }
}

impl Speech {
    /// Posts `outgoing`. A reply the platform refused for the message it
    /// answers, unknown to it (deleted meanwhile, or announced by a
    /// Discord-compatible server before it was saved), is posted at once as a
    /// plain message under the same nonce — the answer was paid for — with
    /// `plain` as its text: addressed to the person answered, who gets no
    /// reply to see and, without their mention in it, no ping. Its row is
    /// stored as what was said: that text, replying to nothing.
    async fn post_reply(
        &self,
        place: Place,
        outgoing: &mut Outgoing,
        plain: impl FnOnce() -> String,
    ) -> Result<MessageId, SpeechError> {
        match self.post(place, outgoing).await {
            Err(SpeechError::Chat(ChatError::ReferenceUnknown(why)))
                if outgoing.reply_to.is_some() =>
            {
                tracing::info!(channel = %place.channel, reason = %why, "the message answered is unknown to the platform; saying the answer as a plain message");
                outgoing.content = plain();
                outgoing.reply_to = None;
                outgoing.ping_replied = false;
                self.post(place, outgoing).await
            }
            other => other,
        }
    }

    /// Records one part in the channel's history, then sends it. Recorded
    /// before it is sent: a crash right after the send still leaves it in
    /// the bot's history and in the channel's hourly count.
    async fn post(&self, place: Place, outgoing: &Outgoing) -> Result<MessageId, SpeechError> {
        let me = self.transport.me();
        let provisional = crate::store::messages::provisional_id(&outgoing.nonce);
        self.store.messages.insert_message(&StoredMessage {
            author_is_bot: true,
            is_self: true,
            reply_to: outgoing.reply_to,
            ..StoredMessage::said(
                provisional,
                place.guild,
                place.channel,
                me.id,
                me.name.clone(),
                outgoing.content.clone(),
                self.clock.now(),
            )
        })?;
        let id = match self.send(place.channel, outgoing).await {
            Ok(id) => id,
            Err(e) => {
                self.store.messages.forget_unsent(provisional)?;
                return Err(e.into());
            }
        };
        self.store.messages.confirm_message(provisional, id)?;
        Ok(id)
    }

    /// Sends one part. An unknown outcome (an unreadable answer, a dropped
    /// connection, a server error) is settled by sending it once more with
    /// the same nonce: the platform answers with the message it already made,
    /// or makes it now — never a second one.
    async fn send(&self, channel: ChannelId, outgoing: &Outgoing) -> Result<MessageId, ChatError> {
        let result = match self.transport.send(channel, outgoing).await {
            Err(ChatError::Unknown(why)) => {
                tracing::warn!(%channel, reason = %why, "send outcome unknown; asking again with the same nonce");
                self.clock
                    .sleep(std::time::Duration::from_millis(UNKNOWN_OUTCOME_PAUSE_MS))
                    .await;
                self.transport.send(channel, outgoing).await
            }
            other => other,
        };
        if let Err(ChatError::Refused(why)) = &result {
            self.lock_refused()
                .insert(channel, (self.clock.now(), why.clone()));
        }
        result
    }
}

/// How many messages `channel` may still get from the bot this hour
/// (`permissions.replies.maxMessagesPerHour`), from the store alone: the
/// status widget asks it without a running bot.
pub(crate) fn hourly_room(
    store: &MessageStore,
    settings: &crate::settings::Settings,
    channel: ChannelId,
    now: DateTime<Utc>,
) -> Result<u64, SpeechError> {
    let limit = settings.permissions.replies.max_messages_per_hour;
    let sent = store.count_self_messages_since(channel, now - chrono::Duration::hours(1))?;
    match u64::from(limit).saturating_sub(sent) {
        0 => Err(Undeliverable::HourlyCap { sent, limit }.into()),
        left => Ok(left),
    }
}

/// The pause before a send whose outcome was unknown is asked again.
const UNKNOWN_OUTCOME_PAUSE_MS: u64 = 500;

/// `text` as it may be posted: `@everyone`/`@here` broken by a zero-width
/// joiner, role mentions as `@role`, and user mentions of anyone outside
/// `pings` as `@name` (or `@someone` when the name is unknown). At most
/// [`MAX_NAMED_MENTIONS`] names are looked up; further ones become `@someone`.
pub(crate) fn neutralise_mentions(
    text: &str,
    pings: &[UserId],
    mut name_of: impl FnMut(UserId) -> Option<String>,
) -> String {
    static MENTION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"<@(!|&)?(\d{1,20})>|@(everyone|here)\b").expect("valid pattern")
    });
    let mut looked_up = 0;
    MENTION
        .replace_all(text, |c: &regex::Captures<'_>| {
            if let Some(word) = c.get(3) {
                return format!("@\u{200D}{}", word.as_str());
            }
            if c.get(1).is_some_and(|k| k.as_str() == "&") {
                return "@role".to_string();
            }
            let id = UserId(c[2].parse().unwrap_or(0));
            if pings.contains(&id) {
                return format!("<@{id}>");
            }
            looked_up += 1;
            let name = (looked_up <= MAX_NAMED_MENTIONS)
                .then(|| name_of(id))
                .flatten()
                .unwrap_or_else(|| "someone".into());
            format!("@{name}")
        })
        .into_owned()
}

/// How many unpingable user mentions in one message get their name looked up.
pub(crate) const MAX_NAMED_MENTIONS: usize = 10;

/// Splits `text` into at most `max_parts` parts of at most `limit`
/// characters; when it does not fit, the last part ends with [`CUT_MARKER`].
/// Only what can be sent is split, so a megabyte answer costs no more than
/// the parts it yields.
pub fn split_within(text: &str, limit: usize, max_parts: usize) -> Vec<String> {
    let ceiling = limit * max_parts;
    let head: String = text.chars().take(ceiling + 1).collect();
    let mut parts = split_message(&head, limit);
    if parts.len() <= max_parts && head.chars().count() <= ceiling {
        return parts;
    }
    parts.truncate(max_parts);
    if let Some(last) = parts.last_mut() {
        let room = limit - CUT_MARKER.chars().count() - 1;
        if last.chars().count() > room {
            // split_message closes a code fence open at its cut.
            *last = split_message(last, room).swap_remove(0);
        }
        last.push('\n');
        last.push_str(CUT_MARKER);
    }
    parts
}

/// How far back from its end an answer the model stopped at its length limit
/// is cut to end at a paragraph, line, sentence or word: past this, it is
/// kept whole (it ends at its last whole character).
const UNFINISHED_LOOKBACK: usize = 500;

/// A paragraph end is preferred to a later line or sentence end only when at
/// most this many characters of finished text would be lost for it.
const PARAGRAPH_PREFERENCE: usize = 40;

/// What ends a sentence when it is followed by a space (`". "`), or alone
/// (`"。"`: Chinese and Japanese put no space after a sentence).
const SENTENCE_ENDS: [&str; 7] = [". ", "! ", "? ", "… ", "。", "！", "？"];

/// The last character of text that ends a sentence.
const FINISHED: [char; 7] = ['.', '!', '?', '…', '。', '！', '？'];

/// An answer the model stopped writing at its length limit (it said so:
/// `length`, `max_tokens`), ready to say: its unfinished end dropped — back
/// to the latest paragraph, line or sentence end in its last quarter (at most
/// [`UNFINISHED_LOOKBACK`] bytes), else to its last word there — an open code
/// block closed, and [`CUT_MARKER`] after it. Text already ending a sentence
/// loses nothing, and neither does text with no break in its last quarter
/// (Chinese or Japanese without a sentence end near): it is cut at its last
/// whole character, never back to an early break.
pub(crate) fn cut_unfinished(text: &str) -> String {
    let text = text.trim_end();
    let finished = text.ends_with(FINISHED) || text.ends_with("```");
    let end = if finished {
        text.len()
    } else {
        unfinished_from(text)
    };
    let mut kept = text[..end].trim_end().to_string();
    if kept.matches("```").count() % 2 == 1 {
        kept.push_str("\n```");
    }
    kept.push('\n');
    kept.push_str(CUT_MARKER);
    kept
}

/// The answer as the model ended it: one it stopped at its length limit
/// (`maxOutputTokens`, by its own count) loses its unfinished end and says it
/// was cut ([`cut_unfinished`]); any other is said whole. Its length in
/// characters decides nothing here — a model's tokens are not four characters
/// each — and speech still splits it at 2,000 characters, within
/// `maxPartsPerAnswer`.
pub(crate) fn as_ended(text: String, stop: Option<StopReason>) -> String {
    match stop {
        Some(StopReason::MaxTokens) => cut_unfinished(&text),
        _ => text,
    }
}

/// Byte index where the unfinished end of `text` begins (see
/// [`cut_unfinished`]). A mention the answer opens with (a voice answer's
/// `<@id> `) is no break: the boundaries are looked for after it.
fn unfinished_from(text: &str) -> usize {
    static LEADING_MENTION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^<@!?\d{1,20}>\s*").expect("valid pattern")
    });
    let start = LEADING_MENTION.find(text).map_or(0, |m| m.end());
    let body = &text[start..];
    let floor = body.len() - (body.len() / 4).min(UNFINISHED_LOOKBACK);
    let last_end = |pats: &[&str]| {
        pats.iter()
            .filter_map(|pat| body.rmatch_indices(pat).next().map(|(i, m)| i + m.len()))
            .filter(|&end| end >= floor)
            .max()
    };
    let paragraph = last_end(&["\n\n"]);
    let latest = last_end(&["\n"]).max(last_end(&SENTENCE_ENDS));
    let end = match (paragraph, latest) {
        // A paragraph reads as the better end, but not at the cost of whole sentences.
        (Some(p), Some(l)) if body[p..l].chars().count() <= PARAGRAPH_PREFERENCE => Some(p),
        (_, Some(l)) => Some(l),
        (p, None) => p,
    };
    let end = end
        .or_else(|| body.rfind(char::is_whitespace).filter(|&i| i >= floor))
        .unwrap_or(body.len());
    start + end
}

/// A Discord nonce (at most 25 characters) derived from the cause and part index.
pub fn nonce(cause: &str, part: usize) -> String {
    let h = crate::ids::stable_id("nonce", &format!("{cause}#{part}"));
    format!("a{h:x}").chars().take(25).collect()
}

/// Splits text into parts of at most `limit` characters, preferring paragraph
/// breaks, then line breaks, then sentence ends, then spaces. A code fence
/// open at a split is closed at the end of the part and reopened in the next.
pub fn split_message(text: &str, limit: usize) -> Vec<String> {
    const FENCE_CLOSE: &str = "\n```";
    let mut parts = Vec::new();
    let mut rest = text.trim().to_string();
    let mut reopen = String::new();
    while !rest.is_empty() {
        let current = format!("{reopen}{rest}");
        if current.chars().count() <= limit {
            parts.push(current);
            break;
        }
        // Leave room to close a fence that may be open at the cut.
        let budget = limit - FENCE_CLOSE.len();
        let window: String = current.chars().take(budget).collect();
        let cut = best_break(&window).unwrap_or(window.len());
        let (head, tail) = current.split_at(cut);
        let mut head = head.trim_end().to_string();
        let fences_open = head.matches("```").count() % 2 == 1;
        reopen.clear();
        if fences_open {
            let opener = head.rfind("```").map(|i| &head[i..]).unwrap_or("```");
            let lang: String = opener[3..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            reopen = format!("```{lang}\n");
            head.push_str(FENCE_CLOSE);
        }
        parts.push(head);
        rest = tail.trim_start().to_string();
    }
    parts
}

/// Byte index just after the best place to break `window`, if any.
fn best_break(window: &str) -> Option<usize> {
    let min = window.len() / 2; // never make a part tiny just to find a nice break
    let after = |pat: &str| {
        window
            .rmatch_indices(pat)
            .map(|(i, m)| i + m.len())
            .find(|&end| end >= min)
    };
    after("\n\n")
        .or_else(|| after("\n"))
        .or_else(|| SENTENCE_ENDS.iter().filter_map(|p| after(p)).max())
        .or_else(|| after(" "))
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub(crate) struct Stores {
    pub messages: MessageStore,
    pub people: PeopleStore,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::store::Store;

    #[test]
    fn short_text_is_one_part() {
        assert_eq!(split_message("hello", 2000), vec!["hello"]);
    }

    #[test]
    fn long_text_splits_on_sentences_within_the_limit() {
        let sentence = "This is a sentence that goes on for a while. ";
        let text = sentence.repeat(100); // 4,500 characters
        let parts = split_message(&text, 2000);
        assert_eq!(parts.len(), 3);
        for p in &parts {
            assert!(p.chars().count() <= 2000, "{}", p.len());
            assert!(
                p.ends_with('.'),
                "split mid-sentence: …{}",
                &p[p.len() - 20..]
            );
        }
        let rejoined: String = parts.join(" ");
        assert_eq!(
            rejoined.split_whitespace().count(),
            text.split_whitespace().count(),
            "no words lost"
        );
    }

    #[test]
    fn text_without_breaks_is_cut_hard_and_multibyte_safe() {
        let text = "é".repeat(4100);
        let parts = split_message(&text, 2000);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= 2000));
        assert_eq!(parts.concat().chars().count(), 4100);
    }

    #[test]
    fn code_fences_are_closed_and_reopened() {
        let code = format!("```rust\n{}```", "let x = 1;\n".repeat(300));
        let parts = split_message(&code, 2000);
        assert!(parts.len() >= 2);
        for p in &parts {
            assert_eq!(
                p.matches("```").count() % 2,
                0,
                "unbalanced fence in part: {p}"
            );
            assert!(p.chars().count() <= 2000);
        }
        assert!(parts[1].starts_with("```rust\n"));
    }

    #[test]
    fn a_huge_answer_is_cut_to_the_parts_that_fit_with_a_marker() {
        let text = "word ".repeat(200_000); // a megabyte
        let parts = split_within(&text, 2000, 4);
        assert_eq!(parts.len(), 4);
        assert!(parts.iter().all(|p| p.chars().count() <= 2000));
        assert!(parts[3].ends_with(CUT_MARKER), "{}", &parts[3][1900..]);
        assert!(!parts[2].contains(CUT_MARKER));
    }

    #[test]
    fn an_answer_that_fits_is_not_marked() {
        let text = "This is a sentence that goes on for a while. ".repeat(100);
        let parts = split_within(&text, 2000, 3);
        assert_eq!(parts, split_message(&text, 2000));
        assert!(!parts.concat().contains(CUT_MARKER));
        let one = split_within(&text, 2000, 1);
        assert_eq!(one.len(), 1);
        assert!(one[0].ends_with(CUT_MARKER) && one[0].chars().count() <= 2000);
    }

    #[test]
    fn a_cut_inside_code_keeps_the_fence_balanced() {
        let code = format!("```rust\n{}```", "let x = 1;\n".repeat(600));
        let parts = split_within(&code, 2000, 2);
        assert_eq!(parts.len(), 2);
        for p in &parts {
            assert_eq!(p.matches("```").count() % 2, 0, "unbalanced: {p}");
            assert!(p.chars().count() <= 2000);
        }
        assert!(parts[1].ends_with(CUT_MARKER));
    }

    #[test]
    fn an_answer_stopped_at_its_limit_ends_at_a_boundary_with_the_marker() {
        let marked = |t: &str| format!("{t}\n{CUT_MARKER}");
        // Mid-word, no sentence end near: back to the last whole word.
        let text = "Two reasons.\n\nFirst, the rent went up. Second, the hall is far from the station and the buses stop runn";
        assert_eq!(
            cut_unfinished(text),
            marked(
                "Two reasons.\n\nFirst, the rent went up. Second, the hall is far from the station and the buses stop"
            )
        );
        // A paragraph just ended: the half-begun one goes.
        let text = format!(
            "{}\n\nAnd th",
            "A whole sentence here. ".repeat(10).trim_end()
        );
        assert_eq!(
            cut_unfinished(&text),
            marked("A whole sentence here. ".repeat(10).trim_end())
        );
        // Already at a sentence end: nothing lost.
        assert_eq!(cut_unfinished("All done."), marked("All done."));
        // No space at all: kept whole, never cut inside a character.
        assert_eq!(
            cut_unfinished("日本語のテキスト"),
            marked("日本語のテキスト")
        );
        // Inside code: the block is closed before the marker.
        let code = cut_unfinished("Here:\n```rust\nlet x = 1;\nlet y = sq");
        assert_eq!(code, marked("Here:\n```rust\nlet x = 1;\nlet y =\n```"));
    }

    #[test]
    fn only_an_answer_stopped_at_its_limit_is_cut() {
        let long = "A sentence of the answer that goes on. ".repeat(120) + "And the la";
        assert_eq!(as_ended(long.clone(), Some(StopReason::EndTurn)), long);
        assert_eq!(as_ended(long.clone(), None), long);
        let cut = as_ended(long.clone(), Some(StopReason::MaxTokens));
        assert!(cut.ends_with(&format!("goes on.\n{CUT_MARKER}")), "{cut}");
        assert!(
            cut.chars().count() > 4_000,
            "nothing but the unfinished end is lost"
        );
    }

    /// Chinese or Japanese has no spaces: a cut answer ends at its last
    /// sentence end (。！？) near its end, or at its last whole character —
    /// never back at a voice answer's mention or an early line break.
    #[test]
    fn a_cut_answer_without_spaces_keeps_all_but_its_unfinished_sentence() {
        let marked = |t: &str| format!("{t}\n{CUT_MARKER}");
        // A voice answer: the mention in front is followed by the only space.
        let cjk = "这是一个很长的回答没有空格".repeat(123) + "还没写完";
        let voiced = format!("<@42> {cjk}");
        assert_eq!(voiced.chars().count(), 6 + 1_603);
        assert_eq!(cut_unfinished(&voiced), marked(&voiced));
        // With sentence ends, the last one near the end is where it stops.
        let sentences = "今日は雨が降っています。".repeat(140) + "明日は晴れるでしょ";
        let voiced = format!("<@42> {sentences}");
        let expected = format!("<@42> {}", "今日は雨が降っています。".repeat(140));
        assert_eq!(cut_unfinished(&voiced), marked(&expected));
        // One early line break is no reason to drop everything after it.
        let japanese = format!(
            "はい。\n{}{}",
            "説明を続けますと長い話になります".repeat(112),
            "最後の文"
        );
        assert_eq!(japanese.chars().count(), 4 + 1_792 + 4);
        assert_eq!(cut_unfinished(&japanese), marked(&japanese));
        let japanese = format!("はい。\n{}", "説明を続けます！".repeat(200) + "最後の");
        assert_eq!(
            cut_unfinished(&japanese),
            marked(&format!("はい。\n{}", "説明を続けます！".repeat(200)))
        );
        assert!(cut_unfinished("お疲れさまでした。").starts_with("お疲れさまでした。\n"));
    }

    /// The latest paragraph, line or sentence end wins: an older paragraph
    /// break is taken only when it costs no more than a few dozen characters.
    #[test]
    fn a_cut_answer_keeps_its_finished_sentences_after_a_paragraph_break() {
        let marked = |t: &str| format!("{t}\n{CUT_MARKER}");
        let intro = "Some background that ran long. ".repeat(20) + "Intro.";
        let text = format!(
            "{intro}\n\nFirst point here. Second point here. Third point here. Fourth is unfin"
        );
        assert_eq!(
            cut_unfinished(&text),
            marked(&format!(
                "{intro}\n\nFirst point here. Second point here. Third point here."
            ))
        );
        // Only a short sentence after the paragraph: the paragraph reads better.
        let text = format!("{intro}\n\nIn short. And then the la");
        assert_eq!(cut_unfinished(&text), marked(&intro));
        // A voice answer's mention is kept in front of whatever is kept.
        let text =
            format!("<@42> {intro}\n\nFirst point here. Second point here. Third point here. Four");
        assert_eq!(
            cut_unfinished(&text),
            marked(&format!(
                "<@42> {intro}\n\nFirst point here. Second point here. Third point here."
            ))
        );
    }

    /// A platform that refuses every reply for the message it answers, as a
    /// server does for a message it does not know; what it was asked to send.
    struct RefusesReplies(std::sync::Mutex<Vec<Outgoing>>);

    #[async_trait::async_trait]
    impl Transport for RefusesReplies {
        fn me(&self) -> crate::attention::Author {
            crate::attention::Author {
                id: UserId(1),
                name: "ambient".into(),
                is_bot: true,
            }
        }

        async fn send(&self, _: ChannelId, m: &Outgoing) -> Result<MessageId, ChatError> {
            let mut sent = self.0.lock().unwrap();
            sent.push(m.clone());
            match m.reply_to {
                Some(_) => Err(ChatError::ReferenceUnknown("404 Unknown Message".into())),
                None => Ok(MessageId(1_000 + sent.len() as u64)),
            }
        }

        async fn react(&self, _: ChannelId, _: MessageId, _: &str) -> Result<(), ChatError> {
            Ok(())
        }

        fn typing(&self, _: ChannelId) -> crate::chat::Typing {
            crate::chat::Typing::none()
        }

        async fn history(&self, _: ChannelId, _: usize) -> Result<Vec<StoredMessage>, ChatError> {
            Ok(Vec::new())
        }
    }

    /// A reply refused for the message it answers is said at once as a plain
    /// message that begins with whom it answers — their mention, or their
    /// name under the no-ping boundary — split anew when that makes it
    /// longer than a message, and stored as said: that text, replying to nothing.
    #[tokio::test]
    async fn a_reply_the_platform_refuses_is_said_plain_to_whom_it_answers() {
        let clock = crate::clock::ManualClock::at_test_epoch();
        let store = Store::open_in_memory().unwrap();
        let settings = Arc::new(SettingsService::new(
            crate::settings::Settings::default(),
            store.overrides(),
            clock.clone(),
        ));
        let platform = Arc::new(RefusesReplies(std::sync::Mutex::default()));
        let speech = Speech::new(platform.clone(), (&store).into(), settings, clock.clone());
        let place = Place {
            guild: None,
            channel: ChannelId(7),
        };
        let alice = UserId(3);
        let asked = |id: u64| {
            StoredMessage::said(
                MessageId(id),
                None,
                place.channel,
                alice,
                "alice",
                "which one?",
                clock.now(),
            )
        };
        store.messages().insert_message(&asked(500)).unwrap();
        let ids = speech
            .say_pinging(
                place,
                "The blue one.",
                Some(MessageId(500)),
                "reply-500",
                &[alice],
            )
            .await
            .unwrap();
        let sent = std::mem::take(&mut *platform.0.lock().unwrap());
        assert_eq!(sent.len(), 2);
        assert_eq!(
            (sent[0].reply_to, sent[0].ping_replied),
            (Some(MessageId(500)), true)
        );
        assert_eq!(sent[1].content, "<@3> The blue one.");
        assert_eq!((sent[1].reply_to, sent[1].ping_replied), (None, false));
        assert_eq!(sent[1].pings, [alice], "the mention pings her");
        assert_eq!(sent[1].nonce, sent[0].nonce);
        let row = store.messages().message(ids[0]).unwrap().unwrap();
        assert_eq!(
            (row.content.as_str(), row.reply_to),
            ("<@3> The blue one.", None)
        );

        // Under the no-ping boundary: her name, and nobody pinged.
        store
            .people()
            .set_boundary(alice, Boundary::NoPing, true, clock.now())
            .unwrap();
        store.messages().insert_message(&asked(501)).unwrap();
        speech
            .say_pinging(
                place,
                "The red one.",
                Some(MessageId(501)),
                "reply-501",
                &[alice],
            )
            .await
            .unwrap();
        let sent = std::mem::take(&mut *platform.0.lock().unwrap());
        assert_eq!(sent[1].content, "@alice The red one.");
        assert!(sent[1].pings.is_empty());

        // An answer that filled its first message is split anew, nothing lost.
        store.messages().insert_message(&asked(502)).unwrap();
        let long = "This part of the answer runs on and on. ".repeat(50);
        let long = long.trim();
        assert_eq!(long.chars().count(), 1_999);
        let ids = speech
            .say(place, long, Some(MessageId(502)), "reply-502")
            .await
            .unwrap();
        let sent = std::mem::take(&mut *platform.0.lock().unwrap());
        assert_eq!(sent[0].content, long, "one message as a reply");
        let plain: Vec<&str> = sent[1..].iter().map(|o| o.content.as_str()).collect();
        assert_eq!(
            plain,
            split_message(&format!("@alice {long}"), MESSAGE_LIMIT)
        );
        assert_eq!((plain.len(), ids.len()), (2, 2));
    }

    #[test]
    fn mentions_cannot_ping_anyone_but_who_may_be_pinged() {
        let ada = UserId(11);
        let text = "hey @everyone and @here, <@&99> look: <@11> <@!22> <@33> email@everyone.org";
        let out = neutralise_mentions(text, &[ada], |u| (u == UserId(22)).then(|| "bob".into()));
        assert_eq!(
            out,
            "hey @\u{200D}everyone and @\u{200D}here, @role look: <@11> @bob @someone email@\u{200D}everyone.org"
        );
    }

    #[test]
    fn nonces_are_stable_and_short() {
        assert_eq!(nonce("msg-1", 0), nonce("msg-1", 0));
        assert_ne!(nonce("msg-1", 0), nonce("msg-1", 1));
        assert!(nonce("x", 0).len() <= 25);
    }
}
