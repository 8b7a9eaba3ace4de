//! Canonical forms for de-duplication: the same story reached through two
//! sources (an RSS feed and a subreddit, a short link and a long one) has
//! one canonical URL, and near-identical titles one title key.

use url::Url;

const TRACKING: &[&str] = &[
    "fbclid", "gclid", "mc_cid", "mc_eid", "ref", "ref_src", "igshid", "si", "feature",
];

/// The URL without what does not change what it points at: fragment,
/// tracking parameters, `www.`, a trailing slash, and scheme differences;
/// `youtu.be/ID` becomes `youtube.com/watch?v=ID`.
pub(crate) fn canonical_url(raw: &str) -> String {
    let Ok(mut u) = Url::parse(raw.trim()) else {
        return raw.trim().to_lowercase();
    };
    u.set_fragment(None);
    let host = u.host_str().unwrap_or("").to_lowercase();
    let host = host
        .strip_prefix("www.")
        .or_else(|| host.strip_prefix("m."))
        .unwrap_or(&host)
        .to_string();
    if host == "youtu.be" {
        let id = u.path().trim_start_matches('/').to_string();
        return format!("youtube.com/watch?v={id}");
    }
    let mut pairs: Vec<(String, String)> = u
        .query_pairs()
        .filter(|(k, _)| !k.starts_with("utm_") && !TRACKING.contains(&k.as_ref()))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.sort();
    let path = u.path().trim_end_matches('/');
    let mut out = format!("{host}{path}");
    if !pairs.is_empty() {
        let query: Vec<String> = pairs
            .iter()
            .map(|(k, v)| {
                if v.is_empty() {
                    k.clone()
                } else {
                    format!("{k}={v}")
                }
            })
            .collect();
        out.push('?');
        out.push_str(&query.join("&"));
    }
    out
}

/// A title reduced to its words, for catching the same story under two links.
pub(crate) fn title_key(title: &str) -> String {
    title
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_page_has_one_canonical_url() {
        let a = canonical_url("https://www.example.com/post/1/?utm_source=rss&b=2&a=1#comments");
        let b = canonical_url("http://example.com/post/1?a=1&b=2");
        assert_eq!(a, b);
        assert_eq!(a, "example.com/post/1?a=1&b=2");
        assert_eq!(
            canonical_url("https://youtu.be/abc123?si=x"),
            "youtube.com/watch?v=abc123"
        );
        assert_eq!(
            canonical_url("https://m.youtube.com/watch?v=abc123&feature=share"),
            "youtube.com/watch?v=abc123"
        );
        assert_eq!(title_key("Rust 2.0 — Released!"), "rust 2 0 released");
    }
}
