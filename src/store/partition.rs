//! Which guilds this data directory holds, and the shard plan it runs under.
//!
//! A bot split across processes gives each process a range of shards, and
//! so a set of guilds (`settings::shards`); a process's data directory must
//! hold only those guilds' rows, or it would answer from (and garden, and
//! post about) memory of a server it no longer sees. [`TABLES`] says, for
//! every table, how its rows belong to one guild: the start-up check asks it
//! which guilds are stored, and `guild_io` moves one guild's rows with it.
//! [`NOT_PER_GUILD`] names the tables that are no guild's, with why; a unit
//! test holds the two lists to the schema, so a new table is classified by
//! whoever adds it.
//!
//! The store sits below the settings, so it does not compute shards: the
//! caller hands over the plan as numbers (to record it) and a predicate
//! saying which guilds it owns.

use rusqlite::{OptionalExtension, params};

use super::{GuildStore, Result, Store, StoreError, to_ms};
use crate::ids::GuildId;
use crate::vocab::shards::{ShardRange, Shards};
use chrono::{DateTime, Utc};

/// How a table's rows belong to one guild; `?1` in a clause is the guild id.
#[derive(Clone, Copy, Debug)]
pub enum Link {
    /// The row's own column holds the guild id.
    Guild(&'static str),
    /// The row belongs to the guild through another of its rows (a fact's
    /// reinforcement, a message's voice span): moved and removed with it.
    Owned(&'static str),
    /// A row several guilds may use (a feed source and its items): moved
    /// with the guild, merged with an equal row already there, never removed.
    Shared(&'static str),
}

/// A column holding ids that a table re-numbers on import.
#[derive(Clone, Copy, Debug)]
pub struct Ref {
    pub column: &'static str,
    pub table: &'static str,
    /// An id the file does not hold: `true` refuses the file, `false` stores
    /// NULL (the row it named was no guild's, e.g. a model call in a DM).
    pub required: bool,
}

/// One table of a guild's data.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    pub name: &'static str,
    pub link: Link,
    /// The rows to remove with the guild, when not those of `link` (a fact
    /// link is moved when both its facts are, removed when either is).
    pub remove_where: Option<&'static str>,
    /// An id this store assigns (AUTOINCREMENT, or a rowid the full-text
    /// index is keyed on): never carried over, given anew on import.
    pub renumber: Option<&'static str>,
    pub refs: &'static [Ref],
    /// For a [`Link::Shared`] table: the columns that make two rows the same.
    pub key: &'static [&'static str],
}

const fn guild(name: &'static str, column: &'static str) -> Table {
    Table {
        name,
        link: Link::Guild(column),
        remove_where: None,
        renumber: None,
        refs: &[],
        key: &[],
    }
}

/// Every table holding a guild's rows, in the order they are imported
/// (a row after the rows it refers to); removal runs it backwards.
pub const TABLES: &[Table] = &[
    guild("guilds", "id"),
    guild("channels", "guild_id"),
    guild("messages", "guild_id"),
    Table {
        name: "voice_utterances",
        link: Link::Owned("message_id IN (SELECT id FROM messages WHERE guild_id = ?1)"),
        ..guild("voice_utterances", "")
    },
    guild("reactions", "guild_id"),
    guild("guild_settings", "guild_id"),
    Table {
        renumber: Some("id"),
        ..guild("usage", "guild_id")
    },
    // Usage rows retention rolled into daily totals (0: no server's).
    guild("usage_daily", "guild_id"),
    Table {
        renumber: Some("id"),
        refs: &[Ref {
            column: "model_call_id",
            table: "usage",
            required: false,
        }],
        ..guild("journal", "guild_id")
    },
    Table {
        renumber: Some("id"),
        ..guild("context_stream", "guild_id")
    },
    guild("pending_thoughts", "guild_id"),
    guild("initiative_state", "guild_id"),
    guild("initiative_outbox", "guild_id"),
    guild("guild_sources", "guild_id"),
    Table {
        name: "discovery_sources",
        link: Link::Shared(
            "(kind, target) IN (SELECT kind, target FROM guild_sources WHERE guild_id = ?1)
             OR id IN (SELECT i.source_id FROM feed_items i JOIN feed_shares s ON s.item_id = i.id
                       WHERE s.guild_id = ?1)
             OR id IN (SELECT source_id FROM feed_subscriptions WHERE guild_id = ?1)",
        ),
        remove_where: None,
        renumber: Some("id"),
        refs: &[],
        key: &["kind", "target"],
    },
    Table {
        name: "feed_items",
        link: Link::Shared(
            "id IN (SELECT item_id FROM feed_shares WHERE guild_id = ?1)
             OR source_id IN (SELECT d.id FROM discovery_sources d JOIN guild_sources g
                              ON g.kind = d.kind AND g.target = d.target WHERE g.guild_id = ?1)",
        ),
        remove_where: None,
        renumber: Some("id"),
        refs: &[Ref {
            column: "source_id",
            table: "discovery_sources",
            required: true,
        }],
        key: &["source_id", "canonical_url"],
    },
    Table {
        refs: &[Ref {
            column: "item_id",
            table: "feed_items",
            required: true,
        }],
        ..guild("feed_shares", "guild_id")
    },
    Table {
        renumber: Some("id"),
        refs: &[Ref {
            column: "source_id",
            table: "discovery_sources",
            required: true,
        }],
        ..guild("feed_subscriptions", "guild_id")
    },
    Table {
        name: "feed_deliveries",
        link: Link::Owned(
            "subscription_id IN (SELECT id FROM feed_subscriptions WHERE guild_id = ?1)",
        ),
        refs: &[Ref {
            column: "subscription_id",
            table: "feed_subscriptions",
            required: true,
        }],
        ..guild("feed_deliveries", "")
    },
    Table {
        renumber: Some("rowid"),
        ..guild("facts", "guild_id")
    },
    Table {
        name: "fact_reinforcements",
        link: Link::Owned("fact_id IN (SELECT id FROM facts WHERE guild_id = ?1)"),
        ..guild("fact_reinforcements", "")
    },
    Table {
        name: "fact_links",
        link: Link::Owned(LINKS_BOTH),
        remove_where: Some(LINKS_EITHER),
        ..guild("fact_links", "")
    },
    Table {
        name: "extraction_state",
        link: Link::Owned(
            "channel_id IN (SELECT id FROM channels WHERE guild_id = ?1
                            UNION SELECT channel_id FROM messages WHERE guild_id = ?1)",
        ),
        ..guild("extraction_state", "")
    },
    guild("tasks", "guild_id"),
    guild("ideas", "guild_id"),
    guild("schedules", "guild_id"),
    Table {
        name: "reflex_stats",
        // A reflex the executive wrote for one server is keyed `name@<guild>`;
        // the operator's reflexes count every server together (not moved).
        link: Link::Owned("name GLOB '*@' || ?1"),
        ..guild("reflex_stats", "")
    },
    guild("reflex_disabled", "guild_id"),
    Table {
        renumber: Some("id"),
        ..guild("garden_cycles", "guild_id")
    },
    Table {
        refs: &[Ref {
            column: "done_in_cycle",
            table: "garden_cycles",
            required: false,
        }],
        ..guild("garden_queue", "guild_id")
    },
    guild("hushes", "guild_id"),
    // Today's seconds of spoken answers: the server's budget goes where it goes.
    guild("voice_speech_spent", "guild_id"),
    // The server removed the bot: moved with it (the bot is not in it
    // wherever it goes), and gone with the rest when its data is removed.
    guild("departed_guilds", "guild_id"),
];

