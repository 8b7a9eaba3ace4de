//! Answering aloud (`voice.speech`, off by default): when someone addressed
//! the bot by voice, its text answer — already posted, always — is also
//! spoken in the voice channel the session listens in.
//!
//! ```text
//! answer text ─► enabled? in voice here? ─► anyone present with no-voice-answers? ─► refused
//!   ─► the day's seconds left (voice.speech.maxSecondsPerDay, per server, UTC day)? ─► refused
//!   ─► POST …/audio/speech {model, voice, input, response_format: "wav"} (guarded fetcher)
//!   ─► audio/*, a 16-bit PCM WAV, at most the bytes maxSeconds can need ─► else refused
//!   ─► 48 kHz stereo, cut at min(maxSeconds, what is left today) ─► 20 ms Opus frames
//!   ─► VoiceBackend::play
//! ```
//!
//! Every refusal is a journal line and nothing more: the text answer was
//! delivered before any of this, and speaking is never worth an error in
//! the channel. The key comes from `SPEECH_API_KEY` and never leaves the
//! request's header; errors are masked before they reach the journal.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;

use super::Voice;
use super::audio::{self, AudioError, FRAME_MS, Pcm};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::net::{FetchError, Fetcher, PostBody};
use crate::settings::{NetworkSettings, Secret, SpeechSettings};
use crate::store::boundaries::Boundary;
use crate::vocab::journal::{Entry, Kind};

/// The most text sent to be spoken (OpenAI's `/audio/speech` takes 4,096 characters).
pub(crate) const MAX_INPUT_CHARS: usize = 4_096;
/// Room for a WAV's header chunks beyond its audio.
const HEADER_SLACK: u64 = 4_096;

/// Why an answer was not spoken; the text goes to the journal.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpeakError {
    #[error("the text-to-speech endpoint answered HTTP {status}: {snippet}")]
    Status { status: u16, snippet: String },
    #[error("the text-to-speech answer is not audio (content type {0:?})")]
    NotAudio(String),
    #[error(
        "the text-to-speech answer is larger than {0} bytes, more than voice.speech.maxSeconds of audio can need"
    )]
    Oversize(u64),
    #[error(
        "the text-to-speech endpoint was {0}; if it is your own server, set voice.speech.allowPrivate to true"
    )]
    Private(String),
    #[error("the text-to-speech request failed: {0}")]
    Fetch(String),
    #[error("the text-to-speech answer is not playable audio: {0}")]
    Audio(#[from] AudioError),
    #[error("the voice front end could not play it: {0}")]
    Play(String),
}

/// The most bytes a WAV of `max_seconds` can take: 48 kHz 16-bit stereo,
/// the most any accepted shape below 48 kHz needs, and a header. A higher
/// rate's answer longer than that is refused rather than read.
pub(crate) fn byte_limit(max_seconds: u32) -> u64 {
    u64::from(max_seconds) * u64::from(audio::RATE) * 2 * 2 + HEADER_SLACK
}

