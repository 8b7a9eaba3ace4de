//! Feed sources: what kinds exist, how each is named, where it is fetched.
//!
//! A source is a kind and a target: an RSS/Atom feed URL, a subreddit, a
//! YouTube channel id, an X handle (through an RSS bridge: X has no free
//! API), or Hacker News' top stories. A guild's sources are the settings'
//! lists for that guild plus the ones added for it at runtime (by a person
//! with `/discovery add`, or by the bot itself when self-curation is on).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::settings::{DiscoverySettings, Settings};

#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Rss,
    Reddit,
    Youtube,
    X,
    Hackernews,
}

impl SourceKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SourceKind::Rss => "rss",
            SourceKind::Reddit => "reddit",
            SourceKind::Youtube => "youtube",
            SourceKind::X => "x",
            SourceKind::Hackernews => "hackernews",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<SourceKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "rss" | "atom" => Some(SourceKind::Rss),
            "reddit" => Some(SourceKind::Reddit),
            "youtube" => Some(SourceKind::Youtube),
            "x" | "twitter" => Some(SourceKind::X),
            "hn" | "hackernews" => Some(SourceKind::Hackernews),
            _ => None,
        }
    }

    pub(crate) fn enabled(self, d: &DiscoverySettings) -> bool {
        match self {
            SourceKind::Rss => d.sources.rss,
            SourceKind::Reddit => d.sources.reddit,
            SourceKind::Youtube => d.sources.youtube,
            SourceKind::X => d.sources.x,
            SourceKind::Hackernews => d.sources.hacker_news,
        }
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceSpec {
    pub kind: SourceKind,
    /// Feed URL, subreddit name, channel id, handle, or "top" for Hacker News.
    pub target: String,
}

/// Why a source cannot be made or fetched; names the target as typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("{target:?} is not a feed URL")]
    NotAUrl { target: String },
    #[error("{target:?} is not an http(s) feed URL")]
    NotHttp { target: String },
    #[error("{target:?} is not a subreddit name (2–21 letters, digits or _)")]
    NotASubreddit { target: String },
    #[error("{target:?} is not a YouTube channel id (UC and 22 more characters)")]
    NotAYoutubeChannel { target: String },
    #[error("{target:?} is not an X handle (1–15 letters, digits or _)")]
    NotAnXHandle { target: String },
    #[error("X needs an RSS bridge: set initiative.discovery.xBridgeBaseUrl")]
    NoXBridge,
}

impl SourceSpec {
    /// Normalises what a person or the model typed into a source, or says what is wrong.
    pub fn new(kind: SourceKind, target: &str) -> Result<Self, SourceError> {
        let t = target.trim();
        let target = || t.to_string();
        let target = match kind {
            SourceKind::Rss => {
                let u =
                    url::Url::parse(t).map_err(|_| SourceError::NotAUrl { target: target() })?;
                if u.scheme() != "http" && u.scheme() != "https" {
                    return Err(SourceError::NotHttp { target: target() });
                }
                u.to_string()
            }
            SourceKind::Reddit => {
                let name = t.trim_start_matches("/r/").trim_start_matches("r/");
                if !(2..=21).contains(&name.len())
                    || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    return Err(SourceError::NotASubreddit { target: target() });
                }
                name.to_ascii_lowercase()
            }
            SourceKind::Youtube => {
                if t.len() != 24
                    || !t.starts_with("UC")
                    || !t[2..]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(SourceError::NotAYoutubeChannel { target: target() });
                }
                t.to_string()
            }
            SourceKind::X => {
                let h = t.trim_start_matches('@');
                if !(1..=15).contains(&h.len())
                    || !h.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    return Err(SourceError::NotAnXHandle { target: target() });
                }
                h.to_ascii_lowercase()
            }
            SourceKind::Hackernews => "top".to_string(),
        };
        Ok(Self { kind, target })
    }

    /// How people read it: `r/rust`, `@rustlang`, the feed URL.
    pub fn label(&self) -> String {
        match self.kind {
            SourceKind::Rss => self.target.clone(),
            SourceKind::Reddit => format!("r/{}", self.target),
            SourceKind::Youtube => format!("youtube {}", self.target),
            SourceKind::X => format!("@{}", self.target),
            SourceKind::Hackernews => "Hacker News top stories".into(),
        }
    }

    /// The URL fetched for this source.
    pub(crate) fn url(&self, d: &DiscoverySettings, limit: u32) -> Result<String, SourceError> {
        let base = |b: &str| b.trim_end_matches('/').to_string();
        Ok(match self.kind {
            SourceKind::Rss => self.target.clone(),
            SourceKind::Reddit => format!(
                "{}/r/{}/hot.json?limit={limit}&raw_json=1",
                base(&d.reddit_base_url),
                self.target
            ),
            SourceKind::Youtube => format!(
                "{}/feeds/videos.xml?channel_id={}",
                base(&d.youtube_base_url),
                self.target
            ),
            SourceKind::X => {
                if d.x_bridge_base_url.is_empty() {
                    return Err(SourceError::NoXBridge);
                }
                // `{handle}` in the bridge URL is replaced; otherwise Nitter's `/<handle>/rss` is assumed.
                if d.x_bridge_base_url.contains("{handle}") {
                    d.x_bridge_base_url.replace("{handle}", &self.target)
                } else {
                    format!("{}/{}/rss", base(&d.x_bridge_base_url), self.target)
                }
            }
            SourceKind::Hackernews => {
                format!("{}/v0/topstories.json", base(&d.hacker_news_base_url))
            }
        })
    }
}

/// The sources a guild's settings name, for the enabled kinds.
pub(crate) fn configured(settings: &Settings) -> Vec<SourceSpec> {
    let d = &settings.initiative.discovery;
    let mut out = Vec::new();
    let mut add = |kind: SourceKind, targets: &[String]| {
        if kind.enabled(d) {
            out.extend(targets.iter().filter_map(|t| SourceSpec::new(kind, t).ok()));
        }
    };
    add(SourceKind::Rss, &d.rss_feeds);
    add(SourceKind::Reddit, &d.reddit_subreddits);
    add(SourceKind::Youtube, &d.youtube_channel_ids);
    add(SourceKind::X, &d.x_handles);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_normalised_or_explained() {
        assert_eq!(
            SourceSpec::new(SourceKind::Reddit, "r/Rust")
                .unwrap()
                .target,
            "rust"
        );
        assert_eq!(
            SourceSpec::new(SourceKind::X, "@RustLang").unwrap().label(),
            "@rustlang"
        );
        assert!(
            SourceSpec::new(SourceKind::Rss, "ftp://x/feed")
                .unwrap_err()
                .to_string()
                .contains("http(s)")
        );
        assert!(
            SourceSpec::new(SourceKind::Youtube, "UC123")
                .unwrap_err()
                .to_string()
                .contains("YouTube channel id")
        );
        let d = DiscoverySettings {
            x_bridge_base_url: "https://rsshub.example/twitter/user/{handle}".into(),
            ..Default::default()
        };
        let x = SourceSpec::new(SourceKind::X, "rustlang").unwrap();
        assert_eq!(
            x.url(&d, 10).unwrap(),
            "https://rsshub.example/twitter/user/rustlang"
        );
        let r = SourceSpec::new(SourceKind::Reddit, "rust").unwrap();
        assert_eq!(
            r.url(&d, 10).unwrap(),
            "https://www.reddit.com/r/rust/hot.json?limit=10&raw_json=1"
        );
    }
}
