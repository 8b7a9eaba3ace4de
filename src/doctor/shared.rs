//! The shared PostgreSQL database (`storage.sharedUrl`): reachable with
//! the password in the environment, its schema this ambient's, and how
//! many people ledger events it holds. `ambient shared check` prints the
//! same check alone.

use super::Check;
use crate::settings::{Secrets, Settings};
use crate::store::shared::{SharedError, known_version};

/// The check's name in the report.
pub(crate) const NAME: &str = "shared database";

/// `None` without `storage.sharedUrl`: nothing to look at. Reads only.
pub(crate) async fn check(settings: &Settings, secrets: &Secrets) -> Option<Check> {
    let url = settings.storage.shared_url.trim();
    if url.is_empty() {
        return None;
    }
    let db = match crate::courtesy::people::shared_db(&settings.storage, secrets) {
        Ok(db) => db,
        Err(e @ SharedError::CaFile(_)) => {
            return Some(Check::fail(
                NAME,
                e.to_string(),
                "correct storage.sharedCaFile: a PEM file of the CA that signed the server's certificate",
            ));
        }
        Err(e) => {
            return Some(Check::fail(
                NAME,
                e.to_string(),
                "correct storage.sharedUrl (postgres://USER@HOST:PORT/DATABASE, the password in PGPASSWORD)",
            ));
        }
    };
    Some(match db.check().await {
        Ok(c) if c.version < c.known => Check::warn(
            NAME,
            format!(
                "{}: PostgreSQL {}, shared schema version {} of {}",
                c.place, c.server, c.version, c.known
            ),
            "run `ambient shared migrate` (the bot also migrates it when it starts)",
        ),
        Ok(c) => Check::ok(
            NAME,
            format!(
                "{}: PostgreSQL {}, shared schema version {} of {}, people ledger {} event(s), last {}",
                c.place, c.server, c.version, c.known, c.events, c.last_seq
            ),
        ),
        Err(e @ SharedError::Newer { .. }) => Check::fail(
            NAME,
            e.to_string(),
            format!(
                "run an ambient that knows shared schema version {} or later",
                known_version() + 1
            ),
        ),
        Err(e) => Check::fail(
            NAME,
            e.to_string(),
            "start PostgreSQL or correct storage.sharedUrl and PGPASSWORD; the bot's processes \
             refuse boundary changes and forget-me until they reach it",
        ),
    })
}
