//! Hush: "be quiet here for 2 hours", from `/ambient hush`, the console, or
//! words ("ambient, hush for an hour", the shipped `hush` reflex).
//!
//! Who may:
//! - **anyone** may hush the channel they are in, for up to
//!   [`ANYONE_MAX_HOURS`]: a person the bot bothers should not need a
//!   moderator, and a short hush costs the server little;
//! - **Manage Server** may hush another channel or the whole server, and
//!   for up to [`MANAGER_MAX_DAYS`];
//! - a hush is ended early (unhush) by whoever made it or by Manage Server,
//!   so a person's "please be quiet" is not undone by someone who wants the
//!   bot chatty; and a hush in force is never shortened by hushing again,
//!   except by those same people.
//!
//! A hush stops what nobody asked for (ambient posts, chime-ins, routines,
//! shared ideas) in its place until it ends; answers to people who address
//! the bot and reminders still come. The bot confirms once, with the end
//! time in the server's zone.

use chrono::{DateTime, Duration, Utc};

use super::local;
use crate::courtesy::Stores;
use crate::ids::{ChannelId, GuildId, UserId};
use crate::journal::Journal;
use crate::settings::Settings;
use crate::store::MessageStore;
use crate::store::hushes::Hush;
use crate::vocab::journal::{Entry, Kind};

/// A hush with no duration given.
pub(crate) const DEFAULT_MINUTES: i64 = 60;
/// The longest hush anyone may ask for (their own channel).
pub(crate) const ANYONE_MAX_HOURS: i64 = 3;
/// The longest hush at all (Manage Server).
pub(crate) const MANAGER_MAX_DAYS: i64 = 7;

/// Who asks, and where.
#[derive(Clone, Debug)]
pub(crate) struct Asker {
    pub user: UserId,
    pub name: String,
    /// Has Manage Server here.
    pub manage: bool,
    /// The channel they ask in.
    pub channel: ChannelId,
}

/// What a hush covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Channel(ChannelId),
    Server,
}

impl Place {
    fn channel(self) -> Option<ChannelId> {
        match self {
            Place::Channel(c) => Some(c),
            Place::Server => None,
        }
    }
}

/// What the bot needs to hush: the server's settings, the store, the journal.
pub(crate) struct Ctx<'a> {
    pub settings: &'a Settings,
    pub store: Stores,
    pub journal: &'a Journal,
    pub guild: GuildId,
    pub now: DateTime<Utc>,
}

/// Why a hush or unhush is refused or failed; the text is what the asker reads.
#[derive(Debug, thiserror::Error)]
pub enum HushError {
    #[error("{text:?} is not a duration; say e.g. 30m, 2h, \"an hour\" or \"90 minutes\"")]
    BadDuration { text: String },
    /// An id that is not one of this server's channels.
    #[error("{text} is not a channel of this server")]
    NotThisServers { text: String },
    /// A name no channel here has.
    #[error(
        "{text:?} is not a channel here; name one (#general), or say \"server\" for the whole server"
    )]
    NoSuchChannel { text: String },
    #[error("A hush lasts at least a minute.")]
    TooShort,
    #[error("A hush lasts at most {MANAGER_MAX_DAYS} days.")]
    TooLong,
    #[error(
        "You can hush the channel you are in; another channel or the whole server needs Manage Server."
    )]
    ElsewhereNeedsManage,
    #[error(
        "You can hush this channel for up to {ANYONE_MAX_HOURS} hours; longer needs Manage Server."
    )]
    LongerNeedsManage,
    /// Someone else's hush, and the asker lacks Manage Server.
    #[error("Only {by_name} (who asked for it) or someone with Manage Server can end this hush.")]
    NotTheirs { by_name: String },
    #[error("Could not save the hush: {0}")]
    Save(#[source] crate::store::StoreError),
    #[error("Could not end the hush: {0}")]
    End(#[source] crate::store::StoreError),
}

/// "2h", "90m", "an hour", "30 minutes", "half an hour", "2 days"; empty: the default.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, HushError> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_prefix("for ").unwrap_or(&t).trim();
    if t.is_empty() {
        return Ok(Duration::minutes(DEFAULT_MINUTES));
    }
    if t == "half an hour" {
        return Ok(Duration::minutes(30));
    }
    let bad = || HushError::BadDuration { text: text.into() };
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = if split == 0 {
        let (word, rest) = t.split_once(' ').ok_or_else(bad)?;
        match word {
            "a" | "an" | "one" => (1, rest.trim()),
            _ => return Err(bad()),
        }
    } else {
        let n: i64 = t[..split].parse().map_err(|_| bad())?;
        (n, t[split..].trim())
    };
    let minutes = match unit {
        "m" | "min" | "mins" | "minute" | "minutes" => 1,
        "h" | "hr" | "hrs" | "hour" | "hours" => 60,
        "d" | "day" | "days" => 24 * 60,
        _ => return Err(bad()),
    };
    number
        .checked_mul(minutes)
        .filter(|m| *m > 0 && *m <= MANAGER_MAX_DAYS * 24 * 60 * 10)
        .map(Duration::minutes)
        .ok_or_else(bad)
}

