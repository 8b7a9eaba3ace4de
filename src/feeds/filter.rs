//! Which of a feed's items a subscription delivers: include and exclude
//! rules on the title, summary, author or categories.
//!
//! Written as an owner would type them in a slash command, one rule per
//! `;`: `include title: release, rc; exclude any: /(?i)sponsored/`. A rule is
//! keywords (any of them, whole words, any case) or a regular expression
//! between slashes. An item passes when it matches an include rule (or
//! there are none) and no exclude rule. What it guarantees:
//!
//! - every rule is checked when saved, and a bad one is refused naming its
//!   place and what would be valid;
//! - bounded: at most [`MAX_RULES`] rules, [`MAX_RULE_CHARS`] characters
//!   each, and a regular expression compiled within a size limit (the
//!   `regex` crate's matching is linear in the text, never backtracking);
//! - stored as the text the owner typed, so `/feeds list` shows it back as
//!   it was written.

use std::fmt;

use regex::{Regex, RegexBuilder};

use super::template::Fields;

pub(crate) const MAX_RULES: usize = 10;
pub(crate) const MAX_RULE_CHARS: usize = 300;
/// The compiled size a rule's regular expression may take.
const REGEX_SIZE_LIMIT: usize = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("at most {MAX_RULES} filter rules; this has {0}")]
    TooMany(usize),
    #[error("filter rule {rule} has {chars} characters; at most {MAX_RULE_CHARS}")]
    TooLong { rule: usize, chars: usize },
    #[error(
        "filter rule {rule} ({text:?}) should start with include or exclude, \
         e.g. \"include title: release\""
    )]
    NoAction { rule: usize, text: String },
    #[error(
        "filter rule {rule}: {field:?} is not a field; valid: title, summary, author, categories, any"
    )]
    NoField { rule: usize, field: String },
    #[error("filter rule {rule} names no keywords; e.g. \"include title: release, rc\"")]
    NoKeywords { rule: usize },
    #[error("filter rule {rule}: the regular expression is not valid: {why}")]
    BadRegex { rule: usize, why: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Include,
    Exclude,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Title,
    Summary,
    Author,
    Categories,
    Any,
}

#[derive(Clone, Debug)]
enum Pattern {
    /// Lower-cased; matched as whole words.
    Keywords(Vec<String>),
    Regex(Regex),
}

#[derive(Clone, Debug)]
struct Rule {
    action: Action,
    field: Field,
    pattern: Pattern,
}

/// A subscription's rules, checked.
#[derive(Clone, Default)]
pub struct Filters {
    text: String,
    rules: Vec<Rule>,
}

impl fmt::Debug for Filters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Filters").field(&self.text).finish()
    }
}

impl PartialEq for Filters {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Filters {
    /// Reads rules as typed; an empty text is no rules (every item passes).
    pub(crate) fn parse(text: &str) -> Result<Self, FilterError> {
        let parts: Vec<&str> = text
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if parts.len() > MAX_RULES {
            return Err(FilterError::TooMany(parts.len()));
        }
        let rules = parts
            .iter()
            .enumerate()
            .map(|(i, p)| rule(i + 1, p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            text: parts.join("; "),
            rules,
        })
    }

