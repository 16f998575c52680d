//! The command line: global options and one struct per subcommand (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// `bcs`: inspect, migrate, script and repair Base Context sessions.
#[derive(Debug, Parser)]
#[command(name = "bcs", version, about, max_term_width = 100)]
pub struct Cli {
    /// The product root (as `BASE_CONTEXT_HOME`; default `~/.base-context`).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// The sessions directory (as `BASE_CONTEXT_SESSION_DIR`; default `<home>/sessions`).
    #[arg(long, global = true, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
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
}

/// A session argument alone.
#[derive(Debug, Args)]
pub struct SessionArg {
    /// A session id, a unique id prefix, or a journal path.
    pub session: String,
}

/// A session argument and `--json`.
#[derive(Debug, Args)]
pub struct SessionJson {
    /// A session id, a unique id prefix, or a journal path.
    pub session: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `bcs new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The session's working directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The session id (default: a new UUIDv7).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
}

/// `bcs append`.
#[derive(Debug, Args)]
pub struct AppendArgs {
    /// A session id, a unique id prefix, or a journal path.
    pub session: String,
    /// Acknowledge once written (survives a process crash) instead of once synced
    /// (survives power loss).
    #[arg(long)]
    pub buffered: bool,
}

/// `bcs list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Every session in the sessions directory.
    #[arg(long, conflicts_with = "cwd")]
    pub all: bool,
    /// Sessions whose working directory is DIR (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `bcs context`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// A session id, a unique id prefix, or a journal path.
    pub session: String,
    /// Build the context at this entry instead of the session's leaf.
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Print the reference's JSON (`{messages, thinkingLevel, model}`).
    #[arg(long)]
    pub json: bool,
}

/// `bcs import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Legacy JSONL files, or directories searched recursively for `*.jsonl`.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub sources: Vec<PathBuf>,
    /// Print one JSON object per source per line.
    #[arg(long)]
    pub json: bool,
}

/// `bcs export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A session id, a unique id prefix, or a journal path.
    pub session: String,
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `bcs verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A session id, a unique id prefix, or a journal path.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub session: Option<String>,
    /// Every session in the sessions directory.
    #[arg(long)]
    pub all: bool,
    /// Repair what can be repaired: cut a torn tail (copied aside first), rebuild a
    /// stale index.
    #[arg(long)]
    pub repair: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
