//! `/voice join [channel]`, `/voice leave`, `/voice optout`, `/voice optin`.
//!
//! Anyone may ask the bot into the voice channel they are in (people there
//! are told, and can opt out); naming another channel, or sending the bot
//! away from a room one is not in, needs Manage Server.

use crate::app::App;
use crate::commands::Asker;
use crate::ids::ChannelId;

/// `current`: the voice channel the asker is in, if any.
pub(crate) async fn join(
    app: &App,
    who: &Asker,
    requested: Option<ChannelId>,
    current: Option<ChannelId>,
) -> String {
    let Some(guild) = who.guild else {
        return "Voice works in servers, not DMs.".into();
    };
    if let Some(why) = app.voice.unavailable(guild) {
        return format!("I can't listen in voice: {why}.");
    }
    let target = match (requested, current) {
        (Some(r), c) if Some(r) != c && !who.manage => {
            return "Join that voice channel first, or ask someone with Manage Server.".into();
        }
        (Some(r), _) => r,
        (None, Some(c)) => c,
        (None, None) => return "Join a voice channel first (or name one), then ask again.".into(),
    };
    app.voice
        .join(guild, target, Some(who.channel), &who.name)
        .await
        .unwrap_or_else(|e| e.to_string())
}

pub(crate) async fn leave(app: &App, who: &Asker, current: Option<ChannelId>) -> String {
    let Some(guild) = who.guild else {
        return "Voice works in servers, not DMs.".into();
    };
    let Some(session) = app.voice.session(guild) else {
        return "I'm not in a voice channel here.".into();
    };
    if current != Some(session.session.voice_channel) && !who.manage {
        return "Only people in that voice channel, or with Manage Server, can send me away."
            .into();
    }
    app.voice
        .send_away(guild, &format!("asked by {}", who.name))
        .await
        .unwrap_or_else(|e| e.to_string())
}

/// The person's `no-voice` boundary (also `/ambient me no-voice`): it holds on every server.
pub(crate) fn opt_out(app: &App, who: &Asker) -> String {
    app.voice.opt_out(who.user)
}

pub(crate) fn opt_in(app: &App, who: &Asker) -> String {
    app.voice.opt_in(who.user)
}
