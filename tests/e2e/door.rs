//! One door to the outside: the real binary's outbound requests cannot be
//! routed around the guard by a proxy in its environment.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use serde_json::json;

use ambient::clock::{Clock, ManualClock};

use crate::support::feed_server::FeedServer;
use crate::support::home::Home;
use crate::support::model_server::Scripted;
use crate::support::serve;
use crate::support::world::{GENERAL, World, settings};

const FEED: &str = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>canary</title>
<item><title>canary item</title><link>https://example.com/a</link></item></channel></rss>"#;

/// A server on 127.0.0.1 that counts every request it gets (as a proxy or
/// as a target) and answers with a small valid feed.
fn canary() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = Router::new().fallback(move || {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            ([("content-type", "application/rss+xml")], FEED)
        }
    });
    let (listener, url) = serve::bind();
    serve::spawn(listener, app);
    (url, hits)
}

fn localhost(url: &str) -> String {
    url.replace("127.0.0.1", "localhost")
}

#[test]
fn proxies_in_the_environment_are_ignored_and_private_names_refused() {
    let (proxy, proxied) = canary();
    let (target, targeted) = canary();
    let home = Home::new(json!({}));
    let url = format!("{}/feed.xml", localhost(&target));
    let mut cmd = home.command(&["discovery", "fetch", &url]);
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env(var, &proxy);
    }
    let out = cmd
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "fetched: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains("private address"), "{stderr}");
    assert_eq!(proxied.load(Ordering::SeqCst), 0, "the proxy was used");
    assert_eq!(targeted.load(Ordering::SeqCst), 0, "the target was reached");
}

