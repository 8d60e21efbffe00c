//! Usage figures summed over rows: the columns `turns` and `sidecar_calls` share, added up the same way.

use rummy_provider::Usage;

/// The usage columns summed, as SQLite answers them (NULL over no rows): prompt, cached,
/// completion, reasoning and total tokens, and cost.
pub(crate) type UsageSums = (
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<f64>,
);

/// The usage a row of sums adds up to, each count clamped to what a `Usage` holds.
pub(crate) fn usage_of((p, c, co, r, t, cost): UsageSums) -> Usage {
    let clamp = |v: Option<i64>| i32::try_from(v.unwrap_or(0)).unwrap_or(i32::MAX);
    Usage {
        prompt_tokens: clamp(p),
        cached_tokens: clamp(c),
        completion_tokens: clamp(co),
        reasoning_tokens: clamp(r),
        total_tokens: clamp(t),
        cost: cost.unwrap_or(0.0),
    }
}
