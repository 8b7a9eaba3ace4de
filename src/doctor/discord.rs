//! Checks against Discord's REST API (or the server `discord.apiBaseUrl`
//! names, as the bot uses it): the token, the clock, the application's
//! privileged intents, the bot's permissions in each configured channel,
//! and the slash commands. The token goes only into the Authorization
//! header; no line here ever shows it.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::Check;
use super::perms::{self, Overwrite, Target};
use crate::settings::{Secrets, Settings};

/// Discord's REST version, as serenity speaks it.
const API: &str = "/api/v10";
/// The largest answer read: a guild's channel list is well under this.
const MAX_BODY: usize = 4 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(10);
/// How far the clock may be from Discord's before signatures and timestamps go wrong.
pub(crate) const MAX_SKEW_SECONDS: i64 = 5;
const PORTAL: &str = "the Developer Portal (https://discord.com/developers/applications → your app → Bot → Privileged Gateway Intents)";

/// Application flags (`GET /applications/@me`).
pub(crate) const GATEWAY_GUILD_MEMBERS: u64 = 1 << 14;
pub(crate) const GATEWAY_GUILD_MEMBERS_LIMITED: u64 = 1 << 15;
pub(crate) const GATEWAY_MESSAGE_CONTENT: u64 = 1 << 18;
pub(crate) const GATEWAY_MESSAGE_CONTENT_LIMITED: u64 = 1 << 19;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error("{route}: 401 Unauthorized ({message})")]
    Unauthorized { route: String, message: String },
    #[error("{route}: HTTP {status} ({message})")]
    Status {
        route: String,
        status: u16,
        message: String,
    },
    #[error("{route}: {cause}")]
    Network { route: String, cause: String },
    #[error("{route}: the answer is not what Discord sends: {why}")]
    Body { route: String, why: String },
}

/// Discord's REST API as the bot reaches it.
struct Api {
    client: reqwest::Client,
    base: String,
    authorization: String,
}

/// One answer: its JSON and its `Date` header.
struct Answer {
    body: Value,
    date: Option<DateTime<Utc>>,
}

