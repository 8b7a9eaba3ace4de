//! Answering aloud (`voice.speech`): someone addresses the bot in voice,
//! the answer is posted as text as always and — when the operator turned it
//! on — also spoken: a fake text-to-speech server on 127.0.0.1 answers with
//! espeak-ng's WAV, and the voice backend receives the Opus frames songbird
//! would play. Checked: the frame count (the WAV's length in 20 ms frames,
//! rounded up, each frame decoding), the cuts (`maxSeconds`, the day's
//! `maxSecondsPerDay`), refusals (not audio, oversize, someone present with
//! `no-voice-answers`) and that with the setting off no request is made.

use std::sync::Arc;

use ambient::commands::Asker;
use ambient::ids::{ChannelId, UserId, stable_id};
use ambient::settings::Settings;
use ambient::vocab::journal::Kind;
use ambient::voice::Member;
use ambient::voice::segment::{quiet, tone};

use crate::support::fake_voice::{FakeVoice, listening_in};
use crate::support::model_server::Scripted;
use crate::support::stt_server::SttServer;
use crate::support::tts_server::{Answer, TtsServer, espeak_installed};
use crate::support::world::{GENERAL, GUILD_A, World, settings};

const VOICE: ChannelId = ChannelId(2601);
const ANSWER: &str = "Ramen sounds great, count me in.";

fn user(name: &str) -> UserId {
    UserId(stable_id("user", name))
}

/// Listening (a fake speech-to-text) and answering aloud through `tts`.
fn speaking_settings(stt: &SttServer, tts: &TtsServer) -> Settings {
    let mut s = settings();
    s.voice.transcription.base_url = stt.base.clone();
    s.voice.transcription.allow_private = true;
    s.voice.transcription.max_concurrent = 1;
    s.voice.speech.enabled = true;
    s.voice.speech.base_url = tts.base.clone();
    // The fake runs on 127.0.0.1, like a local TTS server.
    s.voice.speech.allow_private = true;
    s
}

/// A world listening in VOICE (writing to #general) through a [`FakeVoice`].
async fn listening(s: Settings) -> (World, Arc<FakeVoice>) {
    listening_in(World::start(s).await, VOICE).await
}

async fn ask(w: &World, backend: &FakeVoice, stt: &SttServer) {
    stt.say("hey ambient, what do you think about ramen?");
    w.model.push(Scripted::text(ANSWER));
    let l = backend.listener();
    let mut audio = tone(1_200, 200.0, 8_000);
    audio.extend(quiet(1_000));
    for frame in audio.chunks(320) {
        l.tick(&[(user("ada"), "ada".to_string(), frame)], &[]);
    }
    l.drain().await;
    w.app.spine.drain().await;
    let last = w.said().last().cloned().expect("an answer");
    assert_eq!(
        last.content,
        format!("<@{}> {ANSWER}", user("ada")),
        "the text answer goes out as always"
    );
}

/// 20 ms frames in `samples` at `rate`, rounded up.
fn frames_of((samples, rate): (usize, u32)) -> usize {
    (samples * 50).div_ceil(rate as usize)
}

fn voice_lines(w: &World) -> Vec<(String, String)> {
    w.journal(Kind::Voice)
        .into_iter()
        .filter(|e| e.summary.contains("aloud"))
        .map(|e| (e.summary, e.reason))
        .collect()
}

macro_rules! needs_espeak {
    () => {
        if !espeak_installed() {
            eprintln!("espeak-ng is not installed (./dev.sh installs it): skipping the spoken-answer check");
            return;
        }
    };
}

