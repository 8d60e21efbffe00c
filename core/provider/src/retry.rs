//! Which failed calls are retried, after how long, which pause the provider, and which may fall back to another model, as pure functions (docs/design/providers.md).

use crate::time::Millis;
use regex::Regex;
use std::sync::LazyLock;

/// Why a call failed, as far as retrying and fallback care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The prompt does not fit the model's context: never retried, the budget's 413 path.
    ContextLength,
    /// 429: the provider asked us to slow down.
    RateLimited,
    /// 5xx or 408: the server failed this time.
    ServerError,
    /// 404 naming a model the server does not have.
    ModelNotFound,
    /// 401 or 403: a key problem no retry or other model fixes.
    Auth,
    /// Any other refusal (400, other 4xx, an error event in the stream).
    Rejected,
    /// No connection: refused, reset, DNS.
    Unreachable,
    /// No answer in time.
    Timeout,
    /// The stream broke after text was already shown to clients.
    Interrupted,
    /// 429 asking (`Retry-After`) for a longer wait than `RUMMY_RETRY_CAP_MS`: the provider is
    /// unavailable for longer than a run waits, so the call fails at once instead.
    Throttled,
    /// An answer that is not a completion.
    Malformed,
    /// A reply past `RUMMY_MAX_REPLY_BYTES`, cut off: another try would only repeat it.
    TooLarge,
}

/// Provider messages that mean the prompt is too long (the wordings servers use, plus the OpenAI error code).
static CONTEXT_LENGTH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)context_length_exceeded|\b(context.*(size|length|limit|window)|token.*(limit|exceed)|too.*(long|large))\b",
    )
    .ok()
});

fn mentions_context_length(body: &str) -> bool {
    CONTEXT_LENGTH.as_ref().is_some_and(|re| re.is_match(body))
}

impl Fault {
    /// The fault's name in metrics and logs (`rummy_provider_requests_total{outcome}`).
    pub fn name(self) -> &'static str {
        match self {
            Fault::ContextLength => "context_length",
            Fault::RateLimited => "rate_limited",
            Fault::ServerError => "server_error",
            Fault::ModelNotFound => "model_not_found",
            Fault::Auth => "auth",
            Fault::Rejected => "rejected",
            Fault::Unreachable => "unreachable",
            Fault::Timeout => "timeout",
            Fault::Interrupted => "interrupted",
            Fault::Throttled => "throttled",
            Fault::Malformed => "malformed",
            Fault::TooLarge => "too_large",
        }
    }

    /// The fault an HTTP error status and its body describe.
    pub fn of_status(status: u16, body: &str) -> Fault {
        // A 429's "tokens per minute limit" is about rate, not context, so it is
        // checked before the context-length wording.
        // llama.cpp has answered an over-long prompt with 500, hence the range.
        let too_long = (400..=500).contains(&status) && mentions_context_length(body);
        match status {
            429 => Fault::RateLimited,
            401 | 403 => Fault::Auth,
            413 => Fault::ContextLength,
            _ if too_long => Fault::ContextLength,
            404 if is_model_not_found(body) => Fault::ModelNotFound,
            408 | 500..=599 => Fault::ServerError,
            _ => Fault::Rejected,
        }
    }

    /// The fault an error event inside a stream describes (`code` is its numeric code, if any).
    pub fn of_api_error(code: Option<u16>, message: &str) -> Fault {
        match code {
            Some(status) if status >= 400 => Fault::of_status(status, message),
            _ if mentions_context_length(message) => Fault::ContextLength,
            _ => Fault::Rejected,
        }
    }

    /// Whether the same call may be tried again on the same provider.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            Fault::RateLimited | Fault::ServerError | Fault::Unreachable | Fault::Timeout
        )
    }

    /// Whether the call may be tried once on the model's fallback: transport failures only.
    ///
    /// 5xx, 408, 404 model-not-found, connection refused, DNS, timeout, and a
    /// 429 whose `Retry-After` is past the cap (the provider is as unavailable as
    /// one answering 503). Never auth or bad requests (another model will not fix
    /// them), never a broken stream (clients already saw text), never a rate limit
    /// that is waited out or context length.
    pub fn falls_back(self) -> bool {
        matches!(
            self,
            Fault::ServerError
                | Fault::ModelNotFound
                | Fault::Unreachable
                | Fault::Timeout
                | Fault::Throttled
        )
    }
}

