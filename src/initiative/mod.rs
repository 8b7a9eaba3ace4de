//! The initiative engine: the ambient text cycle (seed: ambient-text-cycle.md).
//!
//! ```text
//! tick (every initiative.text.tickSeconds, never overlapping, no replay)
//!   └─ per guild: gates ──stop──► journal the reason (no model call)
//!                    └─pass──► Impulse(InitiativeTick) into attention
//! attention (people first) ─► InitiativeHandler ─► consider:
//!   context ─► bounded tool loop ─► decide: post / hold / drop
//!   post: outbox row, then send with its nonce ─► initiative_post
//!   hold / drop / no decision ─► initiative_skip
//! ```
//! A guild's tick is not queued again while its previous consideration is
//! in flight, and one consideration is bounded in time. At most one pending
//! thought per guild; it blocks fresh synthesis for its own guild only.

use crate::store::cut;
use crate::store::{InitiativeStore, JournalStore, MessageStore, PeopleStore, UsageStore};
pub(crate) mod community;
pub(crate) mod context;
pub(crate) mod decision;
pub(crate) mod gates;
pub(crate) mod gifs;
pub mod media;
use crate::vocab::pending;
pub(crate) mod tools;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::attention::router::ORDER_IMPULSE;
use crate::attention::{Attended, Handler, Impulse, ImpulseKind, Input, Outcome, Place, Spine};
use crate::chat::OutgoingFile;
use crate::clock::{Chance, SharedClock};
use crate::discovery::Discovery;
use crate::executive::prompts::Rendered;
use crate::executive::tools::{FinalTool, Tool};
use crate::executive::{CallContext, Executive, Message, Turn, TurnOutcome};
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::journal::Journal;
use crate::memory::Memory;
use crate::memory::search::Reader;
use crate::memory::tools::memory_search;
use crate::settings::Role;
use crate::settings::{Execution, Secrets, Settings, SettingsService};
use crate::speech::Speech;
use crate::store::initiative::OutboxPost;
use crate::vocab::journal::{Entry, Filter, Kind};
use decision::{Checked, Decision, Pool};
use gates::Verdict;
use pending::{MediaKind, PendingThought};

/// How long one consideration (context, model, posting) may take.
const CONSIDERATION_LIMIT: Duration = Duration::from_secs(300);

/// An outbox row older than this at start is not resent: the post would be stale.
const RESEND_WINDOW_MINUTES: i64 = 10;

/// Discord drops a repeated nonce for "a few minutes"; past this, a resend
/// first looks in the channel for the post.
const NONCE_WINDOW_MINUTES: i64 = 2;

/// How many of the channel's latest messages are searched for an unconfirmed post.
const LOOK_BACK_MESSAGES: usize = 50;

pub struct Initiative {
    settings: Arc<SettingsService>,
    store: Stores,
    journal: Journal,
    clock: SharedClock,
    chance: Arc<Chance>,
    spine: Arc<Spine>,
    executive: Arc<Executive>,
    speech: Arc<Speech>,
    secrets: Secrets,
    discovery: Arc<Discovery>,
    memory: Arc<Memory>,
    in_flight: Mutex<HashSet<GuildId>>,
    /// The gate that last stopped each guild, so a repeated stop is journaled once.
    last_gate: Mutex<HashMap<GuildId, (&'static str, String)>>,
}

impl Initiative {
    pub fn new(services: Services) -> Arc<Self> {
        let Services {
            settings,
            store,
            journal,
            clock,
            chance,
            spine,
            executive,
            speech,
            secrets,
            discovery,
            memory,
        } = services;
        Arc::new(Self {
            settings,
            store,
            journal,
            clock,
            chance,
            spine,
            executive,
            speech,
            secrets,
            discovery,
            memory,
            in_flight: Mutex::new(HashSet::new()),
            last_gate: Mutex::new(HashMap::new()),
        })
    }

    /// At start: drop pending thoughts that expired while the bot was down,
    /// and settle posts that were recorded but never confirmed sent.
    pub async fn recover(&self) {
        let now = self.clock.now();
        for p in self.store.initiative.pending_thoughts().unwrap_or_default() {
            if p.is_expired(now) {
                // Harmless if lost: an expired thought is never posted, and the tick drops it again.
                let _ = self.store.initiative.delete_pending_thought(p.guild);
                self.skip(
                    p.guild,
                    p.channel,
                    "dropped a held thought that expired while I was away",
                    &p.last_reason,
                );
            }
        }
        self.settle_unconfirmed().await;
    }

    /// Settles every post recorded and not confirmed sent whose guild is not
    /// posting right now: at a start (a crash between send and confirm), and
    /// before each tick (a confirmation the store refused must not wait for
    /// a restart, and until it is settled the guild's looks stay stopped).
    /// Unreadable, the outbox settles nothing now: the tick's gate stops those
    /// guilds and journals the failed read.
    pub async fn settle_unconfirmed(&self) {
        let now = self.clock.now();
        for post in self.store.initiative.outbox_unsent().unwrap_or_default() {
            if !self.lock_in_flight().contains(&post.guild) {
                self.settle(post, now).await;
            }
        }
    }

