//! Numbers in words people read: `1234567` as `1,234,567`, in sizes told
//! to people and to the model, in every cut marker and in retention's
//! reports. A leaf, so the store, the executive and the senses can share it
//! without using each other.

/// `n` with a comma between each group of three digits.
pub(crate) fn thousands(n: impl std::fmt::Display) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn groups_of_three_from_the_right() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(usize::MAX), "18,446,744,073,709,551,615");
    }
}
