//! JSON text with every field bounded before a parser sees it, so that
//! what serde_json holds at once stays small whatever a file holds: a
//! chat export's 1 GB message text, or a 1 GB server name, would otherwise
//! be read whole into serde_json's scratch buffer and then copied.
//!
//! - A string longer than `max_string` bytes (as written, escapes and all)
//!   is cut there, on the edge of a character or an escape and never between
//!   the two halves of a surrogate pair, so what is passed on is still valid
//!   JSON; the rest of the string is skipped unread by the parser.
//! - A number (or any bare word) longer than `MAX_TOKEN` bytes is an error.
//! - Each item — a value of the top object, or an element of its
//!   `messages` list — may take at most `max_item` bytes after the cuts; a
//!   longer one is an error. Only `messages` is counted by element: any other
//!   value (a server given as a list of a billion numbers) is one item, and
//!   so is a `messages` key spelled with escapes (`"messag\u0065s"`), which
//!   the reader does not decode — refused, never let through.
//!
//! The reader only follows the lexical structure (strings, escapes,
//! brackets); it does not check the JSON. Errors are the parser's to find.

use std::io::{self, BufRead, Read};

/// The longest number or bare word passed on: far beyond any id or count.
pub(crate) const MAX_TOKEN: u64 = 64;

/// The one key of the top object whose list is counted element by element.
const LIST_KEY: &[u8] = b"messages";

/// Why a read stopped: it went past a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// An item took more than this many bytes.
    Item(u64),
    /// A number or bare word was longer than this many bytes.
    Token(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Between values, keys and punctuation.
    Outside,
    /// Inside a string, passing it on.
    Text,
    /// After a backslash inside a string.
    Escape,
    /// Inside `\uXXXX`: hex digits still to come, and the value so far.
    Hex { left: u8, value: u16 },
    /// Inside a string past its limit: skipping to its closing quote.
    Skip,
    /// After a backslash in a skipped string.
    SkipEscape,
}

pub(crate) struct Bounded<R> {
    inner: R,
    lexer: Lexer,
}

/// Where the reader is in the JSON text, and what it has counted.
struct Lexer {
    max_string: u64,
    max_item: u64,
    state: State,
    /// Open brackets and braces.
    depth: u32,
    /// Whether the container opened at depth 2 is the `messages` list: its elements are items.
    list_at_2: bool,
    /// In the top object, the next string is a key (after `{` or `,`, not `:`).
    key_next: bool,
    /// How much of [`LIST_KEY`] the key being read matches so far; `None`
    /// once it differs (or is not a key being read).
    key_match: Option<usize>,
    /// The last key of the top object was [`LIST_KEY`], exactly as written.
    after_list_key: bool,
    item_bytes: u64,
    string_bytes: u64,
    token_bytes: u64,
    /// The last escape was the first half of a surrogate pair: no cut before the second.
    pair_open: bool,
    /// Set when a limit stopped the read (the parser then sees an I/O error).
    overflow: Option<Overflow>,
}

impl<R: BufRead> Bounded<R> {
    pub(crate) fn new(inner: R, max_string: u64, max_item: u64) -> Self {
        let lexer = Lexer {
            max_string,
            max_item,
            state: State::Outside,
            depth: 0,
            list_at_2: false,
            key_next: false,
            key_match: None,
            after_list_key: false,
            item_bytes: 0,
            string_bytes: 0,
            token_bytes: 0,
            pair_open: false,
            overflow: None,
        };
        Self { inner, lexer }
    }

    /// The limit that stopped the read, if one did.
    pub(crate) fn overflow(&self) -> Option<Overflow> {
        self.lexer.overflow
    }
}

impl Lexer {
    /// What to do with one byte: `Ok(true)` passes it on.
    fn step(&mut self, b: u8) -> Result<bool, Overflow> {
        let pass = match self.state {
            State::Outside => self.outside(b)?,
            State::Text => self.text(b),
            State::Escape | State::Hex { .. } => {
                self.escape(b);
                true
            }
            State::Skip => {
                match b {
                    b'"' => self.state = State::Outside,
                    b'\\' => self.state = State::SkipEscape,
                    _ => {}
                }
                b == b'"'
            }
            State::SkipEscape => {
                self.state = State::Skip;
                false
            }
        };
        if pass && self.depth >= 2 {
            self.item_bytes += 1;
            if self.item_bytes > self.max_item {
                return Err(Overflow::Item(self.max_item));
            }
        }
        Ok(pass)
    }

