//! Dotted paths (`initiative.text.eagerness`) into JSON settings documents.
//!
//! Used by validation (to remove bad keys), by guild overrides (to layer a
//! value at a path) and by `/settings show`.

use serde_json::{Map, Value};

pub(crate) fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

pub(crate) fn last_segment(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

pub(crate) fn get<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return Some(root);
    }
    path.split('.').try_fold(root, |node, key| node.get(key))
}

/// Sets `path` to `value`, creating intermediate objects.
pub(crate) fn set(root: &mut Value, path: &str, value: Value) {
    let mut node = root;
    let mut keys = path.split('.').peekable();
    while let Some(key) = keys.next() {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        let map = node.as_object_mut().expect("just made an object");
        if keys.peek().is_none() {
            map.insert(key.to_string(), value);
            return;
        }
        node = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Removes the key at `path`; returns whether something was removed.
pub(crate) fn remove(root: &mut Value, path: &str) -> bool {
    let (parent, key) = match path.rsplit_once('.') {
        Some((parent, key)) => (parent, key),
        None => ("", path),
    };
    let parent = if parent.is_empty() {
        Some(root)
    } else {
        parent.split('.').try_fold(root, |node, k| node.get_mut(k))
    };
    parent
        .and_then(Value::as_object_mut)
        .map(|m| m.remove(key).is_some())
        .unwrap_or(false)
}

/// Every path in the tree, objects and leaves alike, in document order.
pub(crate) fn all_paths(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect(root, "", &mut out, false);
    out
}

/// Only the leaves: the settings a person actually sets.
pub fn leaf_paths(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect(root, "", &mut out, true);
    out
}

fn collect(node: &Value, prefix: &str, out: &mut Vec<String>, leaves_only: bool) {
    if let Value::Object(map) = node {
        for (k, v) in map {
            let path = join(prefix, k);
            let is_leaf = !v.is_object();
            if is_leaf || !leaves_only {
                out.push(path.clone());
            }
            collect(v, &path, out, leaves_only);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_get_remove_round_trip() {
        let mut v = json!({"a": {"b": 1}});
        set(&mut v, "a.c.d", json!(true));
        assert_eq!(get(&v, "a.c.d"), Some(&json!(true)));
        assert!(remove(&mut v, "a.b"));
        assert!(!remove(&mut v, "a.b"));
        assert!(!remove(&mut v, "x.y"));
        assert_eq!(v, json!({"a": {"c": {"d": true}}}));
        assert_eq!(leaf_paths(&v), vec!["a.c.d"]);
        assert_eq!(all_paths(&v), vec!["a", "a.c", "a.c.d"]);
    }
}
