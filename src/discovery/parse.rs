//! Response bodies → normalised feed items (title, url, summary, published
//! time, media hint). Every parser treats its input as hostile: a malformed
//! document is an error for its source, never a panic, and XML entities are
//! never expanded (feed-rs keeps unknown ones as text), so a "billion laughs"
//! document is just an odd title.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::net::html;

const SUMMARY_CHARS: usize = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediaHint {
    Image,
    Video,
}

impl MediaHint {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MediaHint::Image => "image",
            MediaHint::Video => "video",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub title: String,
    pub url: String,
    pub summary: String,
    pub published: Option<DateTime<Utc>>,
    pub media: Option<MediaHint>,
    /// The feed's own id for it (an RSS guid, an Atom id, a Reddit post's
    /// name, a Hacker News id); empty when it has none.
    pub guid: String,
    /// Who wrote it, as the feed names them; empty when it does not.
    pub author: String,
    /// The feed's categories or tags for it (a Reddit post's flair).
    pub categories: Vec<String>,
}

/// Bounds on what a feed may say of one item beyond its title and summary.
const GUID_CHARS: usize = 300;
const AUTHOR_CHARS: usize = 100;
const CATEGORY_CHARS: usize = 50;
const MAX_CATEGORIES: usize = 10;

/// Up to `max` characters of `s`, trimmed.
fn bounded(s: &str, max: usize) -> String {
    s.trim()
        .chars()
        .take(max)
        .collect::<String>()
        .trim()
        .to_string()
}

fn categories<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let name = bounded(&plain(name, CATEGORY_CHARS * 2), CATEGORY_CHARS);
        if !name.is_empty() && !out.contains(&name) && out.len() < MAX_CATEGORIES {
            out.push(name);
        }
    }
    out
}

fn plain(html_text: &str, max: usize) -> String {
    if html_text.contains('<') || html_text.contains('&') {
        html::readable(html_text, max).1.replace('\n', " ")
    } else {
        html_text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(max)
            .collect()
    }
}

