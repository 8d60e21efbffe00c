//! The parser's work, counted in bytes looked at (by xmlparser and by the parser's own
//! scans), so that a test can hold it linear in the reply's size without timing anything.
//! Outside tests the count compiles to nothing.

#[cfg(test)]
thread_local! {
    static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `n` bytes looked at.
#[inline(always)]
pub(crate) fn add(n: usize) {
    #[cfg(test)]
    STEPS.with(|s| s.set(s.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
}

/// The count since the last take, reset (this thread's).
#[cfg(test)]
pub(crate) fn take() -> u64 {
    STEPS.with(|s| s.replace(0))
}
