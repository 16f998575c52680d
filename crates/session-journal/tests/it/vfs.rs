//! The standard file system's statuses: `stat_in` (one directory handle, a name at a
//! time) answers exactly as `stat` of each path does.

use std::path::Path;

use session_journal::vfs::{EntryKind, StdVfs, Vfs};

#[cfg(unix)]
#[test]
fn stat_in_answers_as_stat_of_each_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a.jsonl"), b"journal bytes").unwrap();
    std::fs::write(d.join("b.jsonl"), b"").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink(d.join("a.jsonl"), d.join("link.jsonl")).unwrap();
    std::os::unix::fs::symlink(d.join("gone"), d.join("dangling.jsonl")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(d.join("fifo.jsonl"))
        .status()
        .unwrap();
    assert!(status.success());
    let names = [
        "a.jsonl",
        "b.jsonl",
        "sub",
        "link.jsonl",
        "dangling.jsonl",
        "fifo.jsonl",
        "missing.jsonl",
    ];
    let vfs = StdVfs;
    let each = vfs.stat_in(d, &names);
    assert_eq!(each.len(), names.len());
    for (name, got) in names.iter().zip(each) {
        let want = vfs.stat(&d.join(name)).unwrap();
        assert_eq!(got.unwrap(), want, "{name}");
    }
    let kinds: Vec<Option<EntryKind>> = vfs
        .stat_in(d, &names)
        .into_iter()
        .map(|s| s.unwrap().map(|s| s.kind))
        .collect();
    use EntryKind::*;
    assert_eq!(
        kinds,
        [
            Some(File),
            Some(File),
            Some(Dir),
            Some(Symlink),
            Some(Symlink),
            Some(Other),
            None
        ]
    );
    // A directory that is not there: every name says so, nothing panics.
    for got in vfs.stat_in(Path::new("/nonexistent/dir/of/sessions"), &names) {
        assert_eq!(got.unwrap_err().kind(), std::io::ErrorKind::NotFound);
    }
}
