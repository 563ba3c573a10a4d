//! The rest of the admin surface on a real server: `/snapshot`, `/healthz`, the `status`
//! command's table, and gRPC health checking and reflection on the xDS port.

use serde_json::Value;
use tokio_stream::StreamExt;
use tonic::transport::Channel;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};
use tonic_reflection::pb::v1::{
    ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
    server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
};
use xdsloop_proto::{
    discovery::DiscoveryRequest,
    type_url::{CLUSTER, LISTENER},
};
use xdsloop_server::status::{SyncState, remote};

use super::{admin_addr, serving, state, status_until, synced_client, write};
use crate::harness::*;

const ADS: &str = "envoy.service.discovery.v3.AggregatedDiscoveryService";

async fn get_json(addr: &str, path: &str) -> Value {
    let body = remote::get(addr, path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&body).unwrap()
}

fn resource_names(type_json: &Value) -> Vec<&str> {
    let resources = type_json["resources"].as_array().unwrap();
    resources
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn snapshot_serves_resources_as_json_by_node_and_type() {
    let (dir, server) = serving().await;
    let running = server.running().unwrap();
    let overlay = dir.path().join("nodes/node-9");
    std::fs::create_dir_all(&overlay).unwrap();
    write(
        &overlay.join("clusters.json"),
        &[cluster_with_timeout("a", 9)],
    );
    let admin = admin_addr(running);
    status_until(running, "the overlay to load", |d| {
        !d.snapshot.overlays.is_empty()
    })
    .await;

    let all = get_json(&admin, "/snapshot").await;
    let aliases: Vec<&str> = all["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["type"].as_str().unwrap())
        .collect();
    assert_eq!(aliases, ["cds", "lds"]);
    assert_eq!(resource_names(&all["types"][0]), ["a", "b"]);
    assert_eq!(
        all["types"][0]["resources"][0]["resource"]["connect_timeout"],
        "1s"
    );
    assert_eq!(all["overlays"][0]["node_id"], "node-9");

    let mine = get_json(&admin, "/snapshot?node=node-9&type=cds").await;
    assert_eq!(mine["node_id"], "node-9");
    assert_eq!(mine["types"].as_array().unwrap().len(), 1, "?type filters");
    let cds = &mine["types"][0];
    assert_eq!(cds["type_url"], CLUSTER);
    assert_eq!(
        resource_names(cds),
        ["a", "b"],
        "overlay merged over the base"
    );
    let a = &cds["resources"][0]["resource"];
    assert_eq!(
        (a["@type"].as_str(), a["connect_timeout"].as_str()),
        (Some(CLUSTER), Some("9s"))
    );

    let unknown = remote::get(&admin, "/snapshot?type=nope")
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("HTTP 400"), "{unknown}");
    assert_eq!(get_json(&admin, "/healthz").await["status"], "ok");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn status_command_prints_a_table_of_nodes_and_types_with_nack_reasons() {
    let (_dir, server) = serving().await;
    let running = server.running().unwrap();
    let (_good, version) = synced_client(running, "good-node").await;
    let mut bad = SotwClient::connect(running.addr, "bad-node").await;
    let lds = bad.subscribe(LISTENER, &[]).await;
    bad.send(DiscoveryRequest {
        type_url: LISTENER.to_string(),
        response_nonce: lds.nonce.clone(),
        error_detail: nack_status("listener l:\nport 10000 is taken"),
        ..Default::default()
    })
    .await;
    status_until(running, "both clients answered", |d| {
        state(d, "good-node", CLUSTER) == Some(SyncState::Synced)
            && state(d, "bad-node", LISTENER) == Some(SyncState::Nacked)
    })
    .await;

    let admin = admin_addr(running);
    let table = remote::command(&admin, remote::Output::Text).await.unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("snapshot  generation 1 · 3 resources · cds "),
        "{table}"
    );
    assert!(table.contains("reload    OK at "), "{table}");
    assert!(
        table.contains("streams   2 open · 1 SYNCED · 0 PENDING · 1 NACKED · 0 STALE"),
        "{table}"
    );
    let header = lines
        .iter()
        .position(|l| l.starts_with("NODE "))
        .expect("a table header");
    let columns: Vec<&str> = lines[header].split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "NODE",
            "STREAM",
            "TRANSPORT",
            "PEER",
            "VIOL",
            "TYPE",
            "STATE",
            "SUBSCRIBED",
            "SERVING",
            "SENT",
            "ACKED",
            "DETAIL"
        ]
    );
    let rows: Vec<Vec<&str>> = lines[header + 1..]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "one row per node and type:\n{table}");
    assert_eq!(rows[0][0], "bad-node", "sorted by node");
    assert_eq!(rows[0][4], "0", "VIOL: the NACK broke no client rule");
    assert_eq!((rows[0][5], rows[0][6]), ("lds", "NACKED"));
    assert!(
        lines[header + 1].ends_with(": listener l: port 10000 is taken"),
        "{table}"
    );
    assert_eq!(
        (rows[1][0], rows[1][5], rows[1][6]),
        ("good-node", "cds", "SYNCED")
    );
    assert_eq!(rows[1][2], "ads-sotw");
    // SENT is "<version> #<nonce>": two words.
    assert_eq!(rows[1][9], &version[..8], "SENT version, shortened");
    assert_eq!(rows[1][11], &version[..8], "ACKED version, shortened");

    let json = remote::command(&admin, remote::Output::Json).await.unwrap();
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["schema"], "xdsloop.status.v1");
    assert_eq!(doc["streams"].as_array().unwrap().len(), 2);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn status_command_names_the_server_it_cannot_reach() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let error = remote::command(&addr, remote::Output::Text)
        .await
        .unwrap_err();
    assert!(error.to_string().contains(&addr), "{error}");
}

