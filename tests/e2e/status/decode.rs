//! A fixture edit the decoder refuses, on a real server: `/status` shows it with its file and
//! line, clients keep getting the last good snapshot, fixing the file recovers, and nothing
//! users see quotes secret material.

use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::{
    app::Running,
    status::{SyncState, remote},
};

use super::{StatusDocument, admin_addr, serving, state, status_until, synced_client};
use crate::harness::*;

/// Every file of `fixtures/invalid`, one after the other, added to a served directory (clusters
/// `a` and `b`, a client synced on CDS) and removed again.
#[tokio::test]
async fn every_invalid_fixture_shows_in_status_and_the_last_good_stays_served() {
    let (dir, server) = serving().await;
    let running = server.running().unwrap();
    let (_watching, good_version) = synced_client(running, "watching").await;
    let synced = |d: &StatusDocument| state(d, "watching", CLUSTER) == Some(SyncState::Synced);
    let generation = status_until(running, "the ACK", synced)
        .await
        .snapshot
        .generation;
    for invalid in INVALID {
        let path = dir.path().join(invalid.file);
        std::fs::copy(invalid.source(), &path).unwrap();

        let doc = status_until(running, invalid.file, |d| !d.reload.ok).await;
        assert_eq!(doc.reload.file.as_deref(), path.to_str());
        invalid.assert_rejection(&path, doc.reload.error.as_deref().unwrap());
        assert_eq!(doc.reload.generation, generation, "still the last good");
        assert_eq!(doc.snapshot.generation, generation);
        assert!(
            synced(&doc),
            "the client on the last good snapshot is still current"
        );
        assert_last_good_is_served(running, &good_version).await;
        let raw = remote::get(&admin_addr(running), "/status").await.unwrap();
        for secret in SECRET_TEXT {
            assert!(!raw.contains(secret), "{}: {raw}", invalid.file);
        }

        std::fs::remove_file(&path).unwrap();
        let doc = status_until(running, "recovery", |d| d.reload.ok).await;
        assert!(doc.reload.file.is_none() && doc.reload.error.is_none());
    }
    server.shutdown().await.unwrap();
}

async fn assert_last_good_is_served(running: &Running, good_version: &str) {
    let mut fresh = SotwClient::connect(running.addr, "fresh").await;
    let response = fresh.subscribe(CLUSTER, &[]).await;
    let mut names = names_in(&response);
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(response.version_info, good_version);
}
