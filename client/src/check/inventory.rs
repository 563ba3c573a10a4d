//! What the server serves the suite's node, learned once before the checks: the clusters and
//! listeners of wildcard CDS/LDS, the EDS names those clusters point at and the RDS names those
//! listeners point at, each kept if it exists. The checks pick their resource names from here
//! and SKIP when it is too small.

use std::time::Duration;

use tokio::time::Instant;

use prost::Message;
use xdsloop_proto::Codec;
use xdsloop_proto::discovery::DiscoveryResponse;
use xdsloop_proto::envoy::envoy::config::cluster::v3::{Cluster, cluster};
use xdsloop_proto::envoy::envoy::config::listener::v3::{Listener, filter};
use xdsloop_proto::envoy::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_connection_manager::RouteSpecifier,
};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::describe;
use super::fixtures::PREFIX;
use super::probe::{Gone, Probe, Sotw, Target};

#[derive(Clone, Debug, Default)]
pub(super) struct Inventory {
    pub clusters: Vec<String>,
    pub listeners: Vec<String>,
    /// ClusterLoadAssignment names that exist (answered when asked for by name).
    pub endpoints: Vec<String>,
    /// RouteConfiguration names the listeners point at that exist.
    pub routes: Vec<String>,
    /// Encoded size of the wildcard CDS response.
    pub cds_bytes: usize,
    /// Why a list is empty (the server did not answer, ...), for SKIP reasons.
    pub notes: Vec<String>,
}

impl Inventory {
    /// Asks the server on one SotW stream. Names the suite itself wrote (`xdsloop-check-*`,
    /// left by an earlier run until the server reloads) are not used.
    pub(super) async fn learn(target: &Target, codec: &Codec, within: Duration) -> Self {
        let mut inv = Inventory::default();
        let mut probe = Probe::<Sotw>::open(target);
        let foreign = |n: &String| !n.starts_with(PREFIX);
        if let Some(r) = ask(&mut probe, CLUSTER, &[], within, &mut inv.notes).await {
            inv.cds_bytes = r.encoded_len();
            inv.clusters = describe::sotw_names(codec, &r)
                .into_iter()
                .filter(foreign)
                .collect();
            let candidates = eds_names(&r);
            if !candidates.is_empty() {
                let names: Vec<&str> = candidates.iter().map(String::as_str).collect();
                if let Some(r) = ask(&mut probe, ENDPOINT, &names, within, &mut inv.notes).await {
                    let present = describe::sotw_names(codec, &r);
                    undecodable(&mut inv.notes, ENDPOINT, &names, &present);
                    inv.endpoints = candidates
                        .into_iter()
                        .filter(|n| present.contains(n))
                        .collect();
                }
            }
        }
        if let Some(r) = ask(&mut probe, LISTENER, &[], within, &mut inv.notes).await {
            inv.listeners = describe::sotw_names(codec, &r)
                .into_iter()
                .filter(foreign)
                .collect();
            let candidates = route_names(&r);
            if !candidates.is_empty() {
                let names: Vec<&str> = candidates.iter().map(String::as_str).collect();
                if let Some(r) = ask(&mut probe, ROUTE, &names, within, &mut inv.notes).await {
                    let present = describe::sotw_names(codec, &r);
                    undecodable(&mut inv.notes, ROUTE, &names, &present);
                    inv.routes = candidates
                        .into_iter()
                        .filter(|n| present.contains(n))
                        .collect();
                }
            }
        }
        inv
    }

    /// The first `n` names of `url` that the server serves, or why there are fewer.
    pub(super) fn names(&self, url: &str, n: usize) -> Result<Vec<&str>, String> {
        let (names, whence) = match url {
            CLUSTER => (&self.clusters, "wildcard CDS gives"),
            LISTENER => (&self.listeners, "wildcard LDS gives"),
            ENDPOINT => (
                &self.endpoints,
                "the server's CDS names, with endpoints that exist,",
            ),
            ROUTE => (
                &self.routes,
                "the server's LDS names, with route configurations that exist,",
            ),
            _ => return Err(format!("no names of {url} are known")),
        };
        if names.len() >= n {
            return Ok(names.iter().take(n).map(String::as_str).collect());
        }
        let mut why = format!(
            "needs {n} {} name{} that exist ({whence} {})",
            describe::short(url),
            if n == 1 { "" } else { "s" },
            names.len()
        );
        self.note(&mut why);
        Err(why)
    }

