//! Fault classification, retry and fallback eligibility, backoff arithmetic and `Retry-After` parsing.

use super::*;
use pretty_assertions::assert_eq;

/// Each status and body maps to its fault, as the table of `docs/design/providers.md` says.
#[test]
fn statuses_classify() {
    let cases = [
        (
            429,
            "Rate limit reached on tokens per min (TPM): Limit 10000",
            Fault::RateLimited,
        ),
        (401, "bad key", Fault::Auth),
        (403, "forbidden", Fault::Auth),
        (413, "payload too large", Fault::ContextLength),
        (
            400,
            "This model's maximum context length is 8192 tokens",
            Fault::ContextLength,
        ),
        (
            400,
            "the request exceeds the available context size",
            Fault::ContextLength,
        ),
        (
            400,
            r#"{"error":{"code":"context_length_exceeded"}}"#,
            Fault::ContextLength,
        ),
        (500, "context size has been exceeded", Fault::ContextLength),
        (400, "temperature must be at most 2", Fault::Rejected),
        (422, "", Fault::Rejected),
        (
            404,
            r#"{"error":{"code":"model_not_found","message":"nope"}}"#,
            Fault::ModelNotFound,
        ),
        (
            404,
            r#"{"error":"model \"qwen\" not found, try pulling it first"}"#,
            Fault::ModelNotFound,
        ),
        (
            404,
            "The model `gpt-9` does not exist",
            Fault::ModelNotFound,
        ),
        (404, "no such route", Fault::Rejected),
        (408, "", Fault::ServerError),
        (500, "internal", Fault::ServerError),
        (502, "bad gateway", Fault::ServerError),
        (503, "unavailable", Fault::ServerError),
    ];
    for (status, body, expected) in cases {
        assert_eq!(Fault::of_status(status, body), expected, "{status} {body}");
    }
    assert_eq!(
        Fault::of_api_error(Some(502), "upstream"),
        Fault::ServerError
    );
    assert_eq!(
        Fault::of_api_error(None, "prompt is too long"),
        Fault::ContextLength
    );
    assert_eq!(
        Fault::of_api_error(Some(0), "invalid input"),
        Fault::Rejected
    );
}

/// Only transient faults retry; only transport failures fall back.
#[test]
fn retry_and_fallback_eligibility() {
    let table = [
        (Fault::ContextLength, false, false),
        (Fault::RateLimited, true, false),
        (Fault::ServerError, true, true),
        (Fault::ModelNotFound, false, true),
        (Fault::Auth, false, false),
        (Fault::Rejected, false, false),
        (Fault::Unreachable, true, true),
        (Fault::Timeout, true, true),
        (Fault::Interrupted, false, false),
        (Fault::Malformed, false, false),
        (Fault::Throttled, false, true),
        (Fault::TooLarge, false, false),
    ];
    let got: Vec<_> = table
        .iter()
        .map(|(f, _, _)| (*f, f.retryable(), f.falls_back()))
        .collect();
    assert_eq!(got, table.to_vec());
}

/// Backoff doubles from the base, stops at the cap, and jitter moves it within its upper half.
#[test]
fn backoff_is_capped_exponential_with_jitter() {
    let policy = RetryPolicy::default();
    let cases = [
        (1, 0.0, 500),
        (1, 1.0, 1000),
        (2, 0.5, 1500),
        (3, 0.0, 2000),
        (5, 1.0, 16_000),
        (6, 0.0, 15_000),
        (6, 1.0, 30_000),
        (200, 0.25, 18_750),
        (1, f64::NAN, 500),
        (1, 7.0, 1000),
    ];
    for (retry, jitter, expected) in cases {
        assert_eq!(
            policy.backoff_ms(retry, jitter),
            expected,
            "retry {retry}, jitter {jitter}"
        );
    }
}