    /// One post recorded but not confirmed before the bot stopped. Its guild's
    /// held thought is what was being posted: it is settled here, whatever
    /// became of the post, so the model is never shown it again to post twice.
    async fn settle(&self, post: OutboxPost, now: DateTime<Utc>) {
        if let Ok(Some(held)) = self.store.initiative.pending_thought(post.guild) {
            // Losing this delete only risks the double post it exists to prevent; a store
            // that cannot delete cannot record the post either, and the tick journals that.
            let _ = self.store.initiative.delete_pending_thought(post.guild);
            self.skip(
                post.guild,
                held.channel,
                "settled a held thought: it was being posted, and the post was never confirmed sent",
                &format!("draft: {}", held.draft),
            );
        }
        let age = now - post.created_at;
        if age > chrono::Duration::minutes(RESEND_WINDOW_MINUTES) {
            // Harmless to lose: the row would be settled the same way at the next start.
            let _ = self.store.initiative.outbox_delete(&post.nonce);
            self.journal.record(
                Entry::new(Kind::Error, "a post may not have been sent")
                    .place(Some(post.guild), Some(post.channel))
                    .reason("the bot stopped between recording and confirming it, too long ago to resend safely"),
            );
            return;
        }
        if age > chrono::Duration::minutes(NONCE_WINDOW_MINUTES)
            && let Some(found) = self.find_in_channel(&post).await
        {
            self.confirmed(
                &post,
                found,
                "found in the channel after a restart; not sent again",
            );
            return;
        }
        // Sent again, it is unprompted words like any post: not into quiet
        // hours or a hush that began since. It is let go, as one too old is.
        let settings = self.settings.for_guild(Some(post.guild));
        if let Err(r) = crate::courtesy::unprompted(
            &settings,
            &(&self.store).into(),
            post.guild,
            post.channel,
            now,
        ) {
            // Harmless to lose: the row would be settled the same way at the next look.
            let _ = self.store.initiative.outbox_delete(&post.nonce);
            let why = format!("not sent again: {} gate: {}", r.gate, r.reason);
            self.journal.record(
                Entry::new(Kind::Error, "a post may not have been sent")
                    .place(Some(post.guild), Some(post.channel))
                    .reason(why),
            );
            return;
        }
        // Same nonce as the first attempt: within the window, if that one did go out, Discord drops this one.
        let place = Place {
            guild: Some(post.guild),
            channel: post.channel,
        };
        if let Ok(ids) = self.speech.say(place, &post.text, None, &post.nonce).await
            && let Some(first) = ids.first()
        {
            self.confirmed(&post, *first, "it was recorded but not confirmed before the bot stopped; sent again with the same nonce");
        }
    }

    /// The bot's own message in the post's channel that begins the post, if the channel has one.
    async fn find_in_channel(&self, post: &OutboxPost) -> Option<MessageId> {
        let history = self
            .speech
            .transport()
            .history(post.channel, LOOK_BACK_MESSAGES)
            .await
            .ok()?;
        let me = self.speech.transport().me().id;
        // Compared as it was posted: speech neutralised the mentions (an
        // initiative post pings nobody) before sending, so `@everyone` in the
        // outbox is `@\u{200D}everyone` in the channel.
        let posted = crate::speech::neutralise_mentions(&post.text, &[], |u| {
            self.store.messages.author_name(u).ok().flatten()
        });
        let first_part = crate::speech::split_message(posted.trim(), crate::speech::MESSAGE_LIMIT)
            .into_iter()
            .next()?;
        history
            .into_iter()
            .find(|m| {
                m.author_id == me
                    && m.created_at >= post.created_at
                    && m.content.trim() == first_part.trim()
            })
            .map(|m| m.id)
    }

    fn confirmed(&self, post: &OutboxPost, first: MessageId, how: &str) {
        // Harmless to lose: an unconfirmed row is settled again before the
        // guild's next look (sent again under its nonce, or looked for in
        // the channel), and its thought was let go before the resend.
        let _ = self
            .store
            .initiative
            .outbox_settle(&post.nonce, post.guild, first);
        // A post whose confirmation alone failed was journaled when it went
        // out: a second line would count it twice against maxPostsPerDay.
        let journaled = self.store.journal.journal_query(&Filter {
            kinds: vec![Kind::InitiativePost],
            message: Some(first),
            ..Default::default()
        });
        if journaled.is_ok_and(|found| !found.is_empty()) {
            return;
        }
        // `/ambient why` on it must find it, like any post.
        self.journal.record(
            Entry::new(Kind::InitiativePost, "posted a thought after a restart")
                .place(Some(post.guild), Some(post.channel))
                .reason(how)
                .message(first),
        );
    }

