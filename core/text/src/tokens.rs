//! The fast token estimate: `ceil(chars / divisor)`, used for display and budgeting.

/// Estimates the tokens of `text` as `ceil(chars / divisor)`; empty text costs nothing.
///
/// Characters are Unicode scalar values, so the estimate does not depend on
/// how a client encodes text; a divisor of 0 is treated as 1.
pub fn estimate(text: &str, divisor: u32) -> i32 {
    let chars = text.chars().count() as u64;
    let divisor = u64::from(divisor.max(1));
    i32::try_from(chars.div_ceil(divisor)).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::estimate;

    /// Rounds up per character, counts multi-byte characters once, and never divides by zero.
    #[test]
    fn rounds_up_per_character() {
        assert_eq!(estimate("", 2), 0);
        assert_eq!(estimate("a", 2), 1);
        assert_eq!(estimate("abcd", 2), 2);
        assert_eq!(estimate("abcde", 2), 3);
        assert_eq!(estimate("ééé", 2), 2);
        assert_eq!(estimate("abc", 0), 3);
    }
}
