//! An impulse's priority: how hard it competes for attention.
//!
//! Impulses carry it, the garden's ideas and schedules store it, and
//! reflexes name it in YAML — so it lives below all of them.

use serde::{Deserialize, Serialize};

#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
}
