//! The dashboard as an owner uses it, over HTTP: every page answers with
//! what the store holds (the journal's why, the month's spend, the held
//! thought, the memories), hostile text stays text, a dashboard beyond
//! loopback shows nothing without its token, actions need their CSRF token
//! and a confirmation, and a forget removes the row. `ambient dashboard`,
//! `ambient run` and the console say where it is; `scripts/dashboard-check.sh`
//! loads each page in headless Chromium.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use ambient::clock::Clock;
use ambient::dashboard::{self, Served, Site};
use ambient::ids::{ChannelId, GuildId, MessageId, UserId};
use ambient::memory::manual;
use ambient::store::memory::FactFilter;
use ambient::store::usage::UsageRecord;
use ambient::vocab::fact::{FactKind, Importance, Scope, ScopeKind};
use ambient::vocab::journal::{Entry, Kind};
use ambient::vocab::pending::PendingThought;
use chrono::Duration;
use regex::Regex;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::home::{Home, notices};
use crate::support::world::{self, B_GENERAL, GENERAL, GUILD_A, GUILD_B, MEMES, World};

const REPLY_WHY: &str = "ada asked when the next meetup is";
const LINKED: MessageId = MessageId(1_234_567_890_123);
const DRAFT_1: &str = "anyone else following the launch?";
const DRAFT_2: &str = "the launch slipped a week, anyone surprised?";
const MEETUP: &str = "Tidepool meets every Thursday at 19:00 in the library";
const PEANUTS: &str = "dave is allergic to peanuts";
const BOOK_CLUB: &str = "dave runs the Night Owls book club";
const BEES: &str = "erin keeps bees on the roof";
const CATS: &str = "#memes prefers cat pictures on Fridays";

const FEED: &str = "https://feeds.example.org/launches.xml";
const BROKEN_FEED: &str = "https://feeds.example.org/gone.xml";

const DAVE: UserId = UserId(7001);
const ERIN: UserId = UserId(7002);

/// A month of model use, the same at every run: for `back` days ago, each
/// role's calls (each of `tokens in`, `tokens out`). Some roles skip days.
fn daily_usage(back: i64) -> Vec<(&'static str, u64, u64, u64)> {
    let wave = |n: i64, m: i64| (back * n % m) as u64;
    let mut day = vec![
        ("reply", 2 + wave(5, 4), 900 + 120 * wave(7, 9), 180),
        ("ambient", 1 + wave(3, 3), 500 + 90 * wave(11, 6), 90),
    ];
    if back % 3 != 1 {
        day.push(("reflex", 1, 250 + 40 * wave(13, 5), 20));
    }
    if back % 2 == 0 {
        day.push(("extract", 1, 700, 60));
    }
    day
}

const USAGE_DAYS: i64 = 30;

/// (day, role) pairs with use: a bar each in both charts.
fn seeded_bars() -> usize {
    (0..USAGE_DAYS).map(|d| daily_usage(d).len()).sum()
}

