//! Courtesy: when the bot keeps to itself, and what each person asked of it.
//!
//! Three things decide whether the bot may speak *unprompted* (an ambient
//! post, a chime-in, a routine, a shared idea) somewhere now:
//! - the server's quiet hours (`initiative.quietHours` in `guild.timezone`),
//! - a hush on the channel or the whole server (`/ambient hush`, see [`hush`]),
//! - for a chime-in, the boundaries of the person it would answer
//!   (`store::boundaries`: no-unprompted).
//!
//! Every unprompted message, whatever its source — the initiative, a
//! chime-in, a reflex woken by a message nobody addressed to the bot, by a
//! reaction or by a newcomer, a routine, a task the garden set itself —
//! passes [`unprompted`] (or [`unprompted_to`] when it answers or greets a
//! person) in the channel it would be said in, before any model call.
//!
//! Answers to people who address the bot, and reminders they asked for, are
//! prompted: quiet hours stop answers only when
//! `initiative.repliesDuringQuietHours` is off, and nothing here stops a
//! reminder. Every refusal is a [`Refusal`] with the gate's name and a
//! reason a person can read ("quiet hours until 08:00 Europe/Berlin"); the
//! callers journal it and check it before any model call.
//!
//! A store read that fails refuses (gate `store`, "store read failed: …"):
//! a hush or a boundary the bot cannot read is one it must assume.
//!
//! Cheap by construction: settings, the clock and one indexed store read.

use crate::store::{MessageStore, PeopleStore};
pub(crate) mod hush;
pub(crate) mod people;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::ids::{ChannelId, GuildId, UserId};
use crate::settings::Settings;
use crate::settings::quiet_hours::QuietHours;
use crate::store::StoreError;
use crate::store::boundaries::Boundary;
use crate::store::hushes::Hush;

/// Why the bot keeps quiet: the gate that said so, and its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// `quiet_hours`, `hush`, `boundary` or `store`: the name the journal, status and replay count.
    pub gate: &'static str,
    pub reason: String,
}

