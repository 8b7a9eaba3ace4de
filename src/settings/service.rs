//! Effective settings per guild: the file's settings with the guild's stored
//! overrides layered on top, validated by the same validator as the file.
//!
//! Guild admins change overrides through `/settings set` (and the console's
//! `/settings`). Only guild-scoped keys may be overridden: the operator's
//! infrastructure, money and network reach (data directory, model providers,
//! budgets, fetch guards, endpoints) stay in the operator's file, so no guild
//! can point the bot at another server or spend another guild's budget.
//!
//! The file's settings can be replaced while the bot runs ([`SettingsService::replace_global`],
//! used by the live reload in `crate::live`): every reader asks the service
//! each time, so the next read sees the new values, guild overrides layered
//! over them afresh; loops that sleep on a settings-derived interval wait on
//! [`SettingsService::changes`] too, so a new interval counts at once.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;
use tokio::sync::watch;

use super::schema::Settings;
use super::validate::{Problem, defaults_tree, describe, validate};
use super::{paths, retention};
use crate::clock::SharedClock;
use crate::ids::{GuildId, UserId};
use crate::store::OverrideStore;
use crate::store::StoreError;

/// Keys (or key prefixes ending in '.') a guild may override.
const GUILD_SCOPED: &[&str] = &[
    "bot.persona",
    "guild.",
    "initiative.quietHours",
    "initiative.repliesDuringQuietHours",
    "attention.activeConversationMinutes",
    "attention.unsolicitedReplyThreshold",
    "attention.chimeInCooldownMinutes",
    // Only ever off: a reply reads the file's value too (see `reply::web`).
    "executive.replyTools.web",
    "permissions.",
    "initiative.text.",
    "initiative.discovery.sources.",
    "initiative.discovery.redditSubreddits",
    "initiative.discovery.rssFeeds",
    "initiative.discovery.youtubeChannelIds",
    "initiative.discovery.xHandles",
    "initiative.discovery.freshnessHours",
    "initiative.discovery.dedupeHours",
    "initiative.discovery.sourceFetchLimit",
    "initiative.discovery.allowSelfCuration",
    "initiative.discovery.maxSourcesPerType",
    "initiative.discovery.allowImagePosts",
    "initiative.discovery.allowVideoPosts",
    "initiative.discovery.allowGifPosts",
    "initiative.discovery.allowReplyGifs",
    "memory.",
    "impulses.timezone",
    "reflexes.allowSelfCreate",
    "impulses.ideaIdleMinutes",
    "voice.autoJoin",
    "voice.autoJoinChannelIds",
    "voice.links",
    "garden.proactiveWork",
    // Only ever shorter than the operator's (see `set_override`).
    "storage.retention.messagesDays",
    "storage.retention.journalDays",
    "storage.retention.usageDays",
    "storage.retention.reactionsDays",
    "storage.retention.voiceDays",
    "storage.retention.gardenDays",
];

pub(crate) fn is_guild_scoped(path: &str) -> bool {
    GUILD_SCOPED
        .iter()
        .any(|scoped| match scoped.strip_suffix('.') {
            Some(prefix) => path.starts_with(scoped) || path == prefix,
            None => path == *scoped,
        })
}

#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("{path}: unknown setting; did you mean {suggestion}?")]
    UnknownPath { path: String, suggestion: String },
    #[error("{path}: is a section, not a single setting; set one of its keys, e.g. {example}")]
    NotASetting { path: String, example: String },
    #[error("{path}: is an operator setting and can only be changed in the settings file")]
    OperatorOnly { path: String },
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Problem>),
    #[error(
        "{path}: a server may keep records for less than the operator does, never longer; \
         the operator keeps them {operator}, so give a number of days up to {most}"
    )]
    LongerThanOperator {
        path: String,
        operator: String,
        most: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where an effective value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Default,
    File,
    Guild,
}

impl Origin {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Origin::Default => "default",
            Origin::File => "settings file",
            Origin::Guild => "this server's override",
        }
    }
}

