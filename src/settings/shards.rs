//! Which gateway shards this process runs, and so which guilds it owns.
//!
//! Discord puts guild `g` on shard `(g >> 22) % total` (the guild id's
//! timestamp bits, modulo the shard count), and sends a guild's events only
//! on its shard. A bot too big for one process runs a *range* of shards per
//! process (`discord.shards` / `--shards`, e.g. `"0-3"`, out of
//! `discord.totalShards` / `--total-shards`): that process handles, stores
//! and spends for only the guilds of its range. Without either key the
//! process runs every shard Discord recommends, as one process always did.
//!
//! What spans guilds — a person's boundaries and forget-me — passes between
//! the processes through `storage.sharedDir`, which a partial range needs.

use std::fmt;
use std::str::FromStr;

use crate::ids::GuildId;

/// The most shards a bot may name. Discord's largest bots run a few
/// thousand; anything past this is a typo, and a bound keeps plans small.
pub const MAX_TOTAL_SHARDS: u32 = 16_384;

/// The shard a guild's events arrive on, out of `total` (at least 1).
pub fn shard_of(guild: GuildId, total: u32) -> u32 {
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
    pub fn count(&self) -> u32 {
        self.last - self.first + 1
    }

    pub fn contains(&self, shard: u32) -> bool {
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
    pub fn owns(&self, guild: GuildId) -> bool {
        self.range.contains(shard_of(guild, self.total))
    }

    /// Whether this one process runs every shard (no other process shares the bot).
    pub fn is_whole(&self) -> bool {
        self.range.first == 0 && self.range.last + 1 == self.total
    }

    /// This process's part of the bot: its shards over all shards.
    pub fn share(&self) -> f64 {
        f64::from(self.range.count()) / f64::from(self.total.max(1))
    }
}

impl super::DiscordSettings {
    /// The shards named by `discord.shards` and `discord.totalShards`, or None
    /// when neither is set: the process runs all Discord recommends (and so
    /// owns every guild). Call only on validated settings.
    pub fn shard_plan(&self) -> Option<Shards> {
        let range = self.shards.trim();
        match (range.is_empty(), self.total_shards) {
            (true, 0) => None,
            (true, total) => Some(Shards {
                range: ShardRange {
                    first: 0,
                    last: total - 1,
                },
                total,
            }),
            (false, total) => range.parse().ok().map(|range| Shards { range, total }),
        }
    }
}

/// The keys [`problems`] checks together; a command line's `--shards` and
/// `--total-shards` change what they say of the file's values.
pub const KEYS: [&str; 3] = ["discord.shards", "discord.totalShards", "storage.sharedDir"];

/// The problems with `discord.shards`, `discord.totalShards` and
/// `storage.sharedDir` together, each named by the key a person would fix.
pub(crate) fn problems(s: &super::Settings) -> Vec<super::Problem> {
    use super::Problem;
    let d = &s.discord;
    let mut out = Vec::new();
    if d.total_shards > MAX_TOTAL_SHARDS {
        out.push(Problem::new(
            "discord.totalShards",
            format!(
                "must be between 0 (Discord's recommendation) and {MAX_TOTAL_SHARDS}, got {}",
                d.total_shards
            ),
        ));
        return out;
    }
    if d.shards.trim().is_empty() {
        return out;
    }
    let range = match d.shards.parse::<ShardRange>() {
        Ok(r) => r,
        Err(e) => {
            out.push(Problem::new("discord.shards", e.to_string()));
            return out;
        }
    };
    if d.total_shards == 0 {
        out.push(Problem::new(
            "discord.totalShards",
            format!(
                "discord.shards is {range:?}, so say how many shards the whole bot runs \
                 (every process the same number)",
                range = d.shards
            ),
        ));
        return out;
    }
    if range.last >= d.total_shards {
        out.push(Problem::new(
            "discord.shards",
            format!(
                "shard {} does not exist: with discord.totalShards {} the shards are 0-{}",
                range.last,
                d.total_shards,
                d.total_shards - 1
            ),
        ));
        return out;
    }
    if !s.storage.shared_dir.trim().is_empty()
        && std::path::Path::new(s.storage.shared_dir.trim())
            == std::path::Path::new(s.storage.data_dir.trim())
    {
        out.push(Problem::new(
            "storage.sharedDir",
            "must not be storage.dataDir: each process keeps its own data directory, and all of \
             them share this one",
        ));
    }
    let plan = Shards {
        range,
        total: d.total_shards,
    };
    if !plan.is_whole() && s.storage.shared_dir.trim().is_empty() {
        out.push(Problem::new(
            "storage.sharedDir",
            format!(
                "this process runs {plan}, so other processes run the rest: set storage.sharedDir \
                 to a directory every process shares (a person's boundaries and forget-me reach \
                 all of them through it)"
            ),
        ));
    }
    out
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
        assert_eq!(plan.share(), 0.5);
        assert!(!plan.is_whole());
    }

    #[test]
    fn the_shard_keys_are_checked_together_and_name_what_to_fix() {
        let said = |shards: &str, total: u32, shared: &str| {
            let mut s = crate::settings::Settings::default();
            s.discord.shards = shards.into();
            s.discord.total_shards = total;
            s.storage.shared_dir = shared.into();
            problems(&s)
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        };
        assert!(said("", 0, "").is_empty());
        assert!(
            said("0-3", 4, "").is_empty(),
            "one process with every shard"
        );
        assert!(said("0-1", 4, "/srv/shared").is_empty());
        assert!(
            said("0-1", 0, "")[0].starts_with("discord.totalShards: discord.shards is \"0-1\"")
        );
        assert!(said("2-4", 4, "/s")[0].contains("shard 4 does not exist"));
        assert!(
            said("0-1", 4, "")[0]
                .starts_with("storage.sharedDir: this process runs shards 0-1 of 4")
        );
        assert!(said("x", 4, "")[0].starts_with("discord.shards: expected a shard"));
        assert!(said("", 20_000, "")[0].starts_with("discord.totalShards: must be between"));
        assert!(said("0", 2, "./data")[0].contains("must not be storage.dataDir"));
    }
}
