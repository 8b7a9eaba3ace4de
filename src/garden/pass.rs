//! The garden's pass over memory: the cheap, deterministic half of a cycle,
//! run by code, not by the model (seed: "Layer 2: Ambient Garden").
//!
//! Per guild, highest value first:
//! 1. **duplicates** found by MinHash banding ([`super::similar`]) and
//!    confirmed with keyword Jaccard ≥ 0.8 are folded into one survivor —
//!    strengths added, breadcrumbs moved, the others marked superseded; a
//!    fact learned in two channels becomes the server's;
//! 2. **decayed** facts are pruned (archived) by the seed's rule: confidence
//!    below 0.05 and strength at most 1, where confidence halves every
//!    `garden.confidenceHalfLifeDays` since the fact was last stored,
//!    reinforced or used; high-importance facts and behaviour guidance are kept;
//! 3. **related** facts are linked: those sharing two or more distinctive
//!    keywords (used by 2–50 of the guild's facts).
//!
//! Each change is journaled with what changed and why. Progress is kept in a
//! checkpoint after every guild, so a pass that is stopped (shutdown, the
//! `garden.maxPassSeconds` bound, a crash) resumes where it left off.
//! What needs judgment — possible contradictions, stale facts that recent
//! conversation touches — is only *found* here and handed to the model.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::similar;
use crate::garden::Stores;
use crate::ids::GuildId;
use crate::journal::Journal;
use crate::memory::keywords::{jaccard, keywords};
use crate::settings::GardenSettings;
use crate::store::GardenStore;
use crate::store::MemoryStore;
use crate::store::memory::FactFilter;
use crate::vocab::fact::{Fact, FactKind, Importance, Scope, ScopeKind};
use crate::vocab::journal::{Entry, Kind};

/// The Jaccard above which two facts say the same thing (as when storing one).
pub(crate) const NEAR_DUPLICATE: f64 = 0.8;
/// The seed's pruning rule.
pub(crate) const PRUNE_CONFIDENCE: f64 = 0.05;
/// A keyword used by more of a guild's facts than this says nothing about how two relate.
const MAX_LINK_DF: usize = 50;
const MAX_NEW_LINKS_PER_FACT: usize = 5;
/// The most facts on one subject compared pairwise for contradictions.
const MAX_SUBJECT_GROUP: usize = 64;

/// Where an interrupted pass picks up: the guilds it finished.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    pub cycle: i64,
    /// Guild ids done (0 for direct messages).
    pub done: Vec<u64>,
}

pub(crate) fn guild_key(g: Option<GuildId>) -> u64 {
    g.map_or(0, GuildId::get)
}

/// What one guild's pass did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tended {
    pub examined: usize,
    pub merged: usize,
    pub pruned: usize,
    pub linked: usize,
}

impl Tended {
    pub fn add(&mut self, o: &Tended) {
        self.examined += o.examined;
        self.merged += o.merged;
        self.pruned += o.pruned;
        self.linked += o.linked;
    }

    pub(crate) fn modified(&self) -> usize {
        self.merged + self.pruned
    }
}

/// Confidence after decay: halves every `half_life_days` since the fact was last seen.
pub(crate) fn decayed_confidence(f: &Fact, now: DateTime<Utc>, half_life_days: u32) -> f64 {
    let days = (now - f.last_seen_at).num_seconds().max(0) as f64 / 86_400.0;
    f.confidence * 0.5f64.powf(days / f64::from(half_life_days.max(1)))
}

fn scope_rank(s: &Scope) -> u8 {
    match s.kind {
        ScopeKind::Guild => 0,
        ScopeKind::Channel => 1,
        ScopeKind::User => 2,
    }
}

