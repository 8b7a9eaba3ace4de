//! Outbound fetching of things people and feeds point at.
//!
//! - `fetch`: the guarded HTTP client (no private addresses, bounded size,
//!   time and redirects, conditional GET)
//! - `html`: readable text out of an HTML page

pub mod fetch;
pub mod html;

pub use fetch::{FetchError, Fetched, Fetcher};

/// An error and its causes on one line: "connection refused" usually hides in a cause.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
