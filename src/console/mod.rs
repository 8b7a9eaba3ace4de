//! `ambient console`: the whole bot against a simulated guild in the terminal.
//!
//! What you type is a message from you in `#general` of the guild "console";
//! `/channel memes` moves you, `/as bob` speaks as someone else. A line that
//! mentions the bot (`@ambient …`, or `@` and its configured name) addresses
//! it like a Discord mention. The same spine, store, journal and handlers run
//! as with Discord; only the transport differs. Input may be piped: at end of
//! input the console finishes the work in flight and exits 0.

pub mod transport;

use std::sync::Arc;

use regex::Regex;
use serde_json::json;
use tokio::sync::mpsc;

use crate::app::App;
use crate::attention::{Addressed, Author, MessagePercept, Percept, addressed_by_name};
use crate::commands;
use crate::ids::{ChannelId, GuildId, MessageId, UserId, next_snowflake, stable_id};
use crate::journal::{self, Filter};
use crate::senses::Perceived;
use crate::store::messages::{Source, StoredMessage};
pub use transport::{ConsoleOut, ConsoleTransport};

pub const GUILD_NAME: &str = "console";

pub fn guild_id() -> GuildId {
    GuildId(stable_id("guild", GUILD_NAME))
}

pub fn channel_id(name: &str) -> ChannelId {
    ChannelId(stable_id("channel", name))
}

pub fn user_id(name: &str) -> UserId {
    UserId(stable_id("user", name))
}

/// The console bot's own identity.
pub fn bot_author(name: &str) -> Author {
    Author {
        id: UserId(stable_id("user", "\u{0}ambient-bot")),
        name: name.to_string(),
        is_bot: true,
    }
}

pub struct Options {
    pub user: String,
    pub channel: String,
}