    fn note(&self, why: &mut String) {
        if !self.notes.is_empty() {
            why.push_str(&format!(" ({})", self.notes.join("; ")));
        }
    }
}

/// A note for each resource of an answer that does not decode as its type: it is not counted
/// as existing, and a SKIP for too few names must say why.
fn undecodable(notes: &mut Vec<String>, url: &str, asked: &[&str], present: &[String]) {
    let bad = present
        .iter()
        .filter(|n| n.starts_with("<undecodable"))
        .count();
    if bad > 0 {
        let short = describe::short(url);
        notes.push(format!(
            "{short} {}: the answer held {bad} resource(s) that do not decode as {short}, not counted",
            describe::list(asked)
        ));
    }
}

/// Subscribes, waits for the answer and ACKs it; a silence or an error becomes a note. The
/// answer is the next response of `url`: on ADS the server may push the types subscribed
/// before at any moment, and those are ACKed and passed over.
async fn ask(
    probe: &mut Probe<Sotw>,
    url: &str,
    names: &[&str],
    within: Duration,
    notes: &mut Vec<String>,
) -> Option<DiscoveryResponse> {
    let short = describe::short(url);
    let answered = match probe.subscribe(url, names).await {
        Ok(()) => answer_of(probe, url, within).await,
        Err(gone) => Err(gone),
    };
    match answered {
        Ok(r) => Some(r),
        Err(gone) => {
            notes.push(format!("{short} {}: {gone}", describe::list(names)));
            None
        }
    }
}

/// The next response of `url` within `within`, every response before it ACKed.
async fn answer_of(
    probe: &mut Probe<Sotw>,
    url: &str,
    within: Duration,
) -> Result<DiscoveryResponse, Gone> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let r = probe.recv(left).await.map_err(|gone| match gone {
            Gone::Silent(_) => Gone::Silent(within),
            other => other,
        })?;
        let _ = probe.ack(&r).await;
        if r.type_url == url {
            return Ok(r);
        }
    }
}

/// The EDS names of EDS clusters (`service_name`, else the cluster's name).
fn eds_names(response: &DiscoveryResponse) -> Vec<String> {
    let eds = cluster::DiscoveryType::Eds as i32;
    let decoded = response.resources.iter().filter_map(|any| {
        let c = Cluster::decode(any.value.as_slice()).ok()?;
        let kind = c.cluster_discovery_type;
        let is_eds = matches!(kind, Some(cluster::ClusterDiscoveryType::Type(t)) if t == eds);
        let service = c
            .eds_cluster_config
            .map(|e| e.service_name)
            .unwrap_or_default();
        let name = if service.is_empty() { c.name } else { service };
        (is_eds && !name.is_empty() && !name.starts_with(PREFIX)).then_some(name)
    });
    let mut names: Vec<String> = decoded.collect();
    names.sort();
    names.dedup();
    names
}

/// The RDS names the listeners' HTTP connection managers point at.
fn route_names(response: &DiscoveryResponse) -> Vec<String> {
    let listeners = response
        .resources
        .iter()
        .filter_map(|any| Listener::decode(any.value.as_slice()).ok());
    let filters = listeners.flat_map(|l| l.filter_chains.into_iter().flat_map(|c| c.filters));
    let managers = filters.filter_map(|f| match f.config_type {
        Some(filter::ConfigType::TypedConfig(any)) => {
            HttpConnectionManager::decode(any.value.as_slice()).ok()
        }
        _ => None,
    });
    let rds = managers.filter_map(|m| match m.route_specifier {
        Some(RouteSpecifier::Rds(rds)) => Some(rds.route_config_name),
        _ => None,
    });
    let mut names: Vec<String> = rds
        .filter(|n| !n.is_empty() && !n.starts_with(PREFIX))
        .collect();
    names.sort();
    names.dedup();
    names
}