/// A link between two of the guild's facts moves with it; one touching
/// any of them goes when they go.
const LINKS_BOTH: &str = "a IN (SELECT id FROM facts WHERE guild_id = ?1) \
                          AND b IN (SELECT id FROM facts WHERE guild_id = ?1)";
const LINKS_EITHER: &str = "a IN (SELECT id FROM facts WHERE guild_id = ?1) \
                            OR b IN (SELECT id FROM facts WHERE guild_id = ?1)";

/// Tables that hold no guild's rows, and why; everything else is in [`TABLES`].
pub const NOT_PER_GUILD: &[(&str, &str)] = &[
    (
        "dm_pairing_codes",
        "codes handed out in direct messages, which belong to no server",
    ),
    (
        "dm_paired",
        "people an owner let talk to the bot in direct messages, which belong to no server",
    ),
    (
        "access_notices",
        "when a person was last told they may not talk to the bot: once a day wherever they ask",
    ),
    (
        "erasures",
        "a person's forget-me holds on every server; an import applies them all to what it brings in",
    ),
    (
        "boundaries",
        "a person's boundaries hold on every server; they pass between processes through storage.sharedDir",
    ),
    (
        "garden_state",
        "the garden scheduler's own state for the whole process (when it last ran, which server it tended when)",
    ),
    (
        "people_cursor",
        "how far this data directory has applied the people ledger in storage.sharedDir, not a guild's",
    ),
    (
        "shard_plan",
        "the shard plan of this data directory, not of a guild",
    ),
    (
        "sqlite_sequence",
        "SQLite's AUTOINCREMENT counters; imported rows get new ids from them",
    ),
    (
        "facts_fts",
        "the full-text index of facts, kept by triggers as facts are imported and removed",
    ),
    ("facts_fts_data", "part of the facts' full-text index"),
    ("facts_fts_idx", "part of the facts' full-text index"),
    ("facts_fts_docsize", "part of the facts' full-text index"),
    ("facts_fts_config", "part of the facts' full-text index"),
];

