//! Reflexes: cheap, declarative reactions tried before the executive
//! (seed: attention-reflexes-executive.md).
//!
//! Definitions are YAML files (see [`def`]) in `reflexes.dir` — or, when that
//! folder does not exist, the defaults built into the binary — plus the ones
//! the executive wrote for a single guild under `<dataDir>/state/reflexes/`.
//! A file that does not parse is reported with its line and skipped; the
//! others still load.
//!
//! Matching is one pass of a `RegexSet` over the message, so a hundred
//! reflexes cost about as much as one. The matching reflexes run in priority
//! order: one that finishes handles the input; one that passes (or whose
//! classifier says no) lets the next try; one that escalates hands the input
//! to the executive; one that fails is journaled and the next tries. Every
//! run is counted (`ambient reflexes stats`) so the useful ones can be told
//! from the rest.

use crate::store::cut;
use crate::store::{ImpulseStore, JournalStore, MessageStore, PeopleStore};
pub(crate) mod def;
pub(crate) mod pipeline;
pub(crate) mod state;
pub(crate) mod tools;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use async_trait::async_trait;
use regex::RegexSet;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::attention::router::ORDER_REFLEX;
use crate::attention::{Attended, Handler, Input, Outcome, Percept};
use crate::executive::tools::FinalTool;
use crate::executive::{ExecError, Message, Turn, TurnOutcome};
use crate::ids::{GuildId, MessageId, UserId};
use crate::settings::Role;
use crate::settings::load::{FileError, read_limited};
use crate::store::StoreError;
use crate::vocab::journal::{Entry, Kind};
use def::{Event, Reflex, Trigger};
use pipeline::{Ended, Firing, Services};

/// The defaults shipped in the repository's `reflexes/` folder, built in for
/// when `reflexes.dir` does not exist.
pub(crate) const DEFAULTS: &[(&str, &str)] = &[
    (
        "greeting.yaml",
        include_str!("../../reflexes/greeting.yaml"),
    ),
    (
        "summarize-url.yaml",
        include_str!("../../reflexes/summarize-url.yaml"),
    ),
    (
        "remind-me.yaml",
        include_str!("../../reflexes/remind-me.yaml"),
    ),
    (
        "what-did-you-do.yaml",
        include_str!("../../reflexes/what-did-you-do.yaml"),
    ),
    ("hush.yaml", include_str!("../../reflexes/hush.yaml")),
    ("unhush.yaml", include_str!("../../reflexes/unhush.yaml")),
];

/// The largest reflex file read; the defaults are under 2 KiB each.
pub(crate) const MAX_FILE_BYTES: u64 = 256 * 1024;
/// The most reflex files read from one folder: each costs a pattern in every
/// message's match, and a folder with more is a mistake, not a configuration.
pub const MAX_FILES: usize = 200;
/// How much of a definition a problem may quote: enough to recognise, never
/// the file (a problem is printed, journaled and shown in status).
pub(crate) const MAX_PROBLEM_CHARS: usize = 300;

/// One reflex file: its name, and its text or why it was not read.
pub(crate) type SourceFile = (String, Result<String, FileError>);

/// Why a folder of reflex files was not read at all.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DirError {
    #[error("cannot read {dir}: {source}")]
    Read { dir: String, source: std::io::Error },
    #[error("{dir}: more than {limit} reflex files; keep at most {limit} .yaml files there")]
    TooMany { dir: String, limit: usize },
}

/// Why the executive's reflex edit (create, disable, enable) was refused;
/// the text is the tool result the model reads.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error(
        "the new reflex is {0} bytes, more than the limit of {max} bytes for a reflex file",
        max = MAX_FILE_BYTES
    )]
    TooLarge(usize),
    /// Every problem `def::parse` found, each clipped, one a line.
    #[error("{lines}", lines = .0.join("\n"))]
    Invalid(Vec<String>),
    /// The line of the `reply` step that names a channel.
    #[error(
        "the new reflex:{0}: a reflex written here replies where it was triggered; remove `channel`"
    )]
    RepliesElsewhere(u64),
    /// The last line of the regex crate's explanation.
    #[error("the pattern is too large together with this server's other reflexes ({0})")]
    SetTooLarge(String),
    #[error("{0:?} is the name of an operator's reflex; choose another name")]
    OperatorsName(String),
    #[error(
        "this server already has {mine} reflexes of its own (reflexes.maxCreatedPerGuild is {max}); disable or replace one"
    )]
    TooMany { mine: usize, max: usize },
    #[error("cannot create {dir}: {source}")]
    CreateDir { dir: String, source: std::io::Error },
    #[error("{0}")]
    Write(std::io::Error),
    #[error("wrote {path} but could not switch it on: {source}")]
    NotSwitchedOn { path: String, source: StoreError },
    #[error("there is no reflex {name:?}; the reflexes are: {list}", list = .known.join(", "))]
    Unknown { name: String, known: Vec<String> },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a classifier trigger could not say yes or no.
