//! The decision: post now, hold a refined thought, or drop it — a typed value
//! from the model's required `decide` call, never words parsed out of prose.
//!
//! The schema is one flat object (some providers refuse a top-level
//! `oneOf`); [`check`] enforces what each action needs. It runs inside the
//! tool loop, so the model hears why a decision was refused and may correct
//! it, and again before anything is sent, so an invalid decision is never
//! acted on: a channel outside the pool, an empty post or an over-long one.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::ids::ChannelId;
use crate::vocab::pending::MediaDirective;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    Post,
    Hold,
    Drop,
}

#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Decision {
    /// post: say it now. hold: keep a (refined) draft to reconsider later. drop: let the thought go.
    pub action: Action,
    /// The channel, by its name as listed under CHANNELS (required to post; optional to hold).
    #[serde(default)]
    pub channel: Option<String>,
    /// For post: the message to send. For hold: the refined draft.
    #[serde(default)]
    pub text: Option<String>,
    /// Optional media to go with the post or the held thought.
    #[serde(default)]
    pub media: Option<MediaDirective>,
    /// Links to include, if they feel natural (e.g. from YOUR FEED).
    #[serde(default)]
    pub links: Vec<String>,
    /// Why, in a sentence (kept in your journal).
    pub reason: String,
}

/// The channels this decision may name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pool {
    pub channels: Vec<(ChannelId, String)>,
}

impl Pool {
    /// A channel by name (`general`, `#general`), mention (`<#123>`) or id.
    pub(crate) fn resolve(&self, name: &str) -> Option<ChannelId> {
        let n = name
            .trim()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .trim_start_matches('#');
        self.channels
            .iter()
            .find(|(id, channel)| channel.eq_ignore_ascii_case(n) || id.to_string() == n)
            .map(|(id, _)| *id)
    }

    pub(crate) fn names(&self) -> String {
        self.channels
            .iter()
            .map(|(_, n)| format!("#{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A decision that passed every check.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Checked {
    Post {
        channel: ChannelId,
        text: String,
        media: Option<MediaDirective>,
        reason: String,
    },
    Hold {
        draft: String,
        channel: Option<ChannelId>,
        media: Option<MediaDirective>,
        reason: String,
    },
    Drop {
        reason: String,
    },
}

/// Why a decision cannot be carried out. The text goes back to the model
/// (it may correct itself) and into the journal, so it says what would do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Rejected {
    #[error("\"{name}\" is not a channel you may post in; choose one of: {choices}")]
    UnknownChannel { name: String, choices: String },
    #[error("to hold a thought, give its draft in `text`")]
    EmptyDraft,
    #[error("to post, name a channel: one of {choices}")]
    NoChannel { choices: String },
    #[error("the post is empty; write the message in `text`, or drop the thought")]
    EmptyPost,
    #[error("{link:?} is not an http(s) link")]
    NotALink { link: String },
    #[error(
        "the post is {chars} characters with its links; the limit is {max} (initiative.text.maxPostChars): shorten it"
    )]
    TooLong { chars: usize, max: usize },
}

pub(crate) fn check(d: &Decision, pool: &Pool, max_chars: usize) -> Result<Checked, Rejected> {
    let text = d.text.as_deref().map(str::trim).unwrap_or("");
    let channel = match &d.channel {
        Some(name) if !name.trim().is_empty() => {
            Some(pool.resolve(name).ok_or_else(|| Rejected::UnknownChannel {
                name: name.trim().to_string(),
                choices: pool.names(),
            })?)
        }
        _ => None,
    };
    match d.action {
        Action::Drop => Ok(Checked::Drop {
            reason: d.reason.clone(),
        }),
        Action::Hold => {
            if text.is_empty() {
                return Err(Rejected::EmptyDraft);
            }
            Ok(Checked::Hold {
                draft: text.to_string(),
                channel,
                media: d.media.clone(),
                reason: d.reason.clone(),
            })
        }
        Action::Post => {
            let channel = channel.ok_or_else(|| Rejected::NoChannel {
                choices: pool.names(),
            })?;
            if text.is_empty() {
                return Err(Rejected::EmptyPost);
            }
            let mut full = text.to_string();
            for link in &d.links {
                let link = link.trim();
                if !(link.starts_with("https://") || link.starts_with("http://")) {
                    return Err(Rejected::NotALink {
                        link: link.to_string(),
                    });
                }
                if !full.contains(link) {
                    full.push('\n');
                    full.push_str(link);
                }
            }
            let n = full.chars().count();
            if n > max_chars {
                return Err(Rejected::TooLong {
                    chars: n,
                    max: max_chars,
                });
            }
            Ok(Checked::Post {
                channel,
                text: full,
                media: d.media.clone(),
                reason: d.reason.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Pool {
        Pool {
            channels: vec![
                (ChannelId(1), "general".into()),
                (ChannelId(2), "memes".into()),
            ],
        }
    }

    fn decision(action: Action, channel: Option<&str>, text: Option<&str>) -> Decision {
        Decision {
            action,
            channel: channel.map(String::from),
            text: text.map(String::from),
            media: None,
            links: vec![],
            reason: "because".into(),
        }
    }

    #[test]
    fn posts_need_a_pool_channel_and_fitting_text() {
        let ok = check(
            &decision(Action::Post, Some("#Memes"), Some("look")),
            &pool(),
            100,
        )
        .unwrap();
        assert!(matches!(
            ok,
            Checked::Post {
                channel: ChannelId(2),
                ..
            }
        ));
        let e = check(
            &decision(Action::Post, Some("secret"), Some("hi")),
            &pool(),
            100,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("\"secret\" is not a channel you may post in")
                && e.contains("#general, #memes"),
            "{e}"
        );
        let e = check(
            &decision(Action::Post, Some("general"), Some("  ")),
            &pool(),
            100,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("empty"), "{e}");
        let e = check(
            &decision(Action::Post, Some("general"), Some(&"x".repeat(101))),
            &pool(),
            100,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("101 characters") && e.contains("limit is 100"),
            "{e}"
        );
        let e = check(&decision(Action::Post, None, Some("hi")), &pool(), 100)
            .unwrap_err()
            .to_string();
        assert!(e.contains("name a channel"), "{e}");
    }

    #[test]
    fn links_are_appended_once_and_counted() {
        let mut d = decision(Action::Post, Some("general"), Some("worth a read"));
        d.links = vec!["https://example.com/a".into()];
        match check(&d, &pool(), 100).unwrap() {
            Checked::Post { text, .. } => assert_eq!(text, "worth a read\nhttps://example.com/a"),
            other => panic!("{other:?}"),
        }
        d.links = vec!["javascript:alert(1)".into()];
        assert!(check(&d, &pool(), 100).is_err());
    }

    #[test]
    fn holds_need_a_draft_and_drops_need_nothing() {
        assert!(check(&decision(Action::Hold, None, None), &pool(), 100).is_err());
        assert!(matches!(
            check(&decision(Action::Hold, None, Some("later")), &pool(), 100),
            Ok(Checked::Hold { .. })
        ));
        assert!(matches!(
            check(&decision(Action::Drop, None, None), &pool(), 100),
            Ok(Checked::Drop { .. })
        ));
    }
}