#[test]
fn with_network_proxy_a_private_name_is_refused_before_the_proxy_sees_it() {
    let (proxy, proxied) = canary();
    let home = Home::new(json!({ "network": { "proxy": proxy } }));
    let out = home.run(&["discovery", "fetch", "http://localhost:9/feed.xml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "fetched: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains("localhost resolves to a private address"),
        "{stderr}"
    );
    assert_eq!(proxied.load(Ordering::SeqCst), 0, "the proxy was asked");
}

#[test]
fn network_proxy_is_used_when_set() {
    let (proxy, proxied) = canary();
    let home = Home::new(json!({ "network": { "proxy": proxy, "allowPrivateHosts": true } }));
    // Port 9 has no server: only the proxy can answer.
    let out = home.run(&["discovery", "fetch", "http://localhost:9/feed.xml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("canary item"), "{stdout}");
    assert_eq!(proxied.load(Ordering::SeqCst), 1);
}

/// The text of the tool result the model was shown after one `web_search`.
async fn search_result(feeds: &FeedServer, endpoint_is_ours: bool) -> String {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    s.initiative.text.allow_active_curiosity = true;
    s.network.search_base_url = feeds.url.clone();
    s.network.search_allow_private = endpoint_is_ours;
    let world = World::start(s).await;
    world
        .model
        .push(Scripted::tool("web_search", json!({"query": "crabs"})))
        .push(Scripted::tool(
            "decide",
            json!({"action": "drop", "reason": "read enough"}),
        ));
    world.tick().await;
    let requests = world.model.requests();
    assert_eq!(
        requests.len(),
        2,
        "the search result went back to the model"
    );
    requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("")
}

#[tokio::test]
async fn a_20_mb_search_answer_is_refused_not_read_whole() {
    let feeds = FeedServer::start_at(ManualClock::at_test_epoch().now());
    let snippet = "c".repeat(20_000_000);
    let answer = json!({"results": [{"title": "Crabs", "url": "https://crabs.example/", "content": snippet}]});
    feeds.set("/search", "application/json", answer.to_string());
    let text = search_result(&feeds, true).await;
    assert!(
        text.contains("the search service failed: the response is larger than 1000000 bytes"),
        "{}",
        &text[..text.len().min(300)]
    );
}

#[tokio::test]
async fn a_search_redirect_to_a_private_address_is_refused() {
    let feeds = FeedServer::start_at(ManualClock::at_test_epoch().now());
    let (target, targeted) = canary();
    feeds.redirect("/search", &format!("{}/internal", localhost(&target)));
    let text = search_result(&feeds, true).await;
    assert!(
        text.contains("refused: a redirect away from the operator's endpoint"),
        "{text}"
    );
    assert_eq!(
        targeted.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}

#[tokio::test]
async fn a_private_search_endpoint_needs_the_operators_setting() {
    let feeds = FeedServer::start_at(ManualClock::at_test_epoch().now());
    feeds.set(
        "/search",
        "application/json",
        json!({"results": []}).to_string(),
    );
    let text = search_result(&feeds, false).await;
    assert!(text.contains("private address"), "{text}");
    assert_eq!(feeds.hits("/search"), 0);
}

/// A speech-to-text server that answers every upload 200 with `body`.
fn stt_answering(content_type: &'static str, body: String) -> String {
    let app = Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", content_type)], body) }
    });
    let (listener, url) = serve::bind();
    serve::spawn(listener, app);
    format!("{url}/v1")
}

async fn transcribe_from(base: String) -> Result<String, String> {
    transcribe_with(base, true).await.0
}

/// A transcription from `base` (the operator's own when `ours`), and the usage rows it left.
async fn transcribe_with(
    base: String,
    ours: bool,
) -> (
    Result<String, String>,
    Vec<ambient::store::usage::UsageRecord>,
) {
    let mut s = settings();
    s.voice.transcription.base_url = base;
    s.voice.transcription.allow_private = ours;
    let world = World::start(s).await;
    let app = &world.app;
    let transcriber = ambient::voice::transcribe::Transcriber::new(
        app.settings.clone(),
        app.secrets.clone(),
        app.stores(),
        app.clock.clone(),
    );
    let result = transcriber
        .transcribe(None, b"RIFF....WAVE".to_vec(), 1.0)
        .await
        .map_err(|e| e.to_string());
    (
        result,
        app.store()
            .usage()
            .usage_list(&Default::default(), None)
            .unwrap(),
    )
}

#[tokio::test]
async fn a_non_json_speech_to_text_answer_is_an_error_not_a_transcript() {
    let page = "<html><body>Please log in to the Wi-Fi</body></html>";
    let base = stt_answering("text/html", page.into());
    let err = transcribe_from(base).await.unwrap_err();
    assert!(
        err.starts_with("the speech-to-text answer is not JSON with a \"text\": <html>"),
        "{err}"
    );
}

#[tokio::test]
async fn a_huge_speech_to_text_answer_is_cut_off_not_read_whole() {
    let text = "a".repeat(5_000_000);
    let base = stt_answering("application/json", json!({ "text": text }).to_string());
    let err = transcribe_from(base).await.unwrap_err();
    assert_eq!(
        err,
        "the answer is larger than 2000000 bytes (network.maxResponseBytes)"
    );
}

/// An image generator that answers every request 200 with `body`.
fn images_answering(body: String) -> String {
    let app = Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "application/json")], body) }
    });
    let (listener, url) = serve::bind();
    serve::spawn(listener, app);
    url
}

/// The generator's error, or how many bytes of image it gave.
async fn generate_from(base: String) -> Result<usize, String> {
    generate_with(base, true).await.0
}

/// The generator at `base` (the operator's own when `ours`): its error or
/// how many bytes of image it gave, and the usage rows it left.
async fn generate_with(
    base: String,
    ours: bool,
) -> (
    Result<usize, String>,
    Vec<ambient::store::usage::UsageRecord>,
) {
    let mut s = settings();
    s.initiative.discovery.image_generation.base_url = base;
    s.initiative.discovery.image_generation.allow_private = ours;
    let world = World::start(s.clone()).await;
    let now = world.clock.now();
    let result = ambient::initiative::media::generate_image(
        &s,
        &ambient::settings::Secrets::default(),
        "a crab",
        &world.app.stores(),
        crate::support::world::GUILD_A,
        now,
    )
    .await
    .map(|png| png.len())
    .map_err(|e| e.to_string());
    (
        result,
        world
            .app
            .store()
            .usage()
            .usage_list(&Default::default(), None)
            .unwrap(),
    )
}