#[derive(Debug, thiserror::Error)]
enum ClassifyError {
    #[error(transparent)]
    Model(#[from] ExecError),
    /// The executive's explanation of the malformed answer.
    #[error("{0}")]
    BadAnswer(String),
    /// The turn's outcome, for the journal.
    #[error("the classifier gave no answer ({0})")]
    NoAnswer(String),
}

/// The definitions built into the binary, as files.
pub(crate) fn built_in() -> Vec<SourceFile> {
    DEFAULTS
        .iter()
        .map(|(n, t)| (format!("built-in {n}"), Ok(t.to_string())))
        .collect()
}

/// Reads every `*.yaml` / `*.yml` file in `dir`, in name order. A file that is
/// not plain, too large or not text is kept with its error, to be reported.
pub(crate) fn read_dir(dir: &Path) -> Result<Vec<SourceFile>, DirError> {
    let shown = || dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|source| DirError::Read {
        dir: shown(),
        source,
    })?;
    let mut files: Vec<PathBuf> = Vec::new();
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            if files.len() == MAX_FILES {
                return Err(DirError::TooMany {
                    dir: shown(),
                    limit: MAX_FILES,
                });
            }
            files.push(path);
        }
    }
    files.sort();
    Ok(files
        .into_iter()
        .map(|path| {
            let text = read_limited(&path, MAX_FILE_BYTES);
            (path.display().to_string(), text)
        })
        .collect())
}

/// Parses a set of files: the good ones, and every problem as `file:line: reason`.
pub(crate) fn parse_all(files: &[SourceFile]) -> (Vec<Reflex>, Vec<String>) {
    let mut reflexes: Vec<Reflex> = Vec::new();
    let mut problems = Vec::new();
    for (file, text) in files {
        let text = match text {
            Ok(text) => text,
            Err(e) => {
                problems.push(format!("{file}: cannot read the reflex file: {e}"));
                continue;
            }
        };
        match def::parse(file, text) {
            Ok(r) => match reflexes.iter().find(|o| o.name == r.name) {
                Some(other) => problems.push(format!(
                    "{file}:{}: the name {:?} is already used by {}",
                    r.name_line, r.name, other.file
                )),
                None => reflexes.push(r),
            },
            Err(p) => problems.extend(p),
        }
    }
    let problems = problems.into_iter().map(|p| clip(&p)).collect();
    (reflexes, problems)
}

/// A problem cut to [`MAX_PROBLEM_CHARS`], marked where it was cut.
fn clip(problem: &str) -> String {
    match problem.char_indices().nth(MAX_PROBLEM_CHARS) {
        Some((at, _)) => format!("{}… (cut)", &problem[..at]),
        None => problem.to_string(),
    }
}

/// What a reflex may be woken by.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stimulus<'a> {
    Message { text: &'a str, addressed: bool },
    Reaction { emoji: &'a str },
    MemberJoin,
}

/// A reflex that matched, with the values its pattern extracted.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub reflex: Arc<Reflex>,
    pub captures: Vec<(String, String)>,
}

/// The patterns of one scope (the operator's reflexes, or one guild's) in a
/// single `RegexSet`, so a scope's reflexes cost one pass over a message. A
/// set too large to build falls back to trying each pattern in turn — slower,
/// never silent — and one guild's patterns can never break another's.
struct Matcher {
    set: Option<RegexSet>,
    /// For each pattern, the reflex it belongs to.
    owners: Vec<usize>,
}

impl Matcher {
    fn build(reflexes: &[Arc<Reflex>], members: Vec<usize>) -> Result<Matcher, (Matcher, String)> {
        let patterns: Vec<&str> = members
            .iter()
            .filter_map(|&i| reflexes[i].trigger.regex().map(|r| r.as_str()))
            .collect();
        match RegexSet::new(&patterns) {
            Ok(set) => Ok(Matcher {
                set: Some(set),
                owners: members,
            }),
            Err(e) => Err((
                Matcher {
                    set: None,
                    owners: members,
                },
                format!(
                    "these patterns are too large to match together ({}); they are tried one by one",
                    e.to_string().lines().last().unwrap_or("")
                ),
            )),
        }
    }

    fn hits(&self, reflexes: &[Arc<Reflex>], text: &str) -> Vec<usize> {
        match &self.set {
            Some(set) => set.matches(text).iter().map(|i| self.owners[i]).collect(),
            None => self
                .owners
                .iter()
                .copied()
                .filter(|&i| {
                    reflexes[i]
                        .trigger
                        .regex()
                        .is_some_and(|r| r.is_match(text))
                })
                .collect(),
        }
    }
}

/// The loaded definitions, ready for matching.
pub struct Loaded {
    pub reflexes: Vec<Arc<Reflex>>,
    /// The operator's pattern reflexes.
    global: Matcher,
    /// Each guild's own pattern reflexes.
    guilds: HashMap<GuildId, Matcher>,
    /// Classifier reflexes without a pattern: candidates for every addressed message.
    unpatterned: Vec<usize>,
    events: Vec<usize>,
    disabled: HashSet<(Option<GuildId>, String)>,
    pub problems: Vec<String>,
    /// Where the operator's reflexes came from, for status lines.
    pub source: String,
}

