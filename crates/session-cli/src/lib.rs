//! `bcs`, the command-line tool of Base Context sessions: inspect, migrate, script and
//! repair sessions.
//!
//! Layer 7 (types → journal → index → context → import → manager → owner → **cli**;
//! `bcs serve` runs the owner). Writes go through `session-manager` (create, append,
//! delete: ownership and locking are the manager's); reads open journals and their
//! indexes read-only (no sidecar is saved by a reading command); import, export and
//! verify use `session-import`, `session-journal` and `session-index` directly.
//!
//! The library exists for the binary (`main.rs` calls [`run`]) and exposes nothing
//! else; the tests drive the built `bcs`. Inside (all private):
//! - `cli` — the clap argument definitions (global `--home`, `--session-dir`).
//! - `location` — where the store is (the layout), `<session>` resolution (id, unique prefix, path) and the
//!   read-only `SessionView` of one session.
//! - `cmd` — one module per group of subcommands (`cmd::owner`: the store's running
//!   owner, which `append`, `new`, `import` and `rm` go through when one answers); `render` — the human renderings;
//!   `out` — stdout/stderr, progress bars only on a terminal.
//! - [`run`] — parse, dispatch, and map errors to one `bcs: ` line and an exit code
//!   (0 success, 1 failure, 2 usage).
//!
//! ```
//! use std::process::ExitCode;
//! // A usage error: one `bcs: ` line on stderr, exit code 2.
//! let code = session_cli::run(["bcs", "no-such-command"].map(Into::into));
//! assert_eq!(code, ExitCode::from(2));
//! ```

// The few items the `testing` feature re-exports are `pub` in private modules; without
// the feature nothing outside reaches them.
#![cfg_attr(not(feature = "testing"), allow(unreachable_pub))]

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod cmd;
mod location;
mod out;
mod render;

/// What the differential fuzzer (`cargo xtask difffuzz` and its replay test) needs of
/// `bcs`: the import and the `tree --json` / `context --json` builders, so it checks
/// exactly what `bcs` answers. Behind the non-default `testing` feature.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::cmd::import::{Imported, import_all};
    pub use crate::cmd::read::{context_json, tree_json};
    pub use crate::location::{Location, SessionView};
    pub use crate::out::Out;
}

use cli::{Cli, Command};
use location::Location;
use out::{Out, one_line};

/// A failure already reported on stderr (or in the output): exit 1, print nothing more.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Reported; just exit 1.
    Quiet,
    /// `bcs serve` lost the election: another owner serves the home. Reported; exit 3.
    AnotherOwner,
}

/// The exit status of `bcs serve` when another owner already serves the home.
pub(crate) const EXIT_ANOTHER_OWNER: u8 = 3;

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Quiet => f.write_str("failed"),
            Failure::AnotherOwner => f.write_str("another owner serves this home"),
        }
    }
}

impl std::error::Error for Failure {}