/// A body that is not what its source kind promises; the message names which.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("not a valid RSS or Atom feed: {0}")]
    Feed(#[source] feed_rs::parser::ParseFeedError),
    #[error("not a Reddit listing (invalid JSON: {0})")]
    RedditJson(#[source] serde_json::Error),
    #[error("not a Reddit listing (no data.children)")]
    RedditShape,
    #[error("not a Hacker News id list: {0}")]
    HnTop(#[source] serde_json::Error),
    #[error("not a Hacker News item: {0}")]
    HnItem(#[source] serde_json::Error),
}

/// RSS 2.0, RSS 1.0 or Atom (YouTube channel feeds and X bridges are Atom/RSS too).
pub fn feed(bytes: &[u8]) -> Result<Vec<Item>, ParseError> {
    let feed = feed_rs::parser::parse(bytes).map_err(ParseError::Feed)?;
    let youtube = feed.id.starts_with("yt:channel:");
    Ok(feed
        .entries
        .into_iter()
        .filter_map(|e| {
            let url = e
                .links
                .iter()
                .find(|l| l.rel.as_deref().is_none_or(|r| r == "alternate"))
                .or(e.links.first())
                .map(|l| l.href.clone())
                .or_else(|| (e.id.starts_with("http")).then(|| e.id.clone()))?;
            let title = plain(&e.title.map(|t| t.content).unwrap_or_default(), 300);
            if title.is_empty() {
                return None;
            }
            let summary_html = e
                .summary
                .map(|s| s.content)
                .or_else(|| e.content.and_then(|c| c.body))
                .or_else(|| {
                    e.media
                        .iter()
                        .find_map(|m| m.description.as_ref().map(|d| d.content.clone()))
                })
                .unwrap_or_default();
            let media = if youtube
                || e.media.iter().any(|m| {
                    m.content
                        .iter()
                        .any(|c| c.content_type.as_ref().is_some_and(|t| t.ty() == "video"))
                }) {
                Some(MediaHint::Video)
            } else if e.media.iter().any(|m| {
                !m.thumbnails.is_empty()
                    || m.content
                        .iter()
                        .any(|c| c.content_type.as_ref().is_some_and(|t| t.ty() == "image"))
            }) {
                Some(MediaHint::Image)
            } else {
                None
            };
            let author = e
                .authors
                .first()
                .map(|a| plain(person(a.name.as_deref().unwrap_or("")), AUTHOR_CHARS));
            Some(Item {
                title,
                url,
                summary: plain(&summary_html, SUMMARY_CHARS),
                published: e.published.or(e.updated),
                media,
                guid: bounded(&e.id, GUID_CHARS),
                author: author.unwrap_or_default(),
                categories: categories(
                    e.categories
                        .iter()
                        .map(|c| c.label.as_deref().unwrap_or(&c.term)),
                ),
            })
        })
        .collect())
}

/// A Reddit listing (`/r/<sub>/hot.json`).
pub(crate) fn reddit(bytes: &[u8], base: &str) -> Result<Vec<Item>, ParseError> {
    let v: Value = serde_json::from_slice(bytes).map_err(ParseError::RedditJson)?;
    let children = v
        .pointer("/data/children")
        .and_then(Value::as_array)
        .ok_or(ParseError::RedditShape)?;
    Ok(children
        .iter()
        .filter_map(|c| {
            let d = c.get("data")?;
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
            if d.get("stickied").and_then(Value::as_bool) == Some(true)
                || d.get("over_18").and_then(Value::as_bool) == Some(true)
            {
                return None;
            }
            let title = plain(d.get("title")?.as_str()?, 300);
            let permalink = d
                .get("permalink")
                .and_then(Value::as_str)
                .map(|p| format!("{}{p}", base.trim_end_matches('/')));
            let is_self = d.get("is_self").and_then(Value::as_bool).unwrap_or(false);
            let url = if is_self {
                permalink.clone()
            } else {
                d.get("url")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .or(permalink.clone())
            }?;
            let media = if d.get("is_video").and_then(Value::as_bool) == Some(true) {
                Some(MediaHint::Video)
            } else if d.get("post_hint").and_then(Value::as_str) == Some("image") {
                Some(MediaHint::Image)
            } else {
                None
            };
            Some(Item {
                title,
                url,
                summary: plain(
                    d.get("selftext").and_then(Value::as_str).unwrap_or(""),
                    SUMMARY_CHARS,
                ),
                published: d
                    .get("created_utc")
                    .and_then(Value::as_f64)
                    .and_then(|t| DateTime::from_timestamp(t as i64, 0)),
                media,
                guid: bounded(text("name"), GUID_CHARS),
                author: plain(text("author"), AUTHOR_CHARS),
                categories: categories(Some(text("link_flair_text")).into_iter()),
            })
        })
        .collect())
}

/// Hacker News `topstories.json`: a list of ids.
pub(crate) fn hn_top(bytes: &[u8]) -> Result<Vec<u64>, ParseError> {
    serde_json::from_slice::<Vec<u64>>(bytes).map_err(ParseError::HnTop)
}

/// One Hacker News `item/<id>.json`; `None` for items that are not stories with a title.
pub(crate) fn hn_item(bytes: &[u8]) -> Result<Option<Item>, ParseError> {
    let v: Value = serde_json::from_slice(bytes).map_err(ParseError::HnItem)?;
    if v.get("dead").and_then(Value::as_bool) == Some(true)
        || v.get("deleted").and_then(Value::as_bool) == Some(true)
    {
        return Ok(None);
    }
    let Some(title) = v.get("title").and_then(Value::as_str) else {
        return Ok(None);
    };
    let id = v.get("id").and_then(Value::as_u64).unwrap_or(0);
    let url = v
        .get("url")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| format!("https://news.ycombinator.com/item?id={id}"));
    let points = v.get("score").and_then(Value::as_u64).unwrap_or(0);
    Ok(Some(Item {
        title: plain(title, 300),
        url,
        summary: format!("{points} points on Hacker News"),
        published: v
            .get("time")
            .and_then(Value::as_i64)
            .and_then(|t| DateTime::from_timestamp(t, 0)),
        media: None,
        guid: id.to_string(),
        author: plain(
            v.get("by").and_then(Value::as_str).unwrap_or(""),
            AUTHOR_CHARS,
        ),
        categories: Vec::new(),
    }))
}

/// A person's name as RSS writes an author (`ann@example.org (Ann)`, or
/// only what is left of it once the address is taken out: `(Ann)`): the
/// name in the parentheses; anything else as it is.
fn person(author: &str) -> &str {
    let a = author.trim();
    match (a.rfind('('), a.ends_with(')')) {
        (Some(open), true) if a.len() - open > 2 => a[open + 1..a.len() - 1].trim(),
        _ => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_with_html_descriptions_becomes_plain_items() {
        let xml = br#"<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
            <item><title>Hello &amp; welcome</title><link>https://blog.example/hello</link>
            <description>&lt;p&gt;A &lt;b&gt;bold&lt;/b&gt; start&lt;/p&gt;</description>
            <pubDate>Mon, 05 Jan 2026 10:00:00 GMT</pubDate></item></channel></rss>"#;
        let items = feed(xml).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].title, "Hello & welcome");
        assert_eq!(items[0].summary, "A bold start");
        assert_eq!(items[0].url, "https://blog.example/hello");
        assert!(items[0].published.is_some());
    }

    #[test]
    fn an_items_guid_author_and_categories_are_read_and_bounded() {
        let many: String = (0..15)
            .map(|i| format!("<category>tag {i}</category>"))
            .collect();
        let xml = format!(
            r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
            <item><title>Release</title><link>https://blog.example/r</link>
            <guid isPermaLink="false">urn:blog:42</guid><author>ann@example.org (Ann)</author>
            <category>release</category><category>release</category>{many}
            <category>{long}</category></item></channel></rss>"#,
            long = "x".repeat(500)
        );
        let items = feed(xml.as_bytes()).unwrap();
        assert_eq!(items[0].guid, "urn:blog:42");
        assert_eq!(items[0].author, "Ann");
        assert_eq!(items[0].categories.len(), MAX_CATEGORIES);
        assert_eq!(items[0].categories[0], "release", "repeats are dropped");
        let atom = br#"<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><id>f</id>
            <entry><id>tag:blog,2026:1</id><title>One</title><link href="https://blog.example/1"/>
            <author><name>Bo</name></author><category term="news" label="News"/></entry></feed>"#;
        let items = feed(atom).unwrap();
        assert_eq!(items[0].guid, "tag:blog,2026:1");
        assert_eq!(items[0].author, "Bo");
        assert_eq!(items[0].categories, ["News"]);
    }

    #[test]
    fn malformed_and_hostile_xml_fail_cleanly() {
        assert!(feed(b"<rss><channel><item><title>oops").is_err());
        assert!(feed(b"not xml at all").is_err());
        let laughs = br#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
            <rss version="2.0"><channel><title>x</title><item><title>&lol3;</title><link>https://e.example/a</link></item></channel></rss>"#;
        if let Ok(items) = feed(laughs) {
            assert!(
                items.iter().all(|i| i.title.len() < 100),
                "entities were not expanded"
            );
        }
    }
}
