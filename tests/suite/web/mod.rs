//! The web page (issue 30): its assets and headers, `getRun`'s history pages, and the page
//! driven in a real browser.

mod browser;
mod page;
mod paging;
mod shapes;
mod watching;
