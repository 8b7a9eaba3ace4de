//! The attention queue: one queue for everything, served by priority, with
//! per-channel order kept.
//!
//! Items live in *lanes* (one per channel for percepts, one per guild for
//! impulses). A lane hands out one item at a time, in arrival order, and is
//! busy until that item is finished, so messages in a channel are handled in
//! the order they were said. Across lanes the next item is the best lane
//! head: `User` class before `Autonomous`, then higher salience, then older.

use std::collections::{HashMap, HashSet, VecDeque};

use chrono::{DateTime, Utc};

use super::Input;
use super::salience::Salience;
use crate::ids::{ChannelId, GuildId};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Percepts in one channel, kept in order.
    Channel(ChannelId),
    /// Guild-level percepts (a member joining).
    Guild(GuildId),
    /// Impulses for one guild (or for no guild), separate from channel lanes
    /// so autonomous work never sits in front of a person's message.
    Impulses(Option<GuildId>),
}

impl Lane {
    pub fn of(input: &Input) -> Lane {
        match input {
            Input::Percept(p) => match (p.place(), p.guild()) {
                (Some(place), _) => Lane::Channel(place.channel),
                (None, Some(g)) => Lane::Guild(g),
                (None, None) => Lane::Impulses(None),
            },
            Input::Impulse(i) => Lane::Impulses(i.guild),
        }
    }
}

/// An input that attention has scored and queued.
#[derive(Clone, Debug)]
pub struct Attended {
    /// Arrival order, unique per process.
    pub seq: u64,
    pub input: Input,
    pub salience: Salience,
    pub lane: Lane,
    pub queued_at: DateTime<Utc>,
    /// Set when a handler earlier in the chain escalated it: why the
    /// executive should take it even if it would not have on its own.
    pub escalated: Option<String>,
}

#[derive(Default)]
pub(crate) struct AttentionQueue {
    lanes: HashMap<Lane, VecDeque<Attended>>,
    busy: HashSet<Lane>,
    len: usize,
}

impl AttentionQueue {
    pub(crate) fn push(&mut self, item: Attended) {
        self.lanes.entry(item.lane).or_default().push_back(item);
        self.len += 1;
    }

    /// Takes the best item whose lane is free, and marks that lane busy.
    pub(crate) fn pop_ready(&mut self) -> Option<Attended> {
        let best_lane = self
            .lanes
            .iter()
            .filter(|(lane, items)| !self.busy.contains(lane) && !items.is_empty())
            .map(|(lane, items)| (lane, &items[0]))
            .min_by(|(_, a), (_, b)| {
                a.salience
                    .class
                    .cmp(&b.salience.class)
                    .then(b.salience.score.total_cmp(&a.salience.score))
                    .then(a.seq.cmp(&b.seq))
            })
            .map(|(lane, _)| *lane)?;
        let lane_items = self.lanes.get_mut(&best_lane)?;
        let item = lane_items.pop_front()?;
        if lane_items.is_empty() {
            self.lanes.remove(&best_lane);
        }
        self.busy.insert(best_lane);
        self.len -= 1;
        Some(item)
    }

    /// Frees a lane once its item has been handled.
    pub(crate) fn release(&mut self, lane: Lane) {
        self.busy.remove(&lane);
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}
