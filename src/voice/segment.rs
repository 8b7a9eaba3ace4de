//! Voice-activity segmentation for one speaker: 16 kHz mono PCM in, whole
//! utterances out.
//!
//! Audio is judged in 20 ms frames by energy (RMS above
//! `voice.energyThreshold`). An utterance starts at the first voiced frame
//! and ends once `voice.silenceHangoverMs` of silence has followed it (the
//! hangover: a pause between words does not cut a sentence), or when it
//! reaches `voice.maxUtteranceSeconds` (then the next one starts at once).
//! The trailing silence is not part of the utterance. One with less than
//! `voice.minUtteranceMs` of voiced audio — a click, a cough, a keyboard —
//! is dropped. Offsets count samples since the speaker's stream began.

pub const SAMPLE_RATE: u32 = 16_000;
pub(crate) const FRAME: usize = (SAMPLE_RATE / 50) as usize; // 20 ms

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentConfig {
    pub energy_threshold: u32,
    pub hangover_ms: u32,
    pub max_ms: u32,
    pub min_voiced_ms: u32,
}

impl SegmentConfig {
    pub(crate) fn from_settings(v: &crate::settings::VoiceSettings) -> Self {
        Self {
            energy_threshold: v.energy_threshold,
            hangover_ms: v.silence_hangover_ms,
            max_ms: v.max_utterance_seconds * 1_000,
            min_voiced_ms: v.min_utterance_ms,
        }
    }
}

fn samples(ms: u32) -> u64 {
    u64::from(ms) * u64::from(SAMPLE_RATE) / 1_000
}

/// A finished utterance: `[start, end)` in samples, and its audio.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Utterance {
    pub start: u64,
    pub end: u64,
    pub samples: Vec<i16>,
}

impl Utterance {
    pub(crate) fn seconds(&self) -> f64 {
        (self.end - self.start) as f64 / f64::from(SAMPLE_RATE)
    }
}

/// The root mean square of a frame.
pub(crate) fn rms(frame: &[i16]) -> f64 {
    if frame.is_empty() {
        return 0.0;
    }
    let sum: f64 = frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    (sum / frame.len() as f64).sqrt()
}

pub struct Segmenter {
    cfg: SegmentConfig,
    /// Samples consumed so far (complete frames).
    pos: u64,
    /// A partial frame waiting for the rest.
    pending: Vec<i16>,
    /// The utterance being collected, if speech is on.
    current: Option<Utterance>,
    trailing_silence: u64,
    voiced: u64,
}

impl Segmenter {
    pub fn new(cfg: SegmentConfig) -> Self {
        Self {
            cfg,
            pos: 0,
            pending: Vec::with_capacity(FRAME),
            current: None,
            trailing_silence: 0,
            voiced: 0,
        }
    }

    /// Whether an utterance is being collected (memory is held for it).
    pub fn in_speech(&self) -> bool {
        self.current.is_some()
    }

    /// Samples held: the utterance in progress and a partial frame.
    pub(crate) fn held_samples(&self) -> usize {
        self.current.as_ref().map_or(0, |u| u.samples.len()) + self.pending.len()
    }

