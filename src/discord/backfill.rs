//! Backfill: what was said while the bot was away.
//!
//! A resumed gateway session replays what it missed; a new one (the bot was
//! down, or Discord refused the resume) does not. So when a server arrives on
//! a new session, each of its channels is read from a little before its
//! newest stored message on (a crash can lose a message older than one it
//! kept: [`REORDERED_WITHIN_MS`]), until `discord.backfillMessages` new ones
//! per channel are stored, no further back than `discord.backfillHours`, and
//! every missed message becomes a percept through the senses like any other:
//! stored once (the id dedupes against anything already seen), never
//! answered twice. A missed message that addressed the
//! bot is answered if it is at most `discord.answerMissedWithinMinutes` old;
//! older ones are kept as context, and — with `discord.awayNotice` — the
//! channel hears once that the bot was away.

use serenity::all::{ChannelId as SChannelId, GetMessages, Http, Message, MessageId as SMessageId};

use super::convert;
use crate::app::App;
use crate::attention::{Addressed, Percept, Place};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::settings::Settings;
use crate::store::MessageStore;
use crate::vocab::journal::{Entry, Kind};

/// What catching up on one channel found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct CaughtUp {
    pub stored: usize,
    pub answered_late: usize,
    pub too_old_to_answer: usize,
}

/// How far before the newest stored message a catch-up starts reading.
///
/// Serenity hands each gateway event to a task of its own, and tokio runs
/// the task spawned last first (its LIFO slot), so a burst of messages is
/// stored out of order: a crash can keep a message and lose an older one
/// that arrived with it. Reading again from a little before the newest
/// stored message finds those; what is already stored is known by its id,
/// and counts neither as caught up nor as a question. Live bursts span
/// milliseconds; the margin is minutes so that most of a resume's replay
/// (which spans the whole disconnection) is covered too.
const REORDERED_WITHIN_MS: u64 = 5 * 60 * 1000;

/// Discord's largest page of channel history.
const PAGE: u8 = 100;

/// The most pages read again inside the margin. A channel busier than that
/// in the minutes before the crash has the rest of its margin skipped, so
/// that what is new still gets its page.
const MARGIN_PAGES: usize = 2;

/// The id to read after: [`REORDERED_WITHIN_MS`] of the channel's history
/// before its newest stored message (a snowflake's high bits are its
/// creation time in milliseconds). At least 1: Discord has no id 0.
fn read_after(newest: u64) -> u64 {
    newest.saturating_sub(REORDERED_WITHIN_MS << 22).max(1)
}

/// Catches up on one channel of `guild` the bot has seen before.
pub(crate) async fn channel(
    app: &App,
    http: &Http,
    me: UserId,
    guild: GuildId,
    channel: ChannelId,
) {
    let settings = app.settings.for_guild(Some(guild));
    if settings.discord.backfill_messages == 0 {
        return;
    }
    let Ok(Some(newest)) = app.stores::<MessageStore>().last_message_id(channel) else {
        return; // never seen: nothing to have missed
    };
    let mut catching = Catching::new(app, &settings, me, guild, channel);
    // The margin's pages, then one page after the newest stored message, as
    // before the margin: everything there is new.
    let newest = newest.get();
    if let Some(last) = catching
        .pages(http, read_after(newest), MARGIN_PAGES, newest)
        .await
    {
        if last < newest {
            tracing::debug!(%channel, "margin read again only in part: a busy channel");
        }
        catching.pages(http, last.max(newest), 1, u64::MAX).await;
    }
    let Catching {
        found, unanswered, ..
    } = catching;
    if found.stored == 0 {
        return;
    }
    record(app, guild, channel, &found);
    if let (Some(id), true) = (unanswered, settings.discord.away_notice) {
        away_notice(app, guild, channel, id).await;
    }
}

/// One channel's catch-up under way: what it has found so far.
struct Catching<'a> {
    app: &'a App,
    settings: &'a Settings,
    me: UserId,
    channel: ChannelId,
    names: (Option<String>, Option<String>),
    oldest: chrono::DateTime<chrono::Utc>,
    answer_after: chrono::DateTime<chrono::Utc>,
    found: CaughtUp,
    unanswered: Option<MessageId>,
}

