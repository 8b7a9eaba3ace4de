//! Chat exports, read for `ambient replay`: the messages of one server's
//! channels, one at a time, in time order.
//!
//! - DiscordChatExporter's JSON (one file per channel: `guild`, `channel`,
//!   then `messages[]` with `id`, `type`, `timestamp`, `content`,
//!   `author {id, name, nickname, isBot}`, `mentions[]`, `reference`,
//!   `attachments[]`), and a simple JSONL of `{ts, channel, author, content}`
//!   for hand-made cases (a `.jsonl` file).
//! - Streaming: each file is read on its own thread, one message at a time,
//!   into a small bounded queue; the files are merged by timestamp. A
//!   100,000-message export is never held whole.
//! - Several files are several channels of one server; two servers is an error.
//! - Messages other than plain ones and replies (joins, pins, calls…) are
//!   skipped and counted, not fatal.
//! - Errors name the file, the message (or line) and the field, and say what
//!   would be valid; a file ending early says it looks truncated.
//! - Everything read is bounded while it streams (see `bounded`): files are
//!   plain files under `max_file_bytes`; a string is cut before the parser
//!   holds it, a message's text then at `max_content_bytes` with a notice
//!   saying so, a name at `MAX_NAME_CHARS`; a message past
//!   `max_message_bytes` is an error; a server or channel is read for its
//!   id and name alone, the rest passed over unread. A time no Discord
//!   message can have (before Discord's epoch, or after `latest`) is refused.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use chrono::{DateTime, Utc};
use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::bounded::{Bounded, Overflow};
use crate::ids::stable_id;
use crate::settings::load::{FileError, open_limited};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    pub id: u64,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportedAuthor {
    pub id: u64,
    /// The server nickname where the export has one, else the account name.
    pub name: String,
    pub is_bot: bool,
}

/// One message of a chat export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportedMessage {
    /// Index into the files given.
    pub file: usize,
    /// 0-based position among the file's messages (JSONL: its line, 0-based).
    pub index: usize,
    pub guild: Named,
    pub channel: Named,
    pub id: u64,
    pub at: DateTime<Utc>,
    pub author: ExportedAuthor,
    pub content: String,
    pub mentions: Vec<ExportedAuthor>,
    /// The message this one answers (`reference.messageId`).
    pub reply_to: Option<u64>,
    pub attachments: usize,
}

#[derive(Clone, Debug)]
pub struct ExportLimits {
    pub max_file_bytes: u64,
    /// Longer text is cut (on a character boundary) with a notice; Discord's
    /// own limit is 4,000 characters.
    pub max_content_bytes: usize,
    /// A DiscordChatExporter message (its JSON, after long texts are cut)
    /// longer than this is an error: reactions, embeds and all, real ones
    /// take a few kilobytes.
    pub max_message_bytes: u64,
    /// The latest time a message can have: a later one is refused.
    pub latest: DateTime<Utc>,
}

impl ExportLimits {
    /// The limits for a read at `now` (time is an input: the command line
    /// passes the wall clock's): a message may be up to a day later than
    /// `now`, as the clocks of the machine that exported and this one may
    /// differ a little.
    pub fn at(now: DateTime<Utc>) -> Self {
        Self {
            max_file_bytes: 2 * 1024 * 1024 * 1024,
            max_content_bytes: 16 * 1024,
            max_message_bytes: 1024 * 1024,
            latest: now + chrono::Duration::days(1),
        }
    }
}

/// Names (server, channel, people) longer than this are cut: Discord's own
/// limit is 100 characters for servers and channels, 32 for people.
pub(crate) const MAX_NAME_CHARS: usize = 100;

/// Mentions kept per message; a message's 4,000 characters hold at most
/// about 190 (`<@id>` takes 21 or more).
const MAX_MENTIONS: usize = 200;

/// Kinds of skipped message counted apart; the rest are counted as one.
const MAX_SKIPPED_KINDS: usize = 32;

/// Discord's epoch (2015-01-01): no message is older. In milliseconds since 1970.
const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    #[error("{file}: {why}")]
    Unreadable { file: String, why: String },
    #[error("{file}: {at}: {why}")]
    Message {
        file: String,
        /// "message 41" (DiscordChatExporter) or "line 7" (JSONL), 1-based.
        at: String,
        why: MessageError,
    },
    #[error("{file}: {why}")]
    Format { file: String, why: String },
    #[error(
        "{first} is from the server {first_guild} and {second} from {second_guild}: \
         replay one server's channels at a time"
    )]
    TwoServers {
        first: String,
        first_guild: String,
        second: String,
        second_guild: String,
    },
}

