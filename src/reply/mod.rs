//! The ACTIVE path: answering a person who addressed the bot.
//!
//! A mention, a reply to the bot, a DM or "hey" and the bot's name is claimed here and
//! answered at once through the executive (`reply` role) with the channel's
//! recent history. The channel becomes ACTIVE (the initiative tick keeps out
//! of it for a while), and the typing indicator runs until the answer is
//! sent or the turn fails.
//!
//! In `permissions.replies.replyChannelIds` the bot may also join in
//! unprompted when a message's salience clears
//! `attention.unsolicitedReplyThreshold` (the channel's "vibe" bonus counts
//! towards it); the model then decides with a typed `chime_in` call whether
//! to speak at all, and staying quiet is journaled like any decision. That
//! decision is autonomous work: it runs on the `ambient` role (its budgets),
//! at most once per `attention.chimeInCooldownMinutes` per channel, and a
//! chime-in does not make the channel ACTIVE — the bot's own words must not
//! make the next messages look more worth answering.
//!
//! Nothing is paid for that cannot be delivered: before any model call the
//! handler asks [`Speech::deliverable`] (hourly cap, channel settings, a
//! refused last send). Someone who addressed the bot then gets a 💤
//! reaction instead of an answer; an unprompted attempt just stops.
//!
//! Who may talk to it is asked first (`permissions::refusal`: the author's
//! roles in a server, `discord.dms` in a direct message): someone refused
//! gets no model call, a gate line in the journal, and — if they addressed
//! the bot — one short sentence saying why, at most once a day.
//!
//! Courtesy is asked before the model too (`courtesy`): no chime-in during
//! quiet hours, in a hushed channel, or after the message of someone who
//! asked not to be answered unprompted; and, only if
//! `initiative.repliesDuringQuietHours` is off, no answer during quiet hours
//! (a 💤 says so).
//!
//! An answer may look things up (`web`): `web_search` and `web_scrape`
//! when `executive.replyTools.web` is on and a search endpoint is set,
//! counted, journaled on the message and cited in the answer; page text is
//! quoted as untrusted, and tools that change anything are refused once it
//! is in the turn. Its tools are offered only while the reply budget covers
//! a tool round, so a nearly spent budget still gets an answer.
//!
//! When no model can answer someone who addressed it (none configured, over
//! budget, the provider down), the channel hears a short honest sentence once
//! per conversation — never a stack trace — and after that only a 💤
//! reaction, so it is not nagged. Unsolicited attempts fail silently.

use crate::store::cut;
use crate::store::{InitiativeStore, JournalStore, MessageStore, PeopleStore, UsageStore};
mod web;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::attention::router::ORDER_EXECUTIVE;
use crate::attention::{Attended, Handler, Input, MessagePercept, Outcome, Percept, Spine};
use crate::clock::SharedClock;
use crate::executive::journal_search::journal_search;
use crate::executive::prompts::{PromptLine, Rendered};
use crate::executive::tools::{FinalTool, Tool, parse_args};
use crate::executive::{ExecError, Executive, Turn, TurnOutcome, TurnResult};
use crate::ids::ChannelId;
use crate::impulses::Impulses;
use crate::impulses::tools::add_task;
use crate::initiative::gifs;
use crate::journal::Journal;
use crate::journal::summary::Audience;
use crate::memory::Memory;
use crate::memory::search::Reader;
use crate::memory::tools::memory_search;
use crate::permissions::Refused;
use crate::reflexes::Reflexes;
use crate::senses::attachments::{self, Reading, Shown};
use crate::settings::Role;
use crate::settings::{Secrets, SettingsService};
use crate::speech::Speech;
use crate::speech::stream::Streamed;
use crate::store::pairing::PairingCode;
use crate::vocab::journal::{Entry, Kind};

/// What a reply turn offers beyond memory: the journal ("why did you do
/// that?"), tasks (a promise becomes one), and — for people trusted with it
/// — writing and disabling reflexes.
pub(crate) struct ReplyTools {
    pub journal: Journal,
    pub impulses: Arc<Impulses>,
    pub reflexes: Arc<Reflexes>,
    /// For the GIF source's key (`gif_search`, with `allowReplyGifs`).
    pub secrets: Secrets,
    /// Speaks an answer to someone who addressed the bot by voice (`voice.speech`).
    pub voice: Arc<crate::voice::Voice>,
}