impl Table {
    /// The rows of `?1`'s guild, as a WHERE clause.
    pub(crate) fn rows_of(&self) -> String {
        match self.link {
            Link::Guild(column) => format!("{column} = ?1"),
            Link::Owned(clause) | Link::Shared(clause) => format!("({clause})"),
        }
    }

    /// The rows removed with the guild; None for a shared table.
    pub(crate) fn removed(&self) -> Option<String> {
        match self.link {
            Link::Shared(_) => None,
            _ => Some(
                self.remove_where
                    .map_or_else(|| self.rows_of(), |w| format!("({w})")),
            ),
        }
    }
}

/// The plan as a refusal names its owner: "shard 0 of 2", "shards 0-1 of 4".
fn owner(plan: &Shards) -> String {
    let shards = if plan.range.count() == 1 {
        "shard"
    } else {
        "shards"
    };
    format!("{shards} {} of {}", plan.range, plan.total)
}

/// A guild stored here, by id, with the name last seen for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredGuild {
    pub id: GuildId,
    pub name: Option<String>,
}

impl std::fmt::Display for StoredGuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(n) => write!(f, "{} ({n})", self.id),
            None => write!(f, "{}", self.id),
        }
    }
}

/// How many foreign guilds the refusal names before "and N more".
const NAMED: usize = 5;

