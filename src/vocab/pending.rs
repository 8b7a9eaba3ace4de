//! The pending thought: at most one held ambient thought per guild.
//!
//! A thought the model chose to hold survives between ticks so it can be
//! refined, redirected or dropped instead of living for one tick only. Its
//! expiry is anchored to when it was first created, so holding and refining
//! can never keep it alive forever. It is stored, so a restart keeps it
//! (an expired one is dropped on load, and journaled).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{ChannelId, GuildId};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    Image,
    Video,
    Gif,
}

impl MediaKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Video => "video",
            MediaKind::Gif => "gif",
        }
    }
}

/// What the model wants generated or attached alongside a post.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MediaDirective {
    /// image, video or gif
    pub kind: MediaKind,
    /// What it should show.
    pub prompt: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PendingThought {
    pub guild: GuildId,
    pub draft: String,
    /// The channel the thought was meant for (it may be redirected later).
    pub channel: Option<ChannelId>,
    /// 1 when first held; +1 each time it is held again.
    pub revision: u32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub last_reason: String,
    pub media: Option<MediaDirective>,
}

impl PendingThought {
    pub fn new(
        guild: GuildId,
        draft: String,
        channel: Option<ChannelId>,
        reason: String,
        media: Option<MediaDirective>,
        now: DateTime<Utc>,
        max_age: chrono::Duration,
    ) -> Self {
        Self {
            guild,
            draft,
            channel,
            revision: 1,
            created_at: now,
            updated_at: now,
            expires_at: now + max_age,
            last_reason: reason,
            media,
        }
    }

    /// Held again: a refined draft, same birth, same expiry.
    pub fn refine(
        &mut self,
        draft: String,
        channel: Option<ChannelId>,
        reason: String,
        media: Option<MediaDirective>,
        now: DateTime<Utc>,
    ) {
        self.draft = draft;
        if channel.is_some() {
            self.channel = channel;
        }
        // A revision that says nothing about media keeps the earlier media plan.
        if media.is_some() {
            self.media = media;
        }
        self.revision += 1;
        self.updated_at = now;
        self.last_reason = reason;
    }

    pub(crate) fn is_expired(&self, now: DateTime<Utc>) -> bool {
        now >= self.expires_at
    }
}
