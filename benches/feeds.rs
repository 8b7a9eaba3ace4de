//! Feeds people subscribe to at the scale: 500 subscriptions across
//! 100 servers on one process. What a fetch round and its deliveries cost
//! in CPU beyond the fetches themselves, and what a subscription costs in
//! memory and on disk.
//!
//! Two bots run in this process, each a real `App` on its own data
//! directory with a counting transport (each send counted, its nonce
//! honoured as Discord does; nothing goes over a network), each fetching
//! from its own local feed server of 100 RSS feeds of 20 items:
//!
//! - the *subscribed* bot: 100 servers, each with 5 subscriptions
//!   (`Feeds::add`, which fetches the feed and notes its items as seen),
//!   each feed subscribed by 5 servers;
//! - the *baseline* bot: the same 100 servers, one of which reads the same
//!   100 feeds as discovery sources, and no subscriptions: the fetches alone.
//!
//! A round: every feed gains one item (its body and ETag change), the
//! clock moves on 61 minutes, `Discovery::fetch_due` fetches every feed
//! (and, in the subscribed bot, feeds note the new item for each
//! subscription), then `Feeds::deliver_due` posts. Each round checks that
//! all 100 feeds were fetched in full and stored one new item, and that the
//! subscribed bot posted exactly one message, the new item, in each of the
//! 500 channels. CPU is the process's (`CLOCK_PROCESS_CPUTIME_ID`, every
//! thread, those that ended too) less the feed servers' threads.
//!
//! Memory is the growth from 0 subscriptions to 500 after the first round:
//! the Rust heap's live bytes (a counting allocator around mimalloc, the
//! bot's allocator, leaving out the feed servers and the transport's
//! bookkeeping) plus SQLite's own heap (`sqlite3_memory_used`), divided by
//! 500; and the same growth for the baseline bot's first fetches. The
//! store's part is the database's growth (pages, with the write-ahead
//! log's) and the feeds tables' own pages (`dbstat`), each divided by 500.
//!
//! `cargo bench --bench feeds`. `FEEDS_BENCH_SERVERS` (100),
//! `FEEDS_BENCH_PER_SERVER` (5), `FEEDS_BENCH_FEEDS` (100),
//! `FEEDS_BENCH_ITEMS` (20) and `FEEDS_BENCH_ROUNDS` (5) change the scale.

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
#[path = "support/feed_server.rs"]
mod feed_server;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ambient::app::{App, Parts};
use ambient::attention::Author;
use ambient::chat::{ChannelKind, ChatError, Delivered, Outgoing, Transport, Typing};
use ambient::clock::{Chance, Clock, ManualClock};
use ambient::feeds::manage::AddRequest;
use ambient::ids::{ChannelId, GuildId, MessageId, UserId, next_snowflake};
use ambient::settings::{Secrets, Settings};
use ambient::store::messages::StoredMessage;
use async_trait::async_trait;
use feed_server::FeedServer;

#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

/// How far the clock moves between rounds: every source is due again, and
/// the last round's posts are out of the hourly rates' window.
const BETWEEN_ROUNDS: chrono::Duration = chrono::Duration::minutes(61);

struct Scale {
    servers: usize,
    per_server: usize,
    feeds: usize,
    items: u64,
    rounds: usize,
}

