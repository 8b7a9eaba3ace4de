//! A member's permissions in a channel, computed as Discord documents it
//! ("Permission Overwrites" in the developer docs): the guild owner has all;
//! otherwise @everyone's role OR'd with the member's roles, ADMINISTRATOR
//! meaning all; then the channel's overwrites in order — @everyone's deny
//! and allow, the member's roles' denies and allows together, the member's
//! own deny and allow. Pure: the caller fetched the guild, member and channel.

/// Discord's permission bits the bot needs, with the names the Discord client shows.
pub(crate) const ADMINISTRATOR: u64 = 1 << 3;
pub(crate) const ADD_REACTIONS: u64 = 1 << 6;
pub(crate) const VIEW_CHANNEL: u64 = 1 << 10;
pub(crate) const SEND_MESSAGES: u64 = 1 << 11;
pub(crate) const EMBED_LINKS: u64 = 1 << 14;
pub(crate) const ATTACH_FILES: u64 = 1 << 15;
pub(crate) const READ_MESSAGE_HISTORY: u64 = 1 << 16;
pub(crate) const CONNECT: u64 = 1 << 20;
pub(crate) const SPEAK: u64 = 1 << 21;

/// What the bot needs in a text channel it answers or posts in.
pub(crate) const TEXT_NEEDS: u64 = VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | ADD_REACTIONS
    | READ_MESSAGE_HISTORY;
/// What it needs in a voice channel it joins.
pub(crate) const VOICE_NEEDS: u64 = VIEW_CHANNEL | CONNECT | SPEAK;

const NAMES: [(u64, &str); 9] = [
    (VIEW_CHANNEL, "View Channel"),
    (SEND_MESSAGES, "Send Messages"),
    (EMBED_LINKS, "Embed Links"),
    (ATTACH_FILES, "Attach Files"),
    (ADD_REACTIONS, "Add Reactions"),
    (READ_MESSAGE_HISTORY, "Read Message History"),
    (CONNECT, "Connect"),
    (SPEAK, "Speak"),
    (ADMINISTRATOR, "Administrator"),
];

/// The names of the bits set in `bits`, in the Discord client's order.
pub(crate) fn names(bits: u64) -> Vec<&'static str> {
    NAMES
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// A role of the guild: its id and permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Role {
    pub id: u64,
    pub permissions: u64,
}

/// Whom a channel overwrite is for (Discord's `type`: 0 role, 1 member).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Role(u64),
    Member(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overwrite {
    pub target: Target,
    pub allow: u64,
    pub deny: u64,
}

/// The guild as far as permissions go. @everyone's role has the guild's id.
pub(crate) struct Guild<'a> {
    pub id: u64,
    pub owner_id: u64,
    pub roles: &'a [Role],
}

/// The member asked about and the roles they have (not @everyone).
pub(crate) struct Member<'a> {
    pub user_id: u64,
    pub roles: &'a [u64],
}

/// The guild-wide permissions: before any channel's overwrites.
pub(crate) fn base(guild: &Guild, member: &Member) -> u64 {
    if member.user_id == guild.owner_id {
        return u64::MAX;
    }
    let role = |id: u64| {
        guild
            .roles
            .iter()
            .find(|r| r.id == id)
            .map_or(0, |r| r.permissions)
    };
    let permissions = member
        .roles
        .iter()
        .fold(role(guild.id), |p, id| p | role(*id));
    if permissions & ADMINISTRATOR != 0 {
        return u64::MAX;
    }
    permissions
}

