//! The deterministic gates, in the seed's order. Cheap by construction: they
//! read settings, counters and the clock, roll the seeded dice, and never
//! call a model. A guild stopped by a gate costs nothing.
//!
//! Before them, the store (gate `store`): every read that can stop a look
//! (the guild's channels, hushes, last posts, the bot's unanswered posts,
//! the daily count, the cooldown, an unconfirmed post) succeeded — a hush, a cap or a cooldown
//! the bot cannot read is one it must assume ([`Reads::read`]).
//!
//! 0. an unconfirmed post: a post recorded and not confirmed sent is
//!    settled first (found in the channel, or sent again under its nonce),
//!    so the thought it carried is never shown to the model twice
//! 1. `initiative.text.enabled`
//! 2. a non-empty eligible pool: `discoveryChannelIds` that belong to this
//!    guild, minus blocked or not-allowed channels. The ids are a flat
//!    list, so a guild is only ever offered its own channels.
//! 3. quiet hours (`initiative.quietHours` in the server's zone): nothing
//!    unprompted, a held thought included, until they end
//! 4. hush: the server, or every channel of the pool, hushed (`/ambient
//!    hush`); hushed channels leave the pool
//! 5. the empty room: a person posted in the pool within
//!    `requireActivityWithinHours` (0: off), or the bot would talk to nobody
//! 6. no talking to itself (`unanswered`): fewer than `maxUnansweredPosts`
//!    (0: off) of the bot's unprompted posts — the initiative's and the
//!    routines' — since a person last answered: posted in the pool (or in
//!    the channel the post went to), or reacted to one of them
//! 7. channels in an ACTIVE conversation leave the pool (`active` when none
//!    is left), then those where nothing could be delivered now: at
//!    `maxMessagesPerHour`, or the platform refused the last send (`closed`).
//!    A post that could not be sent is never paid for.
//! 8. the daily cap (`maxPostsPerDay`, rolling 24 h)
//! 9. a model for the role that decides
//! 10. the budget: the deciding role's next call (its recent prompts' size
//!     plus the most it may answer) fits every cap, or nothing is asked
//! 11. a pending thought is revisited here, before the fresh-thought gates
//! 12. for fresh thoughts: `minMinutesBetweenPosts` since the last consideration
//! 13. for fresh thoughts: the eagerness roll

use chrono::{DateTime, Utc};

use crate::clock::Chance;
use crate::courtesy::{self, Refusal};
use crate::ids::{ChannelId, GuildId};
use crate::initiative::Stores;
use crate::permissions;
use crate::settings::Settings;
use crate::store::JournalStore;
use crate::store::MessageStore;
use crate::store::StoreError;
use crate::store::unanswered::UnpromptedPost;
use crate::vocab::pending::PendingThought;

/// What may happen this tick.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// A gate stopped the guild. `gate` names it for deduplication.
    Stop { gate: &'static str, reason: String },
    /// Look at the held thought again.
    Revisit { pool: Vec<ChannelId> },
    /// Think of something new.
    Fresh { pool: Vec<ChannelId> },
}

pub(crate) struct Inputs<'a> {
    pub settings: &'a Settings,
    /// The channels known to belong to this guild.
    pub guild_channels: &'a [ChannelId],
    pub now: DateTime<Utc>,
    pub posts_last_24h: u32,
    pub last_considered: Option<DateTime<Utc>>,
    pub pending: Option<&'a PendingThought>,
    /// Channels where someone is talking with the bot right now.
    pub active: &'a [ChannelId],
    /// Channels where nothing could be delivered now (hourly cap, a refused send).
    pub closed: &'a [ChannelId],
    /// Why the deciding model role cannot run, if it cannot.
    pub model_unavailable: Option<String>,
    /// Why a budget would refuse the deciding role's next call, if it would.
    pub over_budget: Option<String>,
    /// A hush on the whole server, if one is in force.
    pub server_hush: Option<Refusal>,
    /// Channels hushed on their own, and why.
    pub hushed: &'a [(ChannelId, Refusal)],
    /// When a person last posted in any channel of the eligible pool.
    pub last_human: Option<DateTime<Utc>>,
    /// When a post still unconfirmed was recorded, if one is.
    pub unsettled: Option<DateTime<Utc>>,
    /// The bot's unprompted posts nobody has answered yet, newest first ([`unanswered`]).
    pub unanswered: &'a [UnpromptedPost],
}

