//! Secrets, read only from the environment.
//!
//! A [`Secret`] cannot be printed by accident: its `Debug` and `Display`
//! show `***`. [`Secrets::redact`] scrubs every known secret out of a piece of
//! text (an error body, a URL) before it is logged or shown to anyone.

use std::fmt;

/// A credential. Use [`Secret::expose`] only where it is sent to its service.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

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
    /// GITHUB_TOKEN, for the `github_api` reflex action
    pub github_token: Option<Secret>,
    /// GIPHY_API_KEY, for the GIF source (a Giphy-compatible search API)
    pub giphy_api_key: Option<Secret>,
}

impl Secrets {
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Builds from any lookup (tests pass a map instead of the real environment).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let secret = |k: &str| {
            get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .map(Secret)
        };
        Self {
            discord_token: secret("DISCORD_TOKEN"),
            anthropic_api_key: secret("ANTHROPIC_API_KEY"),
            openai_api_key: secret("OPENAI_API_KEY"),
            openai_base_url: get("OPENAI_BASE_URL").filter(|v| !v.trim().is_empty()),
            openrouter_api_key: secret("OPENROUTER_API_KEY"),
            transcription_api_key: secret("TRANSCRIPTION_API_KEY"),
            image_api_key: secret("IMAGE_API_KEY"),
            github_token: secret("GITHUB_TOKEN"),
            giphy_api_key: secret("GIPHY_API_KEY"),
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
            &self.github_token,
            &self.giphy_api_key,
        ]
        .into_iter()
        .flatten()
    }

    /// Replaces every occurrence of a known secret in `text` with `***`.
    pub fn redact(&self, text: &str) -> String {
        self.all()
            .filter(|s| s.0.len() >= 4)
            .fold(text.to_string(), |acc, s| acc.replace(&s.0, "***"))
    }
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
}