impl Loaded {
    pub(crate) fn new(
        reflexes: Vec<Reflex>,
        disabled: HashSet<(Option<GuildId>, String)>,
        mut problems: Vec<String>,
        source: String,
    ) -> Self {
        let reflexes: Vec<Arc<Reflex>> = reflexes.into_iter().map(Arc::new).collect();
        let mut scoped: HashMap<Option<GuildId>, Vec<usize>> = HashMap::new();
        let mut unpatterned = Vec::new();
        let mut events = Vec::new();
        for (i, r) in reflexes.iter().enumerate() {
            match (&r.trigger, r.trigger.regex()) {
                (_, Some(_)) => scoped.entry(r.guild).or_default().push(i),
                (Trigger::Event(_), None) => events.push(i),
                (_, None) => unpatterned.push(i),
            }
        }
        let mut build = |scope: Option<GuildId>, members: Vec<usize>| match Matcher::build(
            &reflexes, members,
        ) {
            Ok(m) => m,
            Err((m, why)) => {
                let whose = scope.map_or("the reflexes".to_string(), |g| {
                    format!("server {g}'s reflexes")
                });
                problems.push(format!("{whose}: {why}"));
                m
            }
        };
        let global = build(None, scoped.remove(&None).unwrap_or_default());
        let guilds = scoped
            .into_iter()
            .filter_map(|(g, m)| g.map(|g| (g, build(Some(g), m))))
            .collect();
        Self {
            reflexes,
            global,
            guilds,
            unpatterned,
            events,
            disabled,
            problems,
            source,
        }
    }

    /// Whether a guild's patterns still fit in one matcher with `extra` added.
    pub(crate) fn fits(&self, guild: GuildId, extra: &Reflex) -> Result<(), EditError> {
        let mut patterns: Vec<&str> = self
            .reflexes
            .iter()
            .filter(|r| r.guild == Some(guild) && r.name != extra.name)
            .filter_map(|r| r.trigger.regex().map(|re| re.as_str()))
            .collect();
        patterns.extend(extra.trigger.regex().map(|re| re.as_str()));
        RegexSet::new(&patterns).map(|_| ()).map_err(|e| {
            EditError::SetTooLarge(e.to_string().lines().last().unwrap_or("").to_string())
        })
    }

    pub fn is_disabled(&self, r: &Reflex, guild: Option<GuildId>) -> bool {
        self.disabled.contains(&(None, r.name.clone()))
            || (guild.is_some() && self.disabled.contains(&(guild, r.name.clone())))
    }

    fn applies(&self, r: &Reflex, guild: Option<GuildId>) -> bool {
        (r.guild.is_none() || r.guild == guild) && !self.is_disabled(r, guild)
    }

    /// The reflexes that want this stimulus, best first: higher priority,
    /// then the cheaper level, then by name.
    pub(crate) fn candidates(
        &self,
        guild: Option<GuildId>,
        stimulus: Stimulus<'_>,
    ) -> Vec<Candidate> {
        let mut out = match stimulus {
            Stimulus::Message { text, addressed } => {
                self.message_candidates(guild, text, addressed)
            }
            Stimulus::Reaction { emoji } => self.event_candidates(guild, |t| {
                matches!(t, Trigger::Event(Event::Reaction { emoji: want }) if want.as_deref().is_none_or(|w| w == emoji))
            }),
            Stimulus::MemberJoin => {
                self.event_candidates(guild, |t| matches!(t, Trigger::Event(Event::MemberJoin)))
            }
        };
        out.sort_by(|a, b| {
            b.reflex
                .priority
                .cmp(&a.reflex.priority)
                .then(a.reflex.level.cmp(&b.reflex.level))
                .then(a.reflex.name.cmp(&b.reflex.name))
        });
        out
    }

    /// A message's candidates: the patterns that hit (with what they
    /// extracted), then, when the bot is addressed, the reflexes that need
    /// no pattern (an addressed classifier).
    fn message_candidates(
        &self,
        guild: Option<GuildId>,
        text: &str,
        addressed: bool,
    ) -> Vec<Candidate> {
        let wanted = |r: &Reflex| r.trigger.addressed().is_none_or(|want| want == addressed);
        let mut hits = self.global.hits(&self.reflexes, text);
        if let Some(m) = guild.and_then(|g| self.guilds.get(&g)) {
            hits.extend(m.hits(&self.reflexes, text));
        }
        let mut out = Vec::new();
        for hit in hits {
            let r = &self.reflexes[hit];
            if !wanted(r) || !self.applies(r, guild) {
                continue;
            }
            let Some(caps) = r.trigger.regex().and_then(|re| re.captures(text)) else {
                continue;
            };
            let captures = r
                .trigger
                .extract()
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let value = caps.get(i + 1).map_or("", |m| m.as_str());
                    (name.clone(), value.to_string())
                })
                .collect();
            out.push(Candidate {
                reflex: r.clone(),
                captures,
            });
        }
        if addressed {
            for &i in &self.unpatterned {
                let r = &self.reflexes[i];
                if wanted(r) && self.applies(r, guild) {
                    out.push(Candidate {
                        reflex: r.clone(),
                        captures: Vec::new(),
                    });
                }
            }
        }
        out
    }

    /// The event reflexes whose trigger `wants` this event.
    fn event_candidates(
        &self,
        guild: Option<GuildId>,
        wants: impl Fn(&Trigger) -> bool,
    ) -> Vec<Candidate> {
        self.events
            .iter()
            .map(|&i| &self.reflexes[i])
            .filter(|r| wants(&r.trigger) && self.applies(r, guild))
            .map(|r| Candidate {
                reflex: r.clone(),
                captures: Vec::new(),
            })
            .collect()
    }
}

/// The classifier's typed answer.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Classify {
    /// true if the answer to the question is yes.
    matches: bool,
}

/// The reflex service: definitions, matching, running, statistics, and the
/// executive's `reflex_create` / `reflex_disable`.
pub struct Reflexes {
    pub services: Services,
    loaded: RwLock<Arc<Loaded>>,
}

