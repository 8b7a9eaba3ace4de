//! What a fetch of a feed means for one subscription: which of its items
//! are new, and of those which are delivered.
//!
//! - The first fetch after a subscription is added only notes what the feed
//!   holds (`seen`): adding a feed delivers nothing old — except the newest
//!   `backfill` items, when the owner asked for them.
//! - After that, an item is new when the subscription has not met its key
//!   ([`Dedupe::key`](super::subscription::Dedupe::key): guid, then link,
//!   then title) before; a new item its filters refuse is noted as
//!   `filtered`, so it is never looked at again, and the rest are `queued`
//!   with their fields, oldest first.
//! - An item met twice in one fetch (a feed listing it twice) counts once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::subscription::Look;
use super::template::Fields;
use crate::discovery::parse::Item;
use crate::store::feeds::MetItem;

/// An item's fields as a queued delivery keeps them (JSON in the store).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Kept {
    pub title: String,
    pub link: String,
    #[serde(default)]
    pub author: String,
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub published: Option<DateTime<Utc>>,
    #[serde(default)]
    pub categories: Vec<String>,
}

impl Kept {
    pub(crate) fn of(item: &Item) -> Self {
        Self {
            title: item.title.clone(),
            link: item.url.clone(),
            author: item.author.clone(),
            summary: item.summary.clone(),
            published: item.published,
            categories: item.categories.clone(),
        }
    }

    /// The fields a template renders, `feed` naming the source.
    pub(crate) fn fields(&self, feed: &str) -> Fields {
        Fields {
            title: self.title.clone(),
            link: self.link.clone(),
            author: self.author.clone(),
            summary: self.summary.clone(),
            published: self.published,
            feed: feed.to_string(),
            categories: self.categories.clone(),
        }
    }
}

/// A fetch's items keyed as `look` knows them ([`Dedupe::key`]), each key
/// once (a feed listing an item twice), oldest first: undated items keep
/// the feed's order after the dated ones (feeds list newest first, so
/// reversed). The keys are what the store is asked about before [`plan`].
///
/// [`Dedupe::key`]: super::subscription::Dedupe::key
pub(crate) fn keyed<'a>(look: &Look, items: &'a [Item]) -> Vec<(String, &'a Item)> {
    let mut keyed: Vec<(String, &Item)> = Vec::new();
    for item in items {
        let key = look.dedupe.key(Some(&item.guid), &item.url, &item.title);
        if !keyed.iter().any(|(k, _)| *k == key) {
            keyed.push((key, item));
        }
    }
    keyed.reverse();
    keyed.sort_by_key(|(_, i)| (i.published.is_none(), i.published));
    keyed
}

/// One subscription's view of a fetch ([`keyed`]): what to note of each item.
///
/// `primed` says whether the subscription has met the feed before;
/// `known` says whether it has met an item's key.
pub(crate) fn plan(
    look: &Look,
    primed: bool,
    backfill: usize,
    keyed: Vec<(String, &Item)>,
    known: impl Fn(&str) -> bool,
) -> Vec<MetItem> {
    // On the first fetch, the items from here on are the newest `backfill`.
    let backfilled_from = keyed.len().saturating_sub(backfill);
    keyed
        .into_iter()
        .enumerate()
        .map(|(n, (key, item))| {
            let kept = Kept::of(item);
            let state = match (primed, known(&key)) {
                (_, true) => "seen",
                (false, false) if n < backfilled_from => "seen",
                _ if !look.filters.passes(&kept.fields("")) => "filtered",
                _ => "queued",
            };
            MetItem {
                published_at: item.published,
                item: (state == "queued").then(|| serde_json::to_string(&kept).unwrap_or_default()),
                key,
                state,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feeds::subscription::Dedupe;

    fn item(guid: &str, minutes: i64) -> Item {
        Item {
            title: format!("Post {guid}"),
            url: format!("https://blog.example/{guid}"),
            summary: String::new(),
            published: DateTime::from_timestamp(1_700_000_000 + minutes * 60, 0),
            media: None,
            guid: guid.into(),
            author: "Ann".into(),
            categories: vec!["news".into()],
        }
    }

    fn look(filters: &str) -> Look {
        Look::parse("{title}", filters, false, Dedupe::Guid, &[]).unwrap()
    }

    fn planned(
        filters: &str,
        primed: bool,
        backfill: usize,
        items: &[Item],
        known: impl Fn(&str) -> bool,
    ) -> Vec<MetItem> {
        let look = look(filters);
        plan(&look, primed, backfill, keyed(&look, items), known)
    }

    fn states(plan: &[MetItem]) -> Vec<(&str, &str)> {
        plan.iter().map(|m| (m.key.as_str(), m.state)).collect()
    }

    #[test]
    fn adding_a_feed_delivers_nothing_old() {
        let items = [item("c", 3), item("b", 2), item("a", 1)];
        let p = planned("", false, 0, &items, |_| false);
        assert_eq!(
            states(&p),
            [("g:a", "seen"), ("g:b", "seen"), ("g:c", "seen")]
        );
        assert!(p.iter().all(|m| m.item.is_none()));
    }

    #[test]
    fn the_newest_items_are_delivered_on_add_when_asked() {
        let items = [item("c", 3), item("b", 2), item("a", 1)];
        let p = planned("", false, 2, &items, |_| false);
        assert_eq!(
            states(&p),
            [("g:a", "seen"), ("g:b", "queued"), ("g:c", "queued")]
        );
    }

    #[test]
    fn new_items_are_queued_oldest_first_and_known_ones_stay_seen() {
        let items = [item("d", 4), item("c", 3), item("b", 2)];
        let p = planned("", true, 0, &items, |k| k == "g:b");
        assert_eq!(
            states(&p),
            [("g:b", "seen"), ("g:c", "queued"), ("g:d", "queued")]
        );
        let kept: Kept = serde_json::from_str(p[1].item.as_deref().unwrap()).unwrap();
        assert_eq!(kept.title, "Post c");
        assert_eq!(kept.link, "https://blog.example/c");
    }

    #[test]
    fn a_filtered_item_is_noted_so_it_is_never_looked_at_again() {
        let mut ad = item("ad", 2);
        ad.title = "Sponsored: buy now".into();
        let items = [ad, item("b", 1)];
        let p = planned("exclude title: sponsored", true, 0, &items, |_| false);
        assert_eq!(states(&p), [("g:b", "queued"), ("g:ad", "filtered")]);
    }

    #[test]
    fn an_item_listed_twice_counts_once() {
        let items = [item("a", 1), item("a", 1)];
        let p = planned("", true, 0, &items, |_| false);
        assert_eq!(states(&p), [("g:a", "queued")]);
    }

    #[test]
    fn undated_items_follow_the_dated_in_the_feeds_own_order_reversed() {
        let mut x = item("x", 0);
        x.published = None;
        let mut y = item("y", 0);
        y.published = None;
        // A feed lists newest first: y was added after x.
        let items = [y, x, item("a", 1)];
        let p = planned("", true, 0, &items, |_| false);
        let keys: Vec<&str> = p.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys.last(), Some(&"g:y"), "{keys:?}");
        assert_eq!(keys.iter().position(|k| *k == "g:x"), Some(keys.len() - 2));
    }
}
