//! Secrets, read only from the environment.
//!
//! A [`Secret`] cannot be printed by accident: its `Debug` and `Display`
//! show `***`. [`Secrets::redact`] scrubs every known secret out of a piece of
//! text (an error body, a URL) before it is logged or shown to anyone — in
//! every spelling a service or a library quotes it back in (see
//! [`spellings`]), not only as it was given.

use std::fmt;
use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use regex::Regex;

/// Shorter values are not masked: `***` for every "abc" would garble text and hide nothing.
const MIN_MASKED_LEN: usize = 4;

/// A credential. Use [`Secret::expose`] only where it is sent to its service.
#[derive(Clone)]
pub struct Secret {
    value: String,
    /// Every spelling of `value`, compiled when first needed and shared by clones.
    spellings: Arc<OnceLock<Option<Regex>>>,
}

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            spellings: Arc::default(),
        }
    }

    pub(crate) fn expose(&self) -> &str {
        &self.value
    }

    /// `text` with every spelling of this secret replaced by `***`.
    fn mask_in(&self, text: &str) -> String {
        if self.value.len() < MIN_MASKED_LEN {
            return text.to_string();
        }
        match self.spellings.get_or_init(|| spellings(&self.value)) {
            Some(any_spelling) => any_spelling.replace_all(text, "***").into_owned(),
            // Too long to compile as a pattern (a pasted file, not a key): as given, at least.
            None => text.replace(&self.value, "***"),
        }
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Every secret the bot may use, with the variable each comes from.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    /// DISCORD_TOKEN
    pub discord_token: Option<Secret>,
    /// ANTHROPIC_API_KEY
    pub anthropic_api_key: Option<Secret>,
    /// OPENAI_API_KEY
    pub openai_api_key: Option<Secret>,
    /// OPENAI_BASE_URL: not secret, but environment-provided like the key it goes with.
    pub openai_base_url: Option<String>,
    /// OPENROUTER_API_KEY
    pub openrouter_api_key: Option<Secret>,
    /// TRANSCRIPTION_API_KEY (falls back to OPENAI_API_KEY)
    pub transcription_api_key: Option<Secret>,
    /// IMAGE_API_KEY (falls back to OPENAI_API_KEY)
    pub image_api_key: Option<Secret>,
    /// SPEECH_API_KEY, for answering aloud (`voice.speech`)
    pub speech_api_key: Option<Secret>,
    /// GITHUB_TOKEN, for the `github_api` reflex action
    pub github_token: Option<Secret>,
    /// GIPHY_API_KEY, for the GIF source (a Giphy-compatible search API)
    pub giphy_api_key: Option<Secret>,
    /// PGPASSWORD, for the shared PostgreSQL database (`storage.sharedUrl`)
    pub shared_password: Option<Secret>,
}

impl Secrets {
    pub(crate) fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Builds from any lookup (tests pass a map instead of the real environment).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let secret = |k: &str| {
            get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .map(Secret::new)
        };
        Self {
            discord_token: secret("DISCORD_TOKEN"),
            anthropic_api_key: secret("ANTHROPIC_API_KEY"),
            openai_api_key: secret("OPENAI_API_KEY"),
            openai_base_url: get("OPENAI_BASE_URL").filter(|v| !v.trim().is_empty()),
            openrouter_api_key: secret("OPENROUTER_API_KEY"),
            transcription_api_key: secret("TRANSCRIPTION_API_KEY"),
            image_api_key: secret("IMAGE_API_KEY"),
            speech_api_key: secret("SPEECH_API_KEY"),
            github_token: secret("GITHUB_TOKEN"),
            giphy_api_key: secret("GIPHY_API_KEY"),
            shared_password: secret("PGPASSWORD"),
        }
    }

    fn all(&self) -> impl Iterator<Item = &Secret> {
        [
            &self.discord_token,
            &self.anthropic_api_key,
            &self.openai_api_key,
            &self.openrouter_api_key,
            &self.transcription_api_key,
            &self.image_api_key,
            &self.speech_api_key,
            &self.github_token,
            &self.giphy_api_key,
            &self.shared_password,
        ]
        .into_iter()
        .flatten()
    }

    /// Replaces every occurrence of a known secret in `text`, in any of its
    /// spellings, with `***`.
    pub fn redact(&self, text: &str) -> String {
        if text.is_empty() {
            // Most usage rows' detail: no pattern need be compiled or run.
            return String::new();
        }
        self.all().fold(text.to_string(), |acc, s| s.mask_in(&acc))
    }
}

