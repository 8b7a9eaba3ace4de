//! Voice after the adapter boundary: synthetic 16 kHz PCM fed to the
//! listener exactly as the songbird handler does (`tick(speaking, silent)`),
//! a fake speech-to-text server, and the in-process bot — what gets
//! uploaded, what is stored, what people read in the linked text channel.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use ambient::ids::{ChannelId, UserId, stable_id};
use ambient::settings::{Settings, VoiceLink};
use ambient::store::messages::Source;
use ambient::vocab::journal::Kind;
use ambient::voice::Member;
use ambient::voice::listener::Listener;
use ambient::voice::segment::{quiet, tone};
use serde_json::json;

use crate::support::fake_voice::{FakeVoice, listening_in};
use crate::support::model_server::Scripted;
use crate::support::stt_server::SttServer;
use crate::support::world::{B_GENERAL, GENERAL, GUILD_A, World, settings};

const VOICE: ChannelId = ChannelId(2501);

fn user(name: &str) -> UserId {
    UserId(stable_id("user", name))
}

fn voice_settings(stt: &SttServer) -> Settings {
    let mut s = settings();
    s.voice.transcription.base_url = stt.base.clone();
    // The fake runs on 127.0.0.1, like a local whisper.cpp.
    s.voice.transcription.allow_private = true;
    s.voice.transcription.max_concurrent = 1;
    s
}

/// A world listening in VOICE, writing to #general.
async fn listening(s: Settings) -> (World, Arc<FakeVoice>) {
    listening_in(World::start(s).await, VOICE).await
}

/// A world that follows people into VOICE (linked to #general), not yet in it.
async fn auto_joining(stt: &SttServer) -> (World, Arc<FakeVoice>) {
    let mut s = voice_settings(stt);
    s.voice.auto_join = true;
    s.voice.auto_join_channel_ids = vec![VOICE];
    s.voice.links = vec![VoiceLink {
        voice_channel_id: VOICE,
        text_channel_id: GENERAL,
    }];
    let w = World::start(s).await;
    let backend = Arc::new(FakeVoice::default());
    w.app.voice.set_backend(backend.clone());
    (w, backend)
}

/// `/voice join` from #general into VOICE, expected to be refused: the error.
async fn refused(s: Settings) -> (World, Arc<FakeVoice>, String) {
    let w = World::start(s).await;
    let backend = Arc::new(FakeVoice::default());
    w.app.voice.set_backend(backend.clone());
    let err = w
        .app
        .voice
        .join(GUILD_A, VOICE, Some(GENERAL), "ada")
        .await
        .unwrap_err()
        .to_string();
    (w, backend, err)
}

/// Feeds one speaker's audio in 20 ms ticks, as songbird delivers it.
fn speak(l: &Listener, who: &str, audio: &[i16]) {
    for frame in audio.chunks(320) {
        l.tick(&[(user(who), who.to_string(), frame)], &[]);
    }
}

fn vc_rows(w: &World) -> Vec<(String, String)> {
    w.app
        .store()
        .messages()
        .recent_messages(GENERAL, 50)
        .unwrap()
        .into_iter()
        .filter(|m| m.source == Source::Vc)
        .map(|m| (m.author_name, m.content))
        .collect()
}