/// Runs `bcs` with these arguments on the process's stdio; returns the exit code.
pub fn run(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    // `bcs context` in its plain spellings skips building clap's command, a tenth of
    // a cold context's fixed costs; clap reads everything else.
    let parsed = match cli::plain_context(&args) {
        Some(cli) => Ok(cli),
        None => Cli::try_parse_from(args),
    };
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    ExitCode::SUCCESS
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    ExitCode::from(2)
                }
                _ => {
                    // clap's message is a paragraph, then a tip and the usage: keep
                    // the paragraph, on one line.
                    let text = e.render().to_string();
                    let para: Vec<&str> = text
                        .lines()
                        .take_while(|l| !l.trim().is_empty())
                        .map(str::trim)
                        .collect();
                    let msg = para.join(" ");
                    let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
                    eprintln!("bcs: {msg} (see `bcs --help`)");
                    ExitCode::from(2)
                }
            };
        }
    };
    let mut out = Out::stdio();
    match dispatch(cli, &mut out) {
        Ok(()) => match out.flush() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        },
        Err(e) => {
            let failure = e.downcast_ref::<Failure>();
            if failure.is_none() && !is_broken_pipe(&e) {
                eprintln!("bcs: {}", one_line(&error_line(&e)));
            }
            match failure {
                Some(Failure::AnotherOwner) => ExitCode::from(EXIT_ANOTHER_OWNER),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// The error and its causes in one line, each said once: library errors often name
/// their cause in their own message too, which `{:#}` would print a second time
/// ("… failed: No such file or directory (os error 2): No such file or directory …").
pub(crate) fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn dispatch(cli: Cli, out: &mut Out) -> anyhow::Result<()> {
    let explicit = cli.home.is_some() || cli.session_dir.is_some();
    let store = || Location::resolve(cli.home.as_deref(), cli.session_dir.as_deref());
    match &cli.command {
        Command::New(a) => cmd::write::new(&store()?, a, out),
        Command::Append(a) => cmd::write::append(&store()?, a, out),
        Command::List(a) => cmd::read::list(&store()?, a, out),
        Command::Show(a) => cmd::read::show(&store()?, a, out),
        Command::Tree(a) => cmd::read::tree(&store()?, a, out),
        Command::Context(a) => cmd::read::context(&store()?, a, out),
        Command::Import(a) => cmd::import::run(&store()?, a, out),
        Command::Export(a) => cmd::import::export(&store()?, a, out),
        Command::Verify(a) => cmd::verify::run(&store()?, a, out),
        Command::Rm(a) => cmd::write::rm(&store()?, a, out),
        Command::Demo => cmd::demo::run(if explicit { Some(store()?) } else { None }, out),
        Command::Serve(a) => cmd::serve::run(&store()?, a, out),
        Command::Follow(a) => cmd::follow::run(&store()?, a, out),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    /// Wherever the plain reading of `bcs context` answers, clap answers the same; and
    /// it answers the spellings the harness and scripts use.
    #[test]
    fn the_plain_context_reading_is_clap_s() {
        let tokens = [
            "context",
            "--home",
            "--session-dir",
            "--json",
            "--leaf",
            "/h",
            "019c",
            "s p",
            "-x",
            "",
            "--home=/h",
            "--",
            "-h",
            "--help",
            "--version",
            "list",
            "é",
        ];
        let mut answered = 0;
        let mut check = |args: &[&str]| {
            let argv: Vec<std::ffi::OsString> = std::iter::once("bcs")
                .chain(args.iter().copied())
                .map(Into::into)
                .collect();
            if let Some(plain) = crate::cli::plain_context(&argv) {
                answered += 1;
                let clap = Cli::try_parse_from(&argv)
                    .unwrap_or_else(|e| panic!("{args:?}: plain {plain:?}, clap fails: {e}"));
                assert_eq!(format!("{plain:?}"), format!("{clap:?}"), "{args:?}");
            }
        };
        // Every sequence of up to five of the tokens.
        let mut args: Vec<&str> = Vec::new();
        let mut stack = vec![0usize];
        while let Some(top) = stack.last_mut() {
            if *top == tokens.len() || args.len() == 5 {
                stack.pop();
                args.pop();
                continue;
            }
            args.push(tokens[*top]);
            *top += 1;
            check(&args);
            stack.push(0);
        }
        assert!(answered > 200, "{answered}");
        for args in [
            &["--home", "/h", "context", "/h/s.jsonl", "--json"][..],
            &[
                "context",
                "019c",
                "--leaf",
                "ab",
                "--json",
                "--session-dir",
                "/d",
            ],
        ] {
            assert!(
                crate::cli::plain_context(
                    &std::iter::once("bcs")
                        .chain(args.iter().copied())
                        .map(Into::into)
                        .collect::<Vec<_>>()
                )
                .is_some(),
                "{args:?}"
            );
        }
    }

    /// What the crate docs' example showed while these modules were public.
    #[test]
    fn arguments_parse_and_previews_stop_at_the_first_line() {
        let cli = Cli::try_parse_from(["bcs", "--home", "/tmp/h", "tree", "019c", "--json"])
            .expect("valid arguments");
        assert!(matches!(cli.command, Command::Tree(ref a) if a.json && a.session == "019c"));
        assert_eq!(
            crate::render::preview("first line\nsecond", 40),
            "first line…"
        );
    }
}
