//! Streamed answers: a long answer shown while the model writes it.
//!
//! [`Speech::stream`] prepares a [`Streamed`] answer for one place. Its
//! [`DraftSink`] goes to the executive, which writes the model's text into it
//! as it arrives; [`Streamed::show`] runs beside the model call and puts the
//! draft in front of people the way Discord users expect:
//! - nothing is posted until the draft holds a sentence or two
//!   ([`worth_showing`]), so a short answer is one ordinary message;
//! - then the first part is posted (recorded first, with its nonce, as a reply),
//!   and edited in place as text arrives — at most once per
//!   `discord.streamEditIntervalMs` per message, counted from when the last
//!   change to that message was answered, with the text in between coalesced,
//!   and never more than [`MAX_EDITS`] times;
//! - past 2,000 characters the part is sealed (split as [`split_message`]
//!   splits) and the answer continues in a new message.
//!
//! The stream's own events drive it, never a polling pause: the draft is
//! looked at when text arrives — so the first message goes out with the first
//! text worth showing — and, while an edit waits for its interval, again only
//! when the interval has passed or the stream has ended (the text in between
//! is coalesced, not looked at piece by piece). A draft nothing more can
//! change before the end is not looked at again until the stream ends or a
//! new attempt begins: a runaway draft shown as far as its parts go, messages
//! whose edits are spent (all but the final one) with no further message to
//! post, or a further message that could not be posted. Messages whose edits
//! are spent while a further one may still come are looked at once per
//! interval, for that one. So the work per piece of text is bounded, however
//! long the stream goes on. The end of the stream ends
//! [`Streamed::show`] at once: an answer that came in one piece is said as
//! soon as it is complete.
//!
//! [`Streamed::finish`] then, at once (the interval paces the edits while
//! the answer is written, not the final text a person waits for), makes the
//! messages say exactly what [`Speech::say`] would have posted for the final
//! text (the same parts, cut marker and all), and updates each stored row, so history and the journal
//! see the final answer. [`Streamed::broke_off`] is for a stream that failed
//! after text was shown: the messages show what arrived, and the last one
//! says that the answer broke off.
//!
//! Speech's guarantees hold on every message and every edit: mentions are
//! neutralised and sent with `allowed_mentions`, the hourly cap counts each
//! message posted (an edit posts nothing), and each create carries the nonce
//! the unstreamed answer's part would have had. A 429 on an edit is waited
//! out by the transport (as `retry-after` says); an edit that still fails
//! pushes that message's next edit back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use super::{
    Addressing, MESSAGE_LIMIT, Speech, SpeechError, addressed, neutralise_mentions, nonce,
    split_message, split_within,
};
use crate::attention::Place;
use crate::chat::{ChatError, Edit, Outgoing};
use crate::executive::TextSink;
use crate::ids::{MessageId, UserId};

/// Edits per message at most, the final one included.
pub(crate) const MAX_EDITS: u32 = 20;

/// Attempts at the edit that makes a message final.
const FINAL_TRIES: u32 = 3;

/// Characters of a draft looked at beyond what its parts can show (an echoed
/// name the shape removes, a voice line's mention it adds): the rest of a
/// runaway answer is never copied, split or scanned while it streams.
const HEAD_MARGIN: usize = 1_000;

/// A draft is shown once it holds this much and two sentences…
const SHOW_WITH_SENTENCES_CHARS: usize = 100;
/// …or this much in any case.
const SHOW_ANYWAY_CHARS: usize = 280;

/// Whether a draft (or a continuation part) has enough to be worth posting:
/// a sentence or two, not a word that may be all there is.
pub(crate) fn worth_showing(text: &str) -> bool {
    let chars = text.chars().count();
    if chars >= SHOW_ANYWAY_CHARS {
        return true;
    }
    let mut ends = 0;
    let mut prev: Option<char> = None;
    for c in text.chars() {
        if c == '\n' || (c.is_whitespace() && matches!(prev, Some('.' | '!' | '?' | '…'))) {
            ends += 1;
        }
        prev = Some(c);
    }
    chars >= SHOW_WITH_SENTENCES_CHARS && ends >= 2
}