/// A bot's store with a day of decisions, a week of spend, a held thought and memories.
async fn seeded_world() -> World {
    let mut settings = world::settings();
    settings.initiative.discovery.rss_feeds = vec![FEED.into()];
    let w = World::start(settings).await;
    let store = &w.app.store();
    let now = w.clock.now();
    store
        .messages()
        .upsert_guild(GUILD_A, "Tidepool", now)
        .unwrap();
    store
        .messages()
        .upsert_guild(GUILD_B, "Night Owls", now)
        .unwrap();
    seed_feeds(&w);
    for back in 0..USAGE_DAYS {
        for (role, calls, tin, tout) in daily_usage(back) {
            for _ in 0..calls {
                let at = now - Duration::days(back);
                store
                    .usage()
                    .usage_append(&usage(at, role, tin, tout, "ok"))
                    .unwrap();
            }
        }
    }
    // A call the ambient budget refused: counted as refused, not as a call.
    store
        .usage()
        .usage_append(&usage(now - Duration::days(1), "ambient", 0, 0, "refused"))
        .unwrap();

    let j = &w.app.journal;
    let step = || w.clock.advance(Duration::minutes(7));
    j.record(Entry::new(Kind::Route, "routed to reply").place(Some(GUILD_A), Some(GENERAL)));
    step();
    j.record(
        Entry::new(Kind::Reply, "answered ada in #general")
            .place(Some(GUILD_A), Some(GENERAL))
            .message(LINKED)
            .salience(0.92)
            .reason(REPLY_WHY),
    );
    step();
    j.record(
        Entry::new(Kind::Reflex, "reflex greeting: reacted")
            .place(Some(GUILD_A), Some(GENERAL))
            .reason("Wave back at a plain hello"),
    );
    step();
    j.record(
        Entry::new(Kind::Gate, "initiative stopped at the cooldown gate")
            .guild(Some(GUILD_A))
            .reason("the last post was 20 min ago; initiative.text.minMinutesBetweenPosts is 60"),
    );
    step();
    let held_at = w.clock.now();
    for (revision, draft) in [(1, DRAFT_1), (2, DRAFT_2)] {
        j.record(
            Entry::new(
                Kind::InitiativeSkip,
                format!("held a thought (revision {revision})"),
            )
            .place(Some(GUILD_A), Some(MEMES))
            .reason(format!("revision {revision}: the room is mid-conversation"))
            .data(json!({"action": "hold", "draft": draft, "revision": revision})),
        );
        step();
    }
    let mut thought = PendingThought::new(
        GUILD_A,
        DRAFT_1.into(),
        Some(MEMES),
        "revision 1: the room is mid-conversation".into(),
        None,
        held_at,
        Duration::minutes(180),
    );
    thought.refine(
        DRAFT_2.into(),
        None,
        "revision 2: the room is mid-conversation".into(),
        None,
        w.clock.now(),
    );
    store.initiative().save_pending_thought(&thought).unwrap();
    j.record(
        Entry::new(Kind::InitiativePost, "posted in #memes")
            .place(Some(GUILD_A), Some(MEMES))
            .reason("the launch thread went quiet and the link fits"),
    );
    step();
    j.record(
        Entry::new(Kind::Error, "could not send a reply")
            .place(Some(GUILD_B), Some(B_GENERAL))
            .reason("Discord refused: Missing Permissions (50013)"),
    );

    let remember = |scope: Scope, kind, importance, text: &str, author: Option<(UserId, &str)>| {
        let fact = manual(
            scope,
            kind,
            importance,
            text,
            author.map(|(id, n)| (id, n.to_string())),
            w.clock.now(),
        );
        w.app.memory.remember(fact, None).unwrap();
    };
    remember(
        Scope::guild(GUILD_A),
        FactKind::Decision,
        Some(Importance::High),
        MEETUP,
        None,
    );
    remember(
        Scope::user(Some(GUILD_A), DAVE),
        FactKind::Fact,
        None,
        PEANUTS,
        Some((DAVE, "dave")),
    );
    remember(
        Scope::user(Some(GUILD_B), DAVE),
        FactKind::Fact,
        None,
        BOOK_CLUB,
        Some((DAVE, "dave")),
    );
    remember(
        Scope::user(Some(GUILD_A), ERIN),
        FactKind::Fact,
        None,
        BEES,
        Some((ERIN, "erin")),
    );
    remember(
        Scope::channel(Some(GUILD_A), MEMES),
        FactKind::Preference,
        None,
        CATS,
        None,
    );
    w
}

/// The settings' feed: three items, one shared in #memes that drew two
/// reactions; a feed a member added that fails.
fn seed_feeds(w: &World) {
    use ambient::store::discovery::{FetchOutcome, NewItem};
    let store = &w.app.store();
    let now = w.clock.now();
    let feed = store.discovery().upsert_source("rss", FEED).unwrap();
    store
        .discovery()
        .record_fetch(
            feed,
            &FetchOutcome::Ok {
                etag: None,
                last_modified: None,
                status: "200 OK".into(),
            },
            now,
            Duration::minutes(30),
        )
        .unwrap();
    let items: Vec<NewItem> = ["Launch slips a week", "Pad 39A rebuilt", "Booster caught"]
        .iter()
        .enumerate()
        .map(|(i, title)| NewItem {
            url: format!("https://news.example.org/{i}"),
            canonical_url: format!("https://news.example.org/{i}"),
            title: title.to_string(),
            title_key: title.to_lowercase(),
            summary: String::new(),
            published_at: Some(now),
            media: None,
        })
        .collect();
    store
        .discovery()
        .insert_feed_items(feed, &items, now, now - Duration::days(7))
        .unwrap();
    let (item, _) = store
        .discovery()
        .feed_item_by_canonical("https://news.example.org/0")
        .unwrap()
        .unwrap();
    let post = MessageId(5_551);
    store
        .discovery()
        .record_share(item, GUILD_A, MEMES, post, now)
        .unwrap();
    for (user, emoji) in [(DAVE, "🔥"), (ERIN, "🚀")] {
        store
            .discovery()
            .record_reaction(post, user, emoji, Some(GUILD_A), MEMES, now)
            .unwrap();
    }
    store
        .discovery()
        .add_guild_source(GUILD_A, "rss", BROKEN_FEED, &format!("user:{DAVE}"), now)
        .unwrap();
    let broken = store.discovery().upsert_source("rss", BROKEN_FEED).unwrap();
    store
        .discovery()
        .record_fetch(
            broken,
            &FetchOutcome::Failed("HTTP 404 Not Found".into()),
            now,
            Duration::minutes(30),
        )
        .unwrap();
}

