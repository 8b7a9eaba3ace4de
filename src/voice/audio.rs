//! Audio a text-to-speech endpoint returns, made into what Discord plays:
//! a RIFF WAV (16-bit PCM, mono or stereo, 8–96 kHz) is read, resampled to
//! 48 kHz stereo, cut at a number of seconds and encoded as 20 ms Opus
//! frames (960 samples a channel), the last one padded with silence.
//!
//! The WAV is untrusted: every chunk length is checked against what is
//! there, and a `data` chunk that claims more than the file holds (a
//! streamed WAV cannot know its length: espeak-ng and OpenAI write a
//! placeholder) is read to the end of the file.

use opus2::{Application, Channels, Encoder};

/// Discord's voice audio: 48 kHz, stereo, 20 ms frames.
pub(crate) const RATE: u32 = 48_000;
pub(crate) const FRAME_MS: u64 = 20;
/// Samples per channel in one 20 ms frame at 48 kHz.
pub(crate) const FRAME_SAMPLES: usize = 960;
/// The largest Opus packet libopus writes for one frame.
const MAX_PACKET: usize = 4_000;
/// The sample rates accepted: telephone to studio.
const RATES: std::ops::RangeInclusive<u32> = 8_000..=96_000;

/// Decoded PCM: interleaved 16-bit samples.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pcm {
    pub rate: u32,
    pub channels: u16,
    pub samples: Vec<i16>,
}

impl Pcm {
    /// Samples per channel.
    pub(crate) fn frames(&self) -> usize {
        self.samples.len() / usize::from(self.channels.max(1))
    }

    /// How long it plays, in milliseconds (rounded up).
    pub(crate) fn millis(&self) -> u64 {
        (self.frames() as u64 * 1_000).div_ceil(u64::from(self.rate.max(1)))
    }
}

/// Why audio could not be played; the text goes to the journal.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum AudioError {
    #[error("not a RIFF WAVE file (it starts {0:?})")]
    NotWav(String),
    #[error("the WAV's {chunk} chunk is cut short")]
    Truncated { chunk: &'static str },
    #[error("the WAV has no {0} chunk")]
    Missing(&'static str),
    #[error("the WAV is {what}; only 16-bit PCM, mono or stereo, 8,000 to 96,000 Hz can be played")]
    Unsupported { what: String },
    #[error("the Opus encoder failed: {0}")]
    Opus(String),
}

/// Reads a RIFF WAV of 16-bit PCM.
pub(crate) fn decode_wav(bytes: &[u8]) -> Result<Pcm, AudioError> {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        let start = String::from_utf8_lossy(&bytes[..bytes.len().min(12)]).to_string();
        return Err(AudioError::NotWav(start));
    }
    let mut format: Option<(u16, u16, u32, u16)> = None;
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let declared =
            u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
                as usize;
        let body = at + 8;
        if id == b"data" {
            let (tag, channels, rate, bits) = format.ok_or(AudioError::Missing("fmt"))?;
            check_format(tag, channels, rate, bits)?;
            // A streamed WAV's placeholder length: what is there is the audio.
            let end = body.saturating_add(declared).min(bytes.len());
            let block = 2 * usize::from(channels);
            let end = body + (end - body) / block * block;
            let samples = bytes[body..end]
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect();
            return Ok(Pcm {
                rate,
                channels,
                samples,
            });
        }
        if body + declared > bytes.len() {
            return Err(AudioError::Truncated {
                chunk: if id == b"fmt " { "fmt" } else { "a" },
            });
        }
        if id == b"fmt " {
            if declared < 16 {
                return Err(AudioError::Truncated { chunk: "fmt" });
            }
            let f = &bytes[body..body + declared];
            let le16 = |i: usize| u16::from_le_bytes([f[i], f[i + 1]]);
            let mut tag = le16(0);
            // WAVE_FORMAT_EXTENSIBLE: the real format is the sub-format GUID's first two bytes.
            if tag == 0xFFFE && declared >= 26 {
                tag = le16(24);
            }
            let rate = u32::from_le_bytes([f[4], f[5], f[6], f[7]]);
            format = Some((tag, le16(2), rate, le16(14)));
        }
        // Chunks are padded to an even length.
        at = body + declared + (declared & 1);
    }
    Err(AudioError::Missing("data"))
}

