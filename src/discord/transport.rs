//! The Discord side of the chat transport, over serenity's HTTP client.
//!
//! Every message goes out with a nonce and `enforce_nonce`, so Discord itself
//! drops a repeated send, and with `allowed_mentions` that permits pinging
//! only the users speech named and the roles a feed was given — never
//! `@everyone`, `@here` or any other role, whatever the text says (speech
//! has neutralised those in the text too). A message's cards go as embeds.
//!
//! What a feed needs besides: a channel's kind (`GET /channels/{id}`), a
//! thread started from a message, a forum post (its starter message carried
//! as a send's is, without a nonce: Discord keeps none for a post), and the
//! bot's own open post found again by its name among the guild's active
//! threads. A thread's name is cut to Discord's 100 characters the same way
//! for a post and for the search.
//!
//! A reply to a message deleted meanwhile is still posted: the reference goes
//! with `fail_if_not_exists: false`, and Discord then makes it a plain
//! message itself. A server that ignores that field refuses the reference
//! instead — a 400 (code 50035) naming `message_reference`, or the 404 a
//! Discord-compatible server gave for a message it had announced but not yet
//! saved — and such a refusal is reported as
//! [`ChatError::ReferenceUnknown`]: nothing was created, and speech sends the
//! answer again at once as a plain message addressed to the person answered,
//! under the same nonce (an answer already paid for is said, and never twice).
//!
//! Where the bot must honour 429s itself (a Discord-compatible server with no
//! rate-limiting proxy, see `ratelimit`), every request but typing is
//! performed through `ratelimit::Limiter` with the same body serenity would
//! send; elsewhere serenity performs it. A 429 that will not clear is a
//! `Transport` error, not `Unknown` (Discord creates nothing when it answers
//! 429) and not `Refused` (which closes the channel to the bot for a while,
//! meant for a missing permission). Typing goes straight through serenity
//! either way (a lost indicator costs nothing).
//!
//! The typing indicator runs beside the turn, never in front of it: it is a
//! task of its own, and the answer is sent without waiting for it. When the
//! guard drops (the answer is sent, or the turn failed) the task is aborted,
//! an unanswered typing request with it: a stuck typing route holds back
//! neither the answer nor, afterwards, a connection per answer. (Serenity's
//! own `Typing` leaves a request in flight running until it ends.)

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use reqwest::multipart::{Form, Part};
use serenity::all::{
    ChannelId as SChannelId, CreateAllowedMentions, CreateAttachment, CreateEmbed,
    CreateEmbedAuthor, CreateEmbedFooter, CreateMessage, EditMessage, GetMessages,
    GuildId as SGuildId, Http, Message, MessageId as SMessageId, MessageReference, Nonce,
    ReactionType, Timestamp,
};
use serenity::constants::MESSAGE_CODE_LIMIT;
use serenity::http::{HttpError, LightMethod, Request, Route};

use super::convert;
use super::ratelimit::{Limiter, is_rate_limited};
use crate::attention::Author;
use crate::chat::{Card, ChannelKind, ChatError, Edit, ForumPost, Outgoing, Transport, Typing};
use crate::ids::{ChannelId, GuildId, MessageId, RoleId, UserId};
use crate::metrics::Metrics;
use crate::store::messages::StoredMessage;

/// How often the typing indicator is renewed while the bot thinks.
const TYPING_RENEWAL: std::time::Duration = std::time::Duration::from_secs(7);

