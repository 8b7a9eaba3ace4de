//! Why a dashboard page cannot be shown: a field of the request the page
//! cannot use, or a record it cannot read. Every page answers these the same
//! way (`Dash::bad_input`), so one type serves them all; its text names the
//! field and what would be valid, as the operator sees it.

use crate::store::StoreError;

use super::params::ParamError;

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The `guild` filter takes a server id or `dm`.
    #[error("{0}, or dm for direct messages")]
    NotAPlace(ParamError),
    #[error("scope: expected guild, channel or user, got {0:?}")]
    Scope(String),
    #[error("kind: {0}")]
    FactKind(String),
    #[error("importance: {0}")]
    Importance(String),
    #[error("kind: {0}, or all")]
    JournalKind(String),
    #[error("since: at most {max_days} days back, got {spec:?}")]
    WindowTooLong { max_days: i64, spec: String },
    #[error("since: {0}")]
    Since(String),
    #[error("q: a search of direct messages needs a user (user=ID): each person's are apart")]
    DmSearchNeedsUser,
    #[error("the memory cannot be read: {0}")]
    Memory(#[source] StoreError),
    #[error("the journal cannot be read: {0}")]
    Journal(#[source] StoreError),
    #[error("the usage records cannot be read: {0}")]
    Usage(#[source] StoreError),
    /// The servers a page lists or offers could not be read: shown, so
    /// that no server looks absent.
    #[error("store read failed: the servers: {0}")]
    Servers(#[source] StoreError),
    /// A store read whose failure the page has no words for beyond the store's own.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The first day of the spend chart, as a date (it is made here, so this
    /// is a bug, shown rather than hidden).
    #[error("{0}")]
    Day(#[from] chrono::ParseError),
}