/// Why the reply prompt could not be made; the turn fails with this text.
#[derive(Debug, thiserror::Error)]
enum RenderError {
    #[error("cannot read the channel history: {0}")]
    History(#[source] crate::store::StoreError),
    #[error("the reply prompt failed to render: {0}")]
    Prompt(#[source] crate::executive::prompts::PromptError),
}

/// What the reply path is built from: the services it answers with, the
/// tables it reads and writes, and the tools an answer may call.
pub struct Services {
    pub speech: Arc<Speech>,
    pub executive: Arc<Executive>,
    pub spine: Arc<Spine>,
    pub settings: Arc<SettingsService>,
    pub store: Stores,
    pub clock: SharedClock,
    pub memory: Arc<Memory>,
    pub tools: ReplyTools,
}

pub struct ReplyHandler {
    speech: Arc<Speech>,
    executive: Arc<Executive>,
    spine: Arc<Spine>,
    settings: Arc<SettingsService>,
    store: Stores,
    clock: SharedClock,
    memory: Arc<Memory>,
    tools: ReplyTools,
    /// Per channel: when people were last told the bot cannot answer, and when it was last addressed.
    notices: Mutex<HashMap<ChannelId, Notice>>,
    /// Per channel: when the model was last asked whether to chime in.
    considered: Mutex<HashMap<ChannelId, DateTime<Utc>>>,
}

#[derive(Serialize)]
struct ReplyPrompt {
    bot_name: String,
    persona: String,
    guild_name: String,
    channel_name: String,
    is_dm: bool,
    unsolicited: bool,
    now: String,
    memory: Vec<String>,
    history: Vec<PromptLine>,
    target: Target,
    /// One line per attachment of the message and the one it replies to.
    attachments: Vec<String>,
    /// Some image is named but not visible to the model.
    images_unseen: bool,
}

#[derive(Serialize)]
struct Target {
    author: String,
    content: String,
}

/// The decision in a reply channel when nobody addressed the bot.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ChimeIn {
    /// true to post `text` now; false to stay quiet.
    speak: bool,
    /// What to say, when speaking.
    #[serde(default)]
    text: String,
    /// Why, in a few words (kept in the bot's journal).
    reason: String,
}

/// When people in a channel were last told the bot cannot answer, and when
/// it was last addressed there.
type Notice = (DateTime<Utc>, DateTime<Utc>);

impl ReplyHandler {
    pub fn new(services: Services) -> Self {
        let Services {
            speech,
            executive,
            spine,
            settings,
            store,
            clock,
            memory,
            tools,
        } = services;
        Self {
            speech,
            executive,
            spine,
            settings,
            store,
            clock,
            memory,
            tools,
            notices: Mutex::new(HashMap::new()),
            considered: Mutex::new(HashMap::new()),
        }
    }

    /// The message's attachments (and those of the message it replies to)
    /// as `role`'s model gets them; unprompted, only named unless
    /// `discord.attachments.readInReplyChannels`.
    async fn attachments(&self, m: &MessagePercept, role: Role, unsolicited: bool) -> Shown {
        let settings = self.settings.for_guild(m.place().guild);
        let reading = if unsolicited && !settings.discord.attachments.read_in_reply_channels {
            Reading::NAMES_ONLY
        } else {
            Reading {
                images: self.executive.sees_images(role),
                files: true,
            }
        };
        attachments::for_message(&self.store.messages, &settings, &m.message, reading).await
    }

