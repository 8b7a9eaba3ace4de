//! Bounds on what goes into a model request (`executive.promptLimits`).
//!
//! Everything in a prompt comes from outside — what people wrote, a page, a
//! tool's answer — and one 5 MB message must not become a 5 MB request. So
//! every piece is cut to a character budget with a visible marker, never
//! inside a UTF-8 character, in three places that every call passes through:
//!
//! - [`bound_context`]: each value a prompt template sees (a message, a
//!   fact, a feed item) is cut to `messageChars`, and each top-level section
//!   (the history, the memory list) to `sectionChars` — its longest items
//!   are shortened first, so one flood does not push out everyone else;
//! - the tool loop cuts each tool result to `toolResultChars`;
//! - [`bound_request`] keeps the whole request under `totalChars`, the last
//!   line of defence, by the same longest-first rule.

use std::borrow::Cow;

use serde_json::Value;

use super::wire::{Message, Part};
use crate::settings::PromptLimits;
use crate::words::thousands;

/// Room a cut piece's marker takes, at most (the longest numbers included).
const MARKER_CHARS: usize = 80;

/// Items in a crowded section keep at least this much of their text: below
/// it a cut piece says nothing. A section of very many items is then
/// bounded by their number, which other settings bound, and by `totalChars`.
const MIN_SHARE: usize = 100;

/// `text` cut to its first `max_chars` characters, with a marker saying how
/// much there was; unchanged when it fits.
pub(crate) fn cap(text: &str, max_chars: usize) -> Cow<'_, str> {
    let Some((end, _)) = text.char_indices().nth(max_chars) else {
        return Cow::Borrowed(text);
    };
    let total = max_chars + text[end..].chars().count();
    Cow::Owned(format!(
        "{}… [cut: {} characters, showing the first {}]",
        &text[..end],
        thousands(total),
        thousands(max_chars)
    ))
}

/// [`cap`] for an owned text: no copy when it fits.
pub(crate) fn cap_owned(text: String, max_chars: usize) -> String {
    match cap(&text, max_chars) {
        Cow::Borrowed(_) => text,
        Cow::Owned(cut) => cut,
    }
}

/// Bounds a prompt template's context (an object of sections) in place.
/// A top-level string is one section; in an array or object every string is
/// an item of that section.
pub(crate) fn bound_context(ctx: &mut Value, limits: &PromptLimits) {
    let Value::Object(sections) = ctx else {
        return;
    };
    let section = limits.section_chars as usize;
    for value in sections.values_mut() {
        let ceiling = match value {
            Value::String(_) => section,
            _ => limits.message_chars as usize,
        };
        let mut items = Vec::new();
        strings_in(value, &mut items);
        fit(&mut items, section, ceiling);
    }
}

/// Keeps a request's text (system prompt, messages, tool results) under
/// `total_chars`, cutting the longest pieces first. The model's own tool
/// calls are counted but left whole: they are bounded by its output limit.
pub(crate) fn bound_request(system: &mut String, messages: &mut [Message], total_chars: usize) {
    let mut fixed = 0;
    let mut pieces = vec![system];
    for part in messages.iter_mut().flat_map(|m| &mut m.parts) {
        match part {
            Part::Text { text } => pieces.push(text),
            Part::ToolResult { content, .. } => pieces.push(content),
            Part::ToolUse { input, .. } => fixed += input.to_string().chars().count(),
            // Bounded by `discord.attachments` (count and size), not by characters.
            Part::Image { .. } => {}
        }
    }
    let ceiling = pieces.iter().map(|p| p.len()).max().unwrap_or(0);
    fit(&mut pieces, total_chars.saturating_sub(fixed), ceiling);
}

/// Cuts every piece to `ceiling`, and, if together they would still exceed
/// `budget`, the longest ones to one shared length so that they fit. Each
/// piece is cut once, so its marker counts what there really was.
fn fit(pieces: &mut [&mut String], budget: usize, ceiling: usize) {
    let lens: Vec<usize> = pieces.iter().map(|p| p.chars().count()).collect();
    let capped: Vec<usize> = lens
        .iter()
        .map(|&n| {
            if n > ceiling {
                ceiling + MARKER_CHARS
            } else {
                n
            }
        })
        .collect();
    let share = share(&capped, budget).min(ceiling);
    for ((piece, len), capped) in pieces.iter_mut().zip(lens).zip(capped) {
        let limit = if capped > share + MARKER_CHARS {
            share
        } else {
            ceiling
        };
        if len > limit {
            **piece = cap(piece, limit).into_owned();
        }
    }
}