#[derive(Default)]
struct DraftState {
    text: String,
    /// Bumped by each [`TextSink::begin`]: an attempt's text replaces the last one's.
    attempt: u64,
    /// The attempt whose text has been put in front of people.
    shown: Option<u64>,
    closed: bool,
}

/// The executive's end of a streamed answer.
#[derive(Default)]
pub(crate) struct DraftSink {
    state: Mutex<DraftState>,
    /// Text arrived, an attempt began, or the stream ended.
    changed: Notify,
    /// The stream ended (the model call is over).
    ended: Notify,
}

impl DraftSink {
    fn lock(&self) -> std::sync::MutexGuard<'_, DraftState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The model call is over: [`Streamed::show`] returns.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_one();
        self.ended.notify_one();
    }

    fn mark_shown(&self, attempt: u64) {
        self.lock().shown = Some(attempt);
    }
}

impl TextSink for DraftSink {
    fn begin(&self) {
        let mut state = self.lock();
        state.attempt += 1;
        state.text.clear();
        drop(state);
        self.changed.notify_one();
    }

    fn text(&self, delta: &str) {
        self.lock().text.push_str(delta);
        self.changed.notify_one();
    }

    fn shown(&self) -> bool {
        let state = self.lock();
        state.shown == Some(state.attempt)
    }
}

/// What a look at the draft leaves to do ([`Streamed::present`]).
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// More text may change what is shown: look again when it arrives.
    Text,
    /// Something may be due after this wait (an edit waiting for its
    /// interval); text arriving before then is coalesced.
    After(Duration),
    /// Nothing shown can change before the stream ends: more text of this
    /// attempt is not looked at.
    End,
}

/// One message of the answer as people see it now.
struct Shown {
    id: MessageId,
    content: String,
    /// When its last change was answered; the next edit waits the interval from here.
    at: DateTime<Utc>,
    edits: u32,
}

/// A streamed answer in one place (see the module's doc).
pub(crate) struct Streamed {
    speech: Arc<Speech>,
    place: Place,
    reply_to: Option<MessageId>,
    cause: String,
    also: Vec<UserId>,
    pings: Vec<UserId>,
    /// Whether the answered author may be pinged by the reply (their boundary says).
    ping_replied: bool,
    /// The answered author as a plain message addresses them (see `Addressing`).
    addressee: Option<String>,
    /// The first message was refused as a reply (the message answered is
    /// unknown to the platform) and posted plain: it, every later look at the
    /// draft and the final text begin with the addressee.
    plain: bool,
    /// Parts this answer may take (the hourly room and `maxPartsPerAnswer`).
    fits: usize,
    interval: Duration,
    /// The caller's finishing touches, applied to the draft as to the final text.
    shape: Box<dyn Fn(&str) -> String + Send + Sync>,
    draft: Arc<DraftSink>,
    shown: Vec<Shown>,
    /// A create failed while streaming: no more are tried until the end.
    stalled: bool,
}

