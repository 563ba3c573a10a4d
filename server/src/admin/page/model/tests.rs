//! The grid built from real (sans-I/O) SotW machines reporting to a registry, as streams do.

use crate::protocol::machine::StreamMachine;
use crate::protocol::now::tests::now;
use std::sync::Arc;

use xdsloop_proto::{discovery::DiscoveryRequest, type_url::CLUSTER};

use super::*;
use crate::{
    admin::page::grid::{Connection, Filter, MAX_ROWS, glob_match},
    admin::registry::{Publish, Registry, StreamEntry, StreamKind},
    judge::Violation,
    protocol::sotw::SotwStream,
    test_support::{error, node, snapshot, sotw},
};

struct Client {
    machine: SotwStream,
    entry: StreamEntry,
    node: &'static str,
}

impl Client {
    fn open(registry: &Registry, snapshot: Arc<Snapshot>, node: &'static str) -> Self {
        let entry = registry.open(StreamKind::ADS_SOTW, None, None);
        let machine = SotwStream::new(entry.id(), snapshot);
        Self {
            machine,
            entry,
            node,
        }
    }

    fn send(&mut self, mut request: DiscoveryRequest) -> Option<(String, String)> {
        request.node = node(self.node);
        let out = self.machine.on_request_decoded(request, now());
        self.entry.set_node(self.node);
        self.entry.update(self.machine.take_status());
        out.first()
            .map(|r| (r.version_info.clone(), r.nonce.clone()))
    }

    /// Subscribes to every cluster and answers the first push (ACK, or NACK with `reject`).
    fn subscribe(&mut self, reject: Option<&str>) -> String {
        let (version, nonce) = self.send(sotw(CLUSTER, &[], "", "")).unwrap();
        let mut answer = sotw(CLUSTER, &[], &version, &nonce);
        if let Some(message) = reject {
            answer.version_info.clear();
            answer.error_detail = error(message);
        }
        self.send(answer);
        version
    }
}

fn grid(registry: &Registry, snapshot: &Snapshot, generation: u64) -> PageModel {
    build(
        generation,
        &registry.streams(),
        snapshot,
        None,
        registry.counters(),
    )
}

#[test]
fn a_cell_shows_the_worst_stream_of_its_node_with_the_nack_message() {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(CLUSTER, &[("a", "1")])]);
    let mut first = Client::open(&registry, v1.clone(), "n1");
    let served = first.subscribe(None);
    let mut clients = vec![first];
    for (node, reject) in [("n1", None), ("n1", Some("cluster a: bad")), ("n2", None)] {
        let mut client = Client::open(&registry, v1.clone(), node);
        client.subscribe(reject);
        clients.push(client);
    }
    let model = grid(&registry, &v1, 1);
    assert_eq!(model.types, ["cds"]);
    let n1 = &model.rows["n1"].cells[0];
    assert_eq!(n1.state, SyncState::Nacked, "NACKED outranks SYNCED");
    assert_eq!(n1.nack.as_deref(), Some("cluster a: bad"));
    assert_eq!((n1.streams, n1.served.as_str()), (3, served.as_str()));
    assert_eq!(model.rows["n1"].streams.len(), 3);
    let n2 = &model.rows["n2"].cells[0];
    assert_eq!(n2.state, SyncState::Synced);
    assert_eq!(n2.held.as_deref(), Some(served.as_str()));
    assert_eq!(
        (model.rows["n1"].violations, model.rows["n2"].violations),
        (0, 0)
    );
    assert_eq!((model.totals.nodes, model.totals.streams), (2, 4));
    assert_eq!((model.totals.synced, model.totals.nacked), (3, 1));

    let v2 = snapshot(2, &[(CLUSTER, &[("a", "2")])]);
    let moved = grid(&registry, &v2, 2);
    let n2 = &moved.rows["n2"].cells[0];
    assert_eq!(
        n2.state,
        SyncState::Stale,
        "the snapshot moved, nothing pushed yet"
    );
    assert_ne!(n2.served, served);
    assert_eq!(n2.held.as_deref(), Some(served.as_str()));
}

