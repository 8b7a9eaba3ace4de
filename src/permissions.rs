//! Who and where the bot may see, and who may talk to it.
//!
//! Visibility (`permissions.replies.*`): blocked users and blocked or
//! not-allowed channels are invisible: their messages are neither stored nor
//! routed. Direct messages follow the user block list only.
//!
//! Who may talk to it ([`refusal`]): in a server, `permissions.roles` (an
//! empty `allowed` list lets everyone in; a `blocked` role wins over an
//! allowed one); in direct messages, `discord.dms`. `discord.ownerUserIds`
//! always pass. A refusal is asked for before any model call — by the
//! answer, by a reflex that would call a model — and is journaled as a gate
//! (`roles` or `dms`); the person is told why at most once a day.

use crate::attention::{MessagePercept, Place};
use crate::ids::{ChannelId, RoleId, UserId};
use crate::settings::{DmPolicy, Settings};
use crate::store::PeopleStore;

/// What a pairing code is made of: capitals and digits without the ones
/// people mistake for each other (0 O, 1 I L).
pub(crate) const PAIRING_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// How long a pairing code is.
pub(crate) const PAIRING_CODE_LEN: usize = 6;

/// Why a person may not talk to the bot here: the gate, what the journal
/// says, and the short sentence the person is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    /// `roles` or `dms`: the name the journal and the replay report count.
    pub gate: &'static str,
    pub reason: String,
    pub tell: &'static str,
    /// `discord.dms` is `pairing`: the person is offered a code instead of `tell`.
    pub may_pair: bool,
}

/// Why something is invisible, or `None` if the bot may see it.
pub(crate) fn invisible_because(
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
        return None;
    }
    channel_invisible_because(settings, place.channel)
}

/// Why the author of `m` may not talk to the bot, or `None` if they may.
pub(crate) fn refusal(
    settings: &Settings,
    store: &PeopleStore,
    m: &MessagePercept,
) -> Option<Refused> {
    let author = m.message.author_id;
    if settings.discord.owner_user_ids.contains(&author) {
        return None;
    }
    if m.place().is_dm() {
        return dm_refusal(settings, store, author);
    }
    role_refusal(settings, m.author_roles.as_deref())
}

/// `permissions.roles` applied to the roles a message carried (`None`: not
/// known, which passes only when no role is named at all).
pub(crate) fn role_refusal(settings: &Settings, roles: Option<&[RoleId]>) -> Option<Refused> {
    let rules = &settings.permissions.roles;
    if rules.allowed.is_empty() && rules.blocked.is_empty() {
        return None;
    }
    let refused = |reason: String| Refused {
        gate: "roles",
        reason,
        tell: "Sorry, I only talk with people who have certain roles in this server.",
        may_pair: false,
    };
    let Some(roles) = roles else {
        return Some(refused(
            "the author's roles are not known (a voice line, the console or a replay) \
             and permissions.roles names some"
                .into(),
        ));
    };
    if let Some(r) = roles.iter().find(|r| rules.blocked.contains(r)) {
        return Some(refused(format!(
            "the author has role {r}, which is in permissions.roles.blocked"
        )));
    }
    if !rules.allowed.is_empty() && !roles.iter().any(|r| rules.allowed.contains(r)) {
        return Some(refused(
            "the author has no role in permissions.roles.allowed".into(),
        ));
    }
    None
}

/// `discord.dms` applied to the author of a direct message. Under
/// `pairing`, a store read that fails refuses: an approval the bot cannot
/// read is one it must not assume.
pub(crate) fn dm_refusal(
    settings: &Settings,
    store: &PeopleStore,
    author: UserId,
) -> Option<Refused> {
    let d = &settings.discord;
    match d.dm_policy() {
        DmPolicy::Open => None,
        DmPolicy::Allowlist if d.dm_allowlist.contains(&author) => None,
        DmPolicy::Allowlist => Some(Refused {
            gate: "dms",
            reason: "the author is not in discord.dmAllowlist (discord.dms is allowlist)".into(),
            tell: "Sorry, I only answer direct messages from people my operator has allowed.",
            may_pair: false,
        }),
        DmPolicy::Pairing => match store.is_paired(author) {
            Ok(true) => None,
            Ok(false) => Some(Refused {
                gate: "dms",
                reason: "no owner has approved the author yet (discord.dms is pairing)".into(),
                tell: "Sorry, I only answer direct messages from people my owner has approved.",
                may_pair: true,
            }),
            Err(e) => Some(Refused {
                gate: "store",
                reason: format!("store read failed: the approved people: {e}; keeping quiet"),
                tell: "Sorry, I can't check right now whether I may answer you here.",
                may_pair: false,
            }),
        },
        DmPolicy::Off => Some(Refused {
            gate: "dms",
            reason: match d.allow_dms {
                Some(false) => "direct messages are off (discord.allowDms is false)".into(),
                _ => "direct messages are off (discord.dms is off)".into(),
            },
            tell: "Sorry, I don't answer direct messages. You can talk to me in a server we share.",
            may_pair: false,
        }),
    }
}