    /// Feeds audio; returns the utterances it completed.
    pub fn push(&mut self, audio: &[i16]) -> Vec<Utterance> {
        let mut done = Vec::new();
        let mut rest = audio;
        while !rest.is_empty() {
            let take = (FRAME - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() == FRAME {
                let frame = std::mem::take(&mut self.pending);
                done.extend(self.frame(&frame));
                self.pending = frame;
                self.pending.clear();
            }
        }
        done
    }

    /// Silence for `ms` (a speaker who sends nothing is silent).
    pub(crate) fn silence(&mut self, ms: u32) -> Vec<Utterance> {
        self.push(&vec![0; samples(ms) as usize])
    }

    /// The stream ended (the speaker left): whatever was being said is finished.
    pub(crate) fn finish(&mut self) -> Option<Utterance> {
        self.close()
    }

    fn frame(&mut self, frame: &[i16]) -> Option<Utterance> {
        let voiced = rms(frame) > f64::from(self.cfg.energy_threshold);
        let at = self.pos;
        self.pos += frame.len() as u64;
        match &mut self.current {
            None if voiced => {
                self.current = Some(Utterance {
                    start: at,
                    end: self.pos,
                    samples: frame.to_vec(),
                });
                self.trailing_silence = 0;
                self.voiced = frame.len() as u64;
                None
            }
            None => None,
            Some(u) => {
                u.samples.extend_from_slice(frame);
                u.end = self.pos;
                if voiced {
                    self.trailing_silence = 0;
                    self.voiced += frame.len() as u64;
                } else {
                    self.trailing_silence += frame.len() as u64;
                }
                let long = u.end - u.start >= samples(self.cfg.max_ms);
                if self.trailing_silence >= samples(self.cfg.hangover_ms) || long {
                    self.close()
                } else {
                    None
                }
            }
        }
    }

    fn close(&mut self) -> Option<Utterance> {
        let mut u = self.current.take()?;
        let trim = self.trailing_silence.min(u.samples.len() as u64);
        u.end -= trim;
        u.samples.truncate(u.samples.len() - trim as usize);
        let voiced = std::mem::take(&mut self.voiced);
        self.trailing_silence = 0;
        (voiced >= samples(self.cfg.min_voiced_ms)).then_some(u)
    }
}

/// A sine tone at `amplitude` for `ms` (synthetic speech stand-in for tests and benchmarks).
pub fn tone(ms: u32, hz: f64, amplitude: i16) -> Vec<i16> {
    (0..samples(ms))
        .map(|i| {
            (f64::from(amplitude)
                * (2.0 * std::f64::consts::PI * hz * i as f64 / f64::from(SAMPLE_RATE)).sin())
                as i16
        })
        .collect()
}

pub fn quiet(ms: u32) -> Vec<i16> {
    vec![0; samples(ms) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SegmentConfig {
        SegmentConfig {
            energy_threshold: 500,
            hangover_ms: 700,
            max_ms: 15_000,
            min_voiced_ms: 300,
        }
    }

    #[test]
    fn utterances_are_cut_at_the_right_offsets() {
        let mut s = Segmenter::new(cfg());
        let mut audio = quiet(1_000);
        audio.extend(tone(2_000, 220.0, 8_000));
        audio.extend(quiet(400)); // a pause shorter than the hangover: same utterance
        audio.extend(tone(600, 300.0, 8_000));
        audio.extend(quiet(1_000));
        audio.extend(tone(60, 1_000.0, 20_000)); // a click
        audio.extend(quiet(1_000));
        audio.extend(tone(1_500, 180.0, 6_000));
        audio.extend(quiet(800));
        // Fed in odd-sized pieces, as ticks arrive.
        let mut out = Vec::new();
        for chunk in audio.chunks(333) {
            out.extend(s.push(chunk));
        }
        let cuts: Vec<(u64, u64)> = out.iter().map(|u| (u.start, u.end)).collect();
        assert_eq!(
            cuts,
            vec![
                (16_000, 16_000 * 4),
                (16_000 * 6 + 960, 16_000 * 6 + 960 + 24_000)
            ]
        );
        assert_eq!(out[0].samples.len(), 48_000);
        assert!(!s.in_speech());
    }

    #[test]
    fn a_long_monologue_is_cut_at_the_maximum_and_carries_on() {
        let mut s = Segmenter::new(SegmentConfig {
            max_ms: 5_000,
            ..cfg()
        });
        let mut out = s.push(&tone(12_000, 200.0, 8_000));
        out.extend(s.silence(1_000));
        let lens: Vec<u64> = out.iter().map(|u| u.end - u.start).collect();
        assert_eq!(lens, vec![80_000, 80_000, 32_000]);
        assert_eq!(out[1].start, 80_000);
    }

    #[test]
    fn a_speaker_who_leaves_mid_sentence_is_finished() {
        let mut s = Segmenter::new(cfg());
        assert!(s.push(&tone(900, 200.0, 8_000)).is_empty());
        let u = s.finish().unwrap();
        assert_eq!((u.start, u.end), (0, 14_400));
    }
}
