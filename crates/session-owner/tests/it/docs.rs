//! `docs/rpc.md` marks the methods the owner does not serve yet (none now); the marks
//! are true: every example request is served, or answered `-32601` when marked.

use crate::support::*;

const RPC_MD: &str = include_str!("../../../../docs/rpc.md");

#[tokio::test]
async fn the_not_served_marks_of_rpc_md_are_true() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    let mut marked = false;
    let mut checked = 0;
    for line in RPC_MD.lines() {
        if let Some(h) = line.strip_prefix("### `") {
            marked = h.contains("not served yet");
            continue;
        }
        // Requests only: notifications get no answer.
        let request = matches!(
            session_protocol::Incoming::parse(line.as_bytes(), Default::default()),
            Ok(session_protocol::Incoming::Request { .. })
        );
        if !request || line.contains("\"initialize\"") {
            continue;
        }
        c.send_raw(format!("{line}\n").as_bytes()).await;
        let answer = c.recv().await;
        let not_found = answer["error"]["code"] == -32601;
        assert_eq!(not_found, marked, "{line}\n→ {answer}");
        checked += 1;
    }
    assert!(checked > 40, "{checked} examples");
}
