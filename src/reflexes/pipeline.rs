//! Running one reflex's pipeline: each step renders its templates from the
//! variables so far, does one thing, and may add a variable for the steps
//! after it.
//!
//! Everything a step touches is bounded: URLs go through the guarded fetch
//! client, files stay in the guild's state folder, model calls use the
//! `reflex` role (and its budget), messages go through `speech` (split,
//! rate-limited, no mass pings). A step that fails stops the pipeline and
//! says which step and why.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use reqwest::header::{ACCEPT, HeaderValue};

use super::def::{Action, Reflex, Template};
use super::state::{StateDir, StateError};
use crate::attention::Place;
use crate::chat::ChatError;
use crate::clock::SharedClock;
use crate::courtesy::hush;
use crate::executive::bounds::cap_owned;
use crate::executive::{ExecError, Executive, Message, Turn, TurnOutcome};
use crate::ids::{ChannelId, GuildId, MessageId, UserId};
use crate::impulses::{Impulses, NewTask};
use crate::journal::{Journal, summary};
use crate::memory::{Memory, MemoryError};
use crate::net::fetch::{FetchError, Fetcher};
use crate::net::html;
use crate::reflexes::Stores;
use crate::settings::Role;
use crate::settings::{Secrets, Settings, SettingsService};
use crate::speech::{Speech, SpeechError};
use crate::vocab::fact::{FactKind, Importance, Scope};
use crate::vocab::journal::{Entry, Kind};

/// What fetched pages and API answers are cut to before they reach a variable.
const MAX_VAR_CHARS: usize = 12_000;

/// The services a pipeline may use.
pub struct Services {
    pub store: Stores,
    pub settings: Arc<SettingsService>,
    pub secrets: Secrets,
    pub journal: Journal,
    pub clock: SharedClock,
    pub executive: Arc<Executive>,
    pub speech: Arc<Speech>,
    pub memory: Arc<Memory>,
    pub impulses: Arc<Impulses>,
    pub data_dir: PathBuf,
}

/// Where and for whom a reflex fires.
#[derive(Clone, Debug)]
pub struct Firing {
    pub guild: Option<GuildId>,
    pub channel: Option<ChannelId>,
    /// The message that triggered it (for `reply` and `react`).
    pub message: Option<MessageId>,
    /// The person it is about (author, reacting user, new member).
    pub user: Option<UserId>,
    /// Nobody addressed the bot: a message to others, a reaction, a
    /// newcomer. What it says then passes courtesy where it is said.
    pub unprompted: bool,
    pub vars: BTreeMap<String, String>,
}

/// How a pipeline ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Every step ran; the text says what it did, for the journal.
    Succeeded(String),
    /// A `pass` step: not for this reflex after all.
    Passed(String),
    /// An `escalate` step: the executive should take it.
    Escalated(String),
    Failed(String),
}

/// A pipeline's end, and whether it had already said something (replied or
/// reacted) by then: if it had, nobody else answers the same message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub ended: Ended,
    pub spoke: bool,
}

pub(crate) async fn run(s: &Services, reflex: &Reflex, mut firing: Firing) -> Run {
    let mut did = Vec::new();
    let mut spoke = false;
    for (i, step) in reflex.steps.iter().enumerate() {
        let vars = &firing.vars;
        let result = match &step.action {
            Action::Escalate { reason } => {
                return Run {
                    ended: Ended::Escalated(reason.render(vars)),
                    spoke,
                };
            }
            Action::Pass { reason } => {
                return Run {
                    ended: Ended::Passed(reason.render(vars)),
                    spoke,
                };
            }
            action => perform(s, reflex, &firing, action).await,
        };
        match result {
            Ok(Done { output, did: what }) => {
                if let (Some(name), Some(value)) = (step.action.output(), output) {
                    firing.vars.insert(name.to_string(), value);
                }
                spoke |= matches!(step.action, Action::Reply { .. } | Action::React { .. });
                did.extend(what);
            }
            Err(reason) => {
                let step = format!(
                    "step {} ({}, {}:{})",
                    i + 1,
                    step.action.name(),
                    reflex.file,
                    step.line
                );
                let ended = match reason {
                    // Keeping quiet where courtesy asks it is the reflex working, not failing.
                    StepError::Courtesy(_) => Ended::Passed(format!("{step} kept quiet: {reason}")),
                    _ => Ended::Failed(format!("{step} failed: {reason}")),
                };
                return Run { ended, spoke };
            }
        }
    }
    let what = if did.is_empty() {
        "ran its pipeline".into()
    } else {
        did.join("; ")
    };
    Run {
        ended: Ended::Succeeded(what),
        spoke,
    }
}