    /// Runs ticks until `shutdown`. Missed ticks are not replayed: the next
    /// one simply happens a tick later.
    pub(crate) async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        self.recover().await;
        let mut changes = self.settings.changes();
        loop {
            self.settle_unconfirmed().await;
            self.tick();
            let ticked = tokio::time::Instant::now();
            loop {
                let seconds = self.settings.global().initiative.text.tick_seconds.max(1);
                tokio::select! {
                    _ = tokio::time::sleep_until(ticked + Duration::from_secs(u64::from(seconds))) => break,
                    // A reloaded `tickSeconds` counts from the last tick, not after the old wait.
                    _ = changes.next() => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
    }

    /// One tick: the gates for every known guild; those that pass are queued
    /// in attention as an initiative impulse. Cheap and synchronous.
    pub fn tick(&self) -> Vec<(GuildId, Verdict)> {
        let guilds = self.store.messages.known_guilds().unwrap_or_default();
        guilds
            .into_iter()
            .filter_map(|(g, _)| self.tick_guild(g).map(|v| (g, v)))
            .collect()
    }

    fn tick_guild(&self, guild: GuildId) -> Option<Verdict> {
        if self.lock_in_flight().contains(&guild) {
            return None;
        }
        let settings = self.settings.for_guild(Some(guild));
        let now = self.clock.now();
        let verdict = match self.look(guild, &settings, now) {
            Ok(verdict) => verdict,
            Err(refused) => Verdict::Stop {
                gate: refused.gate,
                reason: refused.reason,
            },
        };
        match &verdict {
            Verdict::Stop { gate, reason } => self.note_gate(guild, gate, reason),
            Verdict::Revisit { .. } | Verdict::Fresh { .. } => {
                self.lock_last_gate().remove(&guild);
                self.lock_in_flight().insert(guild);
                let what = if matches!(verdict, Verdict::Revisit { .. }) {
                    "revisit the held thought"
                } else {
                    "fresh thought"
                };
                let mut impulse = Impulse::new(ImpulseKind::InitiativeTick, Some(guild), now);
                impulse.detail = what.into();
                self.spine.submit(Input::Impulse(impulse));
            }
        }
        Some(verdict)
    }

    /// The gates for `guild` on what the store says now; a read that fails
    /// is the refusal (see `gates`).
    fn look(
        &self,
        guild: GuildId,
        settings: &Settings,
        now: DateTime<Utc>,
    ) -> Result<Verdict, crate::courtesy::Refusal> {
        let mut pending = self
            .store
            .initiative
            .pending_thought(guild)
            .map_err(|e| crate::courtesy::Refusal::read_failed("the held thought", &e))?;
        if let Some(p) = pending.as_ref().filter(|p| p.is_expired(now)) {
            // Harmless if lost: an expired thought is never posted, and the next tick drops it again.
            let _ = self.store.initiative.delete_pending_thought(guild);
            self.skip(
                guild,
                p.channel,
                &format!(
                    "dropped a held thought: it expired after {} min",
                    settings.initiative.text.pending_thought_max_age_minutes
                ),
                &format!("draft: {}", p.draft),
            );
            pending = None;
        }
        let role = decider(settings);
        let reads = gates::Reads::read(&self.store, settings, guild, now)?;
        let closed: Vec<ChannelId> = gates::eligible_pool(settings, &reads.guild_channels)
            .into_iter()
            .filter(|c| {
                let place = Place {
                    guild: Some(guild),
                    channel: *c,
                };
                self.speech.deliverable(place).is_err()
            })
            .collect();
        Ok(gates::evaluate(
            &gates::Inputs {
                settings,
                guild_channels: &reads.guild_channels,
                now,
                posts_last_24h: reads.posts_last_24h,
                last_considered: reads.last_considered,
                pending: pending.as_ref(),
                active: &self.spine.active.active_channels(Some(guild), now),
                closed: &closed,
                model_unavailable: self.executive.unavailable(role),
                over_budget: self.executive.over_budget(
                    &CallContext::new(role, Some(guild)),
                    self.executive.likely_call_tokens(role),
                ),
                server_hush: reads.room.server_hush,
                hushed: &reads.room.hushed,
                last_human: reads.room.last_human,
                unsettled: reads.unsettled,
                unanswered: &reads.unanswered,
            },
            &self.chance,
        ))
    }

    /// Until when a look at `guild`, stopped at `gate` now, stops there
    /// again if nobody speaks, the bot says nothing and nothing is spent —
    /// as far as that gate and the gates before it go (quiet hours aside:
    /// the caller watches them). `None`: for as long as that lasts; an
    /// instant not after now: not known, look again. The replay skips
    /// ticks up to here. The gates before these only stay open with time
    /// (a conversation ends, an hourly cap frees, a hush ends, the daily
    /// count and the spend fall) except the room, which empties; a held
    /// thought, which would be looked at before the cooldown, is the
    /// caller's to rule out.
    pub(crate) fn stops_until(&self, guild: GuildId, gate: &str) -> Option<DateTime<Utc>> {
        let settings = self.settings.for_guild(Some(guild));
        let now = self.clock.now();
        let held = match gate {
            "daily_cap" => gates::daily_cap_opens_at(&self.store.journal, &settings, guild, now),
            "budget" => {
                let role = decider(&settings);
                let estimate = self.executive.likely_call_tokens(role);
                Ok(self
                    .executive
                    .fits_budget_again_at(&CallContext::new(role, Some(guild)), estimate))
            }
            "cooldown" => self.store.initiative.last_considered(guild).map(|last| {
                last.map(|l| gates::cooldown_ends_at(&settings, l))
                    .or(Some(now))
            }),
            _ => return Some(now),
        };
        let room = self
            .store
            .messages
            .guild_channels(guild)
            .map_err(|e| crate::courtesy::Refusal::read_failed("the server's channels", &e))
            .and_then(|channels| {
                let eligible = gates::eligible_pool(&settings, &channels);
                gates::Room::look(&self.store, &settings, guild, &eligible, now)
            });
        match (held, room) {
            (Ok(held), Ok(room)) => [held, gates::room_empties_at(&settings, room.last_human)]
                .into_iter()
                .flatten()
                .min(),
            // A read that failed is a doubt: look again.
            _ => Some(now),
        }
    }

    fn note_gate(&self, guild: GuildId, gate: &'static str, reason: &str) {
        // Every stop is counted; only a change of gate is journaled.
        self.journal.metrics().gate_refused(gate);
        let mut last = self.lock_last_gate();
        if last.get(&guild).is_some_and(|(g, _)| *g == gate) {
            return;
        }
        last.insert(guild, (gate, reason.to_string()));
        drop(last);
        self.journal.record(
            Entry::new(Kind::Gate, format!("initiative stopped at the {gate} gate"))
                .guild(Some(guild))
                .reason(reason),
        );
    }

    /// The consideration a passed tick asked for: context, model, decision.
    pub(crate) async fn consider(&self, guild: GuildId) {
        let settings = self.settings.for_guild(Some(guild));
        let now = self.clock.now();
        let read = self
            .store
            .initiative
            .pending_thought(guild)
            .and_then(|pending| {
                let pool = self.open_pool(&settings, guild, now)?;
                Ok((pending.filter(|p| !p.is_expired(now)), pool))
            });
        let (pending, pool) = match read {
            Ok(read) => read,
            Err(e) => {
                let refused =
                    crate::courtesy::Refusal::read_failed("the held thought or the pool", &e);
                return self.note_gate(guild, refused.gate, &refused.reason);
            }
        };
        if pool.channels.is_empty() {
            self.note_gate(
                guild,
                "active",
                "since the tick, people started talking with the bot in every eligible channel, or it was hushed or quiet hours began",
            );
            return;
        }
        // Unrecorded, the cooldown gate would let every tick consult the model.
        if let Err(e) = self.store.initiative.set_last_considered(guild, now) {
            return self.write_failed(guild, None, "record this consideration", e);
        }
        let (mut tools, mut capabilities) = self.capabilities(&settings, guild, now);
        let sources = self.sources(guild, pending.as_ref(), now, &mut tools, &mut capabilities);
        let prompt = context::assemble(context::Request {
            settings: &settings,
            store: &self.store,
            guild,
            pool: &pool.channels,
            pending: pending.as_ref(),
            now,
            capabilities,
            sources,
        });
        let rendered = match self.executive.prompts.render("initiative", &prompt) {
            Ok(r) => r,
            Err(e) => {
                let summary = "the initiative prompt failed to render";
                return self.end_look(
                    Entry::new(Kind::Error, summary)
                        .place(Some(guild), None)
                        .reason(e.to_string()),
                    Look::Failed,
                );
            }
        };
        let max_chars = settings.initiative.text.max_post_chars as usize;
        let Some((decision, last_call)) = self
            .decide(&settings, guild, &pool, rendered, tools, max_chars)
            .await
        else {
            return;
        };
        match decision::check(&decision, &pool, max_chars) {
            Ok(checked) => self.act(guild, checked, pending, last_call).await,
            Err(why) => self.end_look(
                Entry::new(Kind::InitiativeSkip, "rejected a decision")
                    .place(Some(guild), None)
                    .reason(why.to_string()),
                Look::Rejected,
            ),
        }
    }

    /// The channels an unprompted post may go to now: eligible, nobody
    /// talking with the bot there, and not hushed or in quiet hours (either
    /// may have begun since the tick queued this: still nothing paid).
    fn open_pool(
        &self,
        settings: &Settings,
        guild: GuildId,
        now: DateTime<Utc>,
    ) -> Result<Pool, crate::store::StoreError> {
        let active = self.spine.active.active_channels(Some(guild), now);
        let guild_channels = self.store.messages.guild_channels(guild)?;
        Ok(Pool {
            channels: gates::eligible_pool(settings, &guild_channels)
                .into_iter()
                .filter(|c| !active.contains(c))
                .filter(|c| {
                    crate::courtesy::unprompted(settings, &(&self.store).into(), guild, *c, now)
                        .is_ok()
                })
                .map(|c| {
                    (
                        c,
                        self.store
                            .messages
                            .channel_name(c)
                            .ok()
                            .flatten()
                            .unwrap_or_else(|| c.to_string()),
                    )
                })
                .collect(),
        })
    }

    /// CAPABILITIES: what media can be asked for and why not, and the
    /// curiosity and curation tools with their lines (the model is told
    /// what it cannot do, so it does not ask for it).
    fn capabilities(
        &self,
        settings: &Settings,
        guild: GuildId,
        now: DateTime<Utc>,
    ) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
        let media_state =
            media::MediaState::now(settings, &self.secrets, &self.store.usage, guild, now);
        let mut capabilities: Vec<String> = [MediaKind::Image, MediaKind::Video, MediaKind::Gif]
            .into_iter()
            .map(
                |kind| match media::availability(settings, &media_state, kind) {
                    // A GIF is found by searching, not drawn: its prompt is search words.
                    Ok(()) if kind == MediaKind::Gif => "gif: you may ask for one with your post (media.kind \"gif\" and a prompt of a few search words; its link is added to your text)".to_string(),
                    Ok(()) => format!(
                        "{}: you may ask for one with your post (media.kind \"{}\" and a prompt)",
                        kind.as_str(),
                        kind.as_str()
                    ),
                    Err(why) => format!("{}: not available — {why}", kind.as_str()),
                },
            )
            .collect();
        let (mut tools, tool_lines) = tools::curiosity(settings, &self.discovery.fetcher());
        capabilities.extend(tool_lines);
        if settings.initiative.discovery.allow_self_curation {
            tools.extend(crate::discovery::curation::tools(&self.discovery, guild));
            capabilities.push(format!(
                "discovery_source_list / _add / _remove: curate your own feed (at most {} sources of a kind; the operator's sources stay)",
                settings.initiative.discovery.max_sources_per_type
            ));
        } else {
            capabilities.push("feed curation: off (initiative.discovery.allowSelfCuration)".into());
        }
        (tools, capabilities)
    }

    /// The material to think with: the feed matched to the community's
    /// interests this week, and what memory holds on those topics (with
    /// `memory_search` offered when memory exists).
    fn sources(
        &self,
        guild: GuildId,
        pending: Option<&PendingThought>,
        now: DateTime<Utc>,
        tools: &mut Vec<Arc<dyn Tool>>,
        capabilities: &mut Vec<String>,
    ) -> context::Sources {
        let interests = community::interests(
            &self.store.messages,
            guild,
            now - chrono::Duration::days(7),
            500,
            8,
        );
        let words: Vec<String> = interests.words().map(String::from).collect();
        let (feed, feed_sources) = match self.discovery.prompt_sections(guild, &words, now) {
            Some((f, s)) => (Some(f), Some(s)),
            None => (None, None),
        };
        let topics = format!(
            "{} {}",
            words.join(" "),
            pending.map(|p| p.draft.as_str()).unwrap_or("")
        );
        let (memory, guidance, behavioral) = match self.memory.for_initiative(guild, &topics) {
            Some((m, g, b)) => {
                tools.push(memory_search(&self.memory, Reader::Guild(guild)));
                capabilities.push("memory_search: look something up in what you remember".into());
                (Some(m), g, b)
            }
            None => (None, Vec::new(), Vec::new()),
        };
        context::Sources {
            feed,
            feed_sources,
            memory,
            guidance,
            behavioral,
            interests,
        }
    }

    /// The bounded tool loop that ends in `decide`: the decision and the
    /// usage record of its model call, or `None` (each reason journaled)
    /// when there is no usable decision. Decisions `check` rejected along
    /// the way (the model was told and tried again) are journaled too.
    async fn decide(
        &self,
        settings: &Settings,
        guild: GuildId,
        pool: &Pool,
        rendered: Rendered,
        tools: Vec<Arc<dyn Tool>>,
        max_chars: usize,
    ) -> Option<(Decision, Option<i64>)> {
        let rejections = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut turn = Turn::new(
            decider(settings),
            Some(guild),
            format!("initiative in guild {guild}"),
        );
        turn.system = rendered.system;
        // A consideration starts cold: the operator may give it what just happened here.
        let context = crate::journal::stream::prefix_for(
            &self.store.journal,
            settings,
            turn.ctx.role,
            // It may post in any open channel: only what those could see.
            &crate::journal::summary::Audience::public(settings, guild),
            self.clock.now(),
        );
        turn.messages = vec![Message::user(match context {
            Some(c) => format!("{c}\n{}", rendered.user),
            None => rendered.user,
        })];
        turn.tools = tools;
        turn.final_tool = Some(decide_tool(pool.clone(), max_chars, rejections.clone()));
        turn.max_steps = settings.initiative.text.max_tool_steps;
        turn.max_calls = settings.initiative.text.max_tool_calls;
        turn.continuation = Some(
            "You stopped without calling decide. If you are done thinking, call decide now (post, hold or drop). \
             If you are not done, continue what you were doing."
                .into(),
        );
        let result = self.executive.run_turn(turn).await;
        for reason in rejections
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            self.skip(guild, None, "rejected a decision", &reason);
        }
        let (label, why, look) = match result.outcome {
            Ok(TurnOutcome::Final(v)) => match serde_json::from_value::<Decision>(v) {
                Ok(d) => return Some((d, result.last_call)),
                Err(e) => ("no usable decision", e.to_string(), Look::NoDecision),
            },
            Ok(TurnOutcome::Incomplete(why)) => ("no decision", why, Look::NoDecision),
            Ok(TurnOutcome::Answer(_)) => (
                "no decision",
                "the model answered without deciding".to_string(),
                Look::NoDecision,
            ),
            Err(e) => ("could not consult the model", e.to_string(), Look::Failed),
        };
        self.end_look(
            Entry::new(Kind::InitiativeSkip, label)
                .place(Some(guild), None)
                .reason(&why),
            look,
        );
        None
    }

