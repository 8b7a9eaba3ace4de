//! Changing a guild's sources at runtime: by people (`/discovery add|remove`,
//! Manage Server) and, when `initiative.discovery.allowSelfCuration` is on,
//! by the bot itself through the `discovery_source_*` tools in the
//! initiative loop.
//!
//! Guardrails: only enabled source kinds; at most `maxSourcesPerType` of a
//! kind per guild; the operator's sources (the settings' lists) can only be
//! changed through settings, and the bot may remove only what it added
//! itself. Every change is journaled.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::sources::{SourceError, SourceKind, SourceSpec};
use super::{Discovery, Origin};
use crate::executive::tools::{Tool, ToolError, TypedTool, typed};
use crate::ids::{GuildId, UserId};
use crate::store::StoreError;
use crate::vocab::journal::{Entry, Kind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// The bot, curating its own feed.
    Model,
    /// A member with Manage Server.
    Member(UserId),
}

impl Actor {
    fn tag(self) -> String {
        match self {
            Actor::Model => "model".into(),
            Actor::Member(u) => format!("user:{u}"),
        }
    }

    fn describe(self) -> String {
        match self {
            Actor::Model => "by the bot (self-curation)".into(),
            Actor::Member(u) => format!("by member {u}"),
        }
    }
}

/// Why a source change is refused; the text is the answer for whoever asked.
#[derive(Debug, thiserror::Error)]
pub enum CurationError {
    #[error("{name:?} is not a source kind; use rss, reddit, youtube, x or hackernews")]
    UnknownKind { name: String },
    #[error("self-curation is off (initiative.discovery.allowSelfCuration)")]
    SelfCurationOff,
    #[error("{kind} sources are off on this server (initiative.discovery.sources)")]
    KindOff { kind: SourceKind },
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{label} is already a source here")]
    AlreadyThere { label: String },
    #[error(
        "this server already has {count} {kind} source(s), the most allowed (initiative.discovery.maxSourcesPerType)"
    )]
    Full { count: usize, kind: SourceKind },
    #[error("{label} is not a source here")]
    NotThere { label: String },
    /// The operator's source; a member is told which setting holds it (`key`).
    #[error(
        "{label} comes from the operator's settings and cannot be removed here{}",
        key.map(|k| format!("; change {k} with /settings")).unwrap_or_default()
    )]
    FromSettings {
        label: String,
        key: Option<&'static str>,
    },
    #[error("{label} was added by a member; only members can remove it")]
    AddedByMember { label: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn kind(name: &str) -> Result<SourceKind, CurationError> {
    SourceKind::parse(name).ok_or_else(|| CurationError::UnknownKind { name: name.into() })
}

fn settings_key(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Rss => "initiative.discovery.rssFeeds",
        SourceKind::Reddit => "initiative.discovery.redditSubreddits",
        SourceKind::Youtube => "initiative.discovery.youtubeChannelIds",
        SourceKind::X => "initiative.discovery.xHandles",
        SourceKind::Hackernews => "initiative.discovery.sources.hackerNews",
    }
}

