//! Voice: the bot joins a voice channel, listens, transcribes, and writes
//! what was said as `[vc]` lines into the linked text channel (seed:
//! ambient-text-cycle.md — voice informs attention; the bot answers in text).
//! Only if the operator turns on `voice.speech` is an answer to someone who
//! addressed it by voice also spoken there ([`speak`]).
//!
//! The platform part (songbird: joining, decoding to 16 kHz mono, mapping
//! a stream to its speaker) is a [`VoiceBackend`] the Discord front end
//! provides; everything after a decoded tick — segmentation, the bounded
//! queue, transcription, storage — is [`listener::Listener`], our own code,
//! tested with synthetic PCM.
//!
//! People are told first: joining posts a notice in the linked text channel
//! that the bot is listening and transcribing, and how to opt out
//! (`/voice optout`), and only then connects — a notice that cannot be
//! posted means no connection. Opted-out and blocked users are never
//! recorded, buffered or transcribed.
//!
//! Auto-join is unprompted, so a room it could not join is not tried again
//! on every voice-state update: it waits [`AUTO_JOIN_RETRY`], doubling up to
//! [`AUTO_JOIN_RETRY_CEILING`], or until the server's settings change, and
//! each failure is journaled once.

use crate::store::{MessageStore, PeopleStore, UsageStore, VoiceStore};
pub mod audio;
pub mod listener;
pub mod segment;
pub mod speak;
pub mod transcribe;
pub(crate) mod wav;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use chrono::Duration;

use crate::attention::Place;
use crate::backoff::{Setback, delay};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::settings::Settings;
use crate::speech::Speech;
use crate::store::boundaries::Boundary;
use crate::vocab::journal::{Entry, Kind};
use listener::{Listener, Services, Session};

/// How long auto-join leaves a room alone after it could not join it: a
/// failed attempt posts the notice and its correction, unprompted, so it is
/// not repeated for each person who enters.
pub(crate) const AUTO_JOIN_RETRY: Duration = Duration::minutes(15);
/// The longest wait between two auto-join attempts at a room that keeps failing.
pub(crate) const AUTO_JOIN_RETRY_CEILING: Duration = Duration::hours(24);

/// Why the bot did not join or leave a voice channel; the text is the answer
/// the person who asked sees.
#[derive(Debug, thiserror::Error)]
pub enum VoiceError {
    /// Voice is off, transcription is unconfigured, or there is no front end.
    #[error("I can't listen in voice: {0}.")]
    Unavailable(String),
    #[error(
        "<#{voice}> has no linked text channel: add it to voice.links, or use /voice join from the text channel to write to"
    )]
    Unlinked { voice: ChannelId },
    #[error("<#{text}> is not a text channel of this server that I know: check voice.links")]
    NotThisServers { text: ChannelId },
    #[error("could not check <#{text}>: {source}")]
    Unchecked {
        text: ChannelId,
        source: crate::store::StoreError,
    },
    #[error("I can't write transcripts to <#{text}>: {why}")]
    Invisible { text: ChannelId, why: String },
    #[error("I'm already joining a voice channel here.")]
    AlreadyJoining,
    #[error("no voice front end")]
    NoFrontEnd,
    /// The platform refused to connect (its own words).
    #[error("I couldn't join <#{voice}>: {why}")]
    NotJoined { voice: ChannelId, why: String },
    /// Nobody may be transcribed without being told, so the bot did not connect.
    #[error(
        "I couldn't post the notice that I'm listening in <#{text}> ({why}), so I did not join <#{voice}>."
    )]
    NoticeUnposted {
        text: ChannelId,
        voice: ChannelId,
        why: String,
    },
    #[error("I'm not in a voice channel here.")]
    NotInVoice,
}

/// A voice platform's own error (songbird's, or a test fake's): shown inside
/// [`VoiceError::NotJoined`] in its own words; this crate never branches on it.
pub type PlatformError = Box<dyn std::error::Error + Send + Sync>;