/// The operator's settings as one consistent pair (typed and as JSON), and
/// how many times they have been replaced.
struct Global {
    settings: Arc<Settings>,
    tree: Arc<Value>,
    generation: u64,
}

/// Each guild's effective settings as last built, and how many times any
/// were dropped (an override changed, the file replaced): settings built
/// from what was read before a drop are not kept after it.
#[derive(Default)]
struct GuildCache {
    built: HashMap<GuildId, Arc<Settings>>,
    drops: u64,
}

pub struct SettingsService {
    global: RwLock<Global>,
    defaults: Value,
    store: OverrideStore,
    clock: SharedClock,
    cache: RwLock<GuildCache>,
    changed: watch::Sender<u64>,
}

/// Wakes a loop when the file's settings were replaced (see [`SettingsService::changes`]).
pub(crate) struct Changes(watch::Receiver<u64>);

impl Changes {
    /// Returns after the next replacement (never, if the service is gone).
    pub(crate) async fn next(&mut self) {
        if self.0.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl SettingsService {
    pub fn new(global: Settings, store: OverrideStore, clock: SharedClock) -> Self {
        let tree = serde_json::to_value(&global).expect("settings serialize");
        Self {
            global: RwLock::new(Global {
                settings: Arc::new(global),
                tree: Arc::new(tree),
                generation: 0,
            }),
            defaults: defaults_tree(),
            store,
            clock,
            cache: RwLock::new(GuildCache::default()),
            changed: watch::channel(0).0,
        }
    }

    /// The operator's settings, without any guild's overrides.
    pub fn global(&self) -> Arc<Settings> {
        self.read_global().settings.clone()
    }

    /// Replaces the operator's settings (already validated): every later read
    /// sees them, with each guild's overrides layered over them again.
    pub(crate) fn replace_global(&self, settings: Settings) {
        let tree = serde_json::to_value(&settings).expect("settings serialize");
        // The cache lock is held across the swap, so no guild's settings built
        // from the old values can be cached after it (see `for_guild`).
        let mut cache = self.write_cache();
        let generation = {
            let mut g = self.global.write().unwrap_or_else(|p| p.into_inner());
            g.settings = Arc::new(settings);
            g.tree = Arc::new(tree);
            g.generation += 1;
            g.generation
        };
        cache.built.clear();
        cache.drops += 1;
        drop(cache);
        self.changed.send_replace(generation);
    }

    /// A handle that wakes on every [`SettingsService::replace_global`].
    pub(crate) fn changes(&self) -> Changes {
        Changes(self.changed.subscribe())
    }

    fn read_global(&self) -> std::sync::RwLockReadGuard<'_, Global> {
        self.global.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The settings in effect for a guild (the global ones for DMs).
    pub fn for_guild(&self, guild: Option<GuildId>) -> Arc<Settings> {
        let Some(guild) = guild else {
            return self.global();
        };
        let drops = {
            let cache = self.cache.read().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = cache.built.get(&guild) {
                return s.clone();
            }
            cache.drops
        };
        let (global, tree) = {
            let g = self.read_global();
            (g.settings.clone(), g.tree.clone())
        };
        let settings = Arc::new(self.build_for(guild, &global, &tree));
        self.keep_if_current(guild, drops, &settings);
        settings
    }

    /// Caches settings built after `drops` drops, unless another came since:
    /// an override written (or the file replaced) while they were being
    /// built would otherwise be hidden until the next change.
    fn keep_if_current(&self, guild: GuildId, drops: u64, settings: &Arc<Settings>) {
        let mut cache = self.write_cache();
        if cache.drops == drops {
            cache.built.insert(guild, settings.clone());
        }
    }

    fn write_cache(&self) -> std::sync::RwLockWriteGuard<'_, GuildCache> {
        self.cache.write().unwrap_or_else(|p| p.into_inner())
    }

    fn build_for(&self, guild: GuildId, global: &Settings, tree: &Value) -> Settings {
        let overrides = match self.store.guild_overrides(guild) {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(%guild, error = %e, "cannot read guild overrides; using the file's settings");
                return global.clone();
            }
        };
        let mut tree = tree.clone();
        for (path, value) in &overrides {
            // A stored override that no longer applies (e.g. the key became
            // operator-only after an upgrade) is ignored, not fatal.
            if is_guild_scoped(path) {
                paths::set(&mut tree, path, value.clone());
            } else {
                tracing::warn!(%guild, path, "ignoring stored override of an operator setting");
            }
        }
        let (mut settings, problems) = validate(&tree);
        for p in &problems {
            tracing::warn!(%guild, problem = %p, "ignoring an invalid stored override");
        }
        settings.storage.retention = settings
            .storage
            .retention
            .at_most(&global.storage.retention);
        settings
    }

