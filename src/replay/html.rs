//! The replay report as one self-contained HTML page (`ambient replay
//! --html FILE`): the figures, a chart in inline SVG (people's messages,
//! the bot's on their own scale, a mark per act of the bot), and the
//! timeline — the chat with the bot's would-be messages, each with the
//! journal's *why* a click (or a hover) away. No script, no network: the
//! page opens from a file, offline, anywhere, so moving between the bot's
//! acts is done with links: each act's line has an anchor (`#act-N`), the
//! chart's marks and the timeline's index link to it, and each line links
//! to the act before and after it, of any kind and of its own.
//!
//! Everything is computed here and in `chart` (the chart's shapes are
//! already placed); the template (`page.html`, rendered by minijinja with
//! HTML auto-escaping, so nothing from the chat can become markup) only loops.

mod chart;

use minijinja::Environment;
use serde::Serialize;

use super::report::{Counts, Report};
use super::text::money;
use super::timeline::{Line, Timeline, Who};
use super::transport::Doing;

const TEMPLATE: &str = include_str!("page.html");
/// How much of what the bot said a chart mark's tooltip shows.
const GIST_CHARS: usize = 80;

/// The page for `report` and its `timeline`.
pub fn page(report: &Report, timeline: &Timeline) -> String {
    let mut env = Environment::new();
    // The name ends in .html: minijinja escapes every value for HTML.
    env.add_template("page.html", TEMPLATE)
        .expect("the built-in page template parses");
    let view = View::of(report, timeline);
    env.get_template("page.html")
        .and_then(|t| t.render(&view))
        .expect("the built-in page template renders its own view")
}

#[derive(Serialize)]
struct View<'a> {
    r: &'a Report,
    files: String,
    from: String,
    to: String,
    days: String,
    /// Offline only.
    post_rate: Option<String>,
    /// Roles no model served, and what that meant.
    unserved: Option<String>,
    did: Vec<Figure>,
    cost: String,
    cost_per_day: String,
    roles: Vec<RoleLine>,
    gates: Vec<(String, u64)>,
    chart: chart::Chart,
    lines: Vec<LineView>,
    /// The first act of each kind, for the timeline's index.
    firsts: Vec<Jump>,
    left_out: u64,
}

/// A link to one of the bot's acts.
#[derive(Serialize)]
struct Jump {
    words: String,
    href: String,
}

#[derive(Serialize)]
struct Figure {
    what: &'static str,
    total: u64,
    per_day: String,
}

#[derive(Serialize)]
struct RoleLine {
    role: String,
    calls: u64,
    refused: u64,
    tokens_in: u64,
    tokens_out: u64,
    cost: String,
    models: String,
}

impl<'a> View<'a> {
    fn of(r: &'a Report, timeline: &Timeline) -> Self {
        let days = r.run.days;
        let did = figures(&r.did)
            .into_iter()
            .map(|(what, total)| Figure {
                what,
                total,
                per_day: format!("{:.1}", total as f64 / days),
            })
            .collect();
        let roles = r
            .roles
            .iter()
            .map(|row| RoleLine {
                role: row.role.clone(),
                calls: row.calls,
                refused: row.refused,
                tokens_in: row.input_tokens,
                tokens_out: row.output_tokens,
                cost: money(row.cost),
                models: row.models.join(", "),
            })
            .collect();
        let (lines, acts) = lines(timeline);
        let firsts = firsts(&acts);
        Self {
            r,
            files: r.run.files.join(", "),
            from: r.run.from.format("%Y-%m-%d %H:%M UTC").to_string(),
            to: r.run.to.format("%Y-%m-%d %H:%M UTC").to_string(),
            days: format!("{days:.1}"),
            post_rate: r.run.post_rate.map(|p| format!("{p:.2}")),
            unserved: super::text::unserved(&r.run.roles_without_model, &r.run.no_model_because),
            did,
            cost: money(r.cost),
            cost_per_day: money(r.cost_per_day),
            roles,
            gates: r
                .gates
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(g, n)| (g.replace('_', " "), *n))
                .collect(),
            chart: chart::Chart::of(r, &acts),
            lines,
            firsts,
            left_out: timeline.left_out,
        }
    }
}

fn figures(c: &Counts) -> [(&'static str, u64); 5] {
    [
        ("replies", c.replies),
        ("chime-ins", c.chime_ins),
        ("ambient posts", c.ambient_posts),
        ("reactions", c.reactions),
        ("reminders", c.reminders),
    ]
}

/// The kinds of act the page tells apart, in the chart's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ActKind {
    Reply,
    ChimeIn,
    AmbientPost,
    Reminder,
    Reaction,
    Background,
}

