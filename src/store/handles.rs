//! The store by family: one small handle per family of tables, over the one
//! connection and its group of writes.
//!
//! Nothing outside `src/store` holds the whole [`Store`] except the roots
//! that open it (`app` and the commands of `cli`): each layer is given only
//! the handles of the tables it owns or reads, so a module's fields say
//! which tables it may touch, and the e2e test `layers` checks each module
//! names only the handles its row in `src/lib.rs`'s table allows. A handle
//! is a clone of the store (three pointers): cheap to hand out and to keep.
//!
//! | handle | tables | file |
//! |--------|--------|------|
//! | [`MessageStore`] | messages, guilds, channels, reactions read for unprompted posts | `messages`, `channels`, `unanswered` |
//! | [`MemoryStore`] | facts, reinforcements, extraction checkpoints | `memory` |
//! | [`JournalStore`] | the journal, the context stream | `journal`, `stream` |
//! | [`UsageStore`] | model usage (tokens, cost) | `usage` |
//! | [`InitiativeStore`] | pending thoughts, the outbox, when a server was last considered | `initiative` |
//! | [`PeopleStore`] | boundaries, hushes, access notices, pairing, forget-me, the people ledger | `people`, `boundaries`, `hushes`, `access`, `pairing`, `forget` |
//! | [`DiscoveryStore`] | feed sources, items, shares, reactions to shares | `discovery` |
//! | [`FeedStore`] | feed subscriptions and their deliveries | `feeds` |
//! | [`ImpulseStore`] | tasks, ideas, schedules, reflex runs and switches | `impulses` |
//! | [`GardenStore`] | garden cycles, its queue and state, fact links | `garden` |
//! | [`OverrideStore`] | a server's settings overrides | `guild_settings` |
//! | [`GuildStore`] | a server's rows as a whole: export, import, removal, departures, shards | `guild_io`, `departed`, `partition` |
//! | [`VoiceStore`] | utterances, speech seconds spent | `voice` |
//! | [`FileStore`] | the database file: schema version, retention sweeps, space, flushes | `retention`, `mod` |

use super::Store;

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $accessor:ident) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name(pub(super) Store);

        impl Store {
            #[doc = concat!("The [`", stringify!($name), "`] over this store's connection.")]
            pub fn $accessor(&self) -> $name {
                $name(self.clone())
            }
        }

        impl From<&Store> for $name {
            fn from(store: &Store) -> Self {
                store.$accessor()
            }
        }
    };
}

handle!(
    /// Messages seen and said, and the names of the servers and channels they were in.
    MessageStore,
    messages
);
handle!(
    /// Remembered facts.
    MemoryStore,
    memory
);
handle!(
    /// The journal of decisions, and each server's context stream.
    JournalStore,
    journal
);
handle!(
    /// What the model calls cost.
    UsageStore,
    usage
);
handle!(
    /// The initiative's pending thoughts and outbox.
    InitiativeStore,
    initiative
);
handle!(
    /// What people asked of the bot: boundaries, hushes, forget-me, access.
    PeopleStore,
    people
);
handle!(
    /// Feed sources and what was found and shared from them.
    DiscoveryStore,
    discovery
);
handle!(
    /// Feeds a server subscribed to, and their deliveries.
    FeedStore,
    feeds
);
handle!(
    /// Tasks, ideas, schedules and reflex bookkeeping.
    ImpulseStore,
    impulses
);
handle!(
    /// The garden's cycles, queue, state and fact links.
    GardenStore,
    garden
);
handle!(
    /// Settings a server changed for itself.
    OverrideStore,
    overrides
);
handle!(
    /// A server's rows taken as a whole.
    GuildStore,
    guilds
);
handle!(
    /// Voice utterances and spoken seconds.
    VoiceStore,
    voice
);
handle!(
    /// The database file as a whole.
    FileStore,
    file
);

/// `From` impls that cut a module's `Stores` (its handles, one field per
/// family, named as the store's accessors) from the whole store, or from a
/// higher module's `Stores` that holds them all:
/// `cut!(Store => crate::courtesy::Stores { messages, people });` and
/// `cut!(Stores => crate::courtesy::Stores { messages, people });`.
macro_rules! cut {
    (Store => $to:path { $($family:ident),+ $(,)? }) => {
        impl From<&$crate::store::Store> for $to {
            fn from(store: &$crate::store::Store) -> Self {
                Self { $($family: store.$family()),+ }
            }
        }
    };
    ($from:ty => $to:path { $($family:ident),+ $(,)? }) => {
        impl From<&$from> for $to {
            fn from(stores: &$from) -> Self {
                Self { $($family: stores.$family.clone()),+ }
            }
        }
    };
}
pub(crate) use cut;