impl Speech {
    /// A streamed answer for `place`, as [`Speech::say_pinging`] would say it;
    /// `None` when it cannot be streamed here (`discord.streamReplies` off,
    /// a transport that cannot edit, or nothing may be said now — the plain
    /// path then reports why). `shape` turns the raw draft into the text the
    /// caller would say (it is applied to every draft, not to the final text).
    pub(crate) fn stream(
        self: &Arc<Self>,
        place: Place,
        reply_to: Option<MessageId>,
        cause: &str,
        also: &[UserId],
        shape: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> Option<Streamed> {
        let settings = self.settings.for_guild(place.guild);
        if !settings.discord.stream_replies || !self.transport.can_edit() {
            return None;
        }
        let room = self.deliverable(place).ok()?;
        let max_parts = settings.permissions.replies.max_parts_per_answer;
        let Addressing {
            pings,
            ping_replied,
            addressee,
        } = self.addressing(reply_to, also);
        Some(Streamed {
            speech: self.clone(),
            place,
            reply_to,
            cause: cause.to_string(),
            also: also.to_vec(),
            pings,
            ping_replied,
            addressee,
            plain: false,
            fits: room.min(u64::from(max_parts)).max(1) as usize,
            interval: Duration::from_millis(u64::from(settings.discord.stream_edit_interval_ms)),
            shape: Box::new(shape),
            draft: Arc::new(DraftSink::default()),
            shown: Vec::new(),
            stalled: false,
        })
    }
}

impl Streamed {
    /// The executive's end: give it to the turn, and close it when the turn is over.
    pub(crate) fn sink(&self) -> Arc<DraftSink> {
        self.draft.clone()
    }

    /// Whether anything of the answer has been posted.
    pub(crate) fn posted(&self) -> bool {
        !self.shown.is_empty()
    }

    /// Shows the draft as it grows, until the sink is closed; returns as soon
    /// as it is (see the module's doc for when the draft is looked at).
    pub(crate) async fn show(&mut self) {
        let draft = self.draft.clone();
        // An attempt nothing more can change (see `Next::End`, and a draft that
        // outgrew what its parts can show, shown as far as it goes): until it ends
        // or another attempt begins, more text is not looked at.
        let mut settled: Option<u64> = None;
        loop {
            let (head, attempt) = {
                let state = draft.lock();
                if state.closed {
                    return;
                }
                let head = (settled != Some(state.attempt)).then(|| self.head(&state.text));
                (head, state.attempt)
            };
            let Some((text, cut)) = head else {
                draft.changed.notified().await;
                continue;
            };
            match self.present(&text, attempt).await {
                // An edit waits for its interval: until then new text would only be
                // looked at and left, so the wait ends with the interval or the stream.
                Next::After(wait) => {
                    tokio::select! {
                        _ = draft.ended.notified() => {}
                        _ = self.speech.clock.sleep(wait) => {}
                    }
                }
                // Everything due is shown: the next text (or the end) is the next thing to do.
                // A change made while this pass ran left a permit, so it is not missed.
                next => {
                    if cut || next == Next::End {
                        settled = Some(attempt);
                    }
                    draft.changed.notified().await;
                }
            }
        }
    }

    /// The start of `text` that the parts this answer may take can show, and
    /// whether that is less than all of it.
    fn head(&self, text: &str) -> (String, bool) {
        let most = self.fits * MESSAGE_LIMIT + HEAD_MARGIN;
        match text.char_indices().nth(most) {
            Some((end, _)) => (text[..end].to_string(), true),
            None => (text.to_string(), false),
        }
    }

    /// The draft as messages: shaped, made safe, split, within the parts it may take.
    fn parts_of(&self, raw: &str) -> Vec<String> {
        let text = self.safe((self.shape)(raw).as_str());
        let mut parts = split_message(&text, MESSAGE_LIMIT);
        parts.truncate(self.fits);
        // A code block still being written is closed for now, where it fits.
        if let Some(last) = parts.last_mut()
            && last.matches("```").count() % 2 == 1
            && last.chars().count() + 4 <= MESSAGE_LIMIT
        {
            last.push_str("\n```");
        }
        parts
    }

    /// `text` as it may be said here: mentions neutralised, and addressed
    /// when the answer is said as a plain message.
    fn safe(&self, text: &str) -> String {
        let store = &self.speech.store;
        let safe = neutralise_mentions(text, &self.pings, |u| {
            store.messages.author_name(u).ok().flatten()
        });
        let safe = safe.trim();
        match self.plain && !safe.is_empty() {
            true => addressed(safe, self.addressee.as_deref()),
            false => safe.to_string(),
        }
    }

