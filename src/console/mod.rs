//! `ambient console`: the whole bot against a simulated guild in the terminal.
//!
//! What you type is a message from you in `#general` of the guild "console";
//! `/channel memes` moves you, `/as bob` speaks as someone else. A line that
//! mentions the bot (`@ambient …`, or `@` and its configured name) addresses
//! it like a Discord mention, and the mention is written the way the Discord
//! front end writes one ([`bot_mention`]), so the same reflexes fire. The
//! same spine, store, journal and handlers run as with Discord; only the
//! transport differs. `/wait 5m` moves the console's clock forward tick by
//! tick, so initiative posts and reminders can be seen without waiting.
//! Input may be piped: at end of input the console finishes the work in
//! flight and exits 0; a line that is not UTF-8 is skipped with a notice,
//! and one longer than 64 KiB is cut at a character boundary, with a notice.

pub(crate) mod markup;
pub(crate) mod transport;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use regex::Regex;
use serde_json::json;
use tokio::sync::mpsc;

use crate::app::App;
use crate::attention::{
    Addressed, Author, MessagePercept, Percept, addressed_by_name, bot_mention,
};
use crate::clock::ShiftedClock;
use crate::commands;
use crate::ids::{ChannelId, GuildId, MessageId, UserId, next_snowflake, stable_id};
use crate::initiative::Look;
use crate::journal;
use crate::senses::Perceived;
use crate::store::MessageStore;
use crate::store::messages::StoredMessage;
use crate::vocab::journal::Entry;
use crate::vocab::journal::{Filter, Kind};
pub use transport::{ConsoleOut, ConsoleTransport};

pub(crate) const GUILD_NAME: &str = "console";

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
pub(crate) fn bot_author(name: &str) -> Author {
    Author {
        id: UserId(stable_id("user", "\u{0}ambient-bot")),
        name: name.to_string(),
        is_bot: true,
    }
}

pub(crate) struct Options {
    pub user: String,
    pub channel: String,
    /// The app's clock, which `/wait` moves forward.
    pub clock: Arc<ShiftedClock>,
    /// Said after the banner, with the app's own notices (the dashboard's address).
    pub notices: Vec<String>,
}

/// The longest `/wait`: a day of simulated time.
const MAX_WAIT_HOURS: i64 = 24;

/// How long `/ambient why` and `/journal` wait for the bot to finish what
/// it is doing before they answer with what is written down: a model call
/// may wait out its timeout, a garden cycle run for minutes.
const SETTLE_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);

/// How a console session ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// End of input or `/quit`, once the work in flight was done.
    Done,
    /// Ctrl-C: at once, without waiting for the work in flight.
    Interrupted,
}

/// Reads lines until end of input (or `/quit`), then lets the bot finish.
/// Ctrl-C ends it at once, also while a command waits.
pub(crate) async fn run(
    app: Arc<App>,
    out: Arc<ConsoleOut>,
    options: Options,
) -> anyhow::Result<Ended> {
    let mut session = Session::new(app.clone(), out, options)?;
    session.banner();
    let mut lines = stdin_lines();
    let interrupted = async {
        // A handler that cannot be installed leaves Ctrl-C to end the process.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::pin!(interrupted);
    loop {
        let input = tokio::select! {
            input = lines.recv() => input,
            () = &mut interrupted => return Ok(Ended::Interrupted),
        };
        let Some(input) = input else { break };
        let flow = tokio::select! {
            flow = session.take(input) => flow?,
            () = &mut interrupted => return Ok(Ended::Interrupted),
        };
        if flow == Flow::Quit {
            break;
        }
    }
    tokio::select! {
        () = app.spine.drain() => {}
        () = &mut interrupted => return Ok(Ended::Interrupted),
    }
    session.out.flush();
    Ok(Ended::Done)
}

/// The longest line read from standard input; the rest of a longer line is
/// dropped (a Discord message is at most 4,000 characters with Nitro).
const MAX_LINE_BYTES: usize = 64 * 1024;

/// One line of standard input, as the session takes it.
#[derive(Debug, PartialEq, Eq)]
enum Input {
    /// A line's text; `cut` is its (1-based) number when it was longer than
    /// [`MAX_LINE_BYTES`] and only its start is here.
    Line { text: String, cut: Option<usize> },
    /// The number of a line that was not UTF-8.
    NotUtf8(usize),
}

/// Stdin on its own thread: a blocking read cannot be cancelled, and a
/// detached thread never holds up shutdown.
fn stdin_lines() -> mpsc::Receiver<Input> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        let mut number = 0;
        while let Some((bytes, cut)) = read_line(&mut input) {
            number += 1;
            if tx.blocking_send(decode(bytes, cut, number)).is_err() {
                break;
            }
        }
    });
    rx
}