    /// Sets a guild override from text typed by a person; returns the stored value.
    pub fn set_override(
        &self,
        guild: GuildId,
        path: &str,
        raw: &str,
        by: Option<UserId>,
    ) -> Result<Value, ChangeError> {
        let path = path.trim();
        let default = self.leaf_default(path)?;
        if !is_guild_scoped(path) {
            return Err(ChangeError::OperatorOnly { path: path.into() });
        }
        let value = parse_user_value(raw, &default);

        let mut tree =
            serde_json::to_value(&*self.for_guild(Some(guild))).expect("settings serialize");
        paths::set(&mut tree, path, value.clone());
        let (_, problems) = validate(&tree);
        let relevant: Vec<Problem> = problems
            .into_iter()
            .filter(|p| {
                p.path == path
                    || p.path.starts_with(&format!("{path}["))
                    || p.path.starts_with(&format!("{path}."))
            })
            .collect();
        if !relevant.is_empty() {
            return Err(ChangeError::Invalid(relevant));
        }
        // Cross-key rules (e.g. garden min ≤ max) can fail on another path than the one set.
        let (typed, all) = validate(&tree);
        if !all.is_empty() {
            return Err(ChangeError::Invalid(all));
        }
        self.only_shorter(path, &typed)?;

        self.store
            .set_guild_override(guild, path, &value, by, self.clock.now())?;
        self.invalidate(guild);
        Ok(value)
    }

    /// A retention a server sets may only be shorter than the operator's.
    fn only_shorter(&self, path: &str, theirs: &Settings) -> Result<(), ChangeError> {
        let Some(d) = retention::kind_of(path) else {
            return Ok(());
        };
        let operator = self.global().storage.retention.days(d.kind);
        if retention::longer_than_operator(operator, theirs.storage.retention.days(d.kind)) {
            return Err(ChangeError::LongerThanOperator {
                path: path.into(),
                operator: retention::days_text(operator),
                most: operator.to_string(),
            });
        }
        Ok(())
    }

    /// Removes a guild override; returns whether there was one.
    pub fn reset_override(&self, guild: GuildId, path: &str) -> Result<bool, ChangeError> {
        let path = path.trim();
        self.known(path)?;
        let removed = self.store.remove_guild_override(guild, path)?;
        self.invalidate(guild);
        Ok(removed)
    }

    /// The effective value at `path` (a setting or a whole section) and where it comes from.
    pub(crate) fn show(
        &self,
        guild: Option<GuildId>,
        path: &str,
    ) -> Result<(Value, Origin), ChangeError> {
        let path = path.trim();
        self.known(path)?;
        let tree = serde_json::to_value(&*self.for_guild(guild)).expect("settings serialize");
        let value = paths::get(&tree, path).cloned().unwrap_or(Value::Null);
        let overridden = match guild {
            Some(g) => self
                .store
                .guild_overrides(g)?
                .iter()
                .any(|(p, _)| p == path || p.starts_with(&format!("{path}."))),
            None => false,
        };
        let origin = if overridden {
            Origin::Guild
        } else if paths::get(&self.defaults, path) != Some(&value) {
            Origin::File
        } else {
            Origin::Default
        };
        Ok((value, origin))
    }