    /// Posts and edits what is due for this draft; what is left to do.
    async fn present(&mut self, raw: &str, attempt: u64) -> Next {
        let parts = self.parts_of(raw);
        if self.shown.is_empty() && !parts.first().is_some_and(|p| worth_showing(p)) {
            return Next::Text;
        }
        let mut wait: Option<Duration> = None;
        // A further message is due but may not be posted before the end.
        let mut blocked = false;
        for (i, part) in parts.iter().enumerate() {
            if let Some(shown) = self.shown.get(i) {
                if shown.content == *part || shown.edits + 1 >= MAX_EDITS {
                    // The last edit is kept for the final text.
                    continue;
                }
                let due = shown.at + self.interval;
                let now = self.speech.clock.now();
                if now < due {
                    let left = (due - now).to_std().unwrap_or_default();
                    wait = Some(wait.map_or(left, |w| w.min(left)));
                    continue;
                }
                self.draft.mark_shown(attempt);
                if let Err(e) = self.edit(i, part).await {
                    tracing::info!(channel = %self.place.channel, error = %e, "a streamed edit failed; the next one waits longer");
                    self.shown[i].at = self.speech.clock.now() + self.interval;
                }
            } else {
                let growing = i + 1 == parts.len();
                if self.stalled {
                    blocked = true;
                    break;
                }
                if growing && !worth_showing(part) {
                    break;
                }
                self.draft.mark_shown(attempt);
                if let Err(e) = self.create(i, part).await {
                    tracing::warn!(channel = %self.place.channel, error = %e, "a streamed part could not be posted; trying again at the end");
                    self.stalled = true;
                    blocked = true;
                    break;
                }
            }
        }
        let edits_spent =
            !self.shown.is_empty() && self.shown.iter().all(|s| s.edits + 1 >= MAX_EDITS);
        match wait {
            Some(wait) => Next::After(wait),
            // The messages before a further one are sealed (more text is split after
            // them), and that one waits for the end: nothing can change until then.
            None if blocked => Next::End,
            None if edits_spent && self.shown.len() >= self.fits => Next::End,
            // Only a further message can change what is shown: looked for once an interval.
            None if edits_spent => Next::After(self.interval),
            None => Next::Text,
        }
    }

    /// Posts part `i`, if the place may still take another message: the
    /// room counted at the start may have been used by others meanwhile.
    async fn create(&mut self, i: usize, content: &str) -> Result<(), SpeechError> {
        self.speech.deliverable(self.place)?;
        let mut outgoing = Outgoing {
            content: content.to_string(),
            // Only the first part is a reply; the rest follow it.
            reply_to: if i == 0 { self.reply_to } else { None },
            nonce: nonce(&self.cause, i),
            files: Vec::new(),
            pings: self.pings.clone(),
            ping_replied: i == 0 && self.ping_replied,
            ping_roles: Vec::new(),
            cards: Vec::new(),
        };
        let addressee = self.addressee.as_deref();
        let id = self
            .speech
            .post_reply(self.place, &mut outgoing, || {
                // What does not fit behind the addressee is shown by the next look.
                let text = addressed(content, addressee);
                split_message(&text, MESSAGE_LIMIT)
                    .into_iter()
                    .next()
                    .unwrap_or(text)
            })
            .await?;
        if i == 0 && self.reply_to.is_some() && outgoing.reply_to.is_none() {
            self.plain = true;
            self.reply_to = None;
            self.ping_replied = false;
        }
        self.shown.push(Shown {
            id,
            content: outgoing.content,
            at: self.speech.clock.now(),
            edits: 0,
        });
        Ok(())
    }

    /// Edits message `i` now, and its stored row after it.
    async fn edit(&mut self, i: usize, content: &str) -> Result<(), SpeechError> {
        let id = self.shown[i].id;
        let edit = Edit {
            content: content.to_string(),
            pings: self.pings.clone(),
            ping_replied: i == 0 && self.ping_replied,
        };
        self.shown[i].edits += 1;
        self.speech
            .transport
            .edit(self.place.channel, id, &edit)
            .await?;
        let now = self.speech.clock.now();
        let shown = &mut self.shown[i];
        shown.content = edit.content;
        shown.at = now;
        self.speech.store.messages.edit_message(id, content, now)?;
        Ok(())
    }