/// What is wrong with one message (or line) of an export; [`ExportError::Message`]
/// says in which file and where. Values from the file are kept as [`shown`]
/// renders them: short, never the whole of a hostile field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("is {kind}, not a message object")]
    NotAMessage { kind: &'static str },
    #[error("\"{field}\" is {kind}, not an object with id and name")]
    NotAnAuthor { field: String, kind: &'static str },
    #[error("\"{field}\" is {kind}, not true or false")]
    NotABoolean { field: String, kind: &'static str },
    #[error("\"{field}\" is {shown}, not a Discord id (a string of digits)")]
    NotAnId { field: String, shown: String },
    #[error("\"{field}\" is {shown}, not text")]
    NotText { field: String, shown: String },
    #[error("\"{field}\" is {shown}, not an RFC 3339 time like \"2024-05-01T18:30:00+00:00\"")]
    NotATime { field: String, shown: String },
    #[error("\"{field}\" is {shown}, not a list")]
    NotAList { field: String, shown: String },
    #[error(
        "\"{field}\" is {shown}, not a time a Discord message can have: from 2015-01-01 \
         (Discord's first year) to {latest}"
    )]
    ImpossibleTime {
        field: String,
        shown: String,
        latest: String,
    },
    #[error(
        "is longer than {max} bytes even with its long texts cut: not a message \
         DiscordChatExporter writes"
    )]
    TooLarge { max: u64 },
    #[error("holds a number or word longer than {max} characters")]
    TooLongToken { max: u64 },
    #[error(
        "\"timestamp\" {at} is earlier than the message before it: the messages must be \
             in time order, as DiscordChatExporter writes them"
    )]
    OutOfOrder { at: String },
    #[error("cannot be read: {0}")]
    UnreadableLine(String),
    #[error("is longer than {max} bytes")]
    LineTooLong { max: u64 },
    #[error("is not a JSON object like {{\"ts\", \"channel\", \"author\", \"content\"}}: {0}")]
    NotJson(String),
    #[error("is {kind}, not an object with ts, channel, author and content")]
    NotALine { kind: &'static str },
    #[error("\"ts\" {n} is not a time in Unix seconds")]
    NotUnixSeconds { n: String },
}

/// The DiscordChatExporter message types that are conversation.
const CONVERSATION_TYPES: &[&str] = &["Default", "Reply"];
/// The same, as Discord's numbers (some tools write those).
const CONVERSATION_TYPE_NUMBERS: &[u64] = &[0, 19];

/// Messages waiting per file: enough to keep the merge fed, small enough to stay streaming.
const QUEUE: usize = 256;

enum Item {
    Message(Box<ExportedMessage>),
    Skipped(String),
    Failed(ExportError),
}

/// The messages of every file given, merged in time order.
pub struct Exports {
    names: Vec<String>,
    queues: Vec<Receiver<Item>>,
    heads: Vec<Option<ExportedMessage>>,
    finished: Vec<bool>,
    skipped: BTreeMap<String, u64>,
    guild: Option<(usize, Named)>,
    failed: bool,
    /// Bytes the readers have taken from the files so far, and the files' sizes:
    /// how far along the read is, for a progress bar.
    bytes_read: Arc<AtomicU64>,
    bytes_total: u64,
}

/// Counts the bytes a reader takes, for [`Exports::fraction_read`].
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens every file (checking each before anything is read) and starts
/// reading them; the messages come from the returned iterator.
pub fn read_exports(paths: &[PathBuf], limits: &ExportLimits) -> Result<Exports, ExportError> {
    let mut names = Vec::new();
    let mut opened = Vec::new();
    let mut bytes_total = 0;
    for path in paths {
        let name = path.display().to_string();
        let file = open_limited(path, limits.max_file_bytes).map_err(|e| unreadable(&name, e))?;
        // A size we cannot read only makes the progress bar less exact.
        bytes_total += file.metadata().map_or(0, |m| m.len());
        names.push(name);
        opened.push(file);
    }
    let bytes_read = Arc::new(AtomicU64::new(0));
    let mut queues = Vec::new();
    for (index, (path, file)) in paths.iter().zip(opened).enumerate() {
        let (tx, rx) = sync_channel(QUEUE);
        let reader = FileReader {
            file: index,
            name: names[index].clone(),
            limits: limits.clone(),
            tx,
        };
        let jsonl = is_jsonl(path);
        let counted = Counted {
            inner: file,
            read: bytes_read.clone(),
        };
        std::thread::spawn(move || {
            // Bounded by the file-size limit, not by the memory the file takes.
            let input =
                BufReader::with_capacity(64 * 1024, counted.take(reader.limits.max_file_bytes));
            if jsonl {
                reader.jsonl(input);
            } else {
                reader.dce(input);
            }
        });
        queues.push(rx);
    }
    let n = queues.len();
    Ok(Exports {
        names,
        queues,
        heads: vec![None; n],
        finished: vec![false; n],
        skipped: BTreeMap::new(),
        guild: None,
        failed: false,
        bytes_read,
        bytes_total,
    })
}

fn is_jsonl(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
}

fn unreadable(name: &str, e: FileError) -> ExportError {
    ExportError::Unreadable {
        file: name.to_string(),
        why: e.to_string(),
    }
}

impl Exports {
    /// How much of the files has been read, 0 to 1 (the readers run a small
    /// queue ahead of the messages handed out).
    pub(crate) fn fraction_read(&self) -> f64 {
        if self.bytes_total == 0 {
            return 1.0;
        }
        (self.bytes_read.load(Ordering::Relaxed) as f64 / self.bytes_total as f64).min(1.0)
    }

    /// Messages skipped so far, by type (e.g. "GuildMemberJoin" → 3).
    pub(crate) fn skipped(&self) -> &BTreeMap<String, u64> {
        &self.skipped
    }

    /// The server, once its first message has been read.
    pub(crate) fn guild(&self) -> Option<&Named> {
        self.guild.as_ref().map(|(_, g)| g)
    }

