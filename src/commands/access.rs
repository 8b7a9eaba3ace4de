//! `/ambient pair CODE`: an owner lets someone talk to the bot in direct
//! messages (`discord.dms` `pairing`). The code is the one the bot gave
//! that person when they wrote to it; approving it keeps them in the store.

use crate::app::App;
use crate::permissions::{PAIRING_CODE_LEN, pairing_code};
use crate::settings::DmPolicy;
use crate::store::PeopleStore;
use crate::store::pairing::Pairing;
use crate::vocab::journal::{Entry, Kind};

use super::Asker;

/// Approves the person holding `code`, if `who` is an owner; what to show them.
pub fn pair(app: &App, who: &Asker, code: &str) -> String {
    let settings = app.settings.global();
    if !settings.discord.owner_user_ids.contains(&who.user) {
        return "Only the bot's owners (discord.ownerUserIds) can approve a pairing code.".into();
    }
    let Some(code) = pairing_code(code) else {
        return format!(
            "{:?} is not a pairing code: those are {PAIRING_CODE_LEN} letters and digits, like K7QX2M.",
            code.trim()
        );
    };
    let now = app.clock.now();
    let approved = match app
        .stores::<PeopleStore>()
        .approve_pairing(&code, who.user, now)
    {
        Ok(Pairing::Approved(c)) => c,
        Ok(Pairing::Expired(c)) => {
            return format!(
                "The code {code} ran out at {} UTC: ask {} to write to me again for a new one.",
                c.expires_at.format("%Y-%m-%d %H:%M"),
                c.user_name
            );
        }
        Ok(Pairing::Unknown) => return format!("No one holds the pairing code {code}."),
        Err(e) => return format!("Could not approve {code}: {e}"),
    };
    app.journal.record(
        Entry::new(
            Kind::Settings,
            format!("approved {}'s direct messages", approved.user_name),
        )
        .reason(format!(
            "pairing code {code} approved by {} ({})",
            who.name, who.user
        ))
        .data(serde_json::json!({ "user": approved.user.to_string() })),
    );
    let note = match settings.discord.dm_policy() {
        DmPolicy::Pairing => "",
        _ => " (discord.dms is not pairing now, so it counts only once it is)",
    };
    format!(
        "Approved {} ({}): I answer their direct messages now{note}.",
        approved.user_name, approved.user
    )
}
