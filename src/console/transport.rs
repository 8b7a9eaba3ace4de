//! The console's side of the chat transport: the bot's words go to stdout.
//!
//! Output is either human text or, with `--json`, one JSON object per line
//! (for scripts and tests): `ready`, `stored` (a typed line was acknowledged:
//! it is in the store), `message`, `edit` (a streamed answer growing, with
//! the message's whole new text), `reaction`, `typing`, `notice`. In text
//! mode an edit that only adds to a message prints what it adds, each
//! message of the bot ends with its id (`/ambient why` takes it), and
//! mentions show names (`markup`); JSON keeps the content as sent.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;

use super::markup::readable;
use crate::attention::Author;
use crate::chat::{ChatError, Delivered, Edit, Outgoing, Transport, Typing};
use crate::clock::SharedClock;
use crate::ids::{ChannelId, MessageId, next_snowflake};
use crate::store::Store;
use crate::store::messages::StoredMessage;

/// Serialized writes to stdout, in text or JSON lines.
pub struct ConsoleOut {
    json: bool,
    lock: Mutex<()>,
}

impl ConsoleOut {
    pub fn new(json: bool) -> Arc<Self> {
        Arc::new(Self {
            json,
            lock: Mutex::new(()),
        })
    }

    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Prints `text` in text mode (nothing if it is empty), or `event` in JSON mode.
    pub fn emit(&self, text: &str, event: serde_json::Value) {
        if !self.json && text.is_empty() {
            return;
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut stdout = std::io::stdout().lock();
        let line = if self.json {
            event.to_string()
        } else {
            text.to_string()
        };
        // A closed stdout (e.g. piped into `head`) must not crash the bot.
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    }

    pub fn notice(&self, text: &str) {
        self.emit(
            &format!("· {text}"),
            json!({"event": "notice", "text": text}),
        );
    }
}

pub struct ConsoleTransport {
    out: Arc<ConsoleOut>,
    store: Store,
    clock: SharedClock,
    me: Author,
    delivered: Delivered,
    /// What each message of the bot shows now, so an edit prints only what it adds.
    shown: Mutex<HashMap<MessageId, String>>,
}

impl ConsoleTransport {
    pub fn new(out: Arc<ConsoleOut>, store: Store, clock: SharedClock, me: Author) -> Self {
        Self {
            out,
            store,
            clock,
            me,
            delivered: Delivered::default(),
            shown: Mutex::new(HashMap::new()),
        }
    }

    fn lock_shown(&self) -> std::sync::MutexGuard<'_, HashMap<MessageId, String>> {
        self.shown.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn channel_label(&self, channel: ChannelId) -> String {
        self.store
            .channel_name(channel)
            .ok()
            .flatten()
            .unwrap_or_else(|| channel.to_string())
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
        if !new {
            return Ok(id);
        }
        self.lock_shown().insert(id, message.content.clone());
        let name = self.channel_label(channel);
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
        self.out.emit(
            // The id is how a person asks why it was said (`/ambient why ID`).
            &format!(
                "[#{name}] {}: {}{attached}  (id {id})",
                self.me.name,
                readable(&message.content, &self.store)
            ),
            json!({
                "event": "message",
                "id": id.to_string(),
                "channel": name,
                "author": self.me.name,
                "content": message.content,
                "reply_to": message.reply_to.map(|m| m.to_string()),
                "files": files,
            }),
        );
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
        let before = self
            .lock_shown()
            .insert(message, edit.content.clone())
            .ok_or_else(|| ChatError::Unavailable(format!("unknown message {message}")))?;
        let name = self.channel_label(channel);
        let text = match edit.content.strip_prefix(before.as_str()) {
            Some("") => String::new(),
            Some(added) => format!(
                "[#{name}] {} …{}",
                self.me.name,
                readable(added, &self.store)
            ),
            None => format!(
                "[#{name}] {} (edited): {}",
                self.me.name,
                readable(&edit.content, &self.store)
            ),
        };
        self.out.emit(
            &text,
            json!({
                "event": "edit",
                "id": message.to_string(),
                "channel": name,
                "author": self.me.name,
                "content": edit.content,
            }),
        );
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