impl Api {
    async fn get(&self, route: &str) -> Result<Answer, ApiError> {
        let network = |e: reqwest::Error| ApiError::Network {
            route: route.to_string(),
            cause: crate::net::error_chain(&e),
        };
        let mut response = self
            .client
            .get(format!("{}{API}{route}", self.base))
            .header("Authorization", &self.authorization)
            .timeout(TIMEOUT)
            .send()
            .await
            .map_err(network)?;
        let date = response
            .headers()
            .get("date")
            .and_then(|d| d.to_str().ok())
            .and_then(|d| DateTime::parse_from_rfc2822(d).ok())
            .map(|d| d.with_timezone(&Utc));
        let status = response.status().as_u16();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(network)? {
            if bytes.len() + chunk.len() > MAX_BODY {
                return Err(ApiError::Body {
                    route: route.to_string(),
                    why: format!("larger than {MAX_BODY} bytes"),
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let message = body["message"]
            .as_str()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        match status {
            200..=299 if !body.is_null() => Ok(Answer { body, date }),
            200..=299 => Err(ApiError::Body {
                route: route.to_string(),
                why: "not JSON".into(),
            }),
            401 => Err(ApiError::Unauthorized {
                route: route.to_string(),
                message,
            }),
            _ => Err(ApiError::Status {
                route: route.to_string(),
                status,
                message,
            }),
        }
    }
}

/// A snowflake written as Discord writes it (a string), or 0.
fn id(v: &Value) -> u64 {
    v.as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// A permission set written as Discord writes it (a decimal string), or 0.
fn bits(v: &Value) -> u64 {
    id(v)
}

/// Every Discord check. Without a token only that is said: nothing else can be asked.
pub(crate) async fn checks(
    settings: &Settings,
    secrets: &Secrets,
    commands: &[String],
) -> Vec<Check> {
    let Some(token) = &secrets.discord_token else {
        return vec![Check::fail(
            "discord token",
            "DISCORD_TOKEN is not set",
            "set DISCORD_TOKEN to the bot token from the Developer Portal (Bot → Reset Token)",
        )];
    };
    let client = match crate::net::platform_client(&settings.network) {
        Ok(c) => c,
        Err(e) => {
            return vec![Check::fail(
                "discord token",
                format!("cannot build an HTTP client: {e}"),
                "check network.proxy",
            )];
        }
    };
    let api = Api {
        client,
        base: settings
            .discord
            .api_base_url
            .trim_end_matches('/')
            .to_string(),
        authorization: format!("Bot {}", token.expose()),
    };
    let started = Utc::now();
    let me = api.get("/users/@me").await;
    let answered = Utc::now();
    let mut out = vec![token_check(&me, &settings.discord.api_base_url)];
    let me = match me {
        Ok(me) => me,
        Err(_) => return out,
    };
    out.push(clock(me.date, started, answered));
    let app = api.get("/applications/@me").await;
    out.extend(intents(&app, settings.discord.members_intent));
    out.extend(channels(&api, settings, id(&me.body["id"])).await);
    out.push(registered(&api, &app, settings, commands).await);
    out
}

fn token_check(me: &Result<Answer, ApiError>, base: &str) -> Check {
    let name = "discord token";
    match me {
        Ok(me) => Check::ok(
            name,
            format!(
                "logs in as {} ({})",
                me.body["username"].as_str().unwrap_or("?"),
                id(&me.body["id"])
            ),
        ),
        Err(ApiError::Unauthorized { message, .. }) => Check::fail(
            name,
            format!(
                "the token in DISCORD_TOKEN is not valid: Discord answered 401 Unauthorized ({message})"
            ),
            "copy the bot token again from the Developer Portal (Bot → Reset Token) into DISCORD_TOKEN",
        ),
        Err(e) => Check::fail(
            name,
            format!("cannot ask Discord at {base}: {e}"),
            "check the network, network.proxy and discord.apiBaseUrl",
        ),
    }
}

/// The clock against Discord's `Date` header (one-second resolution).
/// Discord's clock read somewhere in the second `date` names, at a moment
/// between asking and the answer: the two middles are compared, so a clock
/// a minute off reads 60 s however the second falls (set against the moment
/// of asking, a second that turned on the way read 59). The request's middle
/// in whole seconds past `date`'s start is that comparison to the nearest
/// second, a half rounded up.
fn clock(date: Option<DateTime<Utc>>, asked: DateTime<Utc>, answered: DateTime<Utc>) -> Check {
    let name = "clock";
    let Some(date) = date else {
        return Check::warn(
            name,
            "Discord's answer had no Date header to compare with",
            "compare the clock with a time server yourself (`timedatectl`)",
        );
    };
    let ours = asked + (answered - asked) / 2;
    let skew = (ours - date).num_milliseconds().div_euclid(1000);
    let detail = match skew {
        0 => "same second as Discord's".to_string(),
        s if s > 0 => format!("{s} s ahead of Discord's"),
        s => format!("{} s behind Discord's", -s),
    };
    if skew.abs() > MAX_SKEW_SECONDS {
        Check::fail(
            name,
            detail,
            "synchronise the clock with a time server (`timedatectl set-ntp true`, or install chrony)",
        )
    } else {
        Check::ok(name, detail)
    }
}

fn intents(app: &Result<Answer, ApiError>, members: bool) -> Vec<Check> {
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            return vec![Check::fail(
                "message content intent",
                format!("cannot read the application: {e}"),
                "check the token belongs to a bot application",
            )];
        }
    };
    let flags = app.body["flags"].as_u64().unwrap_or(0);
    let mut out = Vec::new();
    out.push(
        if flags & (GATEWAY_MESSAGE_CONTENT | GATEWAY_MESSAGE_CONTENT_LIMITED) != 0 {
            Check::ok("message content intent", "on")
        } else {
            Check::fail(
                "message content intent",
                "off: the bot would see every message empty",
                format!("turn on Message Content Intent in {PORTAL}"),
            )
        },
    );
    if members {
        out.push(
            if flags & (GATEWAY_GUILD_MEMBERS | GATEWAY_GUILD_MEMBERS_LIMITED) != 0 {
                Check::ok("server members intent", "on (discord.membersIntent asks for it)")
            } else {
                Check::fail(
                    "server members intent",
                    "off, but discord.membersIntent asks for it: Discord refuses the connection",
                    format!("turn on Server Members Intent in {PORTAL}, or set discord.membersIntent to false"),
                )
            },
        );
    }
    out
}

/// A channel the settings name, what the bot needs there, and the setting naming it.
struct Wanted {
    id: u64,
    needs: u64,
    setting: &'static str,
}

fn wanted(settings: &Settings) -> Vec<Wanted> {
    let replies = &settings.permissions.replies;
    let text = |ids: &[crate::ids::ChannelId], setting| {
        ids.iter()
            .map(move |c| Wanted {
                id: c.0,
                needs: perms::TEXT_NEEDS,
                setting,
            })
            .collect::<Vec<_>>()
    };
    let mut out = text(
        &replies.reply_channel_ids,
        "permissions.replies.replyChannelIds",
    );
    out.extend(text(
        &replies.discovery_channel_ids,
        "permissions.replies.discoveryChannelIds",
    ));
    let voice = &settings.voice;
    if voice.enabled {
        let voice_ids = voice
            .auto_join_channel_ids
            .iter()
            .chain(voice.links.iter().map(|l| &l.voice_channel_id));
        out.extend(voice_ids.map(|c| Wanted {
            id: c.0,
            needs: perms::VOICE_NEEDS,
            setting: "voice",
        }));
        let links: Vec<_> = voice.links.iter().map(|l| l.text_channel_id).collect();
        out.extend(text(&links, "voice.links"));
    }
    // A channel named twice needs both sets, checked once.
    let mut merged: Vec<Wanted> = Vec::new();
    for w in out {
        match merged.iter_mut().find(|m| m.id == w.id) {
            Some(m) => m.needs |= w.needs,
            None => merged.push(w),
        }
    }
    merged
}

/// The bot's permissions in each configured channel, from the guilds it is in.
async fn channels(api: &Api, settings: &Settings, bot: u64) -> Vec<Check> {
    let wanted = wanted(settings);
    let guilds = match api.get("/users/@me/guilds").await {
        Ok(g) => g.body.as_array().cloned().unwrap_or_default(),
        Err(e) => {
            return vec![Check::fail(
                "servers",
                format!("cannot list the bot's servers: {e}"),
                "check the token and discord.apiBaseUrl",
            )];
        }
    };
    let mut out = Vec::new();
    if guilds.is_empty() {
        out.push(Check::fail(
            "servers",
            "the bot is in no server",
            "invite it with the OAuth2 URL Generator in the Developer Portal (scopes bot and applications.commands)",
        ));
    } else if wanted.is_empty() {
        out.push(Check::ok(
            "servers",
            format!(
                "in {} server(s); no reply, discovery or voice channels are set to check",
                guilds.len()
            ),
        ));
    }
    let mut found = BTreeSet::new();
    for g in &guilds {
        match guild_channels(api, g, bot, &wanted).await {
            Ok(checks) => {
                for (channel, check) in checks {
                    found.insert(channel);
                    out.push(check);
                }
            }
            Err(e) => out.push(Check::fail(
                format!("server {}", g["name"].as_str().unwrap_or("?")),
                format!("cannot read its roles and channels: {e}"),
                "check the bot is still in that server and Discord is reachable",
            )),
        }
    }
    for w in wanted.iter().filter(|w| !found.contains(&w.id)) {
        out.push(Check::fail(
            format!("channel {}", w.id),
            format!(
                "named in {} but in no server the bot is in (or it cannot see it)",
                w.setting
            ),
            format!(
                "invite the bot to that channel's server, or remove the id from {}",
                w.setting
            ),
        ));
    }
    out
}

/// One guild's configured channels, each with the bot's permissions against its needs.
async fn guild_channels(
    api: &Api,
    g: &Value,
    bot: u64,
    wanted: &[Wanted],
) -> Result<Vec<(u64, Check)>, ApiError> {
    let gid = id(&g["id"]);
    let guild = api.get(&format!("/guilds/{gid}")).await?.body;
    let member = api.get(&format!("/guilds/{gid}/members/{bot}")).await?.body;
    let channels = api.get(&format!("/guilds/{gid}/channels")).await?.body;
    let roles: Vec<perms::Role> = guild["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| perms::Role {
            id: id(&r["id"]),
            permissions: bits(&r["permissions"]),
        })
        .collect();
    let member_roles: Vec<u64> = member["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .map(id)
        .collect();
    let guild_view = perms::Guild {
        id: gid,
        owner_id: id(&guild["owner_id"]),
        roles: &roles,
    };
    let member_view = perms::Member {
        user_id: bot,
        roles: &member_roles,
    };
    let server = guild["name"].as_str().unwrap_or("?");
    let mut out = Vec::new();
    for c in channels.as_array().into_iter().flatten() {
        let Some(w) = wanted.iter().find(|w| w.id == id(&c["id"])) else {
            continue;
        };
        let overwrites: Vec<Overwrite> = c["permission_overwrites"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| {
                let target = match o["type"].as_u64()? {
                    0 => Target::Role(id(&o["id"])),
                    1 => Target::Member(id(&o["id"])),
                    _ => return None,
                };
                Some(Overwrite {
                    target,
                    allow: bits(&o["allow"]),
                    deny: bits(&o["deny"]),
                })
            })
            .collect();
        let has = perms::in_channel(&guild_view, &member_view, &overwrites);
        let missing = w.needs & !has;
        let channel = format!("#{}", c["name"].as_str().unwrap_or("?"));
        let name = format!("{channel} ({server})");
        let check = if missing == 0 {
            Check::ok(name, format!("has {}", perms::names(w.needs).join(", ")))
        } else {
            let list = perms::names(missing).join(", ");
            Check::fail(
                name,
                format!("missing {list}"),
                format!(
                    "in Discord, Edit Channel {channel} → Permissions: allow {list} for the bot's role (a deny for @everyone or one of its roles there takes it away)"
                ),
            )
        };
        out.push((w.id, check));
    }
    Ok(out)
}

/// The bot's slash commands are among the application's (in `discord.devGuildId`'s guild when set).
async fn registered(
    api: &Api,
    app: &Result<Answer, ApiError>,
    settings: &Settings,
    commands: &[String],
) -> Check {
    let name = "slash commands";
    let Ok(app) = app else {
        return Check::fail(name, "cannot read the application", "check the token");
    };
    let app_id = id(&app.body["id"]);
    let (route, scope) = match settings.discord.dev_guild_id {
        Some(g) => (
            format!("/applications/{app_id}/guilds/{}/commands", g.0),
            format!("in server {} (discord.devGuildId)", g.0),
        ),
        None => (
            format!("/applications/{app_id}/commands"),
            "globally".to_string(),
        ),
    };
    let listed = match api.get(&route).await {
        Ok(a) => a.body,
        Err(e) => {
            return Check::fail(name, format!("cannot list them: {e}"), "check the token");
        }
    };
    let have: BTreeSet<&str> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let missing: Vec<&str> = commands
        .iter()
        .map(String::as_str)
        .filter(|c| !have.contains(c))
        .collect();
    if missing.is_empty() {
        Check::ok(name, format!("{} registered {scope}", commands.len()))
    } else {
        Check::fail(
            name,
            format!("not registered {scope}: /{}", missing.join(", /")),
            "start the bot once with `ambient run`: it registers them as it connects (global ones can take up to an hour to show)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// A clock a minute ahead reads 60 s wherever in Discord's second its
    /// answer fell, and one that agrees reads the same second.
    #[test]
    fn a_minute_ahead_reads_sixty_seconds_wherever_the_second_turns() {
        let ms = chrono::Duration::milliseconds;
        let second = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        for into in [0, 1, 499, 500, 998] {
            // Discord reads its clock `into` ms into `second`; ours says a
            // minute more, and the answer takes 20 ms there and back.
            let read = second + ms(into);
            let asked = read + ms(60_000 - 10);
            let check = clock(Some(second), asked, asked + ms(20));
            assert_eq!(check.detail, "60 s ahead of Discord's", "{into} ms in");
            assert_eq!(check.status, super::super::Status::Fail);
            let agreeing = clock(Some(second), read - ms(10), read + ms(10));
            assert_eq!(agreeing.detail, "same second as Discord's", "{into} ms in");
        }
    }
}
