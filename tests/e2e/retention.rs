//! Retention: what is older than its kind's `storage.retention.*` is gone
//! after the upkeep pass and the newer stays; facts outlive the messages
//! they were learned from; usage lives on as daily totals that `ambient
//! usage` counts the same; a link once shared is never a candidate again;
//! a server may only shorten; the file gives its space back; status says
//! what is kept.

use ambient::attention::Addressed;
use ambient::clock::{Clock, ManualClock};
use ambient::ids::{ChannelId, GuildId, MessageId, UserId, next_snowflake, stable_id};
use ambient::journal::Journal;
use ambient::memory::search::Reader;
use ambient::settings::{Settings, SettingsService};
use ambient::store::Store;
use ambient::store::discovery::NewItem;
use ambient::store::messages::StoredMessage;
use ambient::store::usage::UsageRecord;
use ambient::upkeep::Upkeep;
use ambient::vocab::journal::Kind;
use chrono::{Duration, TimeZone, Utc};
use serde_json::json;

use crate::support::files::files_containing_any_case;
use crate::support::home::Home;
use crate::support::model_server::Scripted;
use crate::support::readme;
use crate::support::world::{B_GENERAL, GENERAL, GUILD_A, GUILD_B, World, settings};

const CANARY: &str = "RETENTION-CANARY-4411";

/// The journal lines the upkeep pass wrote.
fn sweep_lines(w: &World) -> Vec<String> {
    w.journal(Kind::System)
        .into_iter()
        .filter(|e| e.summary.starts_with("retention:"))
        .map(|e| e.summary)
        .collect()
}

#[tokio::test]
async fn facts_outlive_their_messages_and_are_still_recalled_and_forgotten() {
    let w = World::start(settings()).await;
    let dave = UserId(stable_id("user", "dave"));
    w.message(
        GENERAL,
        "dave",
        &format!("my cat is called Biscuit {CANARY}"),
        Addressed::No,
    )
    .await;
    w.model.push(Scripted::tool(
        "remember_facts",
        json!({"facts": [{"kind": "fact", "importance": "high", "scope": "user", "about": "dave",
                          "subject": "dave's cat", "content": format!("dave's cat is called Biscuit {CANARY}"),
                          "sources": [1]}]}),
    ));
    assert_eq!(
        w.app.memory.extract_channel(Some(GUILD_A), GENERAL).await,
        1
    );
    let said = w
        .app
        .store()
        .messages()
        .recent_messages(GENERAL, 10)
        .unwrap();
    assert_eq!(said.len(), 1);

    w.app.upkeep.pass(&|| true).unwrap();
    assert!(sweep_lines(&w).is_empty(), "nothing expired, nothing said");
    assert!(
        w.app
            .store()
            .messages()
            .message(said[0].id)
            .unwrap()
            .is_some()
    );

    w.clock.advance(Duration::days(31));
    w.app.upkeep.pass(&|| true).unwrap();
    assert_eq!(
        sweep_lines(&w),
        vec![
            "retention: removed 1 messages older than 30 days, 1 routing lines with their messages"
                .to_string()
        ]
    );
    assert!(
        w.app
            .store()
            .messages()
            .message(said[0].id)
            .unwrap()
            .is_none(),
        "the message is gone"
    );

    let found = w
        .app
        .memory
        .search(Reader::Guild(GUILD_A), "Biscuit cat", 5);
    assert_eq!(found.len(), 1, "the fact is still recalled");
    assert!(found[0].fact.content.contains(CANARY));
    assert_eq!(
        found[0].fact.sources,
        vec![said[0].id],
        "it still names its source"
    );

    let (facts, _) = w.app.memory.forget_me(Some(GUILD_A), dave, true).unwrap();
    assert_eq!(facts, 1, "forget-me finds a fact whose message is gone");
    assert!(
        w.app
            .memory
            .search(Reader::Guild(GUILD_A), "Biscuit cat", 5)
            .is_empty()
    );
}