fn check_format(tag: u16, channels: u16, rate: u32, bits: u16) -> Result<(), AudioError> {
    let what = if tag != 1 {
        format!("encoded as format {tag}, not PCM (1)")
    } else if bits != 16 {
        format!("{bits}-bit")
    } else if !(1..=2).contains(&channels) {
        format!("{channels}-channel")
    } else if !RATES.contains(&rate) {
        format!("at {rate} Hz")
    } else {
        return Ok(());
    };
    Err(AudioError::Unsupported { what })
}

/// `pcm` at 48 kHz stereo (interleaved), at most `max_ms` long. Linear
/// interpolation: speech from a TTS voice has little above 8 kHz, so the
/// simplest resampler is enough.
pub(crate) fn to_discord(pcm: &Pcm, max_ms: u64) -> Vec<i16> {
    let channels = usize::from(pcm.channels.max(1));
    let n = pcm.frames();
    if n == 0 || pcm.rate == 0 {
        return Vec::new();
    }
    let out_len = (n as u64 * u64::from(RATE)).div_ceil(u64::from(pcm.rate));
    let out_len = out_len.min(max_ms * u64::from(RATE) / 1_000) as usize;
    let step = f64::from(pcm.rate) / f64::from(RATE);
    let sample = |i: usize, c: usize| f64::from(pcm.samples[i.min(n - 1) * channels + c]);
    let mut out = Vec::with_capacity(out_len * 2);
    for k in 0..out_len {
        let pos = k as f64 * step;
        let i = pos as usize;
        let frac = pos - i as f64;
        for c in 0..2 {
            let c = c.min(channels - 1);
            let v = sample(i, c) + (sample(i + 1, c) - sample(i, c)) * frac;
            out.push(v.round() as i16);
        }
    }
    out
}

