//! What spans servers when the bot runs as several processes: a person's
//! boundaries and forget-me reach every process through the people ledger
//! in `storage.sharedDir`, and the bot-wide daily budgets are split by each
//! process's share of the shards.
//!
//! Each process here has its own fake Discord (so nothing depends on the
//! fake dispatching guilds by shard): A runs shard 0 of 2 and serves the
//! test guild (on shard 0), B runs shard 1 of 2 and serves an extra guild
//! whose id puts it on shard 1.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use ambient::executive::{CallContext, ChatRequest, ExecError, Message, ToolChoice};
use ambient::ids::{ChannelId, GuildId, MessageId, UserId};
use ambient::settings::Role;
use ambient::store::Store;
use ambient::store::boundaries::Boundary;
use ambient::store::messages::StoredMessage;
use ambient::vocab::fact::{FactKind, Scope};
use ambient::vocab::journal::{Entry, Filter};
use chrono::Utc;
use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::exec::{self, base_settings};
use crate::support::fake_discord::{
    ALICE, BOB, BOT, FakeDiscord, GENERAL, extra_channel, extra_guild,
};
use crate::support::home::{Home, merge};
use crate::support::model_server::{ModelServer, Scripted};

/// B's guild: the second extra server, `(id >> 22) % 2 == 1`.
fn b_guild() -> u64 {
    extra_guild(1)
}

fn b_channel() -> u64 {
    extra_channel(1, 0)
}

fn shard(shared: &Path, shard: &str) -> Value {
    json!({
        "discord": {"shards": shard, "totalShards": 2},
        "storage": {"sharedDir": shared.to_string_lossy()},
    })
}

/// Process B: `ambient run` on its own home and fake Discord, started
/// without waiting for the test guild (B does not own it).
struct ProcessB {
    discord: FakeDiscord,
    model: ModelServer,
    home: Home,
    child: Child,
}

impl ProcessB {
    /// B's home, before it runs (a test fills its store first).
    fn home(shared: &Path) -> (Home, FakeDiscord, ModelServer) {
        let discord = FakeDiscord::start_with_guilds(2, 1);
        let model = ModelServer::start();
        let mut settings = json!({
            "discord": {"apiBaseUrl": discord.url, "devGuildId": b_guild().to_string()},
            "executive": {"ollamaBaseUrl": "http://127.0.0.1:9", "maxRetries": 0},
        });
        merge(&mut settings, shard(shared, "1"));
        (Home::new(settings), discord, model)
    }

    /// Runs B and waits until it has connected and stored its guild's channels.
    fn start(home: Home, discord: FakeDiscord, model: ModelServer) -> Self {
        let log = std::fs::File::create(home.path().join("bot.log")).unwrap();
        let child = home
            .command(&["run"])
            .env("DISCORD_TOKEN", "test-token-abc")
            .env("OPENAI_BASE_URL", model.openai_base())
            .env("OPENAI_API_KEY", "sk-test-bot")
            .env("RUST_LOG", "ambient=debug,serenity=warn,poise=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn ambient run");
        let b = Self {
            discord,
            model,
            home,
            child,
        };
        let store = b.store();
        let ready = wait(|| {
            store
                .messages()
                .guild_channels(GuildId(b_guild()))
                .is_ok_and(|c| !c.is_empty())
        });
        assert!(ready, "B never stored its guild's channels:\n{}", b.log());
        b
    }

    fn store(&self) -> Store {
        Store::open(&self.home.data_dir()).unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.path().join("bot.log")).unwrap_or_default()
    }
}

