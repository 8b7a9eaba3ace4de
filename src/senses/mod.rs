//! Senses: where percepts enter the bot.
//!
//! Every front end (Discord, console, voice) hands its percepts to
//! [`Senses::perceive`], which applies visibility (blocked users and
//! channels are never stored or seen; a direct message `discord.dms` does
//! not let in is not stored, only handed on to be told why), writes the
//! percept to the store in one
//! transaction (that is the acknowledgement: once `perceive` returns, the
//! message survives a crash), and submits what deserves a decision to
//! attention. A message redelivered after a reconnect is already stored and
//! is not submitted again, so it is never answered twice.
//!
//! A front end whose platform keeps what was said (Discord) uses
//! [`Senses::perceive_grouped`] instead: a server message is then committed
//! with the group of writes open at the time, within 100 ms (see
//! `store::group_commit`). A crash may lose the last of those, and the
//! backfill reads them again; since writes reach the disk in order, a
//! message the bot answered is on disk before its answer is recorded (the
//! answer's row is written, and so the group committed, before it is sent),
//! so nothing is answered twice. Direct messages, which backfill does not
//! read, are committed at once.
//!
//! - `attachments`: what a message's images and files become for the model
//!   (`images` prepares a picture, `text_files` reads and quotes text)

use crate::store::{DiscoveryStore, MessageStore, PeopleStore};
pub(crate) mod attachments;
pub(crate) mod images;
pub(crate) mod text_files;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::attention::{Input, MessagePercept, Percept, Spine};
use crate::clock::SharedClock;
use crate::ids::{ChannelId, UserId};
use crate::permissions;
use crate::settings::SettingsService;
use crate::store::StoreError;
use crate::store::messages::{Commit, Seen};

/// What became of a percept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Perceived {
    /// Invisible (blocked user or channel): not stored, not seen.
    Invisible(&'static str),
    /// Stored; `queued` says whether attention got it.
    Stored { new: bool, queued: bool },
    /// A direct message from someone `discord.dms` does not let in: not
    /// stored, but handed to attention so they can be told why (the answer
    /// asks `permissions::refusal` again and calls no model).
    Refused(&'static str),
}

#[derive(Clone)]
pub struct Senses {
    store: Stores,
    settings: Arc<SettingsService>,
    spine: Arc<Spine>,
    clock: SharedClock,
    me: UserId,
    /// The server and channel names last written for each channel: every
    /// message carries them, and writing an unchanged name is not free.
    names: Arc<Mutex<HashMap<ChannelId, Names>>>,
}

/// A channel's server name and name, as a message last carried them.
type Names = (Option<String>, Option<String>);

impl Senses {
    pub(crate) fn new(
        store: Stores,
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
            names: Arc::default(),
        }
    }

    /// Takes in a percept; once this returns, what was stored survives a crash.
    pub fn perceive(&self, percept: Percept) -> Result<Perceived, StoreError> {
        self.take_in(percept, false)
    }

    /// Like [`Senses::perceive`], except that a server message may be
    /// committed up to 100 ms later with others: for front ends whose
    /// platform keeps the history, so backfill can read again what a crash
    /// lost.
    pub(crate) fn perceive_grouped(&self, percept: Percept) -> Result<Perceived, StoreError> {
        self.take_in(percept, true)
    }

    fn take_in(&self, percept: Percept, may_group: bool) -> Result<Perceived, StoreError> {
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

        if let Percept::Message(m) = &percept
            && m.place().is_dm()
            && !m.message.is_self
            && let Some(refused) = permissions::refusal(&settings, &self.store.people, m)
        {
            self.spine.submit(Input::Percept(percept));
            return Ok(Perceived::Refused(refused.gate));
        }
        let from_me = percept.author_id() == Some(self.me);
        let (new, worth_deciding) = match &percept {
            Percept::Message(m) => {
                // The bot's own words arrive here as the gateway's echo of a
                // message already recorded before it was sent, so they may
                // join the group like anyone's.
                let new = self.store_message(m, may_group)?;
                if new {
                    self.spine.journal().metrics().message_seen(m.message.guild);
                }
                (new, new)
            }
            Percept::Edit {
                id, content, at, ..
            } => (self.store.messages.edit_message(*id, content, *at)?, false),
            Percept::Delete { id, at, .. } => {
                (self.store.messages.delete_message(*id, *at)?, false)
            }
            Percept::Reaction {
                place,
                message,
                user,
                emoji,
                added,
                at,
            } => {
                if *added {
                    self.store.discovery.record_reaction(
                        *message,
                        user.id,
                        emoji,
                        place.guild,
                        place.channel,
                        *at,
                    )?;
                } else {
                    self.store
                        .discovery
                        .remove_reaction(*message, user.id, emoji)?;
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

    /// Stores a message with its names; whether it is new.
    /// With `may_group`, one in a server joins the group of writes.
    fn store_message(&self, m: &MessagePercept, may_group: bool) -> Result<bool, StoreError> {
        let grouped = may_group && m.message.guild.is_some();
        let names_known = self.names_known(m);
        let new = self.store.messages.insert_seen(
            &Seen {
                message: &m.message,
                guild_name: m.guild_name.as_deref().filter(|_| !names_known),
                channel_name: m.channel_name.as_deref().filter(|_| !names_known),
                now: self.clock.now(),
            },
            if grouped {
                Commit::Grouped
            } else {
                Commit::Now
            },
        )?;
        if !names_known {
            let names = (m.guild_name.clone(), m.channel_name.clone());
            self.lock_names().insert(m.message.channel, names);
        }
        Ok(new)
    }

    /// Whether `m`'s server and channel names are the ones last written for its channel.
    fn names_known(&self, m: &MessagePercept) -> bool {
        let names = (m.guild_name.clone(), m.channel_name.clone());
        self.lock_names().get(&m.message.channel) == Some(&names)
    }

    fn lock_names(&self) -> std::sync::MutexGuard<'_, HashMap<ChannelId, Names>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub(crate) struct Stores {
    pub messages: MessageStore,
    pub people: PeopleStore,
    pub discovery: DiscoveryStore,
}