#[tokio::test]
async fn joining_says_so_and_speech_becomes_vc_lines_cut_at_the_right_places() {
    let stt = SttServer::start();
    stt.say("the meetup moved to friday");
    let (w, voice) = listening(voice_settings(&stt)).await;
    let notice = &w.said()[0];
    assert_eq!(notice.channel, GENERAL);
    assert!(
        notice
            .content
            .contains("I'm listening in <#2501> and transcribing")
            && notice.content.contains("/voice optout"),
        "{}",
        notice.content
    );

    let l = voice.listener();
    let mut audio = quiet(1_000);
    audio.extend(tone(2_000, 220.0, 8_000));
    audio.extend(quiet(1_000));
    audio.extend(tone(60, 1_000.0, 20_000)); // a click: ignored
    audio.extend(quiet(1_000));
    speak(&l, "ada", &audio);
    l.drain().await;
    w.app.spine.drain().await;

    let uploads = stt.uploads();
    assert_eq!(uploads.len(), 1, "the click never reached the server");
    assert_eq!(
        (uploads[0].samples, uploads[0].sample_rate),
        (32_000, 16_000),
        "exactly the 2 s of speech, 16 kHz mono WAV"
    );
    assert!(uploads[0].model);
    assert_eq!(
        vc_rows(&w),
        vec![("ada".to_string(), "the meetup moved to friday".to_string())]
    );
    let row = w
        .app
        .store()
        .messages()
        .recent_messages(GENERAL, 50)
        .unwrap()
        .into_iter()
        .find(|m| m.source == Source::Vc)
        .unwrap();
    let (channel, start, end) = w.app.store().voice().utterance(row.id).unwrap().unwrap();
    assert_eq!(channel, VOICE);
    assert_eq!((start - row.created_at).num_milliseconds(), 0);
    assert_eq!(
        (end - start).num_milliseconds(),
        2_000,
        "the time span of what was said"
    );
    let usage = w
        .app
        .store()
        .usage()
        .usage_list(&Default::default(), None)
        .unwrap();
    assert!(
        usage
            .iter()
            .any(|u| u.role == "transcribe" && u.outcome == "ok" && u.detail == "2.0 s of audio"),
        "{usage:?}"
    );
}

#[tokio::test]
async fn an_opted_out_or_blocked_speaker_never_reaches_the_transcription_server() {
    let stt = SttServer::start();
    stt.say("bob is heard");
    let mut s = voice_settings(&stt);
    s.permissions.replies.blocked_user_ids = vec![user("mallory")];
    let (w, voice) = listening(s).await;
    assert!(
        w.app
            .voice
            .opt_out(user("ada"))
            .starts_with("Done: your voice is never recorded")
    );
    let l = voice.listener();
    let mut audio = tone(1_500, 200.0, 8_000);
    audio.extend(quiet(1_000));
    speak(&l, "ada", &audio);
    assert_eq!(l.buffered_samples(), 0, "not even buffered");
    speak(&l, "mallory", &audio);
    speak(&l, "bob", &audio);
    l.drain().await;
    w.app.spine.drain().await;
    assert_eq!(stt.uploads().len(), 1);
    assert_eq!(
        vc_rows(&w),
        vec![("bob".to_string(), "bob is heard".to_string())]
    );
    // And back in.
    w.app.voice.opt_in(user("ada"));
    stt.say("ada again");
    speak(&l, "ada", &audio);
    l.drain().await;
    assert_eq!(stt.uploads().len(), 2);
}

#[tokio::test]
async fn a_slow_transcription_server_drops_the_oldest_waiting_utterance_not_memory() {
    let stt = SttServer::start();
    stt.slow(StdDuration::from_millis(300));
    let mut s = voice_settings(&stt);
    s.voice.queue_capacity = 4;
    let (w, voice) = listening(s).await;
    let l = voice.listener();
    let mut one = tone(500, 200.0, 8_000);
    one.extend(quiet(800));
    for _ in 0..12 {
        speak(&l, "ada", &one);
        assert!(l.queued() <= 4, "the queue is bounded");
        assert!(
            l.buffered_samples() <= 16_000 * 15,
            "at most one utterance in progress"
        );
    }
    let dropped = l.dropped();
    assert!(
        (7..=8).contains(&dropped),
        "12 utterances, 4 waiting, at most 1 in flight: {dropped} dropped"
    );
    l.drain().await;
    assert_eq!(stt.uploads().len() as u64, 12 - dropped);
    assert_eq!(stt.max_in_flight(), 1, "voice.transcription.maxConcurrent");
    let notes: Vec<String> = w
        .journal(Kind::Voice)
        .into_iter()
        .map(|e| format!("{} — {}", e.summary, e.reason))
        .collect();
    assert!(notes.iter().any(|n| n.starts_with("dropped an utterance: transcription is behind — the queue holds 4 utterances; the oldest goes first")), "{notes:#?}");
}

