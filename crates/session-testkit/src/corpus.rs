//! The golden corpus's reference oracles: every `<sub>/<name>.context.json` under
//! `tests/fixtures/`, with the input the reference answered for.

use std::io;
use std::path::{Path, PathBuf};

/// One reference oracle of the corpus.
#[derive(Debug, Clone)]
pub struct OracleCase {
    /// The fixture's sub-directory (`legacy`, `edge`, `leniency`, ...).
    pub sub: String,
    /// The fixture's name (its file name without `.jsonl`).
    pub name: String,
    /// The fixture as committed (`<name>.jsonl`).
    pub source: PathBuf,
    /// What the reference built its context from: the file as it left it after
    /// opening (`<name>.after-open.jsonl`: v1/v2 migrated with the reference's ids, a
    /// missing header replaced) when there is one, else [`Self::source`].
    pub input: PathBuf,
    /// The oracle (`<name>.context.json`).
    pub oracle: PathBuf,
}

impl OracleCase {
    /// `<sub>/<name>`, as tests report a case.
    pub fn key(&self) -> String {
        format!("{}/{}", self.sub, self.name)
    }
}

/// Every oracle in `fixtures/<sub>` for each of `subs`, by sub-directory in the order
/// given, then by name.
pub fn oracle_cases(fixtures: &Path, subs: &[&str]) -> io::Result<Vec<OracleCase>> {
    let mut out = Vec::new();
    for sub in subs {
        let dir = fixtures.join(sub);
        let mut names = Vec::new();
        for e in std::fs::read_dir(&dir)? {
            if let Some(name) = e?
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".context.json"))
            {
                names.push(name.to_owned());
            }
        }
        names.sort();
        for name in names {
            let source = dir.join(format!("{name}.jsonl"));
            let migrated = dir.join(format!("{name}.after-open.jsonl"));
            let input = if migrated.exists() {
                migrated
            } else {
                source.clone()
            };
            out.push(OracleCase {
                sub: (*sub).to_owned(),
                oracle: dir.join(format!("{name}.context.json")),
                name,
                source,
                input,
            });
        }
    }
    Ok(out)
}
