//! Before the checks: whether the suite can judge this server at all, and what it cannot
//! judge it on.
//!
//! A server the suite cannot talk to (connection refused, TLS on one side only, a certificate
//! refused, not gRPC, no ADS) is an error with the reason (exit 2), never a FAIL: nothing was
//! judged. A server that does not serve Delta, and a `--fixtures` directory the server does
//! not serve, are findings said once; the checks that need them SKIP.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use xdsloop_proto::discovery::DiscoveryRequest;
use xdsloop_proto::type_url::CLUSTER;
use xdsloop_proto::{Codec, Format};

use super::describe;
use super::fixtures::PREFIX;
use super::inventory::Inventory;
use super::probe::{Delta, Gone, Probe, Service, Sotw, Target, chain};
use crate::ClientError;
use crate::transport::tls;

/// Opens one SotW ADS stream and asks for wildcard CDS. An answer, a silence (judged by the
/// checks) or a stream the server ends cleanly means the suite can talk to the server; an
/// error before any response means it cannot, and says why in words.
pub(super) async fn reachable(target: &Target, within: Duration) -> Result<(), ClientError> {
    target.connect().await?;
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let Some(status) = first_stream(target, within).await else {
            return Ok(());
        };
        // A server refusing plaintext says why in its GOAWAY, which can lose the race with
        // the connection's end: another connection may bring the words.
        let explained = tls::explain(&status, target.tls.as_ref()).is_some();
        last = Some(status);
        if explained {
            break;
        }
        tokio::time::sleep(RETRY).await;
    }
    let status = last.expect("at least one attempt");
    let uri = target.uri();
    let words = if status.code() == tonic::Code::Unimplemented {
        format!(
            "it does not serve ADS: StreamAggregatedResources answered UNIMPLEMENTED ({})",
            status.message()
        )
    } else {
        let mut plain = format!("{:?}: {}", status.code(), status.message());
        if let Some(source) = std::error::Error::source(&status) {
            plain = format!("{plain}: {}", chain(source));
        }
        let words = tls::describe_open(&status, target.tls.as_ref(), plain);
        format!("the first ADS stream (wildcard CDS) ended before any response: {words}")
    };
    let message = format!("cannot judge {uri}: {words}");
    Err(ClientError::Io(std::io::Error::other(message)))
}

/// Attempts at the first stream before the server is called unreachable.
const ATTEMPTS: usize = 3;
const RETRY: Duration = Duration::from_millis(200);

/// The error ending a first SotW stream before any response, or `None`.
async fn first_stream(target: &Target, within: Duration) -> Option<tonic::Status> {
    let (requests, rx) = mpsc::channel(1);
    let first = DiscoveryRequest {
        node: Some(target.node()),
        type_url: CLUSTER.to_string(),
        ..Default::default()
    };
    // Room for one: the send cannot wait.
    let _ = requests.send(first).await;
    let mut ads = target.ads();
    let opened = async {
        let mut stream = ads
            .stream_aggregated_resources(ReceiverStream::new(rx))
            .await?
            .into_inner();
        stream.message().await
    };
    match tokio::time::timeout(within, opened).await {
        Err(_) | Ok(Ok(_)) => None,
        Ok(Err(status)) => Some(status),
    }
}

/// `None` when the server serves Delta ADS (it answered wildcard CDS, or stayed silent: the
/// Delta checks judge that); why not, when it refused the call (UNIMPLEMENTED) or ended the
/// stream at its first request.
pub(super) async fn delta_served(target: &Target, within: Duration) -> Option<String> {
    let mut p = Probe::<Delta>::open(target);
    let gone = match p.change(CLUSTER, &[], &[]).await {
        Err(gone) => gone,
        Ok(()) => match p.recv(within).await {
            Ok(_) | Err(Gone::Silent(_)) => return None,
            Err(gone) => gone,
        },
    };
    Some(match gone {
        Gone::Ended(Some((tonic::Code::Unimplemented, message))) => format!(
            "DeltaAggregatedResources answered UNIMPLEMENTED ({message})"
        ),
        Gone::Ended(Some((code, message))) => format!(
            "the server ended the Delta stream at its first request (wildcard CDS): {code:?}: {message}"
        ),
        Gone::Ended(None) => {
            "the server ended the Delta stream at its first request (wildcard CDS), without an error"
                .to_string()
        }
        Gone::Silent(d) => format!(
            "the first Delta request could not be sent within {}",
            humantime::format_duration(d)
        ),
    })
}

