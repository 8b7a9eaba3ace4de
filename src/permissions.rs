//! Who and where the bot may see: `permissions.replies.*` applied to percepts.
//!
//! Blocked users and blocked or not-allowed channels are invisible: their
//! messages are neither stored nor routed. Direct messages follow
//! `discord.allowDms` and the user block list only.

use crate::attention::Place;
use crate::ids::{ChannelId, UserId};
use crate::settings::Settings;

/// Why something is invisible, or `None` if the bot may see it.
pub fn invisible_because(
    settings: &Settings,
    place: Place,
    author: Option<UserId>,
) -> Option<&'static str> {
    let replies = &settings.permissions.replies;
    if let Some(user) = author
        && replies.blocked_user_ids.contains(&user)
    {
        return Some("the author is in permissions.replies.blockedUserIds");
    }
    if place.is_dm() {
        return (!settings.discord.allow_dms)
            .then_some("direct messages are off (discord.allowDms)");
    }
    channel_invisible_because(settings, place.channel)
}

pub fn channel_invisible_because(settings: &Settings, channel: ChannelId) -> Option<&'static str> {
    let replies = &settings.permissions.replies;
    if replies.blocked_channel_ids.contains(&channel) {
        return Some("the channel is in permissions.replies.blockedChannelIds");
    }
    if !replies.allowed_channel_ids.is_empty() && !replies.allowed_channel_ids.contains(&channel) {
        return Some("the channel is not in permissions.replies.allowedChannelIds");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::GuildId;

    #[test]
    fn blocks_and_allow_lists_hide_things() {
        let mut s = Settings::default();
        let place = Place {
            guild: Some(GuildId(1)),
            channel: ChannelId(10),
        };
        assert_eq!(invisible_because(&s, place, Some(UserId(5))), None);
        s.permissions.replies.blocked_user_ids = vec![UserId(5)];
        assert!(invisible_because(&s, place, Some(UserId(5))).is_some());
        s.permissions.replies.allowed_channel_ids = vec![ChannelId(11)];
        assert!(
            invisible_because(&s, place, Some(UserId(6)))
                .unwrap()
                .contains("allowedChannelIds")
        );
        let dm = Place {
            guild: None,
            channel: ChannelId(99),
        };
        assert_eq!(
            invisible_because(&s, dm, Some(UserId(6))),
            None,
            "channel lists do not apply to DMs"
        );
        s.discord.allow_dms = false;
        assert!(invisible_because(&s, dm, Some(UserId(6))).is_some());
    }
}
