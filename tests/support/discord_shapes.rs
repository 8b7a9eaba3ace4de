//! Discord-shaped payloads for the fake Discord ([`super::fake_discord::World::shaped`]):
//! what a real server sends, not the few fields a test needs, so the load
//! harness measures the decoding and caching a bot on Discord pays for.
//!
//! - `MESSAGE_CREATE`: the author with avatar, flags, `global_name`,
//!   `avatar_decoration_data` and `primary_guild`; the author's `member`
//!   (roles, nick, `joined_at`, `communication_disabled_until`…); `mentions`
//!   with each mentioned user's `member`; and, in turn, a reply carrying
//!   its whole `referenced_message`, a link with the embed Discord unfurls
//!   for it, a picture with its attachment (and `placeholder`, `flags`), or
//!   a mention of a person. Each is 2–6 KB of JSON, as real ones are (a
//!   reply to a message with a picture a little more: 6.2 KB) ([`message`]).
//! - `GUILD_CREATE`: a server of [`MEMBERS`] members and [`CHANNELS`]
//!   channels (categories, text and voice, each with its permission
//!   overwrites), [`ROLES`] roles, [`EMOJIS`] emojis, stickers, and the
//!   members Discord sends to a bot without the Presences intent — itself
//!   and the people in voice channels, with their `voice_states` — while
//!   `member_count` says 500 and `large` is true
//!   (<https://discord.com/developers/docs/events/gateway-events#guild-create>).
//!
//! Ids are small snowflakes below `1 << 32`, so none is taken for an extra
//! server's (see `fake_discord::extra_guild`).

use serde_json::{Value, json};

use super::fake_discord::{BOT, GENERAL, GUILD, Person, RANDOM};

/// The shaped test server's size.
pub const MEMBERS: u64 = 500;
pub const CHANNELS: u64 = 100;
pub const ROLES: u64 = 20;
pub const EMOJIS: u64 = 30;
/// Categories and voice channels among [`CHANNELS`]; the rest are text.
pub const CATEGORIES: u64 = 10;
pub const VOICE: u64 = 6;
/// People in voice when the bot arrives: Discord sends their members.
pub const IN_VOICE: u64 = 8;

const ROLE_BASE: u64 = 20_000_000;
const CHANNEL_BASE: u64 = 21_000_000;
const EMOJI_BASE: u64 = 22_000_000;
const PERSON_BASE: u64 = 23_000_000;

fn role_id(k: u64) -> String {
    (ROLE_BASE + k).to_string()
}

/// A 32-hex-digit image hash, as Discord names avatars and banners.
fn hash(seed: u64) -> String {
    format!(
        "{:016x}{:016x}",
        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        seed ^ 0x5bd1_e995
    )
}

/// A user as Discord sends one in a message or a member.
pub fn user(id: u64, name: &str) -> Value {
    json!({
        "id": id.to_string(), "username": name, "global_name": capitalised(name),
        "avatar": hash(id), "discriminator": "0", "public_flags": 64, "flags": 64,
        "bot": false, "banner": null, "accent_color": null, "banner_color": null,
        "avatar_decoration_data": {"asset": format!("a_{}", hash(id + 1)), "sku_id": "1144058522808614923", "expires_at": null},
        "collectibles": null, "display_name_styles": null,
        "primary_guild": {"identity_guild_id": "1234567890123456789", "identity_enabled": true,
            "tag": "HARB", "badge": hash(id + 2)},
        "clan": {"identity_guild_id": "1234567890123456789", "identity_enabled": true,
            "tag": "HARB", "badge": hash(id + 2)},
    })
}

