//! Backfill: what was said while the bot was away.
//!
//! A resumed gateway session replays what it missed; a new one (the bot was
//! down, or Discord refused the resume) does not. So when a server arrives on
//! a new session, each of its channels is read from its newest stored message
//! on, at most `discord.backfillMessages` per channel and no further back than
//! `discord.backfillHours`, and every missed message becomes a percept through
//! the senses like any other: stored once (the id dedupes against anything
//! already seen), never answered twice. A missed message that addressed the
//! bot is answered if it is at most `discord.answerMissedWithinMinutes` old;
//! older ones are kept as context, and — with `discord.awayNotice` — the
//! channel hears once that the bot was away.

use serenity::all::{ChannelId as SChannelId, GetMessages, Http, MessageId as SMessageId};

use super::convert;
use crate::app::App;
use crate::attention::{Addressed, Percept, Place};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::store::MessageStore;
use crate::vocab::journal::{Entry, Kind};

/// What catching up on one channel found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct CaughtUp {
    pub stored: usize,
    pub answered_late: usize,
    pub too_old_to_answer: usize,
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
    let d = &settings.discord;
    if d.backfill_messages == 0 {
        return;
    }
    let Ok(Some(last)) = app.stores::<MessageStore>().last_message_id(channel) else {
        return; // never seen: nothing to have missed
    };
    let request = GetMessages::new()
        .after(SMessageId::new(last.get().max(1)))
        .limit(d.backfill_messages.min(100) as u8);
    let mut missed = match SChannelId::new(channel.get()).messages(http, request).await {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(%channel, error = %e, "could not read what was missed");
            return;
        }
    };
    missed.sort_by_key(|m| m.id);
    let now = app.clock.now();
    let oldest = now - chrono::Duration::hours(i64::from(d.backfill_hours));
    let answer_after = now - chrono::Duration::minutes(i64::from(d.answer_missed_within_minutes));
    let names = (
        app.stores::<MessageStore>()
            .channel_name(channel)
            .ok()
            .flatten(),
        app.stores::<MessageStore>()
            .guild_name(guild)
            .ok()
            .flatten(),
    );
    let mut found = CaughtUp::default();
    let mut unanswered: Option<MessageId> = None;
    for m in missed.iter().filter(|m| convert::timestamp(m) >= oldest) {
        let mut percept = convert::percept(
            m,
            me,
            &settings.bot.name,
            &app.stores(),
            names.0.clone(),
            names.1.clone(),
        );
        if percept.addressed.is_addressed() && !percept.message.author_is_bot {
            if percept.message.created_at >= answer_after {
                found.answered_late += 1;
            } else {
                // Too late to answer: kept as what was said, not as a question to the bot.
                percept.addressed = Addressed::No;
                found.too_old_to_answer += 1;
                unanswered = Some(percept.message.id);
            }
        }
        match app.senses.perceive(Percept::Message(percept)) {
            Ok(crate::senses::Perceived::Stored { new: true, .. }) => found.stored += 1,
            Ok(_) => {}
            Err(e) => tracing::error!(%channel, error = %e, "could not store a missed message"),
        }
    }
    if found.stored == 0 {
        return;
    }
    record(app, guild, channel, &found);
    if let (Some(id), true) = (unanswered, d.away_notice) {
        away_notice(app, guild, channel, id).await;
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