/// Tends one guild's memory (`None`: direct messages). `unchanged`: the
/// memory is as the last pass left it, so only pruning (which time alone
/// can make due) is worth doing.
pub fn tend(
    store: &Stores,
    journal: &Journal,
    g: &GardenSettings,
    guild: Option<GuildId>,
    now: DateTime<Utc>,
    unchanged: bool,
) -> Tended {
    let facts = store
        .memory
        .list_facts(&FactFilter {
            guild: Some(guild),
            ..Default::default()
        })
        .unwrap_or_default();
    let mut t = Tended {
        examined: facts.len(),
        ..Default::default()
    };
    let words: Vec<BTreeSet<String>> = facts.iter().map(|f| keywords(&f.content)).collect();
    let mut gone = vec![false; facts.len()];

    // 1. Duplicates, within one kind (and, for facts about a person, one person).
    if !unchanged {
        t.merged = merge_duplicates(
            &store.memory,
            journal,
            &facts,
            &words,
            &mut gone,
            guild,
            now,
        );
    }

    // 2. Decayed facts.
    let mut pruned = Vec::new();
    for (i, f) in facts.iter().enumerate() {
        if gone[i] || f.importance == Importance::High || f.kind == FactKind::BehaviorGuidance {
            continue;
        }
        let c = decayed_confidence(f, now, g.confidence_half_life_days);
        if c < PRUNE_CONFIDENCE && f.strength <= 1 {
            let mut f = f.clone();
            f.archived_at = Some(now);
            f.updated_at = now;
            pruned.push((f, c));
            gone[i] = true;
        }
    }
    if !pruned.is_empty() {
        let refs: Vec<&Fact> = pruned.iter().map(|(f, _)| f).collect();
        if store.memory.save_facts(&[], &refs).is_ok() {
            t.pruned = pruned.len();
            let list: Vec<String> = pruned
                .iter()
                .take(5)
                .map(|(f, c)| format!("\"{}\" ({c:.3})", f.content))
                .collect();
            journal.record(
                Entry::new(
                    Kind::Garden,
                    format!("pruned {} decayed memory(ies)", pruned.len()),
                )
                .guild(guild)
                .reason(format!(
                    "confidence below {PRUNE_CONFIDENCE} and strength ≤ 1 (half-life {} days): {}",
                    g.confidence_half_life_days,
                    list.join(", ")
                )),
            );
        }
    }

    // 3. Links between related facts.
    if !unchanged {
        t.linked = link_related(&store.garden, journal, &facts, &words, &gone, guild, now);
    }
    t
}

/// Folds near-duplicates into survivors; returns how many were folded in.
fn merge_duplicates(
    store: &MemoryStore,
    journal: &Journal,
    facts: &[Fact],
    words: &[BTreeSet<String>],
    gone: &mut [bool],
    guild: Option<GuildId>,
    now: DateTime<Utc>,
) -> usize {
    let mut merged = 0;
    for members in duplicate_clusters(facts, words) {
        let (survivor_at, survivor, others) = fold(facts, &members, guild, now);
        let refs: Vec<&Fact> = others.iter().collect();
        // A failed merge leaves the cluster as it was: the next pass finds it again.
        if store.merge_facts(&survivor, &refs, now).is_ok() {
            for &i in &members {
                gone[i] = i != survivor_at;
            }
            merged += others.len();
            journal.record(
                Entry::new(Kind::Garden, format!("merged {} duplicate(s) into memory {}", others.len(), survivor.short_id()))
                    .guild(guild)
                    .reason(format!(
                        "they said the same thing (keyword Jaccard ≥ {NEAR_DUPLICATE}): \"{}\"; strength now {}",
                        survivor.content, survivor.strength
                    ))
                    .data(serde_json::json!({ "survivor": survivor.id, "merged": others.iter().map(|o| &o.id).collect::<Vec<_>>() })),
            );
        }
    }
    merged
}

/// The groups of facts (indices, two or more each, in a stable order) that
/// say the same thing: same kind and person, subjects that agree, keyword
/// Jaccard ≥ `NEAR_DUPLICATE`, joined transitively.
fn duplicate_clusters(facts: &[Fact], words: &[BTreeSet<String>]) -> Vec<Vec<usize>> {
    let items: Vec<((FactKind, Option<u64>), _)> = facts
        .iter()
        .zip(words)
        .map(|(f, w)| {
            (
                (f.kind, f.scope.user.map(|u| u.get())),
                similar::signature(w),
            )
        })
        .collect();
    let mut parent: Vec<usize> = (0..facts.len()).collect();
    fn root(p: &mut [usize], i: usize) -> usize {
        let mut r = i;
        while p[r] != r {
            r = p[r];
        }
        p[i] = r;
        r
    }
    for (a, b) in similar::candidate_pairs(&items) {
        let subjects_agree = match (&facts[a].subject, &facts[b].subject) {
            (Some(x), Some(y)) => x.eq_ignore_ascii_case(y),
            _ => true,
        };
        if subjects_agree && jaccard(&words[a], &words[b]) >= NEAR_DUPLICATE {
            let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
            parent[ra.max(rb)] = ra.min(rb);
        }
    }
    let mut clusters: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..facts.len() {
        let r = root(&mut parent, i);
        clusters.entry(r).or_default().push(i);
    }
    let mut clusters: Vec<Vec<usize>> = clusters.into_values().filter(|c| c.len() > 1).collect();
    clusters.sort();
    clusters
}

