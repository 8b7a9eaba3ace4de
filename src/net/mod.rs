//! Outbound fetching of things people and feeds point at.
//!
//! - `fetch`: the guarded HTTP client (no private addresses, bounded size,
//!   time and redirects, conditional GET)
//! - `html`: readable text out of an HTML page

pub mod fetch;
pub mod html;

pub use fetch::{FetchError, Fetched, Fetcher};