    /// Fills file `i`'s head from its queue; an error ends the whole read.
    fn refill(&mut self, i: usize) -> Result<(), ExportError> {
        while self.heads[i].is_none() && !self.finished[i] {
            match self.queues[i].recv() {
                Ok(Item::Message(m)) => self.heads[i] = Some(*m),
                Ok(Item::Skipped(kind)) => {
                    let known = self.skipped.contains_key(&kind);
                    let kind = if known || self.skipped.len() < MAX_SKIPPED_KINDS {
                        kind
                    } else {
                        "other kinds".to_string()
                    };
                    *self.skipped.entry(kind).or_default() += 1;
                }
                Ok(Item::Failed(e)) => return Err(e),
                Err(_) => self.finished[i] = true,
            }
        }
        Ok(())
    }

    fn same_server(&mut self, m: &ExportedMessage) -> Result<(), ExportError> {
        match &self.guild {
            None => {
                self.guild = Some((m.file, m.guild.clone()));
                Ok(())
            }
            Some((_, g)) if g.id == m.guild.id => Ok(()),
            Some((file, g)) => Err(ExportError::TwoServers {
                first: self.names[*file].clone(),
                first_guild: format!("\"{}\" ({})", g.name, g.id),
                second: self.names[m.file].clone(),
                second_guild: format!("\"{}\" ({})", m.guild.name, m.guild.id),
            }),
        }
    }
}

impl Iterator for Exports {
    type Item = Result<ExportedMessage, ExportError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        for i in 0..self.heads.len() {
            if let Err(e) = self.refill(i) {
                self.failed = true;
                return Some(Err(e));
            }
        }
        // The earliest head; ties go to the file given first, then file order.
        let next = (0..self.heads.len())
            .filter(|i| self.heads[*i].is_some())
            .min_by_key(|i| {
                let m = self.heads[*i].as_ref().expect("filtered to heads present");
                (m.at, m.file, m.index)
            })?;
        let message = self.heads[next].take().expect("chosen from heads present");
        if let Err(e) = self.same_server(&message) {
            self.failed = true;
            return Some(Err(e));
        }
        Some(Ok(message))
    }
}

/// Reads one file on its own thread, sending what it finds.
struct FileReader {
    file: usize,
    name: String,
    limits: ExportLimits,
    tx: SyncSender<Item>,
}

impl FileReader {
    /// Sends an item; false once nobody is listening (the replay stopped).
    fn send(&self, item: Item) -> bool {
        self.tx.send(item).is_ok()
    }

    fn fail_at(&self, at: String, why: MessageError) -> Item {
        Item::Failed(ExportError::Message {
            file: self.name.clone(),
            at,
            why,
        })
    }

    fn fail(&self, why: String) -> Item {
        Item::Failed(ExportError::Format {
            file: self.name.clone(),
            why,
        })
    }

    /// Hands a read message on, refusing one older than the one before it.
    fn accept(&self, m: ExportedMessage, previous: &mut Option<DateTime<Utc>>, at: String) -> bool {
        if previous.is_some_and(|p| m.at < p) {
            return !self.send(self.fail_at(
                at,
                MessageError::OutOfOrder {
                    at: m.at.to_rfc3339(),
                },
            ));
        }
        *previous = Some(m.at);
        self.send(Item::Message(Box::new(m)))
    }

    /// A message's text within `max_content_bytes`, a longer one cut with
    /// a notice that says so (the notice within the limit too).
    fn cut(&self, mut text: String) -> String {
        let max = self.limits.max_content_bytes;
        if text.len() <= max {
            return text;
        }
        let notice = format!(" [… cut here: the message is longer than {}]", size(max));
        let mut end = max.saturating_sub(notice.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(&notice);
        text
    }

    /// A time a Discord message can have, or why not.
    fn possible(
        &self,
        at: DateTime<Utc>,
        v: &Value,
        field: &str,
    ) -> Result<DateTime<Utc>, MessageError> {
        let latest = self.limits.latest;
        if at.timestamp_millis() < DISCORD_EPOCH_MS || at > latest {
            return Err(MessageError::ImpossibleTime {
                field: field.into(),
                shown: shown(v),
                latest: latest.format("%Y-%m-%d").to_string(),
            });
        }
        Ok(at)
    }
}

// --- DiscordChatExporter JSON --------------------------------------------------------------

/// Where the streaming parse is, for an error that serde reports without it.
#[derive(Default)]
struct Progress {
    in_messages: bool,
    read: usize,
    /// An error of ours, already sent; serde only needs to stop.
    stopped: bool,
}

impl FileReader {
    fn dce(&self, input: impl BufRead) {
        // A string is cut where, even all escapes, it holds more than
        // `max_content_bytes`: the text's own cut (with its notice) then applies.
        let max_string = 6 * self.limits.max_content_bytes as u64 + 6;
        let mut bounded = Bounded::new(input, max_string, self.limits.max_message_bytes);
        let mut progress = Progress::default();
        let result = {
            let mut de = serde_json::Deserializer::from_reader(BufReader::new(&mut bounded));
            let result = de.deserialize_map(TopVisitor {
                reader: self,
                progress: &mut progress,
            });
            result.and_then(|()| de.end())
        };
        match (result, bounded.overflow()) {
            (Err(_), Some(o)) if !progress.stopped => {
                self.send(self.overflowed(o, &progress));
            }
            (Err(e), None) if !progress.stopped => {
                self.send(self.syntax_error(&e, &progress));
            }
            _ => {}
        }
    }