/// What the platform does for voice.
#[async_trait]
pub trait VoiceBackend: Send + Sync {
    /// Connects to `channel` and feeds its decoded audio to `listener.tick`.
    async fn join(
        &self,
        guild: GuildId,
        channel: ChannelId,
        listener: Arc<Listener>,
    ) -> Result<(), PlatformError>;
    async fn leave(&self, guild: GuildId) -> Result<(), PlatformError>;
    /// The people (not bots) in a voice channel right now, if the platform
    /// knows: a room the bot joins may have been full before it started.
    fn people_in(&self, _guild: GuildId, _voice: ChannelId) -> Option<HashSet<UserId>> {
        None
    }
    /// Plays 20 ms Opus frames (48 kHz stereo) in the guild's voice channel:
    /// a spoken answer ([`speak`]). Returns once they are handed over.
    async fn play(&self, _guild: GuildId, _frames: Vec<Vec<u8>>) -> Result<(), PlatformError> {
        Err("this voice front end cannot play audio".into())
    }
}

/// Who a voice-state update is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member {
    Person,
    /// Another bot: it neither keeps a room "occupied" nor draws the bot in.
    Bot,
    /// The bot itself (moved or disconnected by someone else).
    Me,
}

/// What a voice-state update did to the room counts.
enum Recount {
    /// A person's mute, deafen or camera changed: they are where they were.
    Same,
    /// Someone came, went or moved; `emptied` is the room left with nobody.
    Moved { emptied: Option<ChannelId> },
}

/// An auto-join room whose last attempt failed.
struct Refusal {
    /// Failures in a row, and when auto-join may try the room again.
    setback: Setback,
    /// The server's settings at the failure: a change (a link, a channel
    /// opened to the bot, another transcription endpoint) may be the fix,
    /// so it ends the wait.
    under: Arc<Settings>,
}

pub struct Voice {
    services: Services,
    speech: Arc<Speech>,
    backend: RwLock<Option<Arc<dyn VoiceBackend>>>,
    /// One session per guild (Discord allows one voice connection per guild).
    sessions: Mutex<HashMap<GuildId, Arc<Listener>>>,
    /// Who (people, not bots) is in which voice channel, for auto-join.
    rooms: Mutex<HashMap<ChannelId, (GuildId, HashSet<UserId>)>>,
    /// Auto-join channels already reported as unlinked (said once).
    unlinked_said: Mutex<HashSet<ChannelId>>,
    /// Rooms someone sent the bot away from with `/voice leave`: auto-join
    /// stays out of them until they empty.
    sent_away: Mutex<HashSet<ChannelId>>,
    /// Guilds with a join under way (two events must not both connect).
    joining: Mutex<HashSet<GuildId>>,
    /// Auto-join rooms it could not join, waiting before the next try.
    refused: Mutex<HashMap<ChannelId, Refusal>>,
}

impl Voice {
    pub(crate) fn new(services: Services, speech: Arc<Speech>) -> Arc<Self> {
        Arc::new(Self {
            services,
            speech,
            backend: RwLock::new(None),
            sessions: Mutex::new(HashMap::new()),
            rooms: Mutex::new(HashMap::new()),
            unlinked_said: Mutex::new(HashSet::new()),
            sent_away: Mutex::new(HashSet::new()),
            joining: Mutex::new(HashSet::new()),
            refused: Mutex::new(HashMap::new()),
        })
    }

    /// The front end that can connect (Discord); without one, joining explains why not.
    pub fn set_backend(&self, backend: Arc<dyn VoiceBackend>) {
        *self.backend.write().unwrap_or_else(|p| p.into_inner()) = Some(backend);
    }