/// A line's bytes as text. A line cut at [`MAX_LINE_BYTES`] may end inside
/// a character: that partial character goes, not the whole line.
fn decode(mut bytes: Vec<u8>, cut: bool, number: usize) -> Input {
    if cut
        && let Err(e) = std::str::from_utf8(&bytes)
        // No error length: the bytes end in the middle of a character.
        && e.error_len().is_none()
    {
        bytes.truncate(e.valid_up_to());
    }
    match String::from_utf8(bytes) {
        Ok(text) => Input::Line {
            text,
            cut: cut.then_some(number),
        },
        Err(_) => Input::NotUtf8(number),
    }
}

/// One line without its ending, at most [`MAX_LINE_BYTES`], and whether it
/// was longer (its rest is let go by unread); `None` at end of input.
fn read_line<R: std::io::BufRead>(input: &mut R) -> Option<(Vec<u8>, bool)> {
    use std::io::{BufRead, Read};
    let mut line = Vec::new();
    let read = BufRead::read_until(
        &mut input.by_ref().take(MAX_LINE_BYTES as u64),
        b'\n',
        &mut line,
    )
    .ok()?;
    if read == 0 {
        return None;
    }
    let cut = line.last() != Some(&b'\n') && line.len() == MAX_LINE_BYTES;
    // An error here ends input like any read error.
    if cut && !skip_rest_of_line(input).ok()? {
        // A line of exactly the limit, then its ending, was not cut after all.
        return Some((trimmed(line), false));
    }
    Some((trimmed(line), cut))
}

/// Lets the rest of a line go by, up to and including its `\n` (or the end
/// of input), holding none of it — a line may go on for gigabytes — and
/// says whether anything but a line ending (`\r`, `\n`) was in it.
fn skip_rest_of_line<R: std::io::BufRead>(input: &mut R) -> std::io::Result<bool> {
    let mut text = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(text);
        }
        let end = buf.iter().position(|b| *b == b'\n');
        let upto = end.map_or(buf.len(), |at| at + 1);
        text |= buf[..upto].iter().any(|b| !matches!(b, b'\n' | b'\r'));
        input.consume(upto);
        if end.is_some() {
            return Ok(text);
        }
    }
}

fn trimmed(mut line: Vec<u8>) -> Vec<u8> {
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    line
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
    clock: Arc<ShiftedClock>,
    notices: Vec<String>,
}

impl Session {
    fn new(app: Arc<App>, out: Arc<ConsoleOut>, options: Options) -> anyhow::Result<Self> {
        let session = Self {
            user: person(&options.user),
            channel: options.channel,
            clock: options.clock,
            notices: options.notices,
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
        for notice in self.app.notices.iter().chain(&self.notices) {
            self.out.notice(notice);
        }
    }

    fn enter_channel(&self, name: &str) -> anyhow::Result<()> {
        let now = self.app.clock.now();
        self.app
            .stores::<MessageStore>()
            .upsert_guild(guild_id(), GUILD_NAME, now)?;
        self.app.stores::<MessageStore>().upsert_channel(
            channel_id(name),
            Some(guild_id()),
            name,
            now,
        )?;
        Ok(())
    }

    /// One line of input: said, run as a command, or noticed as unreadable.
    async fn take(&mut self, input: Input) -> anyhow::Result<Flow> {
        match input {
            Input::Line {
                text,
                cut: Some(number),
            } => {
                self.out.notice(&format!(
                    "line {number} is longer than {} KiB: only its first {} characters are read",
                    MAX_LINE_BYTES / 1024,
                    text.chars().count()
                ));
                self.line(&text).await
            }
            Input::Line { text, cut: None } => self.line(&text).await,
            Input::NotUtf8(number) => {
                self.out.notice(&format!(
                    "line {number} skipped: it is not valid UTF-8 text"
                ));
                Ok(Flow::Continue)
            }
        }
    }

    async fn line(&mut self, line: &str) -> anyhow::Result<Flow> {
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            return Ok(Flow::Continue);
        }
        if let Some(command) = line.strip_prefix('/') {
            return self.command(command).await;
        }
        self.say(line)?;
        Ok(Flow::Continue)
    }

