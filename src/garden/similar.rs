//! Finding near-duplicate facts without comparing every pair: MinHash
//! signatures over each fact's keywords, banded (locality-sensitive
//! hashing), so only facts that share a band are compared — and then
//! exactly, with the same keyword Jaccard the memory uses when it stores a
//! fact. Cost grows with the number of facts, not its square.
//!
//! With 4 bands of 3 hashes, a pair at Jaccard 0.8 shares a band with
//! probability 1 − (1 − 0.8³)⁴ ≈ 0.94 and at 0.9 ≈ 0.995; a pair at 0.3
//! only ≈ 0.10 (and is then rejected by the exact check).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

const BANDS: usize = 4;
const ROWS: usize = 3;
/// A band shared by more facts than this (a flood of identical facts) is
/// compared against its first members only, so one bucket cannot go quadratic.
const MAX_BUCKET: usize = 64;

fn hash_with(seed: u64, word: &str) -> u64 {
    let mut h = DefaultHasher::new();
    seed.hash(&mut h);
    word.hash(&mut h);
    h.finish()
}

/// The MinHash signature of a keyword set.
pub(crate) fn signature(words: &BTreeSet<String>) -> [u64; BANDS * ROWS] {
    let mut sig = [u64::MAX; BANDS * ROWS];
    for w in words {
        for (i, slot) in sig.iter_mut().enumerate() {
            *slot = (*slot).min(hash_with(i as u64, w));
        }
    }
    sig
}

/// Candidate pairs (indexes into `items`) that share a band and a `group`
/// (facts are only ever compared within their group, e.g. guild and kind).
pub(crate) fn candidate_pairs<G: Hash + Eq + Clone>(
    items: &[(G, [u64; BANDS * ROWS])],
) -> Vec<(usize, usize)> {
    let mut buckets: HashMap<(G, usize, u64), Vec<usize>> = HashMap::new();
    for (i, (group, sig)) in items.iter().enumerate() {
        for band in 0..BANDS {
            let mut h = DefaultHasher::new();
            sig[band * ROWS..(band + 1) * ROWS].hash(&mut h);
            buckets
                .entry((group.clone(), band, h.finish()))
                .or_default()
                .push(i);
        }
    }
    let mut pairs = Vec::new();
    for members in buckets.values() {
        let members = &members[..members.len().min(MAX_BUCKET)];
        for (x, &a) in members.iter().enumerate() {
            for &b in &members[x + 1..] {
                pairs.push((a, b));
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::keywords::keywords;

    #[test]
    fn near_duplicates_meet_and_strangers_mostly_do_not() {
        let texts = [
            "movie night is every sunday at eight in the lounge channel",
            "movie night is every sunday at eight in the lounge voice channel",
            "ada prefers tabs over spaces in rust code",
            "the server rules forbid posting spoilers without tags",
        ];
        let items: Vec<(u8, _)> = texts
            .iter()
            .map(|t| (0u8, signature(&keywords(t))))
            .collect();
        let pairs = candidate_pairs(&items);
        assert!(pairs.contains(&(0, 1)), "{pairs:?}");
        assert!(!pairs.contains(&(2, 3)), "{pairs:?}");
        let other_group: Vec<(u8, _)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (i as u8, signature(&keywords(t))))
            .collect();
        assert!(
            candidate_pairs(&other_group).is_empty(),
            "groups never meet"
        );
    }
}
