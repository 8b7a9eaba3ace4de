//! Waiting items posted: each once, oldest first, within the hourly rates.
//!
//! A delivery round, in order:
//! 1. say each pause heard since the last round, once, where it posts;
//! 2. nothing more while `feeds.enabled` is off (items keep waiting);
//! 3. take the subscriptions with waiting items, and post one item of each
//!    in turn until none has room or items: one busy feed cannot spend a
//!    server's hour alone;
//! 4. an item is held (not dropped) while its subscription sent
//!    `feeds.maxPerFeedPerHour` in the last hour, or its server
//!    `feeds.maxPerGuildPerHour`;
//! 5. before the request goes out the item is marked `sending` (committed):
//!    a crash after it is sent again with the same nonce, which Discord
//!    de-duplicates; a forum post, which takes no nonce, is looked for by
//!    its name first;
//! 6. once posted it is marked `sent`, and discovery hears of it, so the
//!    initiative never shares the item again in that server.
//!
//! Where the platform refuses the post for good (no permission, the
//! channel gone, a forum that needs a tag the item cannot have), the
//! subscription pauses itself and says why; `/feeds resume` starts it
//! again. Any other failure (Discord down, a 429 that would not clear, a
//! request it refused) is tried again after a back-off of 1, 2, 4 …
//! minutes (at most an hour) — never in a tight loop — and pauses the
//! subscription only once the same item has failed for [`GIVE_UP_AFTER_HOURS`].

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::intake::Kept;
use super::subscription::Destination;
use super::{Feeds, PauseNotice};
use crate::chat::{Card, ChannelKind, ChatError, ForumTag, Outgoing};
use crate::ids::{ChannelId, MessageId};
use crate::speech::neutralise_mentions;
use crate::store::feeds::{SubscriptionRow, Waiting};
use crate::vocab::journal::{Entry, Kind};

/// How long one item may keep failing before its subscription pauses.
pub(crate) const GIVE_UP_AFTER_HOURS: i64 = 24;

/// The longest wait between two attempts at a failing item.
const LONGEST_BACK_OFF_MINUTES: i64 = 60;

/// A subscription whose next item failed: since when, how often, and when
/// it is tried again.
#[derive(Clone, Copy, Debug)]
pub(super) struct Attempts {
    first: DateTime<Utc>,
    count: u32,
    next: DateTime<Utc>,
}

/// Discord's limit on a thread's (and a forum post's) name.
const THREAD_NAME: usize = 100;

/// Most tags a forum post may carry.
const MAX_TAGS: usize = 5;

/// What a delivery round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub sent: usize,
    /// Subscriptions with items that wait for an hour with room.
    pub held: usize,
    pub failed: usize,
}

/// What trying one subscription's next item came to.
enum Step {
    Sent,
    Empty,
    Held,
    Failed,
}

/// Why an item was not posted.
enum Failure {
    /// The platform said no, or did not answer: try again next round.
    Chat(ChatError),
    /// Trying again cannot help: the subscription pauses, saying this.
    Pause(String),
}

impl From<ChatError> for Failure {
    fn from(e: ChatError) -> Self {
        match e {
            ChatError::Refused(why) => Failure::Pause(format!("Discord refused the post: {why}")),
            ChatError::Unavailable(why) => {
                Failure::Pause(format!("the channel is not there for the bot: {why}"))
            }
            other => Failure::Chat(other),
        }
    }
}

/// An item posted: where (its thread, for a thread or forum post), the
/// message, and the item itself.
struct Posted {
    place: ChannelId,
    message: MessageId,
    kept: Kept,
}

/// The channels' kinds, asked once per round.
type Kinds = HashMap<ChannelId, ChannelKind>;

