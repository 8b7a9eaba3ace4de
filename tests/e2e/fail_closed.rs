//! Reads that let the bot speak or spend fail closed: when the store cannot
//! say whether a channel is hushed, whether a person asked to be left
//! alone, when the bot last considered posting, whether a post is still
//! unconfirmed, what a budget has spent or when people last posted, the bot
//! says nothing and pays for nothing, and the journal says which read
//! failed. Reads that only inform (status) show the error, not a zero.

use ambient::attention::Addressed;
use ambient::clock::Clock;
use ambient::store::boundaries::Boundary;
use ambient::store::messages::Source;
use ambient::vocab::journal::Kind;
use serde_json::json;

use crate::support::model_server::Scripted;
use crate::support::world::{self, GENERAL, GUILD_A, World};

fn initiative_settings() -> ambient::settings::Settings {
    let mut s = world::settings();
    s.permissions.replies.discovery_channel_ids = vec![GENERAL];
    s
}

fn post(text: &str) -> Scripted {
    Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "general", "text": text, "reason": "worth it"}),
    )
}

/// Guild A's journal lines saying the initiative stopped at the store gate.
fn store_stops(w: &World) -> Vec<String> {
    w.journal(Kind::Gate)
        .into_iter()
        .filter(|e| e.guild == Some(GUILD_A) && e.summary == "initiative stopped at the store gate")
        .map(|e| e.reason)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_hush_or_cooldown_or_outbox_keeps_the_initiative_quiet() {
    for (table, read) in [
        ("hushes", "store read failed: the hushes: "),
        (
            "initiative_state",
            "store read failed: when the bot last considered posting: ",
        ),
        (
            "initiative_outbox",
            "store read failed: the posts not yet confirmed: ",
        ),
    ] {
        let w = World::start(initiative_settings()).await;
        w.model.fallback(post("Anyone seen the comet?"));
        w.break_table(table);
        for _ in 0..3 {
            w.tick().await;
        }
        assert!(w.model.requests().is_empty(), "{table}: no model call");
        assert!(w.said().is_empty(), "{table}: no post");
        let stops = store_stops(&w);
        assert_eq!(
            stops.len(),
            1,
            "{table}: one line for the run of stops, not one a tick: {stops:#?}"
        );
        assert!(stops[0].starts_with(read), "{table}: {stops:#?}");

        w.mend_table(table);
        w.tick().await;
        assert_eq!(w.said().len(), 1, "{table}: mended, it posts again");
    }
}

/// A bot that would chime in on anything said in #general.
async fn chiming() -> World {
    let mut s = world::settings();
    s.permissions.replies.discovery_channel_ids = vec![];
    s.permissions.replies.reply_channel_ids = vec![GENERAL];
    s.attention.unsolicited_reply_threshold = 0.0;
    s.attention.chime_in_cooldown_minutes = 0;
    let w = World::start(s).await;
    w.model.fallback(Scripted::tool(
        "chime_in",
        json!({"speak": true, "text": "Tabs, obviously.", "reason": "fun"}),
    ));
    w
}

/// The route line of the decision about `message`.
fn decided(w: &World, message: ambient::ids::MessageId) -> String {
    w.journal(Kind::Outcome)
        .into_iter()
        .find(|e| e.message == Some(message))
        .expect("the decision is journaled")
        .reason
}

/// Ada asks the room something the bot would chime in on: no model is
/// asked, nothing is said, and the route line begins with `why`.
async fn asks_and_is_not_answered(w: &World, why: &str) {
    let asked = w
        .message(
            GENERAL,
            "ada",
            "what do people think about tabs?",
            Addressed::No,
        )
        .await;
    assert!(w.model.requests().is_empty(), "no chime-in considered");
    assert!(w.said().is_empty());
    let decided = decided(w, asked);
    assert!(decided.starts_with(why), "{decided}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_boundary_keeps_the_bot_from_chiming_in() {
    let w = chiming().await;
    // Someone else's boundary makes the table non-empty, as in a real server.
    w.app
        .store()
        .people()
        .set_boundary(
            ambient::ids::UserId(99),
            Boundary::NoUnprompted,
            true,
            w.clock.now(),
        )
        .unwrap();
    w.break_table("boundaries");
    asks_and_is_not_answered(
        &w,
        "did not chime in (store gate): store read failed: the person's boundaries",
    )
    .await;
}

/// A chime-in is refused where the hushes cannot be read — courtesy's own
/// check, the one every unprompted word passes — and the route line says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_hush_keeps_the_bot_from_chiming_in() {
    let w = chiming().await;
    w.break_table("hushes");
    asks_and_is_not_answered(
        &w,
        "did not chime in (store gate): store read failed: the hushes",
    )
    .await;
}

/// Guild A's `error` lines saying a store read failed, as "summary: reason".
fn read_failures(w: &World) -> Vec<String> {
    w.journal(Kind::Error)
        .into_iter()
        .filter(|e| e.guild == Some(GUILD_A) && e.summary.starts_with("store read failed: "))
        .map(|e| format!("{}: {}", e.summary, e.reason))
        .collect()
}

/// A reply budget that cannot count what was spent refuses the call: an
/// unreadable usage table is not "nothing spent".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_usage_table_stops_a_capped_reply_before_the_model() {
    let mut s = world::settings();
    s.budget.daily_tokens.reply = 100_000;
    let w = World::start(s).await;
    w.model
        .fallback(Scripted::text("Comets are dirty snowballs."));
    w.break_table("usage");
    for _ in 0..2 {
        w.message(
            GENERAL,
            "ada",
            "@ambient what is a comet?",
            Addressed::Mention,
        )
        .await;
    }
    assert!(w.model.requests().is_empty(), "no model call");
    let said: Vec<String> = w.said().into_iter().map(|s| s.content).collect();
    assert_eq!(
        said,
        ["Sorry, I can't answer right now: I can't check my thinking budget."],
        "one honest notice a conversation, not a spent budget"
    );
    let failed = read_failures(&w);
    assert_eq!(failed.len(), 1, "one line for both refusals: {failed:#?}");
    assert!(
        failed[0].starts_with("store read failed: the usage records a budget counts: "),
        "{failed:#?}"
    );

    w.mend_table("usage");
    w.message(GENERAL, "ada", "@ambient and now?", Addressed::Mention)
        .await;
    assert_eq!(w.model.requests().len(), 1, "mended, it is answered");
    assert!(w.said().iter().any(|s| s.content.contains("snowballs")));
}

