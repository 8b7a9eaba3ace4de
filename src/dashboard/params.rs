//! A page's query string or a form's fields: untrusted, bounded, and read
//! through helpers whose errors name the field and what would be valid.

use crate::ids::{ChannelId, GuildId, UserId};

/// The longest value any field takes (an id, a filter, a search, a token).
pub(crate) const MAX_VALUE_CHARS: usize = 200;

/// Fields a request may carry at most.
const MAX_FIELDS: usize = 32;

pub(crate) struct Params(Vec<(String, String)>);

/// A field the request carries that the page cannot use. Values are quoted
/// as [`shown`] cuts them (they may be anything).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParamError {
    #[error("at most {max} fields are read")]
    TooManyFields { max: usize },
    #[error("{field}: at most {max} characters, got {got}")]
    TooLong {
        field: String,
        max: usize,
        got: usize,
    },
    #[error("{field}: expected {what} id (digits), got {got:?}")]
    NotAnId {
        field: String,
        what: &'static str,
        got: String,
    },
}

impl Params {
    pub(crate) fn from_query(raw: Option<&str>) -> Result<Self, ParamError> {
        Self::parse(raw.unwrap_or("").as_bytes())
    }

    pub(crate) fn from_form(body: &[u8]) -> Result<Self, ParamError> {
        Self::parse(body)
    }

    fn parse(bytes: &[u8]) -> Result<Self, ParamError> {
        let mut fields = Vec::new();
        for (k, v) in url::form_urlencoded::parse(bytes) {
            if fields.len() == MAX_FIELDS {
                return Err(ParamError::TooManyFields { max: MAX_FIELDS });
            }
            if v.chars().count() > MAX_VALUE_CHARS {
                return Err(ParamError::TooLong {
                    field: shown(&k),
                    max: MAX_VALUE_CHARS,
                    got: v.chars().count(),
                });
            }
            fields.push((k.into_owned(), v.into_owned()));
        }
        Ok(Self(fields))
    }

    /// The field's value as sent (the first, if repeated).
    pub(crate) fn raw(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The field's trimmed value; an empty one counts as absent.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.raw(key).map(str::trim).filter(|v| !v.is_empty())
    }

    pub(crate) fn flag(&self, key: &str) -> bool {
        self.get(key).is_some_and(|v| v != "0" && v != "off")
    }

    /// A Discord id (digits).
    pub(crate) fn id(&self, key: &str, what: &'static str) -> Result<Option<u64>, ParamError> {
        self.get(key)
            .map(|v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| ParamError::NotAnId {
                        field: key.into(),
                        what,
                        got: shown(v),
                    })
            })
            .transpose()
    }

    pub(crate) fn guild(&self, key: &str) -> Result<Option<GuildId>, ParamError> {
        Ok(self.id(key, "a server")?.map(GuildId))
    }

    pub(crate) fn channel(&self, key: &str) -> Result<Option<ChannelId>, ParamError> {
        Ok(self.id(key, "a channel")?.map(ChannelId))
    }

    pub(crate) fn user(&self, key: &str) -> Result<Option<UserId>, ParamError> {
        Ok(self.id(key, "a user")?.map(UserId))
    }
}

/// A value quoted in an error, cut short (it may be anything).
fn shown(v: &str) -> String {
    super::view::cut(v, 40)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_bounded_and_ids_are_digits() {
        let p = Params::from_query(Some("guild=12&q=+hi+&empty=&x=1&x=2")).unwrap();
        assert_eq!(p.guild("guild").unwrap(), Some(GuildId(12)));
        assert_eq!(p.get("q"), Some("hi"));
        assert_eq!(p.get("empty"), None);
        assert_eq!(p.get("x"), Some("1"));
        assert_eq!(
            Params::from_query(Some("guild=abc"))
                .unwrap()
                .guild("guild")
                .unwrap_err()
                .to_string(),
            "guild: expected a server id (digits), got \"abc\""
        );
        let long = format!("q={}", "a".repeat(MAX_VALUE_CHARS + 1));
        assert_eq!(
            Params::from_query(Some(&long)).err().unwrap().to_string(),
            format!(
                "q: at most {MAX_VALUE_CHARS} characters, got {}",
                MAX_VALUE_CHARS + 1
            )
        );
        let many = (0..40)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join("&");
        assert!(Params::from_query(Some(&many)).is_err());
    }
}