#[derive(Debug, thiserror::Error)]
pub(crate) enum PartitionError {
    #[error(
        "this data directory holds rows of {count} server(s) that {} does not own: {named}{more}. \
         A process keeps only its own servers' data. Move them to the process that owns them, then \
         start again: `ambient shards plan --total {} --shards {}` lists each one's shard; \
         for each, `ambient guild export GUILD > GUILD.json` here, `ambient guild import GUILD.json` \
         on the owner's data directory, and `ambient guild remove GUILD --yes` here",
        owner(plan), plan.total, plan.range
    )]
    Foreign {
        plan: Shards,
        count: usize,
        named: String,
        more: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl GuildStore {
    /// Every guild with rows in a table of its own (not only shared ones),
    /// by id, named as the bot last saw it.
    pub(crate) fn stored_guilds(&self) -> Result<Vec<StoredGuild>> {
        let conn = self.0.lock();
        let mut ids = std::collections::BTreeSet::new();
        for t in TABLES {
            let Link::Guild(column) = t.link else {
                continue;
            };
            // DISTINCT over the guild column reads its index where there is
            // one; guild 0 is "everywhere" (an operator's reflex_disabled).
            let mut stmt = conn.prepare(&format!(
                "SELECT DISTINCT {column} FROM {} WHERE {column} IS NOT NULL AND {column} != 0",
                t.name
            ))?;
            for id in stmt.query_map([], |r| r.get::<_, i64>(0))? {
                ids.insert(id?);
            }
        }
        let mut name = conn.prepare_cached("SELECT name FROM guilds WHERE id = ?1")?;
        ids.into_iter()
            .map(|id| {
                Ok(StoredGuild {
                    id: GuildId::from_sql(id),
                    name: name.query_row([id], |r| r.get(0)).optional()?,
                })
            })
            .collect()
    }

    pub fn recorded_plan(&self) -> Result<Option<Shards>> {
        Ok(self
            .0
            .lock()
            .query_row(
                "SELECT first_shard, last_shard, total FROM shard_plan WHERE id = 1",
                [],
                |r| {
                    Ok(Shards {
                        range: ShardRange {
                            first: r.get(0)?,
                            last: r.get(1)?,
                        },
                        total: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// Records the plan this directory now runs under (None: the whole bot).
    pub fn record_plan(&self, plan: Option<Shards>, at: DateTime<Utc>) -> Result<()> {
        let conn = self.0.lock();
        match plan {
            Some(p) => conn.execute(
                "INSERT INTO shard_plan (id, first_shard, last_shard, total, recorded_at)
                 VALUES (1, ?1, ?2, ?3, ?4)
                 ON CONFLICT (id) DO UPDATE SET first_shard = ?1, last_shard = ?2, total = ?3,
                                                recorded_at = ?4",
                params![p.range.first, p.range.last, p.total, to_ms(at)],
            )?,
            None => conn.execute("DELETE FROM shard_plan", [])?,
        };
        Ok(())
    }
}

/// [`enter`] for the store in `data_dir`, opened for the check alone: the
/// front end runs it before logging in, before the bot's own store is open.
pub(crate) fn enter_dir(
    data_dir: &std::path::Path,
    plan: Option<Shards>,
    at: DateTime<Utc>,
) -> std::result::Result<(), PartitionError> {
    enter(&Store::open(data_dir)?, plan, at)
}

/// The start-up check: refuses a data directory holding rows of a guild
/// `plan` does not own, else records `plan` as this one's (None: the whole bot).
pub(crate) fn enter(
    store: &Store,
    plan: Option<Shards>,
    at: DateTime<Utc>,
) -> std::result::Result<(), PartitionError> {
    if let Some(p) = plan {
        let foreign: Vec<StoredGuild> = store
            .guilds()
            .stored_guilds()?
            .into_iter()
            .filter(|g| !p.owns(g.id))
            .collect();
        if !foreign.is_empty() {
            let named: Vec<String> = foreign.iter().take(NAMED).map(|g| g.to_string()).collect();
            let more = foreign.len().saturating_sub(NAMED);
            return Err(PartitionError::Foreign {
                plan: p,
                count: foreign.len(),
                named: named.join(", "),
                more: if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                },
            });
        }
    }
    store.guilds().record_plan(plan, at)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_tables(store: &Store) -> Vec<String> {
        let conn = store.lock();
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn every_table_is_a_guilds_or_named_as_no_guilds() {
        let store = Store::open_in_memory().unwrap();
        let mut unclassified = Vec::new();
        for name in schema_tables(&store) {
            let moved = TABLES.iter().any(|t| t.name == name);
            let not = NOT_PER_GUILD.iter().any(|(n, _)| *n == name);
            assert!(
                !(moved && not),
                "{name} is both moved with a guild and said to be no guild's"
            );
            if !moved && !not {
                unclassified.push(name);
            }
        }
        assert!(
            unclassified.is_empty(),
            "tables neither moved with a guild (store::partition::TABLES) nor named in \
             NOT_PER_GUILD with a reason: {unclassified:?}"
        );
    }

    #[test]
    fn the_lists_name_only_tables_that_exist_each_once() {
        let store = Store::open_in_memory().unwrap();
        let tables = schema_tables(&store);
        let mut seen = std::collections::HashSet::new();
        for name in TABLES
            .iter()
            .map(|t| t.name)
            .chain(NOT_PER_GUILD.iter().map(|(n, _)| *n))
        {
            assert!(tables.iter().any(|t| t == name), "{name} is not a table");
            assert!(seen.insert(name), "{name} is listed twice");
        }
    }

    #[test]
    fn every_clause_runs_against_the_schema() {
        let store = Store::open_in_memory().unwrap();
        let conn = store.lock();
        for t in TABLES {
            for clause in [Some(t.rows_of()), t.removed()].into_iter().flatten() {
                conn.prepare(&format!("SELECT count(*) FROM {} WHERE {clause}", t.name))
                    .unwrap_or_else(|e| panic!("{}: {clause}: {e}", t.name));
            }
            for r in t.refs {
                assert!(
                    TABLES
                        .iter()
                        .position(|o| o.name == r.table)
                        .is_some_and(|o| o < TABLES.iter().position(|x| x.name == t.name).unwrap()),
                    "{}.{} refers to {}, which must be imported before it",
                    t.name,
                    r.column,
                    r.table
                );
            }
        }
    }

    #[test]
    fn stored_guilds_come_from_every_guild_column_named_once() {
        let store = Store::open_in_memory().unwrap();
        {
            let conn = store.lock();
            conn.execute_batch(
                "INSERT INTO guilds (id, name, updated_at) VALUES (7, 'Seven', 0);
                 INSERT INTO journal (ts, kind, guild_id, summary) VALUES (0, 'route', 7, 'x');
                 INSERT INTO hushes (guild_id, channel_id, until, by_user, by_name, at)
                     VALUES (9, 0, 0, 1, 'a', 0);
                 INSERT INTO reflex_disabled (guild_id, name, disabled_at) VALUES (0, 'ping', 0);
                 INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at)
                     VALUES (1, NULL, 5, 1, 'a', 'a direct message', 0);",
            )
            .unwrap();
        }
        let ids: Vec<String> = store
            .guilds()
            .stored_guilds()
            .unwrap()
            .iter()
            .map(|g| g.to_string())
            .collect();
        assert_eq!(ids, vec!["7 (Seven)", "9"]);
    }

    #[test]
    fn a_foreign_guild_is_refused_and_named_and_the_plan_recorded_only_when_fine() {
        let store = Store::open_in_memory().unwrap();
        let at = crate::store::from_ms(1_000);
        let plan = Shards {
            range: ShardRange { first: 0, last: 0 },
            total: 2,
        };
        enter(&store, Some(plan), at).unwrap();
        assert_eq!(
            store.guilds().recorded_plan().unwrap(),
            Some(plan),
            "empty is fine"
        );
        store
            .lock()
            .execute_batch("INSERT INTO guilds (id, name, updated_at) VALUES (4194304, 'Far', 0)")
            .unwrap();
        // Guild 4194304 is on shard 1 of 4.
        let other = Shards { total: 4, ..plan };
        let err = enter(&store, Some(other), at).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("1 server(s) that shard 0 of 4 does not own: 4194304 (Far)"),
            "{text}"
        );
        assert!(
            text.contains("`ambient shards plan --total 4 --shards 0`"),
            "{text}"
        );
        assert_eq!(
            store.guilds().recorded_plan().unwrap(),
            Some(plan),
            "not recorded"
        );
        enter(&store, None, at).unwrap();
        assert_eq!(
            store.guilds().recorded_plan().unwrap(),
            None,
            "the whole bot owns all"
        );
    }
}