/// Aborts the task when dropped: the typing indicator ends with its guard.
struct Aborting(tokio::task::JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub struct DiscordTransport {
    http: Arc<Http>,
    me: Author,
    /// None: serenity's limiter or a rate-limiting proxy handles 429s.
    limiter: Option<Limiter>,
    /// The process's metrics, once the app that holds them is built.
    metrics: OnceLock<Arc<Metrics>>,
}

impl DiscordTransport {
    pub(crate) fn new(http: Arc<Http>, me: Author, limiter: Option<Limiter>) -> Self {
        Self {
            http,
            me,
            limiter,
            metrics: OnceLock::new(),
        }
    }

    /// Counts answers sent and 429s into `metrics` from now on (the
    /// transport is built before the app that holds them).
    pub(crate) fn count_into(&self, metrics: &Arc<Metrics>) {
        // Harmless when already set: one process has one `Metrics`.
        let _ = self.metrics.set(metrics.clone());
        if let Some(limiter) = &self.limiter {
            limiter.count_into(metrics);
        }
    }
}

/// The message as serenity sends it, files aside.
fn create_message(channel: SChannelId, message: &Outgoing) -> CreateMessage {
    let mut builder = CreateMessage::new()
        .content(&message.content)
        .nonce(Nonce::String(message.nonce.clone()))
        .enforce_nonce(true)
        .embeds(message.cards.iter().map(embed).collect())
        .allowed_mentions(safe_mentions(
            &message.pings,
            &message.ping_roles,
            message.ping_replied,
        ));
    if let Some(to) = message.reply_to {
        let mut reference = MessageReference::from((channel, SMessageId::new(to.get())));
        // If the message being answered was deleted meanwhile, still say it.
        reference.fail_if_not_exists = Some(false);
        builder = builder.reference_message(reference);
    }
    builder
}

/// What the bot reads of the message Discord echoes back once it has
/// created it. Decoding the whole echo into serenity's `Message` was a
/// fiftieth of an answer's instructions, for the one field kept.
#[derive(serde::Deserialize)]
struct Created {
    id: SMessageId,
}

/// Sends through our limiter: the JSON body serenity's `send_message` sends,
/// or with files the same multipart form (`payload_json` naming each
/// `files[i]` in `attachments`). The new message's id.
async fn send_limited(
    http: &Http,
    limiter: &Limiter,
    channel: SChannelId,
    message: &Outgoing,
) -> Result<SMessageId, serenity::Error> {
    let mut payload = serde_json::to_value(create_message(channel, message))?;
    let request = Request::new(
        Route::ChannelMessages {
            channel_id: channel,
        },
        LightMethod::Post,
    );
    let route = format!("send {channel}");
    let response = if message.files.is_empty() {
        let request = request.body(Some(serde_json::to_vec(&payload)?));
        limiter.perform(http.token(), &route, request, None).await?
    } else {
        payload["attachments"] = message
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| serde_json::json!({"id": i, "filename": f.name}))
            .collect();
        let payload = payload.to_string();
        let form = || {
            let mut form = Form::new();
            for (i, f) in message.files.iter().enumerate() {
                let part = Part::bytes(f.bytes.clone())
                    .file_name(f.name.clone())
                    .mime_str(mime_of(&f.name))
                    .expect("a known MIME type parses");
                form = form.part(format!("files[{i}]"), part);
            }
            form.text("payload_json", payload.clone())
        };
        limiter
            .perform(http.token(), &route, request, Some(&form))
            .await?
    };
    let created: Created = serde_json::from_slice(&response.bytes().await?)?;
    Ok(created.id)
}

/// Only the users speech named may be pinged (a reply pings its author
/// unless they asked not to be: `replied`), and only the roles a feed's
/// owner listed (`roles`); everyone and here never, nor any other role.
pub(crate) fn safe_mentions(
    pings: &[UserId],
    roles: &[RoleId],
    replied: bool,
) -> CreateAllowedMentions {
    CreateAllowedMentions::new()
        .all_users(false)
        .users(
            pings
                .iter()
                .filter(|u| u.get() != 0)
                .map(|u| serenity::all::UserId::new(u.get())),
        )
        .everyone(false)
        .all_roles(false)
        .roles(
            roles
                .iter()
                .filter(|r| r.get() != 0)
                .map(|r| serenity::all::RoleId::new(r.get())),
        )
        .replied_user(replied)
}

/// A card as Discord's embed. Empty text is left out rather than sent as
/// `""`: a card may have no title, or no description.
fn embed(card: &Card) -> CreateEmbed {
    let mut embed = CreateEmbed::new();
    if !card.title.is_empty() {
        embed = embed.title(&card.title);
    }
    if !card.description.is_empty() {
        embed = embed.description(&card.description);
    }
    if let Some(url) = &card.url {
        embed = embed.url(url);
    }
    if let Some(author) = &card.author {
        embed = embed.author(CreateEmbedAuthor::new(author));
    }
    // Serenity's timestamp is whole seconds here (no chrono feature); an item's time needs no more.
    if let Some(at) = card
        .timestamp
        .and_then(|t| Timestamp::from_unix_timestamp(t.timestamp()).ok())
    {
        embed = embed.timestamp(at);
    }
    if let Some(footer) = &card.footer {
        embed = embed.footer(CreateEmbedFooter::new(footer));
    }
    embed
}

/// Discord's JSON error code for an unknown channel.
const UNKNOWN_CHANNEL: isize = 10003;