#[tokio::test]
async fn grpc_health_and_reflection_are_served_on_the_xds_port() {
    let (_dir, server) = serving().await;
    let running = server.running().unwrap();
    let channel = Channel::from_shared(format!("http://{}", running.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel.clone());
    for service in ["", ADS] {
        let request = HealthCheckRequest {
            service: service.to_string(),
        };
        let reply = health.check(request).await.unwrap().into_inner();
        assert_eq!(reply.status(), ServingStatus::Serving, "{service:?}");
    }
    let unknown = HealthCheckRequest {
        service: "no.such.Service".into(),
    };
    let code = health.check(unknown).await.unwrap_err().code();
    assert_eq!(code, tonic::Code::NotFound);

    let mut reflection = ServerReflectionClient::new(channel);
    let ask = |request: MessageRequest| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(request),
    };
    let requests = tokio_stream::iter([
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol(ADS.into())),
    ]);
    let mut replies = reflection
        .server_reflection_info(requests)
        .await
        .unwrap()
        .into_inner();
    let listed = within("the service list", replies.next())
        .await
        .unwrap()
        .unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = listed.message_response else {
        panic!("expected a service list, got {listed:?}");
    };
    let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    names.sort();
    let mut served = vec![
        ADS,
        "envoy.service.cluster.v3.ClusterDiscoveryService",
        "envoy.service.endpoint.v3.EndpointDiscoveryService",
        "envoy.service.extension.v3.ExtensionConfigDiscoveryService",
        "envoy.service.listener.v3.ListenerDiscoveryService",
        "envoy.service.route.v3.RouteDiscoveryService",
        "envoy.service.route.v3.ScopedRoutesDiscoveryService",
        "envoy.service.route.v3.VirtualHostDiscoveryService",
        "envoy.service.runtime.v3.RuntimeDiscoveryService",
        "envoy.service.secret.v3.SecretDiscoveryService",
        // CSDS is an admin route, and the admin routes are on the xDS port here.
        "envoy.service.status.v3.ClientStatusDiscoveryService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ];
    served.sort();
    assert_eq!(names, served);
    let file = within("the ADS descriptor", replies.next())
        .await
        .unwrap()
        .unwrap();
    let Some(MessageResponse::FileDescriptorResponse(files)) = file.message_response else {
        panic!("expected a file descriptor, got {file:?}");
    };
    let descriptor = String::from_utf8_lossy(&files.file_descriptor_proto[0]).to_string();
    assert!(
        descriptor.contains("envoy/service/discovery/v3/ads.proto"),
        "{descriptor}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn health_watchers_hear_not_serving_and_do_not_block_shutdown() {
    let (_dir, server) = serving().await;
    let running = server.running().unwrap();
    let channel = Channel::from_shared(format!("http://{}", running.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let request = HealthCheckRequest {
        service: String::new(),
    };
    let mut watch = health.watch(request).await.unwrap().into_inner();
    let first = within("the first health status", watch.message())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.status(), ServingStatus::Serving);
    let shutdown = tokio::spawn(server.shutdown());
    let next = within("NOT_SERVING", watch.message())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.status(), ServingStatus::NotServing);
    within("shutdown with a health watcher connected", shutdown)
        .await
        .unwrap()
        .unwrap();
}
