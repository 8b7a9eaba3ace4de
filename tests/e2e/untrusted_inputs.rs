//! Issue 35, inputs and secrets: a key quoted back in another spelling, an
//! error text of any size, a media provider that always fails, and IPv6
//! forms of private addresses — each as a person would find it: in the
//! journal, the usage log, the logs, the database and what the bot fetched.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::json;

use ambient::settings::{Secret, Secrets, Settings};
use ambient::store::usage::UsageRecord;
use ambient::vocab::journal::{Entry, Kind};

use crate::support::alone;
use crate::support::files::files_containing;
use crate::support::home::Home;
use crate::support::image_server::{ImageServer, Refusal};
use crate::support::model_server::Scripted;
use crate::support::spellings::spellings;
use crate::support::world::{GENERAL, World, settings};

/// An image or GIF key with the characters encodings treat differently.
const KEY: &str = "sk-Img+Canary/8c1E55=x";

/// Everything logged, on every thread (the test's, the blocking pool's),
/// at every level, from [`Logs::capture`] on. The subscriber is the
/// process's global one, so a test that captures runs alone in a child
/// process (`support::alone`): the other tests of this binary would
/// otherwise log into it too.
struct Logs {
    text: Arc<Mutex<Vec<u8>>>,
}

#[derive(Clone)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Captures every thread's logs; call it only from a test run alone.
    fn capture() -> Self {
        let text = Arc::new(Mutex::new(Vec::new()));
        let sink = Sink(text.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("the test runs alone: no other subscriber was set");
        let logs = Self { text };
        // What the capture claims: a line logged on another thread is in it.
        std::thread::spawn(|| tracing::trace!("logged on another thread"))
            .join()
            .unwrap();
        assert!(logs.text().contains("logged on another thread"));
        logs
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.text.lock().unwrap()).into_owned()
    }
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            if p.is_dir() {
                bytes_under(&p)
            } else {
                p.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// Initiative in #general of guild A alone, posting media from `images` (if any).
fn posting(images: Option<&ImageServer>) -> Settings {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    s.initiative.text.max_posts_per_day = 100;
    let d = &mut s.initiative.discovery;
    d.max_images_per_day = 100;
    if let Some(images) = images {
        d.allow_image_posts = true;
        d.image_generation.base_url = images.base.clone();
        d.image_generation.allow_private = true;
    }
    s
}

/// One initiative tick whose decision posts with `kind` media asked for by `prompt`.
async fn post_asking(world: &World, kind: &str, prompt: &str) {
    world.model.push(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": format!("made you {prompt}"),
               "reason": "r", "media": {"kind": kind, "prompt": prompt}}),
    ));
    world.tick().await;
    world.clock.advance(chrono::Duration::minutes(1));
}

fn media_rows(world: &World, provider: &str) -> Vec<UsageRecord> {
    let rows = world
        .app
        .store()
        .usage()
        .usage_list(&Default::default(), None);
    rows.unwrap()
        .into_iter()
        .filter(|r| r.provider == provider)
        .collect()
}

fn skips(world: &World, summary: &str) -> Vec<Entry> {
    let skips = world.journal(Kind::InitiativeSkip);
    skips.into_iter().filter(|e| e.summary == summary).collect()
}

