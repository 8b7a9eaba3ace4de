//! `/feeds` as a server's manager uses it: the console form (`run_text`, the
//! text the console and the slash commands show) over a whole bot and a
//! local feed server, and the slash command refused to a member without
//! Manage Server on the fake Discord.

use ambient::clock::{Clock, ManualClock};
use ambient::commands::feeds::run_text;
use ambient::ids::{GuildId, UserId};
use chrono::Duration;
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, GENERAL as D_GENERAL, MANAGE_GUILD};
use crate::support::feed_server::FeedServer;
use crate::support::home::{Home, notices};
use crate::support::world::{GENERAL, GUILD_A, GUILD_B, World, settings};

const MANAGER: UserId = UserId(4242);

/// A bot whose guarded fetcher may reach the local feed server.
async fn world() -> (World, FeedServer) {
    let feeds = FeedServer::start_at(ManualClock::at_test_epoch().now());
    let mut s = settings();
    s.network.allow_private_hosts = true;
    (World::start(s).await, feeds)
}

async fn feeds(w: &World, args: &str) -> String {
    feeds_in(w, GUILD_A, args).await
}

async fn feeds_in(w: &World, guild: GuildId, args: &str) -> String {
    run_text(&w.app, guild, MANAGER, args).await
}

const NONE: &str = "No feed subscriptions in this server; /feeds add URL #channel adds one.";

#[tokio::test]
async fn a_feed_added_to_a_channel_is_listed_and_its_delivery_shown() {
    let (w, server) = world().await;
    let url = format!("{}/blog/rss.xml", server.url);
    assert_eq!(feeds(&w, "list").await, NONE);

    let added = feeds(&w, &format!("add {url} #general backfill 1")).await;
    assert_eq!(
        added,
        format!(
            "Added subscription 1: {url} posts in <#{GENERAL}> (a message in the channel). \
             3 items it lists now are noted as seen; 1 go out now."
        )
    );
    assert_eq!(
        feeds(&w, "list").await,
        format!(
            "Feed subscriptions:\n1 · {url} → <#{GENERAL}> (channel) · nothing delivered yet · \
             sent 0, waiting 1, filtered 0"
        )
    );

    w.app.feeds.deliver_due().await;
    let said = w.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].content.starts_with("**Tokio 2.0 released**\n"),
        "{said:?}"
    );
    w.clock.advance(Duration::minutes(5));
    assert_eq!(
        feeds(&w, "").await,
        format!(
            "Feed subscriptions:\n1 · {url} → <#{GENERAL}> (channel) · last delivery 5m ago · \
             sent 1, waiting 0, filtered 0"
        )
    );
    assert_eq!(feeds_in(&w, GUILD_B, "list").await, NONE, "per server");
}

#[tokio::test]
async fn a_bad_template_or_feed_is_refused_with_why_and_nothing_saved() {
    let (w, server) = world().await;
    let url = format!("{}/blog/rss.xml", server.url);

    let typo = feeds(&w, &format!("add {url} #general template **{{titel}}**")).await;
    assert!(
        typo.starts_with("Not added: template: unknown placeholder {titel} at character 3; valid:"),
        "{typo}"
    );
    let everyone = feeds(
        &w,
        &format!("add {url} #general template @everyone {{title}}"),
    )
    .await;
    assert!(
        everyone.starts_with("Not added: template: @everyone at character 1"),
        "{everyone}"
    );
    assert_eq!(server.hits("/blog/rss.xml"), 0, "checked before fetching");

    let missing = feeds(&w, &format!("add {}/missing.xml #general", server.url)).await;
    assert!(
        missing.starts_with("Not added: the feed could not be read (")
            && missing.contains("404")
            && missing.ends_with("); nothing was saved"),
        "{missing}"
    );
    let bad_dedupe = feeds(&w, &format!("add {url} #general dedupe hash")).await;
    assert_eq!(
        bad_dedupe,
        "Not added: dedupe must be guid, link or title, got \"hash\""
    );
    assert_eq!(feeds(&w, "list").await, NONE);
}