    fn say(&self, text: &str) -> anyhow::Result<()> {
        let now = self.app.clock.now();
        let id = MessageId(next_snowflake(now));
        let channel = channel_id(&self.channel);
        // The name in effect now: a settings reload may have changed it.
        let bot_name = self.app.settings.global().bot.name.clone();
        let mention = mention_pattern(&bot_name);
        let text = &*mention.replace_all(text, |c: &regex::Captures<'_>| {
            format!("{}{}", &c[1], bot_mention(&bot_name))
        });
        let addressed = if mention.is_match(text) {
            Addressed::Mention
        } else if addressed_by_name(text, &bot_name) {
            Addressed::ByName
        } else {
            Addressed::No
        };
        let percept = Percept::Message(MessagePercept {
            message: StoredMessage::said(
                id,
                Some(guild_id()),
                channel,
                self.user.id,
                self.user.name.clone(),
                text.to_string(),
                now,
            ),
            addressed,
            guild_name: Some(GUILD_NAME.into()),
            channel_name: Some(self.channel.clone()),
            author_roles: None,
        });
        // Held from before the bot is handed the line until it is
        // acknowledged: nothing the bot says about it can come first.
        let mut lines = self.out.lines();
        match self.app.senses.perceive(percept)? {
            Perceived::Invisible(why) => lines.notice(&format!("the bot cannot see that: {why}")),
            // Only direct messages are refused here, and the console has none.
            Perceived::Refused(gate) => lines.notice(&format!("refused at the {gate} gate")),
            // The id is how a person asks about the line later (`/ambient why ID`).
            Perceived::Stored { .. } => lines.emit(
                &format!("· stored as message {id}"),
                json!({"event": "stored", "id": id.to_string(), "channel": self.channel}),
            ),
        }
        Ok(())
    }

    async fn command(&mut self, command: &str) -> anyhow::Result<Flow> {
        let (verb, rest) = command.split_once(' ').unwrap_or((command, ""));
        let rest = rest.trim();
        match verb {
            "quit" | "exit" => return Ok(Flow::Quit),
            "help" => self.out.notice(HELP),
            "channel" => self.switch_channel(rest)?,
            "as" => {
                if rest.is_empty() {
                    self.out.notice("usage: /as NAME");
                } else {
                    self.user = person(rest);
                    self.out.notice(&format!("you are now {rest}"));
                }
            }
            "journal" => self.print_journal(rest).await,
            "channels" => self.print_channels(),
            "wait" => self.wait(rest).await,
            // `/ambient status`, as in Discord; `/status` is its short form.
            "status" => self.print_status(),
            "ambient" if rest == "status" => self.print_status(),
            other => match self.shared(other, rest).await {
                Some(text) => self.out.notice(&text),
                None => self.out.notice(&format!(
                    "unknown command /{other}; /help lists the commands"
                )),
            },
        }
        Ok(Flow::Continue)
    }

    fn switch_channel(&mut self, rest: &str) -> anyhow::Result<()> {
        let name = rest.trim_start_matches('#');
        if !is_channel_name(name) {
            self.out
                .notice("usage: /channel NAME (letters, digits, - and _)");
        } else {
            self.enter_channel(name)?;
            self.channel = name.to_string();
            self.out.notice(&format!("you are now in #{name}"));
        }
        Ok(())
    }

    /// The commands the console shares with Discord's slash commands
    /// (`crate::commands`), asked as the operator; `None` for a verb that is
    /// not one of them.
    async fn shared(&self, verb: &str, rest: &str) -> Option<String> {
        let text = match verb {
            "memory" => commands::memory::run_text(&self.app, &self.asker(), rest),
            "discovery" => commands::discovery::run_text(&self.app, guild_id(), self.user.id, rest),
            "feeds" => commands::feeds::run_text(&self.app, guild_id(), self.user.id, rest).await,
            "task" | "schedule" | "idea" => {
                commands::impulses::run_text(&self.app, &self.asker(), verb, rest)
            }
            // `/ambient why` and `/ambient garden`, as in Discord; `/why` and
            // `/garden` are their short forms.
            "ambient" => match rest.split_once(' ').unwrap_or((rest, "")) {
                ("why", target) => self.why(target).await,
                ("garden", _) => self.app.garden.request(guild_id(), &self.user.name),
                _ => commands::courtesy::run_text(&self.app, &self.asker(), rest),
            },
            "why" => self.why(rest).await,
            "garden" => self.app.garden.request(guild_id(), &self.user.name),
            // The operator at the console owns the bot: the file is theirs to reload.
            "settings" if rest == "reload" => {
                commands::settings::reload(&self.app, &self.user.name).await
            }
            "settings" => commands::settings::run_text(
                &self.app,
                Some(guild_id()),
                Some(self.user.id),
                rest,
                true,
            ),
            _ => return None,
        };
        Some(text)
    }

    /// `/ambient why [MESSAGE-ID]`: the ids are the ones the console shows
    /// (`stored as message …`, `(id …)` after the bot's words). The bot
    /// finishes what it is doing first, if it can in a few seconds: its
    /// words are printed as they are sent, a moment before they are stored
    /// under the id shown, and a decision still being made has no reasons
    /// written yet — past that, the answer says so.
    async fn why(&self, target: &str) -> String {
        let settled = self.settled().await;
        let why = commands::why::why(
            &self.app,
            Some(guild_id()),
            channel_id(&self.channel),
            Some(target),
        );
        let why = markup::readable(&why, &self.app.stores::<MessageStore>());
        match settled {
            true => why,
            false => format!("{STILL_AT_WORK}\n{why}"),
        }
    }

    /// Waits, at most [`SETTLE_WITHIN`], for the bot to finish what it is
    /// doing; whether it has.
    async fn settled(&self) -> bool {
        tokio::time::timeout(SETTLE_WITHIN, self.app.spine.drain())
            .await
            .is_ok()
    }

    fn print_status(&self) {
        let src = commands::status::Sources::of(&self.app);
        for line in commands::status::widget(&src, Some(guild_id())) {
            self.out.notice(&line);
        }
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

    /// The console guild's channels with their ids (settings take either
    /// `#name` or the id) and what each is open to.
    fn print_channels(&self) {
        let settings = self.app.settings.for_guild(Some(guild_id()));
        let replies = &settings.permissions.replies;
        let ids = self
            .app
            .stores::<MessageStore>()
            .guild_channels(guild_id())
            .unwrap_or_default();
        let mut lines = Vec::new();
        for id in ids {
            let name = self
                .app
                .stores::<MessageStore>()
                .channel_name(id)
                .ok()
                .flatten()
                .unwrap_or_default();
            let mut roles = Vec::new();
            if name == self.channel {
                roles.push("you are here");
            }
            if replies.discovery_channel_ids.contains(&id) {
                roles.push("open to ambient posts");
            }
            if replies.reply_channel_ids.contains(&id) {
                roles.push("reply channel");
            }
            if crate::permissions::channel_invisible_because(&settings, id).is_some() {
                roles.push("invisible to the bot");
            }
            let roles = if roles.is_empty() {
                String::new()
            } else {
                format!("  ({})", roles.join(", "))
            };
            lines.push(format!("#{name:<20} {id}{roles}"));
        }
        lines.sort();
        self.out.notice(&format!(
            "channels of \"{GUILD_NAME}\" (settings take #name or the id):\n{}\n\
             e.g. /settings set permissions.replies.discoveryChannelIds #{}",
            lines.join("\n"),
            self.channel
        ));
    }

    /// `/wait 5m` or `/wait until 23:30` (the guild's zone): moves the clock
    /// forward one initiative tick at a time, running what each tick and each
    /// due reminder brings, as if that much time had passed.
    async fn wait(&self, spec: &str) {
        let usage = "usage: /wait DURATION or /wait until HH:MM, e.g. /wait 5m, /wait until 23:30 (at most 24h)";
        // The next HH:MM is at most a wall-clock day away (25 h across a DST change).
        let (total, most) = match spec.trim().strip_prefix("until ") {
            Some(at) => (self.until(at.trim()), MAX_WAIT_HOURS + 1),
            None => (crate::when::parse_duration(spec), MAX_WAIT_HOURS),
        };
        let Some(total) = total.filter(|d| *d > chrono::Duration::zero()) else {
            return self.out.notice(usage);
        };
        if total > chrono::Duration::hours(most) {
            return self.out.notice(usage);
        }
        let tick = i64::from(
            self.app
                .settings
                .global()
                .initiative
                .text
                .tick_seconds
                .max(1),
        );
        let started = self.app.clock.now();
        let mut left = total;
        while left > chrono::Duration::zero() {
            let step = left.min(chrono::Duration::seconds(tick));
            self.clock.advance(step);
            left -= step;
            self.app.run_due().await;
        }
        let now = self.app.clock.now();
        let tz = self.app.settings.for_guild(Some(guild_id())).zone();
        self.out.emit(
            &format!(
                "(waited {}; it is now {} {tz})",
                spec.trim(),
                now.with_timezone(&tz).format("%a %H:%M")
            ),
            json!({"event": "waited", "seconds": total.num_seconds(), "now": now.to_rfc3339()}),
        );
        self.say_unposted(started);
    }

    /// Each time the initiative looked for something to say during a
    /// `/wait` and posted nothing, said in a line with the journal's reason:
    /// a post shows itself, silence would not. A look's end is what its last
    /// journal entry says (`data.look`, see [`Look`]), and a look stopped at
    /// a gate is the gate's entry; a gate that stopped every look since
    /// before the wait was journaled once, when it began, and is said too.
    fn say_unposted(&self, since: DateTime<Utc>) {
        let guild = Some(guild_id());
        let window = Filter {
            since: Some(since),
            kinds: LOOK_KINDS.to_vec(),
            guild,
            ..Default::default()
        };
        let entries = match self.app.journal.query(&window) {
            Ok(entries) => entries,
            Err(e) => return self.out.notice(&format!("cannot read the journal: {e}")),
        };
        let tz = self.app.settings.for_guild(guild).zone();
        let at = |t: DateTime<Utc>| t.with_timezone(&tz).format("%H:%M").to_string();
        let mut said = false;
        for e in &entries {
            let Some(what) = unposted(e) else { continue };
            said = true;
            self.out.notice(&format!(
                "{} the bot looked for something to say, and nothing was posted: {what}. \
                 /journal shows each step.",
                at(e.at)
            ));
        }
        let looked = entries
            .iter()
            .any(|e| e.kind == Kind::Gate || ending(e).is_some());
        if said || looked {
            return;
        }
        match self.gate_in_force(since) {
            Ok(Some(gate)) => self.out.notice(&format!(
                "at each tick of the wait the bot looked for something to say, and nothing was \
                 posted: the {} (so since {}). /journal shows each step.",
                with_reason(&gate),
                at(gate.at)
            )),
            Ok(None) => {}
            Err(e) => self.out.notice(&format!("cannot read the journal: {e}")),
        }
    }

    /// The gate that has stopped every look since before `since`: the last
    /// gate entry before it, when no look has ended since that entry (the
    /// initiative journals a run of stops at one gate once).
    fn gate_in_force(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Option<Entry>, crate::store::StoreError> {
        let guild = Some(guild_id());
        let last_gate = self.app.journal.query(&Filter {
            until: Some(since),
            kinds: vec![Kind::Gate],
            guild,
            limit: Some(1),
            ..Default::default()
        })?;
        let Some(gate) = last_gate.into_iter().next() else {
            return Ok(None);
        };
        let after = self.app.journal.query(&Filter {
            since: Some(gate.at),
            until: Some(since),
            kinds: LOOK_KINDS.to_vec(),
            guild,
            ..Default::default()
        })?;
        let ended_since = after.iter().any(|e| ending(e).is_some());
        Ok((!ended_since).then_some(gate))
    }

    /// How long until the wall clock next reads `hh:mm` in the guild's zone.
    fn until(&self, hh_mm: &str) -> Option<chrono::Duration> {
        let time = chrono::NaiveTime::parse_from_str(hh_mm, "%H:%M").ok()?;
        let tz = self.app.settings.for_guild(Some(guild_id())).zone();
        let now = self.app.clock.now();
        let today = now.with_timezone(&tz).date_naive();
        [Some(today), today.succ_opt()]
            .into_iter()
            .flatten()
            .map(|day| crate::settings::quiet_hours::resolve(day.and_time(time), tz))
            .find(|at| *at > now)
            .map(|at| at - now)
    }

    /// `/journal [SINCE]`, once the bot has finished what it is doing (a
    /// decision in flight has not been written down yet), or has not in a
    /// few seconds: then it says so first.
    async fn print_journal(&self, since: &str) {
        if !self.settled().await {
            self.out.notice(STILL_AT_WORK);
        }
        let now = self.app.clock.now();
        let since = if since.is_empty() { "1h" } else { since };
        let start = match crate::when::parse_since(since, now) {
            Ok(t) => t,
            Err(e) => return self.out.notice(&e.to_string()),
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
                    let name = e.channel.and_then(|c| {
                        self.app
                            .stores::<MessageStore>()
                            .channel_name(c)
                            .ok()
                            .flatten()
                    });
                    let line = journal::format_line(&e, name.as_deref());
                    self.out
                        .notice(&markup::readable(&line, &self.app.stores::<MessageStore>()));
                }
            }
            Err(e) => self.out.notice(&format!("cannot read the journal: {e}")),
        }
    }
}