/// Whether the server refused a send for its `message_reference` (the
/// message answered is unknown to it): a 400 naming the field, or a 404 that
/// is not about the channel itself. Discord itself answers neither for a
/// reference sent with `fail_if_not_exists: false`; a server ignoring that
/// field does.
fn reference_refused(e: &serenity::Error) -> bool {
    let serenity::Error::Http(HttpError::UnsuccessfulRequest(refused)) = e else {
        return false;
    };
    match refused.status_code.as_u16() {
        400 => refused
            .error
            .errors
            .iter()
            .any(|field| field.path.starts_with("message_reference")),
        404 => refused.error.code != UNKNOWN_CHANNEL,
        _ => false,
    }
}

fn chat_error(e: serenity::Error) -> ChatError {
    if is_rate_limited(&e) {
        // Discord creates nothing it answers 429 to: not unknown; and the channel is not closed to us.
        return ChatError::Transport(format!("rate limited: {e}"));
    }
    match &e {
        serenity::Error::Http(http) => match http.status_code().map(|s| s.as_u16()) {
            Some(403) => ChatError::Refused(format!("missing permission: {e}")),
            Some(404) => ChatError::Unavailable(format!("unknown channel or message: {e}")),
            // No answer, or a server error: the message may have been created all the same.
            None | Some(500..=599) => ChatError::Unknown(e.to_string()),
            _ => ChatError::Transport(e.to_string()),
        },
        // Delivered, but the answer could not be read.
        serenity::Error::Json(_) => ChatError::Unknown(format!("unreadable answer: {e}")),
        serenity::Error::Model(m) => ChatError::Refused(m.to_string()),
        _ => ChatError::Transport(e.to_string()),
    }
}

impl DiscordTransport {
    /// One attempt at creating the message, as the server answered it.
    async fn send_once(
        &self,
        channel: ChannelId,
        message: &Outgoing,
    ) -> Result<SMessageId, serenity::Error> {
        let channel = SChannelId::new(channel.get());
        match &self.limiter {
            Some(limiter) => send_limited(&self.http, limiter, channel, message).await,
            None => {
                let mut builder = create_message(channel, message);
                for file in &message.files {
                    builder = builder.add_file(CreateAttachment::bytes(
                        file.bytes.clone(),
                        file.name.clone(),
                    ));
                }
                channel
                    .send_message(&self.http, builder)
                    .await
                    .map(|m| m.id)
            }
        }
    }
}

/// Discord's longest thread name, in characters.
const THREAD_NAME: usize = 100;
/// How long a feed's thread stays open without a message: a day, in minutes.
const ARCHIVE_AFTER: u64 = 1440;
/// Channel flag: a post in this forum must carry a tag.
const REQUIRE_TAG: u64 = 1 << 4;

/// `name` as a thread is named: trimmed (as Discord trims it), cut to 100
/// characters on a character boundary, and never empty (Discord refuses an
/// empty name). [`Transport::forum_post_named`] compares names after the same cut.
fn thread_name(name: &str) -> String {
    let cut: String = name.trim().chars().take(THREAD_NAME).collect();
    match cut.trim_end() {
        "" => "untitled".to_string(),
        cut => cut.to_string(),
    }
}

/// What the bot reads of a channel (`GET /channels/{id}`).
#[derive(serde::Deserialize)]
struct ChannelShape {
    #[serde(rename = "type")]
    kind: u8,
    #[serde(default)]
    flags: u64,
    #[serde(default)]
    available_tags: Vec<TagShape>,
}

#[derive(serde::Deserialize)]
struct TagShape {
    id: serenity::all::ForumTagId,
    name: String,
    #[serde(default)]
    moderated: bool,
}

impl ChannelShape {
    fn kind(self) -> ChannelKind {
        match self.kind {
            0 => ChannelKind::Text,
            5 => ChannelKind::Announcement,
            10..=12 => ChannelKind::Thread,
            15 => ChannelKind::Forum {
                tag_required: self.flags & REQUIRE_TAG != 0,
                tags: self
                    .available_tags
                    .into_iter()
                    .map(|t| crate::chat::ForumTag {
                        id: t.id.get(),
                        name: t.name,
                        moderated: t.moderated,
                    })
                    .collect(),
            },
            _ => ChannelKind::Other,
        }
    }
}