pub(crate) fn list(d: &Discovery, guild: GuildId) -> String {
    let sources = d.guild_sources(guild);
    if sources.is_empty() {
        return "No feed sources on this server. Add one with /discovery add, or in the settings (initiative.discovery.*).".into();
    }
    let now = d.clock.now();
    sources
        .iter()
        .map(|(spec, origin)| {
            let origin = match origin {
                Origin::Settings => "settings".to_string(),
                Origin::Added { by } if by == "model" => "added by the bot".to_string(),
                Origin::Added { .. } => "added by a member".to_string(),
            };
            let row = d
                .store
                .discovery
                .upsert_source(spec.kind.as_str(), &spec.target)
                .ok()
                .and_then(|id| d.store.discovery.source(id).ok().flatten());
            let state = match &row {
                Some(r) if r.last_fetch_at.is_some() => format!(
                    "{}, {} items, {}",
                    crate::when::ago(r.last_fetch_at.unwrap_or(now), now),
                    d.store.discovery.count_feed_items(r.id).unwrap_or(0),
                    r.last_status
                ),
                _ => "not fetched yet".into(),
            };
            format!("{} [{}] ({origin}) — {state}", spec.label(), spec.kind)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Adds a source; the answer, or why not.
pub fn add(
    d: &Discovery,
    guild: GuildId,
    kind_name: &str,
    target: &str,
    actor: Actor,
) -> Result<String, CurationError> {
    let kind = kind(kind_name)?;
    let settings = d.settings.for_guild(Some(guild));
    let disc = &settings.initiative.discovery;
    if actor == Actor::Model && !disc.allow_self_curation {
        return Err(CurationError::SelfCurationOff);
    }
    if !kind.enabled(disc) {
        return Err(CurationError::KindOff { kind });
    }
    let spec = SourceSpec::new(kind, target)?;
    let existing = d.guild_sources(guild);
    if existing.iter().any(|(s, _)| *s == spec) {
        return Err(CurationError::AlreadyThere {
            label: spec.label(),
        });
    }
    let of_kind = existing.iter().filter(|(s, _)| s.kind == kind).count();
    if of_kind >= disc.max_sources_per_type as usize {
        return Err(CurationError::Full {
            count: of_kind,
            kind,
        });
    }
    let now = d.clock.now();
    d.store
        .discovery
        .add_guild_source(guild, kind.as_str(), &spec.target, &actor.tag(), now)?;
    d.poke();
    d.journal.record(
        Entry::new(Kind::Discovery, format!("added source {}", spec.label()))
            .guild(Some(guild))
            .reason(actor.describe()),
    );
    Ok(format!(
        "Added {} ({kind}); it is fetched within a few minutes.",
        spec.label()
    ))
}

/// Removes a source; the answer, or why not.
pub fn remove(
    d: &Discovery,
    guild: GuildId,
    kind_name: &str,
    target: &str,
    actor: Actor,
) -> Result<String, CurationError> {
    let kind = kind(kind_name)?;
    let spec = SourceSpec::new(kind, target)?;
    let found = d.guild_sources(guild).into_iter().find(|(s, _)| *s == spec);
    match found {
        None => Err(CurationError::NotThere {
            label: spec.label(),
        }),
        Some((_, Origin::Settings)) => Err(CurationError::FromSettings {
            label: spec.label(),
            key: match actor {
                Actor::Model => None,
                Actor::Member(_) => Some(settings_key(kind)),
            },
        }),
        Some((_, Origin::Added { by })) if actor == Actor::Model && by != "model" => {
            Err(CurationError::AddedByMember {
                label: spec.label(),
            })
        }
        Some(_) => {
            d.store
                .discovery
                .remove_guild_source(guild, kind.as_str(), &spec.target)?;
            d.journal.record(
                Entry::new(Kind::Discovery, format!("removed source {}", spec.label()))
                    .guild(Some(guild))
                    .reason(actor.describe()),
            );
            Ok(format!("Removed {}.", spec.label()))
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceArgs {
    /// rss, reddit, youtube, x or hackernews
    kind: SourceKind,
    /// Feed URL, subreddit name, YouTube channel id (UC…), or X handle.
    target: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

pub(crate) struct AddTool(Arc<Discovery>, GuildId);
pub(crate) struct RemoveTool(Arc<Discovery>, GuildId);
pub(crate) struct ListTool(Arc<Discovery>, GuildId);

#[async_trait]
impl TypedTool for AddTool {
    type Args = SourceArgs;
    fn name(&self) -> &'static str {
        "discovery_source_add"
    }
    fn description(&self) -> String {
        "Add a feed source this community would enjoy (within the server's limits).".into()
    }
    async fn run(&self, a: SourceArgs) -> Result<String, ToolError> {
        add(&self.0, self.1, a.kind.as_str(), &a.target, Actor::Model)
            .map_err(|e| ToolError(e.to_string()))
    }
}

#[async_trait]
impl TypedTool for RemoveTool {
    type Args = SourceArgs;
    fn name(&self) -> &'static str {
        "discovery_source_remove"
    }
    fn description(&self) -> String {
        "Remove a feed source you added that is not working out.".into()
    }
    async fn run(&self, a: SourceArgs) -> Result<String, ToolError> {
        remove(&self.0, self.1, a.kind.as_str(), &a.target, Actor::Model)
            .map_err(|e| ToolError(e.to_string()))
    }
}

#[async_trait]
impl TypedTool for ListTool {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        "discovery_source_list"
    }
    fn description(&self) -> String {
        "List this server's feed sources, where each comes from, and how it is doing.".into()
    }
    async fn run(&self, _: NoArgs) -> Result<String, ToolError> {
        Ok(list(&self.0, self.1))
    }
}

/// The self-curation tools for a guild's initiative loop.
pub(crate) fn tools(d: &Arc<Discovery>, guild: GuildId) -> Vec<Arc<dyn Tool>> {
    vec![
        typed(ListTool(d.clone(), guild)),
        typed(AddTool(d.clone(), guild)),
        typed(RemoveTool(d.clone(), guild)),
    ]
}