    async fn act(
        &self,
        guild: GuildId,
        checked: Checked,
        pending: Option<PendingThought>,
        model_call: Option<i64>,
    ) {
        let now = self.clock.now();
        let settings = self.settings.for_guild(Some(guild));
        match checked {
            Checked::Drop { reason } => {
                let summary = if pending.is_some() {
                    if let Err(e) = self.store.initiative.delete_pending_thought(guild) {
                        return self.write_failed(guild, None, "drop the held thought", e);
                    }
                    "dropped the held thought"
                } else {
                    "stayed quiet"
                };
                let channel = pending.and_then(|p| p.channel);
                self.end_look(
                    Entry::new(Kind::InitiativeSkip, summary)
                        .place(Some(guild), channel)
                        .reason(&reason),
                    Look::Dropped,
                );
            }
            Checked::Hold {
                draft,
                channel,
                media,
                reason,
            } => {
                let thought = match pending {
                    Some(mut p) => {
                        p.refine(draft, channel, reason.clone(), media, now);
                        p
                    }
                    None => PendingThought::new(
                        guild,
                        draft,
                        channel,
                        reason.clone(),
                        media,
                        now,
                        chrono::Duration::minutes(i64::from(
                            settings.initiative.text.pending_thought_max_age_minutes,
                        )),
                    ),
                };
                if let Err(e) = self.store.initiative.save_pending_thought(&thought) {
                    let why = e.to_string();
                    return self.end_look(
                        Entry::new(Kind::InitiativeSkip, "could not keep the thought")
                            .place(Some(guild), channel)
                            .reason(&why),
                        Look::Failed,
                    );
                }
                let mut e = Entry::new(Kind::InitiativeSkip, format!("held a thought (revision {})", thought.revision))
                    .place(Some(guild), thought.channel)
                    .reason(reason)
                    .data(serde_json::json!({"action": "hold", "draft": thought.draft, "revision": thought.revision, "look": Look::Held.as_str()}));
                if let Some(id) = model_call {
                    e = e.model_call(id);
                }
                self.journal.record(e);
            }
            Checked::Post {
                channel,
                text,
                media,
                reason,
            } => {
                self.post(guild, channel, text, media, reason, pending, model_call)
                    .await;
            }
        }
    }