/// Said before `/ambient why` and `/journal` when the bot did not finish
/// its work in flight within [`SETTLE_WITHIN`].
const STILL_AT_WORK: &str = "the bot is still at work (a model call or a garden cycle): a decision may \
                             still be in the making, and this is what is written down so far — ask again \
                             in a moment";

/// The journal entries that can end a look: a gate's stop, and the entry
/// that closes a look which reached the model (a skip, a post, an error).
const LOOK_KINDS: [Kind; 4] = [
    Kind::Gate,
    Kind::InitiativeSkip,
    Kind::InitiativePost,
    Kind::Error,
];

/// How the look `e` closes ended, if it closes one.
fn ending(e: &Entry) -> Option<&str> {
    e.data["look"].as_str()
}

/// What `e` says about a look that posted nothing, with its reason; None
/// when `e` ends no look, or one that posted.
fn unposted(e: &Entry) -> Option<String> {
    if e.kind == Kind::Gate {
        return Some(format!("the {}", with_reason(e)));
    }
    let look = ending(e)?;
    let is = |l: Look| look == l.as_str();
    let what = if is(Look::Posted) {
        return None;
    } else if is(Look::Dropped) {
        "it decided to stay quiet".to_string()
    } else if is(Look::Held) {
        format!("it {}, to say later", e.summary)
    } else if is(Look::NoDecision) {
        "the model answered without a decision (post, hold or drop)".to_string()
    } else if is(Look::Rejected) {
        "the model's decision was refused".to_string()
    } else if is(Look::Failed) {
        format!("it failed: {}", e.summary)
    } else {
        // An ending this console does not know yet: as the journal has it.
        e.summary.clone()
    };
    Some(match e.reason.is_empty() {
        true => what,
        false => format!("{what} — {}", e.reason),
    })
}

