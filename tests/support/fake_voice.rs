//! A voice front end for in-process tests: it joins and leaves at once,
//! keeps the listener songbird would feed (a test pushes synthetic PCM into
//! it), and keeps the Opus frames it was asked to play.

use std::sync::{Arc, Mutex};

use ambient::clock::Clock;
use ambient::ids::{ChannelId, GuildId};
use ambient::voice::listener::Listener;
use ambient::voice::{PlatformError, VoiceBackend};
use async_trait::async_trait;

use crate::support::world::{GENERAL, GUILD_A, World};

#[derive(Default)]
pub struct FakeVoice {
    pub joined: Mutex<Vec<ChannelId>>,
    pub left: Mutex<Vec<GuildId>>,
    listener: Mutex<Option<Arc<Listener>>>,
    played: Mutex<Vec<Vec<Vec<u8>>>>,
}

#[async_trait]
impl VoiceBackend for FakeVoice {
    async fn join(
        &self,
        _: GuildId,
        channel: ChannelId,
        listener: Arc<Listener>,
    ) -> Result<(), PlatformError> {
        self.joined.lock().unwrap().push(channel);
        *self.listener.lock().unwrap() = Some(listener);
        Ok(())
    }

    async fn leave(&self, guild: GuildId) -> Result<(), PlatformError> {
        self.left.lock().unwrap().push(guild);
        Ok(())
    }

    async fn play(&self, _: GuildId, frames: Vec<Vec<u8>>) -> Result<(), PlatformError> {
        self.played.lock().unwrap().push(frames);
        Ok(())
    }
}

impl FakeVoice {
    /// The listener of the last join.
    pub fn listener(&self) -> Arc<Listener> {
        self.listener.lock().unwrap().clone().expect("joined")
    }

    /// How many frames each played answer had, in order.
    pub fn played(&self) -> Vec<usize> {
        self.played.lock().unwrap().iter().map(Vec::len).collect()
    }

    /// Every frame played, answer by answer.
    pub fn frames(&self) -> Vec<Vec<Vec<u8>>> {
        self.played.lock().unwrap().clone()
    }
}

/// `w` listening in `room` (a voice channel of GUILD_A named "lounge"),
/// writing what it hears to #general, through a new [`FakeVoice`].
pub async fn listening_in(w: World, room: ChannelId) -> (World, Arc<FakeVoice>) {
    w.app
        .store()
        .messages()
        .upsert_channel(room, Some(GUILD_A), "lounge", w.clock.now())
        .unwrap();
    let backend = Arc::new(FakeVoice::default());
    w.app.voice.set_backend(backend.clone());
    w.app
        .voice
        .join(GUILD_A, room, Some(GENERAL), "ada")
        .await
        .unwrap();
    (w, backend)
}