struct Done {
    output: Option<String>,
    did: Option<String>,
}

/// Why a step failed; the pipeline's end names the step and shows this text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    File(#[from] StateError),
    #[error(transparent)]
    Model(#[from] ExecError),
    /// The turn's outcome, for the journal.
    #[error("the reflex model gave no answer ({0})")]
    NoAnswer(String),
    #[error("the input is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error(transparent)]
    JsonPath(#[from] serde_json_path::ParseError),
    #[error("{0} matched nothing in the input")]
    NothingMatched(String),
    #[error("{0:?} is not a GitHub API path like /repos/OWNER/REPO/releases/latest")]
    NotGithubPath(String),
    #[error("there is no channel to reply in")]
    NoChannel,
    #[error("a reply to another channel needs a server")]
    NoServer,
    #[error("{0:?} is not a channel of this server")]
    NotAChannel(String),
    #[error(transparent)]
    Speech(#[from] SpeechError),
    #[error("there is no message to react to")]
    NoMessage,
    #[error(transparent)]
    Chat(#[from] ChatError),
    #[error("there is nowhere to remember it")]
    NowhereToRemember,
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("journal_summary needs a channel to answer in")]
    NoSummaryChannel,
    #[error("a hush is asked for by someone in a server channel")]
    HushOutsideChannel,
    /// Another module's refusal in its own words (a task's due time, a
    /// summary's window, a hush's duration).
    #[error("{0}")]
    Refused(String),
    /// Courtesy keeps the bot from saying this unasked there now.
    #[error("{} gate: {}", .0.gate, .0.reason)]
    Courtesy(crate::courtesy::Refusal),
}

fn value(v: String) -> Result<Done, StepError> {
    Ok(Done {
        output: Some(v),
        did: None,
    })
}

fn did(what: String) -> Result<Done, StepError> {
    Ok(Done {
        output: None,
        did: Some(what),
    })
}

fn cut(text: String) -> String {
    cap_owned(text, MAX_VAR_CHARS)
}

/// Does one step. Each action's work is its own function below; the simple
/// ones are done here.
async fn perform(
    s: &Services,
    reflex: &Reflex,
    f: &Firing,
    action: &Action,
) -> Result<Done, StepError> {
    let vars = &f.vars;
    let settings = s.settings.for_guild(f.guild);
    match action {
        Action::FetchUrl { url, .. } => fetch_url(&settings, &url.render(vars)).await,
        Action::ReadFile { path, .. } => value(state_dir(s, f).read(&path.render(vars))?),
        Action::WriteFile { path, content } => {
            let path = path.render(vars);
            state_dir(s, f).write(&path, &content.render(vars))?;
            did(format!("wrote {path}"))
        }
        Action::LlmPrompt { prompt, .. } => {
            llm_prompt(s, reflex, f, &settings, &prompt.render(vars)).await
        }
        Action::ExtractJson { input, path, .. } => extract_json(&input.render(vars), path),
        Action::GithubApi { path, .. } => {
            github_api(s, reflex, &settings, &path.render(vars)).await
        }
        Action::Reply { message, channel } => {
            reply(s, reflex, f, &message.render(vars), channel.as_deref()).await
        }
        Action::React { emoji } => react(s, f, &emoji.render(vars)).await,
        Action::AddTask { text, due, message } => add_task(s, reflex, f, text, due, message),
        Action::AddIdea { text } => {
            let by = format!("the reflex {}", reflex.name);
            let idea = s
                .impulses
                .add_idea(f.guild, &text.render(vars), &by)
                .map_err(|e| StepError::Refused(e.to_string()))?;
            did(format!("noted the idea {:?}", short(&idea.text)))
        }
        Action::Remember {
            text,
            kind,
            importance,
        } => remember(s, f, &text.render(vars), *kind, *importance),
        Action::Log { message } => {
            s.journal.record(
                Entry::new(
                    Kind::Reflex,
                    format!("reflex {}: {}", reflex.name, message.render(vars)),
                )
                .place(f.guild, f.channel),
            );
            Ok(Done {
                output: None,
                did: None,
            })
        }
        Action::JournalSummary { since, .. } => journal_summary(s, f, &settings, since),
        Action::Hush { duration, .. } => {
            let (c, who, here) = hush_ctx(s, f, &settings)?;
            let minutes = hush::parse_duration(&duration.render(vars))
                .map_err(|e| StepError::Refused(e.to_string()))?;
            let said = hush::hush(&c, &who, hush::Place::Channel(here), minutes);
            // A refusal ("up to 3 hours") is the answer the person needs, not a failed step.
            value(said.unwrap_or_else(|why| why.to_string()))
        }
        Action::Unhush { .. } => {
            let (c, who, here) = hush_ctx(s, f, &settings)?;
            value(
                hush::unhush(&c, &who, hush::Place::Channel(here))
                    .unwrap_or_else(|why| why.to_string()),
            )
        }
        Action::Escalate { .. } | Action::Pass { .. } => unreachable!("handled by run"),
    }
}

/// `fetch_url`: a page through the guarded fetcher, HTML read down to its
/// text so the variable holds words, not markup.
async fn fetch_url(settings: &Settings, url: &str) -> Result<Done, StepError> {
    let fetched = Fetcher::new(&settings.network).get(url.trim()).await?;
    let body = String::from_utf8_lossy(&fetched.body).into_owned();
    let is_html = fetched
        .content_type
        .as_deref()
        .is_some_and(|t| t.contains("html"))
        || body.trim_start().starts_with('<');
    if is_html {
        let (title, text) = html::readable(&body, MAX_VAR_CHARS);
        value(match title {
            Some(t) => format!("{t}\n\n{text}"),
            None => text,
        })
    } else {
        value(cut(body))
    }
}

/// `llm_prompt`: one answer from the `reflex` role (and its budget), the
/// rendered prompt capped like any prompt section. An answer the model
/// stopped at its length limit is cut as a reply's is (`speech::as_ended`):
/// the variable holds it with the cut marker, so whatever says it says so.
async fn llm_prompt(
    s: &Services,
    reflex: &Reflex,
    f: &Firing,
    settings: &Settings,
    asked: &str,
) -> Result<Done, StepError> {
    let mut turn = Turn::new(Role::Reflex, f.guild, format!("reflex {}", reflex.name));
    turn.channel = f.channel;
    turn.system = "You are a small, fast helper inside a Discord bot. Do exactly what is asked, briefly, with no preamble.".into();
    // A level-2 reflex starts cold: the operator may give it what just happened here.
    let context = crate::journal::stream::prefix_for(
        &s.store.journal,
        settings,
        Role::Reflex,
        &match f.channel {
            Some(c) => summary::Audience::new(settings, f.guild, c),
            None => summary::Audience::new(settings, f.guild, crate::ids::ChannelId(0)),
        },
        s.clock.now(),
    );
    // The variables may hold anything a person wrote: the prompt is one section.
    let section = settings.executive.prompt_limits.section_chars as usize;
    let asked = cap_owned(asked.to_string(), section);
    turn.messages = vec![Message::user(match context {
        Some(c) => format!("{c}\n{asked}"),
        None => asked,
    })];
    turn.max_steps = 1;
    let result = s.executive.run_turn(turn).await;
    match result.outcome? {
        // An answer stopped at the role's maxOutputTokens ends at a boundary and says it was cut.
        TurnOutcome::Answer(text) if !text.trim().is_empty() => value(crate::speech::as_ended(
            text.trim().to_string(),
            result.stop,
        )),
        other => Err(StepError::NoAnswer(format!("{other:?}"))),
    }
}

/// `extract_json`: every value the JSONPath finds, one a line.
fn extract_json(input: &str, path: &str) -> Result<Done, StepError> {
    let json: serde_json::Value = serde_json::from_str(input).map_err(StepError::NotJson)?;
    let query = serde_json_path::JsonPath::parse(path)?;
    let found: Vec<String> = query
        .query(&json)
        .all()
        .into_iter()
        .map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    if found.is_empty() {
        return Err(StepError::NothingMatched(path.to_string()));
    }
    value(found.join("\n"))
}

/// `github_api`: a GET under the configured API base, through the guarded fetcher.
async fn github_api(
    s: &Services,
    reflex: &Reflex,
    settings: &Settings,
    path: &str,
) -> Result<Done, StepError> {
    let url = github_api_url(&settings.reflexes.github_api_base_url, path)?;
    // The operator's token is for the operator's reflexes, not ones a server wrote.
    let token = s
        .secrets
        .github_token
        .as_ref()
        .filter(|_| reflex.guild.is_none());
    let mut headers = crate::net::bearer(token);
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/vnd.github+json"),
    );
    let fetched = Fetcher::new(&settings.network)
        .get_with(&url, &Default::default(), &headers)
        .await?;
    value(cut(String::from_utf8_lossy(&fetched.body).into_owned()))
}

/// `reply`: through speech (split, rate-limited, no mass pings), as a reply
/// to the message or into a named channel of the same guild.
async fn reply(
    s: &Services,
    reflex: &Reflex,
    f: &Firing,
    text: &str,
    channel: Option<&str>,
) -> Result<Done, StepError> {
    let (channel, reply_to) = match channel {
        Some(target) => (resolve_channel(s, f.guild, target)?, None),
        None => (f.channel.ok_or(StepError::NoChannel)?, f.message),
    };
    courteous(s, f, channel)?;
    let cause = format!(
        "reflex-{}-{}",
        reflex.name,
        f.message
            .map(|m| m.to_string())
            .unwrap_or_else(|| s.clock.now().timestamp().to_string())
    );
    let place = Place {
        guild: f.guild,
        channel,
    };
    let sent = s.speech.say(place, text, reply_to, &cause).await?;
    // A reply hangs on the message it answers; anything else needs its
    // own entry for `/ambient why` to find.
    if let (None, Some(first)) = (reply_to, sent.first()) {
        s.journal.record(
            Entry::new(Kind::Reflex, format!("reflex {} posted this", reflex.name))
                .place(f.guild, Some(channel))
                .reason(format!(
                    "the reflex {} ran: {}",
                    reflex.name, reflex.description
                ))
                .message(*first),
        );
    }
    did(format!("replied {:?}", short(text)))
}

/// Why an unprompted firing of `reflex` may not speak where its steps
/// would (its `reply` targets, or where it woke), if so: asked before the
/// reflex runs, so a level-2 reflex does not pay its model for words that
/// could not be said (a newcomer's welcome into a hushed `#general`).
pub(super) fn unprompted_refusal(s: &Services, reflex: &Reflex, f: &Firing) -> Option<String> {
    if !f.unprompted {
        return None;
    }
    let targets = reflex.steps.iter().filter_map(|step| match &step.action {
        Action::Reply {
            channel: Some(target),
            ..
        } => resolve_channel(s, f.guild, target).ok(),
        Action::Reply { channel: None, .. } | Action::React { .. } => f.channel,
        _ => None,
    });
    targets
        .map(|c| courteous(s, f, c))
        .find_map(Result::err)
        .map(|e| e.to_string())
}

/// Whether an unprompted firing may speak in `channel` now: quiet hours,
/// a hush there, and the boundary of the person it is about — the same
/// gate as every other unprompted word, checked where the words would go
/// (a welcome's `#channel`, not only where the reflex woke).
fn courteous(s: &Services, f: &Firing, channel: ChannelId) -> Result<(), StepError> {
    if !f.unprompted {
        return Ok(());
    }
    let settings = s.settings.for_guild(f.guild);
    crate::courtesy::unprompted_to(
        &settings,
        &(&s.store).into(),
        f.guild,
        channel,
        f.user,
        s.clock.now(),
    )
    .map_err(StepError::Courtesy)
}

/// `react`: on the message that woke the reflex.
async fn react(s: &Services, f: &Firing, emoji: &str) -> Result<Done, StepError> {
    let (Some(channel), Some(message)) = (f.channel, f.message) else {
        return Err(StepError::NoMessage);
    };
    courteous(s, f, channel)?;
    s.speech
        .transport()
        .react(channel, message, emoji.trim())
        .await?;
    did(format!("reacted {}", emoji.trim()))
}

/// `add_task`: a task owned by the person it fired for, saying which reflex made it.
fn add_task(
    s: &Services,
    reflex: &Reflex,
    f: &Firing,
    text: &Template,
    due: &Template,
    message: &Option<Template>,
) -> Result<Done, StepError> {
    let vars = &f.vars;
    let context = format!(
        "from the reflex {} after: {}",
        reflex.name,
        short(vars.get("message").map(String::as_str).unwrap_or(""))
    );
    let task = s
        .impulses
        .add_task(NewTask {
            guild: f.guild,
            channel: f.channel,
            text: text.render(vars),
            due: due.render(vars),
            message: message.as_ref().map(|m| m.render(vars)),
            context,
            created_by: format!("reflex:{}", reflex.name),
            // Someone's own reminder only when they addressed the bot: a
            // task a reaction or a newcomer set off is unprompted, and
            // keeps quiet hours and hushes when it comes due.
            owner: f.user.filter(|_| !f.unprompted),
        })
        .map_err(|e| StepError::Refused(e.to_string()))?;
    did(format!(
        "added the task {:?} due {}",
        short(&task.text),
        task.due.format("%Y-%m-%d %H:%M UTC")
    ))
}

/// `remember`: a fact for the guild, or in a direct message for the person.
fn remember(
    s: &Services,
    f: &Firing,
    text: &str,
    kind: FactKind,
    importance: Option<Importance>,
) -> Result<Done, StepError> {
    let scope = match (f.guild, f.user) {
        (Some(g), _) => Scope::guild(g),
        (None, Some(u)) => Scope::user(None, u),
        (None, None) => return Err(StepError::NowhereToRemember),
    };
    let fact = crate::memory::manual(scope, kind, importance, text, None, s.clock.now());
    let stored = s.memory.remember(fact, f.message)?;
    did(stored.describe())
}

/// `journal_summary`: what the bot did since `since`, as this channel's
/// audience may see it.
fn journal_summary(
    s: &Services,
    f: &Firing,
    settings: &Settings,
    since: &str,
) -> Result<Done, StepError> {
    let tz = s.impulses.timezone(f.guild);
    let now = s.clock.now();
    let start =
        summary::parse_window(since, now, tz).map_err(|e| StepError::Refused(e.to_string()))?;
    let Some(channel) = f.channel else {
        return Err(StepError::NoSummaryChannel);
    };
    let audience = summary::Audience::new(settings, f.guild, channel);
    let lines = summary::what_i_did(&s.journal, &s.store.messages, &audience, start, tz, 25);
    value(if lines.is_empty() {
        format!("nothing yet ({since})")
    } else {
        lines.join("\n")
    })
}

/// Who hushes in words, and where: the person who said it, in their channel,
/// with no more say than anyone (the reflex cannot see their permissions).
fn hush_ctx<'a>(
    s: &'a Services,
    f: &Firing,
    settings: &'a Settings,
) -> Result<(hush::Ctx<'a>, hush::Asker, ChannelId), StepError> {
    let (Some(guild), Some(channel), Some(user)) = (f.guild, f.channel, f.user) else {
        return Err(StepError::HushOutsideChannel);
    };
    let who = hush::Asker {
        user,
        name: f.vars.get("author").cloned().unwrap_or_default(),
        manage: false,
        channel,
    };
    let c = hush::Ctx {
        settings,
        store: (&s.store).into(),
        journal: &s.journal,
        guild,
        now: s.clock.now(),
    };
    Ok((c, who, channel))
}

