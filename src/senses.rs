//! Senses: where percepts enter the bot.
//!
//! Every front end (Discord, console, voice) hands its percepts to
//! [`Senses::perceive`], which applies visibility (blocked users and
//! channels are never stored or seen), writes the percept to the store in one
//! transaction (that is the acknowledgement: once `perceive` returns, the
//! message survives a crash), and submits what deserves a decision to
//! attention. A message redelivered after a reconnect is already stored and
//! is not submitted again, so it is never answered twice.
//!
//! - `attachments`: what a message's images and files become for the model
//!   (`images` prepares a picture, `text_files` reads and quotes text)

pub(crate) mod attachments;
pub(crate) mod images;
pub(crate) mod text_files;

use std::sync::Arc;

use crate::attention::{Input, Percept, Spine};
use crate::clock::SharedClock;
use crate::ids::{MessageId, UserId};
use crate::permissions;
use crate::settings::SettingsService;
use crate::store::{Store, StoreError};

/// What became of a percept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Perceived {
    /// Invisible (blocked user or channel): not stored, not seen.
    Invisible(&'static str),
    /// Stored; `queued` says whether attention got it.
    Stored { new: bool, queued: bool },
}

#[derive(Clone)]
pub struct Senses {
    store: Store,
    settings: Arc<SettingsService>,
    spine: Arc<Spine>,
    clock: SharedClock,
    me: UserId,
}

impl Senses {
    pub fn new(
        store: Store,
        settings: Arc<SettingsService>,
        spine: Arc<Spine>,
        clock: SharedClock,
        me: UserId,
    ) -> Self {
        Self {
            store,
            settings,
            spine,
            clock,
            me,
        }
    }

    pub fn perceive(&self, percept: Percept) -> Result<Perceived, StoreError> {
        let settings = self.settings.for_guild(percept.guild());
        if let Some(place) = percept.place() {
            if let Some(why) = permissions::invisible_because(&settings, place, percept.author_id())
            {
                return Ok(Perceived::Invisible(why));
            }
        } else if let Some(user) = percept.author_id()
            && settings
                .permissions
                .replies
                .blocked_user_ids
                .contains(&user)
        {
            return Ok(Perceived::Invisible(
                "the user is in permissions.replies.blockedUserIds",
            ));
        }

        let from_me = percept.author_id() == Some(self.me);
        let (new, worth_deciding) = match &percept {
            Percept::Message(m) => {
                self.remember_names(m);
                let new = self.store.insert_message(&m.message)?;
                if let (true, Some(g), false) = (new, m.message.guild, m.message.author_is_bot) {
                    crate::journal::stream::record_message(
                        &self.store,
                        g,
                        m.message.channel,
                        &m.message.author_name,
                        &m.message.content,
                        m.message.created_at,
                    );
                }
                (new, new)
            }
            Percept::Edit {
                id, content, at, ..
            } => (
                self.change_message(*id, Some(content), || {
                    self.store.edit_message(*id, content, *at)
                })?,
                false,
            ),
            Percept::Delete { id, at, .. } => (
                self.change_message(*id, None, || self.store.delete_message(*id, *at))?,
                false,
            ),
            Percept::Reaction {
                place,
                message,
                user,
                emoji,
                added,
                at,
            } => {
                if *added {
                    self.store.record_reaction(
                        *message,
                        user.id,
                        emoji,
                        place.guild,
                        place.channel,
                        *at,
                    )?;
                } else {
                    self.store.remove_reaction(*message, user.id, emoji)?;
                }
                (true, *added)
            }
            Percept::MemberJoin { .. } => (true, true),
        };
        let queued = worth_deciding && !from_me;
        if queued {
            self.spine.submit(Input::Percept(percept));
        }
        Ok(Perceived::Stored { new, queued })
    }

    /// An edit (`Some(new text)`) or a delete, by `change`; the context stream
    /// follows, so what someone took back is not told on. Whether it changed.
    fn change_message(
        &self,
        id: MessageId,
        new: Option<&str>,
        change: impl FnOnce() -> Result<bool, StoreError>,
    ) -> Result<bool, StoreError> {
        let old = self.store.message(id)?;
        let changed = change()?;
        if let Some(old) = old.filter(|_| changed) {
            crate::journal::stream::message_changed(&self.store, &old, new)?;
        }
        Ok(changed)
    }

    fn remember_names(&self, m: &crate::attention::MessagePercept) {
        let now = self.clock.now();
        let result = (|| {
            if let (Some(g), Some(name)) = (m.message.guild, &m.guild_name) {
                self.store.upsert_guild(g, name, now)?;
            }
            if let Some(name) = &m.channel_name {
                self.store
                    .upsert_channel(m.message.channel, m.message.guild, name, now)?;
            }
            Ok::<_, StoreError>(())
        })();
        if let Err(e) = result {
            tracing::warn!(error = %e, "could not record guild/channel names");
        }
    }
}