impl Scale {
    fn from_env() -> Self {
        let env = |name: &str, default: usize| -> usize {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        let s = Self {
            servers: env("FEEDS_BENCH_SERVERS", 100),
            per_server: env("FEEDS_BENCH_PER_SERVER", 5),
            feeds: env("FEEDS_BENCH_FEEDS", 100),
            items: env("FEEDS_BENCH_ITEMS", 20) as u64,
            rounds: env("FEEDS_BENCH_ROUNDS", 5),
        };
        assert!(
            s.servers >= 1 && s.feeds >= 1 && s.items >= 1 && s.rounds >= 1,
            "FEEDS_BENCH_*: servers, feeds, items and rounds must be 1 or more"
        );
        assert!(
            s.per_server <= s.feeds,
            "FEEDS_BENCH_PER_SERVER ({}) must be at most FEEDS_BENCH_FEEDS ({}): a server subscribes to a feed once",
            s.per_server,
            s.feeds
        );
        s
    }

    fn subscriptions(&self) -> usize {
        self.servers * self.per_server
    }

    fn guild(&self, server: usize) -> GuildId {
        GuildId(10_000 + server as u64)
    }

    /// The channel of a server's `k`th subscription, and the feed it takes:
    /// consecutive feeds, so each feed has the same number of subscribers.
    fn subscription(&self, server: usize, k: usize) -> (ChannelId, usize) {
        let n = server * self.per_server + k;
        (ChannelId(100_000 + n as u64), n % self.feeds)
    }
}

/// What the counting transport saw: Discord's nonce memory and this
/// round's posts.
#[derive(Default)]
struct Platform {
    delivered: Delivered,
    posts: Mutex<Vec<(ChannelId, String)>>,
}

impl Platform {
    fn take(&self) -> Vec<(ChannelId, String)> {
        counting_alloc::outside(|| std::mem::take(&mut *self.posts.lock().unwrap()))
    }
}

struct CountingTransport {
    platform: Arc<Platform>,
    clock: Arc<ManualClock>,
}

#[async_trait]
impl Transport for CountingTransport {
    fn me(&self) -> Author {
        Author {
            id: UserId(1),
            name: "ambient".into(),
            is_bot: true,
        }
    }

    async fn send(&self, channel: ChannelId, m: &Outgoing) -> Result<MessageId, ChatError> {
        let now = self.clock.now();
        Ok(counting_alloc::outside(|| {
            let (id, first) = self
                .platform
                .delivered
                .first_or_record(&m.nonce, || MessageId(next_snowflake(now)));
            if first {
                let mut posts = self.platform.posts.lock().unwrap();
                posts.push((channel, m.content.clone()));
            }
            id
        }))
    }

    async fn react(&self, _: ChannelId, _: MessageId, _: &str) -> Result<(), ChatError> {
        Ok(())
    }

    fn typing(&self, _: ChannelId) -> Typing {
        Typing::none()
    }

    async fn channel_kind(&self, _: ChannelId) -> Result<ChannelKind, ChatError> {
        Ok(ChannelKind::Text)
    }