fn is_model_not_found(body: &str) -> bool {
    let lower = body.to_lowercase();
    lower.contains("model_not_found")
        || (lower.contains("model")
            && (lower.contains("not found") || lower.contains("does not exist")))
}

/// Retries of transient failures: capped exponential backoff with jitter, a small budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (`RUMMY_RETRIES`, default 3).
    pub max_retries: u32,
    /// Backoff before the first retry, doubled each time (`RUMMY_RETRY_BASE_MS`, default 1000).
    pub base_ms: u64,
    /// Longest backoff, and longest `Retry-After` honoured (`RUMMY_RETRY_CAP_MS`, default
    /// 30000): a 429 asking for longer fails its call instead of pausing every run.
    pub cap_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_ms: 1000,
            cap_ms: 30_000,
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry number `retry` (1 for the first), given `jitter` in `[0, 1]`.
    ///
    /// "Equal jitter": half of the capped exponential delay is fixed, the
    /// other half scaled by `jitter`, so waits never collapse to zero yet
    /// runs that failed together do not retry together.
    pub fn backoff_ms(&self, retry: u32, jitter: f64) -> u64 {
        let exponent = retry.saturating_sub(1).min(32);
        let full = self
            .base_ms
            .saturating_mul(1u64 << exponent)
            .min(self.cap_ms);
        let half = full / 2;
        let jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        // `half` is at most the cap, far inside f64's exact integers.
        half + ((full - half) as f64 * jitter).round() as u64
    }

    /// How long to wait before retrying, or `None` to give up.
    ///
    /// `retries_done` counts the retries already made; `retry_after_ms` is the
    /// server's `Retry-After`, honoured as given (no jitter) when present and
    /// not longer than the cap.
    pub fn next_delay(
        &self,
        fault: Fault,
        retries_done: u32,
        retry_after_ms: Option<u64>,
        jitter: f64,
    ) -> Option<u64> {
        if !fault.retryable() || retries_done >= self.max_retries {
            return None;
        }
        match retry_after_ms {
            Some(ms) if ms > self.cap_ms => None,
            Some(ms) => Some(ms),
            None => Some(self.backoff_ms(retries_done + 1, jitter)),
        }
    }

    /// What a failed attempt's `Retry-After` asks of the provider's limiter.
    ///
    /// Only a 429 pauses the provider (its limit is every run's); a wait past
    /// the cap pauses nobody — one header must not stall every run of every
    /// project for an hour — and fails that call instead.
    pub fn pause(&self, fault: Fault, retry_after_ms: Option<u64>) -> Pause {
        match (fault, retry_after_ms) {
            (Fault::RateLimited, Some(ms)) if ms > self.cap_ms => Pause::TooLong(ms),
            (Fault::RateLimited, Some(ms)) => Pause::For(ms),
            _ => Pause::Nothing,
        }
    }
}

/// What a failed attempt's `Retry-After` asks of the provider ([`RetryPolicy::pause`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// Nothing: not a 429, or no `Retry-After`.
    Nothing,
    /// Hold every request to the provider for this many milliseconds.
    For(u64),
    /// The provider asked for this many milliseconds, more than the cap: pause nobody, fail the call.
    TooLong(u64),
}

/// A `Retry-After` header in milliseconds from `now`: delta-seconds or an HTTP date (IMF-fixdate).
///
/// Any value saturates rather than overflows: a number of seconds too large
/// for `u64` reads as the longest wait there is.
pub fn retry_after_ms(header: &str, now: Millis) -> Option<u64> {
    let value = header.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(seconds.saturating_mul(1000));
    }
    let at = http_date_ms(value)?;
    Some(u64::try_from(at.saturating_sub(now.0)).unwrap_or(0))
}

/// Parses `Sun, 06 Nov 1994 08:49:37 GMT` to milliseconds since the epoch.
fn http_date_ms(value: &str) -> Option<i64> {
    let mut parts = value.split_whitespace();
    let (_weekday, day, month, year, time, zone) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    if zone != "GMT" || parts.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = i64::try_from(MONTHS.iter().position(|m| *m == month)?).ok()? + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let mut hms = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    // IMF-fixdate's year has four digits; bounding every field keeps the sum far inside i64.
    let fields_valid = (1..=31).contains(&day)
        && (1..=9999).contains(&year)
        && (0..=23).contains(&h)
        && (0..=59).contains(&m)
        && (0..=60).contains(&s);
    if !fields_valid {
        return None;
    }
    Some((days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s) * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests;