#[tokio::test]
async fn transcripts_are_vc_lines_in_the_initiative_prompt_and_a_spoken_address_is_answered_in_text()
 {
    let stt = SttServer::start();
    stt.say("I think we should try the new ramen place");
    stt.say("hey ambient, what do you think about ramen?");
    let mut only_a = voice_settings(&stt);
    only_a.permissions.replies.discovery_channel_ids = vec![GENERAL];
    let (w, voice) = listening(only_a).await;
    let l = voice.listener();
    let mut audio = tone(1_200, 200.0, 8_000);
    audio.extend(quiet(1_000));
    speak(&l, "bob", &audio);
    l.drain().await;
    w.app.spine.drain().await;
    assert!(
        w.model.requests().is_empty(),
        "not addressed: stored as context, nobody woken"
    );

    w.model
        .push(Scripted::text("Ramen sounds great, count me in."));
    speak(&l, "ada", &audio);
    l.drain().await;
    w.app.spine.drain().await;
    let answer = w.said().last().unwrap().clone();
    assert_eq!(
        answer.channel, GENERAL,
        "answered in the linked text channel"
    );
    assert_eq!(
        answer.content,
        format!("<@{}> Ramen sounds great, count me in.", user("ada"))
    );
    let reply_prompt = w.model.requests()[0].body.to_string();
    assert!(
        reply_prompt.contains("bob [vc]: I think we should try the new ramen place"),
        "{reply_prompt}"
    );

    w.model.push(Scripted::tool(
        "decide",
        json!({"action": "drop", "reason": "they are already deciding"}),
    ));
    w.tick().await;
    let initiative = w.model.requests().last().unwrap().body.to_string();
    assert!(
        initiative.contains("bob [vc]: I think we should try the new ramen place"),
        "{initiative}"
    );
}

#[tokio::test]
async fn without_a_transcription_endpoint_joining_explains_what_is_missing() {
    let (w, _, err) = refused(settings()).await;
    assert!(
        err.contains("no speech-to-text endpoint is configured: set voice.transcription.baseUrl"),
        "{err}"
    );
    assert!(
        w.said().is_empty(),
        "nobody was told the bot listens: it does not"
    );
}

#[tokio::test]
async fn auto_join_follows_people_into_a_linked_channel_and_leaves_when_it_empties() {
    let stt = SttServer::start();
    let (w, backend) = auto_joining(&stt).await;
    w.app
        .voice
        .voice_state(GUILD_A, UserId(900), Member::Bot, Some(VOICE))
        .await;
    assert!(
        backend.joined.lock().unwrap().is_empty(),
        "a bot alone is no reason to listen"
    );
    w.app
        .voice
        .voice_state(GUILD_A, user("ada"), Member::Person, Some(VOICE))
        .await;
    assert_eq!(*backend.joined.lock().unwrap(), vec![VOICE]);
    assert!(w.said()[0].content.contains("I'm listening in <#2501>"));
    // Muting, deafening or a camera: the same channel again changes nothing.
    w.app
        .voice
        .voice_state(GUILD_A, user("ada"), Member::Person, Some(VOICE))
        .await;
    assert!(backend.left.lock().unwrap().is_empty(), "ada only muted");
    assert_eq!(backend.joined.lock().unwrap().len(), 1);
    w.app
        .voice
        .voice_state(GUILD_A, user("bob"), Member::Person, Some(VOICE))
        .await;
    w.app
        .voice
        .voice_state(GUILD_A, user("ada"), Member::Person, None)
        .await;
    assert!(
        backend.left.lock().unwrap().is_empty(),
        "bob is still there"
    );
    w.app
        .voice
        .voice_state(GUILD_A, user("bob"), Member::Person, None)
        .await;
    assert_eq!(*backend.left.lock().unwrap(), vec![GUILD_A]);
    assert_eq!(
        w.said().last().unwrap().content,
        "🔇 I left <#2501> and stopped transcribing."
    );
}