    pub fn session(&self, guild: GuildId) -> Option<Arc<Listener>> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&guild)
            .cloned()
    }

    /// The text channel a voice channel writes to: `voice.links`, else `fallback`.
    pub(crate) fn link(
        &self,
        guild: GuildId,
        voice: ChannelId,
        fallback: Option<ChannelId>,
    ) -> Option<ChannelId> {
        let settings = self.services.settings.for_guild(Some(guild));
        settings
            .voice
            .links
            .iter()
            .find(|l| l.voice_channel_id == voice)
            .map(|l| l.text_channel_id)
            .or(fallback)
    }

    /// Why the bot cannot listen here, if it cannot.
    pub(crate) fn unavailable(&self, guild: GuildId) -> Option<String> {
        let settings = self.services.settings.for_guild(Some(guild));
        if !settings.voice.enabled {
            return Some("voice is turned off (voice.enabled)".into());
        }
        if let Some(why) = self.services.transcriber.unavailable() {
            return Some(why);
        }
        if self
            .backend
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
        {
            return Some("voice needs the Discord front end (`ambient run`)".into());
        }
        None
    }

    /// Joins `voice`, writing to `text` (or its configured link): the answer
    /// to give, or why not.
    pub async fn join(
        &self,
        guild: GuildId,
        voice: ChannelId,
        text: Option<ChannelId>,
        by: &str,
    ) -> Result<String, VoiceError> {
        if let Some(why) = self.unavailable(guild) {
            return Err(VoiceError::Unavailable(why));
        }
        let Some(text) = self.link(guild, voice, text) else {
            return Err(VoiceError::Unlinked { voice });
        };
        self.writable(guild, text)?;
        if !self
            .joining
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(guild)
        {
            return Err(VoiceError::AlreadyJoining);
        }
        let result = self.connect(guild, voice, text, by).await;
        self.joining
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&guild);
        result
    }

    /// Whether transcripts may be written to `text`: a channel of this
    /// server (a server's `voice.links` cannot point into another server)
    /// that the bot may read.
    fn writable(&self, guild: GuildId, text: ChannelId) -> Result<(), VoiceError> {
        match self.services.store.messages.channel_guild(text) {
            Ok(Some(Some(g))) if g == guild => {}
            Ok(_) => return Err(VoiceError::NotThisServers { text }),
            Err(source) => return Err(VoiceError::Unchecked { text, source }),
        }
        let settings = self.services.settings.for_guild(Some(guild));
        if let Some(why) = crate::permissions::channel_invisible_because(&settings, text) {
            return Err(VoiceError::Invisible {
                text,
                why: why.to_string(),
            });
        }
        Ok(())
    }

    /// Moves the bot here: the notice first, then the connection. Nobody is
    /// heard before the linked channel has been told; a notice that cannot
    /// be posted means the bot never connects, and a connection refused after
    /// the notice says so in the channel.
    async fn connect(
        &self,
        guild: GuildId,
        voice: ChannelId,
        text: ChannelId,
        by: &str,
    ) -> Result<String, VoiceError> {
        if let Some(current) = self.session(guild) {
            if current.session.voice_channel == voice {
                return Ok(format!(
                    "I'm already listening in <#{voice}>, writing to <#{}>.",
                    current.session.text_channel
                ));
            }
            self.leave(guild, "moving to another voice channel").await?;
        }
        let backend = self
            .backend
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(VoiceError::NoFrontEnd)?;
        let notice = self.announce(guild, voice, text).await?;
        if let Err(e) = self.open_session(backend, guild, voice, text).await {
            self.take_back(guild, voice, text, &e).await;
            return Err(e);
        }
        // Joined (by `/voice join` too): whatever kept auto-join out is fixed.
        self.refused_lock().remove(&voice);
        let mut joined = Entry::new(Kind::Voice, "joined a voice channel")
            .place(Some(guild), Some(text))
            .reason(format!("listening in {voice} for {by}"));
        if let Some(first) = notice {
            // `/ambient why` on the notice explains it.
            joined = joined.message(first);
        }
        self.services.journal.record(joined);
        Ok(format!(
            "Listening in <#{voice}>; transcripts go to <#{text}>."
        ))
    }

    /// Connects through the front end and starts the listener; the room's
    /// people, if the platform knows them, are counted from the start.
    async fn open_session(
        &self,
        backend: Arc<dyn VoiceBackend>,
        guild: GuildId,
        voice: ChannelId,
        text: ChannelId,
    ) -> Result<(), VoiceError> {
        let listener = Listener::new(
            Session {
                guild,
                voice_channel: voice,
                text_channel: text,
            },
            self.services.clone(),
        );
        listener.start();
        if let Err(e) = backend.join(guild, voice, listener.clone()).await {
            listener.close();
            return Err(VoiceError::NotJoined {
                voice,
                why: e.to_string(),
            });
        }
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(guild, listener);
        if let Some(people) = backend.people_in(guild, voice) {
            self.rooms
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(voice, (guild, people));
        }
        Ok(())
    }

    /// Tells the linked text channel that the bot is about to listen, before
    /// it connects: the notice's first message, or why it could not be posted
    /// (then the bot must not connect).
    async fn announce(
        &self,
        guild: GuildId,
        voice: ChannelId,
        text: ChannelId,
    ) -> Result<Option<MessageId>, VoiceError> {
        let settings = self.services.settings.for_guild(Some(guild));
        // People are told before they hear it, as before they are heard.
        let answers = if settings.voice.speech.enabled {
            "I answer here in text, and aloud in voice (/ambient me no-voice-answers on stops that while you're there)"
        } else {
            "I answer here in text"
        };
        let notice = format!(
            "🎙️ I'm listening in <#{voice}> and transcribing what's said there into this channel (as [vc] lines), \
             so I can follow the conversation. Say \"hey {}\" to talk to me; {answers}. \
             Don't want to be transcribed? Use /voice optout.",
            settings.bot.name
        );
        let cause = format!(
            "voice-join-{voice}-{}",
            self.services.clock.now().timestamp()
        );
        let place = Place {
            guild: Some(guild),
            channel: text,
        };
        match self.speech.say(place, &notice, None, &cause).await {
            Ok(ids) => Ok(ids.first().copied()),
            Err(e) => Err(VoiceError::NoticeUnposted {
                text,
                voice,
                why: e.to_string(),
            }),
        }
    }

    /// The platform refused to connect after the notice went out: the
    /// channel is told the bot is not listening after all, so the notice is
    /// not left standing as if it were.
    async fn take_back(&self, guild: GuildId, voice: ChannelId, text: ChannelId, e: &VoiceError) {
        let cause = format!(
            "voice-unjoined-{voice}-{}",
            self.services.clock.now().timestamp()
        );
        let said = self
            .speech
            .say(
                Place {
                    guild: Some(guild),
                    channel: text,
                },
                &format!("🔇 I couldn't join <#{voice}> after all, so I'm not listening there."),
                None,
                &cause,
            )
            .await;
        let mut entry = Entry::new(Kind::Voice, "could not join a voice channel")
            .place(Some(guild), Some(text))
            .reason(e.to_string());
        match said {
            Ok(ids) => {
                if let Some(first) = ids.first() {
                    entry = entry.message(*first);
                }
            }
            // Nothing was heard either way; the journal keeps that the correction is missing.
            Err(said) => {
                entry = entry.reason(format!("{e}; the correction was not posted: {said}"))
            }
        }
        self.services.journal.record(entry);
    }

    pub async fn leave(&self, guild: GuildId, why: &str) -> Result<String, VoiceError> {
        let Some(listener) = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&guild)
        else {
            return Err(VoiceError::NotInVoice);
        };
        listener.close();
        let backend = self
            .backend
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(b) = backend
            && let Err(e) = b.leave(guild).await
        {
            // Transcription stopped already (the listener is closed); say so and carry on.
            tracing::warn!(error = %e, "could not disconnect from voice");
        }
        let Session {
            voice_channel,
            text_channel,
            ..
        } = listener.session;
        let cause = format!(
            "voice-leave-{voice_channel}-{}",
            self.services.clock.now().timestamp()
        );
        // The notice is a courtesy: leaving happened whether or not it is posted.
        let sent = self
            .speech
            .say(
                Place {
                    guild: Some(guild),
                    channel: text_channel,
                },
                &format!("🔇 I left <#{voice_channel}> and stopped transcribing."),
                None,
                &cause,
            )
            .await
            .unwrap_or_default();
        let mut left = Entry::new(Kind::Voice, "left a voice channel")
            .place(Some(guild), Some(text_channel))
            .reason(why.to_string());
        if let Some(first) = sent.first() {
            left = left.message(*first);
        }
        self.services.journal.record(left);
        Ok(format!("Left <#{voice_channel}>."))
    }

    /// `/voice leave`: leaves, and auto-join stays out of that room until it empties.
    pub async fn send_away(&self, guild: GuildId, why: &str) -> Result<String, VoiceError> {
        if let Some(s) = self.session(guild) {
            self.sent_away
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(s.session.voice_channel);
        }
        self.leave(guild, why).await
    }

    /// The person's `no-voice` boundary changed: every room listening now
    /// hears of it at once (opting out also lets go of what is held of them).
    pub(crate) fn boundary_changed(&self, user: UserId, out: bool) {
        let sessions: Vec<Arc<Listener>> = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for s in sessions {
            s.set_opted_out(user, out);
        }
    }

    /// `/voice optout`: the person's `no-voice` boundary, on every server.
    pub fn opt_out(&self, user: UserId) -> String {
        // Live rooms first: a failed write must not leave them recording someone who said no.
        self.boundary_changed(user, true);
        let now = self.services.clock.now();
        match self
            .services
            .store
            .people.set_boundary(user, Boundary::NoVoice, true, now)
        {
            Ok(_) => "Done: your voice is never recorded or transcribed, on any server I share with you. /voice optin undoes it.".into(),
            Err(e) => format!("Could not save that: {e}"),
        }
    }

    pub fn opt_in(&self, user: UserId) -> String {
        let now = self.services.clock.now();
        match self
            .services
            .store
            .people
            .set_boundary(user, Boundary::NoVoice, false, now)
        {
            Ok(true) => {
                self.boundary_changed(user, false);
                "Okay: what you say in voice may be transcribed again while I listen.".into()
            }
            Ok(false) => "You had not opted out.".into(),
            Err(e) => format!("Could not save that: {e}"),
        }
    }

    /// Someone's voice state changed (`None`: left voice). Keeps the room
    /// counts, joins configured channels people are in (`voice.autoJoin`),
    /// and leaves a room once only bots remain. Mute, deafen or camera
    /// changes arrive here too, with the channel unchanged: they change nothing.
    pub async fn voice_state(
        &self,
        guild: GuildId,
        user: UserId,
        who: Member,
        channel: Option<ChannelId>,
    ) {
        if who == Member::Me {
            return self.moved_me(guild, channel).await;
        }
        let is_person = who == Member::Person;
        let Recount::Moved { emptied } = self.recount(guild, user, is_person, channel) else {
            return;
        };
        if let Some(room) = emptied {
            self.sent_away
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&room);
        }
        if let Some(session) = self.session(guild) {
            if channel != Some(session.session.voice_channel) {
                session.left(user);
            }
            if emptied == Some(session.session.voice_channel) {
                // Harmless: leaving closes the listener first; its only error is "not in a channel".
                let _ = self.leave(guild, "everyone left the voice channel").await;
                return;
            }
        }
        if is_person && let Some(target) = channel {
            self.auto_join(guild, target).await;
        }
    }

    /// The bot itself was moved or disconnected by someone else: the people
    /// of a room it was moved to were not told, so it leaves.
    async fn moved_me(&self, guild: GuildId, channel: Option<ChannelId>) {
        let Some(session) = self.session(guild) else {
            return;
        };
        if channel != Some(session.session.voice_channel) {
            let why = match channel {
                None => "I was disconnected from the voice channel",
                Some(_) => "I was moved to another voice channel, whose people were not told",
            };
            // Harmless: leaving closes the listener first; its only error is "not in a channel".
            let _ = self.leave(guild, why).await;
        }
    }

    /// Moves `user` between the room counts (bots are taken out, never
    /// counted in); a person whose room did not change changes nothing.
    fn recount(
        &self,
        guild: GuildId,
        user: UserId,
        is_person: bool,
        channel: Option<ChannelId>,
    ) -> Recount {
        let mut rooms = self.rooms.lock().unwrap_or_else(|p| p.into_inner());
        let before = rooms
            .iter()
            .find(|(_, (g, people))| *g == guild && people.contains(&user))
            .map(|(room, _)| *room);
        if is_person && before.is_some() && before == channel {
            return Recount::Same;
        }
        let mut emptied = None;
        if let Some(room) = before
            && let Some((_, people)) = rooms.get_mut(&room)
        {
            people.remove(&user);
            if people.is_empty() {
                emptied = Some(room);
                rooms.remove(&room);
            }
        }
        if let (Some(c), true) = (channel, is_person) {
            rooms
                .entry(c)
                .or_insert_with(|| (guild, HashSet::new()))
                .1
                .insert(user);
        }
        Recount::Moved { emptied }
    }

    /// A person entered `target`: join it if it is a `voice.autoJoin` room,
    /// the bot is not already in this server's voice, nobody sent it away,
    /// the last attempt did not fail too recently, and the room has a linked
    /// text channel (said once when it has not).
    async fn auto_join(&self, guild: GuildId, target: ChannelId) {
        let settings = self.services.settings.for_guild(Some(guild));
        if !settings.voice.auto_join
            || self.session(guild).is_some()
            || !settings.voice.auto_join_channel_ids.contains(&target)
        {
            return;
        }
        if self
            .sent_away
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&target)
            || self.waiting_after_failure(target, &settings)
        {
            return;
        }
        if self.link(guild, target, None).is_none() {
            if self
                .unlinked_said
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(target)
            {
                self.services.journal.record(
                    Entry::new(Kind::Voice, "did not auto-join a voice channel")
                        .guild(Some(guild))
                        .reason(format!("{target} is in voice.autoJoinChannelIds but has no entry in voice.links")),
                );
            }
            return;
        }
        match self.join(guild, target, None, "voice.autoJoin").await {
            // Another event is joining this server's voice; it journals its own outcome.
            Ok(_) | Err(VoiceError::AlreadyJoining) => {}
            Err(e) => {
                let setback = self.auto_join_failed(target, settings);
                self.services.journal.record(
                    Entry::new(Kind::Voice, "could not auto-join a voice channel")
                        .guild(Some(guild))
                        .reason(format!(
                            "{e}; auto-join is {}, or sooner if the settings change — until then people entering do not bring it back (/voice join still works)",
                            setback.describe()
                        )),
                );
            }
        }
    }

    /// Whether auto-join still waits after failing to join `room`: until its
    /// back-off ends, unless the settings it failed under have changed.
    fn waiting_after_failure(&self, room: ChannelId, settings: &Arc<Settings>) -> bool {
        let mut refused = self.refused_lock();
        let Some(r) = refused.get(&room) else {
            return false;
        };
        if !Arc::ptr_eq(&r.under, settings) && *r.under != **settings {
            refused.remove(&room);
            return false;
        }
        self.services.clock.now() < r.setback.until
    }

    /// Starts the next, longer wait for `room` (the first after a settings change).
    fn auto_join_failed(&self, room: ChannelId, settings: Arc<Settings>) -> Setback {
        let now = self.services.clock.now();
        let mut refused = self.refused_lock();
        let failures = refused
            .get(&room)
            .filter(|r| *r.under == *settings)
            .map_or(0, |r| r.setback.failures)
            + 1;
        let wait = delay(AUTO_JOIN_RETRY, AUTO_JOIN_RETRY_CEILING, failures);
        let setback = Setback {
            failures,
            wait,
            until: now + wait,
        };
        refused.insert(
            room,
            Refusal {
                setback,
                under: settings,
            },
        );
        setback
    }

    fn refused_lock(&self) -> std::sync::MutexGuard<'_, HashMap<ChannelId, Refusal>> {
        // Plain values: a panic elsewhere cannot leave the map half-written.
        self.refused.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops every session (shutdown).
    pub(crate) async fn leave_all(&self) {
        let guilds: Vec<GuildId> = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect();
        for g in guilds {
            // Harmless: leaving closes the listener first; its only error is "not in a channel".
            let _ = self.leave(g, "the bot is shutting down").await;
        }
    }
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub messages: MessageStore,
    pub usage: UsageStore,
    pub people: PeopleStore,
    pub voice: VoiceStore,
}
