//! The requests the checks send: SotW with its per-type interest repeated by ACKs and NACKs,
//! Delta subscription changes, resumption with held versions and ACKs.

use std::collections::BTreeMap;

use xdsloop_proto::discovery::{DeltaDiscoveryRequest, DiscoveryRequest, DiscoveryResponse};

use super::{Delta, Gone, Probe, Sotw};

impl Probe<Sotw> {
    /// Requests `names` of `type_url` (empty: legacy wildcard), acknowledging nothing.
    pub(crate) async fn subscribe(&mut self, type_url: &str, names: &[&str]) -> Result<(), Gone> {
        self.request(type_url, names, "", "").await
    }

    /// A request with every field the suite scripts; the names become the type's interest.
    pub(crate) async fn request(
        &mut self,
        type_url: &str,
        names: &[&str],
        version: &str,
        nonce: &str,
    ) -> Result<(), Gone> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        self.interest.insert(type_url.to_string(), names.clone());
        self.send(DiscoveryRequest {
            version_info: version.to_string(),
            resource_names: names,
            type_url: type_url.to_string(),
            response_nonce: nonce.to_string(),
            ..Default::default()
        })
        .await
    }

    /// ACKs `response` with the type's current interest.
    pub(crate) async fn ack(&mut self, response: &DiscoveryResponse) -> Result<(), Gone> {
        let names = self.interest_of(&response.type_url);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let (url, version, nonce) = (&response.type_url, &response.version_info, &response.nonce);
        self.request(url, &names, version, nonce).await
    }

    fn interest_of(&self, type_url: &str) -> Vec<String> {
        self.interest.get(type_url).cloned().unwrap_or_default()
    }
}

impl Probe<Delta> {
    /// Subscribes and unsubscribes names of `type_url`; the first request of a type with
    /// nothing to subscribe is the legacy wildcard.
    pub(crate) async fn change(
        &mut self,
        type_url: &str,
        subscribe: &[&str],
        unsubscribe: &[&str],
    ) -> Result<(), Gone> {
        self.send(DeltaDiscoveryRequest {
            type_url: type_url.to_string(),
            resource_names_subscribe: subscribe.iter().map(|n| n.to_string()).collect(),
            resource_names_unsubscribe: unsubscribe.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        })
        .await
    }

    /// The first request of a reconnected stream: subscribe and declare held versions (S9).
    pub(crate) async fn resume(
        &mut self,
        type_url: &str,
        subscribe: &[&str],
        held: BTreeMap<String, String>,
    ) -> Result<(), Gone> {
        self.send(DeltaDiscoveryRequest {
            type_url: type_url.to_string(),
            resource_names_subscribe: subscribe.iter().map(|n| n.to_string()).collect(),
            initial_resource_versions: held.into_iter().collect(),
            ..Default::default()
        })
        .await
    }
}