#[tokio::test]
async fn a_60_mb_image_answer_is_refused_not_read_whole() {
    let b64 = "A".repeat(60_000_000);
    let base = images_answering(json!({ "data": [{ "b64_json": b64 }] }).to_string());
    let err = generate_from(base).await.unwrap_err();
    assert_eq!(
        err,
        "the image generator's answer is larger than 35018068 bytes"
    );
}

#[tokio::test]
async fn an_image_over_discords_attachment_limit_is_refused_before_decoding() {
    // 35 MB of base64 fits the answer limit but decodes to 26.25 MB (> 25 MiB).
    let b64 = "A".repeat(35_000_000);
    let base = images_answering(json!({ "data": [{ "b64_json": b64 }] }).to_string());
    let err = generate_from(base).await.unwrap_err();
    assert_eq!(
        err,
        "the image is larger than Discord's 26214400-byte attachment limit"
    );
}

#[tokio::test]
async fn a_speech_to_text_redirect_is_not_followed() {
    let (target, targeted) = canary();
    let location = format!("{}/v1/audio/transcriptions", localhost(&target));
    let to = location.clone();
    let app = Router::new().fallback(move || {
        let to = to.clone();
        async move { (axum::http::StatusCode::FOUND, [("location", to)]) }
    });
    let (listener, url) = serve::bind();
    serve::spawn(listener, app);
    let err = transcribe_from(format!("{url}/v1")).await.unwrap_err();
    assert_eq!(
        err,
        format!(
            "the speech-to-text endpoint was refused: a POST is not redirected: \
             {url}/v1/audio/transcriptions answered 302 pointing to {location}"
        )
    );
    assert_eq!(
        targeted.load(Ordering::SeqCst),
        0,
        "the upload followed the redirect"
    );
}

#[tokio::test]
async fn an_image_provider_quoting_the_key_it_refused_never_stores_the_key() {
    const KEY: &str = "sk-img-canary-8c1e55";
    let app = Router::new().fallback(|| async {
        (
            axum::http::StatusCode::UNAUTHORIZED,
            [("content-type", "application/json")],
            json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}).to_string(),
        )
    });
    let (listener, url) = serve::bind();
    serve::spawn(listener, app);
    let mut s = settings();
    s.initiative.discovery.image_generation.base_url = url;
    s.initiative.discovery.image_generation.allow_private = true;
    let world = World::start(s.clone()).await;
    let secrets = ambient::settings::Secrets {
        image_api_key: Some(ambient::settings::Secret::new(KEY)),
        ..Default::default()
    };
    let err = ambient::initiative::media::generate_image(
        &s,
        &secrets,
        "a crab",
        &world.app.stores(),
        crate::support::world::GUILD_A,
        world.clock.now(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "the image generator refused (401): Incorrect API key provided: ***"
    );
    let rows = world
        .app
        .store()
        .usage()
        .usage_list(&Default::default(), None)
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].detail.contains(KEY), "{}", rows[0].detail);
}

#[tokio::test]
async fn an_image_generator_on_a_private_address_needs_its_setting() {
    for name in ["127.0.0.1", "localhost"] {
        let (generator, reached) = canary();
        let (result, usage) = generate_with(generator.replace("127.0.0.1", name), false).await;
        let err = result.unwrap_err();
        assert!(
            err.starts_with("the image generator was refused: ")
                && err.ends_with(
                    "private address (network.allowPrivateHosts is off); if it is your own \
                     server, set initiative.discovery.imageGeneration.allowPrivate to true"
                ),
            "{err}"
        );
        assert_eq!(usage.len(), 1, "one usage row for the refused call");
        assert_eq!(usage[0].outcome, "client_error");
        assert_eq!(usage[0].detail, err);
        assert_eq!(
            reached.load(Ordering::SeqCst),
            0,
            "{name}: the generator got a request"
        );
    }
}