impl Reflexes {
    pub(crate) fn new(services: Services) -> Arc<Self> {
        let this = Arc::new(Self {
            services,
            loaded: RwLock::new(Arc::new(Loaded::new(
                Vec::new(),
                HashSet::new(),
                Vec::new(),
                String::new(),
            ))),
        });
        this.reload();
        this
    }

    pub fn loaded(&self) -> Arc<Loaded> {
        self.loaded
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn created_dir(&self) -> PathBuf {
        self.services.data_dir.join("state").join("reflexes")
    }

    /// Reads every definition again; problems are journaled and kept for status.
    pub fn reload(&self) -> Arc<Loaded> {
        let dir = PathBuf::from(&self.services.settings.global().reflexes.dir);
        let (files, source) = if dir.is_dir() {
            match read_dir(&dir) {
                Ok(files) => {
                    let n = files.len();
                    (Ok(files), format!("{} ({n} files)", dir.display()))
                }
                Err(e) => (Err(e), dir.display().to_string()),
            }
        } else {
            (
                Ok(built_in()),
                format!("the built-in defaults ({} does not exist)", dir.display()),
            )
        };
        let (mut reflexes, mut problems) = match files {
            Ok(files) => parse_all(&files),
            Err(e) => (Vec::new(), vec![e.to_string()]),
        };
        // The executive's reflexes, one folder per guild.
        if let Ok(guilds) = std::fs::read_dir(self.created_dir()) {
            for guild_dir in guilds.filter_map(|e| e.ok()).map(|e| e.path()) {
                let Some(guild) = guild_dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.parse::<u64>().ok())
                    .map(GuildId)
                else {
                    continue;
                };
                let files = match read_dir(&guild_dir) {
                    Ok(files) => files,
                    Err(e) => {
                        problems.push(e.to_string());
                        continue;
                    }
                };
                let (mut theirs, p) = parse_all(&files);
                problems.extend(p);
                theirs.retain(|r| {
                    !reflexes
                        .iter()
                        .any(|o| o.guild.is_none() && o.name == r.name)
                });
                for r in &mut theirs {
                    r.guild = Some(guild);
                }
                reflexes.extend(theirs);
            }
        }
        let disabled = self
            .services
            .store
            .impulses
            .disabled_reflexes()
            .unwrap_or_default()
            .into_iter()
            .map(|(g, name, _)| (g, name))
            .collect();
        for p in &problems {
            tracing::warn!("reflex skipped: {p}");
            self.services.journal.record(
                Entry::new(Kind::Error, "a reflex definition was skipped").reason(p.clone()),
            );
        }
        let loaded = Arc::new(Loaded::new(reflexes, disabled, problems, source));
        *self.loaded.write().unwrap_or_else(|p| p.into_inner()) = loaded.clone();
        loaded
    }

    /// One line for start-up notices and status.
    pub(crate) fn summary(&self) -> String {
        let l = self.loaded();
        let mut s = format!("reflexes: {} loaded from {}", l.reflexes.len(), l.source);
        if !l.problems.is_empty() {
            s.push_str(&format!(
                "; {} skipped ({})",
                l.problems.len(),
                l.problems.join("; ")
            ));
        }
        s
    }

    /// What an input offers reflexes, if anything: cheap, no store reads, so
    /// the common case (nothing matches) costs one pass of the regex set.
    fn stimulus(&self, item: &Attended, bot_name: &str) -> Option<StimulusOwned> {
        let Input::Percept(p) = &item.input else {
            return None;
        };
        match p {
            Percept::Message(m) if !m.message.author_is_bot => {
                let me = self.services.speech.transport().me();
                Some(StimulusOwned::Message {
                    text: spoken_text(&m.message.content, me.id, bot_name).to_string(),
                    addressed: m.addressed.is_addressed(),
                })
            }
            Percept::Reaction {
                user,
                emoji,
                added: true,
                ..
            } if !user.is_bot => Some(StimulusOwned::Reaction {
                emoji: emoji.clone(),
            }),
            Percept::MemberJoin { user, .. } if !user.is_bot => Some(StimulusOwned::MemberJoin),
            _ => None,
        }
    }

    /// Where the reflex acts and the variables its templates may use.
    fn firing(&self, p: &Percept, stimulus: &StimulusOwned) -> Firing {
        let s = &self.services;
        let guild = p.guild();
        let settings = s.settings.for_guild(guild);
        let tz = s.impulses.timezone(guild);
        let now = s.clock.now().with_timezone(&tz);
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        vars.insert("bot".into(), settings.bot.name.clone());
        vars.insert("now".into(), now.format("%Y-%m-%d %H:%M").to_string());
        vars.insert("today".into(), now.format("%A %Y-%m-%d").to_string());
        vars.insert(
            "guild".into(),
            guild
                .and_then(|g| s.store.messages.guild_name(g).ok().flatten())
                .unwrap_or_default(),
        );
        let channel_name = |c| {
            s.store
                .messages
                .channel_name(c)
                .ok()
                .flatten()
                .unwrap_or_default()
        };
        let mut firing = Firing {
            guild,
            channel: None,
            message: None,
            user: None,
            unprompted: !matches!(p, Percept::Message(m) if m.addressed.is_addressed()),
            vars,
        };
        match p {
            Percept::Message(m) => {
                if let StimulusOwned::Message { text, .. } = stimulus {
                    firing.vars.insert("message".into(), text.clone());
                }
                let channel = m
                    .channel_name
                    .clone()
                    .unwrap_or_else(|| channel_name(m.message.channel));
                person_vars(
                    &mut firing.vars,
                    "author",
                    &m.message.author_name,
                    m.message.author_id,
                );
                person_vars(
                    &mut firing.vars,
                    "user",
                    &m.message.author_name,
                    m.message.author_id,
                );
                firing.vars.insert("channel".into(), channel);
                (firing.channel, firing.message, firing.user) = (
                    Some(m.message.channel),
                    m.reply_target(),
                    Some(m.message.author_id),
                );
            }
            Percept::Reaction {
                place,
                message,
                user,
                emoji,
                ..
            } => {
                self.reacted_vars(&mut firing.vars, *message);
                person_vars(&mut firing.vars, "user", &user.name, user.id);
                firing.vars.insert("emoji".into(), emoji.clone());
                firing
                    .vars
                    .insert("channel".into(), channel_name(place.channel));
                (firing.channel, firing.message, firing.user) =
                    (Some(place.channel), Some(*message), Some(user.id));
            }
            Percept::MemberJoin { user, .. } => {
                person_vars(&mut firing.vars, "user", &user.name, user.id);
                firing.user = Some(user.id);
            }
            _ => {}
        }
        firing
    }

