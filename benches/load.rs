//! The load harness: the real `ambient run` (release build) against the
//! tests' fake Discord serving N servers of M channels, a scripted model
//! answering at once, and a driver sending messages at a given rate. It
//! reports what one message and one server cost the bot's process:
//!
//! - RSS once the servers have arrived and the bot is idle, and after the load;
//! - CPU per unaddressed message (stored, routed, let pass) and per
//!   addressed one (a reply: memory, prompt, the model's HTTP, the send),
//!   each less the CPU the idle bot spends in the same time; and per
//!   unaddressed message sent back to back (`--burst`, 2,000), where one
//!   wake-up finds several waiting, so the gap between the two is what
//!   waking once per message costs on this machine;
//! - routing latency, p50 and p99: from a mention saying hello being sent
//!   on the gateway to the greeting reflex's 👋 arriving at Discord, mixed
//!   into a later round of unaddressed load (at most [`MIXED_MESSAGES`]);
//! - whether anything was dropped (every message sent is in the bot's store).
//!
//! The CPU figures are the running bot's: a warm-up round of unaddressed
//! messages goes first, unmeasured (`--warmup`, 2,000), because the first
//! messages after idle read back the code start-up gave back
//! (`discord::startup_pages`) and fill SQLite's page cache.
//!
//! Run (see the README's "Performance"):
//!
//! ```sh
//! cargo bench --bench load -- --guilds 1000 --channels 2 --rate 200 --messages 6000 --addressed 200
//! ```
//!
//! RSS per idle server is the difference between two runs' idle RSS
//! (`--guilds 1` and `--guilds 1000`) divided by the servers added.
//! Figures come from /proc, so this runs on Linux only.
//!
//! The bot's threads and this process's are kept on CPUs of their own
//! (see [`Placement`]); `--shared` lets them mix. CPU time is the sum of
//! the scheduler's nanosecond counts over the bot's threads
//! (`/proc/PID/task/TID/schedstat`), not the 10 ms ticks of `/proc/PID/stat`.
//! `AMBIENT_BIN=path` runs another build (or a wrapper script that `exec`s
//! it under a profiler, or with other environment) in place of cargo's.
//! It must `exec`: a wrapper that runs the bot as its child is measured and
//! stopped in the bot's place, and the bot is left running.
//!
//! `--shaped` sends Discord-shaped payloads (`discord_shapes`): people's
//! messages of 2–6 KB with their members, mentions, replies, embeds and
//! pictures, and the test server as a GUILD_CREATE of 500 members and 100
//! channels (the extra servers of `--guilds` keep their small shape). The
//! `payloads` line says which were sent and their sizes.
//!
//! `--hello-every 0` leaves out the round with hellos. At the end the bot
//! is stopped with SIGTERM, as an operator stops it, so a profiler that
//! wraps it (callgrind, heaptrack) writes its figures: the README's
//! "Performance" says how instructions per message were counted that way.
//! The release binary has no symbols: for a profiler to name functions, run
//! `cargo bench --profile profiling --bench load`, the same code with them.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::bot::Bot;
use support::fake_discord::{self, ALICE, BOB, BOT, FakeDiscord, extra_channel, extra_guild};
use support::model_server::Scripted;

/// How long the idle bot's CPU is watched, to take its rate off the rounds':
/// long enough to take in its periodic work (heartbeats, the shard loop).
const IDLE_WINDOW: Duration = Duration::from_secs(10);

/// The most messages of the round with hello mentions in it.
const MIXED_MESSAGES: u32 = 4_000;

struct Args {
    guilds: u32,
    channels: u32,
    rate: f64,
    warmup: u32,
    messages: u32,
    /// Unaddressed messages sent back to back after the paced ones.
    burst: u32,
    addressed: u32,
    hello_every: u32,
    /// The bot and the load generator on CPUs of their own (see [`Placement`]).
    apart: bool,
    /// Discord-shaped payloads (`discord_shapes`): 2–6 KB messages, a test
    /// server of 500 members and 100 channels.
    shaped: bool,
}

