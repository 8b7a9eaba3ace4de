//! Voice segmentation throughput: seconds of 16 kHz mono audio segmented per
//! second of CPU, for one speaker fed in 20 ms ticks as songbird delivers it
//! (speech-like: 1.5 s phrases, 0.3 s pauses inside, 1 s between).
//!
//! `cargo bench --bench voice`. The ratio is printed first, then divan's
//! timings (samples per second: divide by 16,000 for audio seconds).

use std::time::Instant;

use ambient::voice::segment::{SAMPLE_RATE, SegmentConfig, Segmenter, quiet, tone};

fn conversation(seconds: u32) -> Vec<i16> {
    let mut audio = Vec::with_capacity((seconds * SAMPLE_RATE) as usize);
    while audio.len() < (seconds * SAMPLE_RATE) as usize {
        audio.extend(tone(1_500, 180.0, 7_000));
        audio.extend(quiet(300));
        audio.extend(tone(900, 240.0, 5_000));
        audio.extend(quiet(1_000));
    }
    audio.truncate((seconds * SAMPLE_RATE) as usize);
    audio
}

fn cfg() -> SegmentConfig {
    SegmentConfig {
        energy_threshold: 500,
        hangover_ms: 700,
        max_ms: 15_000,
        min_voiced_ms: 300,
    }
}

fn segment(audio: &[i16]) -> usize {
    let mut s = Segmenter::new(cfg());
    let mut n = 0;
    for frame in audio.chunks(320) {
        n += s.push(frame).len();
    }
    n
}

fn main() {
    let audio = conversation(600);
    let started = Instant::now();
    let utterances = segment(&audio);
    let cpu = started.elapsed().as_secs_f64();
    println!(
        "segmented 600 s of audio into {utterances} utterances in {:.3} s: {:.0} s of audio per second of CPU",
        cpu,
        600.0 / cpu
    );
    divan::main();
}

/// One minute of one speaker, in 20 ms ticks.
#[divan::bench]
fn one_minute_of_speech(bencher: divan::Bencher) {
    let audio = conversation(60);
    bencher
        .counter(divan::counter::ItemsCount::new(audio.len()))
        .bench(|| segment(divan::black_box(&audio)));
}
