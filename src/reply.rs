//! The ACTIVE path: answering a person who addressed the bot.
//!
//! A mention, a reply to the bot, a DM or "hey <name>" is claimed here and
//! answered at once. The channel becomes ACTIVE (the initiative tick keeps
//! out of it for a while), and the typing indicator runs while the answer
//! is produced.
//!
//! When no model is available the bot says so plainly, once per
//! conversation, and afterwards only reacts 💤 so it does not nag.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::attention::router::ORDER_EXECUTIVE;
use crate::attention::{Attended, Handler, Input, MessagePercept, Outcome, Percept, Spine};
use crate::clock::SharedClock;
use crate::ids::ChannelId;
use crate::journal::{Entry, Journal, Kind};
use crate::settings::SettingsService;
use crate::speech::Speech;

pub struct ReplyHandler {
    speech: Arc<Speech>,
    journal: Journal,
    spine: Arc<Spine>,
    settings: Arc<SettingsService>,
    clock: SharedClock,
    /// Why the bot cannot think right now, if it cannot.
    unavailable: Option<String>,
    /// Per channel: when the bot last told people it cannot answer, and when it was last addressed.
    notices: Mutex<HashMap<ChannelId, (DateTime<Utc>, DateTime<Utc>)>>,
}

impl ReplyHandler {
    pub fn new(
        speech: Arc<Speech>,
        journal: Journal,
        spine: Arc<Spine>,
        settings: Arc<SettingsService>,
        clock: SharedClock,
        unavailable: Option<String>,
    ) -> Self {
        Self {
            speech,
            journal,
            spine,
            settings,
            clock,
            unavailable,
            notices: Mutex::new(HashMap::new()),
        }
    }

    /// True when this channel should hear the "cannot answer" notice now:
    /// not yet told, or told in a conversation that has since gone quiet.
    fn should_notify(
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

    async fn answer_unavailable(&self, m: &MessagePercept, why: &str) -> Outcome {
        let now = self.clock.now();
        let place = m.place();
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
        if self.should_notify(place.channel, now, window) {
            let text = format!("I can't answer right now: {why}");
            match self
                .speech
                .say(
                    place,
                    &text,
                    Some(m.message.id),
                    &format!("unavailable-{}", m.message.id),
                )
                .await
            {
                Ok(_) => {
                    self.journal.record(Entry {
                        summary: "told the channel no model is available".into(),
                        ..entry
                    });
                    Outcome::Done
                }
                Err(e) => Outcome::Failed(format!("could not send the notice: {e}")),
            }
        } else {
            let reacted = self
                .speech
                .transport()
                .react(place.channel, m.message.id, "💤")
                .await;
            self.journal.record(Entry {
                summary: "reacted 💤: no model available, channel already told".into(),
                ..entry
            });
            match reacted {
                Ok(()) => Outcome::Done,
                Err(e) => Outcome::Failed(format!("could not react: {e}")),
            }
        }
    }
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
        match &item.input {
            Input::Percept(Percept::Message(m))
                if !m.message.author_is_bot && m.addressed.is_addressed() =>
            {
                Some(format!("{}: answered at once", m.addressed.describe()))
            }
            _ => None,
        }
    }

    async fn handle(&self, item: &Attended) -> Outcome {
        let Input::Percept(Percept::Message(m)) = &item.input else {
            return Outcome::Declined("not a message".into());
        };
        let place = m.place();
        let settings = self.settings.for_guild(place.guild);
        let now = self.clock.now();
        self.spine.active.mark(
            place.guild,
            place.channel,
            now + chrono::Duration::minutes(i64::from(
                settings.attention.active_conversation_minutes,
            )),
        );
        let _typing = self.speech.transport().typing(place.channel);
        match &self.unavailable {
            Some(why) => self.answer_unavailable(m, why).await,
            None => Outcome::Declined("no reply pipeline is wired in".into()),
        }
    }
}
