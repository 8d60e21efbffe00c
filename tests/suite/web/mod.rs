//! The web page: its assets and headers and `getRun`'s history pages (the page in a
//! real browser is the `needs` binary's `browser` test).

mod page;
mod paging;