fn usage(
    at: chrono::DateTime<chrono::Utc>,
    role: &str,
    tin: u64,
    tout: u64,
    outcome: &str,
) -> UsageRecord {
    UsageRecord {
        id: 0,
        at,
        role: role.into(),
        source: if role == "reply" { "user" } else { "ambient" }.into(),
        guild: Some(GUILD_A),
        provider: "openai".into(),
        model: "scripted".into(),
        pay_per_token: false,
        tokens_in: tin,
        tokens_out: tout,
        latency_ms: 800,
        outcome: outcome.into(),
        detail: String::new(),
    }
}

/// A dashboard served by `w`'s running bot on `bind`, and a client that follows no redirect.
pub(crate) struct Open {
    served: Served,
    http: reqwest::Client,
}

impl Open {
    pub(crate) async fn start(w: &World, bind: &str) -> Self {
        let served = dashboard::start(
            Site::of_app(&w.app),
            bind.parse().unwrap(),
            &w.app.data_dir,
            false,
        )
        .await
        .unwrap();
        Self {
            served,
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.served.addr.port())
    }

    async fn send(
        &self,
        req: reqwest::RequestBuilder,
    ) -> (StatusCode, reqwest::header::HeaderMap, String) {
        let res = req.send().await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        (status, headers, res.text().await.unwrap())
    }

    pub(crate) async fn get(&self, path: &str) -> (StatusCode, String) {
        let (s, _, body) = self.send(self.http.get(self.url(path))).await;
        (s, body)
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        let (s, _, body) = self.send(self.http.post(self.url(path)).form(form)).await;
        (s, body)
    }
}

/// `text` as the templates print it.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}