    /// The requested media for a post: a GIF's link added to `text`, or a
    /// generated image as a file, and the note the journal keeps of it.
    /// Media that is unavailable or fails is journaled and the post goes
    /// without it (the words are worth posting alone).
    async fn media(
        &self,
        settings: &Settings,
        guild: GuildId,
        channel: ChannelId,
        m: &pending::MediaDirective,
        text: &mut String,
        now: DateTime<Utc>,
    ) -> (Vec<OutgoingFile>, serde_json::Value) {
        let state = media::MediaState::now(settings, &self.secrets, &self.store.usage, guild, now);
        let nothing = (Vec::new(), serde_json::Value::Null);
        if let Err(why) = media::availability(settings, &state, m.kind) {
            let what = format!("dropped the {} request", m.kind.as_str());
            self.skip(guild, Some(channel), &what, &why.to_string());
            return nothing;
        }
        if m.kind == MediaKind::Gif {
            // Posted as its URL on a line of its own: Discord embeds it.
            let found = gifs::search(
                settings,
                &self.secrets,
                &m.prompt,
                &self.store,
                guild,
                now,
                "ambient",
            )
            .await;
            return match found {
                Ok(url) => {
                    *text = format!("{text}\n{url}");
                    let note = serde_json::json!({"kind": "gif", "prompt": m.prompt, "url": url});
                    (Vec::new(), note)
                }
                Err(why) => {
                    let what = "posted without the requested GIF";
                    self.skip(guild, Some(channel), what, &why.to_string());
                    nothing
                }
            };
        }
        let made =
            media::generate_image(settings, &self.secrets, &m.prompt, &self.store, guild, now)
                .await;
        match made {
            Ok(bytes) => {
                let file = OutgoingFile {
                    name: "image.png".into(),
                    bytes,
                };
                let note = serde_json::json!({"kind": m.kind.as_str(), "prompt": m.prompt});
                (vec![file], note)
            }
            Err(why) => {
                let why = why.to_string();
                self.skip(
                    guild,
                    Some(channel),
                    "posted without the requested image",
                    &why,
                );
                nothing
            }
        }
    }

