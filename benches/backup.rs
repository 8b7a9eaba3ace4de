//! A backup of a large live database while the bot stores 200 messages a second.
//!
//! Fills a database to `BACKUP_BENCH_MB` (default 1024) of messages, then
//! stores 200 messages a second through the real store (`Store::insert_message`,
//! each committed before the next: what an acknowledged message costs) while
//! `store::backup::create` copies it, as `ambient backup` does beside a running
//! bot. Prints the write latency before and during the backup (p50, p99, max),
//! how long the backup took, its size, whether `PRAGMA integrity_check` of the
//! copy is `ok`, and whether every message acknowledged before it began is in it.
//!
//! `cargo bench --bench backup` (`BACKUP_BENCH_MB=256 cargo bench --bench backup`
//! for a quicker run). The database is a real file in a temporary directory.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ambient::ids::{ChannelId, GuildId, MessageId, UserId};
use ambient::store::Store;
use ambient::store::messages::StoredMessage;
use rusqlite::{Connection, params};

const RATE: u64 = 200;
const BASE_ID: i64 = 1 << 50;

fn text(i: i64) -> String {
    const WORDS: [&str; 16] = [
        "garden", "river", "lantern", "quiet", "meadow", "copper", "signal", "harbor", "violet",
        "thunder", "pocket", "marble", "window", "orbit", "saddle", "ember",
    ];
    (0..90)
        .map(|k| WORDS[((i as usize).wrapping_mul(31) + k * 7 + k * k) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Fills `dir`'s database with messages until the file is `mb` MiB.
fn fill(dir: &std::path::Path, mb: u64) -> i64 {
    drop(Store::open(dir).unwrap());
    let db = dir.join("ambient.db");
    let mut conn = Connection::open(&db).unwrap();
    conn.pragma_update(None, "synchronous", "OFF").unwrap();
    let started = Instant::now();
    let mut id = 0i64;
    loop {
        let tx = conn.transaction().unwrap();
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .unwrap();
            for _ in 0..20_000 {
                id += 1;
                stmt.execute(params![
                    id,
                    1 + id % 20,
                    100 + id % 200,
                    1000 + id % 5000,
                    format!("person{}", id % 5000),
                    text(id),
                    1_700_000_000_000i64 + id * 1000
                ])
                .unwrap();
            }
        }
        tx.commit().unwrap();
        let size = std::fs::metadata(&db).unwrap().len()
            + std::fs::metadata(dir.join("ambient.db-wal")).map_or(0, |m| m.len());
        if size >= mb * 1024 * 1024 {
            break;
        }
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let size = std::fs::metadata(&db).unwrap().len();
    println!(
        "filled: {id} messages, {:.0} MiB, in {:.0?}",
        size as f64 / 1048576.0,
        started.elapsed()
    );
    id
}

fn percentiles(name: &str, lat: &mut [Duration]) {
    lat.sort();
    let at = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "{name}: {} writes, p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        lat.len(),
        at(0.50),
        at(0.99),
        lat[lat.len() - 1]
    );
}

fn main() {
    let mb: u64 = std::env::var("BACKUP_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    fill(&dir, mb);

    let store = Store::open(&dir).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Duration)>();
    let writer = {
        let (stop, acked) = (stop.clone(), acked.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let due = start + Duration::from_micros(n * 1_000_000 / RATE);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let id = BASE_ID + n as i64;
                let m = StoredMessage::said(
                    MessageId(id as u64),
                    Some(GuildId(1)),
                    ChannelId(100),
                    UserId(7),
                    "ada",
                    text(id),
                    chrono::Utc::now(),
                );
                let t = Instant::now();
                store.messages().insert_message(&m).unwrap();
                let took = t.elapsed();
                acked.store(n + 1, Ordering::SeqCst);
                tx.send((t, took)).unwrap();
                n += 1;
            }
            n
        })
    };
    std::thread::sleep(Duration::from_secs(3));
    let acked_before = acked.load(Ordering::SeqCst);
    let began = Instant::now();
    let out = home.path().join("bench.backup");
    let made = ambient::store::backup::create(&dir, &out, chrono::Utc::now()).unwrap();
    let ended = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();

    let (mut before, mut during) = (Vec::new(), Vec::new());
    for (t, took) in rx.try_iter() {
        if t < began {
            before.push(took);
        } else if t < ended {
            during.push(took);
        }
    }
    println!(
        "backup: {:.0} MiB in {:.1?} ({:.0} MiB/s), schema {}",
        made.bytes as f64 / 1048576.0,
        ended - began,
        made.bytes as f64 / 1048576.0 / (ended - began).as_secs_f64(),
        made.schema
    );
    percentiles("write latency before the backup", &mut before);
    percentiles("write latency during the backup", &mut during);
    let achieved = during.len() as f64 / (ended - began).as_secs_f64();
    println!(
        "stored during the backup: {:.0} msg/s (asked {RATE})",
        achieved
    );

    let copy = Connection::open(&out).unwrap();
    let ok: String = copy
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    let in_copy: i64 = copy
        .query_row(
            "SELECT count(*) FROM messages WHERE id >= ?1 AND id < ?2",
            params![BASE_ID, BASE_ID + acked_before as i64],
            |r| r.get(0),
        )
        .unwrap();
    let live = Connection::open(dir.join("ambient.db")).unwrap();
    let in_live: i64 = live
        .query_row(
            "SELECT count(*) FROM messages WHERE id >= ?1",
            [BASE_ID],
            |r| r.get(0),
        )
        .unwrap();
    println!("integrity_check of the copy: {ok}");
    println!(
        "acknowledged before the backup began: {acked_before}, in the copy: {in_copy}; \
         stored in all: {written}, in the live database: {in_live}"
    );
    assert_eq!(ok, "ok");
    assert_eq!(
        in_copy as u64, acked_before,
        "a message acknowledged before the backup is missing"
    );
    assert_eq!(in_live as u64, written, "a message was lost");
}