/// The largest length `c` such that the pieces, each longer one cut to `c`
/// (plus its marker), fit in `budget`; at least [`MIN_SHARE`].
fn share(lens: &[usize], budget: usize) -> usize {
    let cost = |c: usize| -> usize { lens.iter().map(|&n| n.min(c + MARKER_CHARS)).sum() };
    let longest = lens.iter().copied().max().unwrap_or(0);
    if cost(longest) <= budget {
        return longest;
    }
    // `cost` never decreases as `c` grows: find the last `c` that fits.
    let (mut lo, mut hi) = (MIN_SHARE, longest);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if cost(mid) <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

fn strings_in<'a>(value: &'a mut Value, out: &mut Vec<&'a mut String>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter_mut().for_each(|v| strings_in(v, out)),
        Value::Object(map) => map.values_mut().for_each(|v| strings_in(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_text_is_cut_with_a_marker_saying_how_much_there_was() {
        assert_eq!(cap("short", 10), "short");
        assert_eq!(cap("exactly 10", 10), "exactly 10");
        assert_eq!(
            cap_owned("exactly 10".into(), 9),
            "exactly 1… [cut: 10 characters, showing the first 9]"
        );
        let big = "x".repeat(5_000_000);
        assert_eq!(
            cap(&big, 4_000),
            format!(
                "{}… [cut: 5,000,000 characters, showing the first 4,000]",
                "x".repeat(4_000)
            )
        );
    }

    #[test]
    fn cuts_count_characters_and_never_split_one() {
        // 'é' is 2 bytes, '🦀' 4: a byte-based cut would land inside them.
        let text = "é🦀".repeat(10);
        let cut = cap(&text, 3);
        assert_eq!(cut, "é🦀é… [cut: 20 characters, showing the first 3]");
        assert!(cap("🦀🦀", 2) == "🦀🦀");
    }

    #[test]
    fn every_marker_fits_its_allowance() {
        let marker = format!(
            "… [cut: {} characters, showing the first {}]",
            thousands(usize::MAX),
            thousands(4_000_000)
        );
        assert!(marker.chars().count() <= MARKER_CHARS, "{marker}");
    }

    fn limits(message: u32, section: u32) -> PromptLimits {
        PromptLimits {
            message_chars: message,
            section_chars: section,
            ..PromptLimits::default()
        }
    }

    #[test]
    fn each_item_is_cut_to_the_message_limit_and_short_ones_stay_whole() {
        let mut ctx = json!({
            "history": [{"author": "ada", "content": "y".repeat(50_000)}, {"author": "bob", "content": "hi"}],
            "target": {"content": "z".repeat(3_000)},
        });
        bound_context(&mut ctx, &limits(1_000, 10_000));
        let long = ctx["history"][0]["content"].as_str().unwrap();
        assert!(long.starts_with(&"y".repeat(1_000)));
        assert!(long.ends_with("… [cut: 50,000 characters, showing the first 1,000]"));
        assert_eq!(ctx["history"][1]["content"], "hi");
        assert_eq!(ctx["history"][0]["author"], "ada");
        assert!(
            ctx["target"]["content"]
                .as_str()
                .unwrap()
                .contains("[cut: 3,000")
        );
    }

    #[test]
    fn a_crowded_section_shortens_its_longest_items_first() {
        let mut lines: Vec<String> = (0..20).map(|_| "w".repeat(900)).collect();
        lines.push("a short line".into());
        let mut ctx = json!({"memory": lines, "persona": "p".repeat(20_000), "n": 5});
        bound_context(&mut ctx, &limits(1_000, 5_000));
        let memory: Vec<&str> = ctx["memory"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let total: usize = memory.iter().map(|m| m.chars().count()).sum();
        assert!(total <= 5_000, "the section holds {total} characters");
        assert_eq!(memory.len(), 21, "every item keeps a place");
        assert_eq!(memory[20], "a short line");
        assert!(memory[0].contains("[cut: 900 characters, showing the first"));
        // A top-level string is a section of its own.
        let persona = ctx["persona"].as_str().unwrap();
        assert!(persona.chars().count() <= 5_000 + MARKER_CHARS);
        assert_eq!(ctx["n"], 5);
    }

    #[test]
    fn a_piece_is_cut_once_and_its_marker_counts_the_original() {
        let mut ctx =
            json!({"history": ["v".repeat(50_000), "v".repeat(50_000), "v".repeat(50_000)]});
        bound_context(&mut ctx, &limits(1_000, 1_500));
        let first = ctx["history"][0].as_str().unwrap();
        assert!(
            first.ends_with("v… [cut: 50,000 characters, showing the first 420]"),
            "{first}"
        );
    }

    #[test]
    fn a_request_is_kept_under_its_total_longest_pieces_first() {
        let mut system = "s".repeat(1_000);
        let mut messages = vec![
            Message::user("u".repeat(100_000)),
            Message {
                speaker: super::super::wire::Speaker::User,
                parts: vec![Part::ToolResult {
                    id: "1".into(),
                    content: "t".repeat(30_000),
                    is_error: false,
                }],
            },
        ];
        bound_request(&mut system, &mut messages, 20_000);
        assert_eq!(system, "s".repeat(1_000), "a short piece stays whole");
        let total: usize = 1_000
            + messages
                .iter()
                .flat_map(|m| &m.parts)
                .map(|p| match p {
                    Part::Text { text } => text.chars().count(),
                    Part::ToolResult { content, .. } => content.chars().count(),
                    Part::ToolUse { .. } | Part::Image { .. } => 0,
                })
                .sum::<usize>();
        assert!(total <= 20_000, "{total}");
        assert!(messages[0].text().contains("[cut: 100,000 characters"));
    }
}