/// Real speech, when espeak-ng is installed (it is not needed for the other tests).
#[tokio::test]
async fn synthesised_speech_is_one_utterance() {
    // `./dev.sh test` installs espeak-ng; a bare `cargo test` elsewhere may not have it.
    let Ok(out) = std::process::Command::new("espeak-ng")
        .args([
            "--stdout",
            "-s",
            "150",
            "hello there, this is a test of the voice pipeline",
        ])
        .output()
    else {
        eprintln!("espeak-ng is not installed: skipping the synthesised-speech check");
        return;
    };
    assert!(out.status.success());
    // espeak-ng writes 22,050 Hz mono 16-bit WAV; take the data and resample to 16 kHz.
    let wav = out.stdout;
    let data = &wav[44..];
    let src: Vec<i16> = data
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    let ratio = 22_050.0 / 16_000.0;
    let pcm: Vec<i16> = (0..(src.len() as f64 / ratio) as usize)
        .map(|i| src[(i as f64 * ratio) as usize])
        .collect();
    let stt = SttServer::start();
    stt.say("hello there, this is a test of the voice pipeline");
    let (w, voice) = listening(voice_settings(&stt)).await;
    let l = voice.listener();
    let spoken = pcm.len();
    let mut audio = quiet(500);
    audio.extend(pcm);
    audio.extend(quiet(1_000));
    speak(&l, "ada", &audio);
    l.drain().await;
    w.app.spine.drain().await;
    let uploads = stt.uploads();
    assert_eq!(uploads.len(), 1, "one sentence, one utterance");
    // espeak-ng pads with near-silence at both ends; the cut keeps the speech and the hangover, no more.
    assert!(
        uploads[0].samples >= spoken * 8 / 10 && uploads[0].samples <= spoken + 16_000,
        "{} samples uploaded for {spoken} spoken",
        uploads[0].samples
    );
    assert_eq!(
        vc_rows(&w),
        vec![(
            "ada".to_string(),
            "hello there, this is a test of the voice pipeline".to_string()
        )]
    );
}

#[tokio::test]
async fn sent_away_the_bot_stays_out_until_the_room_empties_and_leaves_when_moved() {
    let stt = SttServer::start();
    let (w, backend) = auto_joining(&stt).await;
    let enter = |who: &'static str, at: Option<ChannelId>| {
        let voice = w.app.voice.clone();
        async move {
            voice
                .voice_state(GUILD_A, user(who), Member::Person, at)
                .await
        }
    };
    enter("ada", Some(VOICE)).await;
    assert_eq!(backend.joined.lock().unwrap().len(), 1);

    w.app
        .voice
        .send_away(GUILD_A, "asked by ada")
        .await
        .unwrap();
    enter("bob", Some(VOICE)).await;
    assert_eq!(
        backend.joined.lock().unwrap().len(),
        1,
        "sent away: a newcomer does not pull the bot back in"
    );
    enter("ada", None).await;
    enter("bob", None).await;
    enter("bob", Some(VOICE)).await;
    assert_eq!(
        backend.joined.lock().unwrap().len(),
        2,
        "a new gathering after the room emptied is joined again"
    );

    // A moderator drags the bot into another room: those people were never told.
    w.app
        .voice
        .voice_state(GUILD_A, UserId(1), Member::Me, Some(ChannelId(2599)))
        .await;
    assert!(w.app.voice.session(GUILD_A).is_none());
    assert_eq!(backend.left.lock().unwrap().len(), 2);
    assert_eq!(
        w.said().last().unwrap().content,
        "🔇 I left <#2501> and stopped transcribing."
    );
    let why = w
        .journal(Kind::Voice)
        .into_iter()
        .find(|e| e.summary == "left a voice channel" && e.reason.contains("moved"))
        .map(|e| e.reason);
    assert_eq!(
        why.as_deref(),
        Some("I was moved to another voice channel, whose people were not told")
    );
}

#[tokio::test]
async fn transcripts_only_go_to_a_visible_text_channel_of_the_same_server() {
    let stt = SttServer::start();
    let mut s = voice_settings(&stt);
    s.voice.links = vec![VoiceLink {
        voice_channel_id: VOICE,
        text_channel_id: B_GENERAL,
    }];
    let (w, backend, err) = refused(s).await;
    assert_eq!(
        err,
        format!(
            "<#{B_GENERAL}> is not a text channel of this server that I know: check voice.links"
        )
    );

    let mut s = voice_settings(&stt);
    s.permissions.replies.blocked_channel_ids = vec![GENERAL];
    let (w2, backend2, err) = refused(s).await;
    assert!(
        err.contains("permissions.replies.blockedChannelIds"),
        "{err}"
    );
    assert!(
        backend.joined.lock().unwrap().is_empty() && backend2.joined.lock().unwrap().is_empty()
    );
    assert!(w.said().is_empty() && w2.said().is_empty());
}

