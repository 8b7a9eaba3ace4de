//! Voice consent (issue 35): people are told before the bot hears anything.
//! The listening notice is posted first and the bot connects after it; a
//! notice that cannot be posted means no connection at all, so nothing is
//! received, buffered or transcribed.
//!
//! The fake voice platform stands where songbird does: it is handed the
//! listener when the bot connects, and the room is already talking — it feeds
//! that speech the moment it has the listener. It notes, at each connection,
//! whether the linked text channel already showed the notice.
//!
//! Auto-join is unprompted: a room it cannot connect to is not tried again
//! for every person who enters (each try posts the notice and its
//! correction), only after a back-off or a change of settings.

use std::sync::{Arc, Mutex};

use ambient::clock::Clock;
use ambient::ids::{ChannelId, GuildId, UserId, stable_id};
use ambient::settings::{Settings, VoiceLink};
use ambient::store::messages::Source;
use ambient::vocab::journal::Kind;
use ambient::voice::listener::Listener;
use ambient::voice::segment::{quiet, tone};
use ambient::voice::{Member, PlatformError, VoiceBackend};
use async_trait::async_trait;
use chrono::Duration;

use crate::support::stt_server::SttServer;
use crate::support::world::{GENERAL, GUILD_A, Recording, World, settings};

const VOICE: ChannelId = ChannelId(2501);
const NOTICE: &str = "🎙️ I'm listening in <#2501>";

/// A voice platform whose room is already talking when the bot connects.
struct TalkingRoom {
    /// What the bot has posted on the platform (the world's recording).
    platform: Arc<Recording>,
    /// At each connection: whether #general already showed the notice.
    told_at_join: Mutex<Vec<bool>>,
    left: Mutex<Vec<GuildId>>,
    listener: Mutex<Option<Arc<Listener>>>,
    /// The platform's refusal to connect (its own words), if it refuses.
    refuse: Mutex<Option<&'static str>>,
}

impl TalkingRoom {
    fn new(w: &World, refuse: Option<&'static str>) -> Arc<Self> {
        Arc::new(Self {
            platform: w.said.clone(),
            told_at_join: Mutex::new(Vec::new()),
            left: Mutex::new(Vec::new()),
            listener: Mutex::new(None),
            refuse: Mutex::new(refuse),
        })
    }

    fn told_at_join(&self) -> Vec<bool> {
        self.told_at_join.lock().unwrap().clone()
    }
}

#[async_trait]
impl VoiceBackend for TalkingRoom {
    async fn join(
        &self,
        _: GuildId,
        _: ChannelId,
        listener: Arc<Listener>,
    ) -> Result<(), PlatformError> {
        let told = self
            .platform
            .said
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.channel == GENERAL && s.content.starts_with(NOTICE));
        self.told_at_join.lock().unwrap().push(told);
        if let Some(why) = *self.refuse.lock().unwrap() {
            return Err(why.into());
        }
        // Ada is mid-sentence as the bot connects: songbird delivers it at once.
        let mut audio = tone(1_500, 200.0, 8_000);
        audio.extend(quiet(1_000));
        for frame in audio.chunks(320) {
            listener.tick(&[(ada(), "ada".to_string(), frame)], &[]);
        }
        *self.listener.lock().unwrap() = Some(listener);
        Ok(())
    }

    async fn leave(&self, guild: GuildId) -> Result<(), PlatformError> {
        self.left.lock().unwrap().push(guild);
        Ok(())
    }
}

fn ada() -> UserId {
    person("ada")
}

fn person(name: &str) -> UserId {
    UserId(stable_id("user", name))
}

fn voice_settings(stt: &SttServer) -> Settings {
    let mut s = settings();
    s.voice.transcription.base_url = stt.base.clone();
    // The fake runs on 127.0.0.1, like a local whisper.cpp.
    s.voice.transcription.allow_private = true;
    s
}

/// A world with the lounge (VOICE) known, and the talking room as its platform.
async fn world(s: Settings, refuse: Option<&'static str>) -> (World, Arc<TalkingRoom>) {
    let w = World::start(s).await;
    w.app
        .store()
        .messages()
        .upsert_channel(VOICE, Some(GUILD_A), "lounge", w.clock.now())
        .unwrap();
    let room = TalkingRoom::new(&w, refuse);
    w.app.voice.set_backend(room.clone());
    (w, room)
}