    async fn history(&self, _: ChannelId, _: usize) -> Result<Vec<StoredMessage>, ChatError> {
        Ok(Vec::new())
    }
}

struct Bot {
    app: Arc<App>,
    clock: Arc<ManualClock>,
    platform: Arc<Platform>,
    server: Arc<FeedServer>,
    /// Each subscribed channel's feed.
    channels: HashMap<ChannelId, usize>,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Bot {
    /// A bot with `scale`'s servers and channels, no feeds yet, and a feed
    /// server of its own.
    async fn start(scale: &Scale) -> Self {
        let clock = ManualClock::at_test_epoch();
        let server = Arc::new(FeedServer::start(scale.feeds, scale.items, clock.now()));
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data");
        let mut settings = Settings::default();
        settings.storage.data_dir = data.to_string_lossy().into_owned();
        settings.network.allow_private_hosts = true;
        // No model is asked anything here; a closed port answers at once if one were.
        settings.executive.ollama_base_url = "http://127.0.0.1:9".into();
        settings.executive.max_retries = 0;
        let platform = Arc::new(Platform::default());
        let transport: Arc<dyn Transport> = Arc::new(CountingTransport {
            platform: platform.clone(),
            clock: clock.clone(),
        });
        let app = App::build(
            Parts {
                settings,
                settings_source: None,
                secrets: Secrets::default(),
                clock: clock.clone(),
                chance: Chance::seeded(7),
                stand_in: None,
                sharing: ambient::store::Sharing::Shared,
            },
            |_| transport,
        )
        .await
        .expect("the bot builds");
        let now = clock.now();
        for s in 0..scale.servers {
            let guild = scale.guild(s);
            app.store()
                .messages()
                .upsert_guild(guild, &format!("Server {s}"), now)
                .expect("a server stored");
            for k in 0..scale.per_server {
                let (channel, _) = scale.subscription(s, k);
                app.store()
                    .messages()
                    .upsert_channel(channel, Some(guild), &format!("feed-{k}"), now)
                    .expect("a channel stored");
            }
        }
        Self {
            app,
            clock,
            platform,
            server,
            channels: HashMap::new(),
            db: data.join("ambient.db"),
            _dir: dir,
        }
    }

    /// These servers' subscriptions, added as `/feeds add` adds them (every
    /// other one with a card under its text).
    async fn subscribe(&mut self, scale: &Scale, servers: std::ops::Range<usize>) {
        for s in servers {
            for k in 0..scale.per_server {
                let (channel, feed) = scale.subscription(s, k);
                let req = AddRequest {
                    embed: k % 2 == 1,
                    ..AddRequest::new(self.server.feed_url(feed), channel)
                };
                let added = self
                    .app
                    .feeds
                    .add(scale.guild(s), UserId(7), req)
                    .await
                    .unwrap_or_else(|e| panic!("server {s}, feed {feed}: {e}"));
                assert_eq!(
                    (added.items, added.backfilled),
                    (scale.items as usize, 0),
                    "adding a feed notes what it lists and delivers nothing old"
                );
                self.channels.insert(channel, feed);
            }
        }
    }

    /// The feeds as one server's discovery sources: fetched, never delivered.
    fn read_as_sources(&self, scale: &Scale) {
        let now = self.clock.now();
        for feed in 0..scale.feeds {
            let url = self.server.feed_url(feed);
            self.app
                .store()
                .discovery()
                .add_guild_source(scale.guild(0), "rss", &url, "user:7", now)
                .expect("a source stored");
        }
    }
}

/// CPU time of this process (every thread, including those that ended)
/// less the feed servers' threads.
fn bot_cpu(servers: &[Arc<FeedServer>]) -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    let process = Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
    let helpers: Duration = servers.iter().map(|s| s.cpu()).sum();
    process.saturating_sub(helpers)
}

/// What a round cost, in CPU.
#[derive(Clone, Copy, Default)]
struct RoundCpu {
    fetch: Duration,
    deliver: Duration,
}

impl RoundCpu {
    fn total(&self) -> Duration {
        self.fetch + self.deliver
    }
}

/// One round: a new item in every feed, every feed fetched, and (with
/// subscriptions) the deliveries; checked, and its CPU measured.
async fn round(bot: &Bot, scale: &Scale, servers: &[Arc<FeedServer>]) -> RoundCpu {
    bot.server.next_round();
    bot.clock.advance(BETWEEN_ROUNDS);
    let start = bot_cpu(servers);
    let fetched = bot.app.discovery.fetch_due().await;
    let after_fetch = bot_cpu(servers);
    let delivered = if bot.channels.is_empty() {
        None
    } else {
        Some(bot.app.feeds.deliver_due().await)
    };
    let cpu = RoundCpu {
        fetch: after_fetch - start,
        deliver: bot_cpu(servers) - after_fetch,
    };
    assert_eq!(fetched.len(), scale.feeds, "every feed is due");
    for (spec, result) in &fetched {
        match result {
            Ok(r) => assert!(
                !r.not_modified && r.stored == 1,
                "{}: one new item stored, got {r:?}",
                spec.label()
            ),
            Err(e) => panic!("{}: {e}", spec.label()),
        }
    }
    check_posts(bot, delivered);
    cpu
}

/// Exactly one post in each subscribed channel: the newest item of its feed.
fn check_posts(bot: &Bot, delivered: Option<ambient::feeds::deliver::Round>) {
    let posts = bot.platform.take();
    let want = bot.channels.len();
    if let Some(d) = delivered {
        assert_eq!(
            (d.sent, d.held, d.failed),
            (want, 0, 0),
            "the round's deliveries"
        );
    }
    assert_eq!(posts.len(), want, "posts made this round");
    let newest = bot.server.newest();
    let mut seen = HashSet::new();
    for (channel, content) in &posts {
        let feed = bot.channels[channel];
        assert!(
            content.contains(&FeedServer::title(feed, newest)),
            "<#{channel}> (feed {feed}) got {content:?}, not item {newest}"
        );
        assert!(seen.insert(*channel), "<#{channel}> got two posts");
    }
}

fn main() {
    let scale = Scale::from_env();
    // One worker thread, as `ambient run` has (src/cli/runtime.rs).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(run(&scale));
}

/// What the bot holds in memory: its Rust heap and SQLite's.
#[derive(Clone, Copy)]
struct Memory {
    heap: i64,
    sqlite: i64,
}

impl Memory {
    fn total(&self) -> i64 {
        self.heap + self.sqlite
    }