/// What the bot reads of a thread Discord answers with or lists.
#[derive(serde::Deserialize)]
struct ThreadShape {
    id: SChannelId,
    #[serde(default)]
    parent_id: Option<SChannelId>,
    #[serde(default)]
    owner_id: Option<serenity::all::UserId>,
    #[serde(default)]
    name: String,
    /// A forum post's starter message, in the answer that made it.
    #[serde(default)]
    message: Option<Created>,
}

/// `GET /guilds/{g}/threads/active`: the guild's open threads.
#[derive(serde::Deserialize)]
struct ActiveThreads {
    threads: Vec<ThreadShape>,
}

/// The answer's JSON as `T`; an unreadable one is serenity's JSON error
/// (`ChatError::Unknown`: the request may have done its work).
async fn read<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
) -> Result<T, serenity::Error> {
    Ok(serde_json::from_slice(&response.bytes().await?)?)
}

impl DiscordTransport {
    /// Performs `request` through our limiter when the bot honours 429s
    /// itself (under the bucket `route`), else through serenity's `Http`
    /// (its own limiter on discord.com): the same request either way.
    async fn perform(
        &self,
        route: &str,
        request: Request<'_>,
    ) -> Result<reqwest::Response, serenity::Error> {
        match &self.limiter {
            Some(limiter) => {
                limiter
                    .perform(self.http.token(), route, request, None)
                    .await
            }
            None => self.http.request(request).await,
        }
    }

    /// A JSON request with `body`.
    async fn post_json(
        &self,
        route: &str,
        request: Request<'_>,
        body: &serde_json::Value,
    ) -> Result<reqwest::Response, serenity::Error> {
        let request = request.body(Some(serde_json::to_vec(body)?));
        self.perform(route, request).await
    }
}

#[async_trait]
impl Transport for DiscordTransport {
    fn me(&self) -> Author {
        self.me.clone()
    }

    async fn send(&self, channel: ChannelId, message: &Outgoing) -> Result<MessageId, ChatError> {
        if self.limiter.is_some() && message.content.chars().count() > MESSAGE_CODE_LIMIT {
            // What serenity's own send refuses before sending.
            return Err(ChatError::Refused(format!(
                "message over {MESSAGE_CODE_LIMIT} characters"
            )));
        }
        match self.send_once(channel, message).await {
            Ok(id) => {
                if let (Some(m), Some(to)) = (self.metrics.get(), message.reply_to) {
                    m.answered(to);
                }
                Ok(MessageId(id.get()))
            }
            // Speech says it again as a plain message.
            Err(e) if message.reply_to.is_some() && reference_refused(&e) => {
                Err(ChatError::ReferenceUnknown(e.to_string()))
            }
            Err(e) => Err(chat_error(e)),
        }
    }

    fn can_edit(&self) -> bool {
        true
    }

    /// Edits carry the same `allowed_mentions` as sends: an edit pings nobody
    /// on Discord, but a Discord-compatible server may differ.
    async fn edit(
        &self,
        channel: ChannelId,
        message: MessageId,
        edit: &Edit,
    ) -> Result<(), ChatError> {
        if edit.content.chars().count() > MESSAGE_CODE_LIMIT {
            return Err(ChatError::Refused(format!(
                "message over {MESSAGE_CODE_LIMIT} characters"
            )));
        }
        let (channel, message) = (
            SChannelId::new(channel.get()),
            SMessageId::new(message.get()),
        );
        let builder = EditMessage::new()
            .content(&edit.content)
            .allowed_mentions(safe_mentions(&edit.pings, &[], edit.ping_replied));
        let result = match &self.limiter {
            Some(limiter) => {
                let body = serde_json::to_vec(&builder)
                    .map_err(|e| ChatError::Transport(e.to_string()))?;
                let request = Request::new(
                    Route::ChannelMessage {
                        channel_id: channel,
                        message_id: message,
                    },
                    LightMethod::Patch,
                )
                .body(Some(body));
                // Discord buckets message edits per channel.
                let route = format!("edit {channel}");
                limiter
                    .perform(self.http.token(), &route, request, None)
                    .await
                    .map(drop)
            }
            None => channel
                .edit_message(&self.http, message, builder)
                .await
                .map(drop),
        };
        result.map_err(chat_error)
    }

