//! The web page (issue 30): `getRun`'s history pages.

mod paging;