/// `None` when the server serves the per-type services (CDS over `ClusterDiscoveryService`
/// answered, or stayed silent); why not, when the call was refused or ended at once.
pub(super) async fn per_type_served(target: &Target, within: Duration) -> Option<String> {
    let mut p = Probe::<Sotw>::open_on(target, Service::Clusters);
    let gone = match p.subscribe(CLUSTER, &[]).await {
        Err(gone) => gone,
        Ok(()) => match p.recv(within).await {
            Ok(_) | Err(Gone::Silent(_)) => return None,
            Err(gone) => gone,
        },
    };
    Some(match gone {
        Gone::Ended(Some((tonic::Code::Unimplemented, message))) => {
            format!("ClusterDiscoveryService.StreamClusters answered UNIMPLEMENTED ({message})")
        }
        other => format!("ClusterDiscoveryService.StreamClusters (wildcard CDS): {other}"),
    })
}

/// `None` when `dir` looks like what the server serves, or when that cannot be told (the
/// server serves nothing); why not, when the server serves resources and none of them is
/// named in a fixture file under `dir`.
pub(super) fn fixtures_served(dir: &Path, codec: &Codec, inv: &Inventory) -> Option<String> {
    let served: BTreeSet<&String> = inv
        .clusters
        .iter()
        .chain(&inv.listeners)
        .chain(&inv.endpoints)
        .chain(&inv.routes)
        .collect();
    if served.is_empty() {
        return None;
    }
    let in_dir = names_in(dir, codec);
    if served.iter().any(|n| in_dir.contains(*n)) {
        return None;
    }
    let served: Vec<&String> = served.into_iter().collect();
    Some(format!(
        "--fixtures {}: probably not the directory the server serves: it serves {} resource names ({}) and no fixture file there holds any of them; the checks that edit fixtures SKIP",
        dir.display(),
        served.len(),
        describe::list(&served)
    ))
}

/// The resource names in the fixture files (JSON or YAML, at any depth) under `dir`; files
/// that do not decode and the suite's own files are left out.
fn names_in(dir: &Path, codec: &Codec) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for path in files(dir) {
        let Some(format) = Format::from_path(&path) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(docs) = codec.decode_fixture(&text, format) else {
            continue;
        };
        let resources = docs.into_iter().flat_map(|d| d.resources);
        names.extend(resources.map(|r| r.name));
    }
    names
}

/// Every file under `dir`, hidden names and the suite's own files skipped.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_naming_none_of_the_served_resources_is_probably_not_the_servers() {
        let codec = Codec::envoy();
        let dir = tempfile::tempdir().unwrap();
        let cluster = r#"[{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "name": "web", "connect_timeout": "1s"}]"#;
        std::fs::create_dir(dir.path().join("nested")).unwrap();
        std::fs::write(dir.path().join("nested/clusters.json"), cluster).unwrap();
        let mut inv = Inventory {
            clusters: vec!["api".into()],
            ..Inventory::default()
        };
        let why = fixtures_served(dir.path(), &codec, &inv).expect("not the server's");
        assert!(
            why.contains(
                "probably not the directory the server serves: it serves 1 resource names ([api])"
            ),
            "{why}"
        );
        inv.clusters.push("web".into());
        assert_eq!(fixtures_served(dir.path(), &codec, &inv), None);
        let nothing = Inventory::default();
        assert_eq!(
            fixtures_served(dir.path(), &codec, &nothing),
            None,
            "a server serving nothing cannot be told apart"
        );
    }
}