fn capitalised(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A member of the shaped server as a message carries it (no `user`).
pub fn member_of(id: u64) -> Value {
    json!({
        "roles": [role_id(1 + id % 7), role_id(8 + id % 5), role_id(13 + id % 6)],
        "nick": null, "avatar": null, "banner": null, "premium_since": null,
        "joined_at": "2023-04-11T18:22:05.123000+00:00", "pending": false, "mute": false,
        "deaf": false, "flags": 0, "communication_disabled_until": null,
        "unusual_dm_activity_until": null,
    })
}

/// A person's message in the shaped server; `kind` (its number) picks what
/// else it carries: a reply (to `replied`, when there is one), an unfurled
/// link, a picture (`cdn` is the fake's CDN base), or a mention of a person.
pub fn message(base: Value, person: Person, n: u64, replied: Option<Value>, cdn: &str) -> Value {
    let mut m = base;
    let channel = m["channel_id"].as_str().unwrap_or("0").to_string();
    m["author"] = user(person.id, person.name);
    m["member"] = member_of(person.id);
    m["flags"] = json!(0);
    m["components"] = json!([]);
    m["nonce"] = json!(format!("{}", 1_300_000_000_000_000_000u64 + n));
    // The bot mentioned (a question): its user and member, as Discord lists them.
    let mentions: Vec<Value> = m["mentions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|u| {
            let id = u["id"].as_str().and_then(|i| i.parse().ok()).unwrap_or(0);
            let mut full = user(id, u["username"].as_str().unwrap_or("someone"));
            if id == BOT {
                full["bot"] = json!(true);
                full["public_flags"] = json!(65_536);
            }
            full["member"] = member_of(id);
            full
        })
        .collect();
    let to_nobody = mentions.is_empty();
    m["mentions"] = json!(mentions);
    match (n % 4, replied) {
        (0, Some(original)) => {
            m["type"] = json!(19);
            m["message_reference"] = json!({"type": 0, "channel_id": channel,
                "message_id": original["id"], "guild_id": m["guild_id"]});
            let mut original = original;
            // Discord nests one level only: the replied-to message without its own.
            if let Some(o) = original.as_object_mut() {
                o.remove("referenced_message");
            }
            m["referenced_message"] = original;
        }
        (2, _) => {
            m["attachments"] = json!([picture(n, &channel, cdn)]);
            m["embeds"] = json!([link_embed(n)]);
        }
        // A message to the bot keeps its text as said (a reflex may match it whole).
        (3, _) if to_nobody => {
            let friend = PERSON_BASE + n % MEMBERS;
            let mut mentioned = user(friend, &format!("harbourfolk{}", n % MEMBERS));
            mentioned["member"] = member_of(friend);
            m["mentions"]
                .as_array_mut()
                .expect("a list")
                .push(mentioned);
            let text = format!("{} <@{friend}>", m["content"].as_str().unwrap_or(""));
            m["content"] = json!(text);
            m["embeds"] = json!([link_embed(n)]);
        }
        _ => m["embeds"] = json!([link_embed(n)]),
    }
    m
}

/// The embed Discord unfurls for a news link: article, thumbnail, provider.
fn link_embed(n: u64) -> Value {
    let url = format!("https://news.example.org/2026/11/harbour-works-{n}");
    json!({
        "type": "article", "url": url,
        "title": "Harbour works to close the east quay for three weeks from Monday",
        "description": "The council says the east quay will close to foot traffic while the old \
            sea wall is repaired. Ferries will run from the west pier instead, and the fish market \
            moves to the car park by the lifeboat station until the work is done. Residents asked \
            for a footbridge; the council says one is being considered for the spring.",
        "color": 2_123_412,
        "timestamp": "2026-11-26T07:30:00+00:00",
        "provider": {"name": "Harbour News", "url": "https://news.example.org"},
        "author": {"name": "Jo Marsh", "url": "https://news.example.org/staff/jo-marsh"},
        "thumbnail": {"url": format!("https://news.example.org/img/quay-{n}.jpg"),
            "proxy_url": format!("https://images-ext-1.discordapp.net/external/{}/https/news.example.org/img/quay-{n}.jpg", hash(n)),
            "width": 1200, "height": 630, "placeholder": "3PcNDwSYeHeAiHd4eHeHh3eIeIeIBVgGZg==",
            "placeholder_version": 1, "flags": 0},
        "content_scan_version": 1,
    })
}

/// A picture as a message carries it, on the fake's CDN.
fn picture(n: u64, channel: &str, cdn: &str) -> Value {
    let id = 1_400_000_000_000_000_000u64 + n;
    let url = format!(
        "{cdn}/attachments/{channel}/{id}/IMG_{n}.jpg?ex=6750a1b2&is=674f5032&hm={}&",
        hash(id)
    );
    json!({
        "id": id.to_string(), "filename": format!("IMG_{n}.jpg"), "size": 2_348_112,
        "url": url, "proxy_url": url.replace("/attachments/", "/media/attachments/"),
        "width": 4032, "height": 3024, "content_type": "image/jpeg",
        "placeholder": "kAgGBYCHh3d4d4eIeHd4iIiIeHeAh3g=", "placeholder_version": 1,
        "content_scan_version": 1, "flags": 0, "title": null, "description": null,
    })
}

