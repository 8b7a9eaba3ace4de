//! The topic words of a text: what the community talks about, and what a
//! found item is about.
//!
//! Initiative counts them across recent messages to find the community's
//! interests; discovery matches a candidate's title and summary against
//! those interests. Both speak the same words, so the one definition lives
//! here, at the lower of the two layers.

const STOPWORDS: &[&str] = &[
    "about",
    "after",
    "again",
    "also",
    "always",
    "because",
    "been",
    "before",
    "being",
    "could",
    "does",
    "doing",
    "done",
    "dont",
    "even",
    "every",
    "from",
    "going",
    "gonna",
    "good",
    "have",
    "having",
    "here",
    "just",
    "know",
    "like",
    "made",
    "make",
    "many",
    "maybe",
    "more",
    "most",
    "much",
    "need",
    "never",
    "only",
    "other",
    "over",
    "really",
    "right",
    "said",
    "same",
    "should",
    "some",
    "something",
    "still",
    "such",
    "sure",
    "take",
    "than",
    "thanks",
    "that",
    "thats",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "though",
    "time",
    "today",
    "very",
    "want",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "will",
    "with",
    "would",
    "yeah",
    "your",
    "youre",
    "into",
    "lol",
    "haha",
    "okay",
    "cool",
    "nice",
    "pretty",
    "anyone",
    "someone",
    "everyone",
    "people",
    "look",
    "looks",
    "see",
    "yes",
    "got",
    "get",
    "let",
];

/// The content words of a text: lowercase, 4+ letters, no stopwords, no links or mentions.
pub(crate) fn keywords(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace()
        .filter(|w| !w.starts_with("http") && !w.starts_with('@') && !w.starts_with('<'))
        .flat_map(|w| w.split(|c: char| !c.is_alphanumeric()))
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 4 && w.chars().any(char::is_alphabetic) && !is_stopword(w))
}

/// Whether `word` (lowercase) is one of [`STOPWORDS`]: a set, since every
/// word of every message a look reads is checked.
fn is_stopword(word: &str) -> bool {
    static SET: std::sync::LazyLock<std::collections::HashSet<&'static str>> =
        std::sync::LazyLock::new(|| STOPWORDS.iter().copied().collect());
    SET.contains(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stopword_is_left_out_and_other_words_stay() {
        for w in STOPWORDS {
            assert!(is_stopword(w), "{w}");
        }
        let words: Vec<String> =
            keywords("Anyone seen the Harbour ferry? Because people said: crossing").collect();
        assert_eq!(words, ["seen", "harbour", "ferry", "crossing"]);
    }
}
