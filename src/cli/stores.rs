//! The handles of the front ends above the composition root (`commands`,
//! the console, the dashboard, Discord, health, the replay), cut from the
//! one store. Here because `cli` is the one module above them all; the
//! services below are cut in `app`'s own `stores`. A front end asks for
//! its handles with `App::stores`.

use crate::store::Store;

impl From<&Store> for crate::commands::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            memory: s.memory(),
            journal: s.journal(),
            usage: s.usage(),
            initiative: s.initiative(),
            people: s.people(),
            impulses: s.impulses(),
            garden: s.garden(),
            guilds: s.guilds(),
        }
    }
}

impl From<&Store> for crate::replay::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            usage: s.usage(),
            initiative: s.initiative(),
            impulses: s.impulses(),
        }
    }
}

impl From<&Store> for crate::health::Stores {
    fn from(s: &Store) -> Self {
        Self {
            usage: s.usage(),
            file: s.file(),
        }
    }
}

impl From<&Store> for crate::dashboard::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            memory: s.memory(),
            journal: s.journal(),
            usage: s.usage(),
            initiative: s.initiative(),
            people: s.people(),
            discovery: s.discovery(),
            feeds: s.feeds(),
            impulses: s.impulses(),
            garden: s.garden(),
            overrides: s.overrides(),
            guilds: s.guilds(),
        }
    }
}

impl From<&Store> for crate::discord::Stores {
    fn from(s: &Store) -> Self {
        Self {
            messages: s.messages(),
            guilds: s.guilds(),
            file: s.file(),
        }
    }
}