impl Refusal {
    /// A read the decision needed failed: the bot keeps quiet rather than
    /// guess (`what` names the read, e.g. "the hushes"). The caller journals
    /// it, as any refusal.
    pub(crate) fn read_failed(what: &str, e: &StoreError) -> Self {
        Refusal {
            gate: "store",
            reason: format!("store read failed: {what}: {e}; keeping quiet"),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// When the server's current quiet hours end, if it is in them now.
pub(crate) fn quiet_until(settings: &Settings, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    // Validation refuses a spec that does not parse: one that slipped through means no quiet hours.
    QuietHours::parse(&settings.initiative.quiet_hours)
        .ok()?
        .until(now, settings.zone())
}

/// When the server's quiet hours next begin or end, if they ever do.
pub(crate) fn quiet_changes_at(settings: &Settings, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    QuietHours::parse(&settings.initiative.quiet_hours)
        .ok()?
        .next_change(now, settings.zone())
}

/// Quiet hours as a refusal, if it is in them now.
pub(crate) fn quiet(settings: &Settings, now: DateTime<Utc>) -> Option<Refusal> {
    let until = quiet_until(settings, now)?;
    Some(Refusal {
        gate: "quiet_hours",
        reason: format!(
            "quiet hours until {} (initiative.quietHours {:?})",
            local(until, settings.zone(), now),
            settings.initiative.quiet_hours.trim()
        ),
    })
}

/// The hush in force on `channel` (a server-wide one first), if any.
pub(crate) fn hush_on(
    store: &PeopleStore,
    guild: GuildId,
    channel: Option<ChannelId>,
    now: DateTime<Utc>,
) -> Result<Option<Hush>, StoreError> {
    if let Some(server) = store.hush(guild, None, now)? {
        return Ok(Some(server));
    }
    match channel {
        Some(c) => store.hush(guild, Some(c), now),
        None => Ok(None),
    }
}

/// A hush as a refusal.
pub(crate) fn hushed(
    store: &MessageStore,
    settings: &Settings,
    h: &Hush,
    now: DateTime<Utc>,
) -> Refusal {
    let place = match h.channel {
        None => "this server".to_string(),
        Some(c) => format!("#{}", channel_name(store, c)),
    };
    Refusal {
        gate: "hush",
        reason: format!(
            "{place} is hushed until {} (asked by {})",
            local(h.until, settings.zone(), now),
            h.by_name
        ),
    }
}

/// Whether the bot may say something nobody asked for in `channel` now:
/// quiet hours first (the whole server), then a hush.
pub(crate) fn unprompted(
    settings: &Settings,
    store: &Stores,
    guild: GuildId,
    channel: ChannelId,
    now: DateTime<Utc>,
) -> Result<(), Refusal> {
    if let Some(r) = quiet(settings, now) {
        return Err(r);
    }
    match hush_on(&store.people, guild, Some(channel), now) {
        Ok(Some(h)) => Err(hushed(&store.messages, settings, &h, now)),
        Ok(None) => Ok(()),
        Err(e) => Err(Refusal::read_failed("the hushes", &e)),
    }
}

/// Whether the bot may say something unasked in `channel` that answers,
/// greets or names `person` (the author it would chime in on, the one who
/// reacted, the newcomer): the server's and channel's state, then the
/// person's own boundary. Outside a server only the boundary counts.
pub(crate) fn unprompted_to(
    settings: &Settings,
    store: &Stores,
    guild: Option<GuildId>,
    channel: ChannelId,
    person: Option<UserId>,
    now: DateTime<Utc>,
) -> Result<(), Refusal> {
    if let Some(g) = guild {
        unprompted(settings, store, g, channel, now)?;
    }
    let Some(person) = person else {
        return Ok(());
    };
    match store.people.has_boundary(person, Boundary::NoUnprompted) {
        Ok(false) => Ok(()),
        Ok(true) => Err(Refusal {
            gate: "boundary",
            reason: "the person asked not to be answered unprompted (/ambient me no-unprompted)"
                .into(),
        }),
        // Better one greeting missed than a person's boundary ignored.
        Err(e) => Err(Refusal::read_failed("the person's boundaries", &e)),
    }
}

/// Whether someone who addressed the bot is answered now: always, unless
/// it is quiet hours and `initiative.repliesDuringQuietHours` is off.
pub(crate) fn answer(settings: &Settings, now: DateTime<Utc>) -> Result<(), Refusal> {
    if settings.initiative.replies_during_quiet_hours {
        return Ok(());
    }
    match quiet(settings, now) {
        Some(mut r) => {
            r.reason
                .push_str("; initiative.repliesDuringQuietHours is off");
            Err(r)
        }
        None => Ok(()),
    }
}

/// `t` (the end of something) as people in the server read it: "08:00
/// Europe/Berlin" within the next day (the next 08:00 is the one meant),
/// "Sat 10:00 Europe/Berlin" further off.
pub(crate) fn local(t: DateTime<Utc>, tz: Tz, now: DateTime<Utc>) -> String {
    let at = t.with_timezone(&tz);
    if t - now < chrono::Duration::hours(24) {
        format!("{} {tz}", at.format("%H:%M"))
    } else {
        format!("{} {tz}", at.format("%a %H:%M"))
    }
}

fn channel_name(store: &MessageStore, c: ChannelId) -> String {
    store
        .channel_name(c)
        .ok()
        .flatten()
        .unwrap_or_else(|| c.to_string())
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

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn quiet_hours_refuse_in_the_servers_zone_and_say_until_when() {
        let mut s = Settings::default();
        s.guild.timezone = "Europe/Berlin".into();
        s.initiative.quiet_hours = "23:00-08:00".into();
        let night = at("2026-01-05T23:30:00Z");
        let r = quiet(&s, night).unwrap();
        assert_eq!(r.gate, "quiet_hours");
        assert_eq!(
            r.reason,
            "quiet hours until 08:00 Europe/Berlin (initiative.quietHours \"23:00-08:00\")"
        );
        assert_eq!(quiet(&s, at("2026-01-06T07:00:00Z")), None);
        assert_eq!(answer(&s, night), Ok(()), "answers go on by default");
        s.initiative.replies_during_quiet_hours = false;
        assert!(
            answer(&s, night)
                .unwrap_err()
                .reason
                .ends_with("repliesDuringQuietHours is off")
        );
        assert_eq!(
            local(at("2026-01-10T09:00:00Z"), s.zone(), night),
            "Sat 10:00 Europe/Berlin"
        );
    }

    #[test]
    fn the_older_zone_name_still_counts() {
        let mut s = Settings::default();
        s.impulses.timezone = "America/New_York".into();
        assert_eq!(s.zone().name(), "America/New_York");
        s.guild.timezone = "Asia/Tokyo".into();
        assert_eq!(s.zone().name(), "Asia/Tokyo", "guild.timezone wins");
    }
}
