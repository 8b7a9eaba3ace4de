//! Gateway shards as plain data: which shard a guild's events arrive on,
//! a range of shards as written (`"0-3"`), and a process's plan (a range
//! out of a total). Settings name the plan (`settings::shards`), the
//! Discord front end runs it, and the store records it and refuses data
//! of guilds it does not own (`store::partition`).

use std::fmt;
use std::str::FromStr;

use crate::ids::GuildId;

/// The shard a guild's events arrive on, out of `total` (at least 1).
pub(crate) fn shard_of(guild: GuildId, total: u32) -> u32 {
    ((guild.get() >> 22) % u64::from(total.max(1))) as u32
}

/// Shards `first..=last`, as written `"0-3"` or `"5"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardRange {
    pub first: u32,
    pub last: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RangeError {
    #[error("expected a shard or a range of shards like \"0-3\", got {0:?}")]
    Syntax(String),
    #[error("the range {first}-{last} runs backwards; write the lower shard first")]
    Backwards { first: u32, last: u32 },
}

impl FromStr for ShardRange {
    type Err = RangeError;

    fn from_str(text: &str) -> Result<Self, RangeError> {
        let number = |s: &str| {
            let s = s.trim();
            // u32's parser takes a leading '+'; a shard is written in digits.
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u32>().ok())
                .flatten()
                .ok_or_else(|| RangeError::Syntax(text.chars().take(40).collect()))
        };
        let (first, last) = match text.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(text)?;
                (n, n)
            }
        };
        if first > last {
            return Err(RangeError::Backwards { first, last });
        }
        Ok(Self { first, last })
    }
}

impl fmt::Display for ShardRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

impl ShardRange {
    pub(crate) fn count(&self) -> u32 {
        self.last - self.first + 1
    }

    /// Why the range cannot run out of `total` shards, if it cannot;
    /// `named` is how the reader gave the total ("--total 4").
    pub(crate) fn past(&self, total: u32, named: &str) -> Option<String> {
        (self.last >= total).then(|| {
            format!(
                "shard {} does not exist: with {named} the shards are 0-{}",
                self.last,
                total.saturating_sub(1)
            )
        })
    }

    pub(crate) fn contains(&self, shard: u32) -> bool {
        (self.first..=self.last).contains(&shard)
    }
}

/// A resolved plan: this process runs `range` out of `total` shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shards {
    pub range: ShardRange,
    pub total: u32,
}

impl fmt::Display for Shards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shards {} of {}", self.range, self.total)
    }
}

impl Shards {
    /// Whether this process handles `guild`.
    pub(crate) fn owns(&self, guild: GuildId) -> bool {
        self.range.contains(shard_of(guild, self.total))
    }

    /// Whether this one process runs every shard (no other process shares the bot).
    pub(crate) fn is_whole(&self) -> bool {
        self.range.first == 0 && self.range.last + 1 == self.total
    }

    /// This process's part of `whole`: its shards over all shards, rounded
    /// down, in integers (3,000 × 1/3 is 1,000, not a float's 999).
    pub(crate) fn part_of(&self, whole: u64) -> u64 {
        let part =
            u128::from(whole) * u128::from(self.range.count()) / u128::from(self.total.max(1));
        part as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_written_and_refuse_what_is_not_a_range() {
        assert_eq!(
            "0-3".parse::<ShardRange>(),
            Ok(ShardRange { first: 0, last: 3 })
        );
        assert_eq!("5".parse::<ShardRange>().unwrap().to_string(), "5");
        assert_eq!(
            "3-1".parse::<ShardRange>(),
            Err(RangeError::Backwards { first: 3, last: 1 })
        );
        for bad in ["", "a-b", "-3", "1-", "+1", "1-2-3", "99999999999"] {
            assert!(bad.parse::<ShardRange>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_guild_belongs_to_the_shard_its_id_names() {
        // Discord's own example: (guild_id >> 22) % num_shards.
        let g = GuildId(41771983423143937);
        assert_eq!(shard_of(g, 1), 0);
        assert_eq!(shard_of(g, 16), ((41771983423143937u64 >> 22) % 16) as u32);
        let plan = Shards {
            range: ShardRange { first: 0, last: 1 },
            total: 4,
        };
        assert_eq!(plan.owns(g), shard_of(g, 4) <= 1);
        assert_eq!(plan.part_of(1_000), 500);
        let third = Shards {
            range: ShardRange { first: 0, last: 0 },
            total: 3,
        };
        assert_eq!(third.part_of(3_000), 1_000);
        assert!(!plan.is_whole());
    }
}