    fn outside(&mut self, b: u8) -> Result<bool, Overflow> {
        let bare = !matches!(
            b,
            b'{' | b'}' | b'[' | b']' | b',' | b':' | b'"' | b' ' | b'\t' | b'\n' | b'\r'
        );
        self.token_bytes = if bare { self.token_bytes + 1 } else { 0 };
        if self.token_bytes > MAX_TOKEN {
            return Err(Overflow::Token(MAX_TOKEN));
        }
        match b {
            b'"' => {
                self.state = State::Text;
                self.string_bytes = 0;
                self.pair_open = false;
                let is_key = self.depth == 1 && self.key_next;
                self.key_match = is_key.then_some(0);
                if is_key {
                    self.after_list_key = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                match self.depth {
                    1 => self.key_next = b == b'{',
                    2 => {
                        self.list_at_2 = b == b'[' && self.after_list_key;
                        self.item_bytes = 0;
                    }
                    _ => {}
                }
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth <= 1 {
                    self.item_bytes = 0;
                }
            }
            b',' if self.depth == 1 => self.key_next = true,
            b':' if self.depth == 1 => self.key_next = false,
            b',' if self.depth == 2 && self.list_at_2 => self.item_bytes = 0,
            _ => {}
        }
        Ok(true)
    }

    /// Follows a key of the top object byte by byte (an escape never matches).
    fn follow_key(&mut self, b: u8) {
        let Some(matched) = self.key_match else {
            return;
        };
        if b == b'"' {
            self.after_list_key = matched == LIST_KEY.len();
            self.key_match = None;
        } else {
            self.key_match = (LIST_KEY.get(matched) == Some(&b)).then_some(matched + 1);
        }
    }

    /// A byte inside a string: passed on, or the start of the skipped rest.
    fn text(&mut self, b: u8) -> bool {
        self.follow_key(b);
        if b == b'"' {
            self.state = State::Outside;
            return true;
        }
        // A character's continuation bytes go with its first byte.
        let starts_a_character = b & 0xC0 != 0x80;
        if starts_a_character && self.string_bytes >= self.max_string && !self.pair_open {
            self.state = if b == b'\\' {
                State::SkipEscape
            } else {
                State::Skip
            };
            return false;
        }
        self.string_bytes += 1;
        if b == b'\\' {
            self.state = State::Escape;
        } else if starts_a_character {
            self.pair_open = false;
        }
        true
    }

    /// A byte of an escape (after its backslash): passed on whatever the limit.
    fn escape(&mut self, b: u8) {
        self.string_bytes += 1;
        self.state = match self.state {
            State::Escape if b == b'u' => State::Hex { left: 4, value: 0 },
            State::Hex { left, value } if left > 1 => State::Hex {
                left: left - 1,
                value: value << 4 | hex(b),
            },
            State::Hex { value, .. } => {
                // The first half of a surrogate pair: the second must not be cut off.
                self.pair_open = (0xD800..0xDC00).contains(&(value << 4 | hex(b)));
                State::Text
            }
            _ => {
                self.pair_open = false;
                State::Text
            }
        };
    }
}

/// A hex digit's value (0 for anything else: the parser will refuse it).
fn hex(b: u8) -> u16 {
    (b as char).to_digit(16).map_or(0, |d| d as u16)
}

impl<R: BufRead> Read for Bounded<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some(o) = self.lexer.overflow {
            return Err(overflow_error(o));
        }
        let mut written = 0;
        // Skipped input gives nothing to pass on: read on until something is, or the end.
        while written == 0 && !out.is_empty() {
            let input = self.inner.fill_buf()?;
            if input.is_empty() {
                return Ok(0);
            }
            let (used, passed) = self.lexer.pass(input, out);
            written = passed;
            self.inner.consume(used);
            if let Some(o) = self.lexer.overflow {
                // What came before the limit is handed on first; the error follows.
                return if written > 0 {
                    Ok(written)
                } else {
                    Err(overflow_error(o))
                };
            }
        }
        Ok(written)
    }
}

impl Lexer {
    /// Passes what `input` allows into `out`: how much of `input` was used,
    /// and how much of `out` was filled.
    fn pass(&mut self, input: &[u8], out: &mut [u8]) -> (usize, usize) {
        let (mut used, mut written) = (0, 0);
        while used < input.len() && written < out.len() {
            if self.state == State::Skip {
                // The bulk of a huge string: only a quote or a backslash matters in it.
                let rest = &input[used..];
                match rest.iter().position(|&b| b == b'"' || b == b'\\') {
                    Some(i) => used += i,
                    None => {
                        used = input.len();
                        break;
                    }
                }
            }
            let b = input[used];
            used += 1;
            match self.step(b) {
                Ok(true) => {
                    out[written] = b;
                    written += 1;
                }
                Ok(false) => {}
                Err(o) => {
                    self.overflow = Some(o);
                    break;
                }
            }
        }
        (used, written)
    }
}