    /// For a reaction, `message` and `author` are the message reacted to
    /// (empty when the store no longer has it).
    fn reacted_vars(&self, vars: &mut BTreeMap<String, String>, message: MessageId) {
        let reacted = self.services.store.messages.message(message).ok().flatten();
        let (text, name, id) = match reacted {
            Some(m) => (m.content, m.author_name, m.author_id.to_string()),
            None => Default::default(),
        };
        vars.insert("message".into(), text);
        vars.insert("author".into(), name);
        vars.insert("author_id".into(), id);
    }

    /// The reflexes that want this input, best first (empty when reflexes are off).
    pub fn matching(&self, item: &Attended) -> Vec<Candidate> {
        self.matching_with_stimulus(item)
            .map(|(_, c)| c)
            .unwrap_or_default()
    }

    fn matching_with_stimulus(&self, item: &Attended) -> Option<(StimulusOwned, Vec<Candidate>)> {
        let Input::Percept(p) = &item.input else {
            return None;
        };
        let guild = p.guild();
        let settings = self.services.settings.for_guild(guild);
        if !settings.reflexes.enabled {
            return None;
        }
        let stimulus = self.stimulus(item, &settings.bot.name)?;
        let found = self.loaded().candidates(guild, stimulus.as_ref());
        (!found.is_empty()).then_some((stimulus, found))
    }

    /// The matching reflexes and what they would fire with (this reads the
    /// store for names, so it runs only once something matched).
    pub fn candidates_for(&self, item: &Attended) -> Option<(Firing, Vec<Candidate>)> {
        let (stimulus, found) = self.matching_with_stimulus(item)?;
        let Input::Percept(p) = &item.input else {
            return None;
        };
        Some((self.firing(p, &stimulus), found))
    }

    /// Asks the reflex model the classifier's yes/no question.
    async fn classify(
        &self,
        r: &Reflex,
        question: &str,
        firing: &Firing,
    ) -> Result<bool, ClassifyError> {
        let mut turn = Turn::new(
            Role::Reflex,
            firing.guild,
            format!("reflex {} classifier", r.name),
        );
        turn.channel = firing.channel;
        turn.system = "You classify chat messages for a Discord bot. Answer the question about the message with the classify tool.".into();
        let message = firing.vars.get("message").map(String::as_str).unwrap_or("");
        // A flood is one message like any other: the classifier sees it cut (promptLimits).
        let settings = self.services.settings.global();
        let limit = settings.executive.prompt_limits.message_chars as usize;
        let message = crate::executive::bounds::cap(message, limit);
        let author = firing
            .vars
            .get("author")
            .map(String::as_str)
            .unwrap_or("someone");
        turn.messages = vec![Message::user(format!(
            "Question: {question}\n\nMessage from {author}:\n{message}"
        ))];
        turn.final_tool = Some(FinalTool::of::<Classify>(
            "classify",
            "Answer the question: does it match?",
        ));
        turn.max_steps = 2;
        match self.services.executive.run_turn(turn).await.outcome? {
            TurnOutcome::Final(v) => crate::executive::tools::parse_args::<Classify>(&v)
                .map(|c| c.matches)
                .map_err(|e| ClassifyError::BadAnswer(e.to_string())),
            other => Err(ClassifyError::NoAnswer(format!("{other:?}"))),
        }
    }