/// "" or "here": where they are; "server": the whole server; "#name", "<#id>" or an id: that channel.
pub(crate) fn parse_place(
    text: &str,
    store: &MessageStore,
    guild: GuildId,
    here: ChannelId,
) -> Result<Place, HushError> {
    let t = text.trim();
    match t.to_ascii_lowercase().as_str() {
        "" | "here" => return Ok(Place::Channel(here)),
        "server" | "guild" | "all" | "everywhere" => return Ok(Place::Server),
        _ => {}
    }
    let id = t.trim_start_matches("<#").trim_end_matches('>');
    if let Ok(n) = id.parse::<u64>() {
        let c = ChannelId(n);
        return match store.guild_channels(guild) {
            Ok(known) if known.contains(&c) => Ok(Place::Channel(c)),
            _ => Err(HushError::NotThisServers { text: t.into() }),
        };
    }
    let name = t.trim_start_matches('#');
    match store.channel_by_name(guild, name) {
        Ok(Some(c)) => Ok(Place::Channel(c)),
        _ => Err(HushError::NoSuchChannel { text: t.into() }),
    }
}

/// Hushes `place` for `duration`; the confirmation to show, or why not.
pub(crate) fn hush(
    c: &Ctx<'_>,
    who: &Asker,
    place: Place,
    duration: Duration,
) -> Result<String, HushError> {
    if duration < Duration::minutes(1) {
        return Err(HushError::TooShort);
    }
    if duration > Duration::days(MANAGER_MAX_DAYS) {
        return Err(HushError::TooLong);
    }
    if !who.manage {
        if place != Place::Channel(who.channel) {
            return Err(HushError::ElsewhereNeedsManage);
        }
        if duration > Duration::hours(ANYONE_MAX_HOURS) {
            return Err(HushError::LongerNeedsManage);
        }
    }
    let until = c.now + duration;
    let tz = c.settings.zone();
    if let Ok(Some(held)) = c.store.people.hush(c.guild, place.channel(), c.now)
        && held.until > until
        && !(who.manage || held.by == who.user)
    {
        return Ok(format!(
            "{} is already hushed until {} (asked by {}).",
            describe(c, place),
            local(held.until, tz, c.now),
            held.by_name
        ));
    }
    let h = Hush {
        guild: c.guild,
        channel: place.channel(),
        until,
        by: who.user,
        by_name: who.name.clone(),
        at: c.now,
    };
    c.store.people.set_hush(&h).map_err(HushError::Save)?;
    let what = describe(c, place);
    let end = local(until, tz, c.now);
    c.journal.record(
        Entry::new(Kind::Settings, format!("hushed {what} until {end}"))
            .place(Some(c.guild), place.channel())
            .reason(format!("asked by {} for {}", who.name, span(duration))),
    );
    Ok(format!(
        "Okay, I'll keep quiet in {what} until {end}: nothing from me that nobody asked for. \
         I still answer when someone talks to me, and reminders still come. /ambient unhush ends it early."
    ))
}

/// Ends a hush early; the answer to show, or why not.
pub(crate) fn unhush(c: &Ctx<'_>, who: &Asker, place: Place) -> Result<String, HushError> {
    let what = describe(c, place);
    let Ok(Some(held)) = c.store.people.hush(c.guild, place.channel(), c.now) else {
        return Ok(format!("{what} is not hushed."));
    };
    if !(who.manage || held.by == who.user) {
        return Err(HushError::NotTheirs {
            by_name: held.by_name,
        });
    }
    c.store
        .people
        .clear_hush(c.guild, place.channel(), c.now)
        .map_err(HushError::End)?;
    c.journal.record(
        Entry::new(Kind::Settings, format!("ended the hush in {what}"))
            .place(Some(c.guild), place.channel())
            .reason(format!("asked by {}", who.name)),
    );
    Ok(format!("Okay, the hush in {what} is over."))
}

