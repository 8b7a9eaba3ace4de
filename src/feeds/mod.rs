//! Feeds people subscribe to: every new item of a feed delivered to a
//! channel, a thread per item, or a forum post — beside the initiative's
//! own judgement, on discovery's fetchers.
//!
//! - `template`: what a delivered item says (`{title}`, `{link}` …), checked
//!   when saved and rendered within Discord's limits;
//! - `filter`: which items a subscription delivers (include/exclude rules);
//! - `intake`: what one fetch means for a subscription (new, filtered, queued);
//! - `subscription`: one guild's subscription, as saved and shown.

pub mod filter;
pub mod intake;
pub mod subscription;
pub mod template;
