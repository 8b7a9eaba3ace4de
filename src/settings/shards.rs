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
//! the processes through `storage.sharedDir` (one host) or `storage.sharedUrl`
//! (PostgreSQL, any hosts), one of which a partial range needs.

use crate::vocab::shards::{ShardRange, Shards};

/// The most shards a bot may name. Discord's largest bots run a few
/// thousand; anything past this is a typo, and a bound keeps plans small.
pub(crate) const MAX_TOTAL_SHARDS: u32 = 16_384;

impl super::DiscordSettings {
    /// The shards named by `discord.shards` and `discord.totalShards`, or None
    /// when neither is set: the process runs all Discord recommends (and so
    /// owns every guild). Call only on validated settings.
    pub(crate) fn shard_plan(&self) -> Option<Shards> {
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
pub(crate) const KEYS: [&str; 5] = [
    "discord.shards",
    "discord.totalShards",
    "storage.sharedDir",
    "storage.sharedUrl",
    "storage.sharedCaFile",
];

/// The problems with `discord.shards`, `discord.totalShards`,
/// `storage.sharedDir` and `storage.sharedUrl` together, each named by the
/// key a person would fix.
pub(crate) fn problems(s: &super::Settings) -> Vec<super::Problem> {
    use super::Problem;
    let d = &s.discord;
    let mut out = Vec::new();
    let url = s.storage.shared_url.trim();
    if !url.is_empty() {
        if !s.storage.shared_dir.trim().is_empty() {
            out.push(Problem::new(
                "storage.sharedUrl",
                "set storage.sharedDir or storage.sharedUrl, not both: the bot's processes share \
                 one people ledger, in a directory on one host or in PostgreSQL",
            ));
        }
        if let Err(why) = shared_url_problem(url) {
            out.push(Problem::new("storage.sharedUrl", why));
        }
    }
    if let Some(why) = ca_file_problem(url, s.storage.shared_ca_file.trim()) {
        out.push(Problem::new("storage.sharedCaFile", why));
    }
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
    let named = format!("discord.totalShards {}", d.total_shards);
    if let Some(why) = range.past(d.total_shards, &named) {
        out.push(Problem::new("discord.shards", why));
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
    if !plan.is_whole() && s.storage.shared_dir.trim().is_empty() && url.is_empty() {
        out.push(Problem::new(
            "storage.sharedDir",
            format!(
                "this process runs {plan}, so other processes run the rest: set storage.sharedDir \
                 to a directory every process shares, or storage.sharedUrl to a PostgreSQL \
                 database they all reach (a person's boundaries and forget-me reach all of them \
                 through it)"
            ),
        ));
    }
    out
}

/// Why `storage.sharedCaFile` would not be used: it is read only to verify
/// the server's certificate, which `sslmode=verify-ca` or `verify-full` asks.
fn ca_file_problem(url: &str, ca_file: &str) -> Option<String> {
    if ca_file.is_empty() {
        return None;
    }
    if url.is_empty() {
        return Some("is the CA of storage.sharedUrl's TLS, which is not set".into());
    }
    let verifies = url::Url::parse(url).is_ok_and(|u| {
        u.query_pairs()
            .filter(|(k, _)| k == "sslmode")
            .last()
            .is_some_and(|(_, mode)| mode == "verify-ca" || mode == "verify-full")
    });
    (!verifies).then(|| {
        "is read only to verify the server's certificate: add sslmode=verify-full (or \
         verify-ca) to storage.sharedUrl, or empty this key"
            .into()
    })
}

/// What is wrong with a `storage.sharedUrl`, said as what would be valid.
/// The password must come from `PGPASSWORD` (a settings file is not a
/// secret), and `sslmode` must be one libpq knows.
fn shared_url_problem(raw: &str) -> Result<(), String> {
    let url = url::Url::parse(raw).map_err(|e| {
        format!("{e}: expected a URL such as postgres://ambient@db.example:5432/ambient")
    })?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        return Err(format!(
            "must start with postgres://, got {}://",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("names no host: postgres://USER@HOST:PORT/DATABASE".into());
    }
    if url.password().is_some() {
        return Err(
            "holds a password: remove it from the URL and set the PGPASSWORD \
                    environment variable instead (the settings file is not a secret)"
                .into(),
        );
    }
    for (key, value) in url.query_pairs() {
        match (key.as_ref(), value.as_ref()) {
            (
                "sslmode",
                "disable" | "allow" | "prefer" | "require" | "verify-ca" | "verify-full",
            ) => {}
            ("sslmode", mode) => {
                return Err(format!(
                    "sslmode={mode} is not a mode: use disable, prefer, require, verify-ca or \
                     verify-full (verify-full checks the server is the host named)"
                ));
            }
            ("password", _) => {
                return Err(
                    "holds a password: set the PGPASSWORD environment variable instead \
                            (the settings file is not a secret)"
                        .into(),
                );
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_shared_url_stands_for_a_shared_dir_and_keeps_its_password_out() {
        let said = |dir: &str, url: &str| {
            let mut s = crate::settings::Settings::default();
            s.discord.shards = "0-1".into();
            s.discord.total_shards = 4;
            s.storage.shared_dir = dir.into();
            s.storage.shared_url = url.into();
            problems(&s)
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        };
        assert!(said("", "postgres://ambient@db:5432/ambient").is_empty());
        assert!(said("", "postgresql://ambient@db/ambient?sslmode=disable").is_empty());
        assert!(said("/srv/shared", "postgres://a@db/x")[0].starts_with(
            "storage.sharedUrl: set storage.sharedDir or storage.sharedUrl, not both"
        ));
        assert!(said("", "postgres://a:hunter2@db/x")[0].contains("set the PGPASSWORD"));
        assert!(said("", "postgres://a@db/x?password=hunter2")[0].contains("PGPASSWORD"));
        assert!(said("", "postgres://a@db/x?sslmode=require").is_empty());
        assert!(said("", "postgres://a@db/x?sslmode=verify-full").is_empty());
        assert!(said("", "postgres://a@db/x?sslmode=on")[0].contains("sslmode=on is not a mode"));
        assert!(said("", "mysql://a@db/x")[0].contains("must start with postgres://"));
        assert!(said("", "not a url")[0].starts_with("storage.sharedUrl: "));
    }

    #[test]
    fn a_ca_file_goes_with_a_verifying_sslmode() {
        let said = |url: &str| {
            let mut s = crate::settings::Settings::default();
            s.storage.shared_url = url.into();
            s.storage.shared_ca_file = "/etc/ambient/pg-ca.pem".into();
            problems(&s)
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        };
        assert!(said("postgres://a@db/x?sslmode=verify-full").is_empty());
        assert!(said("postgres://a@db/x?sslmode=verify-ca").is_empty());
        let unused = said("postgres://a@db/x?sslmode=require");
        assert!(
            unused[0].starts_with("storage.sharedCaFile: is read only to verify"),
            "{unused:?}"
        );
        assert!(said("")[0].contains("storage.sharedUrl's TLS, which is not set"));
    }
}