    /// A limit of `bounded` stopped the read: where, and which.
    fn overflowed(&self, o: Overflow, p: &Progress) -> Item {
        if p.in_messages {
            let why = match o {
                Overflow::Item(max) => MessageError::TooLarge { max },
                Overflow::Token(max) => MessageError::TooLongToken { max },
            };
            return self.fail_at(format!("message {}", p.read + 1), why);
        }
        self.fail(match o {
            Overflow::Item(max) => format!(
                "before its messages, a value longer than {max} bytes even with its long \
                 texts cut: not what DiscordChatExporter writes"
            ),
            Overflow::Token(max) => {
                format!("before its messages, a number or word longer than {max} characters")
            }
        })
    }

    fn syntax_error(&self, e: &serde_json::Error, p: &Progress) -> Item {
        let place = if p.in_messages {
            format!("inside message {}", p.read + 1)
        } else {
            "before its messages".to_string()
        };
        if e.is_eof() {
            return self.fail(format!("the file ends {place} (is it truncated?)"));
        }
        self.fail(format!(
            "not DiscordChatExporter JSON at line {} column {} ({place}): {e}",
            e.line(),
            e.column()
        ))
    }
}

struct TopVisitor<'a> {
    reader: &'a FileReader,
    progress: &'a mut Progress,
}

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a DiscordChatExporter export: an object with guild, channel and messages")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut guild = None;
        let mut channel = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "guild" => guild = Some(map.next_value_seed(HEADER)?),
                "channel" => channel = Some(map.next_value_seed(HEADER)?),
                "messages" => {
                    let (Some(g), Some(c)) = (&guild, &channel) else {
                        return Err(self.stop(
                            "\"messages\" comes before \"guild\" and \"channel\": \
                             replay needs them first, as DiscordChatExporter writes them"
                                .into(),
                        ));
                    };
                    let guild = named(g, "guild").map_err(|why| self.stop(why.to_string()))?;
                    let channel = named(c, "channel").map_err(|why| self.stop(why.to_string()))?;
                    self.progress.in_messages = true;
                    map.next_value_seed(MessagesSeed {
                        reader: self.reader,
                        progress: self.progress,
                        guild,
                        channel,
                    })?;
                    self.progress.in_messages = false;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A value read one level deep, so that a server or channel costs what its
/// `id` and `name` take whatever else it holds (an icon, a topic, a list of
/// any length, passed over unread): a scalar as it is, a list or an object
/// as an empty one of its kind (the checks, `named`, say what it was) — but
/// for the `id` and `name` of the object read with `fields`.
struct Shallow {
    fields: bool,
}

/// How a server or channel is read.
const HEADER: Shallow = Shallow { fields: true };

impl<'de> DeserializeSeed<'de> for Shallow {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shallow {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        Ok(n.into())
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        Ok(n.into())
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        Ok(n.into())
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(s.into())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Array(Vec::new()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.fields && (key == "id" || key == "name") {
                kept.insert(key, map.next_value_seed(Shallow { fields: false })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Value::Object(kept))
    }
}

impl TopVisitor<'_> {
    fn stop<E: de::Error>(&mut self, why: String) -> E {
        self.reader.send(self.reader.fail(why));
        self.progress.stopped = true;
        E::custom("stopped")
    }
}

struct MessagesSeed<'a> {
    reader: &'a FileReader,
    progress: &'a mut Progress,
    guild: Named,
    channel: Named,
}

impl<'de> DeserializeSeed<'de> for MessagesSeed<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for MessagesSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("\"messages\": a list of messages")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut previous = None;
        while let Some(value) = seq.next_element::<Value>()? {
            let index = self.progress.read;
            self.progress.read += 1;
            let at = format!("message {}", index + 1);
            let stop = match dce_message(&value, &self, index) {
                Ok(Some(m)) => !self.reader.accept(m, &mut previous, at),
                Ok(None) => !self.reader.send(Item::Skipped(type_name(&value))),
                Err(why) => {
                    self.reader.send(self.reader.fail_at(at, why));
                    true
                }
            };
            if stop {
                self.progress.stopped = true;
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// One DiscordChatExporter message; `None` for a type that is not conversation.
fn dce_message(
    v: &Value,
    s: &MessagesSeed,
    index: usize,
) -> Result<Option<ExportedMessage>, MessageError> {
    if !v.is_object() {
        return Err(MessageError::NotAMessage { kind: kind(v) });
    }
    if !is_conversation(&v["type"]) {
        return Ok(None);
    }
    let reply_to = match &v["reference"] {
        Value::Null => None,
        r => Some(id_field(&r["messageId"], "reference.messageId")?),
    };
    let at = time_field(&v["timestamp"], "timestamp")?;
    Ok(Some(ExportedMessage {
        file: s.reader.file,
        index,
        guild: s.guild.clone(),
        channel: s.channel.clone(),
        id: id_field(&v["id"], "id")?,
        at: s.reader.possible(at, &v["timestamp"], "timestamp")?,
        author: author(&v["author"], "author")?,
        content: s.reader.cut(text_field(&v["content"], "content")?),
        mentions: list(&v["mentions"], "mentions")?
            .iter()
            .take(MAX_MENTIONS)
            .enumerate()
            .map(|(i, m)| author(m, &format!("mentions[{i}]")))
            .collect::<Result<_, _>>()?,
        reply_to,
        attachments: list(&v["attachments"], "attachments")?.len(),
    }))
}

fn is_conversation(t: &Value) -> bool {
    match t {
        // Hand-trimmed exports leave it out; a message is a message.
        Value::Null => true,
        Value::String(s) => CONVERSATION_TYPES.contains(&s.as_str()),
        Value::Number(n) => n
            .as_u64()
            .is_some_and(|n| CONVERSATION_TYPE_NUMBERS.contains(&n)),
        _ => false,
    }
}

fn type_name(v: &Value) -> String {
    match &v["type"] {
        Value::String(s) => s.chars().take(40).collect(),
        other => format!("type {other}"),
    }
}

fn named(v: &Value, field: &str) -> Result<Named, MessageError> {
    Ok(Named {
        id: id_field(&v["id"], &format!("{field}.id"))?,
        name: short_name(text_field(&v["name"], &format!("{field}.name"))?),
    })
}

/// A name cut at `MAX_NAME_CHARS`, with an ellipsis where it was.
fn short_name(name: String) -> String {
    match name.char_indices().nth(MAX_NAME_CHARS) {
        Some((end, _)) => format!("{}…", &name[..end]),
        None => name,
    }
}

/// A size as the notices give it: "16 KiB", or bytes when not whole KiB.
fn size(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

fn author(v: &Value, field: &str) -> Result<ExportedAuthor, MessageError> {
    if !v.is_object() {
        return Err(MessageError::NotAnAuthor {
            field: field.into(),
            kind: kind(v),
        });
    }
    let name = short_name(match &v["nickname"] {
        Value::String(nick) if !nick.is_empty() => nick.clone(),
        _ => text_field(&v["name"], &format!("{field}.name"))?,
    });
    let is_bot = match &v["isBot"] {
        Value::Null => false,
        Value::Bool(b) => *b,
        other => {
            return Err(MessageError::NotABoolean {
                field: format!("{field}.isBot"),
                kind: kind(other),
            });
        }
    };
    Ok(ExportedAuthor {
        id: id_field(&v["id"], &format!("{field}.id"))?,
        name,
        is_bot,
    })
}

fn id_field(v: &Value, field: &str) -> Result<u64, MessageError> {
    let id = match v {
        Value::String(s) => s.parse::<u64>().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    };
    id.filter(|id| *id > 0)
        .ok_or_else(|| MessageError::NotAnId {
            field: field.into(),
            shown: shown(v),
        })
}

fn text_field(v: &Value, field: &str) -> Result<String, MessageError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(MessageError::NotText {
            field: field.into(),
            shown: shown(other),
        }),
    }
}

fn time_field(v: &Value, field: &str) -> Result<DateTime<Utc>, MessageError> {
    let parsed = match v {
        Value::String(s) => DateTime::parse_from_rfc3339(s).ok().map(|t| t.to_utc()),
        _ => None,
    };
    parsed.ok_or_else(|| MessageError::NotATime {
        field: field.into(),
        shown: shown(v),
    })
}

fn list<'v>(v: &'v Value, field: &str) -> Result<&'v [Value], MessageError> {
    match v {
        Value::Null => Ok(&[]),
        Value::Array(items) => Ok(items),
        other => Err(MessageError::NotAList {
            field: field.into(),
            shown: shown(other),
        }),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "missing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A value as an error shows it: short, never the whole of a hostile field.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "missing".into(),
        Value::String(s) if s.chars().count() <= 40 => format!("{s:?}"),
        Value::String(s) => format!("{:?}…", s.chars().take(40).collect::<String>()),
        Value::Number(n) => n.to_string(),
        other => kind(other).into(),
    }
}

