//! A garden pass over 25,000, 50,000 and 100,000 facts (50 servers, so each
//! server's memory grows with the total): candidate finding (MinHash
//! banding, keyword index) and the database work (merges with their
//! breadcrumbs, prunes, links, journal lines). No model calls. The time per
//! fact should stay roughly flat as the memory grows — linear, not quadratic.
//! Contradiction candidates (pairs of facts on one subject) are timed apart.
//! Timed with divan; what each pass did is printed first.
//!
//! `cargo bench --bench garden`.

#[path = "support/words.rs"]
mod words;
use words::word;

use ambient::clock::{Clock, SystemClock};
use ambient::garden::pass;
use ambient::ids::GuildId;
use ambient::journal::Journal;
use ambient::memory::manual;
use ambient::settings::GardenSettings;
use ambient::store::Store;
use ambient::vocab::fact::{FactKind, Importance, Scope};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const GUILDS: u64 = 50;
const VOCABULARY: usize = 3_000;

/// `n` facts over `guilds` servers: 3 % near-duplicates of an earlier fact in the same server, 5 % long
/// faded, 30 % about one of 40 subjects (what contradiction candidates are grouped by).
fn fill(store: &Store, n: usize, guilds: u64, rng: &mut StdRng) {
    let words: Vec<String> = (0..VOCABULARY).map(word).collect();
    let now = SystemClock.now();
    let mut batch = Vec::with_capacity(n);
    let mut texts: Vec<Vec<String>> = vec![Vec::new(); guilds as usize];
    for i in 0..n {
        let g = i as u64 % guilds;
        let earlier = &texts[g as usize];
        let text = if !earlier.is_empty() && rng.random_range(0..100) < 3 {
            format!("{}!", earlier[rng.random_range(0..earlier.len())])
        } else {
            (0..rng.random_range(8..14))
                .map(|_| words[rng.random_range(0..VOCABULARY)].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        texts[g as usize].push(text.clone());
        let mut f = manual(
            Scope::guild(GuildId(1 + g)),
            FactKind::Fact,
            Some(Importance::Medium),
            &text,
            None,
            now,
        );
        if rng.random_range(0..100) < 30 {
            f.subject = Some(format!("topic {}", rng.random_range(0..40)));
        }
        if rng.random_range(0..100) < 5 {
            f.importance = Importance::Low;
            f.last_seen_at = now - chrono::Duration::days(300);
        }
        batch.push(f);
    }
    let refs: Vec<&_> = batch.iter().collect();
    store.memory().save_facts(&refs, &[]).unwrap();
}

fn pass(
    store: &Store,
    journal: &Journal,
    settings: &GardenSettings,
    guilds: u64,
    unchanged: bool,
) -> pass::Tended {
    let now = SystemClock.now();
    let mut total = pass::Tended::default();
    for g in 1..=guilds {
        total.add(&pass::tend(
            &store.into(),
            journal,
            settings,
            Some(GuildId(g)),
            now,
            unchanged,
        ));
    }
    total
}

/// A store holding `n` facts over `guilds` servers (outside the timing).
fn fixture(n: usize, guilds: u64) -> (Store, Journal, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let journal = Journal::new(store.journal(), std::sync::Arc::new(SystemClock));
    fill(&store, n, guilds, &mut StdRng::seed_from_u64(7));
    (store, journal, dir)
}

fn main() {
    // What one pass does at each size, before divan's timings.
    let settings = GardenSettings::default();
    for (n, guilds) in [
        (25_000, GUILDS),
        (50_000, GUILDS),
        (100_000, GUILDS),
        (100_000, 1),
    ] {
        let (store, journal, _dir) = fixture(n, guilds);
        let t = pass(&store, &journal, &settings, guilds, false);
        let found = pass::candidates(
            &store.memory(),
            &settings,
            GuildId(1),
            "words people said lately",
            SystemClock.now(),
            &Default::default(),
        );
        println!(
            "{n} facts in {guilds} server(s): merged {}, pruned {}, linked {}; {} contradiction candidates in server 1",
            t.merged,
            t.pruned,
            t.linked,
            found.contradictions.len()
        );
    }
    divan::main();
}

/// The whole pass (candidate finding and database work) over `n` facts in 50 servers.
#[divan::bench(args = [25_000, 50_000, 100_000], sample_count = 3, sample_size = 1)]
fn pass_over_50_servers(bencher: divan::Bencher, n: usize) {
    let settings = GardenSettings::default();
    bencher
        .with_inputs(|| fixture(n, GUILDS))
        .bench_values(|(store, journal, _dir)| pass(&store, &journal, &settings, GUILDS, false));
}

/// The same 100,000 facts in one server: the worst case for candidate finding.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn pass_over_one_big_server(bencher: divan::Bencher) {
    let settings = GardenSettings::default();
    bencher
        .with_inputs(|| fixture(100_000, 1))
        .bench_values(|(store, journal, _dir)| pass(&store, &journal, &settings, 1, false));
}

/// The next pass when nothing changed: only the decay check runs.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn pass_when_nothing_changed(bencher: divan::Bencher) {
    let settings = GardenSettings::default();
    bencher
        .with_inputs(|| {
            let f = fixture(100_000, GUILDS);
            pass(&f.0, &f.1, &settings, GUILDS, false);
            f
        })
        .bench_values(|(store, journal, _dir)| pass(&store, &journal, &settings, GUILDS, true));
}

/// Contradiction candidates in one server of 100,000 facts (~750 on each of 40 subjects), with no
/// early stop: every pair the per-subject cap lets through is looked at — the worst case.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn candidates_in_one_big_server(bencher: divan::Bencher) {
    let settings = GardenSettings {
        max_candidates: u32::MAX,
        ..GardenSettings::default()
    };
    bencher
        .with_inputs(|| fixture(100_000, 1))
        .bench_values(|(store, _journal, _dir)| {
            pass::candidates(
                &store.memory(),
                &settings,
                GuildId(1),
                "words people said lately",
                SystemClock.now(),
                &Default::default(),
            )
            .contradictions
            .len()
        });
}
