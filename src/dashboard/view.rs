//! Rendering: the page templates (minijinja, with HTML auto-escaping for
//! every value, so nothing from chat can become markup), the frame every
//! page shares, error pages, and small formatting helpers.
//!
//! Pages compute everything (a chart's rectangles are already placed);
//! templates only loop and print.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use chrono::{DateTime, Utc};
use minijinja::Environment;
use serde::Serialize;

use super::access::Who;

const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("today.html", include_str!("templates/today.html")),
    ("spend.html", include_str!("templates/spend.html")),
    ("initiative.html", include_str!("templates/initiative.html")),
    ("feeds.html", include_str!("templates/feeds.html")),
    ("memory.html", include_str!("templates/memory.html")),
    ("confirm.html", include_str!("templates/confirm.html")),
    ("done.html", include_str!("templates/done.html")),
    ("login.html", include_str!("templates/login.html")),
    ("error.html", include_str!("templates/error.html")),
    ("chart.html", include_str!("templates/chart.html")),
];

pub(crate) const STYLE: &str = include_str!("templates/style.css");
pub(crate) const ICON: &str = include_str!("templates/icon.svg");

pub(crate) struct Views {
    env: Environment<'static>,
}

impl Default for Views {
    fn default() -> Self {
        let mut env = Environment::new();
        for (name, text) in TEMPLATES {
            // The names end in .html: minijinja escapes every value for HTML.
            env.add_template(name, text)
                .expect("the built-in dashboard templates parse");
        }
        Self { env }
    }
}

/// What every page's frame shows.
#[derive(Serialize)]
pub(crate) struct Frame {
    /// The navigation entry to mark: today, spend, initiative, feeds, memory.
    pub page: &'static str,
    pub title: String,
    pub csrf: String,
    /// A signed-in browser (it gets a sign-out button).
    pub session: bool,
    pub now: String,
    pub served_by: &'static str,
}

impl Views {
    /// `template` rendered with the frame as `f` and the page's view as `p`.
    pub(crate) fn page<T: Serialize>(&self, template: &str, frame: &Frame, view: &T) -> Response {
        self.render(StatusCode::OK, template, frame, view)
    }

    pub(crate) fn render<T: Serialize>(
        &self,
        status: StatusCode,
        template: &str,
        frame: &Frame,
        view: &T,
    ) -> Response {
        let rendered = self
            .env
            .get_template(template)
            .and_then(|t| t.render(minijinja::context! { f => frame, p => view }));
        match rendered {
            Ok(html) => (status, Html(html)).into_response(),
            Err(e) => {
                tracing::error!(error = %e, template, "a dashboard page did not render");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the page could not be rendered; the bot's log says why",
                )
                    .into_response()
            }
        }
    }

    /// An error page: what went wrong, and (in `detail`) what would be valid.
    pub(crate) fn error(
        &self,
        status: StatusCode,
        frame: &Frame,
        what: &str,
        detail: &str,
    ) -> Response {
        #[derive(Serialize)]
        struct View<'a> {
            status: u16,
            what: &'a str,
            detail: &'a str,
        }
        self.render(
            status,
            "error.html",
            frame,
            &View {
                status: status.as_u16(),
                what,
                detail,
            },
        )
    }
}

/// The frame for `who` on `page`.
pub(crate) fn frame(
    page: &'static str,
    title: impl Into<String>,
    csrf: String,
    who: &Who,
    now: DateTime<Utc>,
    served_by: &'static str,
) -> Frame {
    Frame {
        page,
        title: title.into(),
        csrf,
        session: matches!(who, Who::Session(_)),
        now: stamp(now),
        served_by,
    }
}

/// `2026-05-04 18:15 UTC`.
pub(crate) fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// `18:15`, or `05-04 18:15` when not on `now`'s day.
pub(crate) fn short_time(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    if t.date_naive() == now.date_naive() {
        t.format("%H:%M").to_string()
    } else {
        t.format("%m-%d %H:%M").to_string()
    }
}

/// 1234567 → "1.2M", 12345 → "12.3k", 999 → "999".
pub(crate) fn compact(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// At most `n` characters on one line, with an ellipsis when cut.
pub(crate) fn cut(text: &str, n: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= n {
        return one_line;
    }
    one_line.chars().take(n).collect::<String>() + "…"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_compact_and_text_is_cut_on_one_line() {
        assert_eq!(compact(999), "999");
        assert_eq!(compact(12_345), "12.3k");
        assert_eq!(compact(1_234_567), "1.2M");
        assert_eq!(cut("a\nb", 5), "a b");
        assert_eq!(cut("abcdef", 3), "abc…");
    }
}
