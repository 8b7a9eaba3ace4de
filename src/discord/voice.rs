//! The songbird adapter: joins and leaves voice channels, and turns each
//! 20 ms `VoiceTick` into `Listener::tick(speaking, silent)` — 16 kHz mono
//! samples per known speaker. Nothing else happens here.
//!
//! A stream (SSRC) is mapped to its speaker from `SpeakingStateUpdate`
//! events. Under DAVE, songbird 0.6 drops a stream's packets until it knows
//! whose it is, and speaking updates are not always sent; audio from an
//! SSRC we cannot map is dropped here and counted in the log, never guessed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serenity::all::{Cache, ChannelId as SChannelId, GuildId as SGuildId, UserId as SUserId};
use songbird::driver::{Channels, DecodeConfig, DecodeMode, SampleRate};
use songbird::{CoreEvent, Event, EventContext, EventHandler, Songbird};

use crate::ids::{ChannelId, GuildId, UserId};
use crate::voice::listener::Listener;
use crate::voice::{PlatformError, VoiceBackend};

/// Songbird configured to decode everyone to 16 kHz mono.
pub fn songbird() -> Arc<Songbird> {
    let config = songbird::Config::default().decode_mode(DecodeMode::Decode(DecodeConfig::new(
        Channels::Mono,
        SampleRate::Hz16000,
    )));
    Songbird::serenity_from_config(config)
}

pub struct SongbirdBackend {
    pub manager: Arc<Songbird>,
    pub cache: Arc<Cache>,
    pub me: UserId,
}

#[async_trait]
impl VoiceBackend for SongbirdBackend {
    async fn join(
        &self,
        guild: GuildId,
        channel: ChannelId,
        listener: Arc<Listener>,
    ) -> Result<(), PlatformError> {
        let call = self
            .manager
            .join(SGuildId::new(guild.get()), SChannelId::new(channel.get()))
            .await?;
        let mut handler = call.lock().await;
        handler.remove_all_global_events();
        let receiver = Receiver {
            listener,
            guild,
            me: self.me,
            cache: self.cache.clone(),
            speakers: Arc::new(RwLock::new(HashMap::new())),
            names: Arc::new(RwLock::new(HashMap::new())),
            unmapped: Arc::new(AtomicU64::new(0)),
        };
        handler.add_global_event(
            Event::Core(CoreEvent::SpeakingStateUpdate),
            receiver.clone(),
        );
        handler.add_global_event(Event::Core(CoreEvent::VoiceTick), receiver.clone());
        handler.add_global_event(Event::Core(CoreEvent::ClientDisconnect), receiver);
        Ok(())
    }

    async fn leave(&self, guild: GuildId) -> Result<(), PlatformError> {
        Ok(self.manager.remove(SGuildId::new(guild.get())).await?)
    }

    fn people_in(&self, guild: GuildId, voice: ChannelId) -> Option<HashSet<UserId>> {
        let g = self.cache.guild(SGuildId::new(guild.get()))?;
        Some(
            g.voice_states
                .iter()
                .filter(|(_, vs)| vs.channel_id.map(|c| c.get()) == Some(voice.get()))
                .filter(|(user, _)| {
                    user.get() != self.me.get() && !g.members.get(user).is_some_and(|m| m.user.bot)
                })
                .map(|(user, _)| UserId(user.get()))
                .collect(),
        )
    }
}

#[derive(Clone)]
struct Receiver {
    listener: Arc<Listener>,
    guild: GuildId,
    me: UserId,
    cache: Arc<Cache>,
    /// SSRC → speaker.
    speakers: Arc<RwLock<HashMap<u32, UserId>>>,
    /// Speaker → (display name, is a bot).
    names: Arc<RwLock<HashMap<UserId, (String, bool)>>>,
    unmapped: Arc<AtomicU64>,
}

impl Receiver {
    /// The speaker's display name and whether they are a bot (music bots are not transcribed).
    fn who(&self, user: UserId) -> (String, bool) {
        if let Some(n) = self
            .names
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&user)
        {
            return n.clone();
        }
        let who = self
            .cache
            .guild(SGuildId::new(self.guild.get()))
            .and_then(|g| {
                g.members
                    .get(&SUserId::new(user.get()))
                    .map(|m| (m.display_name().to_string(), m.user.bot))
            })
            .or_else(|| {
                self.cache.user(SUserId::new(user.get())).map(|u| {
                    (
                        u.global_name.clone().unwrap_or_else(|| u.name.clone()),
                        u.bot,
                    )
                })
            })
            .unwrap_or_else(|| (format!("user {user}"), false));
        self.names
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(user, who.clone());
        who
    }
}

#[async_trait]
impl EventHandler for Receiver {
    async fn act(&self, ctx: &EventContext<'_>) -> Option<Event> {
        match ctx {
            EventContext::SpeakingStateUpdate(s) => {
                if let Some(u) = s.user_id {
                    self.speakers
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(s.ssrc, UserId(u.0));
                }
            }
            EventContext::VoiceTick(tick) => {
                let map = self
                    .speakers
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                let mut speaking = Vec::new();
                // A known speaker whose packet did not decode counts as a silent
                // tick, so their clock (and the utterance's time span) keeps pace.
                let mut undecoded = Vec::new();
                for (ssrc, data) in &tick.speaking {
                    match (map.get(ssrc), &data.decoded_voice) {
                        (Some(user), _) if *user == self.me => {}
                        (Some(user), Some(pcm)) => {
                            let (name, bot) = self.who(*user);
                            if !bot {
                                speaking.push((*user, name, pcm.as_slice()))
                            }
                        }
                        (Some(user), None) => undecoded.push(*user),
                        (None, Some(_)) => {
                            let n = self.unmapped.fetch_add(1, Ordering::Relaxed) + 1;
                            if n == 1 || n.is_multiple_of(500) {
                                tracing::info!(
                                    ssrc,
                                    dropped_ticks = n,
                                    "voice from a stream not yet mapped to a speaker was dropped"
                                );
                            }
                        }
                        _ => {}
                    }
                }
                let silent: Vec<UserId> = tick
                    .silent
                    .iter()
                    .filter_map(|s| map.get(s).copied())
                    .chain(undecoded)
                    .collect();
                let refs: Vec<(UserId, String, &[i16])> = speaking
                    .iter()
                    .map(|(u, n, p)| (*u, n.clone(), *p))
                    .collect();
                self.listener.tick(&refs, &silent);
            }
            EventContext::ClientDisconnect(d) => self.listener.left(UserId(d.user_id.0)),
            _ => {}
        }
        None
    }
}
