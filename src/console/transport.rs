//! The console's side of the chat transport: the bot's words go to stdout.
//!
//! Output is either human text or, with `--json`, one JSON object per line
//! (for scripts and tests): `ready`, `stored` (a typed line was acknowledged:
//! it is in the store), `message`, `edit` (a streamed answer growing, with
//! the message's whole new text), `reaction`, `typing`, `notice`. In text
//! mode an edit that only adds to a message prints what it adds (a mention
//! cut by the end of a chunk waits for the chunk that completes it), each
//! message of the bot ends with its id (`/ambient why` takes it), and
//! mentions show names (`markup`); JSON keeps the content as sent.
//!
//! What a feed delivers shows too: a message's cards under it, indented
//! (title, link, description, then author · footer · time), and `thread` and
//! `forum_post` events for the threads and forum posts it makes. Every
//! console channel is a text channel. A card's text comes from a feed, from
//! outside: control characters are shown as `�`, never sent to the terminal.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, LazyLock, Mutex};

use async_trait::async_trait;
use regex::Regex;
use serde_json::json;

use super::markup::readable;
use crate::attention::Author;
use crate::chat::{
    Card, ChannelKind, ChatError, Delivered, Edit, ForumPost, Outgoing, Transport, Typing,
};
use crate::clock::SharedClock;
use crate::ids::{ChannelId, MessageId, next_snowflake};
use crate::store::MessageStore;
use crate::store::messages::StoredMessage;

/// Serialized writes to stdout, in text or JSON lines.
pub struct ConsoleOut {
    json: bool,
    held: Mutex<Held>,
}

/// The start of a mention that a streamed message's latest text ended in
/// (`<@12` of `<@1234>`): it is printed with the chunk that completes it,
/// as a name, or — if something else is printed first — as it is.
struct Held {
    tail: Option<(MessageId, String)>,
    to: Box<dyn Write + Send>,
}

impl ConsoleOut {
    pub(crate) fn new(json: bool) -> Arc<Self> {
        Self::writing_to(json, Box::new(std::io::stdout()))
    }

    fn writing_to(json: bool, to: Box<dyn Write + Send>) -> Arc<Self> {
        Arc::new(Self {
            json,
            held: Mutex::new(Held { tail: None, to }),
        })
    }

    pub(crate) fn is_json(&self) -> bool {
        self.json
    }

    /// The output to oneself: whatever is printed through these lines comes
    /// out together, nothing else in between, until they are dropped.
    pub(crate) fn lines(&self) -> Lines<'_> {
        Lines {
            json: self.json,
            held: self.held.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// Prints `text` in text mode (nothing if it is empty), or `event` in JSON mode.
    pub(crate) fn emit(&self, text: &str, event: serde_json::Value) {
        self.lines().emit(text, event);
    }

    pub(crate) fn notice(&self, text: &str) {
        self.lines().notice(text);
    }

    /// Prints what a streamed message still holds back (the console ends).
    pub(crate) fn flush(&self) {
        self.lines().flush_tail();
    }
}

/// Standard output held by one writer (see [`ConsoleOut::lines`]).
pub(crate) struct Lines<'a> {
    json: bool,
    held: std::sync::MutexGuard<'a, Held>,
}

impl Lines<'_> {
    /// Prints `text` in text mode (nothing if it is empty), or `event` in JSON mode.
    pub(crate) fn emit(&mut self, text: &str, event: serde_json::Value) {
        self.flush_tail();
        if self.json {
            self.write_line(&event.to_string());
        } else if !text.is_empty() {
            self.write_line(text);
        }
    }

    pub(crate) fn notice(&mut self, text: &str) {
        self.emit(
            &format!("· {text}"),
            json!({"event": "notice", "text": text}),
        );
    }

    fn flush_tail(&mut self) {
        if let Some((_, line)) = self.held.tail.take() {
            self.write_line(&line);
        }
    }

    fn write_line(&mut self, line: &str) {
        let to = &mut self.held.to;
        // A closed stdout (e.g. piped into `head`) must not crash the bot.
        let _ = writeln!(to, "{line}");
        let _ = to.flush();
    }

    /// `message`'s held tail, taken back unprinted; None when it was printed meanwhile.
    fn take_tail(&mut self, message: MessageId) -> Option<String> {
        match &self.held.tail {
            Some((id, _)) if *id == message => self.held.tail.take().map(|(_, line)| line),
            _ => None,
        }
    }

    fn hold_tail(&mut self, message: MessageId, line: String) {
        self.flush_tail();
        self.held.tail = Some((message, line));
    }
}