#[tokio::test]
async fn a_question_asked_in_voice_is_also_answered_aloud_in_whole_opus_frames() {
    needs_espeak!();
    let (stt, tts) = (SttServer::start(), TtsServer::start());
    let (w, backend) = listening(speaking_settings(&stt, &tts)).await;
    assert!(
        w.said()[0]
            .content
            .contains("and aloud in voice (/ambient me no-voice-answers on stops that"),
        "people are told before they hear it: {}",
        w.said()[0].content
    );
    ask(&w, &backend, &stt).await;
    let requests = tts.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].body,
        serde_json::json!({"model": "tts-1", "voice": "alloy", "input": ANSWER, "response_format": "wav"}),
        "the mention is not read out"
    );
    let expected = frames_of(requests[0].sent.expect("espeak's WAV"));
    assert!(
        expected > 50,
        "espeak says it in over a second: {expected} frames"
    );
    assert_eq!(backend.played(), vec![expected]);
    let mut decoder = opus2::Decoder::new(48_000, opus2::Channels::Stereo).unwrap();
    let mut pcm = [0i16; 960 * 2];
    for frame in &backend.frames()[0] {
        assert_eq!(
            decoder.decode(frame, &mut pcm, false).unwrap(),
            960,
            "20 ms at 48 kHz"
        );
    }
    let lines = voice_lines(&w);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0].0, "answered aloud");
    assert!(
        lines[0].1.contains(&format!("({expected} Opus frames)")),
        "{lines:?}"
    );
}

#[tokio::test]
async fn max_seconds_cuts_a_long_answer() {
    needs_espeak!();
    let (stt, tts) = (SttServer::start(), TtsServer::start());
    let mut s = speaking_settings(&stt, &tts);
    s.voice.speech.max_seconds = 1;
    let (w, backend) = listening(s).await;
    ask(&w, &backend, &stt).await;
    assert_eq!(backend.played(), vec![50], "1 s is 50 frames of 20 ms");
    let lines = voice_lines(&w);
    assert!(
        lines[0].1.contains("cut from") && lines[0].1.contains("at voice.speech.maxSeconds"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn the_days_seconds_cut_the_answer_that_reaches_them_and_stop_the_next() {
    needs_espeak!();
    let (stt, tts) = (SttServer::start(), TtsServer::start());
    let mut s = speaking_settings(&stt, &tts);
    s.voice.speech.max_seconds_per_day = 3;
    let (w, backend) = listening(s).await;
    ask(&w, &backend, &stt).await;
    let first = frames_of(tts.requests()[0].sent.unwrap());
    assert!(first < 150, "espeak says it in under 3 s: {first} frames");
    ask(&w, &backend, &stt).await;
    assert_eq!(
        backend.played(),
        vec![first, 150 - first],
        "the second is cut to what is left of 3 s"
    );
    ask(&w, &backend, &stt).await;
    assert_eq!(
        tts.requests().len(),
        2,
        "nothing left: the endpoint is not asked"
    );
    assert_eq!(backend.played().len(), 2);
    let lines = voice_lines(&w);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[1]
            .1
            .contains("what is left of today's voice.speech.maxSecondsPerDay"),
        "{lines:?}"
    );
    assert_eq!(
        lines[2],
        (
            "did not answer aloud".to_string(),
            "today's 3 s of spoken answers (voice.speech.maxSecondsPerDay) are spent".to_string()
        )
    );
    // The next day (UTC) has its own seconds.
    w.clock.advance(chrono::Duration::days(1));
    ask(&w, &backend, &stt).await;
    assert_eq!(backend.played().len(), 3);
    assert_eq!(backend.played()[2], first);
}

#[tokio::test]
async fn an_answer_that_is_not_audio_or_is_oversize_is_refused_and_the_text_still_goes_out() {
    needs_espeak!();
    let (stt, tts) = (SttServer::start(), TtsServer::start());
    let mut s = speaking_settings(&stt, &tts);
    s.voice.speech.max_seconds = 1;
    let (w, backend) = listening(s).await;
    tts.answer(Answer::Html);
    ask(&w, &backend, &stt).await;
    // One second of 48 kHz 16-bit stereo and a header: 196,096 bytes.
    tts.answer(Answer::Padded(200_000));
    ask(&w, &backend, &stt).await;
    assert_eq!(tts.requests().len(), 2);
    assert!(backend.played().is_empty(), "nothing played");
    let lines = voice_lines(&w);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0].0, "did not answer aloud");
    assert_eq!(
        lines[0].1,
        "the text-to-speech answer is not audio (content type \"text/html; charset=utf-8\")"
    );
    assert_eq!(
        lines[1].1,
        "the text-to-speech answer is larger than 196096 bytes, more than voice.speech.maxSeconds of audio can need"
    );
}

