//! The web page (issue 30): its assets and headers, and `getRun`'s history pages.

mod page;
mod paging;