#[tokio::test]
async fn a_channel_of_another_server_or_none_is_refused() {
    let (w, server) = world().await;
    let url = format!("{}/blog/rss.xml", server.url);
    let b_general = crate::support::world::B_GENERAL;

    assert_eq!(
        feeds(&w, &format!("add {url} <#{b_general}>")).await,
        format!(
            "Not added: the bot has not seen <#{b_general}> in this server; pick one of this \
             server's text, announcement or forum channels, or a thread the bot is in"
        )
    );
    assert!(
        feeds(&w, &format!("add {url} <#999>"))
            .await
            .starts_with("Not added: the bot has not seen <#999> in this server")
    );
    assert_eq!(
        feeds(&w, &format!("add {url} #nowhere")).await,
        "Not added: this server has no channel #nowhere the bot knows; /channels lists them"
    );
    assert_eq!(feeds(&w, "list").await, NONE);
    assert_eq!(server.hits("/blog/rss.xml"), 0);
}

#[tokio::test]
async fn pause_resume_and_remove_show_in_the_list() {
    let (w, server) = world().await;
    let url = format!("{}/blog/rss.xml", server.url);
    feeds(&w, &format!("add {url} #general")).await;

    assert_eq!(
        feeds(&w, "pause 1").await,
        format!(
            "Subscription 1 paused: new items of {url} are noted, none posted, until /feeds resume 1."
        )
    );
    let listed = feeds(&w, "list").await;
    assert!(
        listed.contains(&format!(
            "(channel) · paused: paused by user {MANAGER} · nothing"
        )),
        "{listed}"
    );
    assert_eq!(
        feeds(&w, "resume 1").await,
        format!("Subscription 1 resumed: new items of {url} post in <#{GENERAL}> again.")
    );
    assert!(!feeds(&w, "list").await.contains("paused"));

    assert_eq!(
        feeds_in(&w, GUILD_B, "remove 1").await,
        "Not removed: there is no subscription 1 in this server; /feeds list shows them",
        "another server's subscription is not this one's to remove"
    );
    assert_eq!(
        feeds(&w, "remove 1").await,
        format!("Removed subscription 1 ({url} → <#{GENERAL}>).")
    );
    assert_eq!(feeds(&w, "list").await, NONE);
    assert!(
        feeds(&w, "pause 1")
            .await
            .starts_with("Not paused: there is no subscription 1")
    );
    assert!(
        feeds(&w, "remove x")
            .await
            .starts_with("usage: /feeds list")
    );
}

#[tokio::test]
async fn an_edited_template_is_what_test_renders_and_preview_marks_the_filtered() {
    let (w, server) = world().await;
    let url = format!("{}/blog/rss.xml", server.url);
    feeds(&w, &format!("add {url} #general")).await;

    let edited = feeds(&w, "edit 1 template New: {title}\\n<{link}>").await;
    assert_eq!(
        edited,
        "Subscription 1 changed: template \"New: {title}\\n<{link}>\", filters \"\", embed off, dedupe guid."
    );
    let test = feeds(&w, "test 1").await;
    assert!(
        test.starts_with(
            "Subscription 1 would post its latest item as:\nNew: Tokio 2.0 released\n<https://blog.example/tokio-2"
        ) && test.ends_with("\nThe filters pass it."),
        "{test}"
    );
    assert!(w.said().is_empty(), "a test posts nothing");

    let preview = feeds(&w, "preview 1 exclude title: bakery").await;
    assert_eq!(
        preview,
        "Subscription 1's latest 3 items (at most 20) under the filters \"exclude title: bakery\":\n\
         passes   · Tokio 2.0 released\n\
         filtered · Why we rewrote our bakery app in Rust\n\
         passes   · An old post nobody needs today"
    );
    let bad = feeds(&w, "preview 1 keep title: x").await;
    assert!(
        bad.starts_with("Cannot preview: filters: filter rule 1"),
        "{bad}"
    );

    feeds(&w, "edit 1 filters exclude title: tokio").await;
    let held = feeds(&w, "test 1").await;
    assert!(
        held.ends_with("\nThe filters hold it back: it would not be posted."),
        "{held}"
    );
    let own = feeds(&w, "preview 1").await;
    assert!(
        own.contains("under its filters:\nfiltered · Tokio 2.0 released\n"),
        "{own}"
    );
    assert!(
        feeds(&w, "edit 1 filters none")
            .await
            .contains("filters \"\""),
        "none clears the filters"
    );
}