    async fn react(
        &self,
        channel: ChannelId,
        message: MessageId,
        emoji: &str,
    ) -> Result<(), ChatError> {
        let (channel, message) = (
            SChannelId::new(channel.get()),
            SMessageId::new(message.get()),
        );
        let reaction = ReactionType::Unicode(emoji.to_string());
        let result = match &self.limiter {
            Some(limiter) => {
                let data = reaction.as_data();
                let route = Route::ChannelMessageReactionMe {
                    channel_id: channel,
                    message_id: message,
                    reaction: &data,
                };
                let request = Request::new(route, LightMethod::Put);
                let route = format!("react {channel}");
                limiter
                    .perform(self.http.token(), &route, request, None)
                    .await
                    .map(drop)
            }
            None => self.http.create_reaction(channel, message, &reaction).await,
        };
        result.map_err(chat_error)
    }

    fn typing(&self, channel: ChannelId) -> Typing {
        let http = self.http.clone();
        let id = SChannelId::new(channel.get());
        let task = tokio::spawn(async move {
            // Discord shows the indicator for about 10 s; serenity renews it every 7.
            loop {
                if let Err(e) = http.broadcast_typing(id).await {
                    // A missing permission will not pass on the next try either.
                    tracing::debug!(%channel, error = %e, "typing indicator stopped");
                    return;
                }
                tokio::time::sleep(TYPING_RENEWAL).await;
            }
        });
        Typing::holding(Aborting(task))
    }

    async fn channel_kind(&self, channel: ChannelId) -> Result<ChannelKind, ChatError> {
        let id = SChannelId::new(channel.get());
        let request = Request::new(Route::Channel { channel_id: id }, LightMethod::Get);
        let response = self
            .perform(&format!("channel {channel}"), request)
            .await
            .map_err(chat_error)?;
        let shape: ChannelShape = read(response).await.map_err(chat_error)?;
        Ok(shape.kind())
    }

    async fn start_thread(
        &self,
        channel: ChannelId,
        message: MessageId,
        name: &str,
    ) -> Result<ChannelId, ChatError> {
        let route = Route::ChannelMessageThreads {
            channel_id: SChannelId::new(channel.get()),
            message_id: SMessageId::new(message.get()),
        };
        let body = serde_json::json!({
            "name": thread_name(name),
            "auto_archive_duration": ARCHIVE_AFTER,
        });
        let response = self
            .post_json(
                &format!("thread {channel}"),
                Request::new(route, LightMethod::Post),
                &body,
            )
            .await
            .map_err(chat_error)?;
        let thread: ThreadShape = read(response).await.map_err(chat_error)?;
        Ok(ChannelId(thread.id.get()))
    }

    /// A post is made as JSON (no files: a feed's post has none), its first
    /// message with the same cards and `allowed_mentions` as a send.
    async fn post_in_forum(
        &self,
        forum: ChannelId,
        name: &str,
        message: &Outgoing,
        tags: &[u64],
    ) -> Result<ForumPost, ChatError> {
        let embeds: Vec<CreateEmbed> = message.cards.iter().map(embed).collect();
        let mentions = safe_mentions(&message.pings, &message.ping_roles, false);
        let body = serde_json::json!({
            "name": thread_name(name),
            "auto_archive_duration": ARCHIVE_AFTER,
            "applied_tags": tags.iter().map(u64::to_string).collect::<Vec<_>>(),
            "message": {"content": message.content, "embeds": embeds, "allowed_mentions": mentions},
        });
        let route = Route::ChannelForumPosts {
            channel_id: SChannelId::new(forum.get()),
        };
        let response = self
            .post_json(
                &format!("forum {forum}"),
                Request::new(route, LightMethod::Post),
                &body,
            )
            .await
            .map_err(chat_error)?;
        let thread: ThreadShape = read(response).await.map_err(chat_error)?;
        // On Discord the starter message has the thread's id; a server that
        // leaves `message` out is taken to do the same.
        let message = thread.message.map_or(thread.id.get(), |m| m.id.get());
        Ok(ForumPost {
            thread: ChannelId(thread.id.get()),
            message: MessageId(message),
        })
    }

    async fn forum_post_named(
        &self,
        guild: GuildId,
        forum: ChannelId,
        name: &str,
    ) -> Result<Option<ForumPost>, ChatError> {
        let route = Route::GuildThreadsActive {
            guild_id: SGuildId::new(guild.get()),
        };
        let response = self
            .perform(
                &format!("threads {guild}"),
                Request::new(route, LightMethod::Get),
            )
            .await
            .map_err(chat_error)?;
        let active: ActiveThreads = read(response).await.map_err(chat_error)?;
        let name = thread_name(name);
        let mine = active.threads.into_iter().find(|t| {
            t.parent_id.map(|p| p.get()) == Some(forum.get())
                && t.owner_id.map(|o| o.get()) == Some(self.me.id.get())
                && t.name == name
        });
        Ok(mine.map(|t| ForumPost {
            thread: ChannelId(t.id.get()),
            // A forum post's starter message has the thread's id.
            message: MessageId(t.id.get()),
        }))
    }

