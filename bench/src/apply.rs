//! The client's cost of one 100,000-endpoint EDS update, two ways:
//! - core: response bytes off the wire → decoded, validated, stored, ACK built (the client
//!   library's sans-I/O mux, no network);
//! - end to end: the server publishes the snapshot → the client library reports the update
//!   applied (in-process server over loopback gRPC).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prost::Message;
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;
use xdsloop_client::{Client, ClientConfig, Interest, Variant};
use xdsloop_client::{Mux, MuxConfig, Report, Verdict};
use xdsloop_proto::discovery::{Any, DiscoveryResponse, Node};
use xdsloop_proto::envoy::envoy::config::core::v3::{
    Address, SocketAddress, address, socket_address::PortSpecifier,
};
use xdsloop_proto::envoy::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, Endpoint, LbEndpoint, LocalityLbEndpoints, lb_endpoint::HostIdentifier,
};
use xdsloop_proto::type_url::ENDPOINT;
use xdsloop_proto::{Resource, version};
use xdsloop_server::{Snapshot, TypeResources};

use crate::cell::ms;
use crate::extras::median;

const NAME: &str = "big";

#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct ApplyTiming {
    pub endpoints: usize,
    pub encoded_bytes: usize,
    /// Response bytes → applied and ACK built, in the client core.
    pub core_p50_ms: f64,
    /// Server publish → client reports the update applied.
    pub end_to_end_p50_ms: f64,
}

fn big_assignment(endpoints: usize, port: u32) -> ClusterLoadAssignment {
    let per_locality = 1000;
    let localities = endpoints.div_ceil(per_locality);
    let endpoint = |i: usize| LbEndpoint {
        host_identifier: Some(HostIdentifier::Endpoint(Endpoint {
            address: Some(Address {
                address: Some(address::Address::SocketAddress(SocketAddress {
                    address: format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255),
                    port_specifier: Some(PortSpecifier::PortValue(port)),
                    ..Default::default()
                })),
            }),
            ..Default::default()
        })),
        ..Default::default()
    };
    ClusterLoadAssignment {
        cluster_name: NAME.into(),
        endpoints: (0..localities)
            .map(|l| LocalityLbEndpoints {
                lb_endpoints: (l * per_locality..((l + 1) * per_locality).min(endpoints))
                    .map(endpoint)
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn snapshot(generation: u64, cla: &ClusterLoadAssignment) -> Snapshot {
    let bytes = cla.encode_to_vec();
    let resource = Resource {
        type_url: ENDPOINT.into(),
        name: NAME.into(),
        version: version::short(version::fnv1a(&[&bytes])),
        ttl: None,
        bytes: bytes.into(),
    };
    let resources = BTreeMap::from([(NAME.to_string(), Arc::new(resource))]);
    let types = TypeResources::new(resources, None);
    Snapshot {
        generation,
        base: BTreeMap::from([(ENDPOINT.to_string(), Arc::new(types))]),
        overlays: BTreeMap::new(),
    }
}

/// The client core alone: decode the response message, validate, store, build the ACK.
fn core_once(encoded: &[u8]) -> Result<Duration, String> {
    let node = Node {
        id: "bench".into(),
        ..Default::default()
    };
    let mut mux = Mux::new(MuxConfig::new(Variant::Sotw, node));
    let now = Instant::now();
    mux.add_watch(1, ENDPOINT, Interest::names([NAME]), now);
    mux.on_stream_start(now);
    mux.take_output();
    let start = Instant::now();
    let response =
        DiscoveryResponse::decode(encoded).map_err(|e| format!("decode response: {e}"))?;
    mux.on_sotw_response(response, Instant::now(), SystemTime::now());
    let output = mux.take_output();
    let took = start.elapsed();
    let acked = output
        .reports
        .iter()
        .any(|r| matches!(r, Report::Update(u) if u.verdict == Verdict::Ack));
    if !acked {
        return Err(format!("the client did not ACK: {:?}", output.reports));
    }
    Ok(took)
}

/// Measures both ways, `runs` times each; medians.
pub(crate) async fn apply_big_eds(endpoints: usize, runs: usize) -> Result<ApplyTiming, String> {
    let cla = big_assignment(endpoints, 8080);
    let value = cla.encode_to_vec();
    let encoded_bytes = value.len();
    let response = DiscoveryResponse {
        version_info: "v1".into(),
        resources: vec![Any {
            type_url: ENDPOINT.into(),
            value,
        }],
        type_url: ENDPOINT.into(),
        nonce: "1".into(),
        ..Default::default()
    };
    let encoded = response.encode_to_vec();
    let core = (0..runs)
        .map(|_| core_once(&encoded).map(ms))
        .collect::<Result<Vec<_>, _>>()?;
    let end_to_end = end_to_end(endpoints, runs).await?;
    Ok(ApplyTiming {
        endpoints,
        encoded_bytes,
        core_p50_ms: median(core),
        end_to_end_p50_ms: median(end_to_end),
    })
}

async fn end_to_end(endpoints: usize, runs: usize) -> Result<Vec<f64>, String> {
    let small = big_assignment(1, 8080);
    let (source, snapshots) = watch::channel(Arc::new(snapshot(1, &small)));
    let listen = "127.0.0.1:0".parse().expect("valid address");
    let limit = 256 * 1024 * 1024;
    let server = xdsloop_server::app::serve(listen, snapshots, limit)
        .await
        .map_err(|e| e.to_string())?;
    let mut config = ClientConfig::new(server.addr().to_string(), "bench-client");
    config.max_message_bytes = limit;
    let client = Client::start(config, std::future::pending()).map_err(|e| e.to_string())?;
    let mut reports = client.reports();
    let mut subscription = client
        .subscribe(ENDPOINT, Interest::names([NAME]))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move { while subscription.recv().await.is_some() {} });
    let mut times = Vec::new();
    for run in 0..=runs {
        // Run 0 syncs the small assignment; the others each push a new 100k-endpoint one.
        let next = snapshot(
            run as u64 + 2,
            &big_assignment(endpoints, 9000 + run as u32),
        );
        let version = next.base[ENDPOINT].version.clone();
        let start = Instant::now();
        if run > 0 {
            source.send_replace(Arc::new(next));
        }
        let wanted = if run > 0 { Some(version) } else { None };
        let applied = tokio::time::timeout(Duration::from_secs(120), async {
            loop {
                match reports.recv().await {
                    Ok(Report::Update(u))
                        if u.verdict == Verdict::Ack
                            && wanted.as_ref().is_none_or(|v| *v == u.version) =>
                    {
                        return true;
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return false,
                }
            }
        })
        .await;
        if applied != Ok(true) {
            return Err("the client did not apply the 100k-endpoint update".into());
        }
        if run > 0 {
            times.push(ms(start.elapsed()));
        }
    }
    client.stop().await;
    server.shutdown().await.map_err(|e| e.to_string())?;
    Ok(times)
}