fn overflow_error(o: Overflow) -> io::Error {
    io::Error::other(match o {
        Overflow::Item(max) => format!("an item longer than {max} bytes"),
        Overflow::Token(max) => format!("a number or word longer than {max} bytes"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What `Bounded` passes on from `json`, or the limit that stopped it.
    fn through(json: &str, max_string: u64, max_item: u64) -> Result<String, Overflow> {
        let mut b = Bounded::new(json.as_bytes(), max_string, max_item);
        let mut out = Vec::new();
        let result = b.read_to_end(&mut out);
        let text = String::from_utf8(out).expect("what is passed on is UTF-8");
        match result {
            Ok(_) => Ok(text),
            Err(_) => Err(b.overflow().expect("only limits fail")),
        }
    }

    fn parsed(json: &str, max_string: u64) -> Value {
        let out = through(json, max_string, u64::MAX);
        serde_json::from_str(&out.unwrap()).expect("what is passed on is JSON")
    }

    #[test]
    fn short_json_passes_byte_for_byte() {
        let json = r#"{"guild": {"id": "1", "name": "Tidé \"pool\" \ud83d\ude00"}, "n": [1, -2.5e3, true, null]}"#;
        assert_eq!(through(json, 100, 1_000), Ok(json.to_string()));
    }

    #[test]
    fn a_long_string_is_cut_and_the_rest_skipped_with_its_escaped_quotes() {
        let json = r#"{"a": "abcdefghij\"klm\"nop", "b": "short"}"#;
        assert_eq!(
            through(json, 5, u64::MAX).unwrap(),
            r#"{"a": "abcde", "b": "short"}"#
        );
    }

    #[test]
    fn cuts_fall_between_characters_and_escapes_never_inside_them() {
        // Two-byte characters: a cut at an odd byte count waits for the next character.
        assert_eq!(parsed(r#"["ééééé"]"#, 3)[0], "éé");
        // An escape is passed whole, even past the limit.
        assert_eq!(parsed(r#"["ab\u00e9cd"]"#, 3)[0], "abé");
        assert_eq!(parsed(r#"["ab\ncd"]"#, 3)[0], "ab\n");
        // The two halves of a surrogate pair stay together.
        assert_eq!(parsed(r#"["\ud83d\ude00\ud83d\ude00"]"#, 6)[0], "😀");
        // Keys are strings too.
        assert_eq!(
            parsed(r#"{"abcdefgh": 1}"#, 3),
            serde_json::json!({"abc": 1})
        );
    }

    #[test]
    fn an_item_past_its_limit_stops_the_read() {
        let list = format!(r#"{{"messages": [[{}], [1]]}}"#, "1,".repeat(50) + "1");
        assert_eq!(through(&list, 100, 90), Err(Overflow::Item(90)));
        // Each element of the list is an item of its own; long strings count as cut.
        let many = format!(
            r#"{{"messages": [{}]}}"#,
            vec![r#"{"content": "0123456789012345678901234567890123456789"}"#; 50].join(", ")
        );
        assert!(through(&many, 10, 40).is_ok());
        assert_eq!(through(&many, 1_000, 40), Err(Overflow::Item(40)));
        // The top object's values are items too: a huge server object is stopped.
        let guild = format!(r#"{{"guild": {{{}"id": 1}}}}"#, r#""k": 1, "#.repeat(20));
        assert_eq!(through(&guild, 100, 50), Err(Overflow::Item(50)));
    }

    #[test]
    fn only_the_messages_list_is_counted_by_element() {
        let zeros = vec!["0"; 100].join(",");
        // Any other list is one item, however small its elements: a server
        // or channel given as a list was read whole, whatever its size.
        for key in ["guild", "channel", "other", "messagesx", "message"] {
            let json = format!(r#"{{"{key}": [{zeros}]}}"#);
            assert_eq!(through(&json, 100, 50), Err(Overflow::Item(50)), "{key}");
        }
        let inside = format!(r#"{{"guild": {{"icons": [{zeros}]}}}}"#);
        assert_eq!(through(&inside, 100, 50), Err(Overflow::Item(50)));
        // A value that says "messages" is not the key.
        let value = format!(r#"{{"a": "messages", "b": [{zeros}]}}"#);
        assert_eq!(through(&value, 100, 50), Err(Overflow::Item(50)));
        // The key spelled with an escape is not decoded: refused, not let through.
        let escaped = format!(r#"{{"messag\u0065s": [{zeros}]}}"#);
        assert_eq!(through(&escaped, 100, 50), Err(Overflow::Item(50)));
        // The messages list, after the others, is counted by element.
        let export = format!(r#"{{"guild": {{"id": "1"}}, "messages": [{zeros}]}}"#);
        assert!(through(&export, 100, 50).is_ok());
    }

    #[test]
    fn a_number_past_its_limit_stops_the_read() {
        let json = format!(r#"{{"n": {}}}"#, "9".repeat(65));
        assert_eq!(
            through(&json, 100, u64::MAX),
            Err(Overflow::Token(MAX_TOKEN))
        );
        let json = format!(r#"{{"n": {}}}"#, "9".repeat(64));
        assert!(through(&json, 100, u64::MAX).is_ok());
    }
}