    /// The guild's overrides, as stored.
    pub fn overrides(&self, guild: GuildId) -> Result<Vec<(String, Value)>, ChangeError> {
        Ok(self.store.guild_overrides(guild)?)
    }

    fn invalidate(&self, guild: GuildId) {
        let mut cache = self.write_cache();
        cache.built.remove(&guild);
        cache.drops += 1;
    }

    fn known(&self, path: &str) -> Result<&Value, ChangeError> {
        paths::get(&self.defaults, path).ok_or_else(|| ChangeError::UnknownPath {
            path: path.into(),
            suggestion: suggest(path, &self.defaults),
        })
    }

    fn leaf_default(&self, path: &str) -> Result<Value, ChangeError> {
        let node = self.known(path)?;
        if let Value::Object(map) = node {
            let example = map
                .keys()
                .next()
                .map(|k| paths::join(path, k))
                .unwrap_or_default();
            return Err(ChangeError::NotASetting {
                path: path.into(),
                example,
            });
        }
        Ok(node.clone())
    }
}

/// The known setting path closest to `path`.
fn suggest(path: &str, defaults: &Value) -> String {
    let lower = path.to_ascii_lowercase();
    paths::all_paths(defaults)
        .into_iter()
        .map(|p| {
            let whole = strsim::normalized_damerau_levenshtein(&lower, &p.to_ascii_lowercase());
            let last = strsim::normalized_damerau_levenshtein(
                paths::last_segment(&lower),
                &paths::last_segment(&p).to_ascii_lowercase(),
            );
            (whole.max(last * 0.95), p)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, p)| p)
        .unwrap_or_default()
}

/// Interprets what a person typed for a setting whose default is `default`.
///
/// JSON is accepted as is (`150`, `true`, `["1","2"]`); otherwise, for text
/// settings the words are the value, and for lists the items may be separated
/// by commas or spaces, with Discord mentions (`<#123>`, `<@456>`) reduced to
/// their ids. Type errors are left for the validator to explain.
pub(crate) fn parse_user_value(raw: &str, default: &Value) -> Value {
    let raw = raw.trim();
    let parsed = serde_json::from_str::<Value>(raw).ok();
    match default {
        Value::String(_) => match parsed {
            Some(Value::String(s)) => Value::String(s),
            _ => Value::String(raw.to_string()),
        },
        Value::Array(_) => match parsed {
            Some(v @ Value::Array(_)) => v,
            _ => Value::Array(
                raw.split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|s| !s.is_empty())
                    .map(|s| Value::String(strip_mention(s).to_string()))
                    .collect(),
            ),
        },
        _ => parsed.unwrap_or_else(|| Value::String(raw.to_string())),
    }
}

fn strip_mention(s: &str) -> &str {
    s.strip_prefix('<')
        .and_then(|s| s.strip_suffix('>'))
        .map(|inner| inner.trim_start_matches(['#', '@', '!', '&']))
        .unwrap_or(s)
}