    /// After the post went out: the outbox row marked sent, discovery told
    /// what was shared, the held thought settled, the post journaled.
    #[allow(clippy::too_many_arguments)] // the post's parts, as `post` holds them
    fn settle_post(
        &self,
        guild: GuildId,
        channel: ChannelId,
        sent: Sent<'_>,
        reason: String,
        pending: Option<PendingThought>,
        model_call: Option<i64>,
        now: DateTime<Utc>,
    ) {
        let Sent {
            nonce,
            ids,
            text,
            media_note,
        } = sent;
        // Still held, the posted thought would be shown to the model and posted
        // again: it goes in the transaction that marks the post sent. If that
        // fails, the unconfirmed row keeps the guild's looks stopped until it
        // is settled by looking in the channel first.
        if let Some(first) = ids.first() {
            if let Err(e) = self.store.initiative.outbox_settle(nonce, guild, *first) {
                self.write_failed(guild, Some(channel), "mark the post as sent", e);
            }
            self.discovery.note_post(guild, channel, *first, text, now);
        } else if let Err(e) = self.store.initiative.delete_pending_thought(guild) {
            self.write_failed(guild, Some(channel), "settle the posted thought", e);
        }
        let name = self
            .store
            .messages
            .channel_name(channel)
            .ok()
            .flatten()
            .unwrap_or_else(|| channel.to_string());
        let mut e = Entry::new(Kind::InitiativePost, format!("posted in #{name}"))
            .place(Some(guild), Some(channel))
            .reason(reason)
            .data(serde_json::json!({
                "text": text,
                "revision": pending.as_ref().map(|p| p.revision),
                "media": media_note,
                "sent": ids.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
                "look": Look::Posted.as_str(),
            }));
        if let Some(first) = ids.first() {
            e = e.message(*first);
        }
        if let Some(id) = model_call {
            e = e.model_call(id);
        }
        self.journal.record(e);
    }