fn state_dir(s: &Services, f: &Firing) -> StateDir {
    let scope = match (f.guild, f.user) {
        (Some(g), _) => format!("guilds/{g}"),
        (None, Some(u)) => format!("dm/{u}"),
        (None, None) => "global".into(),
    };
    StateDir::new(&s.data_dir, &scope)
}

/// A channel id or `#name`, which must be in the same guild.
fn resolve_channel(
    s: &Services,
    guild: Option<GuildId>,
    target: &str,
) -> Result<ChannelId, StepError> {
    let guild = guild.ok_or(StepError::NoServer)?;
    let target = target.trim();
    let found = match target.parse::<u64>() {
        Ok(id) => s
            .store
            .messages
            .guild_channels(guild)
            .ok()
            .and_then(|cs| cs.into_iter().find(|c| c.0 == id)),
        Err(_) => s
            .store
            .messages
            .channel_by_name(guild, target.trim_start_matches('#'))
            .ok()
            .flatten(),
    };
    found.ok_or_else(|| StepError::NotAChannel(target.to_string()))
}

fn short(text: &str) -> String {
    let t: String = text.chars().take(80).collect();
    if t.len() < text.len() { t + "…" } else { t }
}

/// The URL a `github_api` path names, refused unless it stays under the API
/// base: dot segments are refused in any spelling (`..`, `%2e%2e`, `.%2E`),
/// and the resolved URL must still start with the base's path.
fn github_api_url(base: &str, path: &str) -> Result<String, StepError> {
    let path = path.trim();
    let bad = || StepError::NotGithubPath(path.to_string());
    let decoded = path.to_ascii_lowercase().replace("%2e", ".");
    let dot_segment = decoded
        .split(['/', '?'])
        .any(|segment| segment == "." || segment == "..");
    if !path.starts_with('/')
        || path.starts_with("//")
        || path.contains("..")
        || dot_segment
        || decoded.contains("%2f")
        || decoded.contains("%5c")
        || path.contains(['\\', '@', '#'])
        || path.chars().any(char::is_whitespace)
    {
        return Err(bad());
    }
    let base = base.trim_end_matches('/');
    let (Ok(root), Ok(url)) = (
        url::Url::parse(base),
        url::Url::parse(&format!("{base}{path}")),
    ) else {
        return Err(bad());
    };
    let prefix = format!("{}/", root.path().trim_end_matches('/'));
    if url.origin() != root.origin() || !url.path().starts_with(&prefix) {
        return Err(bad());
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::github_api_url;

    #[test]
    fn github_api_paths_stay_under_the_base() {
        let base = "https://ghe.example.com/api/v3/";
        assert_eq!(
            github_api_url(base, "/repos/o/r/releases/latest").unwrap(),
            "https://ghe.example.com/api/v3/repos/o/r/releases/latest"
        );
        for escape in [
            "/%2e%2e/%2e%2e/x",
            "/repos/%2E%2E/%2e%2E/x",
            "/.%2e/x",
            "/repos/../../x",
            "/./x",
            "/repos/%2f%2fevil.example/x",
            "//evil.example/x",
            "/repos/o/r\\..\\x",
        ] {
            let err = github_api_url(base, escape).unwrap_err();
            assert!(
                err.to_string().contains("is not a GitHub API path"),
                "{escape}: {err}"
            );
        }
    }
}