/// An entry's summary and, if it has one, its reason.
fn with_reason(e: &Entry) -> String {
    match e.reason.is_empty() {
        true => e.summary.clone(),
        false => format!("{} — {}", e.summary, e.reason),
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

/// `@ambient` or `@` and the bot's name, as typed at the console.
fn mention_pattern(bot_name: &str) -> Regex {
    Regex::new(&format!(
        r"(?i)(^|[^\w@])@(ambient|{})\b",
        regex::escape(bot_name)
    ))
    .expect("an escaped name makes a valid pattern")
}

const HELP: &str = "commands:
  /channel NAME              move to #NAME
  /as NAME                   speak as someone else
  /channels                  this guild's channels with their ids and what each is open to
  /wait DURATION             let simulated time pass, e.g. /wait 5m: ticks and reminders run, and each
                             look that posted nothing is said with its reason
  /wait until HH:MM          let time pass until then in the guild's zone (guild.timezone), e.g. /wait until 23:30
  /journal [SINCE]           what the bot decided lately (default 1h; e.g. 30m, 24h)
  /ambient why [MESSAGE-ID]  why the bot said (or did not say) something: the ids are shown after
                             your lines (stored as message …) and the bot's words (id …);
                             without one, its latest decisions here (short: /why)
  /ambient status            what the bot is up to here: garden, budget, models, initiative (short: /status)
  /ambient garden            tend this guild's memory now, still within the budget (short: /garden)
  /ambient hush [DURATION] [#channel|server]   no unprompted messages there for a while (default 1h, here)
  /ambient unhush [#channel|server]            end a hush early
  /ambient me [BOUNDARY on|off]                your boundaries: no-ping, no-unprompted, no-memory, no-voice, no-voice-answers
  /memory remember TEXT      tell the bot something to remember (also: search Q, list, forget ID, forget-me, export)
  /discovery [list]          the feeds the bot follows here
  /discovery add KIND TARGET add a feed (rss URL, subreddit, YouTube channel id, X handle)
  /discovery remove KIND TARGET
  /feeds [list]              the feeds that post every new item here (subscriptions), one line each
  /feeds add URL #channel [thread] [embed] [backfill N] [dedupe guid|link|title] [template TEXT...]
                             subscribe a channel (URL, r/NAME, youtube:ID, x:HANDLE or hn); \\n in a template is a new line
  /feeds remove|pause|resume|test ID, /feeds preview ID [FILTERS...]
  /feeds edit ID template|filters TEXT..., /feeds edit ID embed on|off, /feeds edit ID dedupe guid|link|title
  /task add DUE | TEXT       a reminder, e.g. /task add in 10m | stretch (also: /task list, /task done ID)
  /schedule add NAME | CRON | WHAT [| anyway] [| unanswered]   a routine, e.g. standup | 0 9 * * 1-5 | ask how it's going
                             (anyway: it runs in quiet hours too; unanswered: it posts even when
                             nobody has answered the bot's last posts)
  /schedule list, /schedule remove NAME
  /idea add TEXT, /idea list something for the bot to explore when it is quiet
  /settings show [PATH]      settings in effect for this guild
  /settings set PATH VALUE   override a setting for this guild
  /settings reset PATH       remove an override
  /settings reload           read the settings file again and apply it if it is valid
  /quit                      finish the work in flight and exit (as does Ctrl-D); Ctrl-C exits at once
anything else is a message; @ambient (or @ and the bot's name) addresses the bot";

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Vec<Input> {
        let mut input = std::io::Cursor::new(bytes.to_vec());
        let mut lines = Vec::new();
        while let Some((line, cut)) = read_line(&mut input) {
            lines.push(decode(line, cut, lines.len() + 1));
        }
        lines
    }

    #[test]
    fn a_long_line_is_cut_between_characters_and_says_so() {
        // 65,536 is not a multiple of 3: the limit falls inside a '€'.
        let long = "€".repeat(30_000);
        let lines = read(format!("{long}\nnext\n").as_bytes());
        let Input::Line { text, cut } = &lines[0] else {
            panic!("{:?}", &lines[0]);
        };
        assert_eq!(*cut, Some(1));
        assert_eq!(text.chars().count(), MAX_LINE_BYTES / 3);
        assert!(text.chars().all(|c| c == '€'));
        assert_eq!(
            lines[1],
            Input::Line {
                text: "next".into(),
                cut: None
            },
            "the rest of the long line is dropped, the next line kept"
        );
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_whole() {
        let exact = "a".repeat(MAX_LINE_BYTES);
        let lines = read(format!("{exact}\r\nnext\n").as_bytes());
        assert_eq!(
            lines[0],
            Input::Line {
                text: exact,
                cut: None
            }
        );
        assert_eq!(lines.len(), 2);
    }

    /// `len` bytes of `a`, made as they are read, then `rest`: a line far
    /// longer than the test would want to hold.
    struct Endless {
        left: usize,
        block: Vec<u8>,
        rest: std::io::Cursor<Vec<u8>>,
    }

    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.left == 0 {
                return self.rest.read(buf);
            }
            let n = buf.len().min(self.left).min(self.block.len());
            buf[..n].copy_from_slice(&self.block[..n]);
            self.left -= n;
            Ok(n)
        }
    }

    #[test]
    fn the_rest_of_a_line_of_100_mb_goes_by_and_the_next_line_is_read() {
        let endless = Endless {
            left: 100 * 1024 * 1024,
            block: vec![b'a'; 64 * 1024],
            rest: std::io::Cursor::new(b"\r\nnext\n".to_vec()),
        };
        let mut input = std::io::BufReader::new(endless);
        let (line, cut) = read_line(&mut input).unwrap();
        assert_eq!((line.len(), cut), (MAX_LINE_BYTES, true));
        assert_eq!(read_line(&mut input), Some((b"next".to_vec(), false)));
        assert_eq!(read_line(&mut input), None);
    }

    #[test]
    fn a_long_line_that_is_not_utf8_is_still_skipped() {
        let mut bytes = b"caf\xe9 ".to_vec();
        bytes.extend("€".repeat(30_000).bytes());
        bytes.push(b'\n');
        assert_eq!(read(&bytes), vec![Input::NotUtf8(1)]);
    }
}
