//! The command line: global options and one struct per subcommand (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// `bcs`: inspect, migrate, script and repair Base Context sessions.
#[derive(Debug, Parser)]
#[command(name = "bcs", version, about, max_term_width = 100)]
pub(crate) struct Cli {
    /// The product root (as `BASE_CONTEXT_HOME`; default `~/.base-context`).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) home: Option<PathBuf>,
    /// The sessions directory (as `BASE_CONTEXT_SESSION_DIR`; default `<home>/sessions`).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) session_dir: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Create a session and print its id.
    New(NewArgs),
    /// Append JSON lines from stdin (entries with `type`, or messages with `role`);
    /// print each new entry id once acknowledged.
    Append(AppendArgs),
    /// List sessions, newest activity first.
    List(ListArgs),
    /// Show a session's header, name, state, counts, leaf, size and index status.
    Show(SessionJson),
    /// Print a session's tree (the reference's `getTree()` order).
    Tree(SessionJson),
    /// Print the context the model would be sent (`buildSessionContext()`).
    Context(ContextArgs),
    /// Import legacy JSONL sessions (files, or directories searched for `*.jsonl`).
    Import(ImportArgs),
    /// Export a session as v3 plain JSONL.
    Export(ExportArgs),
    /// Check journals and derived files; `--repair` fixes torn tails and stale indexes.
    Verify(VerifyArgs),
    /// Delete a session (journal, derived files, artifacts); refused while owned.
    Rm(SessionArg),
    /// Import the bundled legacy samples into `target/bcs-demo/`, list them, and print
    /// one session's tree and context.
    Demo,
    /// Run the session owner: serve the store's sessions to clients over JSON-RPC
    /// (`docs/rpc.md`) on the Unix socket `<home>/owner/owner.sock` (its path is printed
    /// first), or to one client on stdin/stdout with `--stdio`. When another owner
    /// already serves the home, exit with status 3.
    Serve(ServeArgs),
    /// Print a session's entries as they are appended (one JSON line each), through
    /// the store's owner (started when none runs), until the owner goes away.
    Follow(FollowArgs),
}

/// `bcs follow`.
#[derive(Debug, Args)]
pub(crate) struct FollowArgs {
    /// A session id, a unique id prefix, or a journal path.
    pub(crate) session: String,
    /// Print the session's entries so far first.
    #[arg(long)]
    pub(crate) from_start: bool,
}

/// `bcs serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve one client on stdin and stdout (until stdin ends) instead of the socket.
    #[arg(long)]
    pub(crate) stdio: bool,
    /// Exit after this long with no client and no open session: a number with a unit
    /// (`ms`, `s`, `m`; plain seconds without one); 0 never exits.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub(crate) idle_timeout: std::time::Duration,
    /// Sync each session's journal on its own (`fdatasync`), never several sessions'
    /// journals with one file-system sync (`syncfs`), which also writes back every
    /// other file's pending bytes on that file system.
    #[arg(long)]
    pub(crate) separate_syncs: bool,
}

/// `250ms`, `30s`, `5m`, or plain seconds.
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let (digits, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 300, 30s, 250ms, 5m)"))?;
    match unit {
        "" | "s" => Ok(std::time::Duration::from_secs(n)),
        "ms" => Ok(std::time::Duration::from_millis(n)),
        "m" => Ok(std::time::Duration::from_secs(n.saturating_mul(60))),
        _ => Err(format!("{text:?}: the unit must be ms, s or m")),
    }
}

/// A session argument alone.
#[derive(Debug, Args)]
pub(crate) struct SessionArg {
    /// A session id, a unique id prefix, or a journal path.
    pub(crate) session: String,
}

/// A session argument and `--json`.
#[derive(Debug, Args)]
pub(crate) struct SessionJson {
    /// A session id, a unique id prefix, or a journal path.
    pub(crate) session: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `bcs new`.
#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// The session's working directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// The session id (default: a new UUIDv7).
    #[arg(long, value_name = "ID")]
    pub(crate) id: Option<String>,
}

/// `bcs append`.
#[derive(Debug, Args)]
pub(crate) struct AppendArgs {
    /// A session id, a unique id prefix, or a journal path.
    pub(crate) session: String,
    /// Acknowledge once written (survives a process crash) instead of once synced
    /// (survives power loss).
    #[arg(long)]
    pub(crate) buffered: bool,
}

/// `bcs list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Every session in the sessions directory.
    #[arg(long, conflicts_with = "cwd")]
    pub(crate) all: bool,
    /// Sessions whose working directory is DIR (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `bcs context`.
#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    /// A session id, a unique id prefix, or a journal path.
    pub(crate) session: String,
    /// Build the context at this entry instead of the session's leaf.
    #[arg(long, value_name = "ID")]
    pub(crate) leaf: Option<String>,
    /// Print the reference's JSON (`{messages, thinkingLevel, model}`).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `bcs import`.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// Legacy JSONL files, or directories searched recursively for `*.jsonl`.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub(crate) sources: Vec<PathBuf>,
    /// Print one JSON object per source per line.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `bcs export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// A session id, a unique id prefix, or a journal path.
    pub(crate) session: String,
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// `bcs verify`.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// A session id, a unique id prefix, or a journal path.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub(crate) session: Option<String>,
    /// Every session in the sessions directory.
    #[arg(long)]
    pub(crate) all: bool,
    /// Repair what can be repaired: cut a torn tail (copied aside first), rebuild a
    /// stale index.
    #[arg(long)]
    pub(crate) repair: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `bcs [--home DIR] [--session-dir DIR] context SESSION [--leaf ID] [--json]` (the
/// global options anywhere, every token plain: UTF-8, each option once, no `=`, no
/// value that is empty or starts with `-`) read without clap: what clap reads these
/// arguments as, without building its command first (every subcommand's arguments
/// and help, about 0.15 ms and 30 page faults of a cold `bcs context`, whose whole
/// process takes a few milliseconds). `None` for anything else, which clap reads
/// (help, errors and all). A test compares the two on every shape it accepts.
pub(crate) fn plain_context(args: &[std::ffi::OsString]) -> Option<Cli> {
    let mut it = args.iter().skip(1).map(|a| a.to_str());
    fn value(v: Option<Option<&str>>) -> Option<&str> {
        v.flatten().filter(|v| !v.is_empty() && !v.starts_with('-'))
    }
    let (mut home, mut session_dir, mut context) = (None, None, false);
    let (mut session, mut leaf, mut json) = (None, None, false);
    while let Some(arg) = it.next() {
        match arg? {
            "--home" if home.is_none() => home = Some(PathBuf::from(value(it.next())?)),
            "--session-dir" if session_dir.is_none() => {
                session_dir = Some(PathBuf::from(value(it.next())?));
            }
            "context" if !context => context = true,
            "--leaf" if context && leaf.is_none() => leaf = Some(value(it.next())?.to_owned()),
            "--json" if context && !json => json = true,
            s if context && session.is_none() && !s.is_empty() && !s.starts_with('-') => {
                session = Some(s.to_owned());
            }
            _ => return None,
        }
    }
    Some(Cli {
        home,
        session_dir,
        command: Command::Context(ContextArgs {
            session: session?,
            leaf,
            json,
        }),
    })
}
