//! A garden pass over 25,000, 50,000 and 100,000 facts (50 servers, so each
//! server's memory grows with the total): candidate finding (MinHash
//! banding, keyword index) and the database work (merges with their
//! breadcrumbs, prunes, links, journal lines). No model calls. The time per
//! fact should stay roughly flat as the memory grows — linear, not quadratic.
//!
//! `cargo bench --bench garden`.

#[path = "support/words.rs"]
mod words;
use words::word;

use std::time::Instant;

use ambient::clock::{Clock, SystemClock};
use ambient::garden::pass;
use ambient::ids::GuildId;
use ambient::journal::Journal;
use ambient::memory::fact::{FactKind, Importance, Scope};
use ambient::memory::manual;
use ambient::settings::GardenSettings;
use ambient::store::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const GUILDS: u64 = 50;
const VOCABULARY: usize = 3_000;

/// `n` facts: 3 % near-duplicates of an earlier fact in the same server, 5 % long faded.
fn fill(store: &Store, n: usize, rng: &mut StdRng) {
    let words: Vec<String> = (0..VOCABULARY).map(word).collect();
    let now = SystemClock.now();
    let mut batch = Vec::with_capacity(n);
    let mut texts: Vec<Vec<String>> = vec![Vec::new(); GUILDS as usize];
    for i in 0..n {
        let g = i as u64 % GUILDS;
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
        if rng.random_range(0..100) < 5 {
            f.importance = Importance::Low;
            f.last_seen_at = now - chrono::Duration::days(300);
        }
        batch.push(f);
    }
    let refs: Vec<&_> = batch.iter().collect();
    store.save_facts(&refs, &[]).unwrap();
}

fn main() {
    let settings = GardenSettings::default();
    let mut previous: Option<f64> = None;
    println!("garden pass (no model calls), {GUILDS} servers:");
    for n in [25_000usize, 50_000, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let clock = std::sync::Arc::new(SystemClock);
        let journal = Journal::new(store.clone(), clock.clone());
        let mut rng = StdRng::seed_from_u64(7);
        fill(&store, n, &mut rng);
        let now = clock.now();
        let started = Instant::now();
        let mut total = pass::Tended::default();
        for g in 1..=GUILDS {
            total.add(&pass::tend(
                &store,
                &journal,
                &settings,
                Some(GuildId(g)),
                now,
            ));
        }
        let secs = started.elapsed().as_secs_f64();
        let per_fact = secs * 1e6 / n as f64;
        let growth = previous.map_or(String::new(), |p| {
            format!(", ×{:.2} per fact vs the previous size", per_fact / p)
        });
        println!(
            "  {n:>7} facts: {secs:.2} s ({per_fact:.1} µs/fact{growth}) — merged {}, pruned {}, linked {}",
            total.merged, total.pruned, total.linked
        );
        previous = Some(per_fact);
    }
}
