//! One subscription: a feed, where its items go, and how they look.
//!
//! What the owner chose is kept as they typed it (the template, the
//! filters), checked again when read back, so a rule a newer version would
//! refuse is reported, not delivered around.

use std::fmt;

use super::filter::{FilterError, Filters};
use super::template::{Template, TemplateError};
use crate::discovery::canonical::{canonical_url, title_key};
use crate::ids::RoleId;

/// Where a subscription's items go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// A message in a text or announcement channel (or a thread the owner made).
    Channel,
    /// A message in a text channel, and a thread started from it for the item.
    ThreadPerItem,
    /// A post in a forum channel: the item's title names it, tags from its categories.
    Forum,
}

impl Destination {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Destination::Channel => "channel",
            Destination::ThreadPerItem => "thread",
            Destination::Forum => "forum",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "channel" => Some(Destination::Channel),
            "thread" => Some(Destination::ThreadPerItem),
            "forum" => Some(Destination::Forum),
            _ => None,
        }
    }
}

/// Which of an item's identities says it was delivered before: the first
/// the item has, from this one down (a guid, then its link, then its title).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Dedupe {
    #[default]
    Guid,
    Link,
    Title,
}

impl Dedupe {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Dedupe::Guid => "guid",
            Dedupe::Link => "link",
            Dedupe::Title => "title",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "guid" | "id" => Some(Dedupe::Guid),
            "link" | "url" => Some(Dedupe::Link),
            "title" => Some(Dedupe::Title),
            _ => None,
        }
    }

    /// The key an item is remembered by: `g:` its guid, `l:` its canonical
    /// link, `t:` its title's key — the first it has, from this rule down.
    pub(crate) fn key(self, guid: Option<&str>, link: &str, title: &str) -> String {
        let guid = guid.map(str::trim).filter(|g| !g.is_empty());
        let link = link.trim();
        match (self, guid) {
            (Dedupe::Guid, Some(g)) => format!("g:{g}"),
            (Dedupe::Guid | Dedupe::Link, _) if !link.is_empty() => {
                format!("l:{}", canonical_url(link))
            }
            _ => format!("t:{}", title_key(title)),
        }
    }
}

/// Why what the owner typed cannot be saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookError {
    #[error("template: {0}")]
    Template(#[from] TemplateError),
    #[error("filters: {0}")]
    Filters(#[from] FilterError),
}

/// How a subscription's items look and which are delivered.
#[derive(Clone, PartialEq)]
pub(crate) struct Look {
    pub template: Template,
    pub filters: Filters,
    /// An embed with the item (title, link, summary, author, time) besides the text.
    pub embed: bool,
    pub dedupe: Dedupe,
}

impl fmt::Debug for Look {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Look")
            .field("template", &self.template.as_str())
            .field("filters", &self.filters.as_str())
            .field("embed", &self.embed)
            .field("dedupe", &self.dedupe)
            .finish()
    }
}

impl Look {
    /// Checks a template and filters as typed, against the roles a feed may ping.
    pub(crate) fn parse(
        template: &str,
        filters: &str,
        embed: bool,
        dedupe: Dedupe,
        allowed_roles: &[RoleId],
    ) -> Result<Self, LookError> {
        Ok(Self {
            template: Template::parse(template, allowed_roles)?,
            filters: Filters::parse(filters)?,
            embed,
            dedupe,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_is_known_by_its_guid_then_its_link_then_its_title() {
        let g = Dedupe::Guid;
        assert_eq!(g.key(Some("urn:1"), "https://x.example/a", "A"), "g:urn:1");
        assert_eq!(
            g.key(Some("  "), "https://x.example/a?utm_source=feed", "A"),
            format!("l:{}", canonical_url("https://x.example/a"))
        );
        assert_eq!(
            g.key(None, "", "Hello, World"),
            format!("t:{}", title_key("Hello, World"))
        );
        assert_eq!(
            Dedupe::Link.key(Some("urn:1"), "https://x.example/a", "A"),
            format!("l:{}", canonical_url("https://x.example/a")),
            "a link rule ignores the guid"
        );
        assert_eq!(
            Dedupe::Title.key(Some("urn:1"), "https://x.example/a", "A Title"),
            format!("t:{}", title_key("A Title"))
        );
    }

    #[test]
    fn a_look_names_which_part_is_wrong() {
        let e = Look::parse("{titel}", "", false, Dedupe::Guid, &[]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("template: unknown placeholder {titel}"),
            "{e}"
        );
        let e = Look::parse("{title}", "keep title: x", false, Dedupe::Guid, &[]).unwrap_err();
        assert!(e.to_string().starts_with("filters: filter rule 1"), "{e}");
    }

    #[test]
    fn names_read_back_as_written() {
        for d in [
            Destination::Channel,
            Destination::ThreadPerItem,
            Destination::Forum,
        ] {
            assert_eq!(Destination::parse(d.as_str()), Some(d));
        }
        for d in [Dedupe::Guid, Dedupe::Link, Dedupe::Title] {
            assert_eq!(Dedupe::parse(d.as_str()), Some(d));
        }
    }
}