/// What the gates read from the store for one guild, read together so
/// that one failed read stops the look instead of counting as "none"
/// (a hush not read is not "not hushed"; a count not read is not zero).
#[derive(Clone, Debug, Default)]
pub(crate) struct Reads {
    pub guild_channels: Vec<ChannelId>,
    pub room: Room,
    pub posts_last_24h: u32,
    pub last_considered: Option<DateTime<Utc>>,
    pub unsettled: Option<DateTime<Utc>>,
    pub unanswered: Vec<UnpromptedPost>,
}

impl Reads {
    pub(crate) fn read(
        store: &Stores,
        settings: &Settings,
        guild: GuildId,
        now: DateTime<Utc>,
    ) -> Result<Reads, Refusal> {
        fn failed(what: &'static str) -> impl Fn(StoreError) -> Refusal {
            move |e| Refusal::read_failed(what, &e)
        }
        let guild_channels = store
            .messages
            .guild_channels(guild)
            .map_err(failed("the server's channels"))?;
        let eligible = eligible_pool(settings, &guild_channels);
        let room = Room::look(store, settings, guild, &eligible, now)?;
        let unanswered = unanswered(&store.messages, settings, guild, &eligible, room.last_human)?;
        let posts_last_24h = super::posts_last_24h(&store.journal, guild, now)
            .map_err(failed("the posts of the last 24 h"))?;
        let last_considered = store
            .initiative
            .last_considered(guild)
            .map_err(failed("when the bot last considered posting"))?;
        let unsettled = store
            .initiative
            .outbox_unsent_in(guild)
            .map_err(failed("the posts not yet confirmed"))?
            .first()
            .map(|p| p.created_at);
        Ok(Reads {
            guild_channels,
            room,
            posts_last_24h,
            last_considered,
            unsettled,
            unanswered,
        })
    }
}

/// The bot's unprompted posts in `guild` that nobody has answered yet,
/// newest first, at most `initiative.text.maxUnansweredPosts` (nothing is
/// read when it is 0). `room` is where a person's message answers them (the
/// pool); `last_human` when a person last posted there. A message in the
/// channel a post went to answers it too (a routine may post outside the
/// pool), and so does a reaction to it by anyone but the bot: someone saw
/// it and responded, which is what an owner means by "answered". Whatever
/// answers one post answers those before it.
pub(crate) fn unanswered(
    store: &MessageStore,
    settings: &Settings,
    guild: GuildId,
    room: &[ChannelId],
    last_human: Option<DateTime<Utc>>,
) -> Result<Vec<UnpromptedPost>, Refusal> {
    let max = settings.initiative.text.max_unanswered_posts;
    if max == 0 {
        return Ok(Vec::new());
    }
    let failed = |e| Refusal::read_failed("the bot's posts since a person last spoke", &e);
    let mut posts = store
        .unprompted_posts_after(guild, last_human, max)
        .map_err(failed)?;
    let ids: Vec<_> = posts.iter().map(|p| p.message).collect();
    let mut answered = store.last_reaction_to(&ids).map_err(failed)?;
    let mut outside: Vec<ChannelId> = posts
        .iter()
        .map(|p| p.channel)
        .filter(|c| !room.contains(c))
        .collect();
    outside.sort_unstable();
    outside.dedup();
    for c in outside {
        answered = answered.max(store.last_human_in(c).map_err(failed)?);
    }
    if let Some(at) = answered {
        posts.retain(|p| p.at > at);
    }
    Ok(posts)
}

/// Why one more unprompted post would be the bot talking to itself, if it
/// would: `posts` (newest first) already reach `maxUnansweredPosts`.
pub(crate) fn unanswered_refusal(settings: &Settings, posts: &[UnpromptedPost]) -> Option<String> {
    let max = settings.initiative.text.max_unanswered_posts;
    let (Some(last), true) = (posts.first(), max > 0 && posts.len() >= max as usize) else {
        return None;
    };
    let since = match posts.last() {
        Some(first) if posts.len() > 1 => format!(
            "my last {} posts (since {})",
            posts.len(),
            first.at.format("%H:%M UTC")
        ),
        _ => format!("my last post (at {})", last.at.format("%H:%M UTC")),
    };
    Some(format!(
        "nobody has answered {since}: no message in a channel open to posts, no reaction; \
         the next waits until someone speaks (initiative.text.maxUnansweredPosts is {max})"
    ))
}

