//! Who may reach the server and what they may touch (docs/design/team.md), as pure decisions over
//! headers, tokens and paths: which browser origins may open a WebSocket, who a connection
//! acts for, where a project root may be, and the server's own state no root may hold.

pub mod bearer;
pub mod origin;
pub mod roots;
pub mod server_state;