/// The permissions in a channel with these overwrites.
pub(crate) fn in_channel(guild: &Guild, member: &Member, overwrites: &[Overwrite]) -> u64 {
    let mut permissions = base(guild, member);
    if permissions == u64::MAX {
        return permissions;
    }
    let apply = |p: u64, allow: u64, deny: u64| (p & !deny) | allow;
    if let Some(o) = overwrites
        .iter()
        .find(|o| o.target == Target::Role(guild.id))
    {
        permissions = apply(permissions, o.allow, o.deny);
    }
    let (allow, deny) = overwrites
        .iter()
        .filter(|o| matches!(o.target, Target::Role(id) if member.roles.contains(&id)))
        .fold((0, 0), |(a, d), o| (a | o.allow, d | o.deny));
    permissions = apply(permissions, allow, deny);
    if let Some(o) = overwrites
        .iter()
        .find(|o| o.target == Target::Member(member.user_id))
    {
        permissions = apply(permissions, o.allow, o.deny);
    }
    permissions
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUILD: u64 = 1;
    const BOT: u64 = 7;
    const HELPERS: u64 = 20;
    const MUTED: u64 = 21;

    fn guild(roles: &[Role]) -> Guild<'_> {
        Guild {
            id: GUILD,
            owner_id: 99,
            roles,
        }
    }

    fn role(id: u64, permissions: u64) -> Role {
        Role { id, permissions }
    }

    fn over(target: Target, allow: u64, deny: u64) -> Overwrite {
        Overwrite {
            target,
            allow,
            deny,
        }
    }

    #[test]
    fn everyone_and_the_members_roles_are_ord() {
        let roles = [
            role(GUILD, VIEW_CHANNEL),
            role(HELPERS, SEND_MESSAGES),
            role(MUTED, SPEAK),
        ];
        let member = Member {
            user_id: BOT,
            roles: &[HELPERS],
        };
        assert_eq!(base(&guild(&roles), &member), VIEW_CHANNEL | SEND_MESSAGES);
    }

    #[test]
    fn administrator_or_owner_is_everything_whatever_the_overwrites() {
        let roles = [role(GUILD, 0), role(HELPERS, ADMINISTRATOR)];
        let member = Member {
            user_id: BOT,
            roles: &[HELPERS],
        };
        let deny_all = [over(Target::Member(BOT), 0, u64::MAX)];
        assert_eq!(in_channel(&guild(&roles), &member, &deny_all), u64::MAX);
        let owned = Guild {
            id: GUILD,
            owner_id: BOT,
            roles: &[],
        };
        let plain = Member {
            user_id: BOT,
            roles: &[],
        };
        assert_eq!(in_channel(&owned, &plain, &deny_all), u64::MAX);
    }

    #[test]
    fn an_everyone_deny_takes_away_what_a_role_gave_guild_wide() {
        let roles = [role(GUILD, VIEW_CHANNEL), role(HELPERS, SEND_MESSAGES)];
        let member = Member {
            user_id: BOT,
            roles: &[HELPERS],
        };
        let p = in_channel(
            &guild(&roles),
            &member,
            &[over(Target::Role(GUILD), 0, SEND_MESSAGES)],
        );
        assert_eq!(p, VIEW_CHANNEL);
    }

    #[test]
    fn role_overwrites_combine_and_allow_wins_over_deny_among_them() {
        let roles = [role(GUILD, VIEW_CHANNEL)];
        let member = Member {
            user_id: BOT,
            roles: &[HELPERS, MUTED],
        };
        let overwrites = [
            over(Target::Role(GUILD), 0, SEND_MESSAGES),
            over(Target::Role(MUTED), 0, SEND_MESSAGES | SPEAK),
            over(Target::Role(HELPERS), SEND_MESSAGES, 0),
        ];
        let p = in_channel(&guild(&roles), &member, &overwrites);
        assert_eq!(p, VIEW_CHANNEL | SEND_MESSAGES);
    }

    #[test]
    fn the_members_own_overwrite_comes_last() {
        let roles = [role(GUILD, VIEW_CHANNEL | SEND_MESSAGES)];
        let member = Member {
            user_id: BOT,
            roles: &[HELPERS],
        };
        let overwrites = [
            over(Target::Role(HELPERS), ATTACH_FILES, 0),
            over(Target::Member(BOT), 0, SEND_MESSAGES | ATTACH_FILES),
            // Someone else's overwrite is not the bot's.
            over(Target::Member(8), 0, VIEW_CHANNEL),
        ];
        assert_eq!(
            in_channel(&guild(&roles), &member, &overwrites),
            VIEW_CHANNEL
        );
    }

    #[test]
    fn missing_bits_are_named_as_the_client_names_them() {
        assert_eq!(
            names(TEXT_NEEDS & !(VIEW_CHANNEL | SEND_MESSAGES)),
            [
                "Embed Links",
                "Attach Files",
                "Add Reactions",
                "Read Message History"
            ]
        );
    }
}
