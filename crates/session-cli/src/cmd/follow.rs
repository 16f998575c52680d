//! `bcs follow SESSION`: each entry of the session, as one JSON line, as it is
//! appended (by any client of the owner), until the owner goes away.
//!
//! It follows through the store's owner (`session/follow`), starting one when none
//! runs. When the owner reports that notifications were dropped (`session/lagged`,
//! or the client's own queue overflowed), it re-reads the session and prints what it
//! has not printed, so nothing is skipped and nothing printed twice (it remembers the
//! ids it printed: a few dozen bytes per entry).

use std::collections::HashSet;

use anyhow::{Context as _, Result, bail};
use session_client::session_protocol::{Notification, ReadLimits, ReadParams, SessionParams, call};
use session_client::{Client, Notice};
use session_types::Entry;

use crate::cli::FollowArgs;
use crate::cmd::owner::Owner;
use crate::location::Location;
use crate::out::{Out, json_line};

/// `bcs follow SESSION [--from-start]`.
pub(crate) fn run(store: &Location, args: &FollowArgs, out: &mut Out) -> Result<()> {
    let path = store.find(&args.session)?;
    let owner = Owner::connect_or_start(store)?;
    let sid = owner.open(store, &path)?;
    let (runtime, client) = owner.parts();
    let mut notices = client
        .notifications()
        .context("the owner's notifications are already taken")?;
    let followed = runtime
        .block_on(client.call::<call::SessionFollow>(SessionParams {
            session_id: sid.clone(),
        }))
        .with_context(|| format!("following session {sid}"))?;
    let mut printer = Printer {
        last: followed.last_entry_id,
        printed: HashSet::new(),
    };
    if args.from_start {
        printer.last = None;
        printer.catch_up(runtime, client, &sid, out)?;
    }
    let mut missed = client.missed_notifications();
    loop {
        let Some(notice) = runtime.block_on(notices.recv()) else {
            bail!("session {sid}: the owner went away");
        };
        // Our client dropped notifications (its queue was full) before this one came:
        // re-read first, so nothing is printed out of order.
        let now = client.missed_notifications();
        if now != missed {
            missed = now;
            out.warn(&format!(
                "session {sid}: notifications were dropped (this reader fell behind); re-reading"
            ));
            printer.catch_up(runtime, client, &sid, out)?;
        }
        match notice {
            Notice::Known(Notification::Appended(p)) if p.session_id == sid => {
                printer.print(&p.entry, out)?;
            }
            Notice::Known(Notification::SessionLagged(p)) if p.session_id == sid => {
                out.warn(&format!(
                    "session {sid}: the owner dropped notifications (this reader fell behind); re-reading"
                ));
                printer.catch_up(runtime, client, &sid, out)?;
            }
            _ => {}
        }
    }
}

/// What has been printed: the last entry, and every id (a notification may bring an
/// entry a re-read printed already).
struct Printer {
    last: Option<String>,
    printed: HashSet<String>,
}

impl Printer {
    fn print(&mut self, entry: &Entry, out: &mut Out) -> Result<()> {
        let id = entry.id().map(str::to_owned);
        if let Some(id) = &id
            && !self.printed.insert(id.clone())
        {
            return Ok(()); // printed already
        }
        let value = serde_json::to_value(entry).context("an entry as JSON")?;
        json_line(out.writer(), &value)?;
        out.flush()?;
        if id.is_some() {
            self.last = id;
        }
        Ok(())
    }

    /// Prints every entry after the last one printed (all, when none was), read
    /// back from the owner.
    fn catch_up(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        client: &Client,
        sid: &str,
        out: &mut Out,
    ) -> Result<()> {
        let all = runtime
            .block_on(client.call::<call::ReadEntries>(ReadParams {
                session_id: sid.to_owned(),
                limits: Some(ReadLimits {
                    max_source_entries: Some(u64::MAX),
                    max_source_bytes: Some(u64::MAX),
                }),
            }))
            .with_context(|| format!("re-reading session {sid}"))?
            .entries;
        let start = match &self.last {
            None => 0,
            Some(last) => all
                .iter()
                .position(|e| e.id() == Some(last.as_str()))
                .map_or(0, |i| i + 1),
        };
        for e in &all[start..] {
            self.print(e, out)?;
        }
        Ok(())
    }
}
