//! Every spelling a service or a library may quote a secret back in: the
//! one list the masking tests and the fake image generator (which quotes a
//! key back in the spelling its prompt names) go by.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// `key` in every spelling, each with the name a failure shows.
pub fn spellings(key: &str) -> Vec<(&'static str, String)> {
    let mut path = url::Url::parse("http://x/").unwrap();
    path.path_segments_mut().unwrap().push(key);
    let path = path.path().trim_start_matches('/').to_string();
    vec![
        ("plain", key.to_string()),
        ("upper-case", key.to_uppercase()),
        ("lower-case", key.to_lowercase()),
        ("base64", STANDARD.encode(key)),
        ("base64-unpadded", STANDARD_NO_PAD.encode(key)),
        ("base64-url-safe", URL_SAFE.encode(key)),
        ("base64-url-safe-unpadded", URL_SAFE_NO_PAD.encode(key)),
        (
            "percent-form",
            url::form_urlencoded::byte_serialize(key.as_bytes()).collect(),
        ),
        ("percent-path", path),
        (
            "percent-every-byte",
            key.bytes().map(|b| format!("%{b:02x}")).collect(),
        ),
        ("hex", hex::encode(key)),
        ("hex-upper-case", hex::encode_upper(key)),
        ("json-escaped", key.replace('/', "\\/")),
    ]
}
