//! `bcs`: see the `session_cli` crate docs and `crates/session-cli/README.md`.

fn main() -> std::process::ExitCode {
    session_cli::run(std::env::args_os())
}
