//! Made-up words for benchmark data: distinct, pronounceable, deterministic.

pub fn word(i: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "ta", "vi", "so", "pe", "du", "gra", "bel", "tor", "sin",
        "fal", "qua",
    ];
    let mut w = String::new();
    let mut n = i + 17;
    while n > 0 {
        w.push_str(SYLLABLES[n % 16]);
        n /= 16;
    }
    w
}