    async fn history(
        &self,
        channel: ChannelId,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, ChatError> {
        let limit = limit.min(100);
        let id = SChannelId::new(channel.get());
        let messages: Vec<Message> = match &self.limiter {
            Some(limiter) => {
                let request =
                    Request::new(Route::ChannelMessages { channel_id: id }, LightMethod::Get)
                        .params(Some(vec![("limit", limit.to_string())]));
                let route = format!("history {channel}");
                match limiter
                    .perform(self.http.token(), &route, request, None)
                    .await
                {
                    Ok(response) => match response.bytes().await {
                        Ok(bytes) => serde_json::from_slice(&bytes).map_err(serenity::Error::from),
                        Err(e) => Err(e.into()),
                    },
                    Err(e) => Err(e),
                }
            }
            None => {
                id.messages(&self.http, GetMessages::new().limit(limit as u8))
                    .await
            }
        }
        .map_err(chat_error)?;
        let mut rows: Vec<StoredMessage> = messages
            .iter()
            .map(|m| convert::stored(m, self.me.id, &m.content))
            .collect();
        rows.reverse();
        Ok(rows)
    }
}

/// The file's type from its name, as serenity's own upload guessed it:
/// Discord shows an attachment by its type (an image inline).
fn mime_of(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("txt") => "text/plain",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use serenity::http::ErrorResponse;

    /// The error serenity makes of the server's answer `status` with `body`.
    async fn answered(status: u16, body: serde_json::Value) -> serenity::Error {
        let response = axum::http::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(body.to_string())
            .expect("a valid response");
        let response = ErrorResponse::from_response(response.into(), reqwest::Method::POST).await;
        serenity::Error::Http(HttpError::UnsuccessfulRequest(response))
    }

    /// A thread's name is what Discord takes: trimmed, at most 100
    /// characters cut on a character boundary, never empty.
    #[test]
    fn a_thread_name_is_cut_to_100_characters_and_never_empty() {
        assert_eq!(thread_name("  ambient 2.0 \n"), "ambient 2.0");
        assert_eq!(thread_name(&"é".repeat(150)), "é".repeat(100));
        assert_eq!(
            thread_name(&format!("{} tail", "a".repeat(99))),
            "a".repeat(99)
        );
        for empty in ["", "   ", "\n\t"] {
            assert_eq!(thread_name(empty), "untitled", "{empty:?}");
        }
    }

    /// Only a refusal of the reference itself is answered by saying the
    /// answer as a plain message: anything else about the send — the
    /// channel gone, a missing permission, another field, a rate limit, a
    /// server error — would be refused again, or is not the reference's.
    #[tokio::test]
    async fn only_a_refused_reference_is_sent_again_as_a_plain_message() {
        let invalid = |field: &str| {
            json!({"code": 50035, "message": "Invalid Form Body", "errors": {field: {"_errors": [
                {"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "message": "Unknown message"}]}}})
        };
        let cases = [
            (400, invalid("message_reference"), true),
            (
                404,
                json!({"code": 10008, "message": "Unknown Message"}),
                true,
            ),
            (
                404,
                json!({"code": 10003, "message": "Unknown Channel"}),
                false,
            ),
            (
                403,
                json!({"code": 50013, "message": "Missing Permissions"}),
                false,
            ),
            (400, invalid("content"), false),
            (
                400,
                json!({"code": 50035, "message": "Invalid Form Body", "errors": {"allowed_mentions": {"users": {"_errors": [
                    {"code": "BASE_TYPE_BAD", "message": "bad"}]}}}}),
                false,
            ),
            (
                429,
                json!({"message": "You are being rate limited.", "retry_after": 1.0, "global": false}),
                false,
            ),
            (
                500,
                json!({"message": "Internal Server Error", "code": 0}),
                false,
            ),
        ];
        for (status, body, refused) in cases {
            let e = answered(status, body.clone()).await;
            assert_eq!(reference_refused(&e), refused, "{status} {body}");
        }
    }
}
