//! Stacked daily bars as SVG geometry: one bar a day, one layer per series
//! (a model role), every rectangle placed here so the template only prints
//! them. Each rectangle carries a `<title>` with its figure, which a
//! browser shows on hover — no script needed.

use serde::Serialize;

use super::view::compact;

/// The drawing area, in SVG units (scaled to the page's width by CSS).
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 8.0;

/// One layer: its name (a role), the CSS class that colours it, a value per day.
pub(crate) struct Series {
    pub name: String,
    pub class: String,
    pub values: Vec<u64>,
}

#[derive(Serialize)]
pub(crate) struct Chart {
    pub id: String,
    pub label: String,
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub top: f64,
    pub baseline: f64,
    pub max: String,
    pub bars: Vec<Bar>,
    pub labels: Vec<Label>,
    pub legend: Vec<Legend>,
    /// Nothing to draw (no value above zero).
    pub empty: bool,
}

#[derive(Serialize)]
pub(crate) struct Bar {
    pub x: String,
    pub y: String,
    pub w: String,
    pub h: String,
    pub class: String,
    pub title: String,
}

#[derive(Serialize)]
pub(crate) struct Label {
    pub x: String,
    pub text: String,
}

#[derive(Serialize)]
pub(crate) struct Legend {
    pub name: String,
    pub class: String,
    pub total: String,
}

/// `days` (labels, `YYYY-MM-DD`) with `series` stacked bottom-up in the
/// order given; `unit` names what is counted ("tokens", "calls").
pub(crate) fn stacked(
    id: &str,
    label: &str,
    days: &[String],
    series: &[Series],
    unit: &str,
) -> Chart {
    let totals: Vec<u64> = (0..days.len())
        .map(|i| {
            series
                .iter()
                .map(|s| s.values.get(i).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    let max = totals.iter().copied().max().unwrap_or(0);
    let plot_h = HEIGHT - BOTTOM - TOP;
    let slot = (WIDTH - LEFT) / days.len().max(1) as f64;
    let bar_w = (slot * 0.7).max(0.5);
    let mut bars = Vec::new();
    let mut labels = Vec::new();
    for (i, day) in days.iter().enumerate() {
        let x = LEFT + i as f64 * slot + (slot - bar_w) / 2.0;
        let mut top = HEIGHT - BOTTOM;
        for s in series {
            let n = s.values.get(i).copied().unwrap_or(0);
            if n == 0 || max == 0 {
                continue;
            }
            let h = plot_h * n as f64 / max as f64;
            top -= h;
            bars.push(Bar {
                x: format!("{x:.2}"),
                y: format!("{top:.2}"),
                w: format!("{bar_w:.2}"),
                h: format!("{h:.2}"),
                class: s.class.clone(),
                title: format!("{day} — {}: {n} {unit}", s.name),
            });
        }
        // A label every fifth day and on the last, so they never crowd.
        if (days.len() - 1 - i).is_multiple_of(5) {
            labels.push(Label {
                x: format!("{:.2}", x + bar_w / 2.0),
                text: day.get(5..).unwrap_or(day).to_string(),
            });
        }
    }
    Chart {
        id: id.into(),
        label: label.into(),
        width: WIDTH,
        height: HEIGHT,
        left: LEFT,
        top: TOP,
        baseline: HEIGHT - BOTTOM,
        max: compact(max),
        legend: series
            .iter()
            .map(|s| Legend {
                name: s.name.clone(),
                class: s.class.clone(),
                total: compact(s.values.iter().sum()),
            })
            .collect(),
        bars,
        labels,
        empty: max == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_stack_to_the_days_total_and_the_tallest_day_fills_the_plot() {
        let days: Vec<String> = ["2026-03-01", "2026-03-02"]
            .iter()
            .map(|d| d.to_string())
            .collect();
        let series = [
            Series {
                name: "reply".into(),
                class: "role-reply".into(),
                values: vec![30, 0],
            },
            Series {
                name: "ambient".into(),
                class: "role-ambient".into(),
                values: vec![10, 20],
            },
        ];
        let c = stacked("t", "tokens", &days, &series, "tokens");
        assert_eq!(c.bars.len(), 3, "no rectangle for a zero");
        let h = |b: &Bar| b.h.parse::<f64>().unwrap();
        let plot = HEIGHT - BOTTOM - TOP;
        assert!((h(&c.bars[0]) + h(&c.bars[1]) - plot).abs() < 0.01);
        assert!((h(&c.bars[2]) - plot / 2.0).abs() < 0.01);
        assert_eq!(c.bars[0].title, "2026-03-01 — reply: 30 tokens");
        assert_eq!(c.max, "40");
        assert_eq!(c.labels.last().unwrap().text, "03-02");
        assert!(!c.empty);
        assert!(stacked("e", "e", &days, &[], "calls").empty);
    }
}
