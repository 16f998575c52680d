//! Regenerates the golden journals: `cargo run -p session-testkit --example write_golden
//! -- crates/session-journal/tests/golden` (what `cargo xtask fixtures` does).

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "crates/session-journal/tests/golden".to_owned());
    for p in session_testkit::golden::write_golden(std::path::Path::new(&dir))? {
        println!("wrote {}", p.display());
    }
    Ok(())
}