fn describe(c: &Ctx<'_>, place: Place) -> String {
    match place {
        Place::Server => "this server".into(),
        Place::Channel(ch) => format!(
            "#{}",
            c.store
                .messages
                .channel_name(ch)
                .ok()
                .flatten()
                .unwrap_or_else(|| ch.to_string())
        ),
    }
}

/// "2 h", "90 min", "3 days".
fn span(d: Duration) -> String {
    let m = d.num_minutes();
    if m % (24 * 60) == 0 {
        format!("{} day(s)", m / (24 * 60))
    } else if m % 60 == 0 {
        format!("{} h", m / 60)
    } else {
        format!("{m} min")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn durations_as_people_say_them() {
        let m = |t: &str| {
            parse_duration(t)
                .map(|d| d.num_minutes())
                .map_err(|e| e.to_string())
        };
        assert_eq!(m(""), Ok(60));
        assert_eq!(m("an hour"), Ok(60));
        assert_eq!(m("for an hour"), Ok(60));
        assert_eq!(m("2h"), Ok(120));
        assert_eq!(m("2 hours"), Ok(120));
        assert_eq!(m("90 minutes"), Ok(90));
        assert_eq!(m("half an hour"), Ok(30));
        assert_eq!(m("3d"), Ok(3 * 24 * 60));
        assert!(m("a while").unwrap_err().contains("is not a duration"));
        assert!(m("0m").is_err());
        assert!(m("99999999999999h").is_err());
    }

    fn ctx<'a>(
        s: &'a Settings,
        store: &'a Store,
        journal: &'a Journal,
        now: DateTime<Utc>,
    ) -> Ctx<'a> {
        Ctx {
            settings: s,
            store: store.into(),
            journal,
            guild: GuildId(1),
            now,
        }
    }

    #[test]
    fn anyone_hushes_their_channel_briefly_managers_the_rest() {
        let store = Store::open_in_memory().unwrap();
        let clock = crate::clock::ManualClock::at_test_epoch();
        let journal = Journal::new(store.journal(), clock.clone());
        let s = Settings::default();
        let now = crate::clock::Clock::now(&*clock);
        let c = ctx(&s, &store, &journal, now);
        let here = ChannelId(10);
        let ada = Asker {
            user: UserId(1),
            name: "ada".into(),
            manage: false,
            channel: here,
        };
        let bob = Asker {
            user: UserId(2),
            name: "bob".into(),
            ..ada.clone()
        };
        let boss = Asker {
            user: UserId(3),
            name: "boss".into(),
            manage: true,
            ..ada.clone()
        };
        assert!(
            hush(&c, &ada, Place::Server, Duration::hours(1))
                .unwrap_err()
                .to_string()
                .contains("Manage Server")
        );
        assert!(hush(&c, &ada, Place::Channel(ChannelId(11)), Duration::hours(1)).is_err());
        assert!(
            hush(&c, &ada, Place::Channel(here), Duration::hours(4))
                .unwrap_err()
                .to_string()
                .contains("up to 3 hours")
        );
        let ok = hush(&c, &ada, Place::Channel(here), Duration::hours(2)).unwrap();
        assert!(ok.contains("until 14:00 UTC"), "{ok}");
        // Bob cannot shorten Ada's hush, nor end it.
        let kept = hush(&c, &bob, Place::Channel(here), Duration::minutes(1)).unwrap();
        assert!(
            kept.contains("already hushed until 14:00 UTC (asked by ada)"),
            "{kept}"
        );
        assert!(
            unhush(&c, &bob, Place::Channel(here))
                .unwrap_err()
                .to_string()
                .contains("Only ada")
        );
        assert_eq!(
            store
                .people()
                .hush(GuildId(1), Some(here), now)
                .unwrap()
                .unwrap()
                .by_name,
            "ada"
        );
        assert!(
            unhush(&c, &boss, Place::Channel(here))
                .unwrap()
                .contains("is over")
        );
        assert!(hush(&c, &boss, Place::Server, Duration::days(2)).is_ok());
        assert!(hush(&c, &boss, Place::Server, Duration::days(8)).is_err());
    }
}
