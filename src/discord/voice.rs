//! The songbird adapter: joins and leaves voice channels, turns each
//! 20 ms `VoiceTick` into `Listener::tick(speaking, silent)` — 16 kHz mono
//! samples per known speaker — and queues a spoken answer's Opus frames
//! (wrapped as DCA1, songbird's own container for Opus).
//! Nothing else happens here.
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
pub(crate) fn songbird() -> Arc<Songbird> {
    let config = songbird::Config::default().decode_mode(DecodeMode::Decode(DecodeConfig::new(
        Channels::Mono,
        SampleRate::Hz16000,
    )));
    Songbird::serenity_from_config(config)
}

pub(crate) struct SongbirdBackend {
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

    async fn play(&self, guild: GuildId, frames: Vec<Vec<u8>>) -> Result<(), PlatformError> {
        let call = self
            .manager
            .get(SGuildId::new(guild.get()))
            .ok_or("not connected to voice in this server")?;
        let input = songbird::input::Input::from(dca(&frames)?);
        // Queued, not mixed: two answers close together are said one after the other.
        call.lock().await.enqueue_input(input).await;
        Ok(())
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

/// Opus frames as a DCA1 stream (github.com/bwmarrin/dca): `DCA1`, the
/// metadata's length (u32, little-endian) and JSON, then each frame as its
/// length (i16, little-endian) and bytes — songbird's own container format.
fn dca(frames: &[Vec<u8>]) -> Result<Vec<u8>, PlatformError> {
    let meta = serde_json::json!({
        "dca": {"version": 1, "tool": {"name": "ambient", "version": env!("CARGO_PKG_VERSION")}},
        "opus": {"mode": "voip", "sample_rate": 48_000, "frame_size": 960, "vbr": true, "channels": 2},
    })
    .to_string();
    let mut out =
        Vec::with_capacity(8 + meta.len() + frames.iter().map(|f| f.len() + 2).sum::<usize>());
    out.extend_from_slice(b"DCA1");
    out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    out.extend_from_slice(meta.as_bytes());
    for f in frames {
        let len = i16::try_from(f.len()).map_err(|_| "an Opus frame is too large for DCA")?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(f);
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use songbird::input::Input;
    use songbird::input::codecs::{get_codec_registry, get_probe};

    use super::*;
    use crate::voice::audio;

    /// The frames a spoken answer hands songbird come out of its DCA reader
    /// one packet each, byte for byte, as Opus at 48 kHz.
    #[tokio::test]
    async fn songbird_reads_back_every_opus_frame_of_a_spoken_answer() {
        let tone: Vec<i16> = (0..48_000 * 2 / 10)
            .map(|i| ((i as f64 * 0.05).sin() * 8_000.0) as i16)
            .collect();
        let frames = audio::opus_frames(&tone).unwrap();
        assert_eq!(frames.len(), 5, "100 ms");
        let input = Input::from(dca(&frames).unwrap())
            .make_playable_async(get_codec_registry(), get_probe())
            .await
            .unwrap();
        let mut parsed = match input {
            Input::Live(live, _) => live,
            Input::Lazy(_) => panic!("in-memory input is live"),
        };
        let format = &mut parsed.parsed_mut().expect("parsed").format;
        let mut read = Vec::new();
        while let Ok(p) = format.next_packet() {
            read.push(p.buf().to_vec());
        }
        assert_eq!(read, frames);
    }
}