// --- JSONL ---------------------------------------------------------------------------------

/// The server a JSONL export stands for.
pub(crate) const JSONL_GUILD: &str = "replay";

/// The longest JSONL line read; the rest of a longer line is an error.
const MAX_LINE_BYTES: u64 = 64 * 1024;

impl FileReader {
    fn jsonl(&self, mut input: impl BufRead) {
        let guild = Named {
            id: stable_id("guild", JSONL_GUILD),
            name: JSONL_GUILD.into(),
        };
        let mut previous = None;
        let mut line = Vec::new();
        for number in 1.. {
            line.clear();
            let read = (&mut input)
                .take(MAX_LINE_BYTES + 1)
                .read_until(b'\n', &mut line);
            let at = format!("line {number}");
            let item = match read {
                Ok(0) => return,
                Err(e) => Err(MessageError::UnreadableLine(e.to_string())),
                Ok(_) if line.len() as u64 > MAX_LINE_BYTES => Err(MessageError::LineTooLong {
                    max: MAX_LINE_BYTES,
                }),
                Ok(_) if line.trim_ascii().is_empty() => continue,
                Ok(_) => self.jsonl_message(&line, &guild, number - 1),
            };
            let go_on = match item {
                Ok(m) => self.accept(m, &mut previous, at),
                Err(why) => {
                    self.send(self.fail_at(at, why));
                    false
                }
            };
            if !go_on {
                return;
            }
        }
    }