/// Status shows an unreadable usage table as an error, not as nothing spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_an_unreadable_usage_table_rather_than_zero_tokens() {
    let w = World::start(world::settings()).await;
    let status = || {
        ambient::commands::status::widget(
            &ambient::commands::status::Sources::of(&w.app),
            Some(GUILD_A),
        )
    };
    w.break_table("usage");
    let shown = status();
    for part in ["budget", "tokens"] {
        assert!(
            shown
                .iter()
                .any(|l| l.starts_with(&format!("{part} store read failed: the usage records: "))),
            "{part}: {shown:#?}"
        );
    }
    assert!(
        !shown.iter().any(|l| l.contains("people 0 tokens")),
        "{shown:#?}"
    );

    w.mend_table("usage");
    let shown = status();
    assert!(
        shown
            .iter()
            .any(|l| l.starts_with("tokens last 24 h: people 0 tokens")),
        "{shown:#?}"
    );
}

/// The garden paces its spending by what was spent: when that cannot be
/// read it waits its longest interval, as for a spent budget, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_spend_paces_the_garden_at_its_longest_interval() {
    let w = World::start(world::settings()).await;
    let longest = i64::from(w.app.settings.global().garden.max_interval_minutes);
    let usual = w.app.garden.plan().wait.expect("not paused").num_minutes();
    assert!(usual < longest, "{usual} min: the test needs room to tell");
    for (table, read) in [
        ("usage", "store read failed: the usage records: "),
        (
            "garden_cycles",
            "store read failed: the last cycles' cost: ",
        ),
        (
            "garden_state",
            "store read failed: when the last cycle ran: ",
        ),
    ] {
        w.break_table(table);
        let plan = w.app.garden.plan();
        assert_eq!(
            plan.wait.map(|d| d.num_minutes()),
            Some(longest),
            "{table}: {plan:?}"
        );
        assert!(
            plan.why.iter().any(|l| l.starts_with(read)),
            "{table}: {:?}",
            plan.why
        );
        w.mend_table(table);
        let mended = w.app.garden.plan().wait.expect("not paused").num_minutes();
        assert_eq!(mended, usual, "{table}: mended, the usual interval");
    }
}

/// An idea is explored (a model call) only in a quiet spell: when the store
/// cannot say when people last posted, it is no quiet spell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_last_post_keeps_an_idea_unexplored() {
    let w = World::start(world::settings()).await;
    w.app
        .impulses
        .add_idea(Some(GUILD_A), "why comets have tails", "a chat")
        .unwrap();
    w.hear(GENERAL, "ada", "anyone seen the comet?", Source::Text);
    w.break_table("messages");
    for _ in 0..2 {
        assert!(w.app.impulses.check().is_empty(), "nothing explored");
    }
    let failed = read_failures(&w);
    assert_eq!(failed.len(), 1, "one line for both looks: {failed:#?}");
    assert!(
        failed[0]
            .starts_with("store read failed: when people last posted, before exploring an idea: "),
        "{failed:#?}"
    );

    w.mend_table("messages");
    assert!(w.app.impulses.check().is_empty(), "ada spoke just now");
    w.clock.advance(chrono::Duration::minutes(61));
    assert_eq!(
        w.app.impulses.check().len(),
        1,
        "quiet for an hour: explored"
    );
}