    #[allow(clippy::too_many_arguments)] // a checked post, part by part, as `act` unpacks it
    async fn post(
        &self,
        guild: GuildId,
        channel: ChannelId,
        mut text: String,
        media: Option<pending::MediaDirective>,
        reason: String,
        pending: Option<PendingThought>,
        model_call: Option<i64>,
    ) {
        let now = self.clock.now();
        let settings = self.settings.for_guild(Some(guild));
        // Hushed (or quiet hours began) while the model thought: the words wait as a held thought.
        if let Err(r) =
            crate::courtesy::unprompted(&settings, &(&self.store).into(), guild, channel, now)
        {
            return self.hold_back(guild, channel, text, media, pending, &r, now);
        }
        let (files, media_note) = match &media {
            Some(m) => {
                self.media(&settings, guild, channel, m, &mut text, now)
                    .await
            }
            None => (Vec::new(), serde_json::Value::Null),
        };
        // Recorded before it is sent: a crash in between is settled at the next start.
        let nonce = format!("initiative-{guild}-{}", now.timestamp_millis());
        // Unrecorded, a post could be sent twice after a crash: no record, no post.
        if let Err(e) = self
            .store
            .initiative
            .outbox_insert(&nonce, guild, channel, &text, now)
        {
            let why = format!("it could not be recorded before sending: {e}");
            let summary = "did not post an ambient thought";
            return self.end_look(
                Entry::new(Kind::Error, summary)
                    .place(Some(guild), Some(channel))
                    .reason(&why),
                Look::Failed,
            );
        }
        let place = Place {
            guild: Some(guild),
            channel,
        };
        match self
            .speech
            .say_with_files(place, &text, None, &nonce, files)
            .await
        {
            Ok(ids) => {
                let sent = Sent {
                    nonce: &nonce,
                    ids: &ids,
                    text: &text,
                    media_note,
                };
                self.settle_post(guild, channel, sent, reason, pending, model_call, now);
            }
            Err(e) => {
                if let Err(e) = self.store.initiative.outbox_delete(&nonce) {
                    self.write_failed(guild, Some(channel), "forget the unsent post", e);
                }
                let summary = "could not post an ambient thought";
                self.end_look(
                    Entry::new(Kind::Error, summary)
                        .place(Some(guild), Some(channel))
                        .reason(e.to_string()),
                    Look::Failed,
                );
            }
        }
    }

    /// A post decided while the channel fell silent (hush, quiet hours) is
    /// held instead, so it can be looked at again when it may be said.
    #[allow(clippy::too_many_arguments)] // the post being held back, part by part
    fn hold_back(
        &self,
        guild: GuildId,
        channel: ChannelId,
        text: String,
        media: Option<pending::MediaDirective>,
        pending: Option<PendingThought>,
        why: &crate::courtesy::Refusal,
        now: DateTime<Utc>,
    ) {
        let max_age = chrono::Duration::minutes(i64::from(
            self.settings
                .for_guild(Some(guild))
                .initiative
                .text
                .pending_thought_max_age_minutes,
        ));
        let reason = format!("not posted: {}", why.reason);
        let thought = match pending {
            Some(mut p) => {
                p.refine(text, Some(channel), reason.clone(), media, now);
                p
            }
            None => PendingThought::new(
                guild,
                text,
                Some(channel),
                reason.clone(),
                media,
                now,
                max_age,
            ),
        };
        if let Err(e) = self.store.initiative.save_pending_thought(&thought) {
            let why = e.to_string();
            let summary = "could not keep the thought it did not post";
            return self.end_look(
                Entry::new(Kind::Error, summary)
                    .place(Some(guild), Some(channel))
                    .reason(&why),
                Look::Failed,
            );
        }
        let summary = "held a thought instead of posting it";
        self.end_look(
            Entry::new(Kind::InitiativeSkip, summary)
                .place(Some(guild), Some(channel))
                .reason(&reason),
            Look::Held,
        );
    }

    /// An error entry for a store write whose loss matters.
    fn write_failed(
        &self,
        guild: GuildId,
        channel: Option<ChannelId>,
        what: &str,
        e: crate::store::StoreError,
    ) {
        self.journal.record(
            Entry::new(Kind::Error, format!("could not {what}"))
                .place(Some(guild), channel)
                .reason(e.to_string()),
        );
    }

    /// An `initiative_skip` entry: a quiet decision or a pending-thought lifecycle event.
    fn skip(&self, guild: GuildId, channel: Option<ChannelId>, summary: &str, reason: &str) {
        self.journal.record(
            Entry::new(Kind::InitiativeSkip, summary)
                .place(Some(guild), channel)
                .reason(reason),
        );
    }

    /// Journals `entry` as the one that closes a look which posted
    /// nothing, marked with how it ended (`data.look`).
    fn end_look(&self, entry: Entry, look: Look) {
        self.journal
            .record(entry.data(serde_json::json!({"look": look.as_str()})));
    }