    fn render(
        &self,
        m: &MessagePercept,
        unsolicited: bool,
        shown: &Shown,
    ) -> Result<Rendered, RenderError> {
        let place = m.place();
        let settings = self.settings.for_guild(place.guild);
        let history = self
            .store
            .messages
            .recent_messages(
                place.channel,
                settings.executive.reply_history_messages as usize,
            )
            .map_err(RenderError::History)?;
        let prompt = ReplyPrompt {
            bot_name: settings.bot.name.clone(),
            persona: settings.bot.persona.clone(),
            guild_name: place
                .guild
                .and_then(|g| self.store.messages.guild_name(g).ok().flatten())
                .unwrap_or_default(),
            channel_name: m
                .channel_name
                .clone()
                .or_else(|| {
                    self.store
                        .messages
                        .channel_name(place.channel)
                        .ok()
                        .flatten()
                })
                .unwrap_or_else(|| place.channel.to_string()),
            is_dm: place.is_dm(),
            unsolicited,
            now: self.clock.now().format("%Y-%m-%d %H:%M UTC").to_string(),
            memory: self
                .memory
                .for_reply(place.guild, m.message.author_id, &m.message.content),
            history: history.iter().map(PromptLine::from).collect(),
            target: Target {
                author: m.message.author_name.clone(),
                content: m.message.content.clone(),
            },
            attachments: shown.notes.clone(),
            images_unseen: shown.unseen_images,
        };
        self.executive
            .prompts
            .render("reply", &prompt)
            .map_err(RenderError::Prompt)
    }

    fn turn(
        &self,
        m: &MessagePercept,
        rendered: Rendered,
        shown: &Shown,
        role: Role,
        label: &str,
    ) -> Turn {
        let place = m.place();
        let settings = self.settings.for_guild(place.guild);
        let mut turn = Turn::new(
            role,
            place.guild,
            format!("{label} message {}", m.message.id),
        );
        turn.channel = Some(place.channel);
        turn.system = rendered.system;
        turn.messages = vec![shown.user_message(rendered.user)];
        turn.max_steps = settings.executive.max_tool_steps;
        turn.max_calls = settings.executive.max_tool_calls;
        if settings.memory.enabled {
            let reader = match place.guild {
                Some(g) => Reader::Guild(g),
                None => Reader::Dm(m.message.author_id),
            };
            turn.tools.push(memory_search(&self.memory, reader));
        }
        turn
    }

    /// Tools for a conversation someone started (not for deciding whether to chime in).
    fn conversation_tools(&self, m: &MessagePercept) -> Vec<Arc<dyn Tool>> {
        let place = m.place();
        let tz = self.tools.impulses.timezone(place.guild);
        let context = format!(
            "{} said: {}",
            m.message.author_name,
            m.message.content.chars().take(300).collect::<String>()
        );
        let mut tools = vec![
            journal_search(
                &self.tools.journal,
                &(&self.store).into(),
                &self.clock,
                Audience::new(
                    &self.settings.for_guild(place.guild),
                    place.guild,
                    place.channel,
                ),
                tz,
            ),
            add_task(
                &self.tools.impulses,
                place.guild,
                place.channel,
                context,
                m.message.author_id,
            ),
        ];
        if let Some(g) = place.guild.filter(|_| {
            self.tools
                .reflexes
                .may_edit(place.guild, m.message.author_id)
        }) {
            tools.extend(crate::reflexes::tools::for_guild(
                &self.tools.reflexes,
                g,
                &m.message.author_name,
            ));
        }
        if let Some(g) = place.guild {
            let settings = self.settings.for_guild(Some(g));
            let unavailable = gifs::unavailable_for_replies(
                &settings,
                &self.tools.secrets,
                &(&self.store).into(),
                g,
                self.clock.now(),
            );
            if unavailable.is_none() {
                tools.push(gifs::reply_tool(
                    self.settings.clone(),
                    self.tools.secrets.clone(),
                    (&self.store).into(),
                    self.clock.clone(),
                    g,
                ));
            }
        }
        tools
    }

