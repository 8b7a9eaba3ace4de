//! What a delivered feed item says: a template with `{placeholders}`.
//!
//! An owner writes `**{title}**\n{link}`; [`Template::parse`] checks it once,
//! when it is saved, and every delivery renders it with minijinja, the
//! templating library the prompts already use. What it guarantees:
//!
//! - every placeholder is one of [`PLACEHOLDERS`]; an unknown one is refused
//!   by name and position, so a typo never posts `{tilte}` to a server;
//! - the owner's text is text: it is handed to minijinja with every `{`
//!   escaped, so nothing in it is evaluated (`{{ "{" }}` is the only syntax
//!   the translation writes); `{{` and `}}` are literal braces, as in Rust;
//! - no `@everyone`, `@here`, and no role mention but the roles the operator
//!   lists (`feeds.allowedRoleMentions`): refused when saved, and the item's
//!   own text (untrusted, from the feed) can ping nobody at all;
//! - a rendered message fits Discord's 2,000 characters: the summary is cut
//!   first, then the whole text.

use std::fmt;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use minijinja::Environment;

use crate::ids::RoleId;
use crate::speech::{MESSAGE_LIMIT, neutralise_mentions};

/// The placeholders a template may use, in the order the help lists them.
pub(crate) const PLACEHOLDERS: [&str; 7] = [
    "title",
    "link",
    "author",
    "summary",
    "published",
    "feed",
    "categories",
];

/// A template longer than a message could never be sent whole.
pub(crate) const MAX_TEMPLATE_CHARS: usize = MESSAGE_LIMIT;

/// Why a template was refused; each names where in the template it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("the template is empty; for example: **{{title}}**\\n{{link}}")]
    Empty,
    #[error("the template has {0} characters; at most {MAX_TEMPLATE_CHARS}")]
    TooLong(usize),
    #[error("unknown placeholder {{{name}}} at character {at}; valid: {}", valid())]
    Unknown { name: String, at: usize },
    #[error(
        "a {{ at character {at} is not closed; a placeholder is {{name}}, a literal brace {{{{ or }}}}"
    )]
    Unclosed { at: usize },
    #[error("a }} at character {at} closes nothing; a literal brace is }}}}")]
    Stray { at: usize },
    #[error("@{word} at character {at}: a feed never pings everyone")]
    MassMention { word: String, at: usize },
    #[error(
        "the role mention <@&{role}> at character {at} is not in feeds.allowedRoleMentions (the roles a feed may ping)"
    )]
    RoleNotAllowed { role: u64, at: usize },
}

fn valid() -> String {
    PLACEHOLDERS
        .iter()
        .map(|p| format!("{{{p}}}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A checked template, ready to render.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Template {
    text: String,
    /// The same text as minijinja source.
    jinja: String,
    /// The roles it mentions (each allowed when it was parsed).
    roles: Vec<RoleId>,
}

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Template").field(&self.text).finish()
    }
}

/// One item's fields, as the feed gave them (untrusted).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Fields {
    pub title: String,
    pub link: String,
    pub author: String,
    pub summary: String,
    pub published: Option<DateTime<Utc>>,
    pub feed: String,
    pub categories: Vec<String>,
}

/// A rendered message: its text, and the roles it may ping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub content: String,
    pub roles: Vec<RoleId>,
}

impl Template {
    /// Checks `text` against the placeholders and the roles a feed may ping.
    pub(crate) fn parse(text: &str, allowed_roles: &[RoleId]) -> Result<Self, TemplateError> {
        let chars = text.chars().count();
        if text.trim().is_empty() {
            return Err(TemplateError::Empty);
        }
        if chars > MAX_TEMPLATE_CHARS {
            return Err(TemplateError::TooLong(chars));
        }
        let roles = mentions(text, allowed_roles)?;
        let jinja = translate(text)?;
        Ok(Self {
            text: text.to_string(),
            jinja,
            roles,
        })
    }

    /// The template as the owner wrote it.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The message for one item: its fields made safe (they ping nobody),
    /// `published` in `zone`, the summary cut to `summary_chars`, and the
    /// whole within Discord's limit.
    pub(crate) fn render(&self, item: &Fields, zone: Tz, summary_chars: usize) -> Rendered {
        let mut summary_room = summary_chars;
        loop {
            let content = self.render_with(item, zone, summary_room);
            let over = content.chars().count().saturating_sub(MESSAGE_LIMIT);
            if over == 0 {
                return self.rendered(content);
            }
            let summary = item.summary.chars().count().min(summary_room);
            if summary == 0 {
                // The summary is gone and it is still too long: cut the whole.
                return self.rendered(cut(&content, MESSAGE_LIMIT));
            }
            summary_room = summary.saturating_sub(over);
        }
    }

