//! Acknowledged durable appends survive power loss (the simulated file system's
//! crash), and a batch of them shares one sync.

use std::sync::Arc;

use session_manager::{Layout, Sources, Store};
use session_owner::{Owner, OwnerOptions};
use session_protocol::*;
use session_testkit::sim::SimFs;

use crate::support::*;

const ROOT: &str = "/sim/home";

fn sim_store(fs: &SimFs) -> Store {
    Store::new(Layout::with_root(ROOT).expect("absolute"))
        .with_sources(Sources::deterministic(T0, 3))
        .with_vfs(Arc::new(fs.clone()))
}

/// Appends `texts` through the owner (each acknowledged before the next is sent),
/// crashes the machine, and returns what the journal holds afterwards.
async fn append_then_power_loss(seed: u64, durability: Durability) -> (Vec<String>, Vec<String>) {
    let fs = SimFs::new();
    let owner = Owner::new(sim_store(&fs), OwnerOptions::default());
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    let texts: Vec<String> = (0..3).map(|i| format!("m{i}")).collect();
    for t in &texts {
        c.call::<call::AppendMessage>(append(&s.session_id, t, Some(durability)))
            .await
            .expect("acknowledged");
    }
    fs.crash(seed);
    let back = texts_in(&sim_store(&fs), &s.session_file);
    (texts, back)
}

#[tokio::test]
async fn acknowledged_durable_appends_survive_power_loss() {
    for seed in 0..16 {
        let (sent, back) = append_then_power_loss(seed, Durability::Durable).await;
        assert_eq!(back, sent, "seed {seed}");
    }
}

#[tokio::test]
async fn buffered_appends_can_be_lost_which_is_why_durable_is_the_default() {
    // The crash model must be able to lose what was not synced, or the test above
    // would prove nothing.
    let mut lost = 0;
    for seed in 0..16 {
        let (sent, back) = append_then_power_loss(seed, Durability::Buffered).await;
        assert!(
            sent.starts_with(&back),
            "a prefix survives, seed {seed}: {back:?}"
        );
        lost += usize::from(back.len() < sent.len());
    }
    assert!(lost > 0, "no seed lost an unsynced append");
}