/// One pattern for every spelling of `value` a service or a library quotes
/// back: an error that echoes the key it refused, a URL in an HTTP error.
///
/// - as given, in any letter case (some services upper-case what they echo);
/// - percent-encoded in any style: a query or form (`+` for a space), a
///   path, or every byte as `%XX` — any character may be escaped or not;
/// - hex, in either case;
/// - base64, standard or URL-safe, padded or not, alone or inside a longer
///   base64 text (`Basic` credentials, `user:key` encoded together): each of
///   the three ways the value can fall on base64's 3-byte groups gives the
///   characters that depend on the value alone.
///
/// Longer spellings come first, so a whole padded base64 is masked whole.
/// `None` when the pattern is too large to compile.
fn spellings(value: &str) -> Option<Regex> {
    let mut alternatives: Vec<(usize, String)> = vec![
        (value.len(), format!("(?i:{})", escapable(value))),
        (value.len() * 2, format!("(?i:{})", hex::encode(value))),
    ];
    for encoded in base64_spellings(value.as_bytes()) {
        alternatives.push((encoded.len(), escapable(&encoded)));
    }
    alternatives.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    alternatives.dedup();
    let pattern: Vec<String> = alternatives.into_iter().map(|(_, p)| p).collect();
    Regex::new(&pattern.join("|")).ok()
}

/// A pattern for `text` in which any character may also be percent-encoded
/// (a space also as `+`, a slash also JSON-escaped as `\/`).
fn escapable(text: &str) -> String {
    let mut pattern = String::new();
    for c in text.chars() {
        let mut utf8 = [0; 4];
        let percent: String = c
            .encode_utf8(&mut utf8)
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect();
        let mut forms = vec![
            regex::escape(c.encode_utf8(&mut utf8)),
            format!("(?i:{percent})"),
        ];
        match c {
            ' ' => forms.push(r"\+".into()),
            '/' => forms.push(r"\\/".into()),
            _ => {}
        }
        pattern.push_str(&format!("(?:{})", forms.join("|")));
    }
    pattern
}

/// `bytes` in base64: whole (padded and not), and, for each of the three
/// offsets it may start at inside a longer base64 text, the characters that
/// come from its bits alone — standard and URL-safe alphabets alike.
fn base64_spellings(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for (padded, unpadded) in [(STANDARD, STANDARD_NO_PAD), (URL_SAFE, URL_SAFE_NO_PAD)] {
        out.push(padded.encode(bytes));
        for offset in 0..3 {
            let mut shifted = vec![0u8; offset];
            shifted.extend_from_slice(bytes);
            let encoded = unpadded.encode(&shifted);
            // A character holds 6 bits: the first ones mix in the bytes before,
            // the last one (when the bits do not come out even) the bytes after.
            let first = (offset * 8).div_ceil(6);
            let last = shifted.len() * 8 / 6;
            out.push(encoded[first..last].to_string());
            if offset == 0 {
                out.push(encoded);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print_and_are_redacted() {
        let s =
            Secrets::from_lookup(|k| (k == "OPENAI_API_KEY").then(|| "sk-live-123456".to_string()));
        let key = s.openai_api_key.clone().unwrap();
        assert_eq!(format!("{key} {key:?} {s:?}").matches("sk-live").count(), 0);
        assert_eq!(
            s.redact("bad key sk-live-123456 rejected"),
            "bad key *** rejected"
        );
        assert!(s.discord_token.is_none());
    }

    /// A key with every character that encodings treat differently.
    const KEY: &str = "sk-Img+Canary/8c1E55=x";

    fn keyed() -> Secrets {
        Secrets::from_lookup(|k| (k == "IMAGE_API_KEY").then(|| KEY.to_string()))
    }

    #[test]
    fn a_secret_inside_a_longer_base64_text_is_masked_at_any_offset() {
        let s = keyed();
        for user in ["a", "ab", "abc"] {
            for engine in [STANDARD, URL_SAFE_NO_PAD] {
                let basic = engine.encode(format!("{user}:{KEY}"));
                let masked = s.redact(&format!("Authorization: Basic {basic}"));
                assert!(masked.contains("***"), "{user}: {masked}");
                // Left around the mask: the user's characters, and a few
                // that mix its bits (or the padding's) with the key's.
                let left = masked
                    .trim_start_matches("Authorization: Basic ")
                    .replace("***", "");
                let user_chars = engine.encode(format!("{user}:")).len();
                assert!(left.len() <= user_chars + 4, "{user}: {masked}");
            }
        }
    }

    #[test]
    fn text_without_a_secret_is_left_as_it_is() {
        let s = keyed();
        let other = "sk-Img+Canary/8c1E56=x";
        for text in [
            other.to_string(),
            STANDARD.encode(other),
            hex::encode(other),
            "https://api.example/v1/images?size=1024x1024".into(),
            "the image generator refused (401): Incorrect API key provided".into(),
        ] {
            assert_eq!(s.redact(&text), text);
        }
        let short = Secrets::from_lookup(|k| (k == "GITHUB_TOKEN").then(|| "abc".to_string()));
        assert_eq!(short.redact("abc ABC 616263"), "abc ABC 616263");
    }
}