    /// The rules as typed (normalised spacing); empty when there are none.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether an item with these fields is delivered.
    pub(crate) fn passes(&self, item: &Fields) -> bool {
        let mut includes = self
            .rules
            .iter()
            .filter(|r| r.action == Action::Include)
            .peekable();
        let included = includes.peek().is_none() || includes.any(|r| r.matches(item));
        included
            && !self
                .rules
                .iter()
                .any(|r| r.action == Action::Exclude && r.matches(item))
    }
}

fn rule(n: usize, text: &str) -> Result<Rule, FilterError> {
    let chars = text.chars().count();
    if chars > MAX_RULE_CHARS {
        return Err(FilterError::TooLong { rule: n, chars });
    }
    let no_action = || FilterError::NoAction {
        rule: n,
        text: text.to_string(),
    };
    let (word, rest) = text.split_once(char::is_whitespace).ok_or_else(no_action)?;
    let action = match word.to_ascii_lowercase().as_str() {
        "include" => Action::Include,
        "exclude" => Action::Exclude,
        _ => return Err(no_action()),
    };
    let (field, what) = rest.split_once(':').ok_or_else(no_action)?;
    let field = match field.trim().to_ascii_lowercase().as_str() {
        "title" => Field::Title,
        "summary" => Field::Summary,
        "author" => Field::Author,
        "categories" | "category" => Field::Categories,
        "any" => Field::Any,
        other => {
            return Err(FilterError::NoField {
                rule: n,
                field: other.to_string(),
            });
        }
    };
    Ok(Rule {
        action,
        field,
        pattern: pattern(n, what.trim())?,
    })
}

fn pattern(n: usize, what: &str) -> Result<Pattern, FilterError> {
    if let Some(re) = what
        .strip_prefix('/')
        .and_then(|w| w.strip_suffix('/'))
        .filter(|w| !w.is_empty())
    {
        return RegexBuilder::new(re)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map(Pattern::Regex)
            .map_err(|e| FilterError::BadRegex {
                rule: n,
                why: e
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
                    .to_string(),
            });
    }
    let words: Vec<String> = what
        .split(',')
        .map(|w| w.trim().to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        return Err(FilterError::NoKeywords { rule: n });
    }
    Ok(Pattern::Keywords(words))
}

impl Rule {
    fn matches(&self, item: &Fields) -> bool {
        let categories = item.categories.join(", ");
        let texts: Vec<&str> = match self.field {
            Field::Title => vec![&item.title],
            Field::Summary => vec![&item.summary],
            Field::Author => vec![&item.author],
            Field::Categories => vec![&categories],
            Field::Any => vec![&item.title, &item.summary, &item.author, &categories],
        };
        texts.iter().any(|t| self.pattern.matches(t))
    }
}

impl Pattern {
    fn matches(&self, text: &str) -> bool {
        match self {
            Pattern::Regex(re) => re.is_match(text),
            Pattern::Keywords(words) => {
                let lower = text.to_lowercase();
                words.iter().any(|w| has_word(&lower, w))
            }
        }
    }
}

/// Whether `phrase` occurs in `text` between non-alphanumeric characters.
fn has_word(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + phrase.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(title: &str, categories: &[&str]) -> Fields {
        Fields {
            title: title.into(),
            summary: "A summary of the post.".into(),
            author: "Ferris".into(),
            categories: categories.iter().map(|c| c.to_string()).collect(),
            ..Fields::default()
        }
    }

    #[test]
    fn no_rules_let_everything_through() {
        let f = Filters::parse("  ").unwrap();
        assert!(f.is_empty());
        assert!(f.passes(&item("anything", &[])));
    }

    #[test]
    fn include_keywords_match_whole_words_in_any_case() {
        let f = Filters::parse("include title: release, RC").unwrap();
        assert!(f.passes(&item("Rust 1.90 Release notes", &[])));
        assert!(f.passes(&item("1.91 rc is out", &[])));
        assert!(
            !f.passes(&item("Prerelease tooling", &[])),
            "a word inside another does not count"
        );
        assert!(!f.passes(&item("A blog post", &[])));
    }

    #[test]
    fn an_exclude_rule_wins_over_an_include() {
        let f = Filters::parse("include any: rust; exclude categories: sponsored").unwrap();
        assert!(f.passes(&item("Rust news", &["news"])));
        assert!(!f.passes(&item("Rust news", &["Sponsored"])));
    }

    #[test]
    fn a_regular_expression_is_between_slashes() {
        let f = Filters::parse("exclude title: /(?i)^\\[ad\\]/").unwrap();
        assert!(!f.passes(&item("[AD] buy now", &[])));
        assert!(f.passes(&item("Not an [ad]", &[])));
        assert_eq!(f.as_str(), "exclude title: /(?i)^\\[ad\\]/");
    }

    #[test]
    fn bad_rules_are_refused_naming_their_place() {
        assert_eq!(
            Filters::parse("include title: a; only title: b").unwrap_err(),
            FilterError::NoAction {
                rule: 2,
                text: "only title: b".into()
            }
        );
        assert_eq!(
            Filters::parse("include body: a").unwrap_err().to_string(),
            "filter rule 1: \"body\" is not a field; valid: title, summary, author, categories, any"
        );
        assert_eq!(
            Filters::parse("exclude title: ,").unwrap_err(),
            FilterError::NoKeywords { rule: 1 }
        );
        assert!(matches!(
            Filters::parse("include title: /(unclosed/").unwrap_err(),
            FilterError::BadRegex { rule: 1, .. }
        ));
        assert_eq!(
            Filters::parse(&"include title: a;".repeat(11)).unwrap_err(),
            FilterError::TooMany(11)
        );
        assert!(matches!(
            Filters::parse(&format!("include title: {}", "a".repeat(300))).unwrap_err(),
            FilterError::TooLong { rule: 1, .. }
        ));
    }

    #[test]
    fn a_regular_expression_too_large_to_compile_is_refused() {
        let huge = format!("include title: /{}/", "a{1000}{1000}");
        assert!(matches!(
            Filters::parse(&huge).unwrap_err(),
            FilterError::BadRegex { rule: 1, .. }
        ));
    }
}
