//! The shared-entry encoding decodes (with prost) to exactly the message the plain path builds.

use crate::protocol::machine::StreamMachine;
use crate::protocol::now::tests::now;
use std::collections::BTreeMap;

use bytes::Bytes;
use xdsloop_proto::{
    discovery::{DiscoveryRequest, Node},
    type_url::{CLUSTER, ENDPOINT},
};

use super::*;
use crate::snapshot::TypeResources;
use crate::{
    protocol::delta::DeltaStream,
    protocol::sotw::{SotwStream, control_plane},
    test_support::{resource, snapshot},
};
use xdsloop_proto::{
    Resource,
    discovery::{Any, WireResource},
};

fn plain_any(url: &str, r: &Resource) -> Any {
    Any {
        type_url: url.into(),
        value: r.bytes.to_vec(),
    }
}

fn sample() -> TypeResources {
    let picked = [("a", "1"), ("b", "2"), ("c", "3")];
    let map: BTreeMap<String, std::sync::Arc<Resource>> = picked
        .iter()
        .map(|(n, v)| (n.to_string(), resource(CLUSTER, n, v)))
        .collect();
    TypeResources::new(map, Some("v7".into()))
}

#[test]
fn sotw_wire_bytes_decode_to_the_plain_response() {
    let all = sample();
    let picked: Vec<&Resource> = all.resources.values().map(|r| r.as_ref()).collect();
    let head = DiscoveryResponse {
        version_info: "v7".into(),
        type_url: CLUSTER.into(),
        nonce: "n-1".into(),
        control_plane: Some(control_plane()),
        ..Default::default()
    };
    let mut plain = head.clone();
    plain.resources = picked.iter().map(|r| plain_any(CLUSTER, r)).collect();
    let out = Outbound {
        head,
        entries: all.sotw_entries(CLUSTER, picked.iter().copied(), false),
        manifest: Manifest::Unknown,
    };
    let mut wire = Vec::new();
    out.encode(&mut wire);
    assert_eq!(wire.len(), out.encoded_len());
    assert_eq!(DiscoveryResponse::decode(wire.as_slice()).unwrap(), plain);
    // Same size as prost's own encoding: only the field order differs.
    assert_eq!(wire.len(), plain.encode_to_vec().len());
}

#[test]
fn delta_wire_bytes_decode_to_the_plain_response() {
    let all = sample();
    let picked: Vec<&Resource> = all.resources.values().skip(1).map(|r| r.as_ref()).collect();
    let head = DeltaDiscoveryResponse {
        system_version_info: "v7".into(),
        type_url: CLUSTER.into(),
        removed_resources: vec!["gone".into()],
        nonce: "n-2".into(),
        control_plane: Some(control_plane()),
        ..Default::default()
    };
    let mut plain = head.clone();
    plain.resources = picked
        .iter()
        .map(|r| WireResource {
            name: r.name.clone(),
            version: r.version.clone(),
            resource: Some(plain_any(CLUSTER, r)),
            ..Default::default()
        })
        .collect();
    let out = Outbound {
        head,
        entries: all.delta_entries(CLUSTER, picked.iter().copied()),
        manifest: Manifest::Unknown,
    };
    assert_eq!(out.to_message(), plain);
}

#[test]
fn entries_are_encoded_once_and_shared_by_every_stream() {
    let all = sample();
    let a = all.sotw_entries(CLUSTER, all.resources.values().map(|r| r.as_ref()), false);
    let b = all.sotw_entries(CLUSTER, all.resources.values().map(|r| r.as_ref()), false);
    // The same allocation, not an equal copy.
    assert!(a.iter().zip(&b).all(|(x, y)| x.as_ptr() == y.as_ptr()));
    // Another type URL is stamped into its own entries (S1), not served from the cache.
    let other = all.sotw_entries(ENDPOINT, all.resources.values().map(|r| r.as_ref()), false);
    let decoded = Outbound {
        head: DiscoveryResponse::default(),
        entries: other,
        manifest: Manifest::Unknown,
    }
    .to_message();
    assert!(decoded.resources.iter().all(|a| a.type_url == ENDPOINT));
}