    /// Someone addressed the bot: answer, or say honestly why not.
    async fn answer(&self, m: &MessagePercept) -> Outcome {
        if let Some(why) = self.executive.unavailable(Role::Reply) {
            return self.cannot_answer(m, &why, "no model is available").await;
        }
        let shown = self.attachments(m, Role::Reply, false).await;
        let rendered = match self.render(m, false, &shown) {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        let settings = self.settings.for_guild(m.place().guild);
        let mut turn = self.turn(m, rendered, &shown, Role::Reply, "reply to");
        turn.tools.extend(self.conversation_tools(m));
        let lookups = self.web_lookups(m, &settings, &mut turn);
        // Someone is waiting: when tools would spend what the answer needs, none are offered.
        turn.tools_within_budget = true;
        turn.message = Some(m.message.id);
        let shape = answer_shape(m, &settings);
        let (result, streamed) = match self.streamed(m, shape.clone()) {
            Some(mut streamed) => {
                let sink = streamed.sink();
                turn.sink = Some(sink.clone());
                let turn = async {
                    let result = self.executive.run_turn(turn).await;
                    sink.close();
                    result
                };
                let (result, ()) = tokio::join!(turn, streamed.show());
                (result, Some(streamed))
            }
            None => (self.executive.run_turn(turn).await, None),
        };
        let mut text = match &result.outcome {
            Ok(TurnOutcome::Answer(text)) if !clean_answer(text, &settings.bot.name).is_empty() => {
                crate::speech::as_ended(shape(text), result.stop)
            }
            Ok(TurnOutcome::Answer(_) | TurnOutcome::Final(_)) => String::new(),
            Ok(TurnOutcome::Incomplete(why)) => {
                return self
                    .cannot_answer_after(m, streamed, &result, why, "the model gave no answer")
                    .await;
            }
            Err(e) => {
                let short = match e {
                    ExecError::OverBudget(_) => "I've used up my thinking budget for now",
                    ExecError::UsageUnread(_) => "I can't check my thinking budget",
                    ExecError::Unavailable(_) => "no model is available",
                    ExecError::Provider { .. } => "the model service isn't answering",
                };
                return self
                    .cannot_answer_after(m, streamed, &result, &e.to_string(), short)
                    .await;
            }
        };
        if let Some(l) = &lookups
            && !text.is_empty()
        {
            text = web::cite(&text, &l.used().pages);
        }
        if text.is_empty() {
            return self
                .cannot_answer_after(
                    m,
                    streamed,
                    &result,
                    "the answer was empty",
                    "the model gave no answer",
                )
                .await;
        }
        let outcome = self
            .deliver(
                m,
                &text,
                &result,
                format!("answered {}", m.message.author_name),
                m.addressed.describe(),
                streamed,
            )
            .await;
        if outcome == Outcome::Done {
            self.mark_active(m);
            // Said by voice: also said aloud, if the operator turned that on (the text is out already).
            if let (true, Some(guild)) = (m.is_voice(), m.message.guild) {
                let voice = &self.tools.voice;
                voice
                    .answer_aloud(guild, m.message.author_id, m.message.id, &text)
                    .await;
            }
        }
        outcome
    }

    /// Offers `web_search` and `web_scrape` to this answer when they are on
    /// (see `web`); the turn's other tools are guarded from then on.
    fn web_lookups(
        &self,
        m: &MessagePercept,
        settings: &crate::settings::Settings,
        turn: &mut Turn,
    ) -> Option<Arc<web::Lookups>> {
        if let Some(why) = web::unavailable(&self.settings.global(), settings) {
            tracing::debug!(reason = why, "no web lookups in this answer");
            return None;
        }
        let lookups = web::Lookups::new(
            self.tools.journal.clone(),
            self.tools.secrets.clone(),
            m.place(),
            m.message.id,
            settings,
        );
        turn.tools = lookups.guard(std::mem::take(&mut turn.tools));
        turn.tools.extend(lookups.tools(settings));
        turn.system.push_str("\n\n");
        turn.system.push_str(web::INSTRUCTION);
        Some(lookups)
    }

    /// The answer to `m` streamed as it is written, when it can be (see `speech::stream`).
    fn streamed(
        &self,
        m: &MessagePercept,
        shape: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> Option<Streamed> {
        if !self.executive.can_stream(Role::Reply) {
            return None;
        }
        self.speech.stream(
            m.place(),
            m.reply_target(),
            &format!("reply-{}", m.message.id),
            &[m.message.author_id],
            shape,
        )
    }

    /// No answer after all. If part of one was shown while streaming, the
    /// message says that it broke off and the journal records it; otherwise
    /// the channel is told as usual ([`ReplyHandler::cannot_answer`]).
    async fn cannot_answer_after(
        &self,
        m: &MessagePercept,
        streamed: Option<Streamed>,
        result: &TurnResult,
        why: &str,
        short: &str,
    ) -> Outcome {
        let Some(streamed) = streamed.filter(Streamed::posted) else {
            return self.cannot_answer(m, why, short).await;
        };
        let place = m.place();
        let mut e = Entry::new(Kind::Reply, "the answer broke off while it was shown")
            .place(place.guild, Some(place.channel))
            .message(m.message.id)
            .reason(why.to_string());
        if let Some(id) = result.last_call {
            e = e.model_call(id);
        }
        match streamed.broke_off(short).await {
            Ok(ids) => {
                e = e.data(serde_json::json!({
                    "sent": ids.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
                    "tokens_in": result.tokens.input,
                    "tokens_out": result.tokens.output,
                    "steps": result.steps,
                }));
                self.executive.journal().record(e);
                Outcome::Done
            }
            Err(err) => {
                e.reason = format!("{why}; saying so in the message failed too: {err}");
                self.executive.journal().record(e);
                Outcome::Failed(format!("could not mark the broken answer: {err}"))
            }
        }
    }

    /// Nobody addressed the bot in a reply channel: the model decides whether to join in.
    async fn chime_in(&self, m: &MessagePercept) -> Outcome {
        if self.executive.unavailable(Role::Ambient).is_some() {
            return Outcome::Declined("no model is available to decide whether to chime in".into());
        }
        let shown = self.attachments(m, Role::Ambient, true).await;
        let rendered = match self.render(m, true, &shown) {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        self.lock_considered()
            .insert(m.message.channel, self.clock.now());
        let mut turn = self.turn(m, rendered, &shown, Role::Ambient, "chime in after");
        turn.final_tool = Some(FinalTool::of::<ChimeIn>(
            "chime_in",
            "Decide whether to join the conversation unprompted: speak (with text) or stay quiet.",
        ));
        let result = self.executive.run_turn(turn).await;
        let decision = match &result.outcome {
            Ok(TurnOutcome::Final(v)) => match parse_args::<ChimeIn>(v) {
                Ok(d) => d,
                Err(e) => return Outcome::Failed(e.to_string()),
            },
            Ok(other) => return Outcome::Declined(format!("no chime-in decision: {other:?}")),
            Err(e) => {
                return Outcome::Declined(format!("could not decide whether to chime in: {e}"));
            }
        };
        let settings = self.settings.for_guild(m.place().guild);
        let text = clean_answer(&decision.text, &settings.bot.name);
        if !decision.speak || text.is_empty() {
            let place = m.place();
            let mut e = Entry::new(Kind::Reply, "stayed quiet")
                .place(place.guild, Some(place.channel))
                .message(m.message.id)
                .reason(decision.reason);
            if let Some(id) = result.last_call {
                e = e.model_call(id);
            }
            self.executive.journal().record(e);
            return Outcome::Done;
        }
        let text = voice_addressed(m, &text);
        self.deliver(
            m,
            &text,
            &result,
            format!("chimed in after {}", m.message.author_name),
            &decision.reason,
            None,
        )
        .await
    }

    /// Says `text` (already shaped: see [`answer_shape`]) and journals it
    /// once; a streamed answer is finished in the messages already shown.
    async fn deliver(
        &self,
        m: &MessagePercept,
        text: &str,
        result: &TurnResult,
        summary: String,
        why: &str,
        streamed: Option<Streamed>,
    ) -> Outcome {
        let place = m.place();
        let said = match streamed {
            Some(streamed) => streamed.finish(text).await,
            None => {
                self.speech
                    .say_pinging(
                        place,
                        text,
                        m.reply_target(),
                        &format!("reply-{}", m.message.id),
                        &[m.message.author_id],
                    )
                    .await
            }
        };
        match said {
            Ok(ids) => {
                let mut e = Entry::new(Kind::Reply, summary)
                    .place(place.guild, Some(place.channel))
                    .message(m.message.id)
                    .reason(why.to_string())
                    .data(serde_json::json!({
                        "sent": ids.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
                        "tokens_in": result.tokens.input,
                        "tokens_out": result.tokens.output,
                        "steps": result.steps,
                    }));
                if let Some(id) = result.last_call {
                    e = e.model_call(id);
                }
                self.executive.journal().record(e);
                Outcome::Done
            }
            Err(e) => Outcome::Failed(format!("could not send the answer: {e}")),
        }
    }

    /// Tells the channel, once per conversation, that the bot cannot answer;
    /// afterwards reacts 💤. `why` goes to the journal, `short` to people.
    async fn cannot_answer(&self, m: &MessagePercept, why: &str, short: &str) -> Outcome {
        let place = m.place();
        let now = self.clock.now();
        let window = chrono::Duration::minutes(i64::from(
            self.settings
                .for_guild(place.guild)
                .attention
                .active_conversation_minutes,
        ));
        let entry = Entry::new(Kind::Reply, "")
            .place(place.guild, Some(place.channel))
            .message(m.message.id)
            .reason(why.to_string());
        if self.first_notice_in_conversation(place.channel, now, window) {
            let text = format!("Sorry, I can't answer right now: {short}.");
            if let Err(e) = self
                .speech
                .say(
                    place,
                    &text,
                    m.reply_target(),
                    &format!("cannot-{}", m.message.id),
                )
                .await
            {
                return Outcome::Failed(format!("could not say that the bot cannot answer: {e}"));
            }
            self.executive.journal().record(Entry {
                summary: "told the channel it cannot answer".into(),
                ..entry
            });
        } else if let Some(target) = m.reply_target() {
            if let Err(e) = self
                .speech
                .transport()
                .react(place.channel, target, "💤")
                .await
            {
                return Outcome::Failed(format!("could not react: {e}"));
            }
            self.executive.journal().record(Entry {
                summary: "reacted 💤: cannot answer, channel already told".into(),
                ..entry
            });
        }
        Outcome::Done
    }

    fn first_notice_in_conversation(
        &self,
        channel: ChannelId,
        now: DateTime<Utc>,
        window: chrono::Duration,
    ) -> bool {
        let mut notices = self.notices.lock().unwrap_or_else(|p| p.into_inner());
        match notices.get_mut(&channel) {
            Some((_, last_addressed)) if now - *last_addressed < window => {
                *last_addressed = now;
                false
            }
            _ => {
                notices.insert(channel, (now, now));
                true
            }
        }
    }

    /// Someone addressed the bot where it cannot speak now: one 💤 on their
    /// message says so, and no model is paid for an answer nobody would see.
    async fn undeliverable(&self, m: &MessagePercept, why: &str) -> Outcome {
        let place = m.place();
        let mut entry = Entry::new(Kind::Reply, "did not answer: it could not be delivered")
            .place(place.guild, Some(place.channel))
            .message(m.message.id)
            .reason(why.to_string());
        if let Some(target) = m.reply_target() {
            match self
                .speech
                .transport()
                .react(place.channel, target, "💤")
                .await
            {
                Ok(()) => entry.summary = "reacted 💤: the answer could not be delivered".into(),
                Err(e) => entry.reason = format!("{why}; the 💤 reaction failed too: {e}"),
            }
        }
        self.executive.journal().record(entry);
        Outcome::Done
    }

    /// What a refused person is told: the refusal's sentence, or under
    /// `discord.dms` `pairing` a new code and how to have it approved (the
    /// sentence alone if the code cannot be kept: the entry says why).
    fn explanation(&self, m: &MessagePercept, r: &Refused, entry: &mut Entry) -> String {
        if !r.may_pair {
            return r.tell.to_string();
        }
        let now = self.clock.now();
        let minutes = self.settings.global().discord.pairing_code_minutes;
        let code = PairingCode {
            code: crate::permissions::new_pairing_code(),
            user: m.message.author_id,
            user_name: m.message.author_name.clone(),
            created_at: now,
            expires_at: now + chrono::Duration::minutes(i64::from(minutes)),
        };
        match self.store.people.save_pairing_code(&code) {
            Ok(()) => {
                entry.reason.push_str("; gave them a pairing code");
                format!(
                    "I don't know you yet. Your pairing code is {c}; it is good for {minutes} minutes. \
                     Ask my owner to approve it with `/ambient pair {c}`, then write again.",
                    c = code.code
                )
            }
            Err(e) => {
                entry
                    .reason
                    .push_str(&format!("; could not keep a pairing code: {e}"));
                r.tell.to_string()
            }
        }
    }

    /// The author may not talk to the bot here (`permissions::refusal`):
    /// no model is asked; the gate is journaled, and someone who addressed
    /// the bot is told why at most once a day (the store keeps when).
    async fn refused(&self, m: &MessagePercept, r: &Refused, unprompted: bool) -> Outcome {
        let place = m.place();
        let author = m.message.author_id;
        let mut entry = Entry::new(
            Kind::Gate,
            format!(
                "did not answer {}: the {} gate",
                m.message.author_name, r.gate
            ),
        )
        .place(place.guild, Some(place.channel))
        .message(m.message.id)
        .reason(r.reason.clone())
        .data(serde_json::json!({ "gate": r.gate, "user": author.to_string() }));
        let outcome = if unprompted {
            Outcome::Done
        } else {
            match self
                .store
                .people
                .claim_access_notice(author, self.clock.now())
            {
                Ok(false) => {
                    entry.reason.push_str("; already told today");
                    Outcome::Done
                }
                // Fail closed: an explanation that cannot be counted is not given.
                Err(e) => {
                    entry.reason.push_str(&format!(
                        "; store write failed: when they were last told: {e}; keeping quiet"
                    ));
                    Outcome::Done
                }
                Ok(true) => match self
                    .speech
                    .say(
                        place,
                        &self.explanation(m, r, &mut entry),
                        m.reply_target(),
                        &format!("refused-{}", m.message.id),
                    )
                    .await
                {
                    Ok(_) => {
                        entry.reason.push_str("; told them why");
                        Outcome::Done
                    }
                    Err(e) => {
                        entry
                            .reason
                            .push_str(&format!("; telling them failed: {e}"));
                        Outcome::Failed(format!("could not say why the bot does not answer: {e}"))
                    }
                },
            }
        };
        self.executive.journal().record(entry);
        outcome
    }

    fn lock_considered(&self) -> std::sync::MutexGuard<'_, HashMap<ChannelId, DateTime<Utc>>> {
        self.considered.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the model was asked about chiming in here too recently to ask again.
    fn chime_in_cooling(&self, channel: ChannelId, settings: &crate::settings::Settings) -> bool {
        let cooldown =
            chrono::Duration::minutes(i64::from(settings.attention.chime_in_cooldown_minutes));
        self.lock_considered()
            .get(&channel)
            .is_some_and(|at| self.clock.now() - *at < cooldown)
    }

    fn mark_active(&self, m: &MessagePercept) {
        let place = m.place();
        let minutes = self
            .settings
            .for_guild(place.guild)
            .attention
            .active_conversation_minutes;
        self.spine.active.mark(
            place.guild,
            place.channel,
            self.clock.now() + chrono::Duration::minutes(i64::from(minutes)),
        );
    }
}

/// What an answer to `m` says, from the model's text: an echoed name
/// removed, addressed to its speaker if said aloud. Applied alike to a
/// streamed draft and to the final text (which may then be cut:
/// [`crate::speech::as_ended`]).
fn answer_shape(
    m: &MessagePercept,
    settings: &crate::settings::Settings,
) -> impl Fn(&str) -> String + Clone + Send + Sync + 'static {
    let name = settings.bot.name.clone();
    let speaker = m.is_voice().then_some(m.message.author_id);
    move |raw: &str| {
        let text = clean_answer(raw, &name);
        match speaker {
            Some(who) => format!("<@{who}> {text}"),
            None => text,
        }
    }
}

/// Said aloud: the answer comes as text, addressed to the speaker.
fn voice_addressed(m: &MessagePercept, text: &str) -> String {
    if m.is_voice() {
        format!("<@{}> {text}", m.message.author_id)
    } else {
        text.to_string()
    }
}

/// Removes a leading "name:" the model may echo from the transcript format.
fn clean_answer(text: &str, bot_name: &str) -> String {
    let t = text.trim();
    let lower = t.to_lowercase();
    let name = bot_name.to_lowercase();
    for prefix in [
        format!("{name}:"),
        format!("**{name}**:"),
        format!("{name} (you):"),
    ] {
        if lower.starts_with(&prefix) {
            return t[prefix.len()..].trim().to_string();
        }
    }
    t.to_string()
}

#[async_trait]
impl Handler for ReplyHandler {
    fn name(&self) -> String {
        "executive:reply".into()
    }

    fn order(&self) -> i32 {
        ORDER_EXECUTIVE
    }

    fn wants(&self, item: &Attended) -> Option<String> {
        let Input::Percept(Percept::Message(m)) = &item.input else {
            return None;
        };
        if m.message.author_is_bot {
            return None;
        }
        if let Some(why) = &item.escalated {
            return Some(format!("escalated by {why}"));
        }
        if m.addressed.is_addressed() {
            return Some(format!("{}: answered at once", m.addressed.describe()));
        }
        let settings = self.settings.for_guild(m.message.guild);
        let threshold = settings.attention.unsolicited_reply_threshold;
        (settings.permissions.replies.reply_channel_ids.contains(&m.message.channel)
            && item.salience.reaches(threshold)
            && !self.chime_in_cooling(m.message.channel, &settings))
            .then(|| {
                format!(
                    "reply channel: salience {:.2} reaches the unsolicited-reply bar {threshold:.2}; the model decides whether to chime in",
                    item.salience.score
                )
            })
    }

    async fn handle(&self, item: &Attended) -> Outcome {
        let Input::Percept(Percept::Message(m)) = &item.input else {
            return Outcome::Declined("not a message".into());
        };
        let unprompted = !m.addressed.is_addressed() && item.escalated.is_none();
        if let Err(why) = self.speech.deliverable(m.place()) {
            if unprompted {
                return Outcome::Declined(format!("would not be delivered: {why}"));
            }
            return self.undeliverable(m, &why.to_string()).await;
        }
        let place = m.place();
        let settings = self.settings.for_guild(place.guild);
        if let Some(refused) = crate::permissions::refusal(&settings, &self.store.people, m) {
            return self.refused(m, &refused, unprompted).await;
        }
        let now = self.clock.now();
        if unprompted {
            if let Err(r) = crate::courtesy::unprompted_to(
                &settings,
                &(&self.store).into(),
                place.guild,
                place.channel,
                Some(m.message.author_id),
                now,
            ) {
                return Outcome::Declined(format!("did not chime in ({} gate): {r}", r.gate));
            }
        } else if let (Some(_), Err(r)) = (place.guild, crate::courtesy::answer(&settings, now)) {
            return self.undeliverable(m, &r.reason).await;
        }
        if unprompted {
            return self.chime_in(m).await;
        }
        self.mark_active(m);
        let _typing = self.speech.transport().typing(m.message.channel);
        self.answer(m).await
    }
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub(crate) struct Stores {
    pub messages: MessageStore,
    pub journal: JournalStore,
    pub usage: UsageStore,
    pub initiative: InitiativeStore,
    pub people: PeopleStore,
}

cut!(Stores => crate::courtesy::Stores { messages, people });

cut!(Stores => crate::executive::Stores { messages, usage });

cut!(Stores => crate::initiative::Stores { messages, journal, usage, initiative, people });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoed_name_prefixes_are_removed() {
        assert_eq!(clean_answer("ambient: hey there", "ambient"), "hey there");
        assert_eq!(clean_answer("**Ambient**: yo", "ambient"), "yo");
        assert_eq!(
            clean_answer("ambiently speaking, yes", "ambient"),
            "ambiently speaking, yes"
        );
    }
}