fn vc_rows(w: &World) -> Vec<String> {
    w.app
        .store()
        .messages()
        .recent_messages(GENERAL, 50)
        .unwrap()
        .into_iter()
        .filter(|m| m.source == Source::Vc)
        .map(|m| m.content)
        .collect()
}

#[tokio::test]
async fn the_notice_is_posted_before_the_bot_connects_and_hears_anything() {
    let stt = SttServer::start();
    stt.say("we were already talking");
    let (w, room) = world(voice_settings(&stt), None).await;
    let answer = w
        .app
        .voice
        .join(GUILD_A, VOICE, Some(GENERAL), "ada")
        .await
        .unwrap();
    assert_eq!(answer, "Listening in <#2501>; transcripts go to <#2001>.");
    assert_eq!(
        room.told_at_join(),
        vec![true],
        "the channel was told before the bot connected"
    );
    let listener = room.listener.lock().unwrap().clone().unwrap();
    listener.drain().await;
    w.app.spine.drain().await;
    assert_eq!(vc_rows(&w), vec!["we were already talking".to_string()]);
    let said = w.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].content.starts_with(NOTICE), "{}", said[0].content);
    let joined = w
        .journal(Kind::Voice)
        .into_iter()
        .find(|e| e.summary == "joined a voice channel")
        .expect("the join is journaled");
    assert_eq!(
        joined.message,
        Some(said[0].id),
        "/why on the notice explains it"
    );
}

#[tokio::test]
async fn a_notice_that_cannot_be_posted_means_the_bot_never_connects() {
    let stt = SttServer::start();
    stt.say("this must never be heard");
    let mut s = voice_settings(&stt);
    // The channel refuses the notice: the hourly cap allows nothing.
    s.permissions.replies.max_messages_per_hour = 0;
    let (w, room) = world(s, None).await;
    let err = w
        .app
        .voice
        .join(GUILD_A, VOICE, Some(GENERAL), "ada")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        room.told_at_join().is_empty(),
        "the bot never connected: {:?}",
        room.told_at_join()
    );
    assert!(
        err.starts_with("I couldn't post the notice that I'm listening in <#2001>")
            && err.ends_with("so I did not join <#2501>."),
        "{err}"
    );
    assert!(
        room.listener.lock().unwrap().is_none(),
        "no audio was ever handed over"
    );
    assert!(room.left.lock().unwrap().is_empty(), "nothing to hang up");
    assert!(w.app.voice.session(GUILD_A).is_none());
    w.app.spine.drain().await;
    assert_eq!(stt.requests(), 0, "nothing was transcribed");
    assert!(vc_rows(&w).is_empty());
    assert!(w.said().is_empty());
    assert!(
        !w.journal(Kind::Voice)
            .iter()
            .any(|e| e.summary == "joined a voice channel"),
        "it did not join"
    );
}

#[tokio::test]
async fn a_connection_refused_after_the_notice_says_so_in_the_channel() {
    let stt = SttServer::start();
    let (w, room) = world(voice_settings(&stt), Some("missing the Connect permission")).await;
    let err = w
        .app
        .voice
        .join(GUILD_A, VOICE, Some(GENERAL), "ada")
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "I couldn't join <#2501>: missing the Connect permission"
    );
    assert_eq!(room.told_at_join(), vec![true]);
    assert!(w.app.voice.session(GUILD_A).is_none());
    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].starts_with(NOTICE));
    assert_eq!(
        said[1], "🔇 I couldn't join <#2501> after all, so I'm not listening there.",
        "the notice is not left standing as if the bot listened"
    );
    assert_eq!(stt.requests(), 0);
}

/// Follows people into VOICE (linked to #general).
fn auto_join_settings(stt: &SttServer) -> Settings {
    let mut s = voice_settings(stt);
    s.voice.auto_join = true;
    s.voice.auto_join_channel_ids = vec![VOICE];
    s.voice.links = vec![VoiceLink {
        voice_channel_id: VOICE,
        text_channel_id: GENERAL,
    }];
    s
}

async fn enters(w: &World, who: &str) {
    w.app
        .voice
        .voice_state(GUILD_A, person(who), Member::Person, Some(VOICE))
        .await;
}

async fn leaves(w: &World, who: &str) {
    w.app
        .voice
        .voice_state(GUILD_A, person(who), Member::Person, None)
        .await;
}