#[test]
fn streams_of_one_fleet_share_the_resource_bytes() {
    let snap = snapshot(1, &[(CLUSTER, &[("c1", "1"), ("c2", "1")])]);
    let request = DiscoveryRequest {
        type_url: CLUSTER.into(),
        node: Some(Node {
            id: "n".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut one = SotwStream::new(1, snap.clone());
    let mut two = SotwStream::new(2, snap.clone());
    let a = one.on_request(request.clone().into(), now()).remove(0);
    let b = two.on_request(request.into(), now()).remove(0);
    assert_ne!(a.head.nonce, b.head.nonce);
    // Both resources in one buffer, the same allocation for both streams.
    assert_eq!(a.entries.len(), 1);
    assert_eq!(a.entries[0].as_ptr(), b.entries[0].as_ptr());
    assert_eq!(a.to_message().resources.len(), 2);
    let mut delta = DeltaStream::new(3, snap);
    let d = delta
        .on_request(
            xdsloop_proto::discovery::DeltaDiscoveryRequest {
                type_url: CLUSTER.into(),
                node: Some(Node {
                    id: "n".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            now(),
        )
        .remove(0);
    let names: Vec<String> = d
        .to_message()
        .resources
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["c1", "c2"]);
    let _: Bytes = d.entries[0].clone();
}

/// `count` clusters whose entries together are well over the size the transport copies.
fn large(count: usize) -> Arc<crate::snapshot::Snapshot> {
    let names: Vec<String> = (0..count).map(|i| format!("cluster-{i:03}")).collect();
    let list: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "1")).collect();
    snapshot(1, &[(CLUSTER, &list)])
}

fn delta_wildcard(stream: &mut DeltaStream) -> DeltaResponse {
    let request = xdsloop_proto::discovery::DeltaDiscoveryRequest {
        type_url: CLUSTER.into(),
        node: Some(Node {
            id: "n".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    stream.on_request(request, now()).remove(0)
}

#[test]
fn a_large_delta_sync_is_one_buffer_and_one_list_shared_by_every_stream() {
    let snap = large(500);
    let (mut one, mut two) = (DeltaStream::new(1, snap.clone()), DeltaStream::new(2, snap));
    let (a, b) = (delta_wildcard(&mut one), delta_wildcard(&mut two));
    assert_eq!((a.entries.len(), b.entries.len()), (1, 1));
    assert_eq!(
        a.entries[0].as_ptr(),
        b.entries[0].as_ptr(),
        "not copied per stream"
    );
    let (Manifest::Delta(x), Manifest::Delta(y)) = (&a.manifest, &b.manifest) else {
        panic!("Delta manifests");
    };
    assert!(Arc::ptr_eq(x, y));
    let decoded = a.to_message().resources;
    assert_eq!(decoded.len(), 500);
    let listed = x.iter().map(|r| (r.name.as_str(), r.version.as_str()));
    let sent = decoded
        .iter()
        .map(|r| (r.name.as_str(), r.version.as_str()));
    assert!(listed.eq(sent), "the manifest lists the entries in order");
}

#[test]
fn a_small_delta_response_keeps_one_entry_per_resource() {
    let snap = snapshot(1, &[(CLUSTER, &[("c1", "1"), ("c2", "1")])]);
    let response = delta_wildcard(&mut DeltaStream::new(1, snap));
    assert_eq!(response.entries.len(), 2);
}

/// `oversize` pads a response with an unknown field. A stalled reader's queue holds several
/// padded copies, on every stream: the padding is one shared buffer, not a copy each.
#[test]
fn oversize_padding_is_one_buffer_shared_by_every_padded_response() {
    use crate::protocol::wire::{Edit, WireResponse};
    let all = sample();
    let padded = |nonce: &str| {
        let head = DiscoveryResponse {
            version_info: "v7".into(),
            type_url: CLUSTER.into(),
            nonce: nonce.into(),
            ..Default::default()
        };
        let entries = all.sotw_entries(CLUSTER, all.resources.values().map(|r| r.as_ref()), false);
        let mut out = Outbound {
            head,
            entries,
            manifest: Manifest::Unknown,
        };
        assert!(out.edit(Edit::PadTo(1 << 20)));
        out
    };
    let (a, b) = (padded("1-1"), padded("2-7"));
    assert!(a.encoded_len() >= 1 << 20, "padded to at least the size");
    let zeros = |o: &SotwResponse| o.entries.iter().max_by_key(|e| e.len()).unwrap().clone();
    assert!(zeros(&a).len() >= (1 << 20) - 1024);
    assert_eq!(
        zeros(&a).as_ptr(),
        zeros(&b).as_ptr(),
        "the same allocation"
    );
    // Still a valid response with the same resources: decoders skip field 1000.
    let decoded = DiscoveryResponse::decode(a.to_message().encode_to_vec().as_slice()).unwrap();
    assert_eq!(decoded.resources.len(), 3);
    assert_eq!(decoded.nonce, "1-1");
}
