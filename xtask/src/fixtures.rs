//! `cargo xtask fixtures`: placeholder, filled in by the lead.

use anyhow::Result;

pub(crate) fn run(_args: &[String]) -> Result<()> {
    Ok(())
}
