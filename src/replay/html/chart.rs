//! The chart at the top of the replay page, placed in SVG units: people's
//! messages, the bot's messages on a scale of their own, and one mark per
//! act of the bot that links to its line in the timeline.
//!
//! People's busiest hour can hold hundreds of messages while the bot posts a
//! few times a day: on one shared scale, over months, the bot's bars were
//! half a pixel wide and half a pixel tall. So each lane has its own scale;
//! hours are gathered into longer bins until a bar is at least `MIN_BIN`
//! wide; a bin with any message is at least `MIN_BAR` tall; and an act's
//! mark has one size whatever the span.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use serde::Serialize;

use super::ActKind;
use crate::replay::report::{HourRow, Report};

/// The drawing's width in SVG units (CSS scales it to the page's width, about
/// one unit a pixel on a desktop screen).
const WIDTH: f64 = 960.0;
/// Room for the lanes' names and scales.
const LEFT: f64 = 112.0;
const RIGHT: f64 = 8.0;
const PEOPLE: LaneSpec = LaneSpec {
    name: "people",
    what: "people's messages",
    top: 10.0,
    height: 100.0,
};
const BOT: LaneSpec = LaneSpec {
    name: "the bot",
    what: "messages of the bot",
    top: 124.0,
    height: 48.0,
};
const ACTS_TOP: f64 = 186.0;
/// One lane of marks per kind of act.
const ACT_LANE: f64 = 18.0;
const MARK_WIDTH: f64 = 4.0;
const MARK_HEIGHT: f64 = 12.0;
/// The narrowest slot a bar gets before hours are gathered into longer bins.
const MIN_BIN: f64 = 4.0;
/// The lowest a bar with any message in it is drawn.
const MIN_BAR: f64 = 2.0;
/// The bins tried, in hours, shortest first.
const BINS: [usize; 11] = [1, 2, 3, 4, 6, 8, 12, 24, 48, 72, 168];

#[derive(Serialize)]
pub(crate) struct Chart {
    width: f64,
    height: f64,
    hours: usize,
    /// What one bar counts: `hour`, `3 hours`, `day` …
    bin: String,
    people: Lane,
    bot: Lane,
    acts: Vec<ActLane>,
    labels: Vec<Label>,
    /// Where the dates are written.
    label_y: f64,
    left: f64,
}

/// Where a lane of bars is drawn, and what it counts.
struct LaneSpec {
    name: &'static str,
    what: &'static str,
    top: f64,
    height: f64,
}

/// One lane of bars with its own scale, 0 at `baseline` and `max` at `top`.
#[derive(Serialize)]
struct Lane {
    name: &'static str,
    top: f64,
    baseline: f64,
    max: u64,
    bars: Vec<Bar>,
}

#[derive(Serialize)]
struct Bar {
    x: String,
    y: String,
    w: String,
    h: String,
    title: String,
}

/// One kind of act: a mark per act, each a link to its line.
#[derive(Serialize)]
struct ActLane {
    name: String,
    class: &'static str,
    /// The lane's middle, for its name.
    middle: f64,
    marks: Vec<Mark>,
}

#[derive(Serialize)]
struct Mark {
    x: String,
    y: String,
    w: f64,
    h: f64,
    href: String,
    title: String,
}

#[derive(Serialize)]
struct Label {
    x: String,
    text: String,
}

/// One act of the bot as the chart draws it.
pub(crate) struct Act {
    pub at: DateTime<Utc>,
    pub kind: ActKind,
    /// The id of its line in the timeline.
    pub anchor: String,
    /// What the bot said, shortened, for the mark's tooltip.
    pub gist: String,
}

impl Chart {
    pub(crate) fn of(r: &Report, acts: &[Act]) -> Self {
        let hours = r.per_hour.len().max(1);
        let plot = WIDTH - LEFT - RIGHT;
        let bin = bin_for(hours);
        let slot = plot / hours.div_ceil(bin) as f64;
        let bins: Vec<&[HourRow]> = r.per_hour.chunks(bin).collect();
        let people = lane(&PEOPLE, &bins, slot, |h| h.people);
        let bot = lane(&BOT, &bins, slot, |h| h.bot);
        let origin = r
            .run
            .from
            .duration_trunc(TimeDelta::hours(1))
            .unwrap_or(r.run.from);
        let lanes = act_lanes(acts, origin, hours, plot);
        let label_y = ACTS_TOP + lanes.len() as f64 * ACT_LANE + 14.0;
        Self {
            width: WIDTH,
            height: label_y + 6.0,
            hours,
            bin: bin_words(bin),
            people,
            bot,
            acts: lanes,
            labels: day_labels(&r.per_hour, plot / hours as f64),
            label_y,
            left: LEFT,
        }
    }
}