impl Feeds {
    /// Posts what is waiting and may be posted now.
    pub async fn deliver_due(&self) -> Round {
        let _one = self.round.lock().await;
        let mut round = Round::default();
        self.say_pauses().await;
        if !self.s.settings.global().feeds.enabled {
            return round;
        }
        let mut turn = match self.s.store.feeds.feed_subscriptions_waiting() {
            Ok(rows) => rows,
            Err(e) => {
                self.read_failed("the subscriptions with waiting items", &e);
                return round;
            }
        };
        let mut kinds = Kinds::new();
        while !turn.is_empty() {
            let mut next = Vec::with_capacity(turn.len());
            for row in turn {
                match self.deliver_next(&row, &mut kinds).await {
                    Step::Sent => {
                        round.sent += 1;
                        next.push(row);
                    }
                    Step::Empty => {}
                    Step::Held => round.held += 1,
                    Step::Failed => round.failed += 1,
                }
            }
            turn = next;
        }
        round
    }

    async fn deliver_next(&self, row: &SubscriptionRow, kinds: &mut Kinds) -> Step {
        let backing_off = self
            .lock_attempts()
            .get(&row.id)
            .is_some_and(|a| self.s.clock.now() < a.next);
        if backing_off {
            return Step::Held;
        }
        match self.room(row) {
            Ok(true) => {}
            Ok(false) => return Step::Held,
            Err(e) => {
                self.read_failed("how many feed items were sent this hour", &e);
                return Step::Failed;
            }
        }
        let waiting = match self.s.store.feeds.waiting_feed_items(row.id, 1) {
            Ok(mut w) if !w.is_empty() => w.remove(0),
            Ok(_) => return Step::Empty,
            Err(e) => {
                self.read_failed("a subscription's waiting items", &e);
                return Step::Failed;
            }
        };
        match self.send_item(row, &waiting, kinds).await {
            Ok(Some(posted)) if self.delivered(row, &waiting, &posted) => Step::Sent,
            // Posted, but not marked sent: not again this round.
            Ok(Some(_)) => Step::Failed,
            Ok(None) => Step::Empty,
            Err(failure) => {
                self.failed(row, &waiting, failure).await;
                Step::Failed
            }
        }
    }

    /// Whether the subscription and its server may post another item this hour.
    fn room(&self, row: &SubscriptionRow) -> Result<bool, crate::store::StoreError> {
        let settings = self.s.settings.for_guild(Some(row.made.guild));
        let f = &settings.feeds;
        let hour_ago = self.s.clock.now() - chrono::Duration::hours(1);
        let store = &self.s.store;
        Ok(
            store.feeds.feed_sent_since(row.id, hour_ago)? < u64::from(f.max_per_feed_per_hour)
                && store
                    .feeds
                    .guild_feed_sent_since(row.made.guild, hour_ago)?
                    < u64::from(f.max_per_guild_per_hour),
        )
    }