/// Reads lines until end of input (or `/quit`), then lets the bot finish.
pub async fn run(app: Arc<App>, out: Arc<ConsoleOut>, options: Options) -> anyhow::Result<()> {
    let mut session = Session::new(app.clone(), out, options)?;
    session.banner();
    let mut lines = stdin_lines();
    loop {
        tokio::select! {
            line = lines.recv() => match line {
                Some(line) => {
                    if session.line(&line).await? == Flow::Quit {
                        break;
                    }
                }
                None => break,
            },
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    app.spine.drain().await;
    Ok(())
}

/// Stdin on its own thread: a blocking read cannot be cancelled, and a
/// detached thread never holds up shutdown.
fn stdin_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

struct Session {
    app: Arc<App>,
    out: Arc<ConsoleOut>,
    user: Author,
    channel: String,
    mention: Regex,
}

impl Session {
    fn new(app: Arc<App>, out: Arc<ConsoleOut>, options: Options) -> anyhow::Result<Self> {
        let bot_name = app.settings.global().bot.name.clone();
        let mention = Regex::new(&format!(
            r"(?i)(^|[^\w@])@(ambient|{})\b",
            regex::escape(&bot_name)
        ))?;
        let session = Self {
            user: person(&options.user),
            channel: options.channel,
            mention,
            app,
            out,
        };
        session.enter_channel(&session.channel)?;
        session.app.discovery.poke();
        Ok(session)
    }

    fn banner(&self) {
        let bot = &self.app.settings.global().bot.name;
        self.out.emit(
            &format!(
                "ambient console — you are {} in #{} of the simulated guild \"{GUILD_NAME}\".\n\
                 Mention @{bot} to talk to the bot; /help lists commands; Ctrl-D quits.",
                self.user.name, self.channel
            ),
            json!({
                "event": "ready",
                "guild": GUILD_NAME,
                "guild_id": guild_id().to_string(),
                "channel": self.channel,
                "user": self.user.name,
                "bot": bot,
            }),
        );
        for notice in &self.app.notices {
            self.out.notice(notice);
        }
    }

    fn enter_channel(&self, name: &str) -> anyhow::Result<()> {
        let now = self.app.clock.now();
        self.app.store.upsert_guild(guild_id(), GUILD_NAME, now)?;
        self.app
            .store
            .upsert_channel(channel_id(name), Some(guild_id()), name, now)?;
        Ok(())
    }

    async fn line(&mut self, line: &str) -> anyhow::Result<Flow> {
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            return Ok(Flow::Continue);
        }
        if let Some(command) = line.strip_prefix('/') {
            return self.command(command);
        }
        self.say(line)?;
        Ok(Flow::Continue)
    }

    fn say(&self, text: &str) -> anyhow::Result<()> {
        let now = self.app.clock.now();
        let id = MessageId(next_snowflake(now));
        let channel = channel_id(&self.channel);
        let addressed = if self.mention.is_match(text) {
            Addressed::Mention
        } else if addressed_by_name(text, &self.app.settings.global().bot.name) {
            Addressed::ByName
        } else {
            Addressed::No
        };
        let percept = Percept::Message(MessagePercept {
            message: StoredMessage {
                id,
                guild: Some(guild_id()),
                channel,
                author_id: self.user.id,
                author_name: self.user.name.clone(),
                author_is_bot: false,
                is_self: false,
                content: text.to_string(),
                attachments: Vec::new(),
                reply_to: None,
                source: Source::Text,
                created_at: now,
                edited_at: None,
                deleted_at: None,
            },
            addressed,
            guild_name: Some(GUILD_NAME.into()),
            channel_name: Some(self.channel.clone()),
        });
        match self.app.senses.perceive(percept)? {
            Perceived::Invisible(why) => {
                self.out.notice(&format!("the bot cannot see that: {why}"))
            }
            Perceived::Stored { .. } => self.out.emit(
                "",
                json!({"event": "stored", "id": id.to_string(), "channel": self.channel}),
            ),
        }
        Ok(())
    }

    fn command(&mut self, command: &str) -> anyhow::Result<Flow> {
        let (verb, rest) = command.split_once(' ').unwrap_or((command, ""));
        let rest = rest.trim();
        match verb {
            "quit" | "exit" => return Ok(Flow::Quit),
            "help" => self.out.notice(HELP),
            "channel" => {
                let name = rest.trim_start_matches('#');
                if !is_channel_name(name) {
                    self.out
                        .notice("usage: /channel NAME (letters, digits, - and _)");
                } else {
                    self.enter_channel(name)?;
                    self.channel = name.to_string();
                    self.out.notice(&format!("you are now in #{name}"));
                }
            }
            "as" => {
                if rest.is_empty() {
                    self.out.notice("usage: /as NAME");
                } else {
                    self.user = person(rest);
                    self.out.notice(&format!("you are now {rest}"));
                }
            }
            "journal" => self.print_journal(rest),
            "memory" => {
                let who = self.asker();
                let text = commands::memory::run_text(&self.app, &who, rest);
                self.out.notice(&text);
            }
            "discovery" => {
                let text = commands::discovery::run_text(&self.app, guild_id(), self.user.id, rest);
                self.out.notice(&text);
            }
            "task" | "schedule" | "idea" => {
                let who = self.asker();
                let text = commands::impulses::run_text(&self.app, &who, verb, rest);
                self.out.notice(&text);
            }
            "why" => {
                let text = commands::why::why(
                    &self.app,
                    Some(guild_id()),
                    channel_id(&self.channel),
                    Some(rest),
                );
                self.out.notice(&text);
            }
            "garden" => {
                let text = self.app.garden.request(guild_id(), &self.user.name);
                self.out.notice(&text);
            }
            "status" => {
                let s = &self.app.settings.global();
                for line in commands::garden::widget(
                    &self.app.store,
                    Some(guild_id()),
                    s.garden.enabled,
                    self.app.clock.now(),
                ) {
                    self.out.notice(&format!("garden {line}"));
                }
                for line in commands::status::model_lines(&self.app.executive) {
                    self.out.notice(&line);
                }
                self.out.notice(&commands::status::usage_line(
                    &self.app.executive.snapshot(),
                ));
            }
            "settings" => {
                let text = commands::settings::run_text(
                    &self.app,
                    Some(guild_id()),
                    Some(self.user.id),
                    rest,
                    true,
                );
                self.out.notice(&text);
            }
            other => self.out.notice(&format!(
                "unknown command /{other}; /help lists the commands"
            )),
        }
        Ok(Flow::Continue)
    }

    /// The operator at the console may do everything a server manager may.
    fn asker(&self) -> commands::Asker {
        commands::Asker {
            guild: Some(guild_id()),
            channel: channel_id(&self.channel),
            user: self.user.id,
            name: self.user.name.clone(),
            manage: true,
        }
    }

    fn print_journal(&self, since: &str) {
        let now = self.app.clock.now();
        let since = if since.is_empty() { "1h" } else { since };
        let start = match crate::when::parse_since(since, now) {
            Ok(t) => t,
            Err(e) => return self.out.notice(&e),
        };
        let filter = Filter {
            since: Some(start),
            guild: Some(guild_id()),
            ..Default::default()
        };
        match self.app.journal.query(&filter) {
            Ok(entries) if entries.is_empty() => {
                self.out.notice("the journal has nothing in that window")
            }
            Ok(entries) => {
                for e in entries {
                    let name = e
                        .channel
                        .and_then(|c| self.app.store.channel_name(c).ok().flatten());
                    self.out.notice(&journal::format_line(&e, name.as_deref()));
                }
            }
            Err(e) => self.out.notice(&format!("cannot read the journal: {e}")),
        }
    }
}

fn person(name: &str) -> Author {
    Author {
        id: user_id(name),
        name: name.to_string(),
        is_bot: false,
    }
}

fn is_channel_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
}

const HELP: &str = "commands:
  /channel NAME              move to #NAME
  /as NAME                   speak as someone else
  /journal [SINCE]           what the bot decided lately (default 1h; e.g. 30m, 24h)
  /why [MESSAGE-ID]          why the bot said (or did not say) something
  /status                    what the bot is up to here: garden, models, budget
  /garden                    tend this guild's memory now (still within the budget)
  /memory remember TEXT      tell the bot something to remember (also: search Q, list, forget ID, forget-me, export)
  /discovery [list]          the feeds the bot follows here
  /discovery add KIND TARGET add a feed (rss URL, subreddit, YouTube channel id, X handle)
  /discovery remove KIND TARGET
  /task add DUE | TEXT       a reminder, e.g. /task add in 10m | stretch (also: /task list, /task done ID)
  /schedule add NAME | CRON | WHAT   a routine, e.g. standup | 0 9 * * 1-5 | ask how it's going
  /schedule list, /schedule remove NAME
  /idea add TEXT, /idea list something for the bot to explore when it is quiet
  /settings show [PATH]      settings in effect for this guild
  /settings set PATH VALUE   override a setting for this guild
  /settings reset PATH       remove an override
  /quit                      finish and exit (as does Ctrl-D)
anything else is a message; @ambient (or @ and the bot's name) addresses the bot";
