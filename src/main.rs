//! The `rummy` command: the server (`rummy serve`), the demo, and the client of a server; and,
//! started by the server itself, the helper that confines an accepted command.

mod cli;

fn main() -> std::process::ExitCode {
    // The helper must start before anything else of the process (it needs to be the only
    // thread), so it is told apart from the command line here, not by clap.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if rummy_sandbox::is_helper(&args) {
        return rummy_sandbox::helper_main(&args);
    }
    cli::main()
}
