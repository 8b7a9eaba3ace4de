//! Keywords and overlap: the seed's supersede rule.
//!
//! "If an existing decision shares more than 40% of keywords with the new
//! one, the old one is replaced." The seed's example — "Use session cookies
//! for auth" replaced by "Use JWT with refresh tokens for auth" — only holds
//! when the share is measured against the *existing* fact's keywords:
//! {use, session, cookies, auth} shares {use, auth} with the new one, 2 of
//! 4 = 0.5. (A symmetric Jaccard over both sets gives 2/7 ≈ 0.29 and would
//! miss the seed's own example.) So overlap is |old ∩ new| / |old|.

use std::collections::BTreeSet;

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "by", "for", "with",
    "from", "as", "is", "are", "was", "were", "be", "been", "it", "its", "this", "that", "these",
    "those", "we", "our", "you", "your", "they", "their", "he", "she", "his", "her", "i", "my",
    "me", "not", "no", "so", "if", "then", "than", "do", "does", "did", "will", "would", "should",
    "can", "could", "has", "have", "had", "about", "into", "over", "also", "just", "very",
];

/// The content words of a text: lowercase, letters and digits, no stopwords.
pub(crate) fn keywords(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// The share of `old`'s keywords that `new` repeats (0 when `old` has none).
pub(crate) fn overlap(old: &BTreeSet<String>, new: &BTreeSet<String>) -> f64 {
    if old.is_empty() {
        return 0.0;
    }
    old.intersection(new).count() as f64 / old.len() as f64
}

/// Symmetric Jaccard similarity, used to tell a near-duplicate (reinforce)
/// from a replacement (supersede).
pub(crate) fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_example_overlaps_above_forty_percent() {
        let old = keywords("Use session cookies for auth");
        let new = keywords("Use JWT with refresh tokens for auth");
        assert_eq!(old.len(), 4);
        assert_eq!(overlap(&old, &new), 0.5);
        assert!(jaccard(&old, &new) < 0.3, "symmetric Jaccard would miss it");
    }
}