    /// Edits message `i` to its final text at once, trying again after a
    /// failure that may pass (a 429 that would not clear, a lost answer),
    /// each retry an interval later. The interval paces edits while the
    /// answer is still being written; the final text is what the person is
    /// waiting for, and one more edit of each message stays within
    /// Discord's rate limits (a 429 is waited out by the transport anyway).
    async fn settle(&mut self, i: usize, content: &str) -> Result<(), SpeechError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.edit(i, content).await {
                Ok(()) => return Ok(()),
                // The message is gone, or the bot may no longer edit it.
                Err(e @ SpeechError::Chat(ChatError::Unavailable(_) | ChatError::Refused(_))) => {
                    return Err(e);
                }
                Err(e) if tries >= FINAL_TRIES => return Err(e),
                Err(e) => {
                    tracing::info!(channel = %self.place.channel, error = %e, "the final edit failed; trying again");
                    self.speech.clock.sleep(self.interval).await;
                }
            }
        }
    }

    /// Makes the answer say `text`, exactly as [`Speech::say_pinging`] would
    /// have (which says it, when nothing was posted yet). The ids of its messages.
    pub(crate) async fn finish(mut self, text: &str) -> Result<Vec<MessageId>, SpeechError> {
        self.draft.close();
        if self.shown.is_empty() {
            let (place, reply_to) = (self.place, self.reply_to);
            return self
                .speech
                .speak(place, text, reply_to, &self.cause, Vec::new(), &self.also)
                .await;
        }
        let safe = self.safe(text);
        if safe.is_empty() {
            return Err(SpeechError::Empty);
        }
        // The room may have shrunk while the answer was written (others spoke here too).
        let room = self
            .speech
            .deliverable(self.place)
            .map_or(0, |n| n as usize);
        let fits = self.fits.min(self.shown.len() + room).max(self.shown.len());
        let parts = split_within(&safe, MESSAGE_LIMIT, fits);
        self.settle_all(&parts).await?;
        self.speech.lock_refused().remove(&self.place.channel);
        Ok(self.shown.iter().map(|s| s.id).collect())
    }

    /// Makes the messages say `parts`: each one that differs edited (when its
    /// interval allows), missing ones posted, surplus ones marked as a draft.
    async fn settle_all(&mut self, parts: &[String]) -> Result<(), SpeechError> {
        for (i, part) in parts.iter().enumerate() {
            match self.shown.get(i) {
                Some(shown) if shown.content == *part => {}
                Some(_) => self.settle(i, part).await?,
                None => self.create(i, part).await?,
            }
        }
        // Messages beyond the answer held an earlier draft (a step before a tool call).
        for i in parts.len()..self.shown.len() {
            self.settle(i, "(an earlier draft of the answer above)")
                .await?;
        }
        Ok(())
    }

    /// The stream failed after text was shown: the messages show all of the
    /// answer that arrived, and the last one says that it broke off (`why`,
    /// in a few words). The ids of the answer's messages; none when nothing
    /// was posted.
    pub(crate) async fn broke_off(mut self, why: &str) -> Result<Vec<MessageId>, SpeechError> {
        self.draft.close();
        if self.shown.is_empty() {
            return Ok(Vec::new());
        }
        // The draft is what was shown, unless a later attempt or step began and showed nothing yet.
        let mut parts = match self.draft.shown() {
            true => {
                let (head, _) = self.head(&self.draft.lock().text);
                self.parts_of(&head)
            }
            false => Vec::new(),
        };
        if parts.is_empty() {
            parts = self.shown.iter().map(|s| s.content.clone()).collect();
        }
        let note = format!("\n… (the answer broke off here: {why})");
        if let Some(last) = parts.last_mut() {
            *last = with_note(last, &note);
        }
        self.settle_all(&parts).await?;
        Ok(self.shown.iter().map(|s| s.id).collect())
    }
}

