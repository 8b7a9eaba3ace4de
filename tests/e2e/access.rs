//! Who may talk to the bot: `permissions.roles` in a server and
//! `discord.dms` in direct messages. Someone refused gets no model call, a
//! gate line in the journal, and one short explanation a day — kept in the
//! store, so a restart does not repeat it.

use ambient::attention::Addressed;
use ambient::ids::{RoleId, UserId, stable_id};
use ambient::settings::{DmPolicy, Settings};
use ambient::vocab::journal::Kind;

use crate::support::model_server::Scripted;
use crate::support::world::{DM, GENERAL, GUILD_A, World, settings};

const MEMBER: RoleId = RoleId(7001);
const GUEST: RoleId = RoleId(7002);
const MUTED: RoleId = RoleId(7003);

const NOT_YOUR_ROLE: &str = "Sorry, I only talk with people who have certain roles in this server.";
const NO_DMS: &str =
    "Sorry, I don't answer direct messages. You can talk to me in a server we share.";
const NOT_ALLOWED_DMS: &str =
    "Sorry, I only answer direct messages from people my operator has allowed.";

fn user(name: &str) -> UserId {
    UserId(stable_id("user", name))
}

fn members_only() -> Settings {
    let mut s = settings();
    s.permissions.roles.allowed = vec![MEMBER];
    s
}

fn said(w: &World) -> Vec<String> {
    w.said().into_iter().map(|s| s.content).collect()
}

fn gates(w: &World) -> Vec<String> {
    w.journal(Kind::Gate)
        .into_iter()
        .map(|e| format!("{}: {}", e.summary, e.reason))
        .collect()
}

async fn ask(w: &World, who: &str, roles: &[RoleId], text: &str) {
    w.message_with_roles(GENERAL, who, text, Addressed::Mention, Some(roles.to_vec()))
        .await;
}

#[tokio::test]
async fn a_member_without_an_allowed_role_gets_no_model_call_and_one_explanation_a_day() {
    let w = World::start(members_only()).await;
    w.model.fallback(Scripted::text("Tuesday, I think."));
    ask(&w, "gus", &[GUEST], "what day is the meetup?").await;
    assert!(w.model.requests().is_empty(), "no model call for gus");
    assert_eq!(said(&w), [NOT_YOUR_ROLE]);
    ask(&w, "gus", &[GUEST], "hello?? what day?").await;
    assert!(w.model.requests().is_empty());
    assert_eq!(said(&w), [NOT_YOUR_ROLE], "told once, then nothing at all");
    let g = gates(&w);
    assert_eq!(g.len(), 2, "{g:#?}");
    assert_eq!(
        g[0],
        "did not answer gus: the roles gate: the author has no role in \
         permissions.roles.allowed; told them why"
    );
    assert!(g[1].ends_with("; already told today"), "{g:#?}");

    // The day's explanation is in the store: a restart does not repeat it.
    let w = w.restart(members_only()).await;
    ask(&w, "gus", &[GUEST], "anyone?").await;
    assert_eq!(said(&w), [NOT_YOUR_ROLE]);
    w.clock.advance(chrono::Duration::hours(24));
    ask(&w, "gus", &[GUEST], "a day later: what day is the meetup?").await;
    assert_eq!(
        said(&w),
        [NOT_YOUR_ROLE, NOT_YOUR_ROLE],
        "a day later, told again"
    );
    assert!(w.model.requests().is_empty());

    ask(&w, "ada", &[GUEST, MEMBER], "what day is the meetup?").await;
    assert_eq!(w.model.requests().len(), 1, "a member is answered");
    assert_eq!(said(&w).last().unwrap(), "Tuesday, I think.");
}