    fn rendered(&self, content: String) -> Rendered {
        Rendered {
            content,
            roles: self.roles.clone(),
        }
    }

    fn render_with(&self, item: &Fields, zone: Tz, summary_chars: usize) -> String {
        let safe = |s: &str| neutralise_mentions(s, &[], |_| None);
        let published = item
            .published
            .map(|t| {
                t.with_timezone(&zone)
                    .format("%Y-%m-%d %H:%M %Z")
                    .to_string()
            })
            .unwrap_or_default();
        let ctx = minijinja::context! {
            title => safe(&item.title),
            link => safe(&item.link),
            author => safe(&item.author),
            summary => safe(&cut(&item.summary, summary_chars)),
            published => published,
            feed => safe(&item.feed),
            categories => safe(&item.categories.join(", ")),
        };
        let mut env = Environment::new();
        env.set_keep_trailing_newline(true);
        // The translation writes only `{{ name }}` for known names and
        // `{{ "{" }}`: rendering it cannot fail on what `parse` accepted.
        env.render_str(&self.jinja, ctx)
            .unwrap_or_else(|_| self.text.clone())
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// The roles `text` mentions, each one allowed; `@everyone`/`@here` never.
fn mentions(text: &str, allowed: &[RoleId]) -> Result<Vec<RoleId>, TemplateError> {
    static MENTION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"<@&(\d{1,20})>|@(everyone|here)\b").expect("valid pattern")
    });
    let mut roles = Vec::new();
    for c in MENTION.captures_iter(text) {
        let whole = c.get(0).expect("a match has its whole");
        let at = text[..whole.start()].chars().count() + 1;
        if let Some(word) = c.get(2) {
            return Err(TemplateError::MassMention {
                word: word.as_str().to_string(),
                at,
            });
        }
        let role: u64 = c[1].parse().unwrap_or(0);
        if !allowed.contains(&RoleId(role)) {
            return Err(TemplateError::RoleNotAllowed { role, at });
        }
        if !roles.contains(&RoleId(role)) {
            roles.push(RoleId(role));
        }
    }
    Ok(roles)
}

