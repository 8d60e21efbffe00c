//! The `rummy` command: the server (`rummy serve`), the demo, and the client of a server.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
