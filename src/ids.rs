//! Identifiers shared by every module.
//!
//! The core speaks in Discord's snowflake ids (u64) but through its own
//! newtypes, so it never depends on serenity: the Discord layer converts at
//! its boundary, and the console invents ids of the same shape. In SQLite
//! they are stored as INTEGER (i64); snowflakes stay below 2^63 for
//! centuries, so the cast is lossless.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! snowflake {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u64);

        impl $name {
            pub fn get(self) -> u64 {
                self.0
            }
            pub fn to_sql(self) -> i64 {
                self.0 as i64
            }
            pub fn from_sql(v: i64) -> Self {
                Self(v as u64)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl Serialize for $name {
            // As a string: JSON readers in other languages lose precision on u64.
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0.to_string())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                deserialize_snowflake(d).map(Self)
            }
        }
    };
}

snowflake!(
    /// A Discord guild (server). The seeds' "project".
    GuildId
);
snowflake!(
    /// A text channel, thread or DM channel. The seeds' "task/branch".
    ChannelId
);
snowflake!(
    /// A Discord user, the bot included.
    UserId
);
snowflake!(
    /// A Discord message.
    MessageId
);
snowflake!(
    /// A Discord role (a feed's template may ping the ones the operator lists).
    RoleId
);

/// Accepts a snowflake as a JSON string of digits or as a non-negative integer.
fn deserialize_snowflake<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Num(u64),
        Str(String),
    }
    match Raw::deserialize(d) {
        Ok(Raw::Num(n)) => Ok(n),
        Ok(Raw::Str(s)) => s.trim().parse::<u64>().map_err(|_| {
            serde::de::Error::custom(format!("expected a Discord id (digits), got {s:?}"))
        }),
        Err(_) => Err(serde::de::Error::custom(
            "expected a Discord id (a string of digits or a number)",
        )),
    }
}

/// Discord's epoch (2015-01-01) in milliseconds since the Unix epoch.
pub(crate) const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;

/// Makes snowflake-shaped ids for things that did not come from Discord
/// (console messages, the bot's own console posts). Time-ordered like
/// Discord's, unique within the process thanks to the sequence counter.
pub struct SnowflakeGen {
    seq: AtomicU64,
}

impl SnowflakeGen {
    pub const fn new() -> Self {
        Self {
            seq: AtomicU64::new(0),
        }
    }

    pub fn next(&self, at: DateTime<Utc>) -> u64 {
        let ms = (at.timestamp_millis() - DISCORD_EPOCH_MS).max(0) as u64;
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) & 0x3f_ffff;
        (ms << 22) | seq
    }
}

impl Default for SnowflakeGen {
    fn default() -> Self {
        Self::new()
    }
}

/// The next id from the process-wide generator: every id made in this
/// process is larger than the ones made before it, so history ordered by
/// (time, id) keeps a reply after the message it answers.
pub fn next_snowflake(at: DateTime<Utc>) -> u64 {
    static GENERATOR: SnowflakeGen = SnowflakeGen::new();
    GENERATOR.next(at)
}

/// A stable id derived from a name (FNV-1a), for the console's simulated
/// channels and users, so `#memes` is the same channel in every session.
pub fn stable_id(namespace: &str, name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in namespace.bytes().chain([0u8]).chain(name.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // Keep it positive as an i64 and clear of small reserved values.
    (hash >> 1) | (1 << 40)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snowflakes_parse_from_strings_and_numbers() {
        let a: ChannelId = serde_json::from_str("\"123456789012345678\"").unwrap();
        let b: ChannelId = serde_json::from_str("123456789012345678").unwrap();
        assert_eq!(a, b);
        let err = serde_json::from_str::<ChannelId>("\"general\"").unwrap_err();
        assert!(err.to_string().contains("expected a Discord id"), "{err}");
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"123456789012345678\"");
    }

    #[test]
    fn generated_ids_increase_and_fit_sqlite() {
        let g = SnowflakeGen::new();
        let now = Utc::now();
        let a = g.next(now);
        let b = g.next(now);
        assert!(b > a);
        assert!(i64::try_from(b).is_ok());
        assert_eq!(stable_id("channel", "memes"), stable_id("channel", "memes"));
        assert_ne!(
            stable_id("channel", "memes"),
            stable_id("channel", "general")
        );
    }
}