/// The guild's channels the bot may post in on its own, before ACTIVE ones are taken out.
pub(crate) fn eligible_pool(settings: &Settings, guild_channels: &[ChannelId]) -> Vec<ChannelId> {
    settings
        .permissions
        .replies
        .discovery_channel_ids
        .iter()
        .copied()
        .filter(|c| guild_channels.contains(c))
        .filter(|c| permissions::channel_invisible_because(settings, *c).is_none())
        .collect()
}

/// Why the pool counts as an empty room, if it does: nobody has posted
/// there within `initiative.text.requireActivityWithinHours`.
fn empty_room(i: &Inputs<'_>, eligible: &[ChannelId]) -> Option<String> {
    let hours = i.settings.initiative.text.require_activity_within_hours;
    if hours == 0 {
        return None;
    }
    let window = chrono::Duration::hours(i64::from(hours));
    let quiet_for = match i.last_human {
        Some(at) if i.now - at < window => return None,
        Some(at) => format!(
            "for {}",
            crate::when::ago(at, i.now).trim_end_matches(" ago")
        ),
        None => "yet".into(),
    };
    let place = if eligible.len() == 1 {
        "the channel open to posts"
    } else {
        "any channel open to posts"
    };
    Some(format!(
        "nobody has posted in {place} {quiet_for} (initiative.text.requireActivityWithinHours is {hours}); no point talking to an empty room"
    ))
}

/// When the room, not empty now, counts as empty if nobody posts: when the
/// last person's post is `requireActivityWithinHours` old. `None` when it
/// never does (0: the gate is off).
pub(crate) fn room_empties_at(
    settings: &Settings,
    last_human: Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    let hours = settings.initiative.text.require_activity_within_hours;
    if hours == 0 {
        return None;
    }
    // A room nobody ever spoke in is empty already.
    Some(last_human.map_or(DateTime::<Utc>::MIN_UTC, |at| {
        at + chrono::Duration::hours(i64::from(hours))
    }))
}

/// What courtesy asks of a guild's pool now, read from the store: the
/// hushes in force and when a person last posted there.
#[derive(Clone, Debug, Default)]
pub(crate) struct Room {
    pub server_hush: Option<Refusal>,
    pub hushed: Vec<(ChannelId, Refusal)>,
    pub last_human: Option<DateTime<Utc>>,
}

impl Room {
    pub(crate) fn look(
        store: &Stores,
        settings: &Settings,
        guild: GuildId,
        eligible: &[ChannelId],
        now: DateTime<Utc>,
    ) -> Result<Room, Refusal> {
        let hushes = |e| Refusal::read_failed("the hushes", &e);
        let server_hush = store
            .people
            .hush(guild, None, now)
            .map_err(hushes)?
            .map(|h| courtesy::hushed(&store.messages, settings, &h, now));
        let mut hushed = Vec::new();
        let mut last_human = None;
        for c in eligible {
            if let Some(h) = store.people.hush(guild, Some(*c), now).map_err(hushes)? {
                hushed.push((*c, courtesy::hushed(&store.messages, settings, &h, now)));
            }
            let last = store
                .messages
                .last_human_in(*c)
                .map_err(|e| Refusal::read_failed("when people last posted", &e))?;
            last_human = last_human.max(last);
        }
        Ok(Room {
            server_hush,
            hushed,
            last_human,
        })
    }
}

/// A gate that stopped the guild: its name (for deduplication) and why.
struct Stop {
    gate: &'static str,
    reason: String,
}

fn stop(gate: &'static str, reason: impl Into<String>) -> Stop {
    Stop {
        gate,
        reason: reason.into(),
    }
}

pub(crate) fn evaluate(i: &Inputs<'_>, chance: &Chance) -> Verdict {
    gates(i, chance).unwrap_or_else(|s| Verdict::Stop {
        gate: s.gate,
        reason: s.reason,
    })
}