fn args() -> Args {
    let mut a = Args {
        guilds: 1,
        channels: 2,
        rate: 200.0,
        warmup: 2_000,
        messages: 4_000,
        burst: 2_000,
        addressed: 200,
        hello_every: 20,
        apart: true,
        shaped: false,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let value = || argv.get(i + 1).map(String::as_str).unwrap_or("");
        let bad = |what: &str| -> ! {
            eprintln!("load: {what} needs a number (got {:?})", value());
            std::process::exit(2)
        };
        match argv[i].as_str() {
            "--guilds" => a.guilds = value().parse().unwrap_or_else(|_| bad("--guilds")),
            "--channels" => a.channels = value().parse().unwrap_or_else(|_| bad("--channels")),
            "--rate" => a.rate = value().parse().unwrap_or_else(|_| bad("--rate")),
            "--warmup" => a.warmup = value().parse().unwrap_or_else(|_| bad("--warmup")),
            "--messages" => a.messages = value().parse().unwrap_or_else(|_| bad("--messages")),
            "--burst" => a.burst = value().parse().unwrap_or_else(|_| bad("--burst")),
            "--addressed" => a.addressed = value().parse().unwrap_or_else(|_| bad("--addressed")),
            "--hello-every" => {
                a.hello_every = value().parse().unwrap_or_else(|_| bad("--hello-every"))
            }
            "--shared" => {
                a.apart = false;
                i += 1;
                continue;
            }
            "--shaped" => {
                a.shaped = true;
                i += 1;
                continue;
            }
            // `cargo bench` passes --bench; anything else is a mistake worth saying.
            "--bench" => {
                i += 1;
                continue;
            }
            other => {
                eprintln!(
                    "load: unknown flag {other}; flags: --guilds N --channels M --rate MSG_PER_S \
                     --warmup N --messages N --burst N --addressed N --hello-every K --shared --shaped"
                );
                std::process::exit(2)
            }
        }
        i += 2;
    }
    a.guilds = a.guilds.max(1);
    a.channels = a.channels.max(1);
    a
}

/// The CPU time each of the bot's threads has had so far, in nanoseconds,
/// from the scheduler's own count (`/proc/PID/task/TID/schedstat`). The
/// process's `stat` counts in 10 ms ticks, which made the idle rate taken
/// off every figure (tens of milliseconds over the idle window) uncertain
/// by a fifth.
struct Cpu(std::collections::HashMap<u32, u64>);

impl Cpu {
    fn of(pid: u32) -> Self {
        Self(
            threads(pid)
                .filter_map(|tid| {
                    let path = format!("/proc/{pid}/task/{tid}/schedstat");
                    let stat = std::fs::read_to_string(path).ok()?;
                    Some((tid, stat.split_whitespace().next()?.parse().ok()?))
                })
                .collect(),
        )
    }

    /// The CPU time spent since `before`: by threads seen then, what they
    /// added; by threads started since, all of theirs. (A thread that ended
    /// in between is not counted: the runtime's idle blocking threads end
    /// after 10 s of nothing to do.)
    fn since(&self, before: &Cpu) -> Duration {
        let ns: u64 = self
            .0
            .iter()
            .map(|(tid, now)| now.saturating_sub(before.0.get(tid).copied().unwrap_or(0)))
            .sum();
        Duration::from_nanos(ns)
    }
}

/// The bot process's resident memory in KiB, from /proc.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Where the bot and the load generator (this process: the fake Discord,
/// the model server, the driver) run. Apart, the generator keeps to the
/// first CPU it may use and the bot to the others. On loopback a message is
/// delivered in the sender's context, and the scheduler pulls the woken bot
/// onto the generator's CPU and back, so shared, the bot's CPU time
/// includes caches refilled after each move and the generator's work
/// evicting them; from a real network the bot's threads stay where they
/// ran. Shared (`--shared`) measures the noisier case.
struct Placement {
    /// (the generator's CPUs, the bot's); `None` when shared or one CPU.
    cpus: Option<(Vec<usize>, Vec<usize>)>,
}