/// The template as minijinja source: placeholders become variables, and
/// every other `{` is written so that minijinja prints it.
fn translate(text: &str) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len() + 16);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '{' if chars.get(i + 1) == Some(&'{') => {
                out.push_str("{{ \"{\" }}");
                i += 2;
            }
            '}' if chars.get(i + 1) == Some(&'}') => {
                out.push('}');
                i += 2;
            }
            '{' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|c| *c == '}')
                    .ok_or(TemplateError::Unclosed { at: i + 1 })?;
                let name: String = chars[i + 1..i + 1 + close].iter().collect();
                let key = name.trim();
                if !PLACEHOLDERS.contains(&key) {
                    return Err(TemplateError::Unknown {
                        name: name.clone(),
                        at: i + 1,
                    });
                }
                out.push_str("{{ ");
                out.push_str(key);
                out.push_str(" }}");
                i += close + 2;
            }
            '}' => return Err(TemplateError::Stray { at: i + 1 }),
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item() -> Fields {
        Fields {
            title: "Rust 1.90 is out".into(),
            link: "https://blog.example/rust-1-90".into(),
            author: "The Release Team".into(),
            summary: "Faster builds and a new lint.".into(),
            published: Some("2026-11-20T15:30:00Z".parse().unwrap()),
            feed: "Rust Blog".into(),
            categories: vec!["release".into(), "rust".into()],
        }
    }

    fn render(t: &str) -> String {
        Template::parse(t, &[])
            .unwrap()
            .render(&item(), chrono_tz::Europe::Berlin, 300)
            .content
    }

    #[test]
    fn every_placeholder_is_filled_from_the_item() {
        assert_eq!(
            render(
                "**{title}** by {author} ({categories})\n{summary}\n{link} · {feed} · {published}"
            ),
            "**Rust 1.90 is out** by The Release Team (release, rust)\nFaster builds and a new lint.\n\
             https://blog.example/rust-1-90 · Rust Blog · 2026-11-20 16:30 CET"
        );
    }

    #[test]
    fn an_unknown_placeholder_is_refused_by_name_and_place() {
        let e = Template::parse("New: {tilte}", &[]).unwrap_err();
        assert_eq!(
            e,
            TemplateError::Unknown {
                name: "tilte".into(),
                at: 6
            }
        );
        assert_eq!(
            e.to_string(),
            "unknown placeholder {tilte} at character 6; valid: {title}, {link}, {author}, \
             {summary}, {published}, {feed}, {categories}"
        );
    }

    #[test]
    fn braces_are_literal_when_doubled_and_refused_when_lone() {
        assert_eq!(render("{{{title}}}"), "{Rust 1.90 is out}");
        assert_eq!(
            Template::parse("{title", &[]).unwrap_err(),
            TemplateError::Unclosed { at: 1 }
        );
        assert_eq!(
            Template::parse("a } b", &[]).unwrap_err(),
            TemplateError::Stray { at: 3 }
        );
    }

    #[test]
    fn the_owners_text_is_never_evaluated() {
        // What would be minijinja syntax, were the text handed over as it is.
        assert_eq!(
            render("{{% for x in range(3) %}}{{{{ 7*7 }}}} {title}"),
            "{% for x in range(3) %}{{ 7*7 }} Rust 1.90 is out"
        );
        assert_eq!(
            render("{{# a comment? #}} {link}"),
            "{# a comment? #} https://blog.example/rust-1-90"
        );
    }

    #[test]
    fn everyone_and_here_are_refused_and_roles_only_when_listed() {
        assert_eq!(
            Template::parse("@everyone {title}", &[]).unwrap_err(),
            TemplateError::MassMention {
                word: "everyone".into(),
                at: 1
            }
        );
        assert!(matches!(
            Template::parse("{title} @here", &[]),
            Err(TemplateError::MassMention { at: 9, .. })
        ));
        assert_eq!(
            Template::parse("<@&42> {title}", &[RoleId(7)]).unwrap_err(),
            TemplateError::RoleNotAllowed { role: 42, at: 1 }
        );
        let t = Template::parse("<@&7> {title}", &[RoleId(7)]).unwrap();
        let r = t.render(&item(), chrono_tz::UTC, 300);
        assert_eq!(r.content, "<@&7> Rust 1.90 is out");
        assert_eq!(r.roles, [RoleId(7)]);
    }

    #[test]
    fn the_feeds_own_text_pings_nobody() {
        let mut hostile = item();
        hostile.title = "@everyone free nitro <@&7> <@123>".into();
        let t = Template::parse("{title}", &[RoleId(7)]).unwrap();
        let r = t.render(&hostile, chrono_tz::UTC, 300);
        assert_eq!(r.content, "@\u{200D}everyone free nitro @role @someone");
        assert!(r.roles.is_empty());
    }

    #[test]
    fn a_long_item_is_cut_to_discords_limit_summary_first() {
        let mut long = item();
        long.summary = "word ".repeat(1_000);
        let t = Template::parse("**{title}**\n{summary}\n{link}", &[]).unwrap();
        let r = t.render(&long, chrono_tz::UTC, 5_000);
        assert_eq!(r.content.chars().count(), MESSAGE_LIMIT);
        assert!(
            r.content.ends_with("…\nhttps://blog.example/rust-1-90"),
            "the link stays"
        );
        long.title = "t".repeat(3_000);
        let r = t.render(&long, chrono_tz::UTC, 300);
        assert_eq!(r.content.chars().count(), MESSAGE_LIMIT);
        assert!(r.content.ends_with('…'));
    }

    #[test]
    fn the_summary_is_cut_to_the_length_asked() {
        let mut long = item();
        long.summary = "abcdefghij".into();
        let t = Template::parse("{summary}", &[]).unwrap();
        assert_eq!(t.render(&long, chrono_tz::UTC, 5).content, "abcd…");
    }

    #[test]
    fn an_empty_or_oversized_template_is_refused() {
        assert_eq!(
            Template::parse("  \n", &[]).unwrap_err(),
            TemplateError::Empty
        );
        assert_eq!(
            Template::parse(&"x".repeat(2_001), &[]).unwrap_err(),
            TemplateError::TooLong(2_001)
        );
    }
}
