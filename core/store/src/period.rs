//! The period a project's cost ceiling sums spending over: a calendar month or a day, in UTC.

use rummy_provider::time::{civil_from_days, days_from_civil, Millis, DAY_MS};

/// Over what a project's cost ceiling is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CostPeriod {
    /// The calendar month (UTC): spending starts again at 00:00 UTC on the 1st.
    #[default]
    Month,
    /// The day (UTC): spending starts again at 00:00 UTC.
    Day,
}

impl CostPeriod {
    /// Every period, in the order the protocol lists them.
    pub const ALL: [CostPeriod; 2] = [CostPeriod::Month, CostPeriod::Day];

    /// The wire (and stored) name.
    pub fn as_str(self) -> &'static str {
        match self {
            CostPeriod::Month => "month",
            CostPeriod::Day => "day",
        }
    }

    /// The period of a wire or stored name.
    pub fn parse(name: &str) -> Option<CostPeriod> {
        CostPeriod::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// When the period holding `now` began.
    pub fn start(self, now: Millis) -> Millis {
        let day = now.0.div_euclid(DAY_MS);
        match self {
            CostPeriod::Day => Millis(day * DAY_MS),
            CostPeriod::Month => {
                let (y, m, _) = civil_from_days(day);
                Millis(days_from_civil(y, m, 1) * DAY_MS)
            }
        }
    }

    /// When the period after the one holding `now` begins.
    pub fn next_start(self, now: Millis) -> Millis {
        let day = now.0.div_euclid(DAY_MS);
        match self {
            CostPeriod::Day => Millis((day + 1) * DAY_MS),
            CostPeriod::Month => {
                let (y, m, _) = civil_from_days(day);
                let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                Millis(days_from_civil(y, m, 1) * DAY_MS)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn at(rfc3339: &str) -> Millis {
        // Test inputs only: "YYYY-MM-DDTHH:MM:SS.mmmZ".
        let n = |range: std::ops::Range<usize>| rfc3339[range].parse::<i64>().unwrap();
        let days = days_from_civil(n(0..4), n(5..7), n(8..10));
        Millis(days * DAY_MS + ((n(11..13) * 60 + n(14..16)) * 60 + n(17..19)) * 1000 + n(20..23))
    }

    /// A period starts at 00:00 UTC of its first day and ends where the next begins: across a
    /// year's end, a leap February, the last millisecond of a month, and before 1970.
    #[test]
    fn periods_start_and_end_on_utc_calendar_boundaries() {
        let table = [
            (
                CostPeriod::Month,
                "2026-11-25T08:27:49.007Z",
                "2026-11-01T00:00:00.000Z",
                "2026-12-01T00:00:00.000Z",
            ),
            (
                CostPeriod::Month,
                "2026-12-31T23:59:59.999Z",
                "2026-12-01T00:00:00.000Z",
                "2027-01-01T00:00:00.000Z",
            ),
            (
                CostPeriod::Month,
                "2028-02-29T12:00:00.000Z",
                "2028-02-01T00:00:00.000Z",
                "2028-03-01T00:00:00.000Z",
            ),
            (
                CostPeriod::Month,
                "2027-03-01T00:00:00.000Z",
                "2027-03-01T00:00:00.000Z",
                "2027-04-01T00:00:00.000Z",
            ),
            (
                CostPeriod::Month,
                "1969-12-15T00:00:00.000Z",
                "1969-12-01T00:00:00.000Z",
                "1970-01-01T00:00:00.000Z",
            ),
            (
                CostPeriod::Day,
                "2026-11-25T08:27:49.007Z",
                "2026-11-25T00:00:00.000Z",
                "2026-11-26T00:00:00.000Z",
            ),
            (
                CostPeriod::Day,
                "2026-12-31T23:59:59.999Z",
                "2026-12-31T00:00:00.000Z",
                "2027-01-01T00:00:00.000Z",
            ),
            (
                CostPeriod::Day,
                "1969-12-31T23:00:00.000Z",
                "1969-12-31T00:00:00.000Z",
                "1970-01-01T00:00:00.000Z",
            ),
        ];
        for (period, now, start, next) in table {
            assert_eq!(
                (
                    period.start(at(now)).to_rfc3339(),
                    period.next_start(at(now)).to_rfc3339()
                ),
                (start.to_owned(), next.to_owned()),
                "{period:?} at {now}"
            );
        }
    }

    /// Names round-trip; anything else is not a period; a month is the default.
    #[test]
    fn names() {
        for period in CostPeriod::ALL {
            assert_eq!(CostPeriod::parse(period.as_str()), Some(period));
        }
        assert_eq!(CostPeriod::parse("week"), None);
        assert_eq!(CostPeriod::default(), CostPeriod::Month);
    }
}