#[test]
fn a_row_counts_the_violations_found_on_its_nodes_streams() {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(CLUSTER, &[("a", "1")])]);
    let mut clients: Vec<Client> = ["n1", "n1", "n2"]
        .iter()
        .map(|node| Client::open(&registry, v1.clone(), node))
        .collect();
    for client in &mut clients {
        client.subscribe(None);
    }
    let violation = |check| Arc::new(Violation::new(check, Some(CLUSTER), "seen".into()));
    for (client, found) in clients.iter().zip([2, 1, 0]) {
        client.entry.publish(&mut Publish {
            violations: (0..found).map(|_| violation("C5.nack-version")).collect(),
            ..Publish::default()
        });
    }
    let model = grid(&registry, &v1, 1);
    assert_eq!(
        (model.rows["n1"].violations, model.rows["n2"].violations),
        (3, 0)
    );
}

#[test]
fn each_connection_gets_the_grid_then_only_the_rows_that_changed() {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(CLUSTER, &[("a", "1")])]);
    let mut web = Client::open(&registry, v1.clone(), "web-1");
    let (version, nonce) = web.send(sotw(CLUSTER, &[], "", "")).unwrap();
    let mut db = Client::open(&registry, v1.clone(), "db-1");
    db.subscribe(None);
    let mut all = Connection::new(Filter::default());
    let mut webs = Connection::new(Filter {
        node: Some("web-*".into()),
        types: None,
    });
    let first = grid(&registry, &v1, 1);
    let (name, event) = all.next(&first);
    assert_eq!((name, event.rows.len()), ("grid", 2));
    let (_, event) = webs.next(&first);
    let nodes: Vec<&str> = event.rows.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(nodes, ["web-1"], "the filter applies");

    web.send(sotw(CLUSTER, &[], &version, &nonce));
    let second = grid(&registry, &v1, 2);
    let (name, event) = all.next(&second);
    assert_eq!(name, "diff");
    let changed: Vec<&str> = event.rows.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(changed, ["web-1"], "db-1 did not change");
    assert_eq!(event.rows[0].cells[0].state, SyncState::Synced);

    drop(db);
    let third = grid(&registry, &v1, 3);
    let (_, event) = all.next(&third);
    assert!(event.rows.is_empty());
    assert_eq!(event.removed, ["db-1"]);
    // This connection skipped the second model (a slow reader): it gets both changes at once.
    let (_, event) = webs.next(&third);
    assert_eq!(event.rows.len(), 1);
    assert_eq!(event.rows[0].cells[0].state, SyncState::Synced);
    assert!(event.removed.is_empty(), "db-1 was never shown to it");
}

#[test]
fn a_grid_of_more_nodes_than_max_rows_is_cut_and_says_so() {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(CLUSTER, &[("a", "1")])]);
    let nodes: Vec<&'static str> = (0..MAX_ROWS + 3)
        .map(|i| &*Box::leak(format!("n{i:04}").into_boxed_str()))
        .collect();
    let _clients: Vec<Client> = nodes
        .iter()
        .map(|n| {
            let mut c = Client::open(&registry, v1.clone(), n);
            c.send(sotw(CLUSTER, &[], "", ""));
            c
        })
        .collect();
    let model = grid(&registry, &v1, 1);
    let (_, event) = Connection::new(Filter::default()).next(&model);
    assert_eq!((event.rows.len(), event.truncated), (MAX_ROWS, 3));
}

#[test]
fn node_globs_match_runs_and_single_characters() {
    assert!(glob_match(b"web-*", b"web-12"));
    assert!(glob_match(b"*-1?", b"web-12"));
    assert!(glob_match(b"*", b""));
    assert!(!glob_match(b"web-?", b"web-12"));
    assert!(!glob_match(b"db*", b"web-1"));
}