/// `text` with `note` at its end, within Discord's limit: the text is cut
/// (never inside a character) and an open code block closed first.
fn with_note(text: &str, note: &str) -> String {
    let text = text
        .strip_suffix("\n```")
        .filter(|t| t.matches("```").count() % 2 == 1)
        .unwrap_or(text);
    let room = MESSAGE_LIMIT - note.chars().count() - 4;
    let mut head: String = text.chars().take(room).collect();
    if head.matches("```").count() % 2 == 1 {
        head.push_str("\n```");
    }
    head.push_str(note);
    head
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::Author;
    use crate::chat::{Transport, Typing};
    use crate::clock::ManualClock;
    use crate::ids::ChannelId;
    use crate::settings::{Settings, SettingsService};
    use crate::store::Store;
    use crate::store::messages::StoredMessage;
    use async_trait::async_trait;

    /// Keeps what was sent and edited, each with how many sleeps the clock had
    /// been asked for by then.
    struct Recorder {
        clock: Arc<ManualClock>,
        sent: Mutex<Vec<(String, usize)>>,
        edits: Mutex<Vec<(String, usize)>>,
        /// Sends after this many fail.
        sends_allowed: usize,
    }

    #[async_trait]
    impl Transport for Recorder {
        fn me(&self) -> Author {
            Author {
                id: UserId(1),
                name: "ambient".into(),
                is_bot: true,
            }
        }

        async fn send(&self, _: ChannelId, m: &Outgoing) -> Result<MessageId, ChatError> {
            let mut sent = self.sent.lock().unwrap();
            if sent.len() >= self.sends_allowed {
                return Err(ChatError::Transport("connection reset".into()));
            }
            sent.push((m.content.clone(), self.clock.slept().len()));
            Ok(MessageId(1_000 + sent.len() as u64))
        }

        async fn react(&self, _: ChannelId, _: MessageId, _: &str) -> Result<(), ChatError> {
            Ok(())
        }

        fn can_edit(&self) -> bool {
            true
        }

        async fn edit(&self, _: ChannelId, _: MessageId, e: &Edit) -> Result<(), ChatError> {
            let slept = self.clock.slept().len();
            self.edits.lock().unwrap().push((e.content.clone(), slept));
            Ok(())
        }

        fn typing(&self, _: ChannelId) -> Typing {
            Typing::none()
        }

        async fn history(&self, _: ChannelId, _: usize) -> Result<Vec<StoredMessage>, ChatError> {
            Ok(Vec::new())
        }
    }

    const PLACE: Place = Place {
        guild: None,
        channel: ChannelId(7),
    };

    fn streamed() -> (Streamed, Arc<Recorder>, Arc<ManualClock>) {
        let (streamed, recorder, clock, _) = streamed_with(Settings::default(), usize::MAX);
        (streamed, recorder, clock)
    }

    /// A streamed answer whose transport posts `sends_allowed` messages and
    /// refuses the rest; and how many times its draft was looked at (made
    /// into parts: the work each look costs).
    fn streamed_with(
        settings: Settings,
        sends_allowed: usize,
    ) -> (
        Streamed,
        Arc<Recorder>,
        Arc<ManualClock>,
        Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let clock = ManualClock::at_test_epoch();
        let store = Store::open_in_memory().unwrap();
        let settings = Arc::new(SettingsService::new(
            settings,
            store.overrides(),
            clock.clone(),
        ));
        let recorder = Arc::new(Recorder {
            clock: clock.clone(),
            sent: Mutex::default(),
            edits: Mutex::default(),
            sends_allowed,
        });
        let speech = Arc::new(Speech::new(
            recorder.clone(),
            (&store).into(),
            settings,
            clock.clone(),
        ));
        let looks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = looks.clone();
        let streamed = speech
            .stream(PLACE, None, "reply-1", &[], move |t| {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                t.to_string()
            })
            .expect("a DM on a transport that edits streams");
        (streamed, recorder, clock, looks)
    }

    /// Lets the other futures of a `join!` run until `done` holds (at most a
    /// few thousand turns: a bounded wait for an outcome, not a timing).
    async fn until(done: impl Fn() -> bool) -> bool {
        for _ in 0..5_000 {
            if done() {
                return true;
            }
            tokio::task::yield_now().await;
        }
        done()
    }

    #[tokio::test]
    async fn an_answer_that_came_in_one_piece_is_said_without_a_pause() {
        let (mut streamed, recorder, clock) = streamed();
        let sink = streamed.sink();
        let answer = "Tuesday works for me.";
        let model = async {
            // The show is already waiting when the stream begins, as beside a real call.
            tokio::task::yield_now().await;
            sink.begin();
            sink.text(answer);
            tokio::task::yield_now().await;
            sink.close();
        };
        tokio::join!(streamed.show(), model);
        streamed.finish(answer).await.unwrap();
        assert_eq!(*recorder.sent.lock().unwrap(), [(answer.to_string(), 0)]);
        assert!(
            clock.slept().is_empty(),
            "waited before saying it: {:?}",
            clock.slept()
        );
    }

    #[tokio::test]
    async fn the_first_message_goes_out_with_the_first_text_worth_showing_and_the_final_text_at_once()
     {
        let (mut streamed, recorder, clock) = streamed();
        let sink = streamed.sink();
        let start = "The hall is free on Tuesday from six, and the key is with Sam. ".repeat(3);
        let model = async {
            tokio::task::yield_now().await;
            sink.begin();
            sink.text(&start);
            // Nothing more arrives and nothing is slept on until the start is posted.
            let posted = until(|| !recorder.sent.lock().unwrap().is_empty()).await;
            sink.text(" More to come.");
            sink.close();
            posted
        };
        let ((), posted) = tokio::join!(streamed.show(), model);
        assert!(posted, "the start was not posted before the stream went on");
        assert_eq!(
            *recorder.sent.lock().unwrap(),
            [(start.trim().to_string(), 0)],
            "posted at once, before any pause"
        );
        assert!(clock.slept().is_empty(), "{:?}", clock.slept());
        let whole = format!("{}{}", start, " More to come.");
        streamed.finish(&whole).await.unwrap();
        // The edit interval paces a draft while it is written; the final text,
        // which the person is waiting for, goes out as soon as the stream ends,
        // however recent the message.
        assert_eq!(
            *recorder.edits.lock().unwrap(),
            [(whole.trim().to_string(), 0)],
            "the final text, with no pause before it"
        );
        assert!(clock.slept().is_empty(), "{:?}", clock.slept());
    }

    /// Feeds `deltas` pieces of text one by one, letting the show run after
    /// each; how many times the draft was looked at meanwhile.
    async fn looks_while_fed(
        sink: &DraftSink,
        looks: &std::sync::atomic::AtomicUsize,
        deltas: usize,
    ) -> usize {
        let before = looks.load(std::sync::atomic::Ordering::Relaxed);
        for _ in 0..deltas {
            sink.text(" more");
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
        }
        looks.load(std::sync::atomic::Ordering::Relaxed) - before
    }

    /// Once its one message has spent its edits (all but the final one), more
    /// text changes nothing shown before the end: it is not looked at again,
    /// where every piece of text was made into parts for the rest of the stream.
    #[tokio::test]
    async fn a_draft_whose_edits_are_spent_is_not_looked_at_again() {
        let mut settings = Settings::default();
        settings.permissions.replies.max_parts_per_answer = 1;
        let (mut streamed, recorder, _, looks) = streamed_with(settings, usize::MAX);
        let sink = streamed.sink();
        let edits = || recorder.edits.lock().unwrap().len();
        let model = async {
            tokio::task::yield_now().await;
            sink.begin();
            sink.text(&"The hall is free on Tuesday from six, and the key is with Sam. ".repeat(3));
            assert!(until(|| !recorder.sent.lock().unwrap().is_empty()).await);
            while edits() + 1 < MAX_EDITS as usize {
                let before = edits();
                sink.text(" More.");
                assert!(until(|| edits() > before).await, "an edit is made when due");
            }
            let looked = looks_while_fed(&sink, &looks, 200).await;
            sink.close();
            looked
        };
        let ((), looked) = tokio::join!(streamed.show(), model);
        assert_eq!(edits(), MAX_EDITS as usize - 1);
        assert!(
            looked <= 1,
            "looked at {looked} times for 200 pieces of text"
        );
        let whole = sink.lock().text.clone();
        streamed.finish(&whole).await.unwrap();
        assert_eq!(
            recorder.edits.lock().unwrap().last().unwrap().0,
            whole.trim()
        );
    }

    /// A further message that could not be posted waits for the end, and the
    /// ones before it are sealed: more text is not looked at until then.
    #[tokio::test]
    async fn a_draft_whose_next_message_could_not_be_posted_is_not_looked_at_again() {
        let (mut streamed, recorder, _, looks) = streamed_with(Settings::default(), 1);
        let sink = streamed.sink();
        let model = async {
            tokio::task::yield_now().await;
            sink.begin();
            sink.text(&"The hall is free on Tuesday from six, and the key is with Sam. ".repeat(3));
            assert!(until(|| !recorder.sent.lock().unwrap().is_empty()).await);
            // Enough for a second message, which the transport refuses.
            sink.text(&" And the buses stop running at ten, so plan for that.".repeat(60));
            assert!(until(|| !recorder.edits.lock().unwrap().is_empty()).await);
            let looked = looks_while_fed(&sink, &looks, 200).await;
            sink.close();
            looked
        };
        let ((), looked) = tokio::join!(streamed.show(), model);
        assert_eq!(recorder.sent.lock().unwrap().len(), 1);
        assert!(
            looked <= 1,
            "looked at {looked} times for 200 pieces of text"
        );
    }

    #[test]
    fn a_sentence_or_two_is_worth_showing_a_few_words_are_not() {
        assert!(!worth_showing("Sure."));
        assert!(!worth_showing("Sure. Here it is"));
        let two = "That is a longer question than it looks. There are three parts to it, so let me go one by one";
        assert!(!worth_showing(two), "two sentence ends are needed");
        assert!(worth_showing(&format!("{two}. First, ")));
        assert!(
            worth_showing(&"word ".repeat(60)),
            "a long draft without full stops"
        );
    }

    #[test]
    fn a_note_fits_the_limit_and_closes_an_open_code_block() {
        let note = "\n… (the answer broke off here: the model stopped)";
        let long = "x".repeat(MESSAGE_LIMIT);
        let marked = with_note(&long, note);
        assert!(marked.chars().count() <= MESSAGE_LIMIT);
        assert!(marked.ends_with(note));
        let code = with_note("Here:\n```rust\nlet x = 1;\n```", note);
        assert_eq!(
            code,
            format!("Here:\n```rust\nlet x = 1;\n```{note}"),
            "the display's closing fence is replaced by the real one"
        );
        assert_eq!(with_note("fine", note), format!("fine{note}"));
    }

    #[test]
    fn the_sink_counts_text_as_shown_per_attempt() {
        let sink = DraftSink::default();
        sink.begin();
        sink.text("Hello");
        assert!(!sink.shown());
        let attempt = sink.lock().attempt;
        sink.mark_shown(attempt);
        assert!(sink.shown());
        sink.begin();
        assert!(!sink.shown(), "a new attempt has shown nothing yet");
        assert_eq!(sink.lock().text, "");
    }
}