    fn jsonl_message(
        &self,
        line: &[u8],
        guild: &Named,
        index: usize,
    ) -> Result<ExportedMessage, MessageError> {
        let v: Value =
            serde_json::from_slice(line).map_err(|e| MessageError::NotJson(e.to_string()))?;
        if !v.is_object() {
            return Err(MessageError::NotALine { kind: kind(&v) });
        }
        let at = match &v["ts"] {
            Value::Number(n) => n
                .as_i64()
                .and_then(|s| DateTime::from_timestamp(s, 0))
                .ok_or_else(|| MessageError::NotUnixSeconds { n: n.to_string() })?,
            other => time_field(other, "ts")?,
        };
        let at = self.possible(at, &v["ts"], "ts")?;
        let channel = text_field(&v["channel"], "channel")?;
        let channel = short_name(channel.trim_start_matches('#').to_string());
        let who = short_name(text_field(&v["author"], "author")?);
        Ok(ExportedMessage {
            file: self.file,
            index,
            guild: guild.clone(),
            channel: Named {
                id: stable_id("channel", &channel),
                name: channel,
            },
            id: made_up_id(at, self.file, index),
            at,
            author: ExportedAuthor {
                id: stable_id("user", &who),
                name: who,
                is_bot: false,
            },
            content: self.cut(text_field(&v["content"], "content")?),
            mentions: Vec::new(),
            reply_to: None,
            attachments: 0,
        })
    }
}