impl ActKind {
    fn of(who: Who) -> Option<Self> {
        match who {
            Who::Person => None,
            Who::Reaction => Some(Self::Reaction),
            Who::Bot(Doing::Reply) => Some(Self::Reply),
            Who::Bot(Doing::ChimeIn) => Some(Self::ChimeIn),
            Who::Bot(Doing::AmbientPost) => Some(Self::AmbientPost),
            Who::Bot(Doing::Reminder) => Some(Self::Reminder),
            Who::Bot(Doing::Background) => Some(Self::Background),
        }
    }

    /// The CSS class of its lines and marks.
    fn class(self) -> &'static str {
        match self {
            Self::Reply => "reply",
            Self::ChimeIn => "chime-in",
            Self::AmbientPost => "ambient",
            Self::Reminder => "reminder",
            Self::Reaction => "reaction",
            Self::Background => "background",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Self::Reply => "reply",
            Self::ChimeIn => "chime-in",
            Self::AmbientPost => "ambient post",
            Self::Reminder => "reminder",
            Self::Reaction => "reaction",
            Self::Background => "background",
        }
    }

    fn plural(self, n: usize) -> &'static str {
        match (self, n) {
            (_, 1) | (Self::Background, _) => self.words(),
            (Self::Reply, _) => "replies",
            (Self::ChimeIn, _) => "chime-ins",
            (Self::AmbientPost, _) => "ambient posts",
            (Self::Reminder, _) => "reminders",
            (Self::Reaction, _) => "reactions",
        }
    }
}

/// The timeline's lines, the bot's with their anchors and their links to
/// the acts around them, and the bot's acts for the chart.
fn lines(timeline: &Timeline) -> (Vec<LineView>, Vec<chart::Act>) {
    let acts: Vec<(usize, ActKind)> = timeline
        .lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| ActKind::of(l.who).map(|k| (i, k)))
        .collect();
    let anchor = |n: usize| format!("act-{}", n + 1);
    let mut views: Vec<LineView> = timeline.lines.iter().map(LineView::of).collect();
    for (n, (i, kind)) in acts.iter().enumerate() {
        let href = |m: usize| format!("#{}", anchor(m));
        let same = |a: &(usize, ActKind)| a.1 == *kind;
        views[*i].anchor = Some(anchor(n));
        views[*i].nav = Some(Nav {
            previous: n.checked_sub(1).map(href),
            next: (n + 1 < acts.len()).then(|| href(n + 1)),
            previous_same: acts[..n].iter().rposition(same).map(href),
            next_same: acts[n + 1..].iter().position(same).map(|m| href(n + 1 + m)),
            kind: kind.words(),
        });
    }
    let marks = acts
        .iter()
        .enumerate()
        .map(|(n, (i, kind))| {
            let line = &timeline.lines[*i];
            chart::Act {
                at: line.at,
                kind: *kind,
                anchor: anchor(n),
                gist: gist(line),
            }
        })
        .collect();
    (views, marks)
}

/// The first act of each kind, with how many there were.
fn firsts(acts: &[chart::Act]) -> Vec<Jump> {
    let mut kinds: Vec<ActKind> = acts.iter().map(|a| a.kind).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .filter_map(|kind| {
            let of_kind: Vec<&chart::Act> = acts.iter().filter(|a| a.kind == kind).collect();
            let first = of_kind.first()?;
            Some(Jump {
                words: format!("{} {}", of_kind.len(), kind.plural(of_kind.len())),
                href: format!("#{}", first.anchor),
            })
        })
        .collect()
}

fn gist(line: &Line) -> String {
    let mut gist: String = line.text.chars().take(GIST_CHARS).collect();
    if line.text.chars().nth(GIST_CHARS).is_some() {
        gist.push('…');
    }
    gist
}

/// Links from an act's line to the acts around it.
#[derive(Serialize)]
struct Nav {
    previous: Option<String>,
    next: Option<String>,
    previous_same: Option<String>,
    next_same: Option<String>,
    kind: &'static str,
}

#[derive(Serialize)]
struct LineView {
    at: String,
    channel: String,
    author: String,
    text: String,
    /// CSS classes: `line person`, or `line bot <kind>`.
    class: String,
    /// What the bot was doing, in words.
    kind: &'static str,
    why: Vec<String>,
    /// The bot's lines only: the line's id, and the links around it.
    anchor: Option<String>,
    nav: Option<Nav>,
}

impl LineView {
    fn of(l: &Line) -> Self {
        let (class, kind) = match ActKind::of(l.who) {
            None => ("line person".to_string(), ""),
            Some(k) => (format!("line bot {}", k.class()), k.words()),
        };
        Self {
            at: l.at.format("%m-%d %H:%M").to_string(),
            channel: l.channel.clone(),
            author: l.author.clone(),
            text: l.text.clone(),
            class,
            kind,
            why: l.why.clone(),
            anchor: None,
            nav: None,
        }
    }
}
