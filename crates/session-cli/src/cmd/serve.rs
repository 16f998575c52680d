//! `bcs serve`: the session owner (`session-owner`) on the socket or on stdio.

use anyhow::{Context, Result};
use session_owner::{Owner, OwnerOptions, SharedSyncs, serve_stdio, socket};

use crate::Failure;
use crate::cli::ServeArgs;
use crate::location::Location;
use crate::out::Out;

/// `bcs serve [--stdio] [--idle-timeout D] [--separate-syncs]`. On the socket: prints the socket's path
/// once it accepts, serves until idle for the timeout (never with 0), and exits 3
/// (`bcs: …another owner (pid N) is serving this home`) when another owner holds
/// the home's election lock.
pub(crate) fn run(store: &Location, args: &ServeArgs, out: &mut Out) -> Result<()> {
    raise_open_files_limit();
    let layout = store.layout().clone();
    let idle = (!args.idle_timeout.is_zero()).then_some(args.idle_timeout);
    let owner = Owner::new(
        session_manager::Store::new(layout.clone()),
        OwnerOptions::default()
            .with_idle_timeout(idle)
            .with_shared_syncs(!args.separate_syncs),
    );
    if let SharedSyncs::Unavailable(why) = owner.shared_syncs() {
        // Correct either way, only slower with many sessions: worth a word.
        eprintln!("bcs: warning: {why}; each session's journal syncs on its own");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if args.stdio {
        // stdout carries the protocol alone.
        return runtime
            .block_on(serve_stdio(owner))
            .context("serving stdio");
    }
    runtime.block_on(async {
        let bound = match socket::bind(layout.root()).await {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                eprintln!("bcs: {e}");
                return Err(Failure::AnotherOwner.into());
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("{}: binding the owner's socket", layout.root().display())
                });
            }
        };
        out.line(&bound.path().display().to_string())?;
        out.flush()?;
        socket::serve(owner, bound)
            .await
            .context("serving the socket")
    })
}

/// The most descriptors the owner asks for when the hard limit is unlimited (Linux's
/// default `fs.nr_open`).
const OPEN_FILES_CAP: u64 = 1 << 20;

/// Raises the process's soft limit on open files to its hard limit. The owner keeps
/// descriptors for every open session (its journal, its index sidecar's pages read on
/// demand) and every connection; a common default soft limit of 1,024 would stop it
/// at a few hundred sessions, while the hard limit is the administrator's actual
/// bound. Best effort: when the limit cannot be raised, running out of descriptors
/// is answered as before (a failed open is an error to its client; `accept` waits).
fn raise_open_files_limit() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(OPEN_FILES_CAP);
    if limit.current.is_some_and(|soft| soft < hard) {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(hard),
                maximum: limit.maximum,
            },
        );
    }
}