/// A lane's bars, one per bin, scaled to the lane's own busiest bin.
fn lane(spec: &LaneSpec, bins: &[&[HourRow]], slot: f64, count: impl Fn(&HourRow) -> u64) -> Lane {
    let sums: Vec<u64> = bins.iter().map(|b| b.iter().map(&count).sum()).collect();
    let max = sums.iter().copied().max().unwrap_or(0).max(1);
    let baseline = spec.top + spec.height;
    let width = (slot * 0.8).max(MIN_BIN * 0.8);
    let bars = bins
        .iter()
        .zip(&sums)
        .enumerate()
        .filter(|(_, (_, n))| **n > 0)
        .map(|(i, (rows, n))| {
            let h = (spec.height * *n as f64 / max as f64).max(MIN_BAR);
            let first = rows.first().map_or("", |r| r.hour.as_str());
            let after = match rows.len() {
                1 => String::new(),
                more => format!(" and the {} hours after", more - 1),
            };
            Bar {
                x: format!("{:.2}", LEFT + i as f64 * slot),
                y: format!("{:.2}", baseline - h),
                w: format!("{width:.2}"),
                h: format!("{h:.2}"),
                title: format!(
                    "{}:00 UTC{after} — {n} {}",
                    first.replace('T', " "),
                    spec.what
                ),
            }
        })
        .collect();
    Lane {
        name: spec.name,
        top: spec.top,
        baseline,
        max,
        bars,
    }
}

/// A lane per kind of act the bot did, in `ActKind` order, a mark per act.
fn act_lanes(acts: &[Act], origin: DateTime<Utc>, hours: usize, plot: f64) -> Vec<ActLane> {
    let span = (hours * 3600) as f64;
    let mut kinds: Vec<ActKind> = acts.iter().map(|a| a.kind).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| {
            let top = ACTS_TOP + i as f64 * ACT_LANE;
            let marks: Vec<Mark> = acts
                .iter()
                .filter(|a| a.kind == kind)
                .map(|a| {
                    let secs = (a.at - origin).num_seconds().max(0) as f64;
                    let centre = LEFT + plot * (secs / span).min(1.0);
                    let x = (centre - MARK_WIDTH / 2.0).clamp(LEFT, LEFT + plot - MARK_WIDTH);
                    Mark {
                        x: format!("{x:.2}"),
                        y: format!("{:.2}", top + (ACT_LANE - MARK_HEIGHT) / 2.0),
                        w: MARK_WIDTH,
                        h: MARK_HEIGHT,
                        href: format!("#{}", a.anchor),
                        title: format!(
                            "{} UTC — {}: {}",
                            a.at.format("%Y-%m-%d %H:%M"),
                            kind.words(),
                            a.gist
                        ),
                    }
                })
                .collect();
            ActLane {
                name: format!("{} {}", marks.len(), kind.plural(marks.len())),
                class: kind.class(),
                middle: top + ACT_LANE / 2.0 + 4.0,
                marks,
            }
        })
        .collect()
}

/// A date at each day's start, thinned so they never crowd.
fn day_labels(per_hour: &[HourRow], hour_width: f64) -> Vec<Label> {
    let every_days = (per_hour.len() / 24 / 12).max(1);
    per_hour
        .iter()
        .enumerate()
        .filter(|(i, h)| h.hour.ends_with("T00") && (i / 24) % every_days == 0)
        .map(|(i, h)| Label {
            x: format!("{:.2}", LEFT + i as f64 * hour_width),
            text: h.hour.get(5..10).unwrap_or_default().to_string(),
        })
        .collect()
}

/// The shortest bin, in hours, that gives a span of `hours` bars at least
/// `MIN_BIN` wide.
fn bin_for(hours: usize) -> usize {
    let plot = WIDTH - LEFT - RIGHT;
    BINS.into_iter()
        .find(|b| plot / hours.div_ceil(*b) as f64 >= MIN_BIN)
        .unwrap_or(BINS[BINS.len() - 1])
}

fn bin_words(hours: usize) -> String {
    match hours {
        1 => "hour".into(),
        24 => "day".into(),
        168 => "week".into(),
        n if n % 24 == 0 => format!("{} days", n / 24),
        n => format!("{n} hours"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bin a span gets, and how wide its bars are then.
    fn binned(hours: usize) -> (String, f64) {
        let bin = bin_for(hours);
        let bars = hours.div_ceil(bin) as f64;
        (bin_words(bin), (WIDTH - LEFT - RIGHT) / bars)
    }

    #[test]
    fn a_longer_span_gets_longer_bins_never_a_bar_under_four_units() {
        assert_eq!(binned(112).0, "hour"); // the shipped sample, 4.6 days
        assert_eq!(binned(481).0, "3 hours"); // 20 days
        assert_eq!(binned(91 * 24).0, "12 hours"); // the 91 days
        assert_eq!(binned(15 * 30 * 24).0, "3 days"); // 15 months
        for hours in [1, 24, 200, 2_000, 11_000, 30_000] {
            assert!(binned(hours).1 >= MIN_BIN, "{hours} hours");
        }
    }
}
