//! Routing one message through 100 reflex definitions.
//!
//! The reflex layer sits in front of every message, so its cost when nothing
//! matches (the common case) and when one reflex matches must stay tiny.
//! Measured with divan through `Reflexes::matching` on a real `App` (settings
//! lookup, mention stripping, the regex set, guild/addressed/disabled
//! filters, captures) with 100 definitions loaded from YAML; target under 50 µs.
//!
//! `cargo bench --bench reflexes`.

use std::sync::{Arc, OnceLock};

use ambient::app::{App, Parts};
use ambient::attention::{
    Addressed, Attended, Author, Class, Input, Lane, MessagePercept, Percept, Salience,
};
use ambient::chat::{ChatError, Outgoing, Transport, Typing};
use ambient::clock::{Chance, Clock, SystemClock};
use ambient::ids::{ChannelId, GuildId, MessageId, UserId};
use ambient::settings::{Secrets, Settings};
use ambient::store::messages::{Source, StoredMessage};
use async_trait::async_trait;

const REFLEXES: usize = 100;

struct Silent;

#[async_trait]
impl Transport for Silent {
    fn me(&self) -> Author {
        Author {
            id: UserId(1),
            name: "ambient".into(),
            is_bot: true,
        }
    }
    async fn send(&self, _: ChannelId, _: &Outgoing) -> Result<MessageId, ChatError> {
        Ok(MessageId(1))
    }
    async fn react(&self, _: ChannelId, _: MessageId, _: &str) -> Result<(), ChatError> {
        Ok(())
    }
    fn typing(&self, _: ChannelId) -> Typing {
        Typing::none()
    }
    async fn history(&self, _: ChannelId, _: usize) -> Result<Vec<StoredMessage>, ChatError> {
        Ok(vec![])
    }
}

/// 100 reflexes of the kinds people write: keyword reacts, commands with
/// extracted arguments, some only when addressed.
fn definitions(dir: &std::path::Path) {
    const TOPICS: [&str; 20] = [
        "coffee", "tea", "pizza", "rust", "python", "linux", "windows", "movie", "music", "game",
        "cat", "dog", "weather", "football", "chess", "book", "garden", "bike", "train", "space",
    ];
    for i in 0..REFLEXES {
        let topic = TOPICS[i % TOPICS.len()];
        let yaml = match i % 4 {
            0 => format!(
                "name: react-{i}\nlevel: 0\ntrigger:\n  pattern: \"(?i)\\\\b{topic}{i}\\\\b\"\npipeline:\n  - action: react\n    emoji: \"👍\"\n"
            ),
            1 => format!(
                "name: cmd-{i}\nlevel: 0\ntrigger:\n  pattern: \"(?i)^{topic}-{i} (\\\\w+) (.+)$\"\n  extract: [verb, rest]\n  addressed: true\npipeline:\n  - action: reply\n    message: \"{{{{verb}}}}: {{{{rest}}}}\"\n"
            ),
            2 => format!(
                "name: ask-{i}\nlevel: 1\ntrigger:\n  pattern: \"(?i)what is the {topic} {i}\\\\??\"\n  addressed: true\npipeline:\n  - action: journal_summary\n    since: today\n    output: s\n  - action: reply\n    message: \"{{{{s}}}}\"\n"
            ),
            _ => format!(
                "name: fetch-{i}\nlevel: 1\ntrigger:\n  pattern: \"(?i)^show {topic}{i} (https?://\\\\S+)$\"\n  extract: [url]\npipeline:\n  - action: fetch_url\n    input: $url\n    output: page\n  - action: reply\n    message: \"{{{{page}}}}\"\n"
            ),
        };
        std::fs::write(dir.join(format!("r{i:03}.yaml")), yaml).unwrap();
    }
}

fn item(text: &str) -> Attended {
    let input = Input::Percept(Percept::Message(MessagePercept {
        message: StoredMessage {
            id: MessageId(99),
            guild: Some(GuildId(5)),
            channel: ChannelId(6),
            author_id: UserId(7),
            author_name: "ada".into(),
            author_is_bot: false,
            is_self: false,
            content: text.into(),
            attachments: vec![],
            reply_to: None,
            source: Source::Text,
            created_at: SystemClock.now(),
            edited_at: None,
            deleted_at: None,
        },
        addressed: Addressed::Mention,
        guild_name: None,
        channel_name: None,
        author_roles: None,
    }));
    Attended {
        seq: 1,
        lane: Lane::of(&input),
        input,
        salience: Salience {
            score: 0.7,
            class: Class::User,
            features: vec![],
        },
        queued_at: SystemClock.now(),
        escalated: None,
    }
}

/// An app with the 100 definitions (built once; divan runs the benches in this process).
fn app() -> &'static Arc<App> {
    static APP: OnceLock<(Arc<App>, tempfile::TempDir, tokio::runtime::Runtime)> = OnceLock::new();
    &APP.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let reflex_dir = dir.path().join("reflexes");
        std::fs::create_dir_all(&reflex_dir).unwrap();
        definitions(&reflex_dir);
        let mut settings = Settings::default();
        settings.storage.data_dir = dir.path().join("data").to_string_lossy().into_owned();
        settings.reflexes.dir = reflex_dir.to_string_lossy().into_owned();
        settings.executive.ollama_base_url = "http://127.0.0.1:9".into();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let app = rt
            .block_on(App::build(
                Parts {
                    settings,
                    settings_source: None,
                    secrets: Secrets::default(),
                    clock: Arc::new(SystemClock),
                    chance: Chance::seeded(1),
                    stand_in: None,
                    sharing: ambient::store::Sharing::Shared,
                },
                |_| Arc::new(Silent) as Arc<dyn Transport>,
            ))
            .unwrap();
        let loaded = app.reflexes.loaded();
        assert_eq!(loaded.reflexes.len(), REFLEXES, "{:?}", loaded.problems);
        (app, dir, rt)
    })
    .0
}

const NO_MATCH: &str =
    "<@1> I think we should meet on thursday evening after work, what do you all say?";
const ONE_MATCH: &str = "<@1> football-13 build the thing with all features please";

fn main() {
    assert!(app().reflexes.matching(&item(NO_MATCH)).is_empty());
    assert_eq!(app().reflexes.matching(&item(ONE_MATCH)).len(), 1);
    divan::main();
}

/// Routing one message through 100 definitions when none matches (the common case).
#[divan::bench]
fn no_reflex_matches(bencher: divan::Bencher) {
    let it = item(NO_MATCH);
    bencher.bench(|| app().reflexes.matching(divan::black_box(&it)));
}

/// Routing one message that one of the 100 matches (with its captures).
#[divan::bench]
fn one_reflex_matches(bencher: divan::Bencher) {
    let it = item(ONE_MATCH);
    bencher.bench(|| app().reflexes.matching(divan::black_box(&it)));
}

/// The same, plus the pipeline's variables (guild and channel names from the store).
#[divan::bench]
fn one_matches_with_its_variables(bencher: divan::Bencher) {
    let it = item(ONE_MATCH);
    bencher.bench(|| app().reflexes.candidates_for(divan::black_box(&it)));
}