    /// Runs one reflex, counting and journaling the result.
    async fn fire(&self, c: &Candidate, mut firing: Firing) -> pipeline::Run {
        let r = &c.reflex;
        let started = Instant::now();
        firing.vars.extend(c.captures.iter().cloned());
        let quiet = |ended| pipeline::Run {
            ended,
            spoke: false,
        };
        let run = match &r.trigger {
            Trigger::Classifier { question, .. } => match self.classify(r, question, &firing).await
            {
                Ok(true) => pipeline::run(&self.services, r, firing.clone()).await,
                Ok(false) => quiet(Ended::Passed(format!(
                    "the classifier said no to {question:?}"
                ))),
                Err(e) => quiet(Ended::Failed(format!(
                    "the classifier ({}) failed: {e}",
                    r.file
                ))),
            },
            _ => pipeline::run(&self.services, r, firing.clone()).await,
        };
        let ended = &run.ended;
        let micros = started.elapsed().as_micros() as u64;
        let (outcome, summary, reason) = match ended {
            Ended::Succeeded(did) => (
                "succeeded",
                format!("reflex {}: {did}", r.name),
                r.description.clone(),
            ),
            Ended::Passed(why) => ("passed", format!("reflex {} passed", r.name), why.clone()),
            Ended::Escalated(why) => (
                "escalated",
                format!("reflex {} escalated to the executive", r.name),
                why.clone(),
            ),
            Ended::Failed(why) => ("failed", format!("reflex {} failed", r.name), why.clone()),
        };
        // Harmless if lost: run statistics only; the journal entry below records the run.
        let _ = self
            .services
            .store
            .impulses
            .record_reflex_run(&r.key(), outcome, micros);
        if matches!(ended, Ended::Failed(_)) {
            tracing::warn!(reflex = %r.name, reason = %reason, "reflex failed");
        }
        let mut entry = Entry::new(Kind::Reflex, summary)
            .place(firing.guild, firing.channel)
            .reason(reason);
        if let Some(m) = firing.message {
            entry = entry.message(m);
        }
        self.services
            .journal
            .record(entry.data(
                serde_json::json!({ "reflex": r.key(), "level": r.level, "micros": micros }),
            ));
        run
    }

    /// The executive's `reflex_create`: validates, writes
    /// `state/reflexes/<guild>/<name>.yaml` atomically, reloads; the answer
    /// for the model, or why not.
    pub fn create(&self, guild: GuildId, yaml: &str, by: &str) -> Result<String, EditError> {
        if yaml.len() as u64 > MAX_FILE_BYTES {
            return Err(EditError::TooLarge(yaml.len()));
        }
        let reflex = def::parse("the new reflex", yaml)
            .map_err(|p| EditError::Invalid(p.iter().map(|p| clip(p)).collect()))?;
        let path = self.admit(guild, &reflex)?;
        Self::write_atomically(&path, yaml)?;
        // A replaced reflex may have been disabled here: the new one must not stay off
        // while the journal and the answer say it is active.
        self.services
            .store
            .impulses
            .enable_reflex(Some(guild), &reflex.name)
            .map_err(|source| EditError::NotSwitchedOn {
                path: path.display().to_string(),
                source,
            })?;
        self.reload();
        self.services.journal.record(
            Entry::new(Kind::Reflex, format!("created the reflex {}", reflex.name))
                .guild(Some(guild))
                .reason(format!("{} — asked by {by}", reflex.description))
                .data(serde_json::json!({ "yaml": yaml })),
        );
        Ok(format!(
            "created the reflex {} (level {}); it is active now",
            reflex.name, reflex.level
        ))
    }

    /// The gates a server's own reflex passes before it is written: it
    /// answers where it was woken, fits the server's matcher, does not take
    /// an operator's name, and stays within `reflexes.maxCreatedPerGuild`.
    /// Returns the file it goes to.
    fn admit(&self, guild: GuildId, reflex: &Reflex) -> Result<PathBuf, EditError> {
        // A reflex written for one server stays in the channel that woke it.
        if let Some(step) = reflex.steps.iter().find(|s| {
            matches!(
                s.action,
                def::Action::Reply {
                    channel: Some(_),
                    ..
                }
            )
        }) {
            return Err(EditError::RepliesElsewhere(step.line));
        }
        let loaded = self.loaded();
        loaded.fits(guild, reflex)?;
        if loaded
            .reflexes
            .iter()
            .any(|o| o.guild.is_none() && o.name == reflex.name)
        {
            return Err(EditError::OperatorsName(reflex.name.clone()));
        }
        let path = self
            .created_dir()
            .join(guild.to_string())
            .join(format!("{}.yaml", reflex.name));
        let mine = loaded
            .reflexes
            .iter()
            .filter(|o| o.guild == Some(guild))
            .count();
        let max = self
            .services
            .settings
            .for_guild(Some(guild))
            .reflexes
            .max_created_per_guild as usize;
        if !path.exists() && mine >= max {
            return Err(EditError::TooMany { mine, max });
        }
        Ok(path)
    }

    /// Writes the file through a temporary one renamed into place, so a
    /// crash never leaves half a reflex to be loaded.
    fn write_atomically(path: &Path, yaml: &str) -> Result<(), EditError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|source| EditError::CreateDir {
            dir: dir.display().to_string(),
            source,
        })?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(EditError::Write)?;
        std::io::Write::write_all(&mut tmp, yaml.as_bytes()).map_err(EditError::Write)?;
        tmp.persist(path).map_err(|e| EditError::Write(e.error))?;
        Ok(())
    }

    /// Disables a reflex in one guild (`Some`) or everywhere (`None`).
    pub fn disable(
        &self,
        guild: Option<GuildId>,
        name: &str,
        reason: &str,
        by: &str,
    ) -> Result<String, EditError> {
        let loaded = self.loaded();
        if !loaded
            .reflexes
            .iter()
            .any(|r| r.name == name && (r.guild.is_none() || guild.is_none() || r.guild == guild))
        {
            let known = loaded
                .reflexes
                .iter()
                .filter(|r| r.guild.is_none() || r.guild == guild)
                .map(|r| r.name.clone())
                .collect();
            return Err(EditError::Unknown {
                name: name.to_string(),
                known,
            });
        }
        self.services.store.impulses.disable_reflex(
            guild,
            name,
            reason,
            self.services.clock.now(),
        )?;
        self.reload();
        self.services.journal.record(
            Entry::new(Kind::Reflex, format!("disabled the reflex {name}"))
                .guild(guild)
                .reason(format!("{reason} — by {by}")),
        );
        Ok(match guild {
            Some(_) => format!("disabled the reflex {name} in this server"),
            None => format!("disabled the reflex {name} everywhere"),
        })
    }

    pub fn enable(&self, guild: Option<GuildId>, name: &str) -> Result<bool, EditError> {
        let changed = self.services.store.impulses.enable_reflex(guild, name)?;
        self.reload();
        Ok(changed)
    }

    /// May this person have the executive write or disable reflexes here?
    pub(crate) fn may_edit(&self, guild: Option<GuildId>, user: UserId) -> bool {
        let Some(g) = guild else { return false };
        let settings = self.services.settings.for_guild(Some(g));
        settings.discord.owner_user_ids.contains(&user) || settings.reflexes.allow_self_create
    }
}

