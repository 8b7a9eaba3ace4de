//! A year in real servers, through the real store: does the database stop
//! growing once the retention window has passed, and how long does one
//! batch of the sweep hold the writer?
//!
//! Each simulated day, every server gets `RETENTION_MESSAGES` (2,000) messages (as
//! the gateway stores them: grouped, with names), a routing line in the
//! journal for each (the bot writes one for nearly every message), a model
//! call and its journal line for one message in 20 (an answer or an
//! extraction) and a reaction for one in 10. At the end of the day the upkeep pass runs as the bot
//! runs it hourly (`Upkeep::pass`): the sweep with the default retention,
//! the context stream's old lines, the freed pages given back, the
//! write-ahead log emptied. Printed: the database's size at
//! sampled days, with retention (defaults) and without (every kind kept
//! forever), and the time each transaction of the upkeep held the writer.
//!
//! `cargo bench --bench retention`. `RETENTION_SERVERS` (default 20),
//! `RETENTION_MESSAGES` (a day, default 2,000) and `RETENTION_DAYS`
//! (default 365) make it smaller; `RETENTION_KEEP_ALL=0`
//! skips the run without retention.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ambient::clock::ManualClock;
use ambient::ids::{ChannelId, GuildId, MessageId, SnowflakeGen, UserId};
use ambient::journal::Journal;
use ambient::settings::{RetentionSettings, Settings, SettingsService};
use ambient::store::Store;
use ambient::store::messages::{Commit, Seen, StoredMessage};
use ambient::store::retention::{Holds, Pace};
use ambient::store::usage::UsageRecord;
use ambient::upkeep::Upkeep;
use ambient::vocab::journal::{Entry, Kind};
use chrono::{DateTime, TimeZone, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const CHANNELS: u64 = 5;
const PEOPLE: u64 = 200;
const SAMPLED: &[u64] = &[30, 60, 90, 120, 180, 240, 300, 365];

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A line of chat of a usual length (40–200 characters).
fn line(rng: &mut StdRng) -> String {
    const WORDS: &[&str] = &[
        "the", "raid", "tonight", "anyone", "seen", "new", "patch", "lol", "yeah", "build",
        "works", "on", "my", "machine", "coffee", "later", "meeting", "cat", "pictures", "please",
        "thanks", "idea", "server", "music", "playlist", "weekend", "trip", "game", "broken",
        "fixed",
    ];
    let n = rng.random_range(8..40);
    (0..n)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

struct Day<'a> {
    messages: u64,
    store: &'a Store,
    journal: &'a Journal,
    clock: &'a ManualClock,
    ids: &'a SnowflakeGen,
    servers: u64,
}

impl Day<'_> {
    /// One day's traffic in every server, spread over the day.
    fn live(&self, start: DateTime<Utc>, rng: &mut StdRng) {
        let step = 86_400_000 / self.messages as i64;
        for i in 0..self.messages {
            for s in 0..self.servers {
                let at = start + chrono::Duration::milliseconds(i as i64 * step + s as i64);
                self.clock.set(at);
                let guild = GuildId(1_000 + s);
                let channel = ChannelId(10_000 + s * CHANNELS + rng.random_range(0..CHANNELS));
                let person = rng.random_range(0..PEOPLE);
                let id = MessageId(self.ids.next(at));
                let m = StoredMessage::said(
                    id,
                    Some(guild),
                    channel,
                    UserId(100_000 + person),
                    format!("person{person}"),
                    line(rng),
                    at,
                );
                let seen = Seen {
                    message: &m,
                    guild_name: Some("a server"),
                    channel_name: Some("general"),
                    now: at,
                };
                self.store
                    .messages()
                    .insert_seen(&seen, Commit::Grouped)
                    .unwrap();
                // As the router writes it for a message nobody takes.
                self.journal.record(
                    Entry::new(Kind::Route, format!("message {id} from person{person} → pass"))
                        .place(Some(guild), Some(channel))
                        .message(id)
                        .reason("not addressed to the bot and below the unsolicited-reply bar; stored as context")
                        .salience(0.12)
                        .data(serde_json::json!({ "salience": "question +0.10 length +0.02 × recency 1.00" })),
                );
                if i % 20 == 0 {
                    self.store.usage().usage_append(&call(at, guild)).unwrap();
                    self.journal.record(
                        Entry::new(Kind::Reply, format!("answered person{person}"))
                            .place(Some(guild), Some(channel))
                            .message(id)
                            .reason("addressed by mention"),
                    );
                }
                if i % 10 == 5 {
                    self.store
                        .discovery()
                        .record_reaction(
                            id,
                            UserId(100_000 + (person + 1) % PEOPLE),
                            "👍",
                            Some(guild),
                            channel,
                            at,
                        )
                        .unwrap();
                }
            }
        }
        self.store.file().flush();
    }
}

