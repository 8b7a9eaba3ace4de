//! Discord's limits on a message's embeds, checked on every message the fake
//! creates (a channel's message, a forum post's starter): at most 10 embeds;
//! title 256, description 4,096, at most 25 fields (name 256 and value 1,024,
//! both required), footer text 2,048, author name 256; 6,000 characters in
//! all across them; an embed's `url` http(s), its `timestamp` ISO 8601. A
//! refusal is Discord's 400 50035 "Invalid Form Body" with `errors` naming
//! the field, e.g.
//! `{"embeds": {"0": {"fields": {"3": {"value": {"_errors": [...]}}}}}}`.

use serde_json::{Map, Value, json};

/// Discord's per-embed text limits, by field.
const TITLE: usize = 256;
const DESCRIPTION: usize = 4096;
const FIELDS: usize = 25;
const FIELD_NAME: usize = 256;
const FIELD_VALUE: usize = 1024;
const FOOTER: usize = 2048;
const AUTHOR_NAME: usize = 256;
const EMBEDS: usize = 10;
const TOTAL: usize = 6000;

/// The `errors` body of a refusal of `embeds`, or none when Discord takes them.
pub(super) fn refused(embeds: &Value) -> Option<Value> {
    let list = match embeds {
        Value::Null => return None,
        Value::Array(list) => list,
        _ => return Some(json!({"embeds": leaf("BASE_TYPE_ARRAY", "Must be an array.")})),
    };
    if list.len() > EMBEDS {
        return Some(json!({"embeds": leaf("BASE_TYPE_MAX_LENGTH",
            &format!("Must be {EMBEDS} or fewer in length."))}));
    }
    for (i, embed) in list.iter().enumerate() {
        if let Some(errors) = refused_one(embed) {
            return Some(json!({"embeds": {i.to_string(): errors}}));
        }
    }
    let total: usize = list.iter().map(characters).sum();
    (total > TOTAL).then(|| {
        json!({"embeds": leaf("MAX_EMBED_SIZE_EXCEEDED",
            &format!("Embed size exceeds maximum size of {TOTAL}"))})
    })
}

/// The first thing wrong with one embed, as the `errors` under its index.
fn refused_one(embed: &Value) -> Option<Value> {
    if !embed.is_object() {
        return Some(leaf(
            "MODEL_TYPE_CONVERT",
            "Only dictionaries may be used in a ModelType",
        ));
    }
    let mut errors = Map::new();
    for (key, max) in [("title", TITLE), ("description", DESCRIPTION)] {
        if too_long(&embed[key], max) {
            errors.insert(key.into(), max_length(max));
        }
    }
    if let Some(url) = embed["url"].as_str()
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        errors.insert(
            "url".into(),
            leaf("URL_TYPE_INVALID_URL", "Not a well formed URL."),
        );
    }
    let timestamp = &embed["timestamp"];
    let readable = |t: &str| chrono::DateTime::parse_from_rfc3339(t).is_ok();
    if !(timestamp.is_null() || timestamp.as_str().is_some_and(readable)) {
        errors.insert(
            "timestamp".into(),
            leaf(
                "DATE_TIME_TYPE_PARSE",
                &format!("Could not parse {timestamp}. Should be ISO8601."),
            ),
        );
    }
    if too_long(&embed["footer"]["text"], FOOTER) {
        errors.insert("footer".into(), json!({"text": max_length(FOOTER)}));
    }
    if too_long(&embed["author"]["name"], AUTHOR_NAME) {
        errors.insert("author".into(), json!({"name": max_length(AUTHOR_NAME)}));
    }
    let fields = embed["fields"].as_array().cloned().unwrap_or_default();
    if fields.len() > FIELDS {
        errors.insert("fields".into(), max_length(FIELDS));
    } else if let Some((i, e)) = fields
        .iter()
        .enumerate()
        .find_map(|(i, f)| refused_field(f).map(|e| (i, e)))
    {
        errors.insert("fields".into(), json!({i.to_string(): e}));
    }
    (!errors.is_empty()).then_some(Value::Object(errors))
}

fn refused_field(field: &Value) -> Option<Value> {
    let mut errors = Map::new();
    for (key, max) in [("name", FIELD_NAME), ("value", FIELD_VALUE)] {
        if field[key].as_str().is_none_or(str::is_empty) {
            errors.insert(
                key.into(),
                leaf("BASE_TYPE_REQUIRED", "This field is required"),
            );
        } else if too_long(&field[key], max) {
            errors.insert(key.into(), max_length(max));
        }
    }
    (!errors.is_empty()).then_some(Value::Object(errors))
}

/// The characters an embed counts toward the 6,000 of a message.
fn characters(embed: &Value) -> usize {
    let count = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    let fields: usize = embed["fields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| count(&f["name"]) + count(&f["value"]))
                .sum()
        })
        .unwrap_or(0);
    count(&embed["title"])
        + count(&embed["description"])
        + count(&embed["footer"]["text"])
        + count(&embed["author"]["name"])
        + fields
}

fn too_long(v: &Value, max: usize) -> bool {
    v.as_str().is_some_and(|s| s.chars().count() > max)
}

fn max_length(max: usize) -> Value {
    leaf(
        "BASE_TYPE_MAX_LENGTH",
        &format!("Must be {max} or fewer in length."),
    )
}

fn leaf(code: &str, message: &str) -> Value {
    json!({"_errors": [{"code": code, "message": message}]})
}

/// The embeds as Discord keeps them on the message: each `type` "rich".
pub(super) fn as_kept(embeds: &Value) -> Value {
    let list = embeds.as_array().cloned().unwrap_or_default();
    Value::Array(
        list.into_iter()
            .map(|mut e| {
                if e.is_object() && e.get("type").is_none() {
                    e["type"] = json!("rich");
                }
                e
            })
            .collect(),
    )
}
