//! `bcs serve`: the session owner (`session-owner`) on the socket or on stdio.

use anyhow::{Context, Result};
use session_owner::{Owner, OwnerOptions, serve_stdio, socket};

use crate::cli::ServeArgs;
use crate::location::Location;
use crate::out::Out;

/// `bcs serve [--stdio]`.
pub(crate) fn run(store: &Location, args: &ServeArgs, out: &mut Out) -> Result<()> {
    let layout = store.layout().clone();
    let owner = Owner::new(
        session_manager::Store::new(layout.clone()),
        OwnerOptions::default(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .build()
        .context("starting the async runtime")?;
    if args.stdio {
        // stdout carries the protocol alone.
        return runtime
            .block_on(serve_stdio(owner))
            .context("serving stdio");
    }
    runtime.block_on(async {
        let bound = socket::bind(layout.root())
            .await
            .with_context(|| format!("{}: binding the owner's socket", layout.root().display()))?;
        out.line(&bound.path().display().to_string())?;
        out.flush()?;
        socket::serve(owner, bound)
            .await
            .context("serving the socket")
    })
}