/// `{role}` and `{role}_id` for a person (`author`, `user`).
fn person_vars(vars: &mut BTreeMap<String, String>, role: &str, name: &str, id: UserId) {
    vars.insert(role.into(), name.to_string());
    vars.insert(format!("{role}_id"), id.to_string());
}

enum StimulusOwned {
    Message { text: String, addressed: bool },
    Reaction { emoji: String },
    MemberJoin,
}

impl StimulusOwned {
    fn as_ref(&self) -> Stimulus<'_> {
        match self {
            StimulusOwned::Message { text, addressed } => Stimulus::Message {
                text,
                addressed: *addressed,
            },
            StimulusOwned::Reaction { emoji } => Stimulus::Reaction { emoji },
            StimulusOwned::MemberJoin => Stimulus::MemberJoin,
        }
    }
}

/// The message as a person meant it: a leading mention of the bot, or its
/// name followed by a comma or colon, is not part of what they said.
pub(crate) fn spoken_text<'a>(content: &'a str, bot: UserId, bot_name: &str) -> &'a str {
    let mut t = content.trim();
    let mentions = [
        format!("<@{bot}>"),
        format!("<@!{bot}>"),
        crate::attention::bot_mention(bot_name),
    ];
    for mention in &mentions {
        if let Some(rest) = strip_prefix_ignore_case(t, mention) {
            t = rest.trim_start_matches([',', ':']).trim_start();
        }
        if let Some(rest) = strip_suffix_ignore_case(t, mention) {
            t = rest.trim_end();
        }
    }
    if let Some(rest) = strip_prefix_ignore_case(t, bot_name)
        && rest.starts_with([',', ':'])
    {
        t = rest[1..].trim_start();
    }
    t
}

/// `t` without `prefix` (ASCII case ignored), if it starts with it and the
/// prefix ends at a word boundary ("@ambiently" is not "@ambient").
fn strip_prefix_ignore_case<'a>(t: &'a str, prefix: &str) -> Option<&'a str> {
    let n = prefix.len();
    let rest = t.get(n..)?;
    let at_boundary = !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    (t[..n].eq_ignore_ascii_case(prefix) && at_boundary).then_some(rest)
}

fn strip_suffix_ignore_case<'a>(t: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = t.len().checked_sub(suffix.len())?;
    let head = t.get(..cut)?;
    t[cut..].eq_ignore_ascii_case(suffix).then_some(head)
}

/// The router's view of reflexes: claims inputs some reflex matches.
pub(crate) struct ReflexHandler {
    pub reflexes: Arc<Reflexes>,
}

impl ReflexHandler {
    /// Why nothing could be said where `firing` happened, if so.
    fn undeliverable(&self, firing: &Firing) -> Option<String> {
        let place = crate::attention::Place {
            guild: firing.guild,
            channel: firing.channel?,
        };
        self.reflexes
            .services
            .speech
            .deliverable(place)
            .err()
            .map(|e| e.to_string())
    }
}

impl ReflexHandler {
    /// Why the author of a message may not talk to the bot (`permissions::refusal`), if so.
    fn refused(&self, item: &Attended) -> Option<crate::permissions::Refused> {
        let Input::Percept(Percept::Message(m)) = &item.input else {
            return None;
        };
        let settings = self.reflexes.services.settings.for_guild(m.message.guild);
        crate::permissions::refusal(&settings, &self.reflexes.services.store.people, m)
    }
}

#[async_trait]
impl Handler for ReflexHandler {
    fn name(&self) -> String {
        "reflexes".into()
    }

    fn order(&self) -> i32 {
        ORDER_REFLEX
    }

    fn wants(&self, item: &Attended) -> Option<String> {
        // An input a reflex already escalated is the executive's now.
        if item.escalated.is_some() {
            return None;
        }
        let found = self.reflexes.matching(item);
        if found.is_empty() {
            return None;
        }
        let names: Vec<&str> = found.iter().map(|c| c.reflex.name.as_str()).collect();
        Some(format!("matched {}", names.join(", ")))
    }

