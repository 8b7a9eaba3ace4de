//! Each module's handles, cut from the one store: the composition root is
//! the one place (with the commands of `cli`) that holds the whole [`Store`],
//! and it gives each module the families of tables its `Stores` names.
//! `(&store).into()` builds them, here and in tests.

use crate::courtesy::people::writer;
use crate::settings::{Secrets, Settings};
use crate::store::cut;
use crate::store::shared::SharedDb;
use crate::store::{Store, StoreError};

/// `store` passing boundaries and forget-me on to the people ledger in
/// `storage.sharedDir` or `storage.sharedUrl` (its password from
/// `PGPASSWORD` in the environment), or `store` as it is when neither is set.
pub fn attach(store: Store, settings: &Settings) -> Result<Store, StoreError> {
    let shared =
        crate::courtesy::people::shared_db_if_set(&settings.storage, &Secrets::from_env())?;
    attach_with(store, settings, shared)
}

/// [`attach`], with the database of `storage.sharedUrl` already opened
/// ([`shared_db_if_set`](crate::courtesy::people::shared_db_if_set)), so a process that also leases its budgets from
/// it keeps one set of connections.
pub fn attach_with(
    store: Store,
    settings: &Settings,
    shared: Option<SharedDb>,
) -> Result<Store, StoreError> {
    if let Some(db) = shared {
        let ledger = crate::store::shared::people::PgLedger::open(db, &writer(settings))
            .map_err(|e| StoreError::SharedLedger(e.to_string()))?;
        return Ok(store.with_ledger(ledger));
    }
    let shared = settings.storage.shared_dir.trim();
    if shared.is_empty() {
        return Ok(store);
    }
    let ledger =
        crate::store::people::Ledger::open(std::path::Path::new(shared), &writer(settings))?;
    Ok(store.with_ledger(ledger))
}

cut!(Store => crate::courtesy::Stores { messages, people });

cut!(Store => crate::discovery::Stores { messages, discovery, feeds });

cut!(Store => crate::executive::Stores { messages, usage });

cut!(Store => crate::feeds::Stores { messages, discovery, feeds });

cut!(Store => crate::garden::Stores { messages, memory, journal, usage, initiative, impulses, garden });

cut!(Store => crate::impulses::Stores { messages, initiative, people, impulses });

cut!(Store => crate::initiative::Stores { messages, journal, usage, initiative, people });

cut!(Store => crate::memory::Stores { messages, memory, people });

cut!(Store => crate::reflexes::Stores { messages, journal, people, impulses });

cut!(Store => crate::reply::Stores { messages, journal, usage, initiative, people });

cut!(Store => crate::senses::Stores { messages, people, discovery });

cut!(Store => crate::speech::Stores { messages, people });

cut!(Store => crate::upkeep::Stores { journal, overrides, file });

cut!(Store => crate::voice::Stores { messages, usage, people, voice });
