//! Each module's handles, cut from the one store: the composition root is
//! the one place (with the commands of `cli`) that holds the whole [`Store`],
//! and it gives each module the families of tables its `Stores` names.
//! `(&store).into()` builds them, here and in tests.

use crate::courtesy::people::writer;
use crate::settings::{Secrets, Settings};
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

impl From<&Store> for crate::courtesy::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            people: s.people(),
        }
    }
}

impl From<&Store> for crate::discovery::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            discovery: s.discovery(),
            feeds: s.feeds(),
        }
    }
}

impl From<&Store> for crate::executive::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            usage: s.usage(),
        }
    }
}

impl From<&Store> for crate::feeds::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            discovery: s.discovery(),
            feeds: s.feeds(),
        }
    }
}

impl From<&Store> for crate::garden::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            memory: s.memory(),
            journal: s.journal(),
            usage: s.usage(),
            initiative: s.initiative(),
            impulses: s.impulses(),
            garden: s.garden(),
        }
    }
}

impl From<&Store> for crate::impulses::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            initiative: s.initiative(),
            people: s.people(),
            impulses: s.impulses(),
        }
    }
}

impl From<&Store> for crate::initiative::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            journal: s.journal(),
            usage: s.usage(),
            initiative: s.initiative(),
            people: s.people(),
        }
    }
}

impl From<&Store> for crate::memory::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            memory: s.memory(),
            people: s.people(),
        }
    }
}

impl From<&Store> for crate::reflexes::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            journal: s.journal(),
            people: s.people(),
            impulses: s.impulses(),
        }
    }
}

impl From<&Store> for crate::reply::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            journal: s.journal(),
            usage: s.usage(),
            initiative: s.initiative(),
            people: s.people(),
        }
    }
}

impl From<&Store> for crate::senses::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            people: s.people(),
            discovery: s.discovery(),
        }
    }
}

impl From<&Store> for crate::speech::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            people: s.people(),
        }
    }
}

impl From<&Store> for crate::upkeep::Stores {
    fn from(s: &Store) -> Self {
        Self {
            journal: s.journal(),
            overrides: s.overrides(),
            file: s.file(),
        }
    }
}

impl From<&Store> for crate::voice::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            usage: s.usage(),
            people: s.people(),
            voice: s.voice(),
        }
    }
}
