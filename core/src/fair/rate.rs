//! The request rate of one connection (`RUMMY_MAX_REQUESTS_PER_SECOND`): a token bucket over a
//! monotonic clock the caller passes in (microseconds since any fixed instant).
//!
//! The bucket holds a second's worth of calls, so a connection may send `per_second` calls at
//! once and then `per_second` a second; a call the bucket cannot cover takes nothing and is
//! told exactly how long until one would pass.

/// One call, in the bucket's units: the bucket gains `per_second` units each microsecond.
const CALL: u64 = 1_000_000;

/// A token bucket of calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateBucket {
    /// Calls per second (at least 1).
    per_second: u64,
    /// What the bucket holds, in units (at most a second's worth).
    level: u64,
    /// When `level` was last brought up to date, in microseconds.
    at_us: u64,
}

impl RateBucket {
    /// A full bucket of `per_second` calls (0 reads as 1), as of `now_us`.
    pub fn new(per_second: u32, now_us: u64) -> RateBucket {
        let per_second = u64::from(per_second.max(1));
        RateBucket {
            per_second,
            level: per_second.saturating_mul(CALL),
            at_us: now_us,
        }
    }

    /// Takes one call at `now_us`; `Err(ms)` when the bucket is empty, with the milliseconds
    /// until a call would pass (rounded up, so a call sent that much later passes). A refused
    /// call takes nothing.
    pub fn take(&mut self, now_us: u64) -> Result<(), u64> {
        let elapsed = now_us.saturating_sub(self.at_us);
        let capacity = self.per_second.saturating_mul(CALL);
        self.level = self
            .level
            .saturating_add(elapsed.saturating_mul(self.per_second))
            .min(capacity);
        self.at_us = self.at_us.max(now_us);
        if self.level >= CALL {
            self.level -= CALL;
            return Ok(());
        }
        let wait_us = (CALL - self.level).div_ceil(self.per_second);
        Err(wait_us.div_ceil(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// `per_second` calls pass at once; the next waits exactly until the bucket covers it,
    /// and passes after that wait (not a microsecond before).
    #[test]
    fn a_burst_of_a_seconds_worth_then_the_exact_wait() {
        let mut bucket = RateBucket::new(4, 0);
        let burst: Vec<_> = (0..5).map(|_| bucket.take(0)).collect();
        assert_eq!(burst, vec![Ok(()), Ok(()), Ok(()), Ok(()), Err(250)]);
        assert_eq!(bucket.take(249_999), Err(1));
        assert_eq!(bucket.take(250_000), Ok(()));
        assert_eq!(bucket.take(250_000), Err(250));
    }

    /// Waits are rounded up to whole milliseconds from the bucket's own arithmetic.
    #[test]
    fn waits_round_up_to_the_millisecond() {
        let table: [(u32, u64, Result<(), u64>); 4] = [
            // 3 a second: one call every 333.33 ms.
            (3, 0, Err(334)),
            (3, 100_000, Err(234)),
            // 1,000 a second: one call a millisecond.
            (1000, 0, Err(1)),
            (1000, 1_000, Ok(())),
        ];
        for (per_second, later_us, expected) in table {
            let mut bucket = RateBucket::new(per_second, 0);
            for _ in 0..per_second {
                assert_eq!(bucket.take(0), Ok(()));
            }
            assert_eq!(
                bucket.take(later_us),
                expected,
                "{per_second}/s at {later_us} µs"
            );
        }
    }

    /// An idle connection earns back at most a second's worth; a clock read out of order
    /// never refills or panics.
    #[test]
    fn refills_to_a_seconds_worth_and_tolerates_an_earlier_reading() {
        let mut bucket = RateBucket::new(2, 0);
        assert_eq!(bucket.take(0), Ok(()));
        assert_eq!(bucket.take(0), Ok(()));
        let after_a_minute: Vec<_> = (0..3).map(|_| bucket.take(60_000_000)).collect();
        assert_eq!(after_a_minute, vec![Ok(()), Ok(()), Err(500)]);
        assert_eq!(bucket.take(10), Err(500));
        assert_eq!(
            RateBucket::new(0, 0).take(0),
            Ok(()),
            "0 reads as 1 a second"
        );
    }
}