#[tokio::test]
async fn a_blocked_role_wins_over_an_allowed_one_and_owners_are_always_answered() {
    let mut s = members_only();
    s.permissions.roles.blocked = vec![MUTED];
    s.discord.owner_user_ids = vec![user("olga")];
    let w = World::start(s).await;
    w.model.fallback(Scripted::text("Sure."));
    ask(&w, "max", &[MEMBER, MUTED], "can you help me?").await;
    assert!(
        w.model.requests().is_empty(),
        "no model call for a blocked role"
    );
    assert_eq!(said(&w), [NOT_YOUR_ROLE]);
    assert!(
        gates(&w)[0].contains("the author has role 7003, which is in permissions.roles.blocked"),
        "{:#?}",
        gates(&w)
    );
    ask(&w, "olga", &[MUTED], "can you help me?").await;
    assert_eq!(
        w.model.requests().len(),
        1,
        "an owner passes whatever roles"
    );
    assert_eq!(said(&w), [NOT_YOUR_ROLE, "Sure."]);
}

#[tokio::test]
async fn a_refused_member_still_gets_a_reflex_that_calls_no_model() {
    let w = World::start(members_only()).await;
    ask(&w, "gus", &[GUEST], "remind me in 10 minutes to stretch").await;
    assert!(w.model.requests().is_empty());
    let tasks = w
        .app
        .store()
        .impulses()
        .open_tasks_of(Some(GUILD_A), user("gus"))
        .unwrap();
    assert_eq!(tasks, 1, "the remind-me reflex, which calls no model, ran");
}

async fn dm(w: &World, who: &str, text: &str) {
    w.message(DM, who, text, Addressed::DirectMessage).await;
}

#[tokio::test]
async fn direct_messages_off_get_one_short_answer_a_day_and_are_not_kept() {
    let mut s = settings();
    s.discord.dms = DmPolicy::Off;
    let w = World::start(s).await;
    w.model.fallback(Scripted::text("Hi!"));
    dm(&w, "gus", "are you there?").await;
    dm(&w, "gus", "please answer").await;
    assert!(w.model.requests().is_empty(), "never a model call");
    assert_eq!(
        said(&w),
        [NO_DMS],
        "one short answer, then nothing that day"
    );
    assert!(
        w.app
            .store()
            .messages()
            .recent_messages(DM, 10)
            .unwrap()
            .iter()
            .all(|m| m.is_self),
        "a refused direct message is not stored"
    );
    assert!(gates(&w)[0].contains("direct messages are off (discord.dms is off)"));
}

#[tokio::test]
async fn the_older_allow_dms_false_still_turns_direct_messages_off() {
    let mut s = settings();
    s.discord.allow_dms = Some(false);
    s.discord.dms = DmPolicy::Open;
    let w = World::start(s).await;
    dm(&w, "gus", "are you there?").await;
    assert!(w.model.requests().is_empty());
    assert_eq!(said(&w), [NO_DMS]);
    assert!(
        gates(&w)[0].contains("discord.allowDms is false"),
        "{:#?}",
        gates(&w)
    );
}

#[tokio::test]
async fn an_allowlist_answers_the_people_on_it_and_refuses_the_rest() {
    let mut s = settings();
    s.discord.dms = DmPolicy::Allowlist;
    s.discord.dm_allowlist = vec![user("ada")];
    let w = World::start(s).await;
    w.model.fallback(Scripted::text("Hi Ada."));
    dm(&w, "gus", "are you there?").await;
    assert!(w.model.requests().is_empty());
    assert_eq!(said(&w), [NOT_ALLOWED_DMS]);
    dm(&w, "ada", "are you there?").await;
    assert_eq!(w.model.requests().len(), 1);
    assert_eq!(said(&w), [NOT_ALLOWED_DMS, "Hi Ada."]);
}