/// What is said of an answer: mentions, channel links and custom emoji
/// (`<@…>`, `<#…>`, `<:name:id>`) are left out, and it is cut at
/// [`MAX_INPUT_CHARS`].
pub(crate) fn spoken_text(answer: &str) -> String {
    let mut out = String::with_capacity(answer.len());
    let mut rest = answer;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let markup = tail.find('>').filter(|&end| {
            let inner = &tail[1..end];
            ["@", "#", ":", "a:"].iter().any(|p| inner.starts_with(p)) && !inner.contains(' ')
        });
        match markup {
            Some(end) => rest = &tail[end + 1..],
            None => {
                out.push('<');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    words.chars().take(MAX_INPUT_CHARS).collect()
}

/// Asks the endpoint to say `text` and reads its WAV.
pub(crate) async fn synthesize(
    s: &SpeechSettings,
    network: &NetworkSettings,
    key: Option<&Secret>,
    text: &str,
) -> Result<Pcm, SpeakError> {
    let url = format!("{}/audio/speech", s.base_url.trim_end_matches('/'));
    let body = serde_json::json!({
        "model": s.model,
        "voice": s.voice,
        "input": text,
        "response_format": "wav",
    });
    let headers = crate::net::bearer(key);
    let limit = byte_limit(s.max_seconds);
    let door = Fetcher::for_endpoint(network, &s.base_url, limit, s.allow_private)
        .with_timeout(Duration::from_secs(u64::from(s.timeout_seconds.max(1))));
    let answer = door
        .post(&url, PostBody::Json(body), &headers)
        .await
        .map_err(|e| match e {
            FetchError::TooLarge(limit) => SpeakError::Oversize(limit),
            e if e.is_private_refusal() => SpeakError::Private(e.to_string()),
            e => SpeakError::Fetch(e.to_string()),
        })?;
    if !(200..300).contains(&answer.status) {
        let snippet = String::from_utf8_lossy(&answer.body)
            .chars()
            .take(200)
            .collect();
        return Err(SpeakError::Status {
            status: answer.status,
            snippet,
        });
    }
    let content_type = answer
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !content_type.starts_with("audio/") {
        return Err(SpeakError::NotAudio(content_type));
    }
    Ok(audio::decode_wav(&answer.body)?)
}

/// The UTC day a spoken second counts against.
fn day(now: chrono::DateTime<chrono::Utc>) -> String {
    now.format("%Y-%m-%d").to_string()
}

impl Voice {
    /// Speaks `text`, the answer already posted to `asker` (who addressed
    /// the bot by voice), in this server's voice session — when
    /// `voice.speech.enabled`, nobody present asked for `no-voice-answers`,
    /// and the day's seconds are not spent. Whatever happens is journaled;
    /// nothing is said in the channel.
    pub(crate) async fn answer_aloud(
        &self,
        guild: GuildId,
        asker: UserId,
        question: MessageId,
        text: &str,
    ) {
        let settings = self.services.settings.for_guild(Some(guild));
        let s = &settings.voice.speech;
        if !s.enabled {
            return;
        }
        let Some(session) = self.session(guild) else {
            return;
        };
        let voice = session.session.voice_channel;
        let note = |summary: &str, reason: String| {
            self.services.journal.record(
                Entry::new(Kind::Voice, summary)
                    .place(Some(guild), Some(session.session.text_channel))
                    .message(question)
                    .reason(reason),
            );
        };
        let today = day(self.services.clock.now());
        if let Some(why) = self.not_now(guild, voice, asker, s, &today) {
            return note("did not answer aloud", why);
        }
        let words = spoken_text(text);
        if words.is_empty() {
            return;
        }
        let global = self.services.settings.global();
        let pcm = match synthesize(
            s,
            &global.network,
            self.services.secrets.speech_api_key.as_ref(),
            &words,
        )
        .await
        {
            Ok(pcm) => pcm,
            Err(e) => {
                let why = self.services.secrets.redact(&e.to_string());
                return note("did not answer aloud", why);
            }
        };
        match self.play(guild, voice, pcm, s, &today).await {
            Ok(reason) => note("answered aloud", reason),
            Err(e) => note(
                "did not answer aloud",
                self.services.secrets.redact(&e.to_string()),
            ),
        }
    }

    /// Why the endpoint is not even asked: someone present declines, or
    /// today's seconds are spent (or either cannot be read).
    fn not_now(
        &self,
        guild: GuildId,
        voice: ChannelId,
        asker: UserId,
        s: &SpeechSettings,
        today: &str,
    ) -> Option<String> {
        if let Some(why) = self.someone_declines(guild, voice, asker) {
            return Some(why);
        }
        let cap_ms = u64::from(s.max_seconds_per_day) * 1_000;
        match self.services.store.voice.speech_spent(guild, today) {
            Err(e) => Some(format!("could not read today's spoken seconds: {e}")),
            Ok(spent) if cap_ms.saturating_sub(spent) < FRAME_MS => Some(format!(
                "today's {} s of spoken answers (voice.speech.maxSecondsPerDay) are spent",
                s.max_seconds_per_day
            )),
            Ok(_) => None,
        }
    }

    /// Who is in the room now (the platform's view and the voice-state
    /// counts, and the asker): the reason to stay silent if one of them
    /// asked for `no-voice-answers`, or if that cannot be known.
    fn someone_declines(&self, guild: GuildId, voice: ChannelId, asker: UserId) -> Option<String> {
        let mut present: HashSet<UserId> = HashSet::from([asker]);
        if let Some((_, people)) = self
            .rooms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&voice)
        {
            present.extend(people.iter().copied());
        }
        let backend = self
            .backend
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(people) = backend.and_then(|b| b.people_in(guild, voice)) {
            present.extend(people);
        }
        let mut declining = 0;
        for user in present {
            match self.declines(user) {
                Ok(false) => {}
                Ok(true) => declining += 1,
                // Fail closed: speaking to someone who said no is worse than an unspoken answer.
                Err(e) => {
                    return Some(format!(
                        "could not read who asked for no-voice-answers or no-voice: {e}"
                    ));
                }
            }
        }
        (declining > 0).then(|| {
            format!(
                "{declining} {} in {voice} asked not to be answered aloud or not to be recorded \
                 (no-voice-answers, no-voice)",
                if declining == 1 { "person" } else { "people" }
            )
        })
    }

    /// Whether `user` asked not to be answered aloud, or not to take part in
    /// the bot's voice at all (`/voice optout`, the `no-voice` boundary):
    /// someone who keeps their voice from it should not have it talk at them.
    fn declines(&self, user: UserId) -> Result<bool, crate::store::StoreError> {
        let store = &self.services.store;
        Ok(store.people.has_boundary(user, Boundary::NoVoiceAnswers)?
            || store.people.has_boundary(user, Boundary::NoVoice)?)
    }

    /// Cuts `pcm` at `maxSeconds` and at what is left of today's `maxSecondsPerDay`,
    /// takes those seconds from the day's count, encodes and plays it: the
    /// journal's reason, or why it was not played.
    async fn play(
        &self,
        guild: GuildId,
        voice: ChannelId,
        pcm: Pcm,
        s: &SpeechSettings,
        today: &str,
    ) -> Result<String, SpeakError> {
        let (max_ms, cap_ms) = (
            u64::from(s.max_seconds) * 1_000,
            u64::from(s.max_seconds_per_day) * 1_000,
        );
        let full_ms = pcm.millis();
        // Whole frames: the count is what is played.
        let want_ms = full_ms.min(max_ms).div_ceil(FRAME_MS) * FRAME_MS;
        let granted = self
            .services
            .store
            .voice
            .speech_take(guild, today, want_ms, cap_ms)
            .map_err(|e| {
                SpeakError::Play(format!("could not count today's spoken seconds: {e}"))
            })?;
        let granted = granted / FRAME_MS * FRAME_MS;
        if granted == 0 {
            return Err(SpeakError::Play(
                "today's spoken seconds (voice.speech.maxSecondsPerDay) are spent".into(),
            ));
        }
        let frames = audio::opus_frames(&audio::to_discord(&pcm, granted))?;
        let backend = self
            .backend
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| SpeakError::Play("no voice front end".into()))?;
        let count = frames.len();
        backend
            .play(guild, frames)
            .await
            .map_err(|e| SpeakError::Play(e.to_string()))?;
        let mut reason = format!("{:.1} s of speech in {voice}", granted as f64 / 1_000.0);
        if granted < full_ms {
            let by = if granted < want_ms {
                "what is left of today's voice.speech.maxSecondsPerDay"
            } else {
                "voice.speech.maxSeconds"
            };
            reason.push_str(&format!(
                ", cut from {:.1} s at {by}",
                full_ms as f64 / 1_000.0
            ));
        }
        reason.push_str(&format!(" ({count} Opus frames)"));
        Ok(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_and_emoji_are_not_read_out_and_the_input_is_bounded() {
        assert_eq!(
            spoken_text("<@123> Ramen <:yum:99> sounds great, see <#7>. 2 < 3 > 1"),
            "Ramen sounds great, see . 2 < 3 > 1"
        );
        assert_eq!(spoken_text(&"a".repeat(10_000)).len(), MAX_INPUT_CHARS);
    }

    #[test]
    fn the_byte_limit_holds_max_seconds_of_48_khz_stereo_and_no_more() {
        assert_eq!(byte_limit(1), 192_000 + 4_096);
        assert_eq!(byte_limit(30), 30 * 192_000 + 4_096);
    }
}