/// A new pairing code: [`PAIRING_CODE_LEN`] characters of
/// [`PAIRING_ALPHABET`] from the operating system's randomness (a code is a
/// key to the bot's attention: not from the seeded dice).
pub(crate) fn new_pairing_code() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..PAIRING_CODE_LEN)
        .map(|_| char::from(PAIRING_ALPHABET[rng.random_range(0..PAIRING_ALPHABET.len())]))
        .collect()
}

/// `text` as a pairing code (case and spaces forgiven), or `None` if it cannot be one.
pub(crate) fn pairing_code(text: &str) -> Option<String> {
    let code = text.trim().to_ascii_uppercase();
    (code.len() == PAIRING_CODE_LEN && code.bytes().all(|b| PAIRING_ALPHABET.contains(&b)))
        .then_some(code)
}

pub(crate) fn channel_invisible_because(
    settings: &Settings,
    channel: ChannelId,
) -> Option<&'static str> {
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
    use crate::store::Store;

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
    }

    fn said(roles: Option<Vec<RoleId>>, guild: Option<u64>) -> MessagePercept {
        MessagePercept {
            message: crate::store::messages::StoredMessage::said(
                crate::ids::MessageId(1),
                guild.map(GuildId),
                ChannelId(10),
                UserId(5),
                "ada",
                "hi",
                chrono::Utc::now(),
            ),
            addressed: crate::attention::Addressed::Mention,
            guild_name: None,
            channel_name: None,
            author_roles: roles,
        }
    }

    fn store() -> Store {
        Store::open_in_memory().unwrap()
    }

    #[test]
    fn a_pairing_code_has_no_look_alikes_and_is_read_forgivingly() {
        let code = new_pairing_code();
        assert_eq!(pairing_code(&code), Some(code.clone()));
        assert_eq!(
            pairing_code(&format!(" {} ", code.to_lowercase())),
            Some(code)
        );
        assert_eq!(pairing_code("K7QX0M"), None, "0 is not in the alphabet");
        assert_eq!(pairing_code("K7QX2"), None);
    }

    #[test]
    fn roles_decide_who_may_talk_a_blocked_one_wins_and_owners_always_pass() {
        let mut s = Settings::default();
        let member = said(Some(vec![RoleId(1), RoleId(2)]), Some(1));
        assert_eq!(
            refusal(&s, &store().people(), &member),
            None,
            "no roles named: everyone"
        );
        assert_eq!(refusal(&s, &store().people(), &said(None, Some(1))), None);
        s.permissions.roles.allowed = vec![RoleId(2)];
        assert_eq!(refusal(&s, &store().people(), &member), None);
        let other = said(Some(vec![RoleId(3)]), Some(1));
        assert_eq!(
            refusal(&s, &store().people(), &other).unwrap().gate,
            "roles"
        );
        assert!(
            refusal(&s, &store().people(), &said(None, Some(1))).is_some(),
            "unknown roles fail closed"
        );
        s.permissions.roles.blocked = vec![RoleId(1)];
        assert!(
            refusal(&s, &store().people(), &member)
                .unwrap()
                .reason
                .contains("role 1, which is in permissions.roles.blocked"),
            "a blocked role wins over an allowed one"
        );
        s.discord.owner_user_ids = vec![UserId(5)];
        assert_eq!(refusal(&s, &store().people(), &member), None);
    }

    #[test]
    fn the_dm_policy_decides_direct_messages_and_the_older_switch_still_counts() {
        let mut s = Settings::default();
        let dm = said(None, None);
        assert_eq!(refusal(&s, &store().people(), &dm), None, "open by default");
        s.permissions.roles.allowed = vec![RoleId(2)];
        assert_eq!(
            refusal(&s, &store().people(), &dm),
            None,
            "roles do not apply to DMs"
        );
        s.discord.dms = DmPolicy::Allowlist;
        assert_eq!(refusal(&s, &store().people(), &dm).unwrap().gate, "dms");
        s.discord.dm_allowlist = vec![UserId(5)];
        assert_eq!(refusal(&s, &store().people(), &dm), None);
        s.discord.dms = DmPolicy::Open;
        s.discord.allow_dms = Some(false);
        assert!(
            refusal(&s, &store().people(), &dm)
                .unwrap()
                .reason
                .contains("discord.allowDms is false")
        );
        s.discord.owner_user_ids = vec![UserId(5)];
        assert_eq!(refusal(&s, &store().people(), &dm), None);
    }
}