#[tokio::test]
async fn nobody_is_answered_aloud_while_someone_present_asked_for_no_voice_answers() {
    needs_espeak!();
    let (stt, tts) = (SttServer::start(), TtsServer::start());
    let (w, backend) = listening(speaking_settings(&stt, &tts)).await;
    for who in ["ada", "eve"] {
        w.app
            .voice
            .voice_state(GUILD_A, user(who), Member::Person, Some(VOICE))
            .await;
    }
    let eve = Asker {
        guild: Some(GUILD_A),
        channel: GENERAL,
        user: user("eve"),
        name: "eve".into(),
        manage: false,
    };
    let said = ambient::commands::courtesy::run_text(&w.app, &eve, "me no-voice-answers on");
    assert!(
        said.contains("I never answer aloud in a voice channel while you are in it"),
        "{said}"
    );
    ask(&w, &backend, &stt).await;
    assert!(tts.requests().is_empty(), "not even synthesised");
    assert!(backend.played().is_empty());
    assert_eq!(
        voice_lines(&w),
        vec![(
            "did not answer aloud".to_string(),
            format!(
                "1 person in {VOICE} asked not to be answered aloud or not to be recorded \
                 (no-voice-answers, no-voice)"
            )
        )]
    );
    // Eve leaves: the next answer is spoken.
    w.app
        .voice
        .voice_state(GUILD_A, user("eve"), Member::Person, None)
        .await;
    ask(&w, &backend, &stt).await;
    assert_eq!(backend.played().len(), 1);

    // Someone who opted out of being recorded keeps the bot's voice out too.
    w.app
        .voice
        .voice_state(GUILD_A, user("bob"), Member::Person, Some(VOICE))
        .await;
    let optout = w.app.voice.opt_out(user("bob"));
    assert!(!optout.is_empty());
    ask(&w, &backend, &stt).await;
    assert_eq!(backend.played().len(), 1, "not spoken while bob is there");
    assert_eq!(tts.requests().len(), 1, "not even synthesised");
}

#[tokio::test]
async fn with_voice_speech_off_no_speech_is_requested_at_all() {
    let (stt, tts) = (SttServer::start(), TtsServer::start());
    let mut s = speaking_settings(&stt, &tts);
    s.voice.speech.enabled = false;
    let (w, backend) = listening(s).await;
    ask(&w, &backend, &stt).await;
    assert!(tts.requests().is_empty());
    assert!(backend.played().is_empty());
    assert!(voice_lines(&w).is_empty());
}

#[tokio::test]
async fn the_speech_key_goes_only_in_the_request_never_into_the_journal() {
    let (stt, tts) = (SttServer::start(), TtsServer::start());
    tts.answer(Answer::Refuse);
    let secrets = ambient::settings::Secrets::from_lookup(|k| {
        (k == "SPEECH_API_KEY").then(|| "tts-key-24680".to_string())
    });
    let w = World::start_with_secrets(speaking_settings(&stt, &tts), secrets).await;
    let (w, backend) = listening_in(w, VOICE).await;
    ask(&w, &backend, &stt).await;
    assert_eq!(
        tts.requests()[0].authorization.as_deref(),
        Some("Bearer tts-key-24680")
    );
    assert_eq!(
        voice_lines(&w),
        vec![(
            "did not answer aloud".to_string(),
            "the text-to-speech endpoint answered HTTP 401: invalid credentials: Bearer ***"
                .to_string()
        )]
    );
}