/// The next delay honours Retry-After, the retry budget and the fault.
#[test]
fn next_delay_decides() {
    let policy = RetryPolicy {
        max_retries: 2,
        ..RetryPolicy::default()
    };
    let cases = [
        (Fault::ServerError, 0, None, Some(500)),
        (Fault::Timeout, 1, None, Some(1000)),
        (Fault::Unreachable, 2, None, None),
        (Fault::RateLimited, 0, Some(1000), Some(1000)),
        (Fault::ServerError, 0, Some(0), Some(0)),
        (Fault::RateLimited, 0, Some(30_000), Some(30_000)),
        (Fault::RateLimited, 0, Some(30_001), None),
        (Fault::RateLimited, 0, Some(3_600_000), None),
        (Fault::RateLimited, 0, Some(u64::MAX), None),
        (Fault::Auth, 0, Some(1000), None),
        (Fault::ContextLength, 0, None, None),
    ];
    for (fault, done, retry_after, expected) in cases {
        assert_eq!(
            policy.next_delay(fault, done, retry_after, 0.0),
            expected,
            "{fault:?} after {done} with {retry_after:?}"
        );
    }
}

/// Only a 429's Retry-After pauses the provider, and only up to the cap; a longer one pauses nobody.
#[test]
fn retry_after_pauses_the_provider_up_to_the_cap() {
    let policy = RetryPolicy {
        cap_ms: 30_000,
        ..RetryPolicy::default()
    };
    let cases = [
        (Fault::RateLimited, None, Pause::Nothing),
        (Fault::RateLimited, Some(0), Pause::For(0)),
        (Fault::RateLimited, Some(1000), Pause::For(1000)),
        (Fault::RateLimited, Some(30_000), Pause::For(30_000)),
        (Fault::RateLimited, Some(30_001), Pause::TooLong(30_001)),
        (
            Fault::RateLimited,
            Some(3_600_000),
            Pause::TooLong(3_600_000),
        ),
        (Fault::RateLimited, Some(u64::MAX), Pause::TooLong(u64::MAX)),
        (Fault::ServerError, Some(1000), Pause::Nothing),
        (Fault::ServerError, Some(3_600_000), Pause::Nothing),
        (Fault::Auth, Some(1000), Pause::Nothing),
    ];
    for (fault, retry_after, expected) in cases {
        assert_eq!(
            policy.pause(fault, retry_after),
            expected,
            "{fault:?} with {retry_after:?}"
        );
    }
}

/// Retry-After is read as seconds or as an HTTP date relative to now, saturating instead of overflowing.
#[test]
fn retry_after_parses() {
    let date_ms = 784_111_777_000;
    let cases = [
        ("1", Millis(0), Some(1000)),
        (" 120 ", Millis(0), Some(120_000)),
        (
            "Sun, 06 Nov 1994 08:49:37 GMT",
            Millis(date_ms - 2500),
            Some(2500),
        ),
        (
            "Sun, 06 Nov 1994 08:49:37 GMT",
            Millis(date_ms + 1),
            Some(0),
        ),
        ("Sun, 06 Nov 1994 08:49:37 PST", Millis(0), None),
        ("Sun, 36 Nov 1994 08:49:37 GMT", Millis(0), None),
        ("3600", Millis(0), Some(3_600_000)),
        ("9999999999999", Millis(0), Some(9_999_999_999_999_000)),
        ("18446744073709551615", Millis(0), Some(u64::MAX)),
        ("99999999999999999999999999", Millis(0), Some(u64::MAX)),
        (
            "Fri, 31 Dec 9999 23:59:59 GMT",
            Millis(0),
            Some(253_402_300_799_000),
        ),
        (
            "Sun, 06 Nov 1994 08:49:37 GMT",
            Millis(i64::MIN),
            Some(i64::MAX as u64),
        ),
        ("Sun, 06 Nov 1994 08:49:37 GMT", Millis(i64::MAX), Some(0)),
        ("Fri, 31 Dec 99999999999 23:59:59 GMT", Millis(0), None),
        ("Fri, 31 Dec 0 23:59:59 GMT", Millis(0), None),
        ("Sun, 06 Nov 1994 -1:49:37 GMT", Millis(0), None),
        ("Sun, 06 Nov 1994 08:-9:37 GMT", Millis(0), None),
        ("", Millis(0), None),
        ("-1", Millis(0), None),
        ("soon", Millis(0), None),
    ];
    for (header, now, expected) in cases {
        assert_eq!(retry_after_ms(header, now), expected, "{header}");
    }
}