/// A possible start of a mention at the very end of `text` — `<`, `<@`,
/// `<@!12`, `<#34`, … — which the next chunk of a streamed message may
/// complete: printed now, it would stay markup.
static OPEN_MENTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<(?:(?:@[!&]?|#)\d{0,20})?\z").expect("valid pattern"));

/// `text` split before an unfinished mention at its end (text mode only:
/// JSON shows the content as sent).
fn open_tail(text: &str, json: bool) -> (&str, &str) {
    match OPEN_MENTION.find(text).filter(|_| !json) {
        Some(m) => text.split_at(m.start()),
        None => (text, ""),
    }
}

/// `text` with every control character (an escape sequence's start, a
/// carriage return) shown as `�`: a feed's text must not drive the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// A card as the console prints it under its message, each line indented.
fn card_lines(card: &Card, store: &MessageStore) -> Vec<String> {
    let mut lines = Vec::new();
    if !card.title.is_empty() {
        lines.push(printable(&card.title));
    }
    if let Some(url) = &card.url {
        lines.push(printable(url));
    }
    lines.extend(
        card.description
            .lines()
            .map(|l| printable(&readable(l, store))),
    );
    let time = card
        .timestamp
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string());
    let byline: Vec<String> = [
        card.author.as_deref(),
        card.footer.as_deref(),
        time.as_deref(),
    ]
    .into_iter()
    .flatten()
    .map(printable)
    .collect();
    if !byline.is_empty() {
        lines.push(byline.join(" · "));
    }
    lines.into_iter().map(|l| format!("    ▏ {l}")).collect()
}

/// A card as `--json` prints it: its fields as they would be sent.
fn card_json(card: &Card) -> serde_json::Value {
    json!({
        "title": card.title,
        "url": card.url,
        "description": card.description,
        "author": card.author,
        "timestamp": card.timestamp.map(|t| t.to_rfc3339()),
        "footer": card.footer,
    })
}

/// What the console has shown of one of the bot's messages.
struct Shown {
    /// Its whole text as last sent or edited.
    content: String,
    /// How much of `content` is printed (a held tail not counted).
    printed: usize,
    /// How much after that is held back ([`Held`]).
    held: usize,
}

pub struct ConsoleTransport {
    out: Arc<ConsoleOut>,
    store: MessageStore,
    clock: SharedClock,
    me: Author,
    delivered: Delivered,
    /// What each message of the bot shows now, so an edit prints only what it adds.
    shown: Mutex<HashMap<MessageId, Shown>>,
    /// The messages a thread was started from: one thread each, as on Discord.
    threads: Mutex<HashMap<MessageId, ChannelId>>,
    /// The forum posts made: (forum, name, post), for `forum_post_named`.
    posts: Mutex<Vec<(ChannelId, String, ForumPost)>>,
}

impl ConsoleTransport {
    pub(crate) fn new(
        out: Arc<ConsoleOut>,
        store: MessageStore,
        clock: SharedClock,
        me: Author,
    ) -> Self {
        Self {
            out,
            store,
            clock,
            me,
            delivered: Delivered::default(),
            shown: Mutex::new(HashMap::new()),
            threads: Mutex::new(HashMap::new()),
            posts: Mutex::new(Vec::new()),
        }
    }

    fn lock_shown(&self) -> std::sync::MutexGuard<'_, HashMap<MessageId, Shown>> {
        self.shown.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn channel_label(&self, channel: ChannelId) -> String {
        self.store
            .channel_name(channel)
            .ok()
            .flatten()
            .unwrap_or_else(|| channel.to_string())
    }

    /// Prints the bot's message `id` in the channel labelled `name`, its cards under it.
    fn show(&self, name: &str, id: MessageId, message: &Outgoing) {
        let files: Vec<String> = message
            .files
            .iter()
            .map(|f| format!("{} ({} bytes)", f.name, f.bytes.len()))
            .collect();
        let attached = if files.is_empty() {
            String::new()
        } else {
            format!(" [attached: {}]", files.join(", "))
        };
        let mut lines = self.out.lines();
        let (now, tail) = open_tail(&message.content, self.out.is_json());
        lines.emit(
            // The id is how a person asks why it was said (`/ambient why ID`).
            &format!(
                "[#{name}] {}: {}{attached}  (id {id})",
                self.me.name,
                readable(now, &self.store)
            ),
            json!({
                "event": "message",
                "id": id.to_string(),
                "channel": name,
                "author": self.me.name,
                "content": message.content,
                "reply_to": message.reply_to.map(|m| m.to_string()),
                "files": files,
                "cards": message.cards.iter().map(card_json).collect::<Vec<_>>(),
                "ping_roles": message.ping_roles.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
            }),
        );
        if !tail.is_empty() {
            lines.hold_tail(id, format!("[#{name}] {} …{tail}", self.me.name));
        }
        if !self.out.is_json() {
            for line in message
                .cards
                .iter()
                .flat_map(|c| card_lines(c, &self.store))
            {
                lines.emit(&line, serde_json::Value::Null);
            }
        }
        self.lock_shown().insert(
            id,
            Shown {
                content: message.content.clone(),
                printed: now.len(),
                held: tail.len(),
            },
        );
    }
}

#[async_trait]
impl Transport for ConsoleTransport {
    fn me(&self) -> Author {
        self.me.clone()
    }

    async fn send(&self, channel: ChannelId, message: &Outgoing) -> Result<MessageId, ChatError> {
        let (id, new) = self.delivered.first_or_record(&message.nonce, || {
            MessageId(next_snowflake(self.clock.now()))
        });
        if new {
            self.show(&self.channel_label(channel), id, message);
        }
        Ok(id)
    }

    fn can_edit(&self) -> bool {
        true
    }

    async fn edit(
        &self,
        channel: ChannelId,
        message: MessageId,
        edit: &Edit,
    ) -> Result<(), ChatError> {
        let name = self.channel_label(channel);
        let mut lines = self.out.lines();
        let mut shown = self.lock_shown();
        let was = shown
            .get_mut(&message)
            .ok_or_else(|| ChatError::Unavailable(format!("unknown message {message}")))?;
        // A held tail printed meanwhile (something else came first) counts as printed.
        if was.held > 0 && lines.take_tail(message).is_none() {
            was.printed += was.held;
        }
        let before = &was.content[..was.printed];
        let (shown_from, label) = match edit.content.strip_prefix(before) {
            Some(_) => (was.printed, " …"),
            None => (0, " (edited): "),
        };
        let (now, tail) = open_tail(&edit.content[shown_from..], self.out.is_json());
        let text = if now.is_empty() {
            String::new()
        } else {
            format!(
                "[#{name}] {}{label}{}",
                self.me.name,
                readable(now, &self.store)
            )
        };
        lines.emit(
            &text,
            json!({
                "event": "edit",
                "id": message.to_string(),
                "channel": name,
                "author": self.me.name,
                "content": edit.content,
            }),
        );
        if !tail.is_empty() {
            lines.hold_tail(message, format!("[#{name}] {} …{tail}", self.me.name));
        }
        *was = Shown {
            content: edit.content.clone(),
            printed: shown_from + now.len(),
            held: tail.len(),
        };
        Ok(())
    }

    async fn react(
        &self,
        channel: ChannelId,
        message: MessageId,
        emoji: &str,
    ) -> Result<(), ChatError> {
        let name = self.channel_label(channel);
        self.out.emit(
            &format!("[#{name}] {} reacted {emoji}", self.me.name),
            json!({"event": "reaction", "channel": name, "message": message.to_string(), "emoji": emoji}),
        );
        Ok(())
    }

    fn typing(&self, channel: ChannelId) -> Typing {
        let name = self.channel_label(channel);
        self.out.emit(
            &format!("[#{name}] {} is typing…", self.me.name),
            json!({"event": "typing", "channel": name}),
        );
        Typing::none()
    }

    async fn channel_kind(&self, _channel: ChannelId) -> Result<ChannelKind, ChatError> {
        Ok(ChannelKind::Text)
    }

    /// As on Discord, a message has one thread at most, which has its id.
    async fn start_thread(
        &self,
        channel: ChannelId,
        message: MessageId,
        name: &str,
    ) -> Result<ChannelId, ChatError> {
        let thread = ChannelId(message.get());
        {
            let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
            if threads.insert(message, thread).is_some() {
                return Err(ChatError::Transport(format!(
                    "message {message} already has a thread"
                )));
            }
        }
        let label = self.channel_label(channel);
        let name = printable(name);
        self.out.emit(
            &format!("[#{label}] {} thread {name}  (id {thread})", self.me.name),
            json!({"event": "thread", "channel": label, "message": message.to_string(),
                   "name": name, "id": thread.to_string()}),
        );
        Ok(thread)
    }

    /// The post is printed as its title line, then its first message as a send's.
    async fn post_in_forum(
        &self,
        forum: ChannelId,
        name: &str,
        message: &Outgoing,
        tags: &[u64],
    ) -> Result<ForumPost, ChatError> {
        let id = MessageId(next_snowflake(self.clock.now()));
        let post = ForumPost {
            thread: ChannelId(id.get()),
            message: id,
        };
        let label = self.channel_label(forum);
        let shown = printable(name);
        let listed: Vec<String> = tags.iter().map(u64::to_string).collect();
        self.out.emit(
            &format!(
                "[#{label}] {} forum post {shown} [{}]  (id {id})",
                self.me.name,
                listed.join(", ")
            ),
            json!({"event": "forum_post", "channel": label, "name": shown, "tags": listed,
                   "id": id.to_string()}),
        );
        self.show(&label, id, message);
        let mut posts = self.posts.lock().unwrap_or_else(|p| p.into_inner());
        posts.push((forum, name.to_string(), post));
        Ok(post)
    }

    async fn forum_post_named(
        &self,
        _guild: crate::ids::GuildId,
        forum: ChannelId,
        name: &str,
    ) -> Result<Option<ForumPost>, ChatError> {
        let posts = self.posts.lock().unwrap_or_else(|p| p.into_inner());
        Ok(posts
            .iter()
            .find(|(f, n, _)| *f == forum && n == name)
            .map(|(_, _, post)| *post))
    }

    async fn history(
        &self,
        channel: ChannelId,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, ChatError> {
        self.store
            .recent_messages(channel, limit)
            .map_err(|e| ChatError::Transport(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;
    use crate::ids::UserId;

    /// What the console printed, shared with the test.
    #[derive(Clone, Default)]
    struct Printed(Arc<Mutex<Vec<u8>>>);

    impl Write for Printed {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Printed {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// A console transport in text mode whose store knows ada (user 905)
    /// in #general (channel 20).
    fn console() -> (ConsoleTransport, Arc<ConsoleOut>, Printed) {
        console_in(false)
    }

    fn console_in(json: bool) -> (ConsoleTransport, Arc<ConsoleOut>, Printed) {
        let store = crate::console::markup::tests::store();
        let printed = Printed::default();
        let out = ConsoleOut::writing_to(json, Box::new(printed.clone()));
        let me = Author {
            id: UserId(1),
            name: "ambient".into(),
            is_bot: true,
        };
        let transport =
            ConsoleTransport::new(out.clone(), store.messages(), Arc::new(SystemClock), me);
        (transport, out, printed)
    }

    fn outgoing(content: &str) -> Outgoing {
        Outgoing::text(content, "n1")
    }

    fn edit(content: &str) -> Edit {
        Edit {
            content: content.into(),
            pings: Vec::new(),
            ping_replied: false,
        }
    }

    #[tokio::test]
    async fn a_mention_cut_between_two_chunks_reads_as_a_name() {
        let (transport, _, printed) = console();
        let id = transport
            .send(ChannelId(20), &outgoing("Good question, <@9"))
            .await
            .unwrap();
        transport
            .edit(ChannelId(20), id, &edit("Good question, <@905> — see <"))
            .await
            .unwrap();
        transport
            .edit(
                ChannelId(20),
                id,
                &edit("Good question, <@905> — see <#20> for it."),
            )
            .await
            .unwrap();
        assert_eq!(
            printed.text(),
            format!(
                "[#general] ambient: Good question,   (id {id})\n\
                 [#general] ambient …@ada — see \n\
                 [#general] ambient …#general for it.\n"
            )
        );
    }

    #[tokio::test]
    async fn a_held_start_of_a_mention_is_printed_before_anything_else() {
        let (transport, out, printed) = console();
        let id = transport
            .send(ChannelId(20), &outgoing("I would write x <"))
            .await
            .unwrap();
        out.notice("you are now bob");
        out.flush();
        assert_eq!(
            printed.text(),
            format!(
                "[#general] ambient: I would write x   (id {id})\n\
                 [#general] ambient …<\n\
                 · you are now bob\n"
            )
        );
        // Text that only looks like the start of a mention is not held.
        let (transport, out, printed) = console();
        let id = transport
            .send(ChannelId(20), &outgoing("love it <3"))
            .await
            .unwrap();
        out.flush();
        assert_eq!(
            printed.text(),
            format!("[#general] ambient: love it <3  (id {id})\n")
        );
    }

    /// A feed item's card, its title carrying an escape sequence.
    fn card() -> Card {
        Card {
            title: "ambient 2.0\u{1b}[2J released".into(),
            url: Some("https://example.org/2.0".into()),
            description: "Feeds for <@905>.\nThreads too.".into(),
            author: Some("the team".into()),
            timestamp: chrono::DateTime::parse_from_rfc3339("2026-11-20T10:30:00Z")
                .ok()
                .map(|t| t.to_utc()),
            footer: Some("example.org".into()),
        }
    }

    #[tokio::test]
    async fn a_card_is_printed_under_its_message_and_cannot_drive_the_terminal() {
        let (transport, _, printed) = console();
        let mut message = outgoing("New release");
        message.cards = vec![card()];
        let id = transport.send(ChannelId(20), &message).await.unwrap();
        assert_eq!(
            printed.text(),
            format!(
                "[#general] ambient: New release  (id {id})\n\
                 \x20   ▏ ambient 2.0\u{fffd}[2J released\n\
                 \x20   ▏ https://example.org/2.0\n\
                 \x20   ▏ Feeds for @ada.\n\
                 \x20   ▏ Threads too.\n\
                 \x20   ▏ the team · example.org · 2026-11-20 10:30 UTC\n"
            )
        );
        assert_eq!(
            transport.channel_kind(ChannelId(20)).await.unwrap(),
            ChannelKind::Text
        );
    }

    #[tokio::test]
    async fn json_carries_a_messages_cards_and_role_pings() {
        let (transport, _, printed) = console_in(true);
        let mut message = outgoing("<@&7> New release");
        message.cards = vec![card()];
        message.ping_roles = vec![crate::ids::RoleId(7)];
        transport.send(ChannelId(20), &message).await.unwrap();
        let event: serde_json::Value = serde_json::from_str(printed.text().trim()).unwrap();
        assert_eq!(event["ping_roles"], json!(["7"]));
        assert_eq!(event["cards"][0]["url"], "https://example.org/2.0");
        assert_eq!(event["cards"][0]["timestamp"], "2026-11-20T10:30:00+00:00");
    }

    #[tokio::test]
    async fn a_thread_and_a_forum_post_are_printed_and_the_post_found_again() {
        let (transport, _, printed) = console();
        let said = transport
            .send(ChannelId(20), &outgoing("New release"))
            .await
            .unwrap();
        let thread = transport
            .start_thread(ChannelId(20), said, "ambient 2.0")
            .await
            .unwrap();
        assert_eq!(thread.get(), said.get());
        let again = transport.start_thread(ChannelId(20), said, "again").await;
        assert!(matches!(again, Err(ChatError::Transport(_))), "{again:?}");
        let mut message = Outgoing::text("Out now", "post");
        message.cards = vec![Card {
            title: "ambient 2.0".into(),
            ..Card::default()
        }];
        let post = transport
            .post_in_forum(ChannelId(20), "ambient 2.0", &message, &[601, 603])
            .await
            .unwrap();
        assert_eq!(post.thread.get(), post.message.get());
        assert_eq!(
            printed.text(),
            format!(
                "[#general] ambient: New release  (id {said})\n\
                 [#general] ambient thread ambient 2.0  (id {thread})\n\
                 [#general] ambient forum post ambient 2.0 [601, 603]  (id {id})\n\
                 [#general] ambient: Out now  (id {id})\n\
                 \x20   ▏ ambient 2.0\n",
                id = post.message
            )
        );
        let guild = crate::ids::GuildId(1);
        let found = |name: &'static str| transport.forum_post_named(guild, ChannelId(20), name);
        assert_eq!(found("ambient 2.0").await.unwrap(), Some(post));
        assert_eq!(found("ambient 3.0").await.unwrap(), None);
    }
}
