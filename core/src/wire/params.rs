//! The params of each method, as the server reads them: the protocol's own types
//! ([`rummy_protocol::params`], shared with clients) and what the server makes of them beyond
//! serde — pages clamped to sane bounds.

pub use rummy_protocol::params::*;
pub use rummy_protocol::shape::fields_of;

/// The default page size of list methods.
pub const DEFAULT_LIMIT: i64 = 100;
/// The largest page a list method returns.
pub const MAX_LIMIT: i64 = 1000;

/// A list page's `(limit, offset)` clamped to sane values.
pub fn bounds(page: Page) -> (i64, i64) {
    (
        page.limit.unwrap_or(DEFAULT_LIMIT).clamp(0, MAX_LIMIT),
        page.offset.unwrap_or(0).max(0),
    )
}

/// The history page `getRun` asks for, clamped (`limit` at most 1000); `None`: the whole
/// history.
pub fn history_page(params: &GetRunParams) -> Option<HistoryPage> {
    let limit = params.limit?.clamp(0, MAX_LIMIT);
    let offset = params.offset.unwrap_or(0).max(0);
    Some(HistoryPage {
        limit: usize::try_from(limit).unwrap_or(0),
        offset: usize::try_from(offset).unwrap_or(usize::MAX),
    })
}

/// A page of a run's history, counted from its newest entry (`getRun {limit, offset}`): a
/// client shows the latest work first and reaches back as it scrolls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryPage {
    /// At most this many entries.
    pub limit: usize,
    /// How many of the newest entries to skip.
    pub offset: usize,
}

impl HistoryPage {
    /// The range of a history of `total` entries (oldest first) this page covers.
    pub fn range(self, total: usize) -> std::ops::Range<usize> {
        let end = total.saturating_sub(self.offset);
        end.saturating_sub(self.limit)..end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A history page counts from the newest entry: `offset` newest skipped, then `limit`
    /// before them; past the oldest it is empty, never out of bounds.
    #[test]
    fn a_history_page_counts_from_the_newest_entry() {
        let page = |limit, offset| HistoryPage { limit, offset };
        let table = [
            (page(4, 0), 10, 6..10),
            (page(4, 4), 10, 2..6),
            (page(4, 8), 10, 0..2),
            (page(4, 12), 10, 0..0),
            (page(0, 0), 10, 10..10),
            (page(1000, 0), 3, 0..3),
        ];
        let got: Vec<_> = table.iter().map(|(p, total, _)| p.range(*total)).collect();
        let want: Vec<_> = table.iter().map(|(_, _, r)| r.clone()).collect();
        assert_eq!(got, want);
    }

    /// `limit` is clamped to 1000 and a negative offset to 0; without `limit` there is no page.
    #[test]
    fn a_history_page_is_clamped() {
        let params = |limit, offset| GetRunParams {
            run: "r".into(),
            since_seq: None,
            limit,
            offset,
        };
        assert_eq!(
            (
                history_page(&params(Some(5000), Some(-3))),
                history_page(&params(None, Some(7)))
            ),
            (
                Some(HistoryPage {
                    limit: 1000,
                    offset: 0
                }),
                None
            )
        );
    }
}