/// The gates, one step each, in the seed's order (numbered as in the
/// module's comment); the first to stop decides.
fn gates(i: &Inputs<'_>, chance: &Chance) -> Result<Verdict, Stop> {
    unsettled(i)?; // 0
    enabled(i)?; // 1
    let eligible = eligible(i)?; // 2
    quiet_hours(i)?; // 3
    let unhushed = unhushed(i, &eligible)?; // 4
    room(i, &eligible)?; // 5
    answered(i)?; // 6
    let pool = deliverable(i, unhushed)?; // 7
    daily_cap(i)?; // 8
    model(i)?; // 9
    budget(i)?; // 10
    if let Some(p) = i.pending {
        return revisit(i, p, pool); // 11
    }
    cooldown(i)?; // 12
    eagerness(i, chance)?; // 13
    Ok(Verdict::Fresh { pool })
}

fn unsettled(i: &Inputs<'_>) -> Result<(), Stop> {
    match i.unsettled {
        Some(at) => Err(stop(
            "unsettled",
            format!(
                "the post recorded at {} is not confirmed sent; it is settled (looked for in the \
                 channel, or sent again under its nonce) before anything else is thought of",
                at.format("%H:%M UTC")
            ),
        )),
        None => Ok(()),
    }
}

fn enabled(i: &Inputs<'_>) -> Result<(), Stop> {
    if !i.settings.initiative.text.enabled {
        return Err(stop("enabled", "initiative.text.enabled is off"));
    }
    Ok(())
}

/// The eligible pool, or why it is empty (nothing listed, nothing of this
/// server listed, or all of it blocked).
fn eligible(i: &Inputs<'_>) -> Result<Vec<ChannelId>, Stop> {
    let eligible = eligible_pool(i.settings, i.guild_channels);
    if !eligible.is_empty() {
        return Ok(eligible);
    }
    let listed = &i.settings.permissions.replies.discovery_channel_ids;
    let why = if listed.is_empty() {
        "no channel is open to unprompted posts (permissions.replies.discoveryChannelIds is empty)"
    } else if !listed.iter().any(|c| i.guild_channels.contains(c)) {
        "none of permissions.replies.discoveryChannelIds is a channel of this server"
    } else {
        "every channel of this server in permissions.replies.discoveryChannelIds is blocked or not allowed"
    };
    Err(stop("pool", why))
}

fn quiet_hours(i: &Inputs<'_>) -> Result<(), Stop> {
    match courtesy::quiet(i.settings, i.now) {
        Some(quiet) => Err(stop(quiet.gate, quiet.reason)),
        None => Ok(()),
    }
}

/// The server's hush stops all; a channel's hush takes it out of the pool.
fn unhushed(i: &Inputs<'_>, eligible: &[ChannelId]) -> Result<Vec<ChannelId>, Stop> {
    if let Some(hush) = &i.server_hush {
        return Err(stop(hush.gate, hush.reason.clone()));
    }
    let unhushed: Vec<ChannelId> = eligible
        .iter()
        .copied()
        .filter(|c| !i.hushed.iter().any(|(h, _)| h == c))
        .collect();
    if unhushed.is_empty() {
        let why: Vec<&str> = i.hushed.iter().map(|(_, r)| r.reason.as_str()).collect();
        return Err(stop("hush", why.join("; ")));
    }
    Ok(unhushed)
}

fn room(i: &Inputs<'_>, eligible: &[ChannelId]) -> Result<(), Stop> {
    match empty_room(i, eligible) {
        Some(why) => Err(stop("empty_room", why)),
        None => Ok(()),
    }
}

fn answered(i: &Inputs<'_>) -> Result<(), Stop> {
    match unanswered_refusal(i.settings, i.unanswered) {
        Some(why) => Err(stop("unanswered", why)),
        None => Ok(()),
    }
}

/// The pool without channels in an active conversation, then without those
/// where nothing could be delivered now.
fn deliverable(i: &Inputs<'_>, unhushed: Vec<ChannelId>) -> Result<Vec<ChannelId>, Stop> {
    let pool: Vec<ChannelId> = unhushed
        .into_iter()
        .filter(|c| !i.active.contains(c))
        .collect();
    if pool.is_empty() {
        return Err(stop(
            "active",
            "people are talking with the bot in every eligible channel; replies come first",
        ));
    }
    let pool: Vec<ChannelId> = pool.into_iter().filter(|c| !i.closed.contains(c)).collect();
    if pool.is_empty() {
        return Err(stop(
            "closed",
            "nothing could be delivered in any eligible channel now: each is at \
             permissions.replies.maxMessagesPerHour or refused the bot's last message",
        ));
    }
    Ok(pool)
}