    fn less(&self, before: &Memory) -> Memory {
        Memory {
            heap: self.heap - before.heap,
            sqlite: self.sqlite - before.sqlite,
        }
    }

    /// Per subscription: heap + SQLite = total.
    fn per(&self, n: usize) -> String {
        format!(
            "{} + {} = {}",
            per(self.heap, n),
            per(self.sqlite, n),
            per(self.total(), n)
        )
    }
}

fn memory() -> Memory {
    Memory {
        heap: counting_alloc::live(),
        // SAFETY: takes no arguments and reads SQLite's own counter.
        sqlite: unsafe { rusqlite::ffi::sqlite3_memory_used() },
    }
}

/// The database's size (its pages, the write-ahead log's included) and the
/// feeds tables' and their indexes' pages, in bytes.
fn stored(bot: &Bot) -> (i64, i64) {
    bot.app.store().file().flush();
    let conn =
        rusqlite::Connection::open_with_flags(&bot.db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap_or_else(|e| panic!("{}: {e}", bot.db.display()));
    let database: i64 = conn
        .query_row(
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            [],
            |r| r.get(0),
        )
        .expect("the database's size");
    let feeds: i64 = conn
        .query_row(
            "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN
               (SELECT name FROM sqlite_schema
                 WHERE tbl_name IN ('feed_subscriptions', 'feed_deliveries'))",
            [],
            |r| r.get(0),
        )
        .expect("the feeds tables' size");
    (database, feeds)
}

fn median(xs: &[Duration]) -> Duration {
    let mut v = xs.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Bytes per subscription, signed (memory given back shows as less than 0).
fn per(bytes: i64, n: usize) -> String {
    format!("{:.0} B", bytes as f64 / n as f64)
}

/// The baseline bot, its feeds fetched once and through one round: the
/// first round's CPU and what the bot grew by in memory meanwhile.
async fn baseline(scale: &Scale) -> (Bot, Duration, Memory) {
    let base = Bot::start(scale).await;
    let before = memory();
    base.read_as_sources(scale);
    let primed = base.app.discovery.fetch_due().await;
    assert_eq!(primed.len(), scale.feeds, "the baseline's first fetches");
    let first = round(&base, scale, std::slice::from_ref(&base.server)).await;
    (base, first.total(), memory().less(&before))
}

/// What subscribing cost, measured while the subscribed bot is set up.
struct Setup {
    wall: Duration,
    cpu: Duration,
    first: RoundCpu,
    /// Memory grown from no subscriptions to all, after the first round of all.
    grown: Memory,
    /// Memory the second half of the subscriptions added, each half after a round.
    second_half: Memory,
    /// The database's and the feeds tables' growth, in bytes.
    database: i64,
    feeds_tables: i64,
}

/// The subscribed bot: half its servers subscribe and a round runs, then
/// the other half and another round, so the second half's memory is what
/// more subscriptions cost once the first round's one-time costs are paid.
async fn subscribed(scale: &Scale, base: &Bot) -> (Bot, Setup) {
    let mut bot = Bot::start(scale).await;
    let servers = [base.server.clone(), bot.server.clone()];
    let (db_before, feeds_before) = stored(&bot);
    let before = memory();
    let half = scale.servers / 2;
    let (wall, cpu) = (Instant::now(), bot_cpu(&servers));
    bot.subscribe(scale, 0..half).await;
    let (mut setup_wall, mut setup_cpu) = (wall.elapsed(), bot_cpu(&servers) - cpu);
    // The first scheduled fetch of each feed notes nothing new.
    let primed = bot.app.discovery.fetch_due().await;
    assert_eq!(primed.len(), scale.feeds, "the first scheduled fetches");
    let nothing_old = bot.app.feeds.deliver_due().await;
    assert_eq!(
        nothing_old.sent, 0,
        "items listed before an add are not delivered"
    );
    assert!(bot.platform.take().is_empty(), "nothing old was posted");
    round(&bot, scale, &servers).await;
    let halfway = memory();
    let (wall, cpu) = (Instant::now(), bot_cpu(&servers));
    bot.subscribe(scale, half..scale.servers).await;
    setup_wall += wall.elapsed();
    setup_cpu += bot_cpu(&servers) - cpu;
    let first = round(&bot, scale, &servers).await;
    let after = memory();
    let (db_after, feeds_after) = stored(&bot);
    let setup = Setup {
        wall: setup_wall,
        cpu: setup_cpu,
        first,
        grown: after.less(&before),
        second_half: after.less(&halfway),
        database: db_after - db_before,
        feeds_tables: feeds_after - feeds_before,
    };
    (bot, setup)
}

async fn run(scale: &Scale) {
    let subs = scale.subscriptions();
    println!(
        "feeds: {subs} subscriptions ({} servers x {}) over {} feeds of {} items; {} measured rounds each",
        scale.servers, scale.per_server, scale.feeds, scale.items, scale.rounds
    );
    // The baseline first, its memory counted before the other bot starts.
    let (base, base_first, base_grown) = baseline(scale).await;
    let (bot, setup) = subscribed(scale, &base).await;
    println!(
        "first round: fetches alone {}, with subscriptions {} (delivering {})",
        ms(base_first),
        ms(setup.first.total()),
        ms(setup.first.deliver)
    );
    // Alternated, so both see the same machine.
    let servers = [base.server.clone(), bot.server.clone()];
    let (mut alone, mut rounds) = (Vec::new(), Vec::new());
    for n in 1..=scale.rounds {
        alone.push(round(&base, scale, &servers).await.total());
        let r = round(&bot, scale, &servers).await;
        println!(
            "round {n}: fetches alone {}, with subscriptions {} (delivering {})",
            ms(alone[n - 1]),
            ms(r.total()),
            ms(r.deliver)
        );
        rounds.push(r);
    }
    table(scale, &setup, median(&alone), &rounds, base_grown);
}

fn table(scale: &Scale, setup: &Setup, alone: Duration, rounds: &[RoundCpu], base_grown: Memory) {
    let of = |f: fn(&RoundCpu) -> Duration| median(&rounds.iter().map(f).collect::<Vec<_>>());
    let (with, fetching, delivering) = (of(RoundCpu::total), of(|r| r.fetch), of(|r| r.deliver));
    let subs = scale.subscriptions();
    let second = subs - (scale.servers / 2) * scale.per_server;
    println!();
    println!(
        "| {subs} subscriptions, {} servers | measured |",
        scale.servers
    );
    println!("|---|---:|");
    println!(
        "| set-up: {subs} `Feeds::add` (each fetches its feed) | {:.2} s wall, {} CPU |",
        setup.wall.as_secs_f64(),
        ms(setup.cpu)
    );
    let n = scale.rounds;
    println!(
        "| a round, the fetches alone (median of {n}) | {} |",
        ms(alone)
    );
    println!(
        "| a round with the subscriptions: fetches, noting, {subs} posts (median of {n}) | {} |",
        ms(with)
    );
    println!(
        "| of which noting the new items (its fetch step less the fetches alone) | {} |",
        ms(fetching.saturating_sub(alone))
    );
    println!(
        "| of which delivering (`deliver_due`, median) | {} |",
        ms(delivering)
    );
    println!(
        "| beyond the fetches (difference of the medians; target < 1 s) | {} |",
        ms(with.saturating_sub(alone))
    );
    println!(
        "| memory, 0 to {subs} subscriptions, per subscription: heap + SQLite | {} |",
        setup.grown.per(subs)
    );
    println!(
        "| the fetches alone grew by, per {subs}: heap + SQLite | {} |",
        base_grown.per(subs)
    );
    println!(
        "| memory per subscription of the last {second}: heap + SQLite (target < 2 KB) | {} |",
        setup.second_half.per(second)
    );
    println!(
        "| store per subscription: the database / the feeds tables | {} / {} |",
        per(setup.database, subs),
        per(setup.feeds_tables, subs)
    );
}
