//! The shared vocabulary: the nouns several layers speak and the store keeps.
//!
//! An impulse's priority, a remembered fact, the held pending thought, a
//! journal entry, a shard plan. They
//! are plain data with their parsing and naming, and nothing that needs a
//! service, so they sit just above the ids: the store persists them without
//! importing the layers that decide about them (memory, initiative,
//! attention), and every layer names them here: no layer re-exports them
//! under a second path.

pub mod fact;
pub mod journal;
pub mod pending;
pub mod priority;
pub mod shards;

pub use priority::Priority;