#[tokio::test]
async fn a_speech_to_text_endpoint_on_a_private_address_needs_its_setting() {
    let stt = crate::support::stt_server::SttServer::start();
    stt.say("hello");
    let (result, usage) = transcribe_with(stt.base.clone(), false).await;
    let err = result.unwrap_err();
    assert!(
        err.starts_with("the speech-to-text endpoint was refused: 127.0.0.1 is a private address")
            && err.ends_with("set voice.transcription.allowPrivate to true"),
        "{err}"
    );
    assert_eq!(usage.len(), 1, "refused once, not retried");
    assert_eq!(usage[0].outcome, "client_error");
    assert_eq!(usage[0].detail, err);
    assert_eq!(stt.requests(), 0, "the upload reached the server");
}

#[tokio::test]
async fn an_image_generators_redirect_is_not_followed() {
    let (target, targeted) = canary();
    let location = format!("{}/v1/images/generations", localhost(&target));
    let to = location.clone();
    let app = Router::new().fallback(move || {
        let to = to.clone();
        async move {
            (
                axum::http::StatusCode::TEMPORARY_REDIRECT,
                [("location", to)],
            )
        }
    });
    let (listener, url) = serve::bind();
    serve::spawn(listener, app);
    let err = generate_from(url.clone()).await.unwrap_err();
    assert_eq!(
        err,
        format!(
            "the image generator was refused: a POST is not redirected: \
             {url}/images/generations answered 307 pointing to {location}"
        )
    );
    assert_eq!(
        targeted.load(Ordering::SeqCst),
        0,
        "the request followed the redirect"
    );
}

#[tokio::test]
async fn an_ambient_post_asking_an_image_of_a_private_generator_says_which_setting_allows_it() {
    let mut s = settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    s.initiative.discovery.allow_image_posts = true;
    let model = crate::support::model_server::ModelServer::start();
    s.initiative.discovery.image_generation.base_url = model.openai_base();
    let world = World::start_in(
        s,
        Arc::new(tempfile::tempdir().unwrap()),
        model,
        ManualClock::at_test_epoch(),
    )
    .await;
    world.model.push(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": "made you this", "reason": "r",
               "media": {"kind": "image", "prompt": "a cat made of rust"}}),
    ));
    world.tick().await;
    let said = world.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0].content, "made you this");
    assert!(said[0].files.is_empty(), "an image was attached");
    let skips = world.journal(ambient::vocab::journal::Kind::InitiativeSkip);
    assert!(
        skips.iter().any(|e| e.summary == "posted without the requested image"
            && e.reason.contains(
                "if it is your own server, set initiative.discovery.imageGeneration.allowPrivate to true"
            )),
        "{skips:#?}"
    );
    assert!(
        !world
            .model
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/images/generations")),
        "the generator got a request"
    );
}

#[tokio::test]
async fn an_image_generator_that_never_answers_is_given_up_after_its_timeout_setting() {
    let app = Router::new().fallback(std::future::pending::<String>);
    let (listener, url) = serve::bind();
    serve::spawn(listener, app);
    let mut s = settings();
    s.initiative.discovery.image_generation.base_url = url;
    s.initiative.discovery.image_generation.allow_private = true;
    s.initiative.discovery.image_generation.timeout_seconds = 1;
    let world = World::start(s.clone()).await;
    let err = ambient::initiative::media::generate_image(
        &s,
        &ambient::settings::Secrets::default(),
        "a crab",
        &world.app.stores(),
        crate::support::world::GUILD_A,
        world.clock.now(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "the image generator gave no complete answer in time \
         (initiative.discovery.imageGeneration.timeoutSeconds)"
    );
}