    /// Posts one item where the subscription says, or `None` when the item
    /// is no longer waiting.
    async fn send_item(
        &self,
        row: &SubscriptionRow,
        waiting: &Waiting,
        kinds: &mut Kinds,
    ) -> Result<Option<Posted>, Failure> {
        let look = self
            .look(row)
            .map_err(|e| Failure::Pause(format!("its template or filters no longer hold: {e}")))?;
        let Ok(kept) = serde_json::from_str::<Kept>(&waiting.item) else {
            self.unreadable(row, waiting);
            return Ok(None);
        };
        let feed = self.feed_label(row.made.source_id);
        let settings = self.s.settings.for_guild(Some(row.made.guild));
        let summary_chars = settings.feeds.summary_chars as usize;
        let rendered = look
            .template
            .render(&kept.fields(&feed), settings.zone(), summary_chars);
        let mut outgoing = Outgoing::text(rendered.content, item_nonce(row.id, &waiting.key));
        outgoing.ping_roles = rendered.roles;
        if look.embed {
            outgoing.cards.push(card(&kept, &feed, summary_chars));
        }
        match self.s.store.feeds.mark_feed_sending(row.id, &waiting.key) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => {
                self.read_failed("marking a feed item as being sent", &e);
                return Err(Failure::Chat(ChatError::Transport(
                    "the store refused".into(),
                )));
            }
        }
        let channel = row.made.channel;
        let transport = &self.s.transport;
        let (place, message) = match Destination::parse(&row.made.destination) {
            Some(Destination::Forum) => {
                self.post_in_forum(row, waiting, &kept, &feed, &outgoing, kinds)
                    .await?
            }
            Some(Destination::ThreadPerItem) => {
                let message = transport.send(channel, &outgoing).await?;
                let name = thread_name(&kept, &feed);
                match transport.start_thread(channel, message, &name).await {
                    Ok(thread) => (thread, message),
                    Err(e) => {
                        // The item is posted; a missing thread is worth a line, not a second post.
                        self.s.journal.record(
                            Entry::new(Kind::Discovery, "feed item posted without its thread")
                                .place(Some(row.made.guild), Some(channel))
                                .message(message)
                                .reason(e.to_string()),
                        );
                        (channel, message)
                    }
                }
            }
            _ => (channel, transport.send(channel, &outgoing).await?),
        };
        Ok(Some(Posted {
            place,
            message,
            kept,
        }))
    }

    /// A post in the forum, tagged from the item's categories — or the post
    /// an earlier attempt made, when that attempt's outcome is unknown.
    async fn post_in_forum(
        &self,
        row: &SubscriptionRow,
        waiting: &Waiting,
        kept: &Kept,
        feed: &str,
        outgoing: &Outgoing,
        kinds: &mut Kinds,
    ) -> Result<(ChannelId, MessageId), Failure> {
        let forum = row.made.channel;
        let transport = &self.s.transport;
        let name = thread_name(kept, feed);
        if waiting.sending
            && let Some(post) = transport
                .forum_post_named(row.made.guild, forum, &name)
                .await?
        {
            return Ok((post.thread, post.message));
        }
        if let std::collections::hash_map::Entry::Vacant(e) = kinds.entry(forum) {
            e.insert(transport.channel_kind(forum).await?);
        }
        let ChannelKind::Forum { tags, tag_required } = &kinds[&forum] else {
            return Err(Failure::Pause(format!(
                "<#{forum}> is no longer a forum channel"
            )));
        };
        let applied = forum_tags(&kept.categories, tags);
        if *tag_required && applied.is_empty() {
            return Err(Failure::Pause(format!(
                "the forum needs a tag on every post, and none of the item's categories ({}) is one of its tags",
                kept.categories.join(", ")
            )));
        }
        let post = transport
            .post_in_forum(forum, &name, outgoing, &applied)
            .await?;
        Ok((post.thread, post.message))
    }

    /// Notes a posted item as sent; false when the store refused (the
    /// item stays `sending`: the next round sends it again under the same
    /// nonce, or finds the forum post, so nothing is posted twice).
    fn delivered(&self, row: &SubscriptionRow, waiting: &Waiting, posted: &Posted) -> bool {
        let &Posted {
            place,
            message,
            ref kept,
        } = posted;
        self.lock_attempts().remove(&row.id);
        let now = self.s.clock.now();
        if let Err(e) = self
            .s
            .store
            .feeds
            .mark_feed_sent(row.id, &waiting.key, message, now)
        {
            self.read_failed("marking a feed item as sent", &e);
            return false;
        }
        self.s
            .discovery
            .note_delivered(row.made.guild, place, message, &kept.link, now);
        self.s.journal.record(
            Entry::new(Kind::Discovery, "feed item delivered")
                .place(Some(row.made.guild), Some(place))
                .message(message)
                .reason(format!(
                    "subscription {}: {}",
                    row.id,
                    kept.title.chars().take(200).collect::<String>()
                )),
        );
        true
    }

    async fn failed(&self, row: &SubscriptionRow, waiting: &Waiting, failure: Failure) {
        let why = match failure {
            Failure::Pause(why) => why,
            Failure::Chat(e) => {
                let now = self.s.clock.now();
                let attempts = self.note_attempt(row.id, now);
                if now - attempts.first < chrono::Duration::hours(GIVE_UP_AFTER_HOURS) {
                    if attempts.count == 1 {
                        self.s.journal.record(
                            Entry::new(Kind::Discovery, "feed item not posted yet")
                                .place(Some(row.made.guild), Some(row.made.channel))
                                .reason(format!(
                                    "subscription {}, item {}: {e}; trying again",
                                    row.id, waiting.key
                                )),
                        );
                    }
                    return;
                }
                format!(
                    "its next item failed {} times over {GIVE_UP_AFTER_HOURS} hours (the last: {e})",
                    attempts.count
                )
            }
        };
        self.lock_attempts().remove(&row.id);
        self.pause_now(row, why).await;
    }

    /// One more failed attempt at a subscription's next item, and when the
    /// next one may be made: 1, 2, 4 … minutes later, at most an hour.
    fn note_attempt(&self, id: i64, now: DateTime<Utc>) -> Attempts {
        let mut all = self.lock_attempts();
        let a = all.entry(id).or_insert(Attempts {
            first: now,
            count: 0,
            next: now,
        });
        a.count += 1;
        let minutes = 1i64 << (a.count - 1).min(6);
        a.next = now + chrono::Duration::minutes(minutes.min(LONGEST_BACK_OFF_MINUTES));
        *a
    }

    /// Pauses a subscription and says so once where it posts.
    pub(super) async fn pause_now(&self, row: &SubscriptionRow, why: String) {
        match self
            .s
            .store
            .feeds
            .set_feed_paused(row.made.guild, row.id, Some(&why))
        {
            Ok(true) => {
                self.journal_pause(row, &why);
                self.say_pause(&PauseNotice {
                    row: row.clone(),
                    why,
                })
                .await;
            }
            Ok(false) => {}
            Err(e) => self.read_failed("pausing a feed subscription", &e),
        }
    }

    async fn say_pauses(&self) {
        let notices = std::mem::take(&mut *self.lock_notices());
        for notice in notices {
            self.say_pause(&notice).await;
        }
    }

    /// One message where the subscription posts (a forum takes none: there
    /// the journal and `/feeds list` say it).
    async fn say_pause(&self, notice: &PauseNotice) {
        let row = &notice.row;
        if Destination::parse(&row.made.destination) == Some(Destination::Forum) {
            return;
        }
        let feed = self.feed_label(row.made.source_id);
        let text = format!(
            "The feed {feed} is paused here: {}. Someone with Manage Server can start it again with `/feeds resume {}`.",
            notice.why, row.id
        );
        let text = neutralise_mentions(&text, &[], |_| None);
        let text: String = text.chars().take(crate::speech::MESSAGE_LIMIT).collect();
        let paused_at = self.s.clock.now().timestamp_millis();
        let outgoing = Outgoing::text(text, item_nonce(row.id, &format!("paused:{paused_at}")));
        if let Err(e) = self.s.transport.send(row.made.channel, &outgoing).await {
            self.s.journal.record(
                Entry::new(Kind::Discovery, "could not say a feed paused")
                    .place(Some(row.made.guild), Some(row.made.channel))
                    .reason(e.to_string()),
            );
        }
    }

    /// A waiting item whose kept fields cannot be read is given up, saying so.
    fn unreadable(&self, row: &SubscriptionRow, waiting: &Waiting) {
        // If lost, the item is tried (and given up) again next round.
        let _ = self.s.store.feeds.drop_feed_item(row.id, &waiting.key);
        self.s.journal.record(
            Entry::new(Kind::Error, "feed item dropped")
                .place(Some(row.made.guild), Some(row.made.channel))
                .reason(format!(
                    "subscription {}, item {}: its kept fields are unreadable",
                    row.id, waiting.key
                )),
        );
    }
}