fn call(at: DateTime<Utc>, guild: GuildId) -> UsageRecord {
    UsageRecord {
        id: 0,
        at,
        role: "reply".into(),
        source: "user".into(),
        guild: Some(guild),
        provider: "anthropic".into(),
        model: "claude".into(),
        pay_per_token: true,
        tokens_in: 2_400,
        tokens_out: 180,
        latency_ms: 900,
        outcome: "ok".into(),
        detail: String::new(),
    }
}

/// The database file and its write-ahead log, in MiB.
fn size_mib(dir: &std::path::Path) -> f64 {
    let bytes: u64 = ["ambient.db", "ambient.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum();
    bytes as f64 / (1024.0 * 1024.0)
}

/// Runs the year; returns (day, MiB) samples and the writer's hold times.
fn year(servers: u64, days: u64, settings: Settings) -> (Vec<(u64, f64)>, Holds) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let start = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
    let clock = ManualClock::new(start);
    let journal = Journal::new(store.journal(), clock.clone());
    let settings = Arc::new(SettingsService::new(
        settings,
        store.overrides(),
        clock.clone(),
    ));
    let upkeep =
        Upkeep::new((&store).into(), settings, journal.clone(), clock.clone()).with_pace(Pace {
            rest: Duration::ZERO,
            ..Pace::default()
        });
    let ids = SnowflakeGen::new();
    let day = Day {
        messages: env("RETENTION_MESSAGES", 2_000),
        store: &store,
        journal: &journal,
        clock: &clock,
        ids: &ids,
        servers,
    };
    let mut rng = StdRng::seed_from_u64(365);
    let mut sizes = Vec::new();
    let mut holds = Holds::default();
    let began = Instant::now();
    for d in 1..=days {
        let day_start = start + chrono::Duration::days(d as i64 - 1);
        day.live(day_start, &mut rng);
        clock.set(day_start + chrono::Duration::days(1));
        // The hourly pass, as the bot runs it (sweep, context stream, space
        // given back, log emptied); it times each of its transactions.
        holds.extend(upkeep.pass(&|| true).unwrap().holds);
        if SAMPLED.contains(&d) || d == days {
            let mib = size_mib(dir.path());
            eprintln!(
                "  day {d:>3}: {mib:>8.1} MiB  ({:.0} s so far)",
                began.elapsed().as_secs_f64()
            );
            sizes.push((d, mib));
        }
    }
    (sizes, holds)
}

fn main() {
    let servers = env("RETENTION_SERVERS", 20);
    let days = env("RETENTION_DAYS", 365);
    eprintln!(
        "{servers} servers × {} messages a day for {days} days, default retention:",
        env("RETENTION_MESSAGES", 2_000)
    );
    let began = Instant::now();
    let (kept, holds) = year(servers, days, Settings::default());
    let took = began.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "with retention: {} simulated days in {:.0} s; {} transactions of the upkeep (sweep batches of up to {} rows, fewer when one held it over {} ms; vacuum steps) held the writer p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        days,
        took.as_secs_f64(),
        holds.count(),
        Pace::default().batch,
        Pace::default().hold.as_millis(),
        ms(holds.quantile(0.5)),
        ms(holds.quantile(0.99)),
        ms(holds.longest()),
    );
    let at = |d: u64| kept.iter().find(|(day, _)| *day == d).map(|(_, m)| *m);
    if let (Some(d60), Some((last, end))) = (at(60), kept.last()) {
        println!(
            "size at day 60: {d60:.1} MiB, at day {last}: {end:.1} MiB ({:+.1} %)",
            (end / d60 - 1.0) * 100.0
        );
    }
    let mut forever = Settings::default();
    forever.storage.retention = RetentionSettings {
        messages_days: 0,
        journal_days: 0,
        usage_days: 0,
        reactions_days: 0,
        voice_days: 0,
        discovery_days: 0,
        garden_days: 0,
        ..RetentionSettings::default()
    };
    let without = (env("RETENTION_KEEP_ALL", 1) != 0).then(|| {
        eprintln!("the same without retention:");
        year(servers, days, forever).0
    });
    println!("| day | with default retention (MiB) | keeping everything (MiB) |");
    println!("|---:|---:|---:|");
    for (d, mib) in &kept {
        let other = without
            .as_ref()
            .and_then(|w| w.iter().find(|(day, _)| day == d))
            .map_or("—".to_string(), |(_, m)| format!("{m:.0}"));
        println!("| {d} | {mib:.0} | {other} |");
    }
}
