//! Token buckets and the 429 pause as arithmetic over an injected clock: no test waits.

use super::*;
use pretty_assertions::assert_eq;

/// Successive reservations on one bucket answer exact waits, refilling with time but never past the limit.
#[test]
fn bucket_waits_are_exact() {
    /// Name, limit per minute, `(now, cost)` reservations, expected waits.
    type Case = (&'static str, u32, Vec<(i64, u64)>, Vec<u64>);
    let cases: [Case; 6] = [
        (
            "60/min: a full minute goes at once, then one per second",
            60,
            [vec![(0, 1); 60], vec![(0, 1), (0, 1), (1500, 1)]].concat(),
            [vec![0; 60], vec![1000, 2000, 1500]].concat(),
        ),
        (
            "a request bigger than the bucket waits for a full bucket, not forever",
            1000,
            vec![(0, 5000), (0, 1000)],
            vec![0, 60_000],
        ),
        (
            "an idle hour refills to the limit only",
            10,
            [vec![(0, 10)], vec![(3_600_000, 1); 11]].concat(),
            [vec![0], vec![0; 10], vec![6000]].concat(),
        ),
        (
            "uneven rates round the wait up to a whole millisecond",
            7,
            [vec![(0, 1); 7], vec![(0, 1)]].concat(),
            [vec![0; 7], vec![8572]].concat(),
        ),
        (
            "a clock that steps back neither refills nor panics",
            1,
            vec![(1000, 1), (500, 1)],
            vec![0, 60_000],
        ),
        (
            "zero cost never waits on a full bucket",
            1,
            vec![(0, 0), (0, 0)],
            vec![0, 0],
        ),
    ];
    for (name, limit, steps, expected) in cases {
        let mut bucket = TokenBucket::per_minute(limit, Millis(steps[0].0));
        let waits: Vec<u64> = steps
            .iter()
            .map(|(now, cost)| bucket.reserve(Millis(*now), *cost))
            .collect();
        assert_eq!(waits, expected, "{name}");
    }
}

/// One step of a rate-limits scenario.
#[derive(Debug)]
enum Step {
    /// Reserve at `now` for `tokens`, expecting this wait.
    Reserve(i64, u64, Option<Wait>),
    /// A 429 asked everyone to wait until then.
    Pause(i64),
    /// The response at `now` reported the real token count.
    Settle(i64, u64, u64),
    /// The pause left at `now`.
    PausedFor(i64, u64),
}

fn wait(ms: u64, cause: WaitCause) -> Option<Wait> {
    Some(Wait { ms, cause })
}

/// Scenarios over requests, tokens and pauses give the expected waits and causes.
#[test]
fn rate_limit_scenarios() {
    use Step::*;
    use WaitCause::*;
    /// Name, requests per minute, tokens per minute, steps.
    type Scenario = (&'static str, Option<u32>, Option<u32>, Vec<Step>);
    let cases: [Scenario; 6] = [
        (
            "unlimited never waits",
            None,
            None,
            vec![Reserve(0, 1_000_000, None), Reserve(0, 1_000_000, None)],
        ),
        (
            "requests per minute",
            Some(2),
            Some(100),
            vec![
                Reserve(0, 10, None),
                Reserve(0, 10, None),
                Reserve(0, 10, wait(30_000, RequestsPerMinute)),
            ],
        ),
        (
            "tokens per minute, the longer wait wins",
            Some(600),
            Some(100),
            vec![
                Reserve(0, 80, None),
                Reserve(0, 80, wait(36_000, TokensPerMinute)),
            ],
        ),
        (
            "settling gives back an overestimate and takes an underestimate",
            None,
            Some(600),
            vec![
                Reserve(0, 500, None),
                Settle(0, 500, 100),
                Reserve(0, 500, None),
                Settle(0, 500, 700),
                Reserve(0, 0, wait(20_000, TokensPerMinute)),
            ],
        ),
        (
            "a 429 pause holds everyone; an earlier pause does not shorten it",
            Some(1000),
            None,
            vec![
                Pause(1000),
                Pause(400),
                PausedFor(400, 600),
                Reserve(0, 1, wait(1000, RetryAfter)),
                Reserve(1000, 1, None),
                PausedFor(2000, 0),
            ],
        ),
        (
            "a pause at the end of time, read from any clock, neither overflows nor wraps",
            None,
            None,
            vec![
                Pause(i64::MAX),
                PausedFor(i64::MIN, i64::MAX as u64),
                PausedFor(i64::MAX, 0),
                Reserve(0, 1, wait(i64::MAX as u64, RetryAfter)),
            ],
        ),
    ];
    for (name, rpm, tpm, steps) in cases {
        let mut limits = RateLimits::new(rpm, tpm, Millis(0));
        for step in &steps {
            match step {
                Reserve(now, tokens, expected) => {
                    assert_eq!(
                        limits.reserve(Millis(*now), *tokens),
                        *expected,
                        "{name}: {step:?}"
                    );
                }
                Pause(until) => limits.pause_until(Millis(*until)),
                Settle(now, estimated, actual) => limits.settle(Millis(*now), *estimated, *actual),
                PausedFor(now, expected) => {
                    assert_eq!(
                        limits.paused_for(Millis(*now)),
                        *expected,
                        "{name}: {step:?}"
                    );
                }
            }
        }
    }
}