/// One cluster folded: the survivor (widest scope, strongest, oldest) takes
/// the others' strength, confidence, importance and sources, and moves up to
/// the guild when the copies came from several channels; the others point
/// at it. Returns (the survivor's index, the survivor, the others).
fn fold(
    facts: &[Fact],
    members: &[usize],
    guild: Option<GuildId>,
    now: DateTime<Utc>,
) -> (usize, Fact, Vec<Fact>) {
    let survivor_at = *members
        .iter()
        .min_by_key(|&&i| {
            (
                scope_rank(&facts[i].scope),
                std::cmp::Reverse(facts[i].strength),
                facts[i].created_at,
            )
        })
        .expect("a cluster has members");
    let mut survivor = facts[survivor_at].clone();
    let others: Vec<Fact> = members
        .iter()
        .filter(|&&i| i != survivor_at)
        .map(|&i| {
            let mut f = facts[i].clone();
            f.superseded_by = Some(survivor.id.clone());
            f.updated_at = now;
            f
        })
        .collect();
    let channels: BTreeSet<_> = members
        .iter()
        .filter_map(|&i| facts[i].scope.channel)
        .collect();
    if survivor.scope.kind == ScopeKind::Channel
        && channels.len() > 1
        && let Some(g) = guild
    {
        survivor.scope = Scope::guild(g);
    }
    for o in &others {
        survivor.strength += o.strength;
        survivor.confidence = survivor.confidence.max(o.confidence);
        survivor.importance = survivor.importance.max(o.importance);
        survivor.last_seen_at = survivor.last_seen_at.max(o.last_seen_at);
        for s in &o.sources {
            if !survivor.sources.contains(s) && survivor.sources.len() < 20 {
                survivor.sources.push(*s);
            }
        }
    }
    survivor.updated_at = now;
    (survivor_at, survivor, others)
}

/// Links facts that share two or more distinctive words; returns the new links.
fn link_related(
    store: &GardenStore,
    journal: &Journal,
    facts: &[Fact],
    words: &[BTreeSet<String>],
    gone: &[bool],
    guild: Option<GuildId>,
    now: DateTime<Utc>,
) -> usize {
    let mut index: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, w) in words.iter().enumerate() {
        if !gone[i] {
            for word in w {
                index.entry(word.as_str()).or_default().push(i);
            }
        }
    }
    let mut shared: HashMap<(usize, usize), u8> = HashMap::new();
    for posting in index
        .values()
        .filter(|p| (2..=MAX_LINK_DF).contains(&p.len()))
    {
        for (x, &a) in posting.iter().enumerate() {
            for &b in &posting[x + 1..] {
                *shared.entry((a, b)).or_default() += 1;
            }
        }
    }
    let mut per_fact = vec![0usize; facts.len()];
    let mut pairs: Vec<(usize, usize)> = shared
        .into_iter()
        .filter(|(_, n)| *n >= 2)
        .map(|(p, _)| p)
        .collect();
    pairs.sort_unstable();
    let mut links = Vec::new();
    for (a, b) in pairs {
        if per_fact[a] < MAX_NEW_LINKS_PER_FACT && per_fact[b] < MAX_NEW_LINKS_PER_FACT {
            per_fact[a] += 1;
            per_fact[b] += 1;
            links.push((facts[a].id.clone(), facts[b].id.clone()));
        }
    }
    let linked = store.link_facts(&links, "related", now).unwrap_or(0);
    if linked > 0 {
        journal.record(
            Entry::new(
                Kind::Garden,
                format!("linked {linked} pair(s) of related memories"),
            )
            .guild(guild)
            .reason("they share two or more distinctive words"),
        );
    }
    linked
}

/// What a pass over every guild did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Run {
    pub tended: Tended,
    /// It picked up a pass an earlier cycle had not finished.
    pub resumed: bool,
    /// It reached the end (not stopped at a checkpoint).
    pub finished: bool,
    /// Transcript lines, each with the guild it is about (`None`: the pass as a whole).
    pub lines: Vec<(Option<GuildId>, String)>,
}

pub(crate) fn describe(t: &Tended) -> String {
    format!(
        "merged {}, pruned {}, linked {}",
        t.merged, t.pruned, t.linked
    )
}