/// The nonce of one item of one subscription: the same at every attempt.
pub(crate) fn item_nonce(subscription: i64, key: &str) -> String {
    crate::speech::nonce(&format!("feed:{subscription}:{key}"), 0)
}

/// A thread's (or forum post's) name for an item: its title, else the feed's.
pub(crate) fn thread_name(kept: &Kept, feed: &str) -> String {
    let title = kept.title.split_whitespace().collect::<Vec<_>>().join(" ");
    let name = if title.is_empty() {
        format!("New from {feed}")
    } else {
        title
    };
    name.chars().take(THREAD_NAME).collect()
}

/// The forum's tags the item's categories name (case and spaces aside),
/// moderated ones left out (the bot may not apply them), at most five.
pub(crate) fn forum_tags(categories: &[String], tags: &[ForumTag]) -> Vec<u64> {
    let norm = |s: &str| s.trim().to_lowercase();
    let mut applied = Vec::new();
    for c in categories {
        if let Some(t) = tags
            .iter()
            .find(|t| !t.moderated && norm(&t.name) == norm(c))
            && !applied.contains(&t.id)
        {
            applied.push(t.id);
        }
    }
    applied.truncate(MAX_TAGS);
    applied
}

/// The card under an item's message: each field within Discord's limits
/// (`summary_chars` is at most 1,500, so the whole stays under 6,000).
pub(crate) fn card(kept: &Kept, feed: &str, summary_chars: usize) -> Card {
    let cut = |s: &str, n: usize| -> String { s.trim().chars().take(n).collect() };
    let link = kept.link.trim();
    let url =
        (link.starts_with("https://") || link.starts_with("http://")).then(|| link.to_string());
    Card {
        title: match cut(&kept.title, Card::TITLE) {
            t if t.is_empty() => cut(&format!("New from {feed}"), Card::TITLE),
            t => t,
        },
        url,
        description: cut(&kept.summary, summary_chars.min(Card::DESCRIPTION)),
        author: Some(cut(&kept.author, Card::AUTHOR)).filter(|a| !a.is_empty()),
        timestamp: kept.published,
        footer: Some(cut(feed, 200)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(id: u64, name: &str, moderated: bool) -> ForumTag {
        ForumTag {
            id,
            name: name.into(),
            moderated,
        }
    }

    #[test]
    fn categories_become_the_forums_own_tags_and_never_a_moderated_one() {
        let tags = [
            tag(1, "Release", false),
            tag(2, "staff pick", true),
            tag(3, "blog", false),
        ];
        let cats: Vec<String> = ["blog", " release ", "Staff Pick", "unknown", "Blog"]
            .map(String::from)
            .to_vec();
        assert_eq!(forum_tags(&cats, &tags), [3, 1]);
    }

    #[test]
    fn a_post_carries_at_most_five_tags() {
        let tags: Vec<ForumTag> = (1..=8).map(|i| tag(i, &format!("t{i}"), false)).collect();
        let cats: Vec<String> = (1..=8).map(|i| format!("t{i}")).collect();
        assert_eq!(forum_tags(&cats, &tags), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_thread_is_named_by_the_title_within_a_hundred_characters() {
        let mut kept = Kept {
            title: format!("{}\n  end", "é".repeat(120)),
            ..Kept::default()
        };
        assert_eq!(thread_name(&kept, "blog").chars().count(), 100);
        kept.title = "  Line one\n line two ".into();
        assert_eq!(thread_name(&kept, "blog"), "Line one line two");
        kept.title = " ".into();
        assert_eq!(thread_name(&kept, "blog.example"), "New from blog.example");
    }

    #[test]
    fn a_card_keeps_within_discords_limits_and_links_only_the_web() {
        let kept = Kept {
            title: "t".repeat(300),
            link: "javascript:alert(1)".into(),
            author: "a".repeat(300),
            summary: "s".repeat(5000),
            ..Kept::default()
        };
        let c = card(&kept, &"f".repeat(3000), 1500);
        assert_eq!(c.title.chars().count(), Card::TITLE);
        assert_eq!(c.description.chars().count(), 1500);
        assert_eq!(
            c.author.as_deref().map(|a| a.chars().count()),
            Some(Card::AUTHOR)
        );
        assert_eq!(c.url, None);
        let total = c.title.len() + c.description.len() + 256 + c.footer.unwrap().len();
        assert!(total <= Card::TOTAL, "{total}");
    }
}