fn daily_cap(i: &Inputs<'_>) -> Result<(), Stop> {
    let t = &i.settings.initiative.text;
    if i.posts_last_24h >= t.max_posts_per_day {
        return Err(stop(
            "daily_cap",
            format!(
                "{} of {} posts in the last 24 h (initiative.text.maxPostsPerDay)",
                i.posts_last_24h, t.max_posts_per_day
            ),
        ));
    }
    Ok(())
}

/// When the daily cap, full now, lets a post through if the bot posts
/// nothing more: when the oldest post it must forget leaves the rolling
/// 24 h (from the next millisecond on); `now` when it is not full, `None`
/// when it never lets one through (a cap of 0).
pub(crate) fn daily_cap_opens_at(
    store: &JournalStore,
    settings: &Settings,
    guild: GuildId,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let max = settings.initiative.text.max_posts_per_day as usize;
    if max == 0 {
        return Ok(None);
    }
    let posts = store.journal_query(&super::counted_posts(guild, now))?;
    // Oldest first: once all but `max - 1` have left, one more fits.
    Ok(Some(match posts.len().checked_sub(max) {
        Some(i) => posts[i].at + chrono::Duration::hours(24),
        None => now,
    }))
}

fn model(i: &Inputs<'_>) -> Result<(), Stop> {
    match &i.model_unavailable {
        Some(why) => Err(stop("model", why.clone())),
        None => Ok(()),
    }
}

fn budget(i: &Inputs<'_>) -> Result<(), Stop> {
    match &i.over_budget {
        Some(why) => Err(stop("budget", why.clone())),
        None => Ok(()),
    }
}

/// A held thought is looked at again once `revisitMinutes` have passed
/// since its last revision; until then it blocks fresh thoughts.
fn revisit(i: &Inputs<'_>, p: &PendingThought, pool: Vec<ChannelId>) -> Result<Verdict, Stop> {
    let t = &i.settings.initiative.text;
    let next = p.updated_at + chrono::Duration::minutes(i64::from(t.revisit_minutes));
    if i.now >= next {
        return Ok(Verdict::Revisit { pool });
    }
    Err(stop(
        "pending",
        format!(
            "holding a thought (revision {}); looking at it again at {}",
            p.revision,
            next.format("%H:%M UTC")
        ),
    ))
}

fn cooldown(i: &Inputs<'_>) -> Result<(), Stop> {
    let t = &i.settings.initiative.text;
    let Some(last) = i.last_considered else {
        return Ok(());
    };
    if i.now < cooldown_ends_at(i.settings, last) {
        let minutes = (i.now - last).num_minutes();
        return Err(stop(
            "cooldown",
            format!(
                "last considered {minutes} min ago; initiative.text.minMinutesBetweenPosts is {}",
                t.min_minutes_between_posts
            ),
        ));
    }
    Ok(())
}

/// When the cooldown after a consideration at `last` ends: from then on
/// `minMinutesBetweenPosts` have passed.
pub(crate) fn cooldown_ends_at(settings: &Settings, last: DateTime<Utc>) -> DateTime<Utc> {
    last + chrono::Duration::minutes(i64::from(
        settings.initiative.text.min_minutes_between_posts,
    ))
}