/// The test guild's GUILD_CREATE (`base`) as a server of [`MEMBERS`] members
/// and [`CHANNELS`] channels sends it; its #general and #random kept.
pub fn guild_create(base: Value) -> Value {
    let mut g = base;
    let everyone = g["roles"][0].clone();
    let mut roles = vec![everyone];
    for k in 1..ROLES {
        roles.push(json!({
            "id": role_id(k), "name": format!("crew {k}"), "description": null,
            "color": 0x3498db + k, "colors": {"primary_color": 0x3498db + k, "secondary_color": null, "tertiary_color": null},
            "hoist": k < 4, "icon": null, "unicode_emoji": null, "position": k, "permissions": "1071698660929",
            "managed": false, "mentionable": k.is_multiple_of(2), "flags": 0,
        }));
    }
    g["roles"] = json!(roles);
    g["emojis"] = (0..EMOJIS)
        .map(|k| json!({"id": (EMOJI_BASE + k).to_string(), "name": format!("harbour_{k}"),
            "roles": [], "require_colons": true, "managed": false, "animated": k.is_multiple_of(5), "available": true}))
        .collect();
    g["stickers"] = (0..3)
        .map(|k| {
            json!({"id": (EMOJI_BASE + 100 + k).to_string(), "name": format!("gull {k}"),
            "description": "a gull", "tags": "bird", "type": 2, "format_type": 1, "available": true,
            "guild_id": GUILD.to_string()})
        })
        .collect();
    g["channels"] = json!(channels());
    let voice: Vec<u64> = (0..VOICE).map(|k| CHANNEL_BASE + 500 + k).collect();
    let in_voice: Vec<u64> = (0..IN_VOICE).map(|k| PERSON_BASE + k).collect();
    let mut members = vec![g["members"][0].clone()];
    members.extend(in_voice.iter().map(|id| {
        let mut m = member_of(*id);
        m["user"] = user(*id, &format!("harbourfolk{}", id - PERSON_BASE));
        m
    }));
    g["members"] = json!(members);
    g["voice_states"] = in_voice
        .iter()
        .enumerate()
        .map(|(k, id)| json!({"user_id": id.to_string(), "channel_id": voice[k % voice.len()].to_string(),
            "session_id": hash(*id), "deaf": false, "mute": false, "self_deaf": false, "self_mute": k.is_multiple_of(3),
            "self_video": false, "suppress": false, "request_to_speak_timestamp": null}))
        .collect();
    g["member_count"] = json!(MEMBERS);
    g["large"] = json!(true);
    g["features"] = json!(["COMMUNITY", "NEWS", "INVITE_SPLASH", "ANIMATED_ICON"]);
    g["icon"] = json!(hash(GUILD));
    g["description"] = json!("A harbour town's server: ferries, fish, weather and gossip.");
    g["premium_tier"] = json!(2);
    g["premium_subscription_count"] = json!(9);
    g["max_members"] = json!(500_000);
    g["max_video_channel_users"] = json!(25);
    g["system_channel_id"] = json!(GENERAL.to_string());
    g["rules_channel_id"] = json!(RANDOM.to_string());
    g["public_updates_channel_id"] = json!(RANDOM.to_string());
    g["afk_timeout"] = json!(300);
    g["vanity_url_code"] = json!(null);
    g
}

/// [`CHANNELS`] channels: categories, voice, and text (#general and #random first).
fn channels() -> Vec<Value> {
    let guild = GUILD.to_string();
    let overwrites = |k: u64| {
        json!([
            {"id": guild, "type": 0, "allow": "0", "deny": if k.is_multiple_of(9) { "1024" } else { "0" }},
            {"id": role_id(1 + k % 7), "type": 0, "allow": "3072", "deny": "0"},
            {"id": role_id(13 + k % 6), "type": 0, "allow": "0", "deny": "2048"},
        ])
    };
    let category = |k: u64| (CHANNEL_BASE + k % CATEGORIES).to_string();
    let text = |id: u64, k: u64, name: String| {
        json!({"id": id.to_string(), "type": 0, "name": name, "guild_id": guild, "position": k,
            "parent_id": category(k), "topic": "Talk about the harbour; be kind.", "nsfw": false,
            "last_message_id": null, "rate_limit_per_user": 0, "flags": 0, "icon_emoji": null,
            "theme_color": null, "permission_overwrites": overwrites(k)})
    };
    let mut out: Vec<Value> = (0..CATEGORIES)
        .map(|k| {
            json!({"id": (CHANNEL_BASE + k).to_string(), "type": 4, "name": format!("area {k}"),
            "guild_id": guild, "position": k, "flags": 0, "permission_overwrites": overwrites(k)})
        })
        .collect();
    out.extend((0..VOICE).map(|k| {
        json!({"id": (CHANNEL_BASE + 500 + k).to_string(), "type": 2, "name": format!("voice {k}"),
            "guild_id": guild, "position": k, "parent_id": category(k), "bitrate": 64000,
            "user_limit": 0, "rtc_region": null, "nsfw": false, "rate_limit_per_user": 0, "flags": 0,
            "last_message_id": null, "permission_overwrites": overwrites(k)})
    }));
    out.push(text(GENERAL, 0, "general".into()));
    out.push(text(RANDOM, 1, "random".into()));
    let rest = CHANNELS - CATEGORIES - VOICE - 2;
    out.extend((0..rest).map(|k| text(CHANNEL_BASE + 1_000 + k, k + 2, format!("topic-{k}"))));
    out
}