/// Against the fake Discord, through the real gateway client: the roles are
/// the ones MESSAGE_CREATE carries in `member.roles`.
#[test]
fn the_roles_come_from_the_gateways_message() {
    use crate::support::bot::Bot;
    use crate::support::fake_discord::{ALICE, BOB, BOT, GENERAL as D_GENERAL};
    use serde_json::json;

    let bot = Bot::start(json!({"permissions": {"roles": {"allowed": [MEMBER.to_string()]}}}));
    bot.discord.with(|w| {
        w.member_roles.insert(ALICE.id, vec![MEMBER.get()]);
        w.member_roles.insert(BOB.id, vec![GUEST.get()]);
    });
    bot.model.fallback(Scripted::text("Tuesday."));
    let mention = |text: &str| format!("<@{BOT}> {text}");
    bot.discord
        .say(D_GENERAL, BOB, &mention("what day is the meetup?"));
    assert!(
        bot.discord
            .wait_until(15, |w| !w.sent_in(D_GENERAL).is_empty()),
        "no explanation:\n{}",
        bot.log()
    );
    bot.discord.say(D_GENERAL, BOB, &mention("what day??"));
    let refusals = || {
        let gates = ambient::vocab::journal::Filter {
            kinds: vec![Kind::Gate],
            ..Default::default()
        };
        bot.store().journal().journal_query(&gates).unwrap().len()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while refusals() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        refusals(),
        2,
        "bob's second question not refused:\n{}",
        bot.log()
    );
    bot.discord
        .say(D_GENERAL, ALICE, &mention("what day is the meetup?"));
    assert!(
        bot.discord
            .wait_until(15, |w| w.sent_in(D_GENERAL).len() >= 2),
        "alice not answered:\n{}",
        bot.log()
    );
    let sent: Vec<String> = bot.discord.with(|w| {
        w.sent_in(D_GENERAL)
            .iter()
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    });
    assert_eq!(sent, [NOT_YOUR_ROLE, "Tuesday."]);
    assert_eq!(
        bot.model.requests().len(),
        1,
        "only alice's question reached the model"
    );
}

fn pairing() -> Settings {
    let mut s = settings();
    s.discord.dms = DmPolicy::Pairing;
    s.discord.owner_user_ids = vec![user("olga")];
    s
}

fn asker(name: &str) -> ambient::commands::Asker {
    ambient::commands::Asker {
        guild: Some(GUILD_A),
        channel: GENERAL,
        user: user(name),
        name: name.into(),
        manage: true,
    }
}

/// The code in the bot's pairing answer.
fn code_in(text: &str) -> String {
    let start = text.find("Your pairing code is ").expect(text) + "Your pairing code is ".len();
    text[start..start + 6].to_string()
}

#[tokio::test]
async fn pairing_gives_a_code_an_owner_approves_and_then_the_person_is_answered() {
    let w = World::start(pairing()).await;
    w.model
        .fallback(Scripted::text("Hi Gus, glad to meet you."));
    dm(&w, "gus", "can we talk here?").await;
    assert!(
        w.model.requests().is_empty(),
        "no model call for an unknown person"
    );
    let offer = said(&w);
    assert_eq!(offer.len(), 1, "{offer:?}");
    let code = code_in(&offer[0]);
    assert_eq!(
        offer[0],
        format!(
            "I don't know you yet. Your pairing code is {code}; it is good for 60 minutes. \
             Ask my owner to approve it with `/ambient pair {code}`, then write again."
        )
    );
    assert!(
        code.chars()
            .all(|c| "ABCDEFGHJKMNPQRSTUVWXYZ23456789".contains(c)),
        "{code}"
    );
    dm(&w, "gus", "hello?").await;
    assert_eq!(
        said(&w).len(),
        1,
        "one answer a day, not a code per message"
    );

    let refused = ambient::commands::access::pair(&w.app, &asker("max"), &code);
    assert_eq!(
        refused,
        "Only the bot's owners (discord.ownerUserIds) can approve a pairing code."
    );
    let approved = ambient::commands::access::pair(&w.app, &asker("olga"), &code.to_lowercase());
    assert_eq!(
        approved,
        format!(
            "Approved gus ({}): I answer their direct messages now.",
            user("gus")
        )
    );
    // The approval is kept: it outlives a restart.
    let w = w.restart(pairing()).await;
    dm(&w, "gus", "can we talk here now?").await;
    assert_eq!(w.model.requests().len(), 1);
    assert_eq!(said(&w).last().unwrap(), "Hi Gus, glad to meet you.");
    let again = ambient::commands::access::pair(&w.app, &asker("olga"), &code);
    assert_eq!(
        again,
        format!("No one holds the pairing code {code}."),
        "used up"
    );
}

