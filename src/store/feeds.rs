//! Persistence for feeds people subscribe to: each guild's subscriptions,
//! and one delivery row per item a subscription has seen.
//!
//! A delivery row is the memory that an item was met before — noted when
//! the subscription was added (`seen`), refused by its filters
//! (`filtered`), waiting its turn (`queued`), handed to Discord
//! (`sending`), posted (`sent`), or given up because its kept fields could
//! not be read (`dropped`) — so nothing is delivered twice across
//! restarts. A row the feed has not listed for [`FORGET_AFTER_DAYS`] is
//! forgotten (never one still waiting). `sending` is written and committed before the request goes
//! out: a crash between the two leaves a row the next start sends again
//! with the same nonce, which Discord de-duplicates. The store knows
//! nothing of templates or filters: it keeps what the owner typed as text.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, params};

use super::{FeedStore, Result, from_ms, to_ms};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};

/// Days after which an item the feed no longer lists is forgotten.
pub(crate) const FORGET_AFTER_DAYS: i64 = 90;

/// A subscription as stored: what it was made of, and how it has fared.
#[derive(Clone, Debug, PartialEq)]
pub struct SubscriptionRow {
    pub id: i64,
    pub made: NewSubscription,
    pub primed: bool,
    pub paused: Option<String>,
    pub failures: u32,
    pub last_delivered_at: Option<DateTime<Utc>>,
}

/// What a new subscription is made of.
#[derive(Clone, Debug, PartialEq)]
pub struct NewSubscription {
    pub guild: GuildId,
    pub source_id: i64,
    pub channel: ChannelId,
    pub destination: String,
    pub template: String,
    pub filters: String,
    pub embed: bool,
    pub dedupe: String,
    pub backfill: u32,
    pub created_by: UserId,
    pub created_at: DateTime<Utc>,
}

/// One item a subscription met in a fetch, keyed and (for a queued one) with
/// its fields.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MetItem {
    pub key: String,
    pub published_at: Option<DateTime<Utc>>,
    /// `seen`, `filtered` or `queued`.
    pub state: &'static str,
    /// The item's fields as JSON, kept while it waits to be sent.
    pub item: Option<String>,
}

/// An item waiting to be sent, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Waiting {
    pub key: String,
    pub item: String,
    pub published_at: Option<DateTime<Utc>>,
    /// Handed to Discord once already, before a crash or a failure.
    pub sending: bool,
}

/// How a subscription's deliveries stand, for `/feeds list` and the dashboard.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeliveryCounts {
    pub sent: u64,
    pub waiting: u64,
    pub filtered: u64,
}

const SUBSCRIPTION: &str = "id, guild_id, source_id, channel_id, destination, template, filters, \
     embed, dedupe, backfill, primed, paused, failures, created_by, created_at, last_delivered_at";

fn subscription_row(r: &Row<'_>) -> rusqlite::Result<SubscriptionRow> {
    Ok(SubscriptionRow {
        id: r.get(0)?,
        made: NewSubscription {
            guild: GuildId::from_sql(r.get(1)?),
            source_id: r.get(2)?,
            channel: ChannelId::from_sql(r.get(3)?),
            destination: r.get(4)?,
            template: r.get(5)?,
            filters: r.get(6)?,
            embed: r.get(7)?,
            dedupe: r.get(8)?,
            backfill: r.get(9)?,
            created_by: UserId::from_sql(r.get(13)?),
            created_at: from_ms(r.get(14)?),
        },
        primed: r.get(10)?,
        paused: r.get(11)?,
        failures: r.get(12)?,
        last_delivered_at: r.get::<_, Option<i64>>(15)?.map(from_ms),
    })
}