/// A one-line rendering of a setting's value for people.
pub(crate) fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Object(_) => serde_json::to_string_pretty(v).unwrap_or_default(),
        _ => describe(v).trim_start_matches("a list ").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::store::Store;
    use serde_json::json;

    fn service() -> SettingsService {
        SettingsService::new(
            Settings::default(),
            Store::open_in_memory().unwrap().overrides(),
            ManualClock::at_test_epoch(),
        )
    }

    #[test]
    fn overrides_layer_over_the_file_per_guild() {
        let s = service();
        let (a, b) = (GuildId(1), GuildId(2));
        s.set_override(a, "initiative.text.eagerness", "80", None)
            .unwrap();
        assert_eq!(s.for_guild(Some(a)).initiative.text.eagerness, 80);
        assert_eq!(s.for_guild(Some(b)).initiative.text.eagerness, 20);
        assert_eq!(s.global().initiative.text.eagerness, 20);
        assert_eq!(
            s.show(Some(a), "initiative.text.eagerness").unwrap(),
            (json!(80), Origin::Guild)
        );
        assert!(s.reset_override(a, "initiative.text.eagerness").unwrap());
        assert_eq!(s.for_guild(Some(a)).initiative.text.eagerness, 20);
    }

    #[test]
    fn settings_built_while_an_override_was_written_are_not_kept() {
        let s = service();
        let a = GuildId(1);
        // Another task starts building the server's settings...
        let drops = s.cache.read().unwrap().drops;
        let before = Arc::new(s.build_for(a, &s.global(), &s.read_global().tree.clone()));
        // ...an admin's override is written meanwhile...
        s.set_override(a, "initiative.text.eagerness", "80", None)
            .unwrap();
        // ...and the other task finishes: what it built is not kept.
        s.keep_if_current(a, drops, &before);
        assert_eq!(s.for_guild(Some(a)).initiative.text.eagerness, 80);
    }

    #[tokio::test]
    async fn a_replaced_file_reaches_every_guild_under_its_own_overrides() {
        let s = service();
        let (a, b) = (GuildId(1), GuildId(2));
        s.set_override(a, "initiative.text.eagerness", "80", None)
            .unwrap();
        // Cached before the replacement: must not outlive it.
        assert_eq!(s.for_guild(Some(b)).initiative.text.eagerness, 20);
        let mut changes = s.changes();
        let mut file = Settings::default();
        file.initiative.text.eagerness = 55;
        file.initiative.text.max_posts_per_day = 9;
        s.replace_global(file);
        changes.next().await;
        assert_eq!(s.global().initiative.text.eagerness, 55);
        assert_eq!(s.for_guild(Some(b)).initiative.text.eagerness, 55);
        let theirs = s.for_guild(Some(a));
        assert_eq!(
            theirs.initiative.text.eagerness, 80,
            "the override still wins"
        );
        assert_eq!(theirs.initiative.text.max_posts_per_day, 9);
        assert_eq!(
            s.show(None, "initiative.text.maxPostsPerDay").unwrap(),
            (json!(9), Origin::File)
        );
    }

    #[test]
    fn bad_values_get_the_validators_message_and_change_nothing() {
        let s = service();
        let err = s
            .set_override(GuildId(1), "initiative.text.eagerness", "150", None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "initiative.text.eagerness: must be between 0 and 100, got 150"
        );
        let err = s
            .set_override(GuildId(1), "initiative.text.eagernes", "15", None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "initiative.text.eagernes: unknown setting; did you mean initiative.text.eagerness?"
        );
        assert!(s.overrides(GuildId(1)).unwrap().is_empty());
    }

    #[test]
    fn operator_settings_cannot_be_overridden_by_a_guild() {
        let s = service();
        for path in [
            "storage.dataDir",
            "network.allowPrivateHosts",
            "executive.roles.reply.baseUrl",
            "budget.dailyTokens.ambient",
        ] {
            let err = s.set_override(GuildId(1), path, "x", None).unwrap_err();
            assert!(
                matches!(err, ChangeError::OperatorOnly { .. }),
                "{path}: {err}"
            );
        }
    }

    #[test]
    fn lists_accept_mentions_and_commas() {
        let s = service();
        s.set_override(
            GuildId(1),
            "permissions.replies.discoveryChannelIds",
            "<#123>, 456",
            None,
        )
        .unwrap();
        let ids: Vec<u64> = s
            .for_guild(Some(GuildId(1)))
            .permissions
            .replies
            .discovery_channel_ids
            .iter()
            .map(|c| c.get())
            .collect();
        assert_eq!(ids, vec![123, 456]);
        assert_eq!(
            parse_user_value("hello there", &json!("")),
            json!("hello there")
        );
    }
}