fn auto_join_failures(w: &World) -> Vec<String> {
    w.journal(Kind::Voice)
        .into_iter()
        .filter(|e| e.summary == "could not auto-join a voice channel")
        .map(|e| e.reason)
        .collect()
}

const TAKEN_BACK: &str = "🔇 I couldn't join <#2501> after all, so I'm not listening there.";

#[tokio::test]
async fn a_room_auto_join_cannot_connect_to_is_not_tried_again_for_each_person_entering() {
    let stt = SttServer::start();
    let (w, room) = world(
        auto_join_settings(&stt),
        Some("missing the Connect permission"),
    )
    .await;
    for who in ["ada", "bob", "cleo", "dan"] {
        enters(&w, who).await;
    }
    // Someone steps out and back in: another voice-state update, still nothing.
    leaves(&w, "bob").await;
    enters(&w, "bob").await;
    assert_eq!(
        room.told_at_join(),
        vec![true],
        "one attempt for five arrivals"
    );
    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(
        said.len(),
        2,
        "the notice and its correction, once: {said:?}"
    );
    assert!(said[0].starts_with(NOTICE));
    assert_eq!(said[1], TAKEN_BACK);
    assert_eq!(
        auto_join_failures(&w),
        vec![
            "I couldn't join <#2501>: missing the Connect permission; auto-join is trying again in 15 minutes (failure 1 in a row), or sooner if the settings change — until then people entering do not bring it back (/voice join still works)"
                .to_string()
        ],
        "journaled once"
    );

    // After the wait, the next person to enter is a reason to try again; it
    // fails again and the wait doubles.
    w.clock.advance(Duration::minutes(14));
    enters(&w, "eve").await;
    assert_eq!(room.told_at_join().len(), 1, "14 minutes is not 15");
    w.clock.advance(Duration::minutes(1));
    enters(&w, "finn").await;
    enters(&w, "gus").await;
    assert_eq!(room.told_at_join().len(), 2);
    assert_eq!(w.said().len(), 4);
    let failures = auto_join_failures(&w);
    assert_eq!(failures.len(), 2);
    assert!(
        failures[1].contains("trying again in 30 minutes (failure 2 in a row)"),
        "{}",
        failures[1]
    );
    assert!(w.app.voice.session(GUILD_A).is_none());
    assert_eq!(stt.requests(), 0);
}

#[tokio::test]
async fn a_settings_change_or_a_fixed_platform_ends_the_auto_join_wait() {
    let stt = SttServer::start();
    stt.say("good, it can hear us now");
    let (w, room) = world(
        auto_join_settings(&stt),
        Some("missing the Connect permission"),
    )
    .await;
    enters(&w, "ada").await;
    enters(&w, "bob").await;
    assert_eq!(room.told_at_join().len(), 1);

    // A moderator changes a setting of this server: that may be the fix, so
    // the next arrival tries at once (the first failure of a new wait).
    w.app
        .settings
        .set_override(
            GUILD_A,
            "permissions.replies.maxMessagesPerHour",
            "40",
            None,
        )
        .unwrap();
    enters(&w, "cleo").await;
    assert_eq!(room.told_at_join().len(), 2, "tried again after the change");
    let failures = auto_join_failures(&w);
    assert!(
        failures[1].contains("(failure 1 in a row)"),
        "{}",
        failures[1]
    );
    enters(&w, "dan").await;
    assert_eq!(room.told_at_join().len(), 2, "and then waits again");

    // The Connect permission is granted; someone runs /voice join, which
    // never waits, and it works: auto-join has nothing left to wait for.
    *room.refuse.lock().unwrap() = None;
    let answer = w.app.voice.join(GUILD_A, VOICE, None, "ada").await.unwrap();
    assert_eq!(answer, "Listening in <#2501>; transcripts go to <#2001>.");
    let listener = room.listener.lock().unwrap().clone().unwrap();
    listener.drain().await;
    w.app.spine.drain().await;
    assert_eq!(vc_rows(&w), vec!["good, it can hear us now".to_string()]);

    // Everyone leaves; the next gathering is followed at once.
    for who in ["ada", "bob", "cleo", "dan"] {
        leaves(&w, who).await;
    }
    assert!(
        w.app.voice.session(GUILD_A).is_none(),
        "left the empty room"
    );
    enters(&w, "eve").await;
    assert_eq!(room.told_at_join().len(), 4, "joined again, no wait");
    assert!(w.app.voice.session(GUILD_A).is_some());
}
