//! `metrics.bind`: `/metrics`, `/healthz` and `/readyz` of the real
//! `ambient run` against the fake Discord, scraped over 127.0.0.1 — by the
//! test itself and by a real Prometheus — and systemd's READY/WATCHDOG/
//! STOPPING read from a socket the test binds.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::net::UnixDatagram;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOT, FakeDiscord, GENERAL};
use crate::support::health::{endpoints_of, get, wait_status};
use crate::support::home::Home;
use crate::support::model_server::ModelServer;
use crate::support::model_server::Scripted;

/// The settings that serve the endpoints on any free loopback port.
fn metrics_on() -> serde_json::Value {
    json!({"metrics": {"bind": "127.0.0.1:0"}})
}

/// Waits (bounded: a reconnect's back-off included) until a scrape of
/// `/metrics` satisfies `moved`.
fn wait_scrape(addr: &str, moved: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, scrape) = get(addr, "/metrics");
        if moved(&scrape) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the counters did not move:\n{scrape}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of the series `line_start` (a name and its labels) in a scrape.
fn value(scrape: &str, line_start: &str) -> f64 {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// `/healthz` answers while the gateway is down and `/readyz` says why it
/// is not ready (503) until the gateway connects (200); a message arriving
/// then moves `ambient_messages_seen_total` and the route it took.
#[test]
fn readiness_follows_the_gateway_and_a_message_moves_the_counters() {
    let discord = FakeDiscord::start();
    discord.gateway_down();
    let bot = Bot::spawn(discord, metrics_on(), &[], "ambient=info,serenity=warn");
    let addr = endpoints_of(&bot);
    assert_eq!(get(&addr, "/healthz"), (200, "ok\n".into()));
    let (status, why) = get(&addr, "/readyz");
    assert_eq!(status, 503, "{why}");
    assert!(why.starts_with("gateway: "), "{why}");

    bot.discord.gateway_up();
    bot.wait_registered();
    bot.wait_guild(crate::support::fake_discord::GUILD);
    assert_eq!(wait_status(&addr, "/readyz", 200), "ready\n");

    let (status, before) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    assert!(before.contains("ambient_gateway_connected 1\n"), "{before}");
    let seen = value(&before, "ambient_messages_seen_total");
    let passed = value(&before, "ambient_messages_routed_total{route=\"pass\"}");
    let id = bot
        .discord
        .say(GENERAL, ALICE, "anyone seen the new trailer");
    assert!(bot.wait_stored(id));
    wait_scrape(&addr, |after| {
        value(after, "ambient_messages_seen_total") == seen + 1.0
            && value(after, "ambient_messages_routed_total{route=\"pass\"}") == passed + 1.0
    });

    // A mention answered by the model: a call of the reply role, and its route.
    bot.model.fallback(Scripted::text("Hi Alice."));
    let calls = "ambient_model_calls_total{role=\"reply\",outcome=\"ok\"}";
    let replied = "ambient_messages_routed_total{route=\"executive:reply\"}";
    let (_, before) = get(&addr, "/metrics");
    let (calls_before, replied_before) = (value(&before, calls), value(&before, replied));
    let asked = bot.discord.say(
        GENERAL,
        ALICE,
        &format!("<@{BOT}> what did you think of the trailer?"),
    );
    wait_answered(&bot, asked);
    wait_scrape(&addr, |after| {
        value(after, calls) == calls_before + 1.0 && value(after, replied) == replied_before + 1.0
    });

    bot.discord.gateway_down();
    let why = wait_status(&addr, "/readyz", 503);
    assert!(why.starts_with("gateway: "), "{why}");
    let (_, scrape) = get(&addr, "/metrics");
    assert!(scrape.contains("ambient_gateway_connected 0\n"), "{scrape}");
}

/// A bind beyond loopback is refused at start, naming the key.
#[test]
fn metrics_beyond_loopback_are_refused() {
    let home = Home::new(json!({"metrics": {"bind": "0.0.0.0:9184"}}));
    let out = home.run(&["settings", "check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("metrics.bind: must be empty (off) or a loopback IP address"),
        "{stdout}"
    );
}

/// With `NOTIFY_SOCKET` and `WATCHDOG_USEC` set, as systemd sets them for a
/// `Type=notify` service with `WatchdogSec`, the bot sends READY=1 once the
/// gateway is connected, WATCHDOG=1 at half the period, and STOPPING=1 on
/// SIGTERM.
#[test]
fn systemd_is_told_ready_watchdog_and_stopping() {
    let discord = FakeDiscord::start();
    let model = ModelServer::start();
    let home = Home::new(json!({
        "discord": {"apiBaseUrl": discord.url, "devGuildId": crate::support::fake_discord::GUILD.to_string()},
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9", "maxRetries": 0},
    }));
    let path = home.path().join("notify.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let child = home
        .command(&["run"])
        .env("DISCORD_TOKEN", "test-token-abc")
        .env("OPENAI_BASE_URL", model.openai_base())
        .env("OPENAI_API_KEY", "sk-test-bot")
        .env("NOTIFY_SOCKET", &path)
        .env("WATCHDOG_USEC", "400000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child = Reaped(child);
    let read = || {
        let mut buf = [0u8; 256];
        let n = socket.recv(&mut buf).expect("a notification within 30 s");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    while !got.contains(&"READY=1".to_string()) {
        assert!(Instant::now() < deadline, "no READY=1 in 30 s: {got:?}");
        got.push(read());
    }
    assert!(
        discord.with(|w| w.identifies) >= 1,
        "READY=1 before the gateway connected: {got:?}"
    );
    let watchdogs = (0..2).map(|_| read()).collect::<Vec<_>>();
    assert_eq!(watchdogs, ["WATCHDOG=1", "WATCHDOG=1"]);
    let pid = child.0.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while read() != "STOPPING=1" {
        assert!(
            Instant::now() < deadline,
            "no STOPPING=1 in 10 s after SIGTERM"
        );
    }
}

/// Kills the child when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        // Already gone when the test stopped it: nothing to kill.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A real Prometheus, on loopback, with the README's scrape config (its
/// target and interval changed), scrapes the bot; a message arriving moves
/// `ambient_messages_seen_total` as Prometheus's query API reads it.
#[test]
fn prometheus_scrapes_the_bot_and_sees_a_message_arrive() {
    let Ok(found) = std::process::Command::new("prometheus")
        .arg("--version")
        .output()
    else {
        eprintln!(
            "SKIPPED prometheus_scrapes_the_bot_and_sees_a_message_arrive: prometheus is not \
             installed (apt-get install prometheus; ./dev.sh test installs it where it can)"
        );
        return;
    };
    assert!(found.status.success());
    let bot = Bot::start(metrics_on());
    let target = endpoints_of(&bot);
    let readme = crate::support::readme::block("A Prometheus scrape config for it", "yaml");
    assert!(readme.contains("scrape_interval: 15s") && readme.contains("\"127.0.0.1:9184\""));
    let config = readme
        .replace("scrape_interval: 15s", "scrape_interval: 200ms")
        .replace("127.0.0.1:9184", &target);
    let dir = bot.home.path().join("prometheus");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let web = free_loopback_port();
    let _prometheus = Reaped(
        std::process::Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .unwrap(),
    );

    let query = |q: &str| -> Option<f64> {
        let (status, body) = get(&web, &format!("/api/v1/query?query={q}"));
        if status != 200 {
            return None;
        }
        let doc: serde_json::Value = serde_json::from_str(&body).ok()?;
        doc["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    };
    let wait = |q: &str, want: &dyn Fn(f64) -> bool| -> f64 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if TcpStream::connect(&web).is_ok()
                && let Some(v) = query(q)
                && want(v)
            {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "Prometheus never answered {q} as wanted:\n{}",
                std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // The only target: the bot, scraped.
    assert_eq!(wait("up", &|v| v == 1.0), 1.0);
    let before = wait("ambient_messages_seen_total", &|_| true);
    let id = bot
        .discord
        .say(GENERAL, ALICE, "did anyone try the new ramen place");
    assert!(bot.wait_stored(id));
    wait("ambient_messages_seen_total", &|v| v == before + 1.0);
}

/// A free port on 127.0.0.1, as `host:port` (Prometheus takes no port 0).
fn free_loopback_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// Each discovery fetch is counted by outcome: a feed fetched, fetched
/// again (304), and one that fails.
#[tokio::test]
async fn feed_fetches_are_counted_by_outcome() {
    use ambient::clock::Clock as _;
    use ambient::discovery::sources::{SourceKind, SourceSpec};
    let feeds = crate::support::feed_server::FeedServer::start_at(
        ambient::clock::ManualClock::at_test_epoch().now(),
    );
    let mut s = crate::support::world::settings();
    s.network.allow_private_hosts = true;
    let world = crate::support::world::World::start(s).await;
    let spec =
        |path: &str| SourceSpec::new(SourceKind::Rss, &format!("{}{path}", feeds.url)).unwrap();
    let discovery = &world.app.discovery;
    assert!(discovery.fetch_source(&spec("/blog/rss.xml")).await.is_ok());
    assert!(discovery.fetch_source(&spec("/blog/rss.xml")).await.is_ok());
    assert!(discovery.fetch_source(&spec("/fail.xml")).await.is_err());
    let scrape = world
        .app
        .journal
        .metrics()
        .encode(&ambient::metrics::State::default())
        .unwrap();
    for outcome in ["ok", "not_modified", "failed"] {
        let series = format!("ambient_feed_fetches_total{{outcome=\"{outcome}\"}}");
        assert_eq!(value(&scrape, &series), 1.0, "{series} in:\n{scrape}");
    }
}

/// Waits (bounded) until `bot` has answered the message `asked` in #general.
fn wait_answered(bot: &Bot, asked: u64) {
    assert!(
        bot.discord
            .wait_until(20, |w| w.sent_in(GENERAL).iter().any(
                |b| b["message_reference"]["message_id"] == json!(asked.to_string())
            )),
        "{}",
        bot.log()
    );
}

/// One mention answered: its wait from the gateway to Discord accepting the
/// answer is one observation of `ambient_reply_seconds`; the reply role's
/// budget left is its cap less the tokens the answer cost; the store's
/// writes of it were timed (each group, each wait for the connection).
#[test]
fn an_answered_mention_is_timed_and_spends_the_reply_budget() {
    let cap = 50_000.0;
    let bot = Bot::start(json!({
        "metrics": {"bind": "127.0.0.1:0"},
        "budget": {"dailyTokens": {"reply": cap as u64}},
    }));
    let addr = endpoints_of(&bot);
    let (_, before) = get(&addr, "/metrics");
    assert!(
        before.contains("ambient_reply_seconds_count 0\n"),
        "{before}"
    );
    let left = "ambient_budget_tokens_left{role=\"reply\"}";
    assert_eq!(value(&before, left), cap, "{before}");
    bot.model.fallback(Scripted::text("Hi Alice."));
    let asked = bot
        .discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> are you there?"));
    wait_answered(&bot, asked);
    let tokens = |s: &str| {
        value(
            s,
            "ambient_model_tokens_total{role=\"reply\",direction=\"input\"}",
        ) + value(
            s,
            "ambient_model_tokens_total{role=\"reply\",direction=\"output\"}",
        )
    };
    wait_scrape(&addr, |after| {
        tokens(after) > 0.0
            && value(after, left) == cap - tokens(after)
            && value(after, "ambient_reply_seconds_count") == 1.0
            && value(after, "ambient_reply_seconds_bucket{le=\"60.0\"}") == 1.0
            && value(after, "ambient_store_write_group_seconds_count") > 0.0
            && value(after, "ambient_store_wait_seconds_count") > 0.0
    });
}

/// Sends Discord answers 429 are counted by the scope it gives, and each
/// one sent again is a retry.
#[test]
fn send_429s_and_their_retries_are_counted() {
    let bot = Bot::start(metrics_on());
    let addr = endpoints_of(&bot);
    bot.discord
        .storm_sends(2, Duration::from_millis(200), false);
    bot.model.fallback(Scripted::text("Here after the wait."));
    let asked = bot
        .discord
        .say(GENERAL, ALICE, &format!("<@{BOT}> still there?"));
    wait_answered(&bot, asked);
    wait_scrape(&addr, |s| {
        value(s, "ambient_discord_rate_limited_total{scope=\"user\"}") == 2.0
            && value(s, "ambient_discord_retries_total") == 2.0
    });
}

/// Shard 0's gauge follows its connection: 1, then 0 while the gateway is
/// down, then 1 once it is back; and its sessions are counted by shard,
/// a dropped connection resumed as `how="resumed"`.
#[test]
fn a_shard_reads_down_while_its_gateway_is_and_its_sessions_count() {
    let bot = Bot::start(metrics_on());
    let addr = endpoints_of(&bot);
    let shard = "ambient_gateway_shard_connected{shard=\"0\"}";
    let sessions = |s: &str, how: &str| {
        value(
            s,
            &format!("ambient_gateway_sessions_total{{shard=\"0\",how=\"{how}\"}}"),
        )
    };
    let (_, scrape) = get(&addr, "/metrics");
    assert!(scrape.contains(&format!("{shard} 1\n")), "{scrape}");
    assert_eq!(sessions(&scrape, "identified"), 1.0, "{scrape}");

    bot.discord.gateway_down();
    wait_scrape(&addr, |s| value(s, shard) == 0.0 && s.contains(shard));
    let (_, down) = get(&addr, "/metrics");
    let before = sessions(&down, "identified") + sessions(&down, "resumed");
    bot.discord.gateway_up();
    wait_scrape(&addr, |s| {
        value(s, shard) == 1.0 && sessions(s, "identified") + sessions(s, "resumed") == before + 1.0
    });

    let (_, up) = get(&addr, "/metrics");
    let resumed = sessions(&up, "resumed");
    bot.discord.drop_connection(None);
    wait_scrape(&addr, |s| {
        value(s, shard) == 1.0 && sessions(s, "resumed") == resumed + 1.0
    });
}

/// A request whose head is over the endpoints' 8 KiB is refused with 431
/// and its connection closed (hyper would otherwise buffer up to 400 KiB
/// of it); a usual scrape is still served.
#[test]
fn a_request_head_over_the_limit_is_refused_with_431() {
    let bot = Bot::spawn(FakeDiscord::start(), metrics_on(), &[], "ambient=info");
    let addr = endpoints_of(&bot);
    let mut s = TcpStream::connect(&addr).expect("connect to the metrics port");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let pad = "a".repeat(20 * 1024);
    // The server may close before it has read the whole head: what it
    // answered is what matters.
    let _ = write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nX-Pad: {pad}\r\n\r\n"
    );
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    assert_eq!(get(&addr, "/healthz"), (200, "ok\n".into()));
}

/// Every family `/metrics` serves has its row in the README's table, with
/// its name as scraped (a counter's `_total` included) and its type.
#[test]
fn every_family_is_in_the_readmes_table() {
    use ambient::metrics::{Metrics, ModelCall, State};
    let readme = crate::support::readme::text();
    // One of each event: a family with no series is not served.
    let m = Metrics::default();
    m.routed("pass", None);
    m.journaled("reply");
    m.gate_refused("budget");
    m.model_call(ModelCall {
        role: "reply",
        outcome: "ok",
        tokens_in: 1,
        tokens_out: 1,
        latency_ms: 1,
        cost_usd: Some(0.0),
    });
    m.feed_fetched("ok");
    m.gateway_session(0, false);
    m.rate_limited(None);
    let scrape = m
        .encode(&State {
            shards: vec![(0, true)],
            budget_left: vec![("reply", 1)],
            ..State::default()
        })
        .unwrap();
    let families: Vec<(String, String)> = scrape
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(name, kind)| match kind {
            "counter" => (format!("{name}_total"), kind.to_string()),
            _ => (name.to_string(), kind.to_string()),
        })
        .collect();
    assert!(families.len() >= 20, "{scrape}");
    for (name, kind) in families {
        let row = format!("| `{name}` | {kind} |");
        assert!(readme.contains(&row), "no README row {row}");
    }
}
