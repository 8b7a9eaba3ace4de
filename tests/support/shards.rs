//! Two `ambient run` processes sharing one bot: shard 0 and shard 1 of 2,
//! against one fake Discord serving four servers, two on each shard. Each
//! process has its own home (so its own `storage.dataDir`) and model server;
//! the homes sit side by side in one directory with the `shared/` directory
//! both use as `storage.sharedDir` (the README's layout). Started together,
//! as an operator's supervisor would start them.

use std::time::Duration;

use serde_json::{Value, json};

use super::bot::Bot;
use super::fake_discord::{FakeDiscord, extra_channel, extra_guild};
use super::home::{Home, merge};

/// How many shards the bot runs, and so how many processes.
pub const TOTAL: u32 = 2;

/// The four servers: extra servers 0 and 2 are on shard 0, 1 and 3 on
/// shard 1 (`(id >> 22) % 2`, their ids being `(1000 + i) << 22`).
pub const SERVERS: u32 = 4;

pub struct Pair {
    pub discord: FakeDiscord,
    /// `bots[s]` runs shard `s` (declared before `root`: stopped before it is removed).
    pub bots: Vec<Bot>,
    /// Holds both homes and `shared/`, their `storage.sharedDir`.
    pub root: tempfile::TempDir,
}

/// Server `i`'s guild id and its one text channel.
pub fn server(i: u32) -> (u64, u64) {
    (extra_guild(i), extra_channel(i, 0))
}

/// The servers on shard `s` of [`TOTAL`].
pub fn servers_of(shard: u32) -> Vec<u32> {
    (0..SERVERS).filter(|i| i % TOTAL == shard).collect()
}

impl Pair {
    /// Starts the fake (recommending [`TOTAL`] shards) and both processes with
    /// `extra` settings each, and waits until each holds its servers.
    pub fn start(extra: Value) -> Self {
        let commands: Vec<String> = (0..TOTAL)
            .map(|s| format!("ambient run --shards {s} --total-shards {TOTAL}"))
            .collect();
        let settings = json!({"storage": {"dataDir": "./data", "sharedDir": "../shared"}});
        Self::start_with(settings, extra, &commands)
    }

    /// Like [`Pair::start`]: each process gets `settings` (with `extra` over
    /// them) and is started with `commands[shard]`, an `ambient run …` line
    /// without shell syntax, run as written.
    pub fn start_with(settings: Value, extra: Value, commands: &[String]) -> Self {
        assert_eq!(commands.len(), TOTAL as usize);
        let discord = FakeDiscord::start_sharded(TOTAL, SERVERS);
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(root.path().join("shared")).unwrap();
        let bots: Vec<Bot> = commands
            .iter()
            .map(|line| {
                let mut settings = settings.clone();
                merge(&mut settings, extra.clone());
                let args: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(args[..2], ["ambient", "run"], "{line}");
                Bot::spawn_with(
                    discord.clone(),
                    settings,
                    &args[2..],
                    "ambient=debug,serenity=warn,poise=warn",
                    |s| Home::new_in(root.path(), s),
                )
            })
            .collect();
        let pair = Self {
            discord,
            bots,
            root,
        };
        for (shard, bot) in pair.bots.iter().enumerate() {
            let shard = shard as u32;
            // The later process waits 5 s per shard before it before identifying.
            let identified = pair
                .discord
                .wait_until(30, |w| w.identified_shards().contains(&[shard, TOTAL]));
            assert!(identified, "shard {shard} never identified:\n{}", bot.log());
            for i in servers_of(shard) {
                bot.wait_guild_for(server(i).0, Duration::from_secs(20));
            }
        }
        pair
    }

    /// The process running the shard that `server` (0..4) is on.
    pub fn owner(&self, server: u32) -> &Bot {
        &self.bots[(server % TOTAL) as usize]
    }
}