fn eagerness(i: &Inputs<'_>, chance: &Chance) -> Result<(), Stop> {
    let eagerness = i.settings.initiative.text.eagerness.min(100) as u8;
    if !chance.roll_percent(eagerness) {
        return Err(stop(
            "eagerness",
            format!("the eagerness roll ({eagerness}%) said not now"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn settings() -> Settings {
        let mut s = Settings::default();
        s.permissions.replies.discovery_channel_ids = vec![ChannelId(1), ChannelId(2)];
        s.initiative.text.eagerness = 100;
        s
    }

    const CHANNELS: &[ChannelId] = &[ChannelId(1), ChannelId(2)];

    fn inputs(s: &Settings) -> Inputs<'_> {
        Inputs {
            settings: s,
            guild_channels: CHANNELS,
            now: Utc::now(),
            posts_last_24h: 0,
            last_considered: None,
            pending: None,
            active: &[],
            closed: &[],
            model_unavailable: None,
            over_budget: None,
            server_hush: None,
            hushed: &[],
            last_human: Some(Utc::now()),
            unsettled: None,
            unanswered: &[],
        }
    }

    #[test]
    fn an_exhausted_budget_stops_before_a_held_thought_or_the_dice() {
        let s = settings();
        let mut i = inputs(&s);
        i.over_budget =
            Some("this server's autonomous work has used 49000 of its 50000 tokens".into());
        assert_eq!(gate(evaluate(&i, &Chance::seeded(1))), "budget");
        i.model_unavailable = Some("no model".into());
        assert_eq!(
            gate(evaluate(&i, &Chance::seeded(1))),
            "model",
            "no model comes first"
        );
    }

    #[test]
    fn the_daily_cap_room_and_cooldown_open_exactly_when_their_functions_say() {
        // Four posts over the last day at a cap of 3, checked against the
        // count the gate reads at every minute of the next day.
        use crate::vocab::journal::{Entry, Kind};
        let store = Store::open_in_memory().unwrap();
        let guild = GuildId(1);
        let now: DateTime<Utc> = "2026-05-04T12:00:30Z".parse().unwrap();
        for hours in [20, 9, 5, 2] {
            let mut post = Entry::new(Kind::InitiativePost, "posted").guild(Some(guild));
            post.at = now - chrono::Duration::hours(hours);
            store.journal().journal_append(&post).unwrap();
        }
        let mut s = settings();
        s.initiative.text.max_posts_per_day = 3;
        let opens = daily_cap_opens_at(&store.journal(), &s, guild, now)
            .unwrap()
            .unwrap();
        assert_eq!(opens, now + chrono::Duration::hours(24 - 9));
        let mut t = now;
        while t < now + chrono::Duration::hours(25) {
            let full = super::super::posts_last_24h(&store.journal(), guild, t).unwrap() >= 3;
            assert_eq!(full, t <= opens, "at {t}, said {opens}");
            t += chrono::Duration::seconds(59);
        }
        s.initiative.text.max_posts_per_day = 5;
        assert_eq!(
            daily_cap_opens_at(&store.journal(), &s, guild, now).unwrap(),
            Some(now)
        );
        s.initiative.text.max_posts_per_day = 0;
        assert_eq!(
            daily_cap_opens_at(&store.journal(), &s, guild, now).unwrap(),
            None
        );

        let s = settings();
        let chance = Chance::seeded(1);
        let spoke = now - chrono::Duration::hours(3);
        let empties = room_empties_at(&s, Some(spoke)).unwrap();
        let last = now - chrono::Duration::minutes(10);
        let ready = cooldown_ends_at(&s, last);
        let at = |now| Inputs {
            now,
            last_human: Some(spoke),
            last_considered: Some(last),
            ..inputs(&s)
        };
        let ms = chrono::Duration::milliseconds(1);
        assert_eq!(gate(evaluate(&at(ready - ms), &chance)), "cooldown");
        assert_eq!(gate(evaluate(&at(ready), &chance)), "fresh");
        assert_ne!(gate(evaluate(&at(empties - ms), &chance)), "empty_room");
        assert_eq!(gate(evaluate(&at(empties), &chance)), "empty_room");
        let mut off = settings();
        off.initiative.text.require_activity_within_hours = 0;
        assert_eq!(room_empties_at(&off, Some(spoke)), None, "0: never");
    }

    #[test]
    fn an_unconfirmed_post_stops_the_look_before_any_other_gate() {
        let mut s = settings();
        s.initiative.text.enabled = false;
        let mut i = inputs(&s);
        i.unsettled = Some(Utc::now());
        let Verdict::Stop { gate, reason } = evaluate(&i, &Chance::seeded(1)) else {
            panic!("a look went on past an unconfirmed post");
        };
        assert_eq!(gate, "unsettled");
        assert!(reason.contains("is not confirmed sent"), "{reason}");
    }

    fn gate(v: Verdict) -> &'static str {
        match v {
            Verdict::Stop { gate, .. } => gate,
            Verdict::Revisit { .. } => "revisit",
            Verdict::Fresh { .. } => "fresh",
        }
    }

    #[test]
    fn each_gate_in_order() {
        let chance = Chance::seeded(1);
        let mut s = settings();
        assert_eq!(gate(evaluate(&inputs(&s), &chance)), "fresh");

        s.initiative.text.enabled = false;
        assert_eq!(gate(evaluate(&inputs(&s), &chance)), "enabled");
        s.initiative.text.enabled = true;

        let mut blocked = s.clone();
        blocked.permissions.replies.blocked_channel_ids = vec![ChannelId(1), ChannelId(2)];
        assert_eq!(gate(evaluate(&inputs(&blocked), &chance)), "pool");

        assert_eq!(
            gate(evaluate(
                &Inputs {
                    guild_channels: &[ChannelId(9)],
                    ..inputs(&s)
                },
                &chance
            )),
            "pool",
            "another guild's channels are not offered"
        );

        let active = [ChannelId(1), ChannelId(2)];
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    active: &active,
                    ..inputs(&s)
                },
                &chance
            )),
            "active"
        );
        match evaluate(
            &Inputs {
                active: &active[..1],
                ..inputs(&s)
            },
            &chance,
        ) {
            Verdict::Fresh { pool } => {
                assert_eq!(pool, vec![ChannelId(2)], "an ACTIVE channel is left out")
            }
            other => panic!("{other:?}"),
        }

        assert_eq!(
            gate(evaluate(
                &Inputs {
                    posts_last_24h: 6,
                    ..inputs(&s)
                },
                &chance
            )),
            "daily_cap"
        );
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    closed: &[ChannelId(1), ChannelId(2)],
                    ..inputs(&s)
                },
                &chance
            )),
            "closed",
            "no model is asked for a post nobody could see"
        );
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    closed: &[ChannelId(1)],
                    ..inputs(&s)
                },
                &chance
            )),
            "fresh"
        );
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    model_unavailable: Some("no model".into()),
                    ..inputs(&s)
                },
                &chance
            )),
            "model"
        );

        let now = Utc::now();
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    last_considered: Some(now),
                    now,
                    ..inputs(&s)
                },
                &chance
            )),
            "cooldown"
        );

        s.initiative.text.eagerness = 0;
        assert_eq!(gate(evaluate(&inputs(&s), &chance)), "eagerness");
    }

    #[test]
    fn courtesy_gates_come_before_everything_that_could_cost() {
        let chance = Chance::seeded(1);
        let mut s = settings();
        s.guild.timezone = "Europe/Berlin".into();
        s.initiative.quiet_hours = "23:00-08:00".into();
        let night: DateTime<Utc> = "2026-01-05T23:30:00Z".parse().unwrap();
        let day: DateTime<Utc> = "2026-01-05T12:00:00Z".parse().unwrap();
        let at = |now| Inputs {
            now,
            last_human: Some(now),
            model_unavailable: Some("no model".into()),
            ..inputs(&s)
        };
        match evaluate(&at(night), &chance) {
            Verdict::Stop { gate, reason } => {
                assert_eq!(gate, "quiet_hours");
                assert!(
                    reason.starts_with("quiet hours until 08:00 Europe/Berlin"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            gate(evaluate(&at(day), &chance)),
            "model",
            "awake, the next gate decides"
        );

        let hush = |why: &str| Refusal {
            gate: "hush",
            reason: why.into(),
        };
        let server = Inputs {
            server_hush: Some(hush("this server is hushed until 14:00 UTC (asked by ada)")),
            ..at(day)
        };
        assert_eq!(gate(evaluate(&server, &chance)), "hush");
        let both = [
            (ChannelId(1), hush("#a hushed")),
            (ChannelId(2), hush("#b hushed")),
        ];
        match evaluate(
            &Inputs {
                hushed: &both,
                ..at(day)
            },
            &chance,
        ) {
            Verdict::Stop { gate, reason } => {
                assert_eq!((gate, reason.as_str()), ("hush", "#a hushed; #b hushed"));
            }
            other => panic!("{other:?}"),
        }
        let one = [(ChannelId(1), hush("#a hushed"))];
        match evaluate(
            &Inputs {
                hushed: &one,
                model_unavailable: None,
                ..at(day)
            },
            &chance,
        ) {
            Verdict::Fresh { pool } => {
                assert_eq!(pool, vec![ChannelId(2)], "a hushed channel leaves the pool")
            }
            other => panic!("{other:?}"),
        }

        let empty = Inputs {
            last_human: Some(day - chrono::Duration::hours(25)),
            ..at(day)
        };
        match evaluate(&empty, &chance) {
            Verdict::Stop { gate, reason } => {
                assert_eq!(gate, "empty_room");
                assert!(
                    reason.starts_with("nobody has posted in any channel open to posts for 1d"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    last_human: None,
                    ..at(day)
                },
                &chance
            )),
            "empty_room",
            "a room nobody ever spoke in is empty"
        );
        s.initiative.text.require_activity_within_hours = 0;
        let off = Inputs {
            last_human: None,
            ..inputs(&s)
        };
        assert_eq!(
            gate(evaluate(&Inputs { now: day, ..off }, &chance)),
            "fresh",
            "0: off"
        );
    }

    #[test]
    fn an_unanswered_post_stops_the_next_before_anything_that_could_cost() {
        let chance = Chance::seeded(1);
        let mut s = settings();
        let day: DateTime<Utc> = "2026-01-05T21:29:00Z".parse().unwrap();
        let post = |minutes: i64| UnpromptedPost {
            at: day + chrono::Duration::minutes(minutes),
            channel: ChannelId(1),
            message: crate::ids::MessageId(100 + minutes as u64),
        };
        let one = [post(0)];
        let i = Inputs {
            now: day + chrono::Duration::hours(2),
            unanswered: &one,
            model_unavailable: Some("no model".into()),
            posts_last_24h: 6,
            ..inputs(&s)
        };
        match evaluate(&i, &chance) {
            Verdict::Stop { gate, reason } => {
                assert_eq!(gate, "unanswered");
                assert!(
                    reason.starts_with("nobody has answered my last post (at 21:29 UTC)"),
                    "{reason}"
                );
                assert!(
                    reason.ends_with("(initiative.text.maxUnansweredPosts is 1)"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        let p = PendingThought::new(
            GuildId(1),
            "draft".into(),
            None,
            "later".into(),
            None,
            day,
            chrono::Duration::hours(3),
        );
        let held = Inputs {
            pending: Some(&p),
            now: day + chrono::Duration::hours(2),
            unanswered: &one,
            ..inputs(&s)
        };
        assert_eq!(
            gate(evaluate(&held, &chance)),
            "unanswered",
            "a held thought waits for an answer too"
        );

        s.initiative.text.max_unanswered_posts = 2;
        let allowed = Inputs {
            unanswered: &one,
            ..inputs(&s)
        };
        assert_eq!(
            gate(evaluate(&allowed, &chance)),
            "fresh",
            "2: one more may go"
        );
        let two = [post(60), post(0)];
        match evaluate(
            &Inputs {
                unanswered: &two,
                ..inputs(&s)
            },
            &chance,
        ) {
            Verdict::Stop { gate, reason } => {
                assert_eq!(gate, "unanswered");
                assert!(
                    reason.starts_with("nobody has answered my last 2 posts (since 21:29 UTC)"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        s.initiative.text.max_unanswered_posts = 0;
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    unanswered: &two,
                    ..inputs(&s)
                },
                &chance
            )),
            "fresh",
            "0: off"
        );
        assert_eq!(
            gate(evaluate(
                &Inputs {
                    unanswered: &[],
                    ..inputs(&settings())
                },
                &chance
            )),
            "fresh",
            "answered: nothing stops it"
        );
    }

    #[test]
    fn a_pending_thought_is_revisited_before_cooldown_and_eagerness() {
        let chance = Chance::seeded(1);
        let mut s = settings();
        s.initiative.text.eagerness = 0;
        s.initiative.text.revisit_minutes = 10;
        let now = Utc::now();
        let p = PendingThought::new(
            GuildId(1),
            "draft".into(),
            None,
            "later".into(),
            None,
            now - chrono::Duration::minutes(11),
            chrono::Duration::hours(3),
        );
        let i = Inputs {
            pending: Some(&p),
            last_considered: Some(now),
            now,
            ..inputs(&s)
        };
        assert_eq!(gate(evaluate(&i, &chance)), "revisit");
        let fresh = PendingThought {
            updated_at: now,
            ..p
        };
        let i = Inputs {
            pending: Some(&fresh),
            now,
            ..inputs(&s)
        };
        assert_eq!(gate(evaluate(&i, &chance)), "pending");
    }
}
