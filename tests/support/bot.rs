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

    /// Starts the bot against `discord` with `run_args`, logging at `rust_log`.
    pub fn start_on(discord: FakeDiscord, extra: Value, run_args: &[&str], rust_log: &str) -> Self {
        let model = ModelServer::start();
        let mut settings = json!({
            "discord": {"apiBaseUrl": discord.url, "devGuildId": super::fake_discord::GUILD.to_string()},
            "executive": {"ollamaBaseUrl": "http://127.0.0.1:9", "maxRetries": 0},
        });
        merge(&mut settings, extra);
        let home = Home::new(settings);
        let child = spawn(&home, &model, run_args, rust_log);
        let bot = Self {
            discord,
            model,
            home,
            child: Some(child),
        };
        let registered = bot
            .discord
            .wait_until(20, |w| !w.find("PUT", "/commands").is_empty());
        assert!(
            registered,
            "the bot did not connect and register its commands:\n{}",
            bot.log()
        );
        // Commands register on ready; the guild's channels arrive with GUILD_CREATE,
        // and a test naming a channel must not race them.
        let store = bot.store();
        let guild = ambient::ids::GuildId(super::fake_discord::GUILD);
        let deadline = Instant::now() + Duration::from_secs(20);
        while store.guild_channels(guild).map_or(true, |c| c.is_empty()) {
            assert!(
                Instant::now() < deadline,
                "the guild's channels were never stored:\n{}",
                bot.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        bot
    }

    /// Kills the bot with SIGKILL (a crash: nothing is flushed) and starts
    /// it again on the same data; waits until it has identified anew.
    pub fn crash_and_restart(&mut self) {
        let mut child = self.child.take().expect("the bot runs");
        child.kill().unwrap();
        child.wait().unwrap();
        let before = self.discord.with(|w| w.identifies);
        self.child = Some(spawn(
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

    /// Sends SIGTERM and waits for the process to exit.
    pub fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the bot did not stop on SIGTERM:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
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
}

impl Drop for Bot {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `ambient run` in `home` against its fake Discord and `model`,
/// logging to `bot.log` there (appended to, across restarts).
fn spawn(home: &Home, model: &ModelServer, run_args: &[&str], rust_log: &str) -> Child {
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
