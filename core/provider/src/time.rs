//! Timestamps as integer milliseconds; the domain never reads a clock, callers pass `now` in.

use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as stored in every `*_at` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Millis(pub i64);

impl Millis {
    /// The instant a `SystemTime` names (the epoch for an earlier one); the caller read the clock.
    pub fn from_system_time(time: SystemTime) -> Millis {
        let ms = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        Millis(i64::try_from(ms).unwrap_or(i64::MAX))
    }

    /// The instant as a `SystemTime`, to compare with the times the file system keeps.
    pub fn to_system_time(self) -> SystemTime {
        let ms = Duration::from_millis(self.0.unsigned_abs());
        if self.0 >= 0 {
            UNIX_EPOCH + ms
        } else {
            UNIX_EPOCH - ms
        }
    }

    /// The instant `days` days earlier.
    pub fn days_before(self, days: u32) -> Millis {
        Millis(self.0 - i64::from(days) * 86_400_000)
    }

    /// Renders the instant as RFC 3339 UTC with milliseconds (`2026-11-23T08:27:49.123Z`) for the wire.
    pub fn to_rfc3339(self) -> String {
        let ms = self.0.rem_euclid(1000);
        let secs = self.0.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
            rem / 3600,
            (rem % 3600) / 60,
            rem % 60
        )
    }
}

/// Milliseconds in a day (UTC days have no leap seconds in Unix time).
pub const DAY_MS: i64 = 86_400_000;

/// Converts days since 1970-01-01 to a (year, month, day) in the proleptic Gregorian calendar.
///
/// Howard Hinnant's `civil_from_days`: exact for every i64 day count we can meet,
/// and small enough that a date crate is not worth its build time here.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Converts a (year, month, day) of the proleptic Gregorian calendar to days since
/// 1970-01-01: Howard Hinnant's `days_from_civil`, the inverse of [`civil_from_days`].
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::{civil_from_days, days_from_civil, Millis};

    /// `days_from_civil` undoes `civil_from_days` across leap years, centuries and the epoch.
    #[test]
    fn days_and_dates_round_trip() {
        for days in (-800_000..800_000).step_by(97) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    /// The epoch, a leap day and a late-century instant render as RFC 3339 UTC.
    #[test]
    fn renders_rfc3339_utc() {
        assert_eq!(Millis(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            Millis(951_782_400_123).to_rfc3339(),
            "2000-02-29T00:00:00.123Z"
        );
        assert_eq!(
            Millis(1_795_422_469_007).to_rfc3339(),
            "2026-11-23T08:27:49.007Z"
        );
        assert_eq!(Millis(-1).to_rfc3339(), "1969-12-31T23:59:59.999Z");
    }

    /// Milliseconds and `SystemTime` convert both ways; a time before the epoch reads as the epoch.
    #[test]
    fn converts_to_and_from_system_time() {
        use std::time::{Duration, UNIX_EPOCH};
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(Millis::from_system_time(t), Millis(1_700_000_000_123));
        assert_eq!(Millis(1_700_000_000_123).to_system_time(), t);
        assert_eq!(
            Millis(-5).to_system_time(),
            UNIX_EPOCH - Duration::from_millis(5)
        );
        assert_eq!(
            Millis::from_system_time(UNIX_EPOCH - Duration::from_secs(1)),
            Millis(0)
        );
    }
}