#[tokio::test]
async fn a_server_may_shorten_its_retention_and_is_refused_a_longer_one() {
    let w = World::start(settings()).await;
    let admin = UserId(stable_id("user", "admin"));
    // The README's example, exactly as written there.
    let example = readme::block("A server owner (Manage Server) may keep", "text");
    let words: Vec<&str> = example.split_whitespace().collect();
    assert_eq!(&words[..2], &["/settings", "set"]);
    // The service behind /settings set in Discord and the console.
    let stored = w
        .app
        .settings
        .set_override(GUILD_A, words[2], words[3], Some(admin))
        .unwrap();
    assert_eq!(stored, json!(7));

    for longer in ["31", "0"] {
        let refused = w
            .app
            .settings
            .set_override(
                GUILD_B,
                "storage.retention.messagesDays",
                longer,
                Some(admin),
            )
            .unwrap_err()
            .to_string();
        assert_eq!(
            format!("{refused}\n"),
            readme::block("A longer value than the operator's", "text"),
            "{longer}"
        );
    }
    assert!(
        w.app.settings.overrides(GUILD_B).unwrap().is_empty(),
        "nothing stored"
    );

    // Ten days later, A's message is gone and B's stays.
    w.message(GENERAL, "dave", "said in A", Addressed::No).await;
    w.message(B_GENERAL, "dave", "said in B", Addressed::No)
        .await;
    w.clock.advance(Duration::days(10));
    let pass = w.app.upkeep.pass(&|| true).unwrap();
    assert_eq!(
        pass.swept
            .removed(ambient::store::retention::Kind::Messages),
        1
    );
    assert!(
        w.app
            .store()
            .messages()
            .recent_messages(GENERAL, 10)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        w.app
            .store()
            .messages()
            .recent_messages(B_GENERAL, 10)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        sweep_lines(&w),
        vec![
            "retention: removed 1 messages older than 30 days (fewer in servers that asked), \
             1 routing lines with their messages"
                .to_string()
        ]
    );
}

#[test]
fn an_item_shared_long_ago_is_not_shared_again_once_its_row_has_expired() {
    let store = Store::open_in_memory().unwrap();
    let guild = GuildId(7);
    let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let source = store
        .discovery()
        .upsert_source("rss", "https://feeds.example/news")
        .unwrap();
    // Undated items: a feed that lists them for months gives no date to go by.
    let item = |n: &str| NewItem {
        url: format!("https://news.example/{n}"),
        canonical_url: format!("https://news.example/{n}"),
        title: format!("story {n}"),
        title_key: format!("story {n}"),
        summary: String::new(),
        published_at: None,
        media: None,
    };
    let week = Duration::hours(168);
    store
        .discovery()
        .insert_feed_items(
            source,
            &[item("shared"), item("unread")],
            start,
            start - week,
        )
        .unwrap();
    let shared = store
        .discovery()
        .feed_item_by_canonical("https://news.example/shared")
        .unwrap()
        .unwrap()
        .0;
    store
        .discovery()
        .record_share(shared, guild, ChannelId(1), MessageId(99), start)
        .unwrap();

    let later = start + Duration::days(60);
    let policy = ambient::store::retention::Policy {
        operator: ambient::settings::RetentionSettings::default().keep(),
        ..Default::default()
    };
    let swept = store
        .file()
        .sweep(&policy, later, Default::default(), &|| true)
        .unwrap();
    assert_eq!(
        swept.removed(ambient::store::retention::Kind::Discovery),
        1,
        "the unread one"
    );

    // The feed still lists both: each is stored again, as new.
    let (stored, _) = store
        .discovery()
        .insert_feed_items(
            source,
            &[item("shared"), item("unread")],
            later,
            later - week,
        )
        .unwrap();
    assert_eq!(stored, 2);
    let candidates: Vec<String> = store
        .discovery()
        .feed_candidates(&[source], guild, later - Duration::hours(48), 10)
        .unwrap()
        .into_iter()
        .map(|i| i.url)
        .collect();
    assert_eq!(candidates, vec!["https://news.example/unread".to_string()]);
}

fn call(at: chrono::DateTime<Utc>, role: &str, tokens: u64, outcome: &str) -> UsageRecord {
    UsageRecord {
        id: 0,
        at,
        role: role.into(),
        source: "user".into(),
        guild: Some(GuildId(5)),
        provider: "anthropic".into(),
        model: "claude".into(),
        pay_per_token: true,
        tokens_in: tokens,
        tokens_out: 10,
        latency_ms: 800,
        outcome: outcome.into(),
        detail: String::new(),
    }
}

/// The bot's own pieces over a data directory, at `clock`'s time.
fn upkeep_of(store: &Store, settings: Settings, clock: std::sync::Arc<ManualClock>) -> Upkeep {
    let service = std::sync::Arc::new(SettingsService::new(
        settings,
        store.overrides(),
        clock.clone(),
    ));
    Upkeep::new(
        store.into(),
        service,
        Journal::new(store.journal(), clock.clone()),
        clock,
    )
}