    /// Whether a consideration for `guild` is under way (for the status widget).
    pub(crate) fn is_thinking(&self, guild: GuildId) -> bool {
        self.lock_in_flight().contains(&guild)
    }

    fn finished(&self, guild: GuildId) {
        self.lock_in_flight().remove(&guild);
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<GuildId>> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_last_gate(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<GuildId, (&'static str, String)>> {
        self.last_gate.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Ambient posts in the rolling 24 h that `maxPostsPerDay` counts.
pub fn posts_last_24h(
    store: &JournalStore,
    guild: GuildId,
    now: DateTime<Utc>,
) -> Result<u32, crate::store::StoreError> {
    store
        .journal_count(&counted_posts(guild, now))
        .map(|n| n as u32)
}

/// The journal's ambient posts in `guild` that the daily cap counts at `now`.
fn counted_posts(guild: GuildId, now: DateTime<Utc>) -> Filter {
    Filter {
        since: Some(now - chrono::Duration::hours(24)),
        kinds: vec![Kind::InitiativePost],
        guild: Some(guild),
        ..Default::default()
    }
}

/// How a look that reached the model ended, as the journal entry closing it
/// says in `data.look`: what the console's `/wait` and the replay read,
/// instead of the entry's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    Posted,
    Held,
    Dropped,
    /// The model gave no usable decision.
    NoDecision,
    /// The decision was refused (an unknown channel, too long).
    Rejected,
    /// The model or the store failed, or the post could not be sent.
    Failed,
}

impl Look {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Look::Posted => "posted",
            Look::Held => "held",
            Look::Dropped => "dropped",
            Look::NoDecision => "no_decision",
            Look::Rejected => "rejected",
            Look::Failed => "failed",
        }
    }
}

/// A post Discord took: its nonce (the outbox row), the message ids it
/// became, its text, and the journal's note of its media.
struct Sent<'a> {
    nonce: &'a str,
    ids: &'a [MessageId],
    text: &'a str,
    media_note: serde_json::Value,
}

/// `decide`, checked as the model calls it: a decision `check` rejects goes
/// back to the model with the reason, and the reason is noted in `rejections`
/// for the journal.
fn decide_tool(pool: Pool, max_chars: usize, rejections: Arc<Mutex<Vec<String>>>) -> FinalTool {
    FinalTool::checked::<Decision, String>(
        "decide",
        "Your decision for this ambient moment: post now, hold a refined draft for later, or drop the thought.",
        move |d| {
            decision::check(d, &pool, max_chars)
                .map(|_| ())
                .map_err(|e| {
                    let e = e.to_string();
                    rejections
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(e.clone());
                    e
                })
        },
    )
}

/// The model role that decides about posts (`initiative.text.execution`).
pub(crate) fn decider(settings: &crate::settings::Settings) -> Role {
    match settings.initiative.text.execution {
        Execution::Ambient => Role::Ambient,
        Execution::Reflex => Role::Reflex,
    }
}

/// Routes initiative impulses from attention to the engine.
pub(crate) struct InitiativeHandler {
    pub engine: Arc<Initiative>,
}

#[async_trait]
impl Handler for InitiativeHandler {
    fn name(&self) -> String {
        "initiative".into()
    }

    fn order(&self) -> i32 {
        ORDER_IMPULSE
    }

    fn wants(&self, item: &Attended) -> Option<String> {
        match &item.input {
            Input::Impulse(i) if i.kind == ImpulseKind::InitiativeTick => {
                Some(format!("the gates passed: {}", i.detail))
            }
            _ => None,
        }
    }

    async fn handle(&self, item: &Attended) -> Outcome {
        let Input::Impulse(i) = &item.input else {
            return Outcome::Declined("not an impulse".into());
        };
        let Some(guild) = i.guild else {
            return Outcome::Declined("an initiative tick without a guild".into());
        };
        // Cleared even if the consideration panics, so the guild's ticks resume.
        struct Finished<'a>(&'a Initiative, GuildId);
        impl Drop for Finished<'_> {
            fn drop(&mut self) {
                self.0.finished(self.1);
            }
        }
        let _finished = Finished(&self.engine, guild);
        let done = tokio::time::timeout(CONSIDERATION_LIMIT, self.engine.consider(guild)).await;
        match done {
            Ok(()) => Outcome::Done,
            Err(_) => Outcome::Failed(format!(
                "the consideration took longer than {} s and was abandoned",
                CONSIDERATION_LIMIT.as_secs()
            )),
        }
    }
}

/// What the initiative is built from: the services it thinks and speaks
/// with, and the tables it reads and writes.
pub struct Services {
    pub settings: Arc<SettingsService>,
    pub store: Stores,
    pub journal: Journal,
    pub clock: SharedClock,
    pub chance: Arc<Chance>,
    pub spine: Arc<Spine>,
    pub executive: Arc<Executive>,
    pub speech: Arc<Speech>,
    pub secrets: Secrets,
    pub discovery: Arc<Discovery>,
    pub memory: Arc<Memory>,
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub messages: MessageStore,
    pub journal: JournalStore,
    pub usage: UsageStore,
    pub initiative: InitiativeStore,
    pub people: PeopleStore,
}

cut!(Stores => crate::courtesy::Stores { messages, people });
