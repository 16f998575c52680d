//! Workspace automation. Run `cargo xtask help`.

fn main() -> anyhow::Result<()> {
    anyhow::bail!("no command yet")
}
