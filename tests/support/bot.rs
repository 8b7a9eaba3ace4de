//! The real `ambient run` binary against a fake Discord and a scripted model.

use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::fake_discord::FakeDiscord;
use super::home::{Home, merge};
use super::model_server::ModelServer;

pub struct Bot {
    pub discord: FakeDiscord,
    pub model: ModelServer,
    pub home: Home,
    child: Option<Child>,
}

impl Bot {
    /// Starts the bot and waits until it has identified and registered its commands.
    pub fn start(extra: Value) -> Self {
        Self::start_with(extra, &[])
    }

    /// Like [`Bot::start`], with more arguments for `ambient run`.
    pub fn start_with(extra: Value, run_args: &[&str]) -> Self {
        Self::start_on(
            FakeDiscord::start(),
            extra,
            run_args,
            "ambient=debug,serenity=warn,poise=warn",
        )
    }

    /// Starts the bot against `discord` with `run_args`, logging at `rust_log`,
    /// and waits until it is in the test guild.
    pub fn start_on(discord: FakeDiscord, extra: Value, run_args: &[&str], rust_log: &str) -> Self {
        let bot = Self::spawn(discord, extra, run_args, rust_log);
        bot.wait_registered();
        bot.wait_guild(super::fake_discord::GUILD);
        bot
    }

    /// Starts `ambient run` against `discord` with its own model server and
    /// home, and returns at once (see [`Bot::wait_registered`], [`Bot::wait_guild`]).
    pub fn spawn(discord: FakeDiscord, extra: Value, run_args: &[&str], rust_log: &str) -> Self {
        Self::spawn_with(discord, extra, run_args, rust_log, Home::new)
    }

    /// [`Bot::spawn`] in the home `make` makes from the settings.
    pub fn spawn_with(
        discord: FakeDiscord,
        extra: Value,
        run_args: &[&str],
        rust_log: &str,
        make: impl FnOnce(Value) -> Home,
    ) -> Self {
        let model = ModelServer::start();
        let mut settings = json!({
            "discord": {"apiBaseUrl": discord.url, "devGuildId": super::fake_discord::GUILD.to_string()},
            "executive": {"ollamaBaseUrl": "http://127.0.0.1:9", "maxRetries": 0},
        });
        merge(&mut settings, extra);
        let home = make(settings);
        let child = launch(&home, &model, run_args, rust_log);
        Self {
            discord,
            model,
            home,
            child: Some(child),
        }
    }

    /// Waits until some bot has registered its slash commands (on READY).
    pub fn wait_registered(&self) {
        let registered = self
            .discord
            .wait_until(20, |w| !w.find("PUT", "/commands").is_empty());
        assert!(
            registered,
            "the bot did not connect and register its commands:\n{}",
            self.log()
        );
    }

    /// Waits until `guild`'s channels are in this bot's store: they arrive
    /// with GUILD_CREATE, after READY, and a test naming a channel must not race them.
    pub fn wait_guild(&self, guild: u64) {
        self.wait_guild_for(guild, Duration::from_secs(20));
    }

    /// [`Bot::wait_guild`] with its own deadline.
    pub fn wait_guild_for(&self, guild: u64, patience: Duration) {
        let store = self.store();
        let guild = ambient::ids::GuildId(guild);
        let deadline = Instant::now() + patience;
        while store
            .messages()
            .guild_channels(guild)
            .map_or(true, |c| c.is_empty())
        {
            assert!(
                Instant::now() < deadline,
                "guild {guild}'s channels were never stored:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the bot with SIGKILL (a crash: nothing is flushed) and starts
    /// it again on the same data; waits until it has identified anew.
    pub fn crash_and_restart(&mut self) {
        let mut child = self.child.take().expect("the bot runs");
        child.kill().unwrap();
        child.wait().unwrap();
        let before = self.discord.with(|w| w.identifies);
        self.child = Some(launch(
            &self.home,
            &self.model,
            &[],
            "ambient=debug,serenity=warn,poise=warn",
        ));
        assert!(
            self.discord.wait_until(20, |w| w.identifies > before),
            "the bot did not come back:\n{}",
            self.log()
        );
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.home.path().join("bot.log")).unwrap_or_default()
    }

    /// The bot's process id (to read its CPU time and memory from /proc).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Sends a signal (`HUP`, `TERM`…) to the running bot.
    pub fn signal(&self, name: &str) {
        let child = self.child.as_ref().expect("the bot runs");
        let sent = std::process::Command::new("kill")
            .args([&format!("-{name}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{name}");
    }

    /// Waits up to `patience` for the bot to exit by itself; None if it still runs.
    pub fn wait_exit(&mut self, patience: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut().expect("the bot runs");
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub fn stop(mut self) -> ExitStatus {
        self.halt()
    }

    /// [`Bot::stop`], keeping its home (and data) for [`Bot::relaunch`] or the CLI.
    pub fn halt(&mut self) -> ExitStatus {
        let pid = self.child.as_ref().expect("the bot runs").id();
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        self.wait_exit(Duration::from_secs(20))
            .unwrap_or_else(|| panic!("the bot did not stop on SIGTERM:\n{}", self.log()))
    }

    /// The bot's store, opened alongside the running process (WAL allows it).
    pub fn store(&self) -> ambient::store::Store {
        ambient::store::Store::open(&self.home.data_dir()).unwrap()
    }

    /// Waits until a message with this id is in the store.
    pub fn wait_stored(&self, id: u64) -> bool {
        let store = self.store();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if store
                .messages()
                .message(ambient::ids::MessageId(id))
                .unwrap()
                .is_some()
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Polls the bot's journal for up to `within` until an entry of `kind`
    /// satisfies `found`.
    pub fn find_entry(
        &self,
        kind: ambient::vocab::journal::Kind,
        within: Duration,
        found: impl Fn(&ambient::vocab::journal::Entry) -> bool,
    ) -> Option<ambient::vocab::journal::Entry> {
        let store = self.store();
        let filter = ambient::vocab::journal::Filter {
            kinds: vec![kind],
            ..Default::default()
        };
        let deadline = Instant::now() + within;
        loop {
            let entries = store.journal().journal_query(&filter).unwrap();
            if let Some(e) = entries.into_iter().find(|e| found(e)) {
                return Some(e);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// [`Bot::find_entry`] within a generous 30 s, failing the test with
    /// the bot's log when no such entry comes.
    pub fn wait_entry(
        &self,
        kind: ambient::vocab::journal::Kind,
        found: impl Fn(&ambient::vocab::journal::Entry) -> bool,
    ) -> ambient::vocab::journal::Entry {
        self.find_entry(kind, Duration::from_secs(30), found)
            .unwrap_or_else(|| panic!("no such {kind:?} entry; the log:\n{}", self.log()))
    }
}

impl Bot {
    /// Starts `ambient run RUN_ARGS` again in the same home, with the same model server.
    pub fn relaunch(&mut self, run_args: &[&str], rust_log: &str) {
        assert!(self.child.is_none(), "the bot still runs");
        self.child = Some(launch(&self.home, &self.model, run_args, rust_log));
    }
}

/// `ambient run` in `home`, its stderr appended to `bot.log` (across restarts).
fn launch(home: &Home, model: &ModelServer, run_args: &[&str], rust_log: &str) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.path().join("bot.log"))
        .unwrap();
    home.command(&[&["run"], run_args].concat())
        .env("DISCORD_TOKEN", "test-token-abc")
        .env("OPENAI_BASE_URL", model.openai_base())
        .env("OPENAI_API_KEY", "sk-test-bot")
        .env("RUST_LOG", rust_log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn ambient run")
}

impl Drop for Bot {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