    async fn handle(&self, item: &Attended) -> Outcome {
        let Some((firing, found)) = self.reflexes.candidates_for(item) else {
            return Outcome::Declined("no reflex matches any more".into());
        };
        let mut notes = Vec::new();
        let closed = self.undeliverable(&firing);
        let refused = self.refused(item);
        for c in &found {
            // Someone who may not talk to the bot pays no model through a
            // reflex; in a direct message they get nothing from one at all:
            // the answer tells them why.
            if let Some(r) = refused
                .as_ref()
                .filter(|_| c.reflex.level >= 2 || firing.guild.is_none())
            {
                notes.push(format!("{} not run: {}", c.reflex.name, r.reason));
                continue;
            }
            let unasked = pipeline::unprompted_refusal(&self.reflexes.services, &c.reflex, &firing);
            if let Some(why) = unasked {
                notes.push(format!("{} not run: {why}", c.reflex.name));
                continue;
            }
            // A level-2 reflex pays the reflex model; not for words nobody could see.
            if let (Some(why), true) = (&closed, c.reflex.level >= 2) {
                notes.push(format!("{} not run: {why}", c.reflex.name));
                continue;
            }
            let run = self.reflexes.fire(c, firing.clone()).await;
            match run.ended {
                Ended::Succeeded(_) => return Outcome::Done,
                Ended::Escalated(why) => {
                    return Outcome::Escalate(format!("{}: {why}", c.reflex.name));
                }
                // It already answered: a second answer from someone else would be one too many.
                _ if run.spoke => return Outcome::Done,
                Ended::Passed(why) => notes.push(format!("{} passed: {why}", c.reflex.name)),
                Ended::Failed(why) => notes.push(format!("{} failed: {why}", c.reflex.name)),
            }
        }
        Outcome::Declined(notes.join("; "))
    }
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub struct Stores {
    pub messages: MessageStore,
    pub journal: JournalStore,
    pub people: PeopleStore,
    pub impulses: ImpulseStore,
}

cut!(Stores => crate::courtesy::Stores { messages, people });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_defaults_all_parse() {
        let (reflexes, problems) = parse_all(&built_in());
        assert!(problems.is_empty(), "{problems:#?}");
        assert_eq!(reflexes.len(), DEFAULTS.len());
    }

    #[test]
    fn a_problem_quotes_a_short_excerpt_never_the_file() {
        let name = "n".repeat(100_000);
        let yaml = format!(
            "name: {name}\ndescription: d\nlevel: 0\ntrigger:\n  pattern: x\npipeline: []\n"
        );
        let (good, problems) = parse_all(&[("long.yaml".to_string(), Ok(yaml))]);
        assert!(good.is_empty());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("long.yaml:1: name \"nnn"),
            "{}",
            problems[0]
        );
        assert!(problems[0].ends_with("… (cut)"), "{}", problems[0]);
        assert_eq!(
            problems[0].chars().count(),
            MAX_PROBLEM_CHARS + "… (cut)".chars().count()
        );
    }

    #[test]
    fn matching_respects_address_priority_and_disabling() {
        let (reflexes, _) = parse_all(&built_in());
        let loaded = Loaded::new(reflexes.clone(), HashSet::new(), Vec::new(), String::new());
        let hits = loaded.candidates(
            Some(GuildId(1)),
            Stimulus::Message {
                text: "hello!",
                addressed: true,
            },
        );
        assert_eq!(
            hits.iter()
                .map(|c| c.reflex.name.as_str())
                .collect::<Vec<_>>(),
            vec!["greeting"]
        );
        let remind = loaded.candidates(
            None,
            Stimulus::Message {
                text: "remind me in 10 minutes to stretch",
                addressed: true,
            },
        );
        assert_eq!(
            remind[0].captures,
            vec![
                ("when".to_string(), "in 10 minutes".to_string()),
                ("what".to_string(), "stretch".to_string())
            ]
        );
        assert!(
            loaded
                .candidates(
                    None,
                    Stimulus::Message {
                        text: "remind me in 10 minutes to stretch",
                        addressed: false
                    }
                )
                .is_empty()
        );
        let disabled: HashSet<_> = [(Some(GuildId(1)), "greeting".to_string())].into();
        let loaded = Loaded::new(reflexes, disabled, Vec::new(), String::new());
        assert!(
            loaded
                .candidates(
                    Some(GuildId(1)),
                    Stimulus::Message {
                        text: "hello!",
                        addressed: true
                    }
                )
                .is_empty()
        );
        assert_eq!(
            loaded
                .candidates(
                    Some(GuildId(2)),
                    Stimulus::Message {
                        text: "hello!",
                        addressed: true
                    }
                )
                .len(),
            1
        );
    }

    #[test]
    fn the_bots_mention_and_name_are_not_part_of_the_message() {
        let bot = UserId(42);
        assert_eq!(
            spoken_text("<@42> summarize https://x.y", bot, "ambient"),
            "summarize https://x.y"
        );
        assert_eq!(spoken_text("<@!42>, hi", bot, "ambient"), "hi");
        assert_eq!(spoken_text("@ambient hello", bot, "ambient"), "hello");
        assert_eq!(
            spoken_text("@Ambient, remind me", bot, "ambient"),
            "remind me"
        );
        assert_eq!(spoken_text("thanks @ambient", bot, "ambient"), "thanks");
        assert_eq!(
            spoken_text("@ambiently yes", bot, "ambient"),
            "@ambiently yes"
        );
        assert_eq!(
            spoken_text("Ambient: what did you do today?", bot, "ambient"),
            "what did you do today?"
        );
        assert_eq!(
            spoken_text("ambiently yes", bot, "ambient"),
            "ambiently yes"
        );
    }
}