/// A snowflake-shaped id for a JSONL line: time-ordered, the same every run.
fn made_up_id(at: DateTime<Utc>, file: usize, index: usize) -> u64 {
    let ms = (at.timestamp_millis() - DISCORD_EPOCH_MS).max(0) as u64;
    (ms << 22) | (((index as u64) & 0x1_ffff) << 5) | (file as u64 & 0x1f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/replay")
            .join(name)
    }

    /// The limits of a read on 2026-06-01, after every message of the samples and the tests.
    fn limits() -> ExportLimits {
        let now = DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z").unwrap();
        ExportLimits::at(now.to_utc())
    }

    fn read_all(paths: &[PathBuf]) -> (Vec<ExportedMessage>, Result<(), ExportError>, Exports) {
        let mut exports = read_exports(paths, &limits()).unwrap();
        let mut messages = Vec::new();
        let mut result = Ok(());
        for m in exports.by_ref() {
            match m {
                Ok(m) => messages.push(m),
                Err(e) => result = Err(e),
            }
        }
        (messages, result, exports)
    }

    /// Writes a DiscordChatExporter file around `messages` (JSON text).
    fn dce_file(dir: &Path, name: &str, guild: &str, messages: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                r#"{{"guild": {{"id": "{guild}", "name": "G{guild}"}},
                   "channel": {{"id": "7", "name": "{name}"}}, "messages": [{messages}]}}"#
            ),
        )
        .unwrap();
        path
    }

    fn message(id: u64, ts: &str, content: &str) -> String {
        format!(
            r#"{{"id": "{id}", "type": "Default", "timestamp": "{ts}", "content": "{content}",
                "author": {{"id": "5", "name": "dana", "nickname": null, "isBot": false}},
                "mentions": [], "attachments": []}}"#
        )
    }

    fn error_of(dir: &Path, messages: &str) -> String {
        let path = dce_file(dir, "chat.json", "1", messages);
        let (_, result, _) = read_all(&[path]);
        result.unwrap_err().to_string()
    }

    #[test]
    fn the_shipped_sample_reads_in_time_order_with_its_join_skipped() {
        let (messages, result, exports) =
            read_all(&[sample("sample-general.json"), sample("sample-links.json")]);
        result.unwrap();
        assert_eq!(messages.len(), 281);
        assert!(messages.windows(2).all(|w| w[0].at <= w[1].at));
        assert_eq!(exports.skipped().get("GuildMemberJoin"), Some(&1));
        assert_eq!(exports.guild().unwrap().name, "Tidepool");
        // Every byte of both files was read, and counted for the progress bar.
        assert_eq!(exports.fraction_read(), 1.0);
        let channels: std::collections::BTreeSet<&str> =
            messages.iter().map(|m| m.channel.name.as_str()).collect();
        assert_eq!(channels, ["general", "links"].into());
        let to_bot = messages
            .iter()
            .filter(|m| m.mentions.iter().any(|a| a.is_bot && a.name == "ambient"))
            .count();
        assert_eq!(to_bot, 22);
        // Nicknames win over account names, as people see them.
        assert!(messages.iter().any(|m| m.author.name == "Maya"));
        assert!(!messages.iter().any(|m| m.author.name == "maya_k"));
    }

    #[test]
    fn the_jsonl_sample_reads_with_made_up_ids_that_follow_time() {
        let (messages, result, _) = read_all(&[sample("sample.jsonl")]);
        result.unwrap();
        assert_eq!(messages.len(), 15);
        assert_eq!(messages[0].content, "morning all");
        assert_eq!(messages[0].channel.name, "general");
        assert_eq!(messages[0].guild.name, JSONL_GUILD);
        assert!(messages.windows(2).all(|w| w[0].id < w[1].id));
        let again = read_all(&[sample("sample.jsonl")]).0;
        assert_eq!(messages, again, "the same ids every run");
    }

    #[test]
    fn errors_name_the_file_the_message_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let good = message(10, "2024-05-01T18:30:00+00:00", "hi");
        let bad_time = message(11, "yesterday", "hi");
        assert_eq!(
            error_of(dir.path(), &format!("{good}, {bad_time}")),
            format!(
                "{}: message 2: \"timestamp\" is \"yesterday\", not an RFC 3339 time like \
                 \"2024-05-01T18:30:00+00:00\"",
                dir.path().join("chat.json").display()
            )
        );
        let bad_author = good.replace(r#""id": "5""#, r#""id": true"#);
        assert!(error_of(dir.path(), &bad_author).ends_with(
            "message 1: \"author.id\" is a boolean, not a Discord id (a string of digits)"
        ));
        let bad_content = good.replace(r#""content": "hi""#, r#""content": 5"#);
        assert!(
            error_of(dir.path(), &bad_content).ends_with("message 1: \"content\" is 5, not text")
        );
        let earlier = message(12, "2024-05-01T18:00:00+00:00", "hi");
        assert!(
            error_of(dir.path(), &format!("{good}, {earlier}"))
                .contains("message 2: \"timestamp\" 2024-05-01T18:00:00+00:00 is earlier")
        );
    }

    #[test]
    fn a_truncated_file_says_so_and_what_came_before_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dce_file(
            dir.path(),
            "chat.json",
            "1",
            &message(10, "2024-05-01T18:30:00+00:00", "hi"),
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let cut = format!(
            "{}, {}",
            &text[..text.rfind(']').unwrap()],
            &message(11, "2024-05-01T18:31:00+00:00", "cut off")[..40]
        );
        std::fs::write(&path, cut).unwrap();
        let (messages, result, _) = read_all(std::slice::from_ref(&path));
        assert_eq!(messages.len(), 1, "the messages before the cut are read");
        assert_eq!(
            result.unwrap_err().to_string(),
            format!(
                "{}: the file ends inside message 2 (is it truncated?)",
                path.display()
            )
        );
    }

    #[test]
    fn two_servers_are_refused_and_name_both_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = dce_file(
            dir.path(),
            "a.json",
            "1",
            &message(10, "2024-05-01T18:30:00Z", "x"),
        );
        let b = dce_file(
            dir.path(),
            "b.json",
            "2",
            &message(11, "2024-05-01T18:31:00Z", "y"),
        );
        let (messages, result, _) = read_all(&[a.clone(), b.clone()]);
        assert_eq!(messages.len(), 1);
        let e = result.unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{} is from the server \"G1\" (1) and {}",
                a.display(),
                b.display()
            )),
            "{e}"
        );
    }

    #[test]
    fn files_that_are_not_plain_or_too_large_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.json");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let Err(e) = read_exports(&[fifo], &limits()) else {
            panic!("a FIFO was opened");
        };
        assert!(
            e.to_string().ends_with(
                "it is a FIFO (named pipe), not a regular file; only plain files are read"
            ),
            "{e}"
        );
        let big = dce_file(
            dir.path(),
            "big.json",
            "1",
            &message(10, "2024-05-01T18:30:00Z", "x"),
        );
        let limits = ExportLimits {
            max_file_bytes: 100,
            ..limits()
        };
        let Err(e) = read_exports(&[big], &limits) else {
            panic!("an oversized file was opened");
        };
        assert!(
            e.to_string()
                .ends_with("it is larger than the limit of 100 bytes"),
            "{e}"
        );
    }

    #[test]
    fn messages_before_guild_and_channel_are_refused_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd.json");
        std::fs::write(
            &path,
            format!(
                r#"{{"messages": [{}], "guild": {{"id": "1", "name": "G"}}, "channel": {{"id": "7", "name": "c"}}}}"#,
                message(10, "2024-05-01T18:30:00Z", "x")
            ),
        )
        .unwrap();
        let e = read_all(&[path]).1.unwrap_err().to_string();
        assert!(
            e.contains("\"messages\" comes before \"guild\" and \"channel\""),
            "{e}"
        );
    }

    #[test]
    fn a_server_or_channel_is_read_for_its_id_and_name_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("extra.json");
        let write = |guild: &str| {
            std::fs::write(
                &path,
                format!(
                    r#"{{"guild": {guild}, "channel": {{"id": "7", "name": "c", "topic": null}},
                       "messages": [{}]}}"#,
                    message(10, "2024-05-01T18:30:00Z", "x")
                ),
            )
            .unwrap();
        };
        // Whatever else a server holds is passed over.
        let icons = vec!["0"; 10_000].join(",");
        write(&format!(
            r#"{{"id": "1", "icons": [{icons}], "more": {{"a": [{{"b": "c"}}]}}, "name": "G"}}"#
        ));
        let (messages, result, _) = read_all(std::slice::from_ref(&path));
        result.unwrap();
        assert_eq!(
            messages[0].guild,
            Named {
                id: 1,
                name: "G".into()
            }
        );
        // What stands for a server, or its id, that is no object is named by its kind.
        for (guild, error) in [
            (
                format!("[{icons}]"),
                r#""guild.id" is missing, not a Discord id"#,
            ),
            (
                r#""Tidepool""#.into(),
                r#""guild.id" is missing, not a Discord id"#,
            ),
            (
                r#"{"id": [1, 2], "name": "G"}"#.into(),
                r#""guild.id" is a list, not a Discord id"#,
            ),
            (
                r#"{"id": "1", "name": {"x": 1}}"#.into(),
                r#""guild.name" is an object, not text"#,
            ),
        ] {
            write(&guild);
            let e = read_all(std::slice::from_ref(&path))
                .1
                .unwrap_err()
                .to_string();
            assert!(e.contains(error), "{guild}: {e}");
        }
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        let long = "é".repeat(20_000);
        let path = dce_file(
            dir.path(),
            "long.json",
            "1",
            &message(10, "2024-05-01T18:30:00Z", &long),
        );
        let (messages, result, _) = read_all(&[path]);
        result.unwrap();
        let text = &messages[0].content;
        let notice = " [… cut here: the message is longer than 16 KiB]";
        assert!(text.ends_with(notice), "{}", &text[text.len() - 80..]);
        assert!(text.len() <= 16 * 1024 && text.len() > 16 * 1024 - notice.len() - 2);
        assert!(text.trim_end_matches(notice).chars().all(|c| c == 'é'));
    }

    #[test]
    fn a_huge_text_or_name_is_cut_before_it_is_held() {
        let dir = tempfile::tempdir().unwrap();
        // Escapes all the way: even so the text is cut at 16 KiB, with its notice.
        let escaped = "\\u00e9".repeat(100_000);
        let path = dir.path().join("escaped.json");
        std::fs::write(
            &path,
            format!(
                r#"{{"guild": {{"id": "1", "name": "{}"}}, "channel": {{"id": "7", "name": "c"}},
                   "messages": [{}]}}"#,
                "Tide".repeat(10_000),
                message(10, "2024-05-01T18:30:00Z", &escaped)
            ),
        )
        .unwrap();
        let (messages, result, _) = read_all(&[path]);
        result.unwrap();
        assert!(messages[0].content.ends_with("longer than 16 KiB]"));
        assert!(messages[0].content.starts_with("éé"));
        let guild = &messages[0].guild.name;
        assert_eq!(guild.chars().count(), MAX_NAME_CHARS + 1, "{guild}");
        assert!(guild.starts_with("TideTide") && guild.ends_with('…'));
    }

    #[test]
    fn a_message_past_its_size_limit_is_refused_by_number() {
        let dir = tempfile::tempdir().unwrap();
        let many = format!("[{}]", vec![r#"{"id": "9", "name": "x"}"#; 2_000].join(","));
        let huge = message(11, "2024-05-01T18:31:00Z", "hi")
            .replace(r#""mentions": []"#, &format!(r#""mentions": {many}"#));
        let limits = ExportLimits {
            max_message_bytes: 16 * 1024,
            ..limits()
        };
        let path = dce_file(
            dir.path(),
            "chat.json",
            "1",
            &format!("{}, {huge}", message(10, "2024-05-01T18:30:00Z", "hi")),
        );
        let mut exports = read_exports(std::slice::from_ref(&path), &limits).unwrap();
        assert!(
            exports.next().unwrap().is_ok(),
            "the message before is read"
        );
        assert_eq!(
            exports.next().unwrap().unwrap_err().to_string(),
            format!(
                "{}: message 2: is longer than 16384 bytes even with its long texts cut: \
                 not a message DiscordChatExporter writes",
                path.display()
            )
        );
    }

    #[test]
    fn times_no_discord_message_can_have_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let latest = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let limits = ExportLimits { latest, ..limits() };
        for (ts, ok) in [
            ("2014-12-31T23:59:59Z", false),
            ("2015-01-01T00:00:00Z", true),
            ("2026-01-01T00:00:00Z", true),
            ("2026-01-01T00:00:01Z", false),
        ] {
            let path = dce_file(dir.path(), "t.json", "1", &message(10, ts, "hi"));
            let got = read_exports(&[path], &limits).unwrap().next().unwrap();
            match (got, ok) {
                (Ok(m), true) => assert_eq!(m.at.to_rfc3339().get(..19), ts.get(..19)),
                (Err(e), false) => assert!(
                    e.to_string().ends_with(&format!(
                        "message 1: \"timestamp\" is \"{ts}\", not a time a Discord message \
                         can have: from 2015-01-01 (Discord's first year) to 2026-01-01"
                    )),
                    "{e}"
                ),
                (got, _) => panic!("{ts}: {got:?}"),
            }
        }
    }

    #[test]
    fn skipped_kinds_are_counted_apart_up_to_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let odd: Vec<String> = (0..40)
            .map(|i| {
                message(10 + i, "2024-05-01T18:30:00Z", "x")
                    .replace(r#""type": "Default""#, &format!(r#""type": "Kind{i}""#))
            })
            .collect();
        let path = dce_file(dir.path(), "odd.json", "1", &odd.join(","));
        let (messages, result, exports) = read_all(&[path]);
        result.unwrap();
        assert!(messages.is_empty());
        let skipped = exports.skipped();
        assert_eq!(skipped.len(), MAX_SKIPPED_KINDS + 1);
        assert_eq!(skipped.get("Kind0"), Some(&1));
        assert_eq!(skipped.get("other kinds"), Some(&8));
    }

    #[test]
    fn a_large_export_streams_through() {
        let dir = tempfile::tempdir().unwrap();
        let start = DateTime::parse_from_rfc3339("2024-05-01T00:00:00Z").unwrap();
        let messages: Vec<String> = (0..20_000)
            .map(|i| {
                let at = (start + chrono::Duration::seconds(i * 7)).to_rfc3339();
                message(1_000 + i as u64, &at, "a line of chat")
            })
            .collect();
        let path = dce_file(dir.path(), "big.json", "1", &messages.join(","));
        let (read, result, _) = read_all(&[path]);
        result.unwrap();
        assert_eq!(read.len(), 20_000);
        assert_eq!(read.last().unwrap().id, 20_999);
    }
}