impl<'a> Catching<'a> {
    fn new(
        app: &'a App,
        settings: &'a Settings,
        me: UserId,
        guild: GuildId,
        channel: ChannelId,
    ) -> Self {
        let d = &settings.discord;
        let now = app.clock.now();
        let messages = app.stores::<MessageStore>();
        Self {
            app,
            settings,
            me,
            channel,
            names: (
                messages.channel_name(channel).ok().flatten(),
                messages.guild_name(guild).ok().flatten(),
            ),
            oldest: now - chrono::Duration::hours(i64::from(d.backfill_hours)),
            answer_after: now
                - chrono::Duration::minutes(i64::from(d.answer_missed_within_minutes)),
            found: CaughtUp::default(),
            unanswered: None,
        }
    }

    /// Reads up to `most` pages of the channel after `after`, stopping once
    /// the last id read reaches `until`; that last id, or None when the
    /// channel's end was reached, a read failed or enough are stored.
    async fn pages(&mut self, http: &Http, mut after: u64, most: usize, until: u64) -> Option<u64> {
        for _ in 0..most {
            if !self.wants_more() {
                return None;
            }
            let request = GetMessages::new().after(SMessageId::new(after)).limit(PAGE);
            let mut page = match SChannelId::new(self.channel.get())
                .messages(http, request)
                .await
            {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(channel = %self.channel, error = %e, "could not read what was missed");
                    return None;
                }
            };
            page.sort_by_key(|m| m.id);
            for m in &page {
                self.take(m);
            }
            match page.last() {
                Some(last) if page.len() == usize::from(PAGE) => after = last.id.get(),
                _ => return None,
            }
            if after >= until {
                break;
            }
        }
        Some(after)
    }

    /// Whether fewer than `discord.backfillMessages` new messages are stored.
    fn wants_more(&self) -> bool {
        self.found.stored < self.settings.discord.backfill_messages as usize
    }

    /// Hands one message of the history to the senses, unless enough new
    /// ones are stored or it is older than `discord.backfillHours`.
    fn take(&mut self, m: &Message) {
        if !self.wants_more() || convert::timestamp(m) < self.oldest {
            return;
        }
        let mut percept = convert::percept(
            m,
            self.me,
            &self.settings.bot.name,
            &self.app.stores(),
            self.names.0.clone(),
            self.names.1.clone(),
        );
        let question = percept.addressed.is_addressed() && !percept.message.author_is_bot;
        let late = percept.message.created_at >= self.answer_after;
        if question && !late {
            // Too late to answer: kept as what was said, not as a question to the bot.
            percept.addressed = Addressed::No;
        }
        let id = percept.message.id;
        match self.app.senses.perceive(Percept::Message(percept)) {
            Ok(crate::senses::Perceived::Stored { new: true, .. }) => {
                self.found.stored += 1;
                if question && late {
                    self.found.answered_late += 1;
                } else if question {
                    self.found.too_old_to_answer += 1;
                    self.unanswered = Some(id);
                }
            }
            Ok(_) => {} // not new: stored before the gap, or not to be stored
            Err(e) => {
                tracing::error!(channel = %self.channel, error = %e, "could not store a missed message");
            }
        }
    }
}

fn record(app: &App, guild: GuildId, channel: ChannelId, found: &CaughtUp) {
    app.journal.record(
        Entry::new(
            Kind::System,
            format!("caught up on {} message(s) said while I was away", found.stored),
        )
        .place(Some(guild), Some(channel))
        .reason(format!(
            "{} addressed me recently enough to answer; {} too long ago (discord.answerMissedWithinMinutes)",
            found.answered_late, found.too_old_to_answer
        )),
    );
}

/// One short reply to the latest question that came too late to answer.
async fn away_notice(app: &App, guild: GuildId, channel: ChannelId, to: MessageId) {
    let place = Place {
        guild: Some(guild),
        channel,
    };
    let text = "Sorry, I was away when you asked — ask me again if it still matters.";
    if let Err(e) = app
        .speech
        .say(place, text, Some(to), &format!("away-{to}"))
        .await
    {
        tracing::warn!(%channel, error = %e, "could not say that I was away");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catch_up_starts_five_minutes_of_snowflake_time_before_the_newest_stored() {
        let newest = 3_600_000_000 << 22 | 0b1_0000_0000_0001;
        let after = read_after(newest);
        assert!(after < newest);
        assert_eq!(after >> 22, 3_600_000_000 - 300_000);
        assert_eq!(after & 0x3f_ffff, 0b1_0000_0000_0001);
        assert_eq!(read_after(5), 1, "Discord has no id 0");
    }
}