impl Placement {
    fn new(apart: bool) -> Self {
        let allowed = allowed_cpus();
        let cpus = (apart && allowed.len() >= 2).then(|| {
            let (generator, bot) = allowed.split_at(1);
            (generator.to_vec(), bot.to_vec())
        });
        Self { cpus }
    }

    /// Pins every thread of the bot and of this process (threads started
    /// later inherit their starter's CPUs).
    fn apply(&self, bot: u32) {
        if let Some((generator, mine)) = &self.cpus {
            pin_threads(bot, mine);
            pin_threads(std::process::id(), generator);
        }
    }

    fn describe(&self) -> String {
        match &self.cpus {
            Some((generator, bot)) => {
                format!("load generator on CPU {generator:?}, bot on CPU {bot:?}")
            }
            None => "bot and load generator on any CPU (shared)".into(),
        }
    }
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set; the call writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|c| libc::CPU_ISSET(*c, &set))
            .collect()
    }
}

/// The ids of `pid`'s threads now (none if it has ended).
fn threads(pid: u32) -> impl Iterator<Item = u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
}

/// Puts every thread of `pid` on `cpus`.
fn pin_threads(pid: u32, cpus: &[usize]) {
    // SAFETY: as in `allowed_cpus`.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in cpus {
            libc::CPU_SET(*c, &mut set);
        }
        set
    };
    for tid in threads(pid) {
        // SAFETY: `set` outlives the call; a thread that has just ended
        // makes it fail, which is harmless.
        unsafe {
            libc::sched_setaffinity(tid as libc::pid_t, std::mem::size_of_val(&set), &set);
        }
    }
}

/// Where the `n`th message goes: the servers in turn (the test guild is
/// server 0 when there are no others), then their channels.
fn place(a: &Args, n: u32) -> (u64, u64) {
    if a.guilds == 1 {
        let channel = [fake_discord::GENERAL, fake_discord::RANDOM][(n % 2) as usize];
        return (fake_discord::GUILD, channel);
    }
    let server = n % (a.guilds - 1);
    let channel = (n / (a.guilds - 1)) % a.channels;
    (extra_guild(server), extra_channel(server, channel))
}

/// Sends `count` messages at `a.rate` per second from `from` on, `text(n)` each.
fn drive(d: &FakeDiscord, a: &Args, from: u32, count: u32, text: impl Fn(u32) -> String) -> u64 {
    let gap = Duration::from_secs_f64(1.0 / a.rate.max(0.1));
    drive_every(d, a, from, count, gap, text)
}