/// 48 kHz stereo interleaved samples as 20 ms Opus frames; the last is
/// padded with silence.
pub(crate) fn opus_frames(stereo: &[i16]) -> Result<Vec<Vec<u8>>, AudioError> {
    let mut encoder = Encoder::new(RATE, Channels::Stereo, Application::Voip)
        .map_err(|e| AudioError::Opus(e.to_string()))?;
    let mut frames = Vec::with_capacity(stereo.len().div_ceil(FRAME_SAMPLES * 2));
    let mut padded = [0i16; FRAME_SAMPLES * 2];
    for chunk in stereo.chunks(FRAME_SAMPLES * 2) {
        let input = if chunk.len() == padded.len() {
            chunk
        } else {
            padded[..chunk.len()].copy_from_slice(chunk);
            padded[chunk.len()..].fill(0);
            &padded[..]
        };
        let packet = encoder
            .encode_vec(input, MAX_PACKET)
            .map_err(|e| AudioError::Opus(e.to_string()))?;
        frames.push(packet);
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAV as a TTS endpoint writes it; `data_len` may lie (streamed).
    fn wav(rate: u32, channels: u16, samples: &[i16], data_len: Option<u32>) -> Vec<u8> {
        let len = (samples.len() * 2) as u32;
        let mut out = Vec::new();
        out.extend_from_slice(b"RIFF");
        out.extend_from_slice(&(36 + len).to_le_bytes());
        out.extend_from_slice(b"WAVE");
        // An unknown chunk before the format, as some writers add (LIST).
        out.extend_from_slice(b"LIST");
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(b"abc\0");
        out.extend_from_slice(b"fmt ");
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&channels.to_le_bytes());
        out.extend_from_slice(&rate.to_le_bytes());
        out.extend_from_slice(&(rate * 2 * u32::from(channels)).to_le_bytes());
        out.extend_from_slice(&(2 * channels).to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data_len.unwrap_or(len).to_le_bytes());
        for s in samples {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out
    }

    #[test]
    fn a_wav_of_any_common_shape_is_read_and_a_streamed_length_is_what_is_there() {
        let pcm = decode_wav(&wav(22_050, 1, &[1, -2, 3], None)).unwrap();
        assert_eq!(
            pcm,
            Pcm {
                rate: 22_050,
                channels: 1,
                samples: vec![1, -2, 3]
            }
        );
        // Stereo, with the streamed placeholder length and half a sample at the end.
        let mut bytes = wav(24_000, 2, &[1, 2, 3, 4], Some(0xFFFF_FFFF));
        bytes.push(7);
        let pcm = decode_wav(&bytes).unwrap();
        assert_eq!((pcm.channels, pcm.samples), (2, vec![1, 2, 3, 4]));
    }

    #[test]
    fn what_is_not_16_bit_pcm_wav_is_refused_saying_why() {
        assert_eq!(
            decode_wav(b"<html>nope</html>"),
            Err(AudioError::NotWav("<html>nope</".into()))
        );
        let mut float = wav(48_000, 1, &[0; 4], None);
        // The format tag (after RIFF, WAVE and the 12-byte LIST chunk): 3 is IEEE float.
        float[32] = 3;
        assert!(
            decode_wav(&float)
                .unwrap_err()
                .to_string()
                .contains("format 3, not PCM")
        );
        let six = wav(48_000, 6, &[0; 12], None);
        assert!(
            decode_wav(&six)
                .unwrap_err()
                .to_string()
                .contains("6-channel")
        );
        let slow = wav(4_000, 1, &[0; 4], None);
        assert!(
            decode_wav(&slow)
                .unwrap_err()
                .to_string()
                .contains("4000 Hz")
        );
        let cut = &wav(16_000, 1, &[0; 4], None)[..40];
        assert!(matches!(decode_wav(cut), Err(AudioError::Truncated { .. })));
        let headless = &wav(16_000, 1, &[], None)[..24];
        assert_eq!(decode_wav(headless), Err(AudioError::Missing("data")));
    }

    #[test]
    fn resampling_to_48_khz_stereo_keeps_the_duration_and_the_shape() {
        // One second of a slow ramp at 24 kHz mono.
        let samples: Vec<i16> = (0..24_000).map(|i| (i % 1_000) as i16).collect();
        let pcm = Pcm {
            rate: 24_000,
            channels: 1,
            samples,
        };
        let out = to_discord(&pcm, 60_000);
        assert_eq!(out.len(), 48_000 * 2, "one second, two channels");
        // Both channels carry the mono signal; halfway points are interpolated.
        assert_eq!(&out[0..6], &[0, 0, 1, 1, 1, 1]);
        assert_eq!(out[2 * 200], 100);
        assert_eq!(out[2 * 201], 101);
        // 44.1 kHz stereo: a length that does not divide evenly is rounded up.
        let pcm = Pcm {
            rate: 44_100,
            channels: 2,
            samples: vec![5, -5, 5, -5, 5, -5],
        };
        let out = to_discord(&pcm, 60_000);
        assert_eq!(out.len(), 2 * 4, "3 samples at 44.1 kHz are 3.27 at 48 kHz");
        assert!(out.chunks(2).all(|lr| lr == [5, -5]), "{out:?}");
    }

    #[test]
    fn the_cut_keeps_max_seconds_and_frames_are_twenty_milliseconds_that_decode() {
        let pcm = Pcm {
            rate: 16_000,
            channels: 1,
            samples: (0..16_000 * 3).map(|i| ((i * 37) % 2_000) as i16).collect(),
        };
        assert_eq!(pcm.millis(), 3_000);
        let cut = to_discord(&pcm, 1_000);
        assert_eq!(cut.len(), 48_000 * 2);
        let frames = opus_frames(&cut).unwrap();
        assert_eq!(frames.len(), 50);
        // 1.01 s: the last 10 ms are padded to a whole frame.
        let frames = opus_frames(&to_discord(&pcm, 1_010)).unwrap();
        assert_eq!(frames.len(), 51);
        let mut decoder = opus2::Decoder::new(RATE, Channels::Stereo).unwrap();
        let mut out = [0i16; FRAME_SAMPLES * 2];
        for f in &frames {
            assert_eq!(decoder.decode(f, &mut out, false).unwrap(), FRAME_SAMPLES);
        }
        assert!(opus_frames(&[]).unwrap().is_empty());
    }
}
