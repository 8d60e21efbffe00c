//! Who may reach the server and what they may touch (TEAM.md §1–§3), as pure decisions over
//! headers, tokens and paths: which browser origins may open a WebSocket, who a connection
//! acts for, and where a project root may be.

pub mod origin;
pub mod principal;
pub mod roots;