#[tokio::test]
async fn without_the_notice_nobody_is_listened_to() {
    let stt = SttServer::start();
    let mut s = voice_settings(&stt);
    s.permissions.replies.max_messages_per_hour = 0;
    let (w, backend, err) = refused(s).await;
    assert!(
        err.starts_with(&format!(
            "I couldn't post the notice that I'm listening in <#{GENERAL}>"
        )),
        "{err}"
    );
    assert!(
        backend.joined.lock().unwrap().is_empty(),
        "it never connected"
    );
    assert!(w.app.voice.session(GUILD_A).is_none());
}

#[tokio::test]
async fn opting_out_lets_go_of_speech_already_waiting_or_being_transcribed() {
    let stt = SttServer::start();
    stt.slow(StdDuration::from_millis(300));
    let (w, voice) = listening(voice_settings(&stt)).await;
    let l = voice.listener();
    let mut one = tone(500, 200.0, 8_000);
    one.extend(quiet(800));
    speak(&l, "ada", &one); // uploading
    speak(&l, "ada", &one); // waiting
    tokio::time::sleep(StdDuration::from_millis(100)).await;
    assert_eq!(l.queued(), 1);
    w.app.voice.opt_out(user("ada"));
    assert_eq!(l.queued(), 0, "the waiting utterance is let go");
    l.drain().await;
    w.app.spine.drain().await;
    assert_eq!(stt.uploads().len(), 1);
    assert!(
        vc_rows(&w).is_empty(),
        "the upload in flight when she opted out is not kept"
    );
}

#[tokio::test]
async fn a_transcription_error_never_carries_the_key_into_the_journal() {
    let stt = SttServer::start();
    stt.refuse(401);
    let secrets = ambient::settings::Secrets::from_lookup(|k| {
        (k == "TRANSCRIPTION_API_KEY").then(|| "stt-key-98765".to_string())
    });
    let (w, backend) = listening_in(
        World::start_with_secrets(voice_settings(&stt), secrets).await,
        VOICE,
    )
    .await;
    let l = backend.listener();
    let mut one = tone(500, 200.0, 8_000);
    one.extend(quiet(800));
    speak(&l, "ada", &one);
    l.drain().await;
    assert_eq!(
        stt.uploads()[0].authorization.as_deref(),
        Some("Bearer stt-key-98765")
    );
    let failure = w
        .journal(Kind::Voice)
        .into_iter()
        .find(|e| e.summary.starts_with("could not transcribe"))
        .expect("the failure is journaled");
    assert_eq!(failure.reason, "HTTP 401: invalid credentials: Bearer ***");
}

#[tokio::test]
async fn why_explains_the_listening_notices() {
    let stt = SttServer::start();
    let (w, _voice) = listening(voice_settings(&stt)).await;
    w.app.voice.leave(GUILD_A, "asked by ada").await.unwrap();
    let why = |starts: &str| {
        let mine = w
            .app
            .store()
            .messages()
            .recent_messages(GENERAL, 10)
            .unwrap()
            .into_iter()
            .find(|m| m.is_self && m.content.starts_with(starts))
            .unwrap_or_else(|| panic!("no notice starting {starts:?}"));
        ambient::commands::why::why(&w.app, Some(GUILD_A), GENERAL, Some(&mine.id.to_string()))
    };
    let joined = why("🎙️ I'm listening");
    assert!(
        joined.contains("**voice** joined a voice channel — listening in"),
        "{joined}"
    );
    let left = why("🔇 I left");
    assert!(
        left.contains("**voice** left a voice channel — asked by ada"),
        "{left}"
    );
}

#[tokio::test]
async fn a_private_transcription_endpoint_without_its_setting_is_refused_at_join_time() {
    for host in ["127.0.0.1", "localhost"] {
        let stt = SttServer::start();
        let mut s = voice_settings(&stt);
        s.voice.transcription.base_url = stt.base.replace("127.0.0.1", host);
        s.voice.transcription.allow_private = false;
        let (w, _, err) = refused(s).await;
        assert!(
            err.contains(&format!("the speech-to-text endpoint http://{host}:"))
                && err.contains(
                    "is on a private address: if it is your own server (a local whisper.cpp), \
                 set voice.transcription.allowPrivate to true"
                ),
            "{err}"
        );
        assert!(
            w.said().is_empty(),
            "{host}: nobody was told the bot listens"
        );
        assert_eq!(stt.requests(), 0);
    }
}
