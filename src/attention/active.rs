//! Which channels are ACTIVE: a person and the bot exchanged messages there
//! recently. While a channel is ACTIVE, new turns belong to the immediate
//! reply path, the initiative tick does not post there, and the garden slows.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::ids::{ChannelId, GuildId};

/// Each active channel's guild, and until when it counts as active.
type Until = HashMap<ChannelId, (Option<GuildId>, DateTime<Utc>)>;

#[derive(Default)]
pub struct ActiveChannels {
    until: Mutex<Until>,
}

impl ActiveChannels {
    /// Keeps `channel` ACTIVE until `until` (extending, never shortening).
    pub fn mark(&self, guild: Option<GuildId>, channel: ChannelId, until: DateTime<Utc>) {
        let mut map = self.until.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map.entry(channel).or_insert((guild, until));
        if until > entry.1 {
            entry.1 = until;
        }
    }

    pub(crate) fn is_active(&self, channel: ChannelId, now: DateTime<Utc>) -> bool {
        self.until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&channel)
            .is_some_and(|(_, until)| *until > now)
    }

    /// Channels ACTIVE right now, optionally only in one guild.
    pub(crate) fn active_channels(
        &self,
        guild: Option<GuildId>,
        now: DateTime<Utc>,
    ) -> Vec<ChannelId> {
        let mut map = self.until.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, (_, until)| *until > now);
        map.iter()
            .filter(|(_, (g, _))| guild.is_none() || *g == guild)
            .map(|(c, _)| *c)
            .collect()
    }

    /// Whether anyone is talking with the bot anywhere.
    pub(crate) fn any_active(&self, now: DateTime<Utc>) -> bool {
        !self.active_channels(None, now).is_empty()
    }
}