impl FeedStore {
    /// Saves a new subscription; `None` when this guild already has the
    /// same feed in the same channel.
    pub(crate) fn add_feed_subscription(&self, s: &NewSubscription) -> Result<Option<i64>> {
        let conn = self.0.lock();
        let added = conn.execute(
            "INSERT OR IGNORE INTO feed_subscriptions (guild_id, source_id, channel_id, destination,
                 template, filters, embed, dedupe, backfill, created_by, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                s.guild.to_sql(),
                s.source_id,
                s.channel.to_sql(),
                s.destination,
                s.template,
                s.filters,
                s.embed,
                s.dedupe,
                s.backfill,
                s.created_by.to_sql(),
                to_ms(s.created_at),
            ],
        )?;
        Ok((added == 1).then(|| conn.last_insert_rowid()))
    }

    /// A guild's subscriptions, oldest first.
    pub(crate) fn feed_subscriptions(&self, guild: GuildId) -> Result<Vec<SubscriptionRow>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {SUBSCRIPTION} FROM feed_subscriptions WHERE guild_id = ?1 ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([guild.to_sql()], subscription_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// One of a guild's subscriptions (another guild's id finds nothing).
    /// Every server's subscriptions, by server, oldest first.
    pub(crate) fn all_feed_subscriptions(&self) -> Result<Vec<SubscriptionRow>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {SUBSCRIPTION} FROM feed_subscriptions ORDER BY guild_id, id"
        ))?;
        let rows = stmt
            .query_map([], subscription_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    pub fn feed_subscription(&self, guild: GuildId, id: i64) -> Result<Option<SubscriptionRow>> {
        Ok(self
            .0
            .lock()
            .query_row(
                &format!(
                    "SELECT {SUBSCRIPTION} FROM feed_subscriptions WHERE guild_id = ?1 AND id = ?2"
                ),
                params![guild.to_sql(), id],
                subscription_row,
            )
            .optional()?)
    }

    /// Every subscription to a source, every guild's: what one fetch feeds.
    pub(crate) fn feed_subscriptions_of_source(
        &self,
        source_id: i64,
    ) -> Result<Vec<SubscriptionRow>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {SUBSCRIPTION} FROM feed_subscriptions WHERE source_id = ?1 ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([source_id], subscription_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// The sources any subscription reads, as `(kind, target)`.
    pub(crate) fn subscribed_sources(&self) -> Result<Vec<(String, String)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT d.kind, d.target FROM feed_subscriptions s
             JOIN discovery_sources d ON d.id = s.source_id ORDER BY d.kind, d.target",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Removes a guild's subscription and its deliveries; whether there was one.
    /// Whether some subscription reads source `id` (it is then fetched at
    /// the feeds' interval when that is shorter).
    pub(crate) fn is_subscribed_source(&self, source_id: i64) -> Result<bool> {
        Ok(self
            .0
            .lock()
            .prepare_cached("SELECT 1 FROM feed_subscriptions WHERE source_id = ?1 LIMIT 1")?
            .exists([source_id])?)
    }

    /// The subscriptions, not paused, with an item waiting to be sent, in
    /// the order they were made.
    pub(crate) fn feed_subscriptions_waiting(&self) -> Result<Vec<SubscriptionRow>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {SUBSCRIPTION} FROM feed_subscriptions s
             WHERE paused IS NULL AND EXISTS (SELECT 1 FROM feed_deliveries d
                 WHERE d.subscription_id = s.id AND d.state IN ('queued', 'sending'))
             ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([], subscription_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// A fetch that worked (even one that found nothing new) ends a run of failures.
    pub(crate) fn clear_feed_failures(&self, id: i64) -> Result<()> {
        self.0.lock().execute(
            "UPDATE feed_subscriptions SET failures = 0 WHERE id = ?1",
            [id],
        )?;
        Ok(())
    }

    /// Gives up on a waiting item that cannot be sent (its kept fields are
    /// unreadable): noted as `dropped`, so it is never met as new again.
    pub(crate) fn drop_feed_item(&self, id: i64, key: &str) -> Result<()> {
        self.0.lock().execute(
            "UPDATE feed_deliveries SET state = 'dropped', item = NULL
             WHERE subscription_id = ?1 AND item_key = ?2",
            params![id, key],
        )?;
        Ok(())
    }

    pub(crate) fn remove_feed_subscription(&self, guild: GuildId, id: i64) -> Result<bool> {
        // Its deliveries go with it: `ON DELETE CASCADE`, with the foreign
        // keys the store turns on when it opens.
        let removed = self.0.lock().execute(
            "DELETE FROM feed_subscriptions WHERE guild_id = ?1 AND id = ?2",
            params![guild.to_sql(), id],
        )?;
        Ok(removed == 1)
    }

    /// Saves a subscription's template, filters, embed choice and
    /// de-duplication rule; whether the guild has it.
    pub(crate) fn edit_feed_look(
        &self,
        guild: GuildId,
        id: i64,
        template: &str,
        filters: &str,
        embed: bool,
        dedupe: &str,
    ) -> Result<bool> {
        let changed = self.0.lock().execute(
            "UPDATE feed_subscriptions SET template = ?3, filters = ?4, embed = ?5, dedupe = ?6
             WHERE guild_id = ?1 AND id = ?2",
            params![guild.to_sql(), id, template, filters, embed, dedupe],
        )?;
        Ok(changed == 1)
    }

    /// Pauses a subscription (`Some(why)`) or resumes it (`None`, which also
    /// clears its failures); whether the guild has it.
    pub(crate) fn set_feed_paused(
        &self,
        guild: GuildId,
        id: i64,
        why: Option<&str>,
    ) -> Result<bool> {
        let changed = self.0.lock().execute(
            "UPDATE feed_subscriptions
             SET paused = ?3, failures = CASE WHEN ?3 IS NULL THEN 0 ELSE failures END
             WHERE guild_id = ?1 AND id = ?2",
            params![guild.to_sql(), id, why],
        )?;
        Ok(changed == 1)
    }

    /// Counts a failed fetch of the subscription's source; the failures in a row.
    pub fn note_feed_failure(&self, id: i64) -> Result<u32> {
        Ok(self.0.lock().query_row(
            "UPDATE feed_subscriptions SET failures = failures + 1 WHERE id = ?1 RETURNING failures",
            [id],
            |r| r.get(0),
        )?)
    }

    /// Notes the items a fetch found for a subscription, in one transaction:
    /// an item met before only has its `last_seen_at` moved; a new one is
    /// stored in the state given. Marks the subscription primed and clears
    /// its failures. Returns how many were new.
    pub(crate) fn note_feed_items(
        &self,
        id: i64,
        items: &[MetItem],
        now: DateTime<Utc>,
    ) -> Result<usize> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let mut new = 0;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR IGNORE INTO feed_deliveries (subscription_id, item_key, state, item,
                     published_at, first_seen_at, last_seen_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
            )?;
            let mut seen_again = tx.prepare_cached(
                "UPDATE feed_deliveries SET last_seen_at = ?3
                 WHERE subscription_id = ?1 AND item_key = ?2",
            )?;
            for i in items {
                let published = i.published_at.map(to_ms);
                if insert.execute(params![id, i.key, i.state, i.item, published, to_ms(now)])? == 1
                {
                    new += 1;
                } else {
                    seen_again.execute(params![id, i.key, to_ms(now)])?;
                }
            }
        }
        tx.prepare_cached("UPDATE feed_subscriptions SET primed = 1, failures = 0 WHERE id = ?1")?
            .execute([id])?;
        // What the feed has not listed for FORGET_AFTER_DAYS is forgotten
        // (never what still waits): a feed does not bring an item back
        // after months, and the rows would otherwise grow with every item
        // ever met.
        tx.prepare_cached(
            "DELETE FROM feed_deliveries WHERE subscription_id = ?1
                 AND state NOT IN ('queued', 'sending') AND last_seen_at < ?2",
        )?
        .execute(params![
            id,
            to_ms(now - chrono::Duration::days(FORGET_AFTER_DAYS))
        ])?;
        tx.commit()?;
        Ok(new)
    }

    /// Which of `keys` the subscription has met before.
    pub fn known_feed_items(&self, id: i64, keys: &[String]) -> Result<Vec<String>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT 1 FROM feed_deliveries WHERE subscription_id = ?1 AND item_key = ?2",
        )?;
        let mut known = Vec::new();
        for k in keys {
            if stmt.exists(params![id, k])? {
                known.push(k.clone());
            }
        }
        Ok(known)
    }

    /// The subscription's items waiting to be sent, in publish order (those
    /// without a date in the order they were met), at most `limit`.
    pub(crate) fn waiting_feed_items(&self, id: i64, limit: u32) -> Result<Vec<Waiting>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT item_key, item, published_at, state FROM feed_deliveries
             WHERE subscription_id = ?1 AND state IN ('queued', 'sending')
             ORDER BY coalesce(published_at, first_seen_at), first_seen_at, item_key LIMIT ?2",
        )?;
        let rows = stmt
            .query_map(params![id, limit], |r| {
                Ok(Waiting {
                    key: r.get(0)?,
                    item: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    published_at: r.get::<_, Option<i64>>(2)?.map(from_ms),
                    sending: r.get::<_, String>(3)? == "sending",
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Marks an item as handed to Discord, committed before the request
    /// goes out (see the module's doc); whether it was waiting.
    pub(crate) fn mark_feed_sending(&self, id: i64, key: &str) -> Result<bool> {
        let changed = self
            .0
            .lock()
            .prepare_cached(
                "UPDATE feed_deliveries SET state = 'sending'
                 WHERE subscription_id = ?1 AND item_key = ?2 AND state IN ('queued', 'sending')",
            )?
            .execute(params![id, key])?;
        Ok(changed == 1)
    }

    /// Marks an item as posted (its fields are no longer kept) and the
    /// subscription as having delivered, in one transaction.
    pub(crate) fn mark_feed_sent(
        &self,
        id: i64,
        key: &str,
        message: MessageId,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        tx.prepare_cached(
            "UPDATE feed_deliveries SET state = 'sent', item = NULL, sent_at = ?3, message_id = ?4
             WHERE subscription_id = ?1 AND item_key = ?2",
        )?
        .execute(params![id, key, to_ms(at), message.to_sql()])?;
        tx.prepare_cached("UPDATE feed_subscriptions SET last_delivered_at = ?2 WHERE id = ?1")?
            .execute(params![id, to_ms(at)])?;
        tx.commit()?;
        Ok(())
    }

    /// Items a subscription posted since `since` (its hourly limit).
    pub(crate) fn feed_sent_since(&self, id: i64, since: DateTime<Utc>) -> Result<u64> {
        Ok(self
            .0
            .lock()
            .prepare_cached(
                "SELECT count(*) FROM feed_deliveries
                 WHERE subscription_id = ?1 AND state = 'sent' AND sent_at >= ?2",
            )?
            .query_row(params![id, to_ms(since)], |r| r.get::<_, i64>(0))? as u64)
    }

    /// Items every subscription of a guild posted since `since` (its hourly limit).
    pub(crate) fn guild_feed_sent_since(
        &self,
        guild: GuildId,
        since: DateTime<Utc>,
    ) -> Result<u64> {
        Ok(self
            .0
            .lock()
            .prepare_cached(
                "SELECT count(*) FROM feed_subscriptions s JOIN feed_deliveries d
                     ON d.subscription_id = s.id AND d.state = 'sent' AND d.sent_at >= ?2
                 WHERE s.guild_id = ?1",
            )?
            .query_row(params![guild.to_sql(), to_ms(since)], |r| {
                r.get::<_, i64>(0)
            })? as u64)
    }

    /// How a subscription's deliveries stand.
    pub(crate) fn feed_delivery_counts(&self, id: i64) -> Result<DeliveryCounts> {
        Ok(self.0.lock().query_row(
            "SELECT count(*) FILTER (WHERE state = 'sent'),
                    count(*) FILTER (WHERE state IN ('queued', 'sending')),
                    count(*) FILTER (WHERE state = 'filtered')
             FROM feed_deliveries WHERE subscription_id = ?1",
            [id],
            |r| {
                let count = |i| r.get::<_, i64>(i).map(|n| n as u64);
                Ok(DeliveryCounts {
                    sent: count(0)?,
                    waiting: count(1)?,
                    filtered: count(2)?,
                })
            },
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn at(minutes: i64) -> DateTime<Utc> {
        from_ms(1_700_000_000_000 + minutes * 60_000)
    }

    fn subscribe(store: &Store, guild: u64, channel: u64) -> Option<i64> {
        let source_id = store
            .discovery()
            .upsert_source("rss", "https://blog.example/feed")
            .unwrap();
        store
            .feeds()
            .add_feed_subscription(&NewSubscription {
                guild: GuildId(guild),
                source_id,
                channel: ChannelId(channel),
                destination: "channel".into(),
                template: "{title}".into(),
                filters: String::new(),
                embed: false,
                dedupe: "guid".into(),
                backfill: 0,
                created_by: UserId(5),
                created_at: at(0),
            })
            .unwrap()
    }

    fn met(key: &str, state: &'static str, published: i64) -> MetItem {
        MetItem {
            key: key.into(),
            published_at: Some(at(published)),
            state,
            item: (state == "queued").then(|| format!("{{\"title\":\"{key}\"}}")),
        }
    }

    #[test]
    fn a_feed_is_subscribed_once_per_channel_and_seen_only_by_its_guild() {
        let store = Store::open_in_memory().unwrap();
        let id = subscribe(&store, 1, 10).unwrap();
        assert_eq!(
            subscribe(&store, 1, 10),
            None,
            "the same feed, the same channel"
        );
        assert!(subscribe(&store, 1, 11).is_some());
        assert!(subscribe(&store, 2, 20).is_some());
        assert_eq!(
            store.feeds().feed_subscriptions(GuildId(1)).unwrap().len(),
            2
        );
        assert!(
            store
                .feeds()
                .feed_subscription(GuildId(2), id)
                .unwrap()
                .is_none()
        );
        assert!(
            !store
                .feeds()
                .remove_feed_subscription(GuildId(2), id)
                .unwrap()
        );
        assert!(
            store
                .feeds()
                .set_feed_paused(GuildId(1), id, Some("by Ann"))
                .unwrap()
        );
        let row = store
            .feeds()
            .feed_subscription(GuildId(1), id)
            .unwrap()
            .unwrap();
        assert_eq!(row.paused.as_deref(), Some("by Ann"));
        assert_eq!(store.feeds().subscribed_sources().unwrap().len(), 1);
    }

    #[test]
    fn items_met_again_are_not_new_and_wait_in_publish_order() {
        let store = Store::open_in_memory().unwrap();
        let id = subscribe(&store, 1, 10).unwrap();
        let first = [met("g:old", "seen", 0)];
        assert_eq!(store.feeds().note_feed_items(id, &first, at(1)).unwrap(), 1);
        let second = [
            met("g:old", "queued", 0),
            met("g:b", "queued", 30),
            met("g:a", "queued", 20),
        ];
        assert_eq!(
            store.feeds().note_feed_items(id, &second, at(40)).unwrap(),
            2
        );
        let waiting = store.feeds().waiting_feed_items(id, 10).unwrap();
        assert_eq!(
            waiting.iter().map(|w| w.key.as_str()).collect::<Vec<_>>(),
            ["g:a", "g:b"],
            "the old item stays seen; the new ones oldest first"
        );
        assert!(
            store
                .feeds()
                .feed_subscription(GuildId(1), id)
                .unwrap()
                .unwrap()
                .primed
        );
    }

    #[test]
    fn an_item_being_sent_is_sent_again_after_a_crash_and_once_sent_is_done() {
        let store = Store::open_in_memory().unwrap();
        let id = subscribe(&store, 1, 10).unwrap();
        store
            .feeds()
            .note_feed_items(id, &[met("g:a", "queued", 0)], at(1))
            .unwrap();
        assert!(store.feeds().mark_feed_sending(id, "g:a").unwrap());
        let waiting = store.feeds().waiting_feed_items(id, 10).unwrap();
        assert!(waiting[0].sending, "still waiting, marked as handed over");
        store
            .feeds()
            .mark_feed_sent(id, "g:a", MessageId(99), at(2))
            .unwrap();
        assert!(store.feeds().waiting_feed_items(id, 10).unwrap().is_empty());
        assert!(
            !store.feeds().mark_feed_sending(id, "g:a").unwrap(),
            "a sent item is not sent again"
        );
        assert_eq!(store.feeds().feed_sent_since(id, at(0)).unwrap(), 1);
        assert_eq!(store.feeds().feed_sent_since(id, at(3)).unwrap(), 0);
        assert_eq!(
            store
                .feeds()
                .guild_feed_sent_since(GuildId(1), at(0))
                .unwrap(),
            1
        );
        assert_eq!(
            store
                .feeds()
                .guild_feed_sent_since(GuildId(2), at(0))
                .unwrap(),
            0
        );
        let counts = store.feeds().feed_delivery_counts(id).unwrap();
        assert_eq!((counts.sent, counts.waiting), (1, 0));
        let row = store
            .feeds()
            .feed_subscription(GuildId(1), id)
            .unwrap()
            .unwrap();
        assert_eq!(row.last_delivered_at, Some(at(2)));
    }

    #[test]
    fn failures_count_up_until_a_fetch_succeeds_or_the_owner_resumes() {
        let store = Store::open_in_memory().unwrap();
        let id = subscribe(&store, 1, 10).unwrap();
        assert_eq!(store.feeds().note_feed_failure(id).unwrap(), 1);
        assert_eq!(store.feeds().note_feed_failure(id).unwrap(), 2);
        store.feeds().note_feed_items(id, &[], at(1)).unwrap();
        assert_eq!(
            store.feeds().note_feed_failure(id).unwrap(),
            1,
            "a good fetch starts again"
        );
        store
            .feeds()
            .set_feed_paused(GuildId(1), id, Some("failed 10 times"))
            .unwrap();
        store.feeds().set_feed_paused(GuildId(1), id, None).unwrap();
        let row = store
            .feeds()
            .feed_subscription(GuildId(1), id)
            .unwrap()
            .unwrap();
        assert_eq!((row.paused, row.failures), (None, 0));
    }

    #[test]
    fn removing_a_subscription_removes_its_deliveries() {
        let store = Store::open_in_memory().unwrap();
        let id = subscribe(&store, 1, 10).unwrap();
        store
            .feeds()
            .note_feed_items(id, &[met("g:a", "queued", 0)], at(1))
            .unwrap();
        assert!(
            store
                .feeds()
                .remove_feed_subscription(GuildId(1), id)
                .unwrap()
        );
        let left: i64 = store
            .lock()
            .query_row("SELECT count(*) FROM feed_deliveries", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }

    #[test]
    fn an_item_the_feed_stopped_listing_long_ago_is_forgotten_and_a_waiting_one_never() {
        let store = Store::open_in_memory().unwrap();
        let id = subscribe(&store, 1, 10).unwrap();
        store
            .feeds()
            .note_feed_items(
                id,
                &[met("g:old", "seen", 0), met("g:wait", "queued", 0)],
                at(0),
            )
            .unwrap();
        let later =
            at(0) + chrono::Duration::days(FORGET_AFTER_DAYS) + chrono::Duration::minutes(1);
        store
            .feeds()
            .note_feed_items(id, &[met("g:new", "seen", 0)], later)
            .unwrap();
        let keys = [&"g:old", &"g:wait", &"g:new"]
            .map(|k| k.to_string())
            .to_vec();
        assert_eq!(
            store.feeds().known_feed_items(id, &keys).unwrap(),
            ["g:wait", "g:new"]
        );
    }
}
