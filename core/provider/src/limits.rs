//! Requests-per-minute and tokens-per-minute buckets and the provider-wide pause a 429 asks for, as integer arithmetic over a `now` passed in.
//!
//! A reservation takes its share at once, even into debt, and answers how
//! long the caller must wait until the share would have been there. So
//! callers that reserve in order also go in order (a fair FIFO), and no
//! caller polls.

use crate::time::Millis;

/// The bucket window: limits are per minute.
const WINDOW_MS: i64 = 60_000;

/// A token bucket refilled continuously at `limit` per minute, holding at most `limit`.
///
/// The level is kept in units of 1/60000 token, so a refill of `limit`
/// tokens per minute adds exactly `limit` units per millisecond and every
/// wait is an exact integer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBucket {
    limit: i64,
    level: i64,
    updated: Millis,
}

impl TokenBucket {
    /// A full bucket of `limit` per minute (a limit of 0 is taken as 1).
    pub fn per_minute(limit: u32, now: Millis) -> TokenBucket {
        let limit = i64::from(limit.max(1));
        TokenBucket {
            limit,
            level: limit * WINDOW_MS,
            updated: now,
        }
    }

    fn refill(&mut self, now: Millis) {
        let elapsed = now.0.saturating_sub(self.updated.0).max(0);
        let capacity = self.limit * WINDOW_MS;
        self.level = self
            .level
            .saturating_add(elapsed.saturating_mul(self.limit))
            .min(capacity);
        self.updated = Millis(self.updated.0.max(now.0));
    }

    /// Takes `cost` (at most a whole minute's worth) and answers the milliseconds until it was covered.
    pub fn reserve(&mut self, now: Millis, cost: u64) -> u64 {
        self.refill(now);
        let cost = i64::try_from(cost).unwrap_or(i64::MAX).min(self.limit);
        self.level -= cost * WINDOW_MS;
        self.wait_ms()
    }

    /// Takes `extra` more (or gives back, when negative) once the real cost is known.
    pub fn adjust(&mut self, now: Millis, extra: i64) {
        self.refill(now);
        let capacity = self.limit * WINDOW_MS;
        let extra = extra.clamp(-self.limit, self.limit) * WINDOW_MS;
        self.level = (self.level - extra).clamp(-capacity, capacity);
    }

    fn wait_ms(&self) -> u64 {
        if self.level >= 0 {
            return 0;
        }
        // Ceiling division: the first whole millisecond at which the debt is paid.
        let debt = -self.level;
        u64::try_from((debt + self.limit - 1) / self.limit).unwrap_or(u64::MAX)
    }
}

/// What a request is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCause {
    /// The requests-per-minute bucket is empty.
    RequestsPerMinute,
    /// The tokens-per-minute bucket is empty.
    TokensPerMinute,
    /// The provider answered 429 with `Retry-After`; everyone waits it out.
    RetryAfter,
}

/// How long a request must wait before it is sent, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// Milliseconds from the reservation.
    pub ms: u64,
    /// The longest of the waits.
    pub cause: WaitCause,
}

/// One provider's rate limits: optional buckets and the pause a 429 set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimits {
    requests: Option<TokenBucket>,
    tokens: Option<TokenBucket>,
    paused_until: Millis,
}

impl RateLimits {
    /// Limits of `rpm` requests and `tpm` tokens per minute; `None` is unlimited.
    pub fn new(rpm: Option<u32>, tpm: Option<u32>, now: Millis) -> RateLimits {
        RateLimits {
            requests: rpm.map(|l| TokenBucket::per_minute(l, now)),
            tokens: tpm.map(|l| TokenBucket::per_minute(l, now)),
            paused_until: now,
        }
    }

    /// Reserves one request of about `tokens` tokens; `None` means send it now.
    pub fn reserve(&mut self, now: Millis, tokens: u64) -> Option<Wait> {
        let paused = self.paused_for(now);
        let requests = self.requests.as_mut().map_or(0, |b| b.reserve(now, 1));
        let tokens = self.tokens.as_mut().map_or(0, |b| b.reserve(now, tokens));
        [
            (paused, WaitCause::RetryAfter),
            (requests, WaitCause::RequestsPerMinute),
            (tokens, WaitCause::TokensPerMinute),
        ]
        .into_iter()
        .filter(|(ms, _)| *ms > 0)
        .max_by_key(|(ms, _)| *ms)
        .map(|(ms, cause)| Wait { ms, cause })
    }

    /// Milliseconds left of a 429 pause; requests already past their reservation check it again before sending.
    pub fn paused_for(&self, now: Millis) -> u64 {
        u64::try_from(self.paused_until.0.saturating_sub(now.0)).unwrap_or(0)
    }

    /// Holds every request of this provider until `until` (the later of two pauses wins).
    pub fn pause_until(&mut self, until: Millis) {
        self.paused_until = self.paused_until.max(until);
    }

    /// Corrects the token bucket once a response reports what the request really cost.
    pub fn settle(&mut self, now: Millis, estimated: u64, actual: u64) {
        if let Some(bucket) = &mut self.tokens {
            let to_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            bucket.adjust(now, to_i64(actual).saturating_sub(to_i64(estimated)));
        }
    }
}

#[cfg(test)]
mod tests;
