//! One voice session's pipeline: ticks of decoded audio in, `[vc]` lines out.
//!
//! ```text
//! songbird tick ─► Listener::tick(speaking: [(user, 16 kHz mono)], silent: [user])
//!   opted out or blocked? ─► dropped on the spot (never buffered)
//!   per speaker: Segmenter ─► utterance ─► bounded queue ─► workers
//!   worker: WAV ─► transcription ─► a `vc` message in the linked text
//!           channel, through the senses (stored, then attention)
//! ```
//!
//! Memory is bounded: each speaker holds at most one utterance in progress
//! (`voice.maxUtteranceSeconds`), the queue at most `voice.queueCapacity`
//! utterances, and at most `voice.transcription.maxConcurrent` are being
//! transcribed. **Drop policy:** when transcription falls behind and the
//! queue is full, the *oldest* waiting utterance is dropped — in a live
//! conversation the newest speech matters most — and the drop is logged
//! and journaled.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, Duration, Utc};
use tokio::sync::Notify;

use super::segment::{SAMPLE_RATE, SegmentConfig, Segmenter, Utterance};
use super::transcribe::Transcriber;
use super::wav;
use crate::attention::{Addressed, MessagePercept, Percept, addressed_by_name};
use crate::clock::SharedClock;
use crate::ids::{ChannelId, GuildId, MessageId, UserId, next_snowflake};
use crate::journal::Journal;
use crate::senses::Senses;
use crate::settings::{Secrets, SettingsService};
use crate::store::messages::{Source, StoredMessage};
use crate::vocab::journal::{Entry, Kind};
use crate::voice::Stores;

/// Where a session listens and where it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    pub guild: GuildId,
    pub voice_channel: ChannelId,
    pub text_channel: ChannelId,
}

/// What a listener needs from the rest of the bot.
#[derive(Clone)]
pub(crate) struct Services {
    pub store: Stores,
    pub settings: Arc<SettingsService>,
    pub journal: Journal,
    pub clock: SharedClock,
    pub senses: Senses,
    pub transcriber: Arc<Transcriber>,
    /// `SPEECH_API_KEY` for spoken answers, and every secret to mask in their errors.
    pub secrets: Secrets,
}

struct Speaker {
    seg: Segmenter,
    /// The wall time of this speaker's sample 0.
    origin: DateTime<Utc>,
    name: String,
}

struct Job {
    user: UserId,
    name: String,
    utterance: Utterance,
    started_at: DateTime<Utc>,
    ended_at: DateTime<Utc>,
}

pub struct Listener {
    pub session: Session,
    s: Services,
    cfg: SegmentConfig,
    capacity: usize,
    speakers: Mutex<HashMap<UserId, Speaker>>,
    /// Who opted out here (`/voice optout`), kept in memory: it is asked on
    /// every 20 ms tick, and the store is shared with everything else.
    opted_out: RwLock<HashSet<UserId>>,
    queue: Mutex<VecDeque<Job>>,
    wake: Notify,
    busy: AtomicUsize,
    idle: Notify,
    dropped: AtomicU64,
    closed: AtomicBool,
    /// The opt-out list could not be read: nobody is admitted.
    all_out: bool,
    /// When a drop was last journaled (drops are journaled at most once a minute).
    last_drop_note: Mutex<Option<DateTime<Utc>>>,
}

fn at(origin: DateTime<Utc>, sample: u64) -> DateTime<Utc> {
    origin + Duration::microseconds((sample as i64) * 1_000_000 / i64::from(SAMPLE_RATE))
}

