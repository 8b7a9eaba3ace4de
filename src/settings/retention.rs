//! `storage.retention.*`: how long each kind of record is kept, the rule that
//! a server may only shorten what the operator set, and the words `ambient
//! status` and the dashboard use to say what is kept.
//!
//! The sweep itself is the store's (`store::retention`); this is the
//! settings' side of it: days per kind, 0 for forever.

use super::schema::RetentionSettings;
use crate::store::retention::{Keep, Kind, shorter};

/// One kind of record, as a server owner reads it in a privacy notice.
pub(crate) struct Described {
    pub kind: Kind,
    /// The kind, in a word or two.
    pub name: &'static str,
    /// The key under `storage.retention`.
    pub key: &'static str,
    /// What the records contain.
    pub what: &'static str,
    /// Whether a server may set a shorter value for itself.
    pub per_server: bool,
}

/// Every kind, in the order status, the dashboard and the README list them.
pub(crate) const KINDS: [Described; 7] = [
    Described {
        kind: Kind::Messages,
        name: "messages",
        key: "messagesDays",
        what: "what people said (and the bot), text and voice transcripts",
        per_server: true,
    },
    Described {
        kind: Kind::Journal,
        name: "journal",
        key: "journalDays",
        what: "every decision and its reason; a message's routing line goes with the message",
        per_server: true,
    },
    Described {
        kind: Kind::Usage,
        name: "model usage",
        key: "usageDays",
        what: "each model call's tokens, then daily totals",
        per_server: true,
    },
    Described {
        kind: Kind::Reactions,
        name: "reactions",
        key: "reactionsDays",
        what: "who reacted to which message with what",
        per_server: true,
    },
    Described {
        kind: Kind::Voice,
        name: "voice spans",
        key: "voiceDays",
        what: "when each person spoke in a voice channel",
        per_server: true,
    },
    Described {
        kind: Kind::Discovery,
        name: "feed items",
        key: "discoveryDays",
        what: "items read from feeds (a link once shared is kept)",
        per_server: false,
    },
    Described {
        kind: Kind::Garden,
        name: "garden transcripts",
        key: "gardenDays",
        what: "the garden's cycle transcripts and done queue",
        per_server: true,
    },
];

/// Where the retention keys live.
pub(crate) const PREFIX: &str = "storage.retention.";

impl RetentionSettings {
    pub(crate) fn days(&self, kind: Kind) -> u32 {
        match kind {
            Kind::Messages => self.messages_days,
            Kind::Journal => self.journal_days,
            Kind::Usage => self.usage_days,
            Kind::Reactions => self.reactions_days,
            Kind::Voice => self.voice_days,
            Kind::Discovery => self.discovery_days,
            Kind::Garden => self.garden_days,
        }
    }

    fn days_mut(&mut self, kind: Kind) -> &mut u32 {
        match kind {
            Kind::Messages => &mut self.messages_days,
            Kind::Journal => &mut self.journal_days,
            Kind::Usage => &mut self.usage_days,
            Kind::Reactions => &mut self.reactions_days,
            Kind::Voice => &mut self.voice_days,
            Kind::Discovery => &mut self.discovery_days,
            Kind::Garden => &mut self.garden_days,
        }
    }

    /// What the store's sweep applies.
    pub fn keep(&self) -> Keep {
        Keep::new(|k| self.days(k))
    }

    /// These values, none longer than `operator`'s: a server's overrides
    /// made before the operator shortened the file do not outlive it, and
    /// a kind a server may not set is the operator's.
    pub(crate) fn at_most(&self, operator: &RetentionSettings) -> RetentionSettings {
        let mut out = self.clone();
        for d in &KINDS {
            *out.days_mut(d.kind) = if d.per_server {
                shorter(operator.days(d.kind), self.days(d.kind))
            } else {
                operator.days(d.kind)
            };
        }
        out
    }
}

/// The kind a retention setting path names (`storage.retention.messagesDays`).
pub(crate) fn kind_of(path: &str) -> Option<&'static Described> {
    let key = path.strip_prefix(PREFIX)?;
    KINDS.iter().find(|d| d.key == key)
}

/// "30 days", or "forever".
pub(crate) fn days_text(days: u32) -> String {
    match days {
        0 => "forever".into(),
        1 => "1 day".into(),
        n => format!("{n} days"),
    }
}

/// What is kept and for how long, one line a kind: "messages: 30 days — what
/// people said …" (`ambient status`).
pub(crate) fn kept_lines(operator: &RetentionSettings) -> Vec<String> {
    KINDS
        .iter()
        .map(|d| {
            format!(
                "{}: {} — {} (storage.retention.{})",
                d.name,
                days_text(operator.days(d.kind)),
                d.what,
                d.key
            )
        })
        .collect()
}

/// The kinds a server keeps for less than the operator: "messages 7 days,
/// journal 30 days"; `None` when it keeps what the operator does.
pub(crate) fn shorter_here(
    operator: &RetentionSettings,
    theirs: &RetentionSettings,
) -> Option<String> {
    let parts: Vec<String> = KINDS
        .iter()
        .filter(|d| theirs.days(d.kind) != operator.days(d.kind))
        .map(|d| format!("{} {}", d.name, days_text(theirs.days(d.kind))))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Why a server's value for `kind` is refused, if it is: it may keep
/// records for less than the operator, never for longer (0, forever, is
/// longer than any number of days).
pub(crate) fn longer_than_operator(operator: u32, theirs: u32) -> bool {
    shorter(operator, theirs) != theirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_may_shorten_never_lengthen() {
        // (operator, server's, refused)
        for (op, theirs, refused) in [
            (30, 7, false),
            (30, 30, false),
            (30, 31, true),
            (30, 0, true),
            (0, 365, false),
            (0, 0, false),
        ] {
            assert_eq!(
                longer_than_operator(op, theirs),
                refused,
                "operator {op}, server {theirs}"
            );
        }
    }

    #[test]
    fn a_stored_override_never_outlives_a_shorter_file() {
        let operator = RetentionSettings {
            messages_days: 10,
            discovery_days: 30,
            ..Default::default()
        };
        let theirs = RetentionSettings {
            messages_days: 20,
            journal_days: 5,
            discovery_days: 1,
            ..Default::default()
        };
        let got = theirs.at_most(&operator);
        assert_eq!(got.messages_days, 10, "the operator shortened since");
        assert_eq!(got.journal_days, 5, "the server's shorter value holds");
        assert_eq!(got.discovery_days, 30, "not a server's to set");
    }
}
