//! The replay report as one self-contained HTML page (`ambient replay
//! --html FILE`): the figures, a posts-per-hour chart in inline SVG, and
//! the timeline — the chat with the bot's would-be messages, each with the
//! journal's *why* a click (or a hover) away. No script, no network: the
//! page opens from a file, offline, anywhere.
//!
//! Everything is computed here (the chart's bars are rectangles already
//! placed); the template (`page.html`, rendered by minijinja with HTML
//! auto-escaping, so nothing from the chat can become markup) only loops.

use minijinja::Environment;
use serde::Serialize;

use super::report::{Counts, Report};
use super::text::money;
use super::timeline::{Timeline, Who};
use super::transport::Doing;

const TEMPLATE: &str = include_str!("page.html");

/// The chart's drawing area, in SVG units (scaled to the page's width by CSS).
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 200.0;
const LEFT: f64 = 40.0;
const BOTTOM: f64 = 24.0;

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
    chart: Chart,
    lines: Vec<LineView>,
    left_out: u64,
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
            chart: Chart::of(r),
            lines: timeline.lines.iter().map(LineView::of).collect(),
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

/// The posts-per-hour chart: people's messages and the bot's, side by side per hour.
#[derive(Serialize)]
struct Chart {
    width: f64,
    height: f64,
    bars: Vec<Bar>,
    labels: Vec<Label>,
    max: u64,
    hours: usize,
    baseline: f64,
}

#[derive(Serialize)]
struct Bar {
    x: String,
    y: String,
    w: String,
    h: String,
    class: &'static str,
    title: String,
}

#[derive(Serialize)]
struct Label {
    x: String,
    text: String,
}

impl Chart {
    fn of(r: &Report) -> Self {
        let hours = r.per_hour.len().max(1);
        let max = r
            .per_hour
            .iter()
            .map(|h| h.people.max(h.bot))
            .max()
            .unwrap_or(0)
            .max(1);
        let plot_w = WIDTH - LEFT;
        let plot_h = HEIGHT - BOTTOM;
        let slot = plot_w / hours as f64;
        let bar_w = (slot / 2.0).max(0.5);
        let mut bars = Vec::new();
        let mut labels = Vec::new();
        for (i, h) in r.per_hour.iter().enumerate() {
            let x = LEFT + i as f64 * slot;
            for (n, offset, class, who) in [
                (h.people, 0.0, "people", "people's messages"),
                (h.bot, bar_w, "bot", "the bot's messages"),
            ] {
                if n == 0 {
                    continue;
                }
                let bar_h = plot_h * n as f64 / max as f64;
                bars.push(Bar {
                    x: format!("{:.2}", x + offset),
                    y: format!("{:.2}", plot_h - bar_h),
                    w: format!("{bar_w:.2}"),
                    h: format!("{bar_h:.2}"),
                    class,
                    title: format!("{}:00 UTC — {n} {who}", h.hour.replace('T', " ")),
                });
            }
            // A label at each day's start, thinned so they never crowd.
            let every_days = (hours / 24 / 12).max(1);
            if h.hour.ends_with("T00") && (i / 24) % every_days == 0 {
                labels.push(Label {
                    x: format!("{x:.2}"),
                    text: h.hour[5..10].to_string(),
                });
            }
        }
        Self {
            width: WIDTH,
            height: HEIGHT,
            bars,
            labels,
            max,
            hours,
            baseline: plot_h,
        }
    }
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
}

impl LineView {
    fn of(l: &super::timeline::Line) -> Self {
        let (class, kind) = match l.who {
            Who::Person => ("line person", ""),
            Who::Reaction => ("line bot reaction", "reaction"),
            Who::Bot(doing) => match doing {
                Doing::Reply => ("line bot reply", "reply"),
                Doing::ChimeIn => ("line bot chime-in", "chime-in"),
                Doing::AmbientPost => ("line bot ambient", "ambient post"),
                Doing::Reminder => ("line bot reminder", "reminder"),
                Doing::Background => ("line bot background", "background"),
            },
        };
        Self {
            at: l.at.format("%m-%d %H:%M").to_string(),
            channel: l.channel.clone(),
            author: l.author.clone(),
            text: l.text.clone(),
            class: class.into(),
            kind,
            why: l.why.clone(),
        }
    }
}