impl Listener {
    pub(crate) fn new(session: Session, s: Services) -> Arc<Self> {
        let v = s.settings.for_guild(Some(session.guild)).voice.clone();
        // If the list cannot be read, nobody is heard until it can: failing open would record people who said no.
        let opted_out = s.store.voice.voice_opted_out_users();
        if let Err(e) = &opted_out {
            tracing::error!(error = %e, "could not read voice opt-outs; listening to nobody");
        }
        Arc::new(Self {
            all_out: opted_out.is_err(),
            opted_out: RwLock::new(opted_out.unwrap_or_default()),
            session,
            cfg: SegmentConfig::from_settings(&v),
            capacity: v.queue_capacity.max(1) as usize,
            s,
            speakers: Mutex::new(HashMap::new()),
            queue: Mutex::new(VecDeque::new()),
            wake: Notify::new(),
            busy: AtomicUsize::new(0),
            idle: Notify::new(),
            dropped: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            last_drop_note: Mutex::new(None),
        })
    }

    /// Whether this person's voice may be recorded at all.
    pub(crate) fn admits(&self, user: UserId) -> bool {
        let settings = self.s.settings.for_guild(Some(self.session.guild));
        !self.all_out
            && !settings
                .permissions
                .replies
                .blocked_user_ids
                .contains(&user)
            && !self
                .opted_out
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&user)
    }

    /// `/voice optout` or `/ambient me no-voice` (or back in). Opting out also lets go of anything of
    /// theirs held right now: the utterance in progress and those waiting.
    pub(crate) fn set_opted_out(&self, user: UserId, out: bool) {
        let mut set = self.opted_out.write().unwrap_or_else(|p| p.into_inner());
        if !out {
            set.remove(&user);
            return;
        }
        set.insert(user);
        drop(set);
        self.speakers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&user);
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|j| j.user != user);
    }

    /// One 20 ms tick: who spoke (16 kHz mono samples) and who was silent.
    /// This is the adapter boundary: songbird's handler only calls this.
    pub fn tick(&self, speaking: &[(UserId, String, &[i16])], silent: &[UserId]) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let now = self.s.clock.now();
        let mut done = Vec::new();
        {
            let mut speakers = self.speakers.lock().unwrap_or_else(|p| p.into_inner());
            for (user, name, samples) in speaking {
                if !self.admits(*user) {
                    // Never buffered: and anything held from before the opt-out is let go.
                    speakers.remove(user);
                    continue;
                }
                let sp = speakers.entry(*user).or_insert_with(|| Speaker {
                    seg: Segmenter::new(self.cfg),
                    origin: now,
                    name: name.clone(),
                });
                for u in sp.seg.push(samples) {
                    done.push((*user, sp.name.clone(), sp.origin, u));
                }
            }
            for user in silent {
                if let Some(sp) = speakers.get_mut(user) {
                    for u in sp.seg.silence(20) {
                        done.push((*user, sp.name.clone(), sp.origin, u));
                    }
                }
            }
        }
        for (user, name, origin, u) in done {
            self.enqueue(Job {
                user,
                name,
                started_at: at(origin, u.start),
                ended_at: at(origin, u.end),
                utterance: u,
            });
        }
    }

    /// A speaker left the call: what they were saying is finished.
    pub(crate) fn left(&self, user: UserId) {
        let sp = self
            .speakers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&user);
        if let Some(mut sp) = sp
            && let Some(u) = sp.seg.finish()
        {
            self.enqueue(Job {
                user,
                name: sp.name,
                started_at: at(sp.origin, u.start),
                ended_at: at(sp.origin, u.end),
                utterance: u,
            });
        }
    }

    fn enqueue(&self, job: Job) {
        let dropped = {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            let dropped = if q.len() >= self.capacity {
                q.pop_front()
            } else {
                None
            };
            q.push_back(job);
            dropped
        };
        self.wake.notify_one();
        if let Some(old) = dropped {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(speaker = %old.name, seconds = old.utterance.seconds(), "transcription is behind: dropped the oldest waiting utterance");
            let now = self.s.clock.now();
            let mut last = self
                .last_drop_note
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if last.is_none_or(|t| now - t >= Duration::minutes(1)) {
                *last = Some(now);
                self.s.journal.record(
                    Entry::new(Kind::Voice, "dropped an utterance: transcription is behind")
                        .place(Some(self.session.guild), Some(self.session.text_channel))
                        .reason(format!("the queue holds {} utterances; the oldest goes first ({n} dropped in this session)", self.capacity)),
                );
            }
        }
    }

    /// Utterances waiting for transcription.
    pub fn queued(&self) -> usize {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Audio held for utterances still being spoken, in samples.
    pub fn buffered_samples(&self) -> usize {
        self.speakers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|s| s.seg.held_samples())
            .sum()
    }

    /// Starts the transcription workers (`voice.transcription.maxConcurrent`).
    pub(crate) fn start(self: &Arc<Self>) {
        let n = self
            .s
            .settings
            .global()
            .voice
            .transcription
            .max_concurrent
            .max(1);
        for _ in 0..n {
            let me = self.clone();
            tokio::spawn(async move { me.work().await });
        }
    }

    async fn work(&self) {
        loop {
            let job = {
                let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                let job = q.pop_front();
                if job.is_some() {
                    self.busy.fetch_add(1, Ordering::SeqCst);
                }
                job
            };
            let Some(job) = job else {
                // Registered before `closed` is read, so a close() in between still wakes us.
                let woken = self.wake.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                if self.closed.load(Ordering::Relaxed) {
                    return;
                }
                self.idle.notify_waiters();
                woken.await;
                continue;
            };
            self.transcribe(job).await;
            self.busy.fetch_sub(1, Ordering::SeqCst);
            self.idle.notify_waiters();
        }
    }

    /// Waits until everything queued has been transcribed (for shutdown and tests).
    pub async fn drain(&self) {
        loop {
            let waiting = self.idle.notified();
            if self.queued() == 0 && self.busy.load(Ordering::SeqCst) == 0 {
                return;
            }
            // A timeout is the point: look at the counts again.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(50), waiting).await;
        }
    }

    /// Stops listening: utterances in progress are finished and transcribed, then the workers end.
    pub(crate) fn close(&self) {
        let users: Vec<UserId> = self
            .speakers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect();
        for u in users {
            self.left(u);
        }
        self.closed.store(true, Ordering::Relaxed);
        self.wake.notify_waiters();
    }

    async fn transcribe(&self, job: Job) {
        let Session {
            guild,
            voice_channel,
            text_channel,
        } = self.session;
        // Opted out while the utterance waited: it is not sent anywhere.
        if !self.admits(job.user) {
            return;
        }
        let seconds = job.utterance.seconds();
        let text = match self
            .s
            .transcriber
            .transcribe(Some(guild), wav::encode(&job.utterance.samples), seconds)
            .await
        {
            Ok(t) if t.trim().is_empty() => return,
            // Opted out while the upload ran: the text is not kept.
            Ok(_) if !self.admits(job.user) => return,
            Ok(t) => t,
            Err(e) => {
                self.s.journal.record(
                    Entry::new(
                        Kind::Voice,
                        format!("could not transcribe {:.1} s from {}", seconds, job.name),
                    )
                    .place(Some(guild), Some(text_channel))
                    .reason(e.why),
                );
                return;
            }
        };
        let bot = self.s.settings.for_guild(Some(guild)).bot.name.clone();
        let id = MessageId(next_snowflake(job.started_at));
        let message = StoredMessage {
            source: Source::Vc,
            ..StoredMessage::said(
                id,
                Some(guild),
                text_channel,
                job.user,
                job.name.clone(),
                text.clone(),
                job.started_at,
            )
        };
        // Harmless if lost: only the utterance's time span; its words are stored as the message.
        let _ =
            self.s
                .store
                .voice
                .record_utterance(id, voice_channel, job.started_at, job.ended_at);
        let addressed = if addressed_by_name(&text, &bot) {
            Addressed::ByName
        } else {
            Addressed::No
        };
        let percept = Percept::Message(MessagePercept {
            message,
            addressed,
            guild_name: None,
            channel_name: None,
            author_roles: None,
        });
        if let Err(e) = self.s.senses.perceive(percept) {
            tracing::error!(error = %e, "could not store a voice line");
        }
    }
}