/// A dashboard page that lists or offers the servers says when they cannot
/// be read, rather than showing none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_unreadable_servers_rather_than_none() {
    let w = World::start(world::settings()).await;
    let (_, name) = w.app.store().messages().known_guilds().unwrap().remove(0);
    let d = crate::dashboard::Open::start(&w, "127.0.0.1:0").await;
    w.break_table("guilds");
    for page in ["/", "/spend", "/initiative", "/memory"] {
        let (status, body) = d.get(page).await;
        assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{page}: {body}");
        assert!(
            body.contains("store read failed: the servers: "),
            "{page}: {body}"
        );
    }
    w.mend_table("guilds");
    for page in ["/", "/spend", "/initiative", "/memory"] {
        let (status, body) = d.get(page).await;
        assert_eq!(status, reqwest::StatusCode::OK, "{page}: {body}");
        assert!(body.contains(&name), "{page}: the server is shown again");
    }
}

/// The status widget says it cannot read the servers or a server's hushes,
/// rather than "no server known yet" or no hush.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_unreadable_servers_and_hushes() {
    let w = World::start(world::settings()).await;
    let status = |guild| {
        ambient::commands::status::widget(&ambient::commands::status::Sources::of(&w.app), guild)
    };
    for (table, guild, line) in [
        (
            "guilds",
            None,
            "initiative: store read failed: the servers: ",
        ),
        (
            "hushes",
            Some(GUILD_A),
            "hushes: store read failed: the hushes: ",
        ),
    ] {
        w.break_table(table);
        let shown = status(guild);
        assert!(
            shown.iter().any(|l| l.starts_with(line)),
            "{table}: {shown:#?}"
        );
        assert!(
            !shown.iter().any(|l| l == "initiative: no server known yet"),
            "{table}: {shown:#?}"
        );
        w.mend_table(table);
        let shown = status(guild);
        assert!(
            !shown.iter().any(|l| l.contains("store read failed")),
            "{table}: {shown:#?}"
        );
    }
}

/// An explored idea's thought is kept only where no thought is held: when
/// the held thought cannot be read, none is written over it, and the
/// journal says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_held_thought_is_not_written_over_by_an_idea() {
    let w = World::start(world::settings()).await;
    w.model.fallback(Scripted::tool(
        "explored",
        json!({"learned": "Comet tails point away from the sun.", "share": "Comet tails point away from the sun!"}),
    ));
    let explore = |text: &'static str| {
        w.app
            .impulses
            .add_idea(Some(GUILD_A), text, "a chat")
            .unwrap();
        assert_eq!(w.app.impulses.check().len(), 1, "{text}: explored");
    };
    w.break_table("pending_thoughts");
    explore("why comets have tails");
    w.app.spine.drain().await;
    let failed = read_failures(&w);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert!(
        failed[0].starts_with("store read failed: the held thought, before keeping an idea's: "),
        "{failed:#?}"
    );

    w.mend_table("pending_thoughts");
    // One idea per quiet spell: someone speaks, and an hour of quiet follows.
    w.clock.advance(chrono::Duration::minutes(1));
    w.hear(GENERAL, "ada", "comets!", Source::Text);
    w.clock.advance(chrono::Duration::minutes(61));
    explore("why comets glow");
    w.app.spine.drain().await;
    let held = w.app.store().initiative().pending_thought(GUILD_A).unwrap();
    assert_eq!(
        held.map(|t| t.draft).as_deref(),
        Some("Comet tails point away from the sun!"),
        "mended, the thought is kept"
    );
}

/// A command that lists for a person.
type List = fn(&ambient::app::App, &ambient::commands::Asker) -> String;

/// `/task list`, `/schedule list` and `/idea list` say they cannot read
/// their list rather than that there is nothing on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_tasks_schedules_and_ideas_are_not_listed_as_none() {
    use ambient::commands::impulses::{idea_list, schedule_list, task_list};
    let w = World::start(world::settings()).await;
    let ada = ambient::commands::Asker {
        guild: Some(GUILD_A),
        channel: GENERAL,
        user: ambient::ids::UserId(50),
        name: "ada".into(),
        manage: false,
    };
    let lists = [
        ("tasks", task_list as List, "No open tasks."),
        ("schedules", schedule_list, "Nothing is scheduled."),
        ("ideas", idea_list, "No ideas yet."),
    ];
    for (table, list, none) in lists {
        w.break_table(table);
        let said = list(&w.app, &ada);
        assert!(
            said.starts_with(&format!("I can't tell: store read failed: the {table}: ")),
            "{said}"
        );
        w.mend_table(table);
        assert!(list(&w.app, &ada).starts_with(none), "{table}: mended");
    }
}