/// The pass over every guild, from the checkpoint; stops (keeping the
/// checkpoint) when `stop` says so. A guild whose memory has not changed
/// since the last pass is only checked for decay.
pub(crate) fn run(
    store: &Stores,
    journal: &Journal,
    g: &GardenSettings,
    cycle: i64,
    now: DateTime<Utc>,
    stop: &dyn Fn() -> bool,
) -> Run {
    let mut cp: Checkpoint = store
        .garden
        .garden_get("checkpoint")
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut marks: HashMap<u64, (u64, i64)> = store
        .garden
        .garden_get("pass_marks")
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut out = Run {
        resumed: !cp.done.is_empty(),
        ..Default::default()
    };
    if out.resumed {
        out.lines.push((
            None,
            format!(
                "resumed the pass of cycle {} after {} server(s)",
                cp.cycle,
                cp.done.len()
            ),
        ));
    }
    cp.cycle = cycle;
    let mut guilds = store.memory.fact_guilds().unwrap_or_default();
    guilds.sort_by_key(|g| guild_key(*g));
    for guild in guilds {
        let key = guild_key(guild);
        if cp.done.contains(&key) {
            continue;
        }
        if stop() {
            out.lines.push((
                None,
                format!("stopped after {} server(s); checkpoint kept", cp.done.len()),
            ));
            return out;
        }
        let before = store.memory.fact_signature(guild).ok();
        let unchanged = before.is_some() && marks.get(&key) == before.as_ref();
        let t = tend(store, journal, g, guild, now, unchanged);
        if t.modified() + t.linked > 0 {
            out.lines.push((guild, describe(&t)));
        }
        out.tended.add(&t);
        if let Ok(after) = store.memory.fact_signature(guild) {
            marks.insert(key, after);
        }
        cp.done.push(key);
        // Harmless if lost: a lost checkpoint or mark only means a server is tended again.
        let _ = store.garden.garden_set("checkpoint", &cp);
        let _ = store.garden.garden_set("pass_marks", &marks);
    }
    // Harmless if lost: a stale checkpoint only defers its servers to the pass after.
    let _ = store.garden.garden_clear("checkpoint");
    out.lines.push((
        None,
        format!(
            "examined {} memories: {}",
            out.tended.examined,
            describe(&out.tended)
        ),
    ));
    out.finished = true;
    out
}

/// What needs the model's judgment in one guild.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    /// Same kind, scope and subject, saying different things.
    pub contradictions: Vec<(Fact, Fact)>,
    /// Past a half-life of confidence, and touched by recent conversation.
    pub stale: Vec<Fact>,
}

/// `judged`: pairs already put to the model (see `prompt::pair_key`), not asked again.
pub fn candidates(
    store: &MemoryStore,
    g: &GardenSettings,
    guild: GuildId,
    recent_talk: &str,
    now: DateTime<Utc>,
    judged: &std::collections::HashSet<String>,
) -> Candidates {
    let facts = store
        .list_facts(&FactFilter {
            guild: Some(Some(guild)),
            ..Default::default()
        })
        .unwrap_or_default();
    let max = g.max_candidates as usize;
    let mut groups: HashMap<(FactKind, Scope, String), Vec<&Fact>> = HashMap::new();
    for f in &facts {
        if let Some(s) = f.subject.as_deref().filter(|s| !s.trim().is_empty())
            && f.kind != FactKind::Feedback
        {
            groups
                .entry((f.kind, f.scope, s.trim().to_lowercase()))
                .or_default()
                .push(f);
        }
    }
    let mut contradictions = Vec::new();
    let mut keys: Vec<_> = groups.keys().cloned().collect();
    keys.sort_by(|a, b| a.2.cmp(&b.2));
    'groups: for k in keys {
        // Pairs grow with the square of a group: only the freshest facts on a
        // subject are compared (a contradiction nearly always involves a new one).
        let mut group = groups[&k].clone();
        group.sort_by_key(|f| std::cmp::Reverse(f.updated_at));
        group.truncate(MAX_SUBJECT_GROUP);
        // Each fact's keywords once, not once per pair.
        let words: Vec<_> = group.iter().map(|f| keywords(&f.content)).collect();
        for (x, a) in group.iter().enumerate() {
            for (y, b) in group.iter().enumerate().skip(x + 1) {
                let key = format!(
                    "{}@{}|{}@{}",
                    a.id,
                    a.updated_at.timestamp_millis(),
                    b.id,
                    b.updated_at.timestamp_millis()
                );
                if !judged.contains(&key) && jaccard(&words[x], &words[y]) < NEAR_DUPLICATE {
                    contradictions.push(((*a).clone(), (*b).clone()));
                    if contradictions.len() >= max {
                        break 'groups;
                    }
                }
            }
        }
    }
    let talk = keywords(recent_talk);
    let mut stale: Vec<Fact> = facts
        .iter()
        .filter(|f| f.importance >= Importance::Medium && f.kind != FactKind::Feedback)
        .filter(|f| decayed_confidence(f, now, g.confidence_half_life_days) < 0.5)
        .filter(|f| keywords(&f.content).intersection(&talk).count() >= 2)
        .cloned()
        .collect();
    stale.truncate(max);
    Candidates {
        contradictions,
        stale,
    }
}