#[test]
fn usage_older_than_its_window_becomes_daily_totals_and_ambient_usage_counts_the_same() {
    let home = Home::new(json!({}));
    let now = Utc::now();
    {
        let store = Store::open(&home.data_dir()).unwrap();
        for (days, role, tokens, outcome) in [
            (120, "reply", 1_000, "ok"),
            (120, "reply", 0, "refused"),
            (100, "extract", 400, "ok"),
            (100, "extract", 300, "timeout"),
            (1, "reply", 50, "ok"),
        ] {
            store
                .usage()
                .usage_append(&call(now - Duration::days(days), role, tokens, outcome))
                .unwrap();
        }
    }
    let total = |home: &Home| {
        let out = home.run(&["usage", "--since", "365d"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        (text.lines().last().unwrap().to_string(), text)
    };
    let (before, _) = total(&home);
    assert_eq!(before, "5 calls (3 ok), 1750 tokens in, 50 tokens out");

    let store = Store::open(&home.data_dir()).unwrap();
    let pass = upkeep_of(&store, Settings::default(), ManualClock::new(now))
        .pass(&|| true)
        .unwrap();
    assert_eq!(
        pass.swept.removed(ambient::store::retention::Kind::Usage),
        4
    );
    drop(store);

    let (after, text) = total(&home);
    assert_eq!(after, before, "{text}");
    let day = |d: i64| (now - Duration::days(d)).format("%Y-%m-%d").to_string();
    assert!(
        text.lines()
            .any(|l| l.starts_with(&day(120)) && l.ends_with("2 calls, 1 ok (daily total)")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with(&day(100)) && l.contains("extract")),
        "{text}"
    );
}

#[test]
fn a_new_database_gives_space_back_after_a_large_sweep_and_keeps_no_forgotten_byte() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert!(
        store.file().space().unwrap().gives_back,
        "auto_vacuum is incremental"
    );
    let clock = ManualClock::at_test_epoch();
    let old = clock.now() - Duration::days(40);
    let erin = UserId(77);
    let text = "x".repeat(900);
    for n in 0..4_000u64 {
        let at = old + Duration::seconds(n as i64);
        let content = if n == 7 {
            format!("{CANARY} {text}")
        } else {
            format!("{n} {text}")
        };
        store
            .messages()
            .insert_message(&StoredMessage::said(
                MessageId(next_snowflake(at)),
                Some(GuildId(1)),
                ChannelId(2),
                erin,
                "erin",
                content,
                at,
            ))
            .unwrap();
    }
    store.file().flush();
    // erin asked to be forgotten before the sweep: the words are blanked now
    // and the sweep's moves of pages must not bring them back.
    store
        .people()
        .forget_person(erin, true, clock.now())
        .unwrap();
    let file = dir.path().join(ambient::store::DB_FILE);
    let size = || std::fs::metadata(&file).unwrap().len();
    let before = size();
    assert!(before > 3_000_000, "{before}");

    let pass = upkeep_of(&store, Settings::default(), clock.clone())
        .pass(&|| true)
        .unwrap();
    assert_eq!(
        pass.swept
            .removed(ambient::store::retention::Kind::Messages),
        4_000
    );
    assert!(pass.pages_returned > 500, "{pass:?}");
    assert!(pass.log_emptied);
    let after = size();
    assert!(after < before / 4, "the file shrank: {before} → {after}");
    assert_eq!(
        files_containing_any_case(dir.path(), CANARY.as_bytes()),
        Vec::<String>::new()
    );
}

#[test]
fn status_says_what_is_kept_with_a_servers_own_shorter_values() {
    let home = Home::new(json!({
        "garden": {"enabled": false},
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9"},
        "storage": {"retention": {"journalDays": 60, "usageDays": 0}},
    }));
    {
        let store = Store::open(&home.data_dir()).unwrap();
        store
            .overrides()
            .set_guild_override(
                GuildId(42),
                "storage.retention.messagesDays",
                &json!(7),
                None,
                Utc::now(),
            )
            .unwrap();
    }
    let out = home.run(&["status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "What is kept (0 days in the settings keeps a kind forever):",
        "  messages: 30 days — what people said (and the bot), text and voice transcripts (storage.retention.messagesDays)",
        "  journal: 60 days — every decision and its reason; a message's routing line goes with the message (storage.retention.journalDays)",
        "  model usage: forever — each model call's tokens, then daily totals (storage.retention.usageDays)",
        "  server 42 keeps less: messages 7 days",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
    }
    assert!(
        text.contains("freed space goes back to the disk after each hourly sweep"),
        "{text}"
    );
}
