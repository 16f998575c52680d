//! Output: stdout for results (text or JSON), stderr for warnings and progress.
//! Progress bars are drawn only when stderr is a terminal.

use std::io::{IsTerminal, Write};

use anyhow::{Context as _, Result};
use serde_json::Value;

/// Where a command prints.
pub struct Out {
    stdout: Box<dyn Write>,
    stderr_tty: bool,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Out")
            .field("stderr_tty", &self.stderr_tty)
            .finish_non_exhaustive()
    }
}

impl Out {
    /// The process's stdout and stderr.
    pub fn stdio() -> Self {
        Self {
            stdout: Box::new(std::io::stdout()),
            stderr_tty: std::io::stderr().is_terminal(),
        }
    }

    /// One line of text.
    pub(crate) fn line(&mut self, s: &str) -> Result<()> {
        writeln!(self.stdout, "{s}").context("cannot write to stdout")
    }

    /// Text as is.
    pub(crate) fn text(&mut self, s: &str) -> Result<()> {
        self.stdout
            .write_all(s.as_bytes())
            .context("cannot write to stdout")
    }

    /// One JSON value on one line, numbers spelled as `JSON.stringify` spells them
    /// (every `--json` output goes through here).
    pub(crate) fn json(&mut self, v: &Value) -> Result<()> {
        json_line(&mut self.stdout, v).context("cannot write to stdout")
    }

    /// [`json`](Self::json) of a context, written as it is serialized (no JSON value
    /// built first): the same bytes as `json` of its `to_reference_json`.
    pub(crate) fn json_context(&mut self, v: &session_context::SessionContext<'_>) -> Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut self.stdout);
        session_types::js::stringify::write(&mut w, v)
            .and_then(|()| w.write_all(b"\n"))
            .and_then(|()| w.flush())
            .context("cannot write to stdout")
    }

    /// [`json`](Self::json) of a listing: an array of the reference's `SessionInfo`,
    /// written as it is serialized (no JSON value built per session).
    pub(crate) fn json_sessions(&mut self, rows: &[session_index::SessionInfo]) -> Result<()> {
        buffered_line(&mut self.stdout, |w| {
            session_types::js::stringify::to_writer(w, rows)
        })
        .context("cannot write to stdout")
    }

    /// Standard output as a writer, for streams of raw bytes.
    pub(crate) fn writer(&mut self) -> &mut dyn Write {
        &mut self.stdout
    }

    /// Flushes stdout (an acknowledgement is visible once this returns).
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.stdout.flush().context("cannot write to stdout")
    }

    /// A warning on stderr (`bcs: warning: …`), one line.
    pub(crate) fn warn(&self, s: &str) {
        eprintln!("bcs: warning: {}", one_line(s));
    }
}

/// Writes `v` compactly on one line as the reference's `JSON.stringify` would:
/// numbers as JavaScript doubles (`1.0` → `1`, `-0` → `0`, `1e21` → `1e+21`).
pub(crate) fn json_line(out: &mut dyn Write, v: &Value) -> std::io::Result<()> {
    buffered_line(out, |w| session_types::js::stringify::to_writer(w, v))
}

/// What `write` writes, then a newline, through a 64 KiB buffer: stdout's own is a
/// line buffer of 1 KiB, so a listing of thousands of sessions would otherwise be
/// thousands of `write` calls.
fn buffered_line(
    out: &mut dyn Write,
    write: impl FnOnce(&mut dyn Write) -> serde_json::Result<()>,
) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    write(&mut w).map_err(std::io::Error::other)?;
    w.write_all(b"\n")?;
    w.flush()
}

/// `s` with line breaks replaced by spaces, so every message is one line.
pub(crate) fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// `<path>: <what>: <error>`, naming the path once: a library error that already
/// starts with the path has that prefix dropped.
pub(crate) fn at_path(
    path: &std::path::Path,
    what: &str,
    e: impl std::fmt::Display,
) -> anyhow::Error {
    let shown = path.display().to_string();
    let text = e.to_string();
    let text = text
        .strip_prefix(&shown)
        .and_then(|t| t.strip_prefix(": "))
        .unwrap_or(&text);
    anyhow::anyhow!("{shown}: {what}: {text}")
}

/// A progress bar on stderr, drawn only when stderr is a terminal and there is more
/// than one item.
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// A bar for `total` items.
    pub(crate) fn new(out: &Out, total: u64, what: &str) -> Self {
        if !out.stderr_tty || total < 2 {
            return Self(None);
        }
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {wide_msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(what.to_owned());
        Self(Some(bar))
    }

    /// One more item done.
    pub(crate) fn inc(&self) {
        if let Some(b) = &self.0 {
            b.inc(1);
        }
    }

    /// The current item's name.
    pub(crate) fn message(&self, m: &str) {
        if let Some(b) = &self.0 {
            b.set_message(m.to_owned());
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}