impl Drop for ProcessB {
    fn drop(&mut self) {
        // Harmless: the process may have exited already; the test is over.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `cond` for up to 30 s (a wait, not a timing assertion).
fn wait(cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

const ALICE_SAID: &str = "my locker code at the pool is 4471";
const BOB_SAID: &str = "the pool opens at nine on sundays";

/// What B's servers hold of Alice and Bob from before: a message each, a fact about her.
fn alice_and_bob_were_on_b(store: &Store) -> (MessageId, MessageId) {
    let an_hour_ago = Utc::now() - chrono::Duration::hours(1);
    let said = |id: u64, who: UserId, name: &str, text: &str| {
        store
            .messages()
            .insert_message(&StoredMessage::said(
                MessageId(id),
                Some(GuildId(b_guild())),
                ChannelId(b_channel()),
                who,
                name,
                text,
                an_hour_ago,
            ))
            .unwrap();
        MessageId(id)
    };
    let hers = said(b_guild() + 50, UserId(ALICE.id), "alice", ALICE_SAID);
    let his = said(b_guild() + 51, UserId(BOB.id), "bob", BOB_SAID);
    let fact = ambient::memory::manual(
        Scope::user(Some(GuildId(b_guild())), UserId(ALICE.id)),
        FactKind::Fact,
        None,
        "alice's locker code is 4471",
        None,
        an_hour_ago,
    );
    store.memory().save_facts(&[&fact], &[]).unwrap();
    (hers, his)
}

fn content(store: &Store, id: MessageId) -> String {
    store.messages().message(id).unwrap().unwrap().content
}

fn facts_about_alice(store: &Store) -> usize {
    store
        .memory()
        .all_facts()
        .unwrap()
        .into_iter()
        .filter(|f| f.scope.user == Some(UserId(ALICE.id)))
        .count()
}

fn journal(store: &Store) -> Vec<Entry> {
    store.journal().journal_query(&Filter::default()).unwrap()
}

/// Alice asks process A not to be pinged and to be forgotten, words and all.
fn alice_asks_a(a: &Bot) {
    let done = |command: &str, sub: &str, option: (&str, &str), said: &str| {
        let asked = a.discord.slash(GENERAL, ALICE, 0, command, sub, &[option]);
        let answer = a.discord.interaction_text(asked).unwrap_or_default();
        assert!(answer.starts_with(said), "{answer}:\n{}", a.log());
    };
    done(
        "ambient",
        "me",
        ("boundary", "no-ping"),
        "Done — don't ping me",
    );
    done(
        "memory",
        "forget-me",
        ("messages", "true"),
        "Done: I forgot",
    );
}

/// B answers Alice in its own guild without pinging her.
fn b_answers_alice_without_a_ping(b: &ProcessB) {
    b.model.push(Scripted::text(&format!(
        "Sure <@{}>, the pool is open.",
        ALICE.id
    )));
    b.discord.say_in(
        b_guild(),
        b_channel(),
        ALICE,
        &format!("<@{BOT}> is the pool open?"),
    );
    assert!(
        b.discord
            .wait_until(20, |w| !w.sent_in(b_channel()).is_empty()),
        "B did not answer:\n{}",
        b.log()
    );
    let sent = b.discord.with(|w| w.sent_in(b_channel()))[0].clone();
    assert_eq!(sent["content"], "Sure @alice, the pool is open.");
    assert_eq!(sent["allowed_mentions"]["users"], json!([]), "{sent}");
    assert_eq!(sent["allowed_mentions"]["replied_user"], false, "{sent}");
}

#[test]
fn what_alice_asked_one_process_holds_in_another_started_later_before_it_connects() {
    let shared = tempfile::tempdir().unwrap();
    let (b_home, b_discord, b_model) = ProcessB::home(shared.path());
    let (hers, his) = {
        let store = Store::open(&b_home.data_dir()).unwrap();
        alice_and_bob_were_on_b(&store)
    };
    let a = Bot::start_on(
        FakeDiscord::start(),
        shard(shared.path(), "0"),
        &[],
        "ambient=debug,serenity=warn,poise=warn",
    );
    alice_asks_a(&a);
    assert!(
        shared.path().join("people.db").exists(),
        "the ledger is in storage.sharedDir"
    );

    let b = ProcessB::start(b_home, b_discord, b_model);
    let store = b.store();
    assert_eq!(content(&store, hers), "", "her words are gone from B");
    assert_eq!(content(&store, his), BOB_SAID, "Bob's stay");
    assert_eq!(facts_about_alice(&store), 0);
    assert!(
        store
            .people()
            .has_boundary(UserId(ALICE.id), Boundary::NoPing)
            .unwrap()
    );
    // Applied while B was built, before it started its loops and then connected.
    let entries = journal(&store);
    let at = |needle: &str| {
        entries
            .iter()
            .find(|e| e.summary.contains(needle))
            .map(|e| e.id)
            .unwrap_or_else(|| panic!("no journal entry {needle:?}:\n{}", b.log()))
    };
    let started = at("started");
    assert!(at("set a boundary on another server: don't ping me") < started);
    let forgot = entries
        .iter()
        .find(|e| e.summary.contains("asked on another server"))
        .unwrap();
    assert!(forgot.id < started);
    assert!(
        forgot.reason.starts_with("1 fact(s), 1 message(s) erased"),
        "{}",
        forgot.reason
    );
    assert!(
        !format!("{entries:?}").contains("4471"),
        "the journal holds no words of hers"
    );
    b_answers_alice_without_a_ping(&b);
    assert!(a.stop().success());
}

#[test]
fn a_running_process_applies_what_another_one_was_asked() {
    let shared = tempfile::tempdir().unwrap();
    let (b_home, b_discord, b_model) = ProcessB::home(shared.path());
    let (hers, his) = {
        let store = Store::open(&b_home.data_dir()).unwrap();
        alice_and_bob_were_on_b(&store)
    };
    let b = ProcessB::start(b_home, b_discord, b_model);
    let store = b.store();
    assert_eq!(content(&store, hers), ALICE_SAID, "nothing asked yet");

    let a = Bot::start_on(
        FakeDiscord::start(),
        shard(shared.path(), "0"),
        &[],
        "ambient=debug,serenity=warn,poise=warn",
    );
    alice_asks_a(&a);
    assert!(
        wait(|| content(&store, hers).is_empty()),
        "B never forgot her:\n{}",
        b.log()
    );
    assert!(wait(|| store
        .people()
        .has_boundary(UserId(ALICE.id), Boundary::NoPing)
        .unwrap()));
    assert_eq!(content(&store, his), BOB_SAID);
    assert_eq!(facts_about_alice(&store), 0);
    b_answers_alice_without_a_ping(&b);
    assert!(a.stop().success());
}

fn one_call(max_tokens: u32) -> ChatRequest {
    ChatRequest {
        system: "s".into(),
        messages: vec![Message::user("hi")],
        tools: vec![],
        tool_choice: ToolChoice::Auto,
        max_tokens,
    }
}

#[tokio::test]
async fn a_process_running_half_the_shards_spends_half_the_daily_cap() {
    let mut settings = base_settings();
    settings.discord.shards = "0-1".into();
    settings.discord.total_shards = 4;
    settings.budget.daily_tokens.reply = 1_000;
    let f = exec::openai(settings).await;
    f.server.push(Scripted::Text {
        text: "fine".into(),
        tokens_in: 460,
        tokens_out: 20,
    });
    f.server.fallback(Scripted::text("should never be asked"));
    let ctx = CallContext::new(Role::Reply, None);
    f.exec.complete(&ctx, &one_call(40)).await.unwrap();
    // 480 used: the next call's ~45 would still fit 1,000, but not this process's 500.
    let err = f.exec.complete(&ctx, &one_call(40)).await.unwrap_err();
    assert!(matches!(err, ExecError::OverBudget(_)), "{err}");
    let said = err.to_string();
    assert!(said.contains("has used 480 of its 500 tokens"), "{said}");
    assert!(
        said.contains("(budget.dailyTokens.reply, this process's share 2/4)"),
        "{said}"
    );
    assert_eq!(f.server.requests().len(), 1, "the second call was not made");
}

#[test]
fn the_readmes_people_and_budget_examples_run_as_written() {
    let home = Home::new(json!({}));
    // The settings as shown (`ambient status` reads the shared directory's path, never the ledger).
    let settings = crate::support::readme::block("Two processes on one host share", "json");
    let mut merged: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("settings.json")).unwrap())
            .unwrap();
    merge(&mut merged, serde_json::from_str(&settings).unwrap());
    home.write_settings(&serde_json::to_string_pretty(&merged).unwrap());
    let check = home.run(&["settings", "check"]);
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    let shown = crate::support::readme::block("Status says what this process may spend", "sh");
    let mut lines = shown.lines();
    let command = lines.next().unwrap().trim_start_matches("$ ");
    let out = home.shell(command, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in lines.filter(|l| !l.trim().is_empty() && l.trim() != "…") {
        assert!(
            stdout.lines().any(|l| l == line),
            "the README shows {line:?}; ambient status printed:\n{stdout}"
        );
    }
}