/// Where any of `spellings` is in the journal, the usage log, the logs or
/// the data directory's files.
fn leaks(
    world: &World,
    logs: &Logs,
    spellings: &[(&'static str, String)],
) -> Vec<(&'static str, &'static str)> {
    let journal = format!("{:?}", world.journal(Kind::InitiativeSkip));
    let usage = format!(
        "{:?}",
        world
            .app
            .store()
            .usage()
            .usage_list(&Default::default(), None)
    );
    let logged = logs.text();
    let data = world.dir.path();
    let mut found = Vec::new();
    for (name, spelled) in spellings {
        for (place, text) in [("journal", &journal), ("usage", &usage), ("logs", &logged)] {
            if text.contains(spelled.as_str()) {
                found.push((*name, place));
            }
        }
        if !files_containing(data, spelled.as_bytes()).is_empty() {
            found.push((*name, "data directory"));
        }
    }
    found
}

#[tokio::test]
async fn an_image_generator_quoting_the_key_in_any_spelling_leaves_it_nowhere() {
    let test = "an_image_generator_quoting_the_key_in_any_spelling_leaves_it_nowhere";
    if !alone::here(module_path!(), test) {
        return;
    }
    let images = ImageServer::start(Refusal::QuoteKey);
    let secrets = Secrets {
        image_api_key: Some(Secret::new(KEY)),
        ..Default::default()
    };
    let logs = Logs::capture();
    let world = World::start_with_secrets(posting(Some(&images)), secrets).await;
    let spelled = spellings(KEY);
    for (name, _) in &spelled {
        post_asking(&world, "image", name).await;
    }
    assert_eq!(
        images.calls(),
        spelled.len(),
        "every spelling was asked for"
    );
    assert!(images.keys().iter().all(|k| k == KEY), "the key was sent");
    let refused = skips(&world, "posted without the requested image");
    assert_eq!(refused.len(), spelled.len(), "{refused:#?}");
    for e in &refused {
        assert_eq!(
            e.reason,
            "the image generator refused (401): Incorrect API key provided: ***."
        );
    }
    let rows = media_rows(&world, "images");
    assert_eq!(rows.len(), spelled.len());
    assert!(
        logs.text().contains("posted without the requested image"),
        "the logs were captured"
    );
    assert_eq!(leaks(&world, &logs, &spelled), vec![]);
}

#[tokio::test]
async fn a_gif_key_in_a_failed_searchs_url_is_masked_as_the_url_encodes_it() {
    if !alone::here(
        module_path!(),
        "a_gif_key_in_a_failed_searchs_url_is_masked_as_the_url_encodes_it",
    ) {
        return;
    }
    let mut s = posting(None);
    s.initiative.discovery.allow_gif_posts = true;
    // Nothing listens on port 9: the error names the URL, key and all.
    s.initiative.discovery.gif_source.base_url = "http://127.0.0.1:9".into();
    s.initiative.discovery.gif_source.allow_private = true;
    let secrets = Secrets {
        giphy_api_key: Some(Secret::new(KEY)),
        ..Default::default()
    };
    let logs = Logs::capture();
    let world = World::start_with_secrets(s, secrets).await;
    post_asking(&world, "gif", "happy crab").await;
    let failed = skips(&world, "posted without the requested GIF");
    assert_eq!(
        failed.len(),
        1,
        "{:#?}",
        world.journal(Kind::InitiativeSkip)
    );
    assert!(
        failed[0]
            .reason
            .starts_with("the GIF search failed: network error: "),
        "{}",
        failed[0].reason
    );
    assert!(
        failed[0].reason.contains("api_key=***&q=happy+crab"),
        "{}",
        failed[0].reason
    );
    assert_eq!(media_rows(&world, "gifs")[0].detail, failed[0].reason);
    assert_eq!(leaks(&world, &logs, &spellings(KEY)), vec![]);
}

/// The most a stored reason takes, its cut marker included.
const MAX_STORED_REASON: usize = 2_048;

/// A world whose image generator is `images`, with this daily budget.
async fn refused_by(images: &ImageServer, max_images_per_day: u32) -> World {
    let mut s = posting(Some(images));
    s.initiative.discovery.max_images_per_day = max_images_per_day;
    let secrets = Secrets {
        image_api_key: Some(Secret::new(KEY)),
        ..Default::default()
    };
    World::start_with_secrets(s, secrets).await
}

#[tokio::test]
async fn a_30_mb_refusal_is_read_to_16_kib_and_stored_cut_to_2_kib() {
    let images = ImageServer::start(Refusal::Sized(30_000_000));
    let world = refused_by(&images, 3).await;
    post_asking(&world, "image", "a crab").await;
    assert_eq!(images.calls(), 1);
    let failed = skips(&world, "posted without the requested image");
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let reason = &failed[0].reason;
    assert!(
        reason.starts_with(
            "the image generator refused (400, in more than 16384 bytes): \
             {\"error\":{\"message\":\"xxx"
        ),
        "{}",
        &reason[..200.min(reason.len())]
    );
    // The README's example is this refusal's.
    let marker = crate::support::readme::example("… [cut: 16,445 bytes");
    assert!(
        reason.len() <= MAX_STORED_REASON && reason.ends_with(&marker),
        "{} bytes, ending {:?}",
        reason.len(),
        &reason[reason.len().saturating_sub(60)..]
    );
    let rows = media_rows(&world, "images");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].outcome, "client_error");
    assert_eq!(&rows[0].detail, reason);
    assert_eq!(world.said().len(), 1, "the words were posted all the same");
    let stored = bytes_under(world.dir.path());
    assert!(
        stored < 10_000_000,
        "the data directory holds {stored} bytes"
    );
}

#[tokio::test]
async fn a_generator_that_always_fails_is_asked_only_the_days_budget() {
    let images = ImageServer::start(Refusal::Sized(40));
    let world = refused_by(&images, 2).await;
    for n in 1..=4 {
        post_asking(&world, "image", &format!("crab number {n}")).await;
    }
    assert_eq!(images.calls(), 2, "asked past maxImagesPerDay");
    assert_eq!(skips(&world, "posted without the requested image").len(), 2);
    let used_up = skips(&world, "dropped the image request");
    assert_eq!(used_up.len(), 2, "{used_up:#?}");
    assert_eq!(
        used_up[0].reason,
        "today's images are used up (2 of initiative.discovery.maxImagesPerDay 2)"
    );
    assert_eq!(world.said().len(), 4, "the words were posted all the same");
}

/// IPv6 literals that are someone's own network, one of each form.
const PRIVATE_LITERALS: &[&str] = &[
    "fec0::1",
    "::ffff:0:10.0.0.1",
    "64:ff9b:1::a00:1",
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",
    "2001:0:a00:1::",
    "2002:a00:1::1",
    "64:ff9b::10.0.0.1",
];

#[test]
fn the_fetcher_refuses_a_url_with_a_private_ipv6_form_before_connecting() {
    let home = Home::new(json!({}));
    let mut not_refused = Vec::new();
    for ip in PRIVATE_LITERALS {
        let url = format!("http://[{ip}]/feed.xml");
        let out = home.run(&["discovery", "fetch", &url]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url} was fetched");
        if !stderr.contains("is a private address (network.allowPrivateHosts is off)") {
            not_refused.push(stderr.trim().to_string());
        }
    }
    assert_eq!(not_refused, Vec::<String>::new());
}
