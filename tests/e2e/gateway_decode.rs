//! The gateway's Discord-shaped frames decoded in one pass (the patched
//! serenity in `vendor/serenity`, see vendor/README.md) arrive as serenity's
//! own decoding gave them: the fake Discord's shaped messages, their edits,
//! deletions and reactions, a member joining, a slash command and a server
//! of 500 members, each decoded both ways and compared field for field.

use serde_json::{Value, json};
use serenity::all::{Event, GatewayEvent};

use crate::support::fake_discord::{ALICE, BOB, FakeDiscord, GENERAL, GUILD, RANDOM};

/// What serenity's own `Deserialize` makes of a frame: the decoding before the patch.
fn before(text: &str) -> GatewayEvent {
    serenity::json::from_str::<GatewayEvent>(text)
        .unwrap_or_else(|e| panic!("serenity could not decode a frame of the fake Discord: {e}"))
}

/// An object's arrays in a fixed order: a server's channels, members and
/// roles are maps in serenity, each iterated in its own hash order.
fn sorted(v: Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(sorted).collect();
            items.sort_by_key(Value::to_string);
            Value::Array(items)
        }
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, sorted(v))).collect()),
        v => v,
    }
}

#[test]
fn discord_shaped_frames_decoded_in_one_pass_equal_serenitys_own_decoding() {
    let discord = FakeDiscord::start();
    discord.with(|w| w.shaped = true);
    // Each kind of shaped message twice (a reply, a link, a picture, a mention), in two channels.
    let said: Vec<u64> = (0..8)
        .map(|i| {
            let (who, channel) = if i % 2 == 0 {
                (ALICE, GENERAL)
            } else {
                (BOB, RANDOM)
            };
            discord.say(channel, who, &format!("message {i} about the quay"))
        })
        .collect();
    discord.edit(GENERAL, said[0], "message 0, edited");
    discord.react(GENERAL, said[2], BOB, "👋");
    discord.unreact(GENERAL, said[2], BOB, "👋");
    discord.delete(RANDOM, said[1]);
    discord.member_joins(BOB);
    discord.slash(
        GENERAL,
        ALICE,
        8,
        "memory",
        "show",
        &[("about", "the quay")],
    );
    discord.outage(GUILD);
    discord.outage_over(GUILD);

    let kinds = [
        "MESSAGE_CREATE",
        "MESSAGE_UPDATE",
        "MESSAGE_REACTION_ADD",
        "MESSAGE_REACTION_REMOVE",
        "MESSAGE_DELETE",
        "GUILD_MEMBER_ADD",
        "INTERACTION_CREATE",
        "GUILD_DELETE",
        "GUILD_CREATE",
    ];
    let mut seq = 0;
    for kind in kinds {
        let payloads = discord.with(|w| w.log_of(kind));
        assert!(!payloads.is_empty(), "the fake Discord sent no {kind}");
        for d in payloads {
            seq += 1;
            // Discord's order of keys, and the fake Discord's (`fake_gateway`).
            let t = json!(kind);
            for text in [
                format!(r#"{{"t":{t},"s":{seq},"op":0,"d":{d}}}"#),
                format!(r#"{{"op":0,"t":{t},"s":{seq},"d":{d}}}"#),
            ] {
                let lean = GatewayEvent::decode_lean(&text)
                    .unwrap_or_else(|| panic!("a {kind} was not decoded in one pass:\n{text}"));
                let GatewayEvent::Dispatch(s, ref event) = lean else {
                    panic!("a {kind} decoded as {lean:?}");
                };
                assert_eq!(s, seq);
                assert!(
                    !matches!(**event, Event::Unknown(_)),
                    "a {kind} decoded as unknown"
                );
                let old = before(&text);
                if kind == "GUILD_CREATE" {
                    // Maps: each iterates in its own order, so compared as sorted JSON.
                    assert_eq!(
                        sorted(serde_json::to_value(&lean).unwrap()),
                        sorted(serde_json::to_value(&old).unwrap()),
                        "a {kind} decoded otherwise than serenity decodes it"
                    );
                } else {
                    // Every field, as `Debug` shows it.
                    assert_eq!(
                        format!("{lean:?}"),
                        format!("{old:?}"),
                        "a {kind} decoded otherwise than serenity decodes it"
                    );
                }
            }
        }
    }
    let created = discord.with(|w| w.log_of("MESSAGE_CREATE"));
    assert_eq!(created.len(), said.len());
    assert!(
        created.iter().all(|m| m.to_string().len() >= 2_000),
        "the messages compared are Discord-shaped, 2–6 KB"
    );
}