/// Sends `count` messages `gap` apart from `from` on (no gap: as fast as
/// the fake gateway takes them), `text(n)` each.
fn drive_every(
    d: &FakeDiscord,
    a: &Args,
    from: u32,
    count: u32,
    gap: Duration,
    text: impl Fn(u32) -> String,
) -> u64 {
    let start = Instant::now();
    let mut last = 0;
    for k in 0..count {
        let n = from + k;
        let (guild, channel) = place(a, n);
        let who = if n.is_multiple_of(2) { ALICE } else { BOB };
        last = d.say_in(guild, channel, who, &text(n));
        let due = start + gap * (k + 1);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    last
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let a = args();
    let extra = a.guilds.saturating_sub(1);
    let discord = FakeDiscord::start_with_guilds(extra, a.channels);
    discord.with(|w| w.shaped = a.shaped);
    let started = Instant::now();
    // No dev guild: commands register globally, as in production. The
    // hourly cap per channel at its most, so every question is answered.
    let bot = Bot::start_on(
        discord,
        json!({
            "discord": {"devGuildId": null},
            "permissions": {"replies": {"maxMessagesPerHour": 3600}},
        }),
        &[],
        // The one info line the harness waits for: start-up has settled.
        "warn,ambient::discord::startup_pages=info",
    );
    bot.model
        .fallback(Scripted::text("A fine question; here is a short answer."));
    let pid = bot.pid();
    let placement = Placement::new(a.apart);
    placement.apply(pid);
    let store = bot.store();
    let deadline = Instant::now() + Duration::from_secs(600);
    while store.messages().known_guilds().map_or(0, |g| g.len()) < a.guilds as usize {
        assert!(
            Instant::now() < deadline,
            "not every server arrived:\n{}",
            bot.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let ready = started.elapsed();
    // Idle means start-up has settled: backfill and first ticks done, and the
    // pages only start-up ran given back (`discord::startup_pages`).
    while !bot.log().contains("start-up settled") {
        assert!(
            Instant::now() < deadline,
            "start-up never settled:\n{}",
            bot.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let idle_rss = rss_kib(pid);
    let (idle_cpu_0, idle_t0) = (Cpu::of(pid), Instant::now());
    std::thread::sleep(IDLE_WINDOW);
    let idle_rate = Cpu::of(pid).since(&idle_cpu_0).as_secs_f64() / idle_t0.elapsed().as_secs_f64();

    // A warm-up round, not measured: the first messages after idle read
    // back the code start-up gave back and fill SQLite's page cache, costs
    // a running bot pays once, not per message.
    let chatter = |n: u32| format!("message {n}: the tide was high at the harbour this morning");
    let last = drive(&bot.discord, &a, 0, a.warmup, chatter);
    assert!(
        bot.wait_stored(last),
        "the last warm-up message was never stored"
    );
    let warm_rss = rss_kib(pid);
    // Threads started during the warm-up inherited their starter's CPUs;
    // pinned again in case one was started before the first pinning.
    placement.apply(pid);

    // Unaddressed load: chatter nobody addressed, measured alone.
    let (cpu_0, t0) = (Cpu::of(pid), Instant::now());
    let last = drive(&bot.discord, &a, a.warmup, a.messages, chatter);
    assert!(bot.wait_stored(last), "the last message was never stored");
    let spent = Cpu::of(pid).since(&cpu_0).as_secs_f64() - idle_rate * t0.elapsed().as_secs_f64();
    let unaddressed_ms = spent * 1_000.0 / f64::from(a.messages);

    // The same chatter back to back: each wake-up finds several messages
    // waiting, so what waking costs (the system calls around a wait, the
    // caches refilled after the CPU idled or ran something else) is shared
    // among them. The gap between this and the paced figure is what this
    // machine charges for waking the bot once per message.
    let from = a.warmup + a.messages;
    let burst_ms = (a.burst > 0).then(|| {
        let (cpu_b, tb) = (Cpu::of(pid), Instant::now());
        let last = drive_every(&bot.discord, &a, from, a.burst, Duration::ZERO, chatter);
        assert!(
            bot.wait_stored(last),
            "the last message sent at once was never stored"
        );
        let spent =
            Cpu::of(pid).since(&cpu_b).as_secs_f64() - idle_rate * tb.elapsed().as_secs_f64();
        spent * 1_000.0 / f64::from(a.burst)
    });

    // Routing latency under the same load: the chatter again, with a hello
    // mention every `hello_every` messages, each answered by the greeting
    // reflex's 👋.
    let hello = |n: u32| a.hello_every > 0 && n.is_multiple_of(a.hello_every);
    let mixed = if a.hello_every > 0 {
        a.messages.min(MIXED_MESSAGES)
    } else {
        0
    };
    let from = from + a.burst;
    let hellos = (from..from + mixed).filter(|n| hello(*n)).count() as u32;
    if mixed > 0 {
        let last = drive(&bot.discord, &a, from, mixed, |n| {
            if hello(n) {
                format!("<@{BOT}> hello")
            } else {
                chatter(n)
            }
        });
        assert!(bot.wait_stored(last), "the last message was never stored");
    }
    let latencies = hello_latencies(&bot, hellos);

    // Addressed load: each a question the model answers.
    let before = bot.discord.with(|w| w.find("POST", "/messages").len());
    let (cpu_1, t1) = (Cpu::of(pid), Instant::now());
    drive(&bot.discord, &a, from + mixed, a.addressed, |n| {
        format!("<@{BOT}> question {n}: what should we name the new harbour cat?")
    });
    let answered = bot.discord.wait_until(600, |w| {
        w.find("POST", "/messages").len() >= before + a.addressed as usize
    });
    let spent = Cpu::of(pid).since(&cpu_1).as_secs_f64() - idle_rate * t1.elapsed().as_secs_f64();
    let addressed_ms = spent * 1_000.0 / f64::from(a.addressed.max(1));
    let after_rss = rss_kib(pid);
    let stored = people_stored(&bot);
    let sent = u64::from(from + mixed + a.addressed);

    println!(
        "servers {} × {} channels, {} msg/s",
        a.guilds, a.channels, a.rate
    );
    println!("placement                   {}", placement.describe());
    println!("payloads                    {}", payloads(&bot, a.shaped));
    println!("ready after                 {:.1} s", ready.as_secs_f64());
    println!(
        "idle RSS                    {:.1} MB",
        idle_rss as f64 / 1024.0
    );
    println!(
        "idle CPU                    {:.2} % of a core",
        idle_rate * 100.0
    );
    println!(
        "CPU per unaddressed message {unaddressed_ms:.3} ms ({} messages)",
        a.messages
    );
    if let Some(burst_ms) = burst_ms {
        println!(
            "  back to back              {burst_ms:.3} ms ({} messages sent at once)",
            a.burst
        );
    }
    println!(
        "CPU per addressed message   {addressed_ms:.3} ms ({} answered: {answered})",
        a.addressed
    );
    println!(
        "routing latency (hello → 👋) p50 {:.1} ms, p99 {:.1} ms ({} timed)",
        percentile(&latencies, 0.5).as_secs_f64() * 1_000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1_000.0,
        latencies.len()
    );
    println!(
        "RSS after warm-up           {:.1} MB ({} messages)",
        warm_rss as f64 / 1024.0,
        a.warmup
    );
    println!(
        "RSS after load              {:.1} MB",
        after_rss as f64 / 1024.0
    );
    println!("people's messages stored    {stored} of {sent} sent");
    // Stopped as an operator stops it (not killed), so a profiler wrapping
    // the bot (callgrind, heaptrack) writes its figures.
    bot.stop();
}

/// What the gateway sent: the shape, and the people's messages' sizes.
fn payloads(bot: &Bot, shaped: bool) -> String {
    let sizes: Vec<usize> = bot.discord.with(|w| {
        w.log_of("MESSAGE_CREATE")
            .iter()
            .filter(|m| m["author"]["id"] != BOT.to_string().as_str())
            .map(|m| m.to_string().len())
            .collect()
    });
    let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
    format!(
        "{}: people's MESSAGE_CREATE {:.1} KB on average ({:.1}–{:.1} KB)",
        if shaped {
            "Discord-shaped (--shaped)"
        } else {
            "the tests' own"
        },
        mean / 1024.0,
        sizes.iter().min().copied().unwrap_or(0) as f64 / 1024.0,
        sizes.iter().max().copied().unwrap_or(0) as f64 / 1024.0,
    )
}

/// For each hello mention, the time from its dispatch to the bot's 👋 arriving.
fn hello_latencies(bot: &Bot, expected: u32) -> Vec<Duration> {
    bot.discord.wait_until(120, |w| {
        w.find("PUT", "/reactions/").len() >= expected as usize
    });
    let mut out: Vec<Duration> = bot.discord.with(|w| w.reaction_latencies());
    out.sort();
    out
}

/// People's messages in the bot's store (read beside the running bot, as WAL allows).
fn people_stored(bot: &Bot) -> u64 {
    let db =
        rusqlite::Connection::open(bot.home.data_dir().join("ambient.db")).expect("open the store");
    let n: i64 = db
        .query_row(
            "SELECT count(*) FROM messages WHERE author_is_bot = 0",
            [],
            |r| r.get(0),
        )
        .expect("count messages");
    n as u64
}
