//! What the server reads of the web: a page's HTML reduced to the text a model reads
//! ([`html::readable`]), and a site's `robots.txt` ([`robots::Robots`]).
//!
//! Both read text from anyone on the web: neither may panic or take more than linear time in
//! what it reads, whatever the input (the fuzz targets hold them to it).

pub mod html;
pub mod robots;