/// On Discord every `/feeds` subcommand needs Manage Server, and answers
/// only the asker; a manager's `/feeds remove` reads its integer id.
#[test]
fn a_member_without_manage_server_is_refused() {
    let bot = Bot::start(json!({}));
    let reply = |id: u64| {
        bot.discord
            .interaction_reply(id)
            .unwrap_or_else(|| panic!("no reply:\n{}", bot.log()))
    };
    let denied = reply(bot.discord.slash(D_GENERAL, BOB, 0, "feeds", "list", &[]));
    assert_eq!(
        denied["data"]["content"],
        "Only members with **Manage Guild** can do that."
    );
    assert_eq!(denied["data"]["flags"], 64, "ephemeral");
    let listed = reply(
        bot.discord
            .slash(D_GENERAL, ALICE, MANAGE_GUILD, "feeds", "list", &[]),
    );
    assert_eq!(listed["data"]["content"], NONE, "{}", bot.log());
    assert_eq!(listed["data"]["flags"], 64, "ephemeral");
    let removed = reply(bot.discord.slash(
        D_GENERAL,
        ALICE,
        MANAGE_GUILD,
        "feeds",
        "remove",
        &[("id", "99")],
    ));
    assert_eq!(
        removed["data"]["content"],
        "Not removed: there is no subscription 99 in this server; /feeds list shows them"
    );
}

/// The console has `/feeds` too — `#general` is the console's channel —
/// with its help lines and a usage line for anything it does not understand.
#[test]
fn the_console_runs_feeds_and_its_help_names_them() {
    let server = FeedServer::start_at(chrono::Utc::now());
    let url = format!("{}/blog/rss.xml", server.url);
    let home = Home::new(json!({"network": {"allowPrivateHosts": true}}));
    let (events, out) = home.console(&format!(
        "/feeds add {url} #general\n/feeds\n/feeds remove 1\n/feeds\n/feeds frobnicate 1\n/feeds remove 7\n/help\n"
    ));
    assert!(out.status.success());
    let notices = notices(&events);
    let general = ambient::console::channel_id("general");
    let at = notices
        .iter()
        .position(|n| n.starts_with("Added subscription 1: "))
        .unwrap_or_else(|| panic!("{notices:?}"));
    assert!(
        notices[at].contains(&format!("posts in <#{general}> (a message in the channel)")),
        "{notices:?}"
    );
    assert!(
        notices[at + 1].starts_with(&format!(
            "Feed subscriptions:\n1 · {url} → <#{general}> (channel)"
        )),
        "{notices:?}"
    );
    assert!(notices[at + 2].starts_with("Removed subscription 1"));
    assert_eq!(notices[notices.len() - 4], NONE, "{notices:?}");
    assert!(notices[notices.len() - 3].starts_with("usage: /feeds list | /feeds add URL #channel"));
    assert_eq!(
        notices[notices.len() - 2],
        "Not removed: there is no subscription 7 in this server; /feeds list shows them"
    );
    let help = notices[notices.len() - 1];
    assert!(
        help.contains("\n  /feeds add URL #channel [thread] [embed] [backfill N]"),
        "{help}"
    );
}
