//! Memory at scale.
//!
//! 1. Search latency over 100,000 facts (50 servers × 2,000 facts, words from
//!    a 3,000-word vocabulary), 2,000 queries of two or three words in one
//!    server: p50 and p99, printed before divan's table.
//! 2. Storing one extracted fact, supersede check and journal line included,
//!    in a scope that already holds 40 to 140 facts (around the default
//!    guild threshold of 40, where compaction keeps it): divan's numbers.
//!
//! `cargo bench --bench memory`. The database is a real file in WAL mode.

#[path = "support/words.rs"]
mod words;
use words::word;

use std::sync::Arc;
use std::time::Instant;

use ambient::clock::{Chance, Clock, SystemClock};
use ambient::executive::{Executive, Prompts};
use ambient::ids::GuildId;
use ambient::journal::Journal;
use ambient::memory::search::{Reader, search};
use ambient::memory::{Memory, manual};
use ambient::settings::{Secrets, Settings, SettingsService};
use ambient::store::Store;
use ambient::vocab::fact::{FactKind, Importance, Scope};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const FACTS: usize = 100_000;
const GUILDS: u64 = 50;
const VOCABULARY: usize = 3_000;

fn sentence(rng: &mut StdRng, words: &[String]) -> String {
    let n = rng.random_range(6..14);
    (0..n)
        .map(|_| words[rng.random_range(0..words.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let words: Vec<String> = (0..VOCABULARY).map(word).collect();
    let mut rng = StdRng::seed_from_u64(7);
    let now = SystemClock.now();
    let started = Instant::now();
    let mut batch = Vec::with_capacity(FACTS);
    for i in 0..FACTS {
        let guild = GuildId(1 + (i as u64 % GUILDS));
        let importance = [Importance::Low, Importance::Medium, Importance::High][i % 3];
        let mut f = manual(
            Scope::guild(guild),
            FactKind::Fact,
            Some(importance),
            &sentence(&mut rng, &words),
            None,
            now,
        );
        f.updated_at = now - chrono::Duration::hours(rng.random_range(0..24 * 120));
        batch.push(f);
    }
    let refs: Vec<&_> = batch.iter().collect();
    store.memory().save_facts(&refs, &[]).unwrap();
    println!(
        "stored {FACTS} facts in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let mut latencies = Vec::new();
    let mut hits = 0;
    for _ in 0..2_000 {
        let guild = GuildId(rng.random_range(1..=GUILDS));
        let q = (0..rng.random_range(2..4))
            .map(|_| words[rng.random_range(0..VOCABULARY)].clone())
            .collect::<Vec<_>>()
            .join(" ");
        let t = Instant::now();
        hits += search(&store.memory(), Reader::Guild(guild), &q, now, 30.0, 12).len();
        latencies.push(t.elapsed());
    }
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "search over {FACTS} facts: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} results in 2000 queries)",
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
        hits
    );
    divan::main();
}

/// A memory service over a fresh store whose guild scope holds 40 facts.
fn memory_with_40() -> (Arc<Memory>, tempfile::TempDir, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let clock = Arc::new(SystemClock);
    let mut settings = Settings::default();
    settings.executive.ollama_base_url = "http://127.0.0.1:9".into();
    let service = Arc::new(SettingsService::new(
        settings,
        store.overrides(),
        clock.clone(),
    ));
    let journal = Journal::new(store.journal(), clock.clone());
    let exec = Arc::new(rt.block_on(Executive::new(ambient::executive::Services {
        settings: service.clone(),
        secrets: Secrets::default(),
        store: (&store).into(),
        journal: journal.clone(),
        clock: clock.clone(),
        chance: Chance::seeded(1),
        prompts: Prompts::builtin(),
        stand_in: None,
    })));
    let memory = Memory::new((&store).into(), service, journal, clock.clone(), exec);
    let words: Vec<String> = (0..VOCABULARY).map(word).collect();
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..40 {
        let f = manual(
            Scope::guild(GuildId(1)),
            FactKind::Fact,
            None,
            &sentence(&mut rng, &words),
            None,
            clock.now(),
        );
        memory.remember(f, None).unwrap();
    }
    (memory, dir, rt)
}

// One fact per sample, so the scope grows only from 40 to 140 facts over the run.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn store_one_extracted_fact_with_supersede_check(bencher: divan::Bencher) {
    let (memory, _dir, _rt) = memory_with_40();
    let words: Vec<String> = (0..VOCABULARY).map(word).collect();
    let mut rng = StdRng::seed_from_u64(9);
    bencher.bench_local(|| {
        // What an extraction yields: the model's typed fact, then the store with its checks.
        let raw = serde_json::json!({"facts": [{"kind": "fact", "importance": "medium", "scope": "guild",
                                                 "subject": "s", "content": sentence(&mut rng, &words), "sources": [1]}]});
        let parsed: ambient::memory::extract::Extraction = ambient::executive::tools::parse_args(&raw).unwrap();
        for x in parsed.facts {
            let f = manual(Scope::guild(GuildId(1)), x.kind, Some(x.importance), &x.content, None, SystemClock.now());
            memory.remember(f, None).unwrap();
        }
    });
}