/// The CSRF token in a page's forms.
pub(crate) fn csrf_in(html: &str) -> String {
    Regex::new(r#"name="csrf" value="([0-9a-f]{64})""#)
        .unwrap()
        .captures(html)
        .unwrap_or_else(|| panic!("no CSRF token in the page:\n{html}"))[1]
        .to_string()
}

fn fact_id(w: &World, content: &str) -> String {
    w.app
        .store()
        .memory()
        .list_facts(&FactFilter::default())
        .unwrap()
        .into_iter()
        .find(|f| f.content == content)
        .unwrap_or_else(|| panic!("no fact {content:?}"))
        .id
}

fn facts_about(w: &World, user: UserId) -> Vec<String> {
    w.app
        .store()
        .memory()
        .list_facts(&FactFilter {
            scope: Some(ScopeKind::User),
            user: Some(user),
            include_inactive: true,
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|f| f.content)
        .collect()
}

/// Bars of a chart: the rectangles placed in the plot (not the legend's swatches).
fn bars(html: &str, chart: &str) -> usize {
    let start = html
        .find(&format!(r#"id="{chart}""#))
        .unwrap_or_else(|| panic!("no chart {chart} in the page"));
    let end = start + html[start..].find("</svg>").unwrap();
    Regex::new(r#"<rect class="role-[a-z]+" x="#)
        .unwrap()
        .find_iter(&html[start..end])
        .count()
}

#[tokio::test]
async fn every_page_shows_what_the_store_holds() {
    let w = seeded_world().await;
    let d = Open::start(&w, "127.0.0.1:0").await;

    let (status, today) = d.get("/").await;
    assert_eq!(status, StatusCode::OK, "{today}");
    assert_eq!(
        today.matches(r#"<div class="entry k-"#).count(),
        7,
        "reply, reflex, gate, two holds, post, error: {today}"
    );
    for text in [
        "answered ada in #general",
        REPLY_WHY,
        "salience 0.92",
        "Tidepool · #general",
        "initiative stopped at the cooldown gate",
        "initiative.text.minMinutesBetweenPosts is 60",
        "posted in #memes",
        "the launch thread went quiet and the link fits",
        "Discord refused: Missing Permissions (50013)",
        "Night Owls · #b-general",
    ] {
        assert!(
            today.contains(text),
            "the timeline lacks {text:?}:\n{today}"
        );
    }
    assert!(today.contains(&format!(
        r#"href="{}""#,
        escaped(&format!(
            "https://discord.com/channels/{GUILD_A}/{GENERAL}/{LINKED}"
        ))
    )));
    assert!(!today.contains("routed to reply"), "routing is not an act");
    let (_, everything) = d.get("/?kind=all").await;
    assert!(everything.contains("routed to reply"));
    let (_, night_owls) = d.get(&format!("/?guild={GUILD_B}")).await;
    assert_eq!(night_owls.matches(r#"<div class="entry k-"#).count(), 1);
    assert!(night_owls.contains("could not send a reply"));
    let (_, gates) = d.get("/?kind=gate").await;
    assert_eq!(gates.matches(r#"<div class="entry k-"#).count(), 1);

    let (status, spend) = d.get("/spend").await;
    assert_eq!(status, StatusCode::OK, "{spend}");
    assert_eq!(bars(&spend, "tokens-per-day"), seeded_bars());
    assert_eq!(bars(&spend, "calls-per-day"), seeded_bars());
    let (_, calls, tin, tout) = daily_usage(0)[0];
    assert!(
        spend.contains(&format!(
            "<title>2026-01-05 — reply: {} tokens</title>",
            calls * (tin + tout)
        )),
        "today's reply bar: {spend}"
    );
    let (_, calls, _, _) = daily_usage(1)[1];
    assert!(
        spend.contains(&format!(
            "<title>2026-01-04 — ambient: {calls} calls</title>"
        )),
        "yesterday's ambient calls, the refused one not among them"
    );
    assert!(spend.contains(r#"id="budgets""#));
    assert!(spend.contains("budget.dailyTokens.ambient"));
    assert!(
        spend.contains("Tidepool: the bot&#x27;s own work"),
        "{spend}"
    );
    assert!(spend.contains("rate limited 0 time(s) in the last hour"));
    assert!(spend.contains(r#"<ul class="card plain" id="garden">"#));

    let (status, initiative) = d.get("/initiative").await;
    assert_eq!(status, StatusCode::OK, "{initiative}");
    let cap = w.app.settings.global().initiative.text.max_posts_per_day;
    let tidepool = &initiative[initiative
        .find(&format!(r#"id="guild-{GUILD_A}""#))
        .unwrap()..];
    let tidepool = &tidepool[..tidepool.find("</section>").unwrap()];
    assert!(
        tidepool.contains(&format!("<b>1/{cap}</b>posts in the last 24 h")),
        "{tidepool}"
    );
    assert!(
        tidepool.contains(&format!(r#"<p class="draft text">{DRAFT_2}</p>"#)),
        "{tidepool}"
    );
    assert!(
        tidepool.contains(DRAFT_1),
        "the first revision is listed: {tidepool}"
    );
    assert!(tidepool.contains("Held thought, for #memes"));
    assert!(tidepool.contains("initiative stopped at the cooldown gate"));
    // The status widget's own words for the next look.
    let widget = ambient::commands::status::widget(
        &ambient::commands::status::Sources::of(&w.app),
        Some(GUILD_A),
    );
    let look = widget
        .iter()
        .find_map(|l| l.strip_prefix("initiative: "))
        .unwrap();
    assert!(
        tidepool.contains(&format!("<b>Next look:</b> {}</p>", escaped(look))),
        "{look:?} in {tidepool}"
    );
    let feed = tidepool
        .split("<tr>")
        .find(|row| row.contains(&escaped(FEED)))
        .unwrap_or_else(|| panic!("no row for the feed: {tidepool}"));
    assert!(
        feed.contains(r#"<td>settings</td><td>49m ago</td><td class="n">3</td><td class="n">1</td><td class="n">2</td><td class="n">0</td><td class="n">0</td><td class="text">200 OK</td>"#),
        "items 3, shared 1, reactions 2, replies 0, failures 0: {feed}"
    );
    let broken = tidepool
        .split("<tr>")
        .find(|row| row.contains(&escaped(BROKEN_FEED)))
        .unwrap_or_else(|| panic!("no row for the broken feed: {tidepool}"));
    assert!(broken.contains("added by a member"), "{broken}");
    assert!(
        broken.contains(r#"<td class="n warn">1</td><td class="text">failed: HTTP 404 Not Found</td><td>in 11m</td>"#),
        "one failure, the next try an hour after it: {broken}"
    );
    assert!(initiative.contains(&format!(r#"id="guild-{GUILD_B}""#)));

    let (status, memory) = d.get("/memory").await;
    assert_eq!(status, StatusCode::OK, "{memory}");
    assert_eq!(memory.matches(r#"<tr class="fact""#).count(), 5, "{memory}");
    for text in [MEETUP, PEANUTS, BOOK_CLUB, BEES, CATS, "decision", "high"] {
        assert!(memory.contains(text), "the memory page lacks {text:?}");
    }
    assert!(memory.contains(&format!(r#"<a href="/memory?user={DAVE}">dave</a>"#)));
    let (_, searched) = d.get("/memory?q=peanuts").await;
    assert_eq!(
        searched.matches(r#"<tr class="fact""#).count(),
        1,
        "{searched}"
    );
    assert!(searched.contains(PEANUTS));
    let (_, night_owls) = d.get(&format!("/memory?guild={GUILD_B}")).await;
    assert_eq!(night_owls.matches(r#"<tr class="fact""#).count(), 1);
    assert!(night_owls.contains(BOOK_CLUB));
    let (_, about_dave) = d.get(&format!("/memory?user={DAVE}")).await;
    assert_eq!(about_dave.matches(r#"<tr class="fact""#).count(), 2);
    d.served.stop().await;
}

#[tokio::test]
async fn hostile_text_is_text_on_every_page() {
    let w = seeded_world().await;
    let now = w.clock.now();
    let store = &w.app.store();
    store
        .messages()
        .upsert_channel(
            ChannelId(2999),
            Some(GUILD_A),
            "<img src=x onerror=alert(1)>",
            now,
        )
        .unwrap();
    store
        .messages()
        .upsert_guild(GuildId(1999), "<script>alert('guild')</script>", now)
        .unwrap();
    w.app.journal.record(
        Entry::new(Kind::Reply, "<script>alert('summary')</script>")
            .place(Some(GUILD_A), Some(ChannelId(2999)))
            .reason("\"><svg onload=alert('why')>"),
    );
    let fact = manual(
        Scope::guild(GUILD_A),
        FactKind::Fact,
        None,
        "<iframe src=//evil.example></iframe> remembered",
        Some((ERIN, "<b>erin</b>".into())),
        now,
    );
    w.app.memory.remember(fact, None).unwrap();
    let mut thought = store
        .initiative()
        .pending_thought(GUILD_A)
        .unwrap()
        .unwrap();
    thought.draft = "</p><script>alert('draft')</script>".into();
    store.initiative().save_pending_thought(&thought).unwrap();

    let d = Open::start(&w, "127.0.0.1:0").await;
    for path in [
        "/",
        "/spend",
        "/initiative",
        "/memory",
        "/memory?q=remembered",
        "/?since=%3Cscript%3Ealert(1)%3C/script%3E",
        "/memory?kind=%3Cimg%20src=x%3E",
    ] {
        let (status, html) = d.get(path).await;
        assert!(
            status == StatusCode::OK || status == StatusCode::BAD_REQUEST,
            "{path}: {status}"
        );
        for markup in ["<script", "<img", "<svg onload", "<iframe", "<b>erin"] {
            assert!(
                !html.contains(markup),
                "{path} carries {markup:?} as markup:\n{html}"
            );
        }
    }
    let (_, today) = d.get("/").await;
    assert!(
        today.contains("&lt;script&gt;alert(&#x27;summary&#x27;)&lt;&#x2f;script&gt;"),
        "{today}"
    );
    assert!(today.contains("&lt;img src=x onerror=alert(1)&gt;"));
    let (_, initiative) = d.get("/initiative").await;
    assert!(initiative.contains("&lt;&#x2f;p&gt;&lt;script&gt;"));
    let (_, memory) = d.get("/memory").await;
    assert!(memory.contains("&lt;iframe src=&#x2f;&#x2f;evil.example&gt;"));
    d.served.stop().await;
}

#[tokio::test]
async fn beyond_loopback_nothing_shows_without_the_token() {
    let w = seeded_world().await;
    let d = Open::start(&w, "0.0.0.0:0").await;
    let token = d
        .served
        .new_token
        .clone()
        .expect("a token is made at first start");
    let stored = std::fs::read_to_string(d.served.token_file.as_ref().unwrap()).unwrap();
    assert!(!stored.contains(&token), "only the token's hash is stored");
    let peanuts = fact_id(&w, PEANUTS);

    for path in [
        "/",
        "/spend",
        "/initiative",
        "/memory",
        "/memory/export",
        "/nowhere",
    ] {
        let (status, headers, body) = d.send(d.http.get(d.url(path))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert!(
            headers["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer")
        );
        assert!(body.contains("Sign in"), "{path}: {body}");
        for secret in [REPLY_WHY, PEANUTS, MEETUP, "Tidepool"] {
            assert!(
                !body.contains(secret),
                "{path} shows {secret:?} without the token"
            );
        }
    }
    let (status, _) = d.post("/memory/forget", &[("id", &peanuts)]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = d
        .send(d.http.get(d.url("/")).bearer_auth("amb_not-the-token"))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, today) = d.send(d.http.get(d.url("/")).bearer_auth(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(today.contains(REPLY_WHY));

    // The sign-in form: a wrong token is refused, the right one sets the session cookie.
    let (status, wrong) = d.post("/login", &[("token", "amb_guess")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(wrong.contains("That is not this dashboard&#x27;s token."));
    let (status, headers, _) = d
        .send(
            d.http
                .post(d.url("/login"))
                .form(&[("token", token.as_str())]),
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let cookie = headers["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_string();
    let (status, _, memory) = d
        .send(d.http.get(d.url("/memory")).header("cookie", &session))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(memory.contains(PEANUTS));

    // Signing out (an action: it needs the CSRF token) ends the session.
    let csrf = csrf_in(&memory);
    let (status, _, _) = d
        .send(
            d.http
                .post(d.url("/logout"))
                .header("cookie", &session)
                .form(&[("csrf", "")]),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = d
        .send(
            d.http
                .post(d.url("/logout"))
                .header("cookie", &session)
                .form(&[("csrf", csrf.as_str())]),
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, _, _) = d
        .send(d.http.get(d.url("/")).header("cookie", &session))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        facts_about(&w, DAVE).len(),
        2,
        "nothing was forgotten along the way"
    );
    d.served.stop().await;
}

#[tokio::test]
async fn forgetting_a_fact_needs_the_csrf_token_and_a_confirmation() {
    let w = seeded_world().await;
    let d = Open::start(&w, "127.0.0.1:0").await;
    let id = fact_id(&w, PEANUTS);

    let (status, confirm) = d.get(&format!("/memory/forget?id={id}")).await;
    assert_eq!(status, StatusCode::OK, "{confirm}");
    assert!(
        confirm.contains(PEANUTS),
        "the confirmation shows what goes"
    );
    assert!(confirm.contains(r#"<form method="post" action="&#x2f;memory&#x2f;forget">"#));
    assert!(
        w.app.store().memory().fact(&id).unwrap().is_some(),
        "asking is not forgetting"
    );
    let csrf = csrf_in(&confirm);

    let (status, refused) = d.post("/memory/forget", &[("id", &id)]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        refused.contains("CSRF token is missing or wrong"),
        "{refused}"
    );
    let forged = "0".repeat(64);
    let (status, _) = d
        .post("/memory/forget", &[("id", &id), ("csrf", &forged)])
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        w.app.store().memory().fact(&id).unwrap().is_some(),
        "a refused form changes nothing"
    );

    let (status, done) = d
        .post("/memory/forget", &[("id", &id), ("csrf", &csrf)])
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(
        done.contains(&format!("Forgotten: &quot;{PEANUTS}&quot;.")),
        "{done}"
    );
    assert!(
        w.app.store().memory().fact(&id).unwrap().is_none(),
        "the row is gone"
    );
    let journaled = w.journal(Kind::Memory);
    let line = journaled
        .iter()
        .find(|e| e.summary == format!("forgot: {PEANUTS}"))
        .expect("the journal says it was forgotten");
    assert_eq!(line.reason, "asked by the operator (dashboard)");
    let (_, memory) = d.get("/memory").await;
    assert!(!memory.contains(PEANUTS));
    assert_eq!(memory.matches(r#"<tr class="fact""#).count(), 4);
    let (status, _) = d
        .post("/memory/forget", &[("id", &id), ("csrf", &csrf)])
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    d.served.stop().await;
}

#[tokio::test]
async fn forget_me_for_a_person_removes_their_facts_in_every_server() {
    let w = seeded_world().await;
    let d = Open::start(&w, "127.0.0.1:0").await;

    let (status, confirm) = d.get(&format!("/memory/forget-me?user={DAVE}")).await;
    assert_eq!(status, StatusCode::OK, "{confirm}");
    assert!(confirm.contains("Run forget-me for dave"), "{confirm}");
    assert!(confirm.contains(PEANUTS) && confirm.contains(BOOK_CLUB));
    let csrf = csrf_in(&confirm);
    let (status, _) = d
        .post("/memory/forget-me", &[("user", &DAVE.to_string())])
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let forged = "0".repeat(64);
    let (status, _) = d
        .post(
            "/memory/forget-me",
            &[("user", &DAVE.to_string()), ("csrf", &forged)],
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(facts_about(&w, DAVE).len(), 2);

    let (status, done) = d
        .post(
            "/memory/forget-me",
            &[("user", &DAVE.to_string()), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(
        done.contains("2 fact(s) about member 7001 forgotten"),
        "{done}"
    );
    assert!(facts_about(&w, DAVE).is_empty());
    assert_eq!(
        facts_about(&w, ERIN),
        vec![BEES.to_string()],
        "only dave is forgotten"
    );
    let line = w
        .journal(Kind::Memory)
        .into_iter()
        .find(|e| e.summary == format!("forgot everything about member {DAVE}"))
        .expect("journaled");
    assert!(
        line.reason.contains("redacted by the operator (dashboard)"),
        "{}",
        line.reason
    );
    d.served.stop().await;
}

#[tokio::test]
async fn the_export_is_the_memory_export_format() {
    let w = seeded_world().await;
    let d = Open::start(&w, "127.0.0.1:0").await;
    let (status, headers, body) = d
        .send(
            d.http
                .get(d.url(&format!("/memory/export?guild={GUILD_A}"))),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        headers["content-disposition"],
        format!("attachment; filename=\"ambient-memory-{GUILD_A}-2026-01-05.json\"").as_str()
    );
    let facts = ambient::memory::portable::parse(&body).unwrap();
    assert_eq!(facts.len(), 4, "Tidepool's facts only");
    assert!(facts.iter().all(|f| f.scope.guild == Some(GUILD_A)));
    let (_, _, all) = d.send(d.http.get(d.url("/memory/export"))).await;
    assert_eq!(ambient::memory::portable::parse(&all).unwrap().len(), 5);
    let (status, bad) = d.get("/memory/export?guild=everywhere").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(bad.contains("guild: expected a server id (digits), got &quot;everywhere&quot;, or dm for direct messages"), "{bad}");
    d.served.stop().await;
}

#[tokio::test]
async fn bad_requests_are_named_and_requests_from_elsewhere_refused() {
    let w = seeded_world().await;
    let d = Open::start(&w, "127.0.0.1:0").await;
    let (status, headers, body) = d
        .send(d.http.get(d.url("/")).header("host", "evil.example:8377"))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a rebound name is refused");
    assert!(
        body.contains("answers only to its loopback address"),
        "{body}"
    );
    assert!(!body.contains(REPLY_WHY));
    assert_eq!(headers["x-frame-options"], "DENY");

    let (status, bad) = d.get("/?kind=replies").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        bad.contains("kind: unknown journal type &quot;replies&quot;; valid types: route"),
        "{bad}"
    );
    let (status, bad) = d.get("/?guild=tidepool").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        bad.contains("guild: expected a server id (digits)"),
        "{bad}"
    );
    let (status, bad) = d.get("/?since=400d").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(bad.contains("since: at most 31 days back"), "{bad}");
    let (status, bad) = d.get(&format!("/memory?q={}", "x".repeat(300))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(bad.contains("q: at most 200 characters, got 300"), "{bad}");
    let (status, _) = d.get("/memory/forget?id=nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let huge = "x".repeat(dashboard::MAX_BODY_BYTES + 1);
    let (status, _) = d.post("/memory/forget", &[("id", &huge)]).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    for path in ["/", "/memory", "/nowhere", "/?kind=x"] {
        let (_, headers, _) = d.send(d.http.get(d.url(path))).await;
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.starts_with("default-src 'none'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'") && !csp.contains("script-src"));
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["referrer-policy"], "no-referrer");
        assert_eq!(headers["x-frame-options"], "DENY");
    }
    let (_, html) = d.get("/").await;
    assert!(
        !html.contains("<script") && !html.contains("style=\""),
        "no script, no inline style"
    );
    d.served.stop().await;
}

/// The README's example `command` (a line of its own), as words: it has no shell syntax.
fn readme_command(command: &str) -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.trim() == command)
        .unwrap_or_else(|| panic!("the README has no example {command:?}"))
        .trim();
    assert!(!line.contains(['|', '>', '<', '$', '&', ';']), "{line}");
    line.split_whitespace().map(String::from).collect()
}

/// `ambient …` from the README, run in `home` until it has said where it listens.
pub(crate) struct Running {
    child: Child,
    said: Vec<String>,
    pub(crate) port: u16,
}

impl Running {
    pub(crate) fn start(home: &Home, words: &[String]) -> Self {
        assert_eq!(words[0], "ambient");
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let mut child = home
            .command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut said = Vec::new();
        let port = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("it stopped without serving; it said {said:#?}"))
                .unwrap();
            said.push(line.clone());
            if line == "Ctrl-C stops it." {
                let url = said
                    .iter()
                    .find_map(|l| l.strip_prefix("dashboard on http://"))
                    .unwrap_or_else(|| panic!("no address in {said:#?}"));
                let addr = url.split('/').next().unwrap();
                break addr.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        Self { child, said, port }
    }

    fn token(&self) -> Option<String> {
        self.said
            .iter()
            .find_map(|l| l.split(": ").last().filter(|t| t.starts_with("amb_")))
            .map(String::from)
    }

    pub(crate) fn stop(mut self) {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "SIGTERM stops it cleanly: {status}");
    }
}

async fn fetch(port: u16, path: &str, token: Option<&str>) -> (StatusCode, String) {
    let mut req = reqwest::Client::new().get(format!("http://127.0.0.1:{port}{path}"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap();
    (res.status(), res.text().await.unwrap())
}

#[tokio::test]
async fn ambient_dashboard_shows_the_store_and_its_token_once() {
    let home = Home::new(json!({
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9"},
        "dashboard": {"bind": "0.0.0.0:0"},
    }));
    {
        let store = ambient::store::Store::open(&home.data_dir()).unwrap();
        let now = chrono::Utc::now();
        store
            .messages()
            .upsert_guild(GUILD_A, "Tidepool", now)
            .unwrap();
        let mut e = Entry::new(Kind::Reply, "answered ada in #general").reason(REPLY_WHY);
        e.at = now;
        e.guild = Some(GUILD_A);
        store.journal().journal_append(&e).unwrap();
    }
    let first = Running::start(&home, &readme_command("ambient dashboard"));
    assert!(
        first.said[0].ends_with("(beyond loopback: the token is required)"),
        "{:#?}",
        first.said
    );
    let token = first.token().expect("the first start shows the token");
    assert_eq!(
        fetch(first.port, "/", None).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (status, today) = fetch(first.port, "/", Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(today.contains(REPLY_WHY), "{today}");
    assert!(today.contains("read from the store"), "{today}");
    first.stop();

    let second = Running::start(&home, &readme_command("ambient dashboard"));
    assert_eq!(second.token(), None, "shown once: {:#?}", second.said);
    assert!(
        second
            .said
            .iter()
            .any(|l| l.contains("the one shown when it was made"))
    );
    assert_eq!(
        fetch(second.port, "/", Some(&token)).await.0,
        StatusCode::OK
    );
    second.stop();

    let renewed = Running::start(&home, &readme_command("ambient dashboard --new-token"));
    let new = renewed.token().expect("a new token is shown");
    assert_ne!(new, token);
    assert_eq!(
        fetch(renewed.port, "/", Some(&token)).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(fetch(renewed.port, "/", Some(&new)).await.0, StatusCode::OK);
    renewed.stop();
}

#[test]
fn the_readme_settings_example_puts_the_dashboard_behind_its_token() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with(r#"{"dashboard": "#))
        .expect("the README shows the dashboard settings");
    let home = Home::new(json!({}));
    let file = home.path().join("dashboard.json");
    std::fs::write(&file, line).unwrap();
    let out = home.run(&["settings", "check", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let (settings, problems) = ambient::settings::validate(&serde_json::from_str(line).unwrap());
    assert!(problems.is_empty());
    assert!(settings.dashboard.enabled);
    assert!(ambient::dashboard::Access::needs_token(
        settings.dashboard.address().unwrap()
    ));
}

#[test]
fn the_console_says_where_the_dashboard_is() {
    let home = Home::new(json!({
        "executive": {"ollamaBaseUrl": "http://127.0.0.1:9"},
        "dashboard": {"enabled": true, "bind": "127.0.0.1:0"},
    }));
    let (events, out) = home.console("");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.starts_with("dashboard on http://127.0.0.1:")
                && n.ends_with("(this machine only; whoever can reach it here is its operator)")),
        "{said:#?}"
    );
    let off = Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}));
    let (events, _) = off.console("");
    assert!(!notices(&events).iter().any(|n| n.contains("dashboard")));
}

#[tokio::test]
async fn ambient_run_serves_the_running_bots_dashboard() {
    let bot = Bot::start(json!({"dashboard": {"enabled": true, "bind": "0.0.0.0:0"}}));
    let log = bot.log();
    let port: u16 = Regex::new(r"dashboard on http://0\.0\.0\.0:(\d+)/ \(beyond loopback")
        .unwrap()
        .captures(&log)
        .unwrap_or_else(|| panic!("ambient run did not say where the dashboard is:\n{log}"))[1]
        .parse()
        .unwrap();
    let token = Regex::new(r"dashboard token \(shown this once; [^)]*\): (amb_[A-Za-z0-9_-]+)")
        .unwrap()
        .captures(&log)
        .unwrap_or_else(|| panic!("no token in:\n{log}"))[1]
        .to_string();
    assert_eq!(fetch(port, "/", None).await.0, StatusCode::UNAUTHORIZED);
    let (status, page) = fetch(port, "/?kind=system", Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("started"), "{page}");
    assert!(page.contains("served by the running bot"));
    let (status, initiative) = fetch(port, "/initiative", Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(initiative.contains(&format!(
        r#"id="guild-{}""#,
        crate::support::fake_discord::GUILD
    )));
    assert!(bot.stop().success());
    assert!(
        reqwest::Client::new()
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .is_err(),
        "the dashboard stops with the bot"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_renders_in_headless_chromium() {
    let w = seeded_world().await;
    let d = Open::start(&w, "127.0.0.1:0").await;
    // Test artefacts, not in git: target/ is ignored.
    let artefacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    let check = tokio::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/dashboard-check.sh"),
    )
    .arg(d.url("/"))
    .arg(&artefacts)
    .output()
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    if check.status.code() == Some(77) {
        println!("{said}");
        eprintln!("SKIPPED the dashboard's browser check: {said}");
        return;
    }
    assert!(
        check.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(said.contains("today: timeline with 7 entries"), "{said}");
    assert!(
        said.contains(&format!("spend: charts with {} bars", 2 * seeded_bars())),
        "{said}"
    );
    assert!(said.contains("initiative: 2 servers"), "{said}");
    assert!(said.contains("memory: 5 memories"), "{said}");
    assert!(said.contains("no console messages"), "{said}");
    for page in ["today", "spend", "initiative", "memory"] {
        let shot = artefacts.join(format!("dashboard-{page}.png"));
        assert!(
            std::fs::metadata(&shot).unwrap().len() > 10_000,
            "a real screenshot of {page}"
        );
    }
    d.served.stop().await;
}