#[tokio::test]
async fn an_expired_pairing_code_is_refused_and_approves_nobody() {
    let w = World::start(pairing()).await;
    dm(&w, "gus", "can we talk here?").await;
    let code = code_in(&said(&w)[0]);
    w.clock.advance(chrono::Duration::minutes(61));
    let answer = ambient::commands::access::pair(&w.app, &asker("olga"), &code);
    assert!(
        answer.starts_with(&format!("The code {code} ran out at ")),
        "{answer}"
    );
    assert!(
        answer.ends_with("ask gus to write to me again for a new one."),
        "{answer}"
    );
    dm(&w, "gus", "still there?").await;
    assert!(w.model.requests().is_empty(), "still not approved");
    assert_eq!(said(&w).len(), 1, "and told nothing more that day");
}

/// The whole pairing flow against the fake Discord: a direct message, the
/// code in the answer, `/ambient pair` by an owner, and the next message answered.
#[test]
fn pairing_end_to_end_through_discord() {
    use crate::support::bot::Bot;
    use crate::support::fake_discord::{ALICE, BOB, DM_CHANNEL, GENERAL as D_GENERAL};
    use serde_json::json;

    let bot = Bot::start(json!({"discord": {
        "dms": "pairing",
        "ownerUserIds": [ALICE.id.to_string()],
    }}));
    bot.model.fallback(Scripted::text("Hi Bob."));
    let texts = || -> Vec<String> {
        bot.discord.with(|w| {
            w.sent_in(DM_CHANNEL)
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect()
        })
    };
    bot.discord.dm(BOB, "can we talk here?");
    assert!(
        bot.discord
            .wait_until(15, |w| !w.sent_in(DM_CHANNEL).is_empty()),
        "no code:\n{}",
        bot.log()
    );
    let code = code_in(&texts()[0]);
    let answer = bot.discord.interaction_text(bot.discord.slash(
        D_GENERAL,
        ALICE,
        0,
        "ambient",
        "pair",
        &[("code", &code)],
    ));
    assert_eq!(
        answer.as_deref(),
        Some("Approved bob (4): I answer their direct messages now."),
        "{}",
        bot.log()
    );
    bot.discord.dm(BOB, "can we talk now?");
    assert!(
        bot.discord
            .wait_until(15, |w| w.sent_in(DM_CHANNEL).len() >= 2),
        "not answered after approval:\n{}",
        bot.log()
    );
    assert_eq!(texts()[1], "Hi Bob.");
    assert_eq!(
        bot.model.requests().len(),
        1,
        "only the approved message reached the model"
    );
}

#[tokio::test]
async fn the_dashboard_shows_a_refusal_as_a_gate_with_its_reason() {
    let w = World::start(members_only()).await;
    ask(&w, "gus", &[GUEST], "what day is the meetup?").await;
    let (_, today) = crate::dashboard::Open::start(&w, "127.0.0.1:0")
        .await
        .get("/")
        .await;
    let entry = today
        .split(r#"<div class="entry k-gate"#)
        .nth(1)
        .unwrap_or_else(|| panic!("no gate on the Today page:\n{today}"));
    let entry = &entry[..entry.find("<div class=\"entry").unwrap_or(entry.len())];
    assert!(
        entry.contains("did not answer gus: the roles gate"),
        "{entry}"
    );
    assert!(
        entry.contains("the author has no role in permissions.roles.allowed"),
        "{entry}"
    );
}
