//! The CSDS answer (S17): what every connected client holds, read from the ACK/NACK ledger the
//! streams keep for `/status`, as `envoy.service.status.v3.ClientStatusResponse`. Pure: built
//! from copies of the registry's streams and the current snapshot.
//!
//! One `ClientConfig` per node id (streams of one node are merged), one `GenericXdsConfig` per
//! subscribed resource: the names a stream asked for, and for a wildcard every resource the
//! snapshot serves that node. The ledger is per type, so a resource takes its type's state
//! (`docs/status.md`, "CSDS"):
//!
//! | `/status` state | `config_status` | `client_status` |
//! | --- | --- | --- |
//! | SYNCED | SYNCED | ACKED |
//! | PENDING (sent, not answered) | STALE | ACKED (an older version) or REQUESTED |
//! | NACKED | ERROR | NACKED, with `error_state` |
//! | STALE (newer content not sent yet) | NOT_SENT | as the last answer said |
//! | a name the snapshot does not have | NOT_SENT | DOES_NOT_EXIST (once a response went out) |
//!
//! `xds_config` holds the resource only when it is what the client holds now (SYNCED; secret
//! values hidden by [`hide_secrets`] unless the server shows them): the
//! server keeps no older content. `version_info` is what the client ACKed: the type's
//! `version_info` for SotW (what gRPC and Envoy report per resource), the resource's own
//! version for Delta when SYNCED.

use std::collections::BTreeMap;

use xdsloop_proto::{
    Codec, Resource,
    csds::{
        ClientConfig, ClientResourceStatus, ClientStatusRequest, ClientStatusResponse,
        ConfigStatus, GenericXdsConfig, Unsupported, UpdateFailureState, node_matches, timestamp,
    },
    discovery::{Any, Node},
    type_url,
};

use crate::{
    admin::registry::{StreamStatus, Variant},
    admin::status::{Answer, SyncState, answer, sync_state},
    protocol::subscription::TypeStatus,
    snapshot::Snapshot,
};

/// The answer to `request` about `streams`, or why it cannot be given.
pub(crate) fn build(
    snapshot: &Snapshot,
    streams: &[StreamStatus],
    request: &ClientStatusRequest,
) -> Result<ClientStatusResponse, Unsupported> {
    let mut by_node: BTreeMap<&str, Vec<&StreamStatus>> = BTreeMap::new();
    for stream in streams {
        // A stream that has not named its node yet holds nothing to report.
        if let Some(node) = stream.node_id.as_deref() {
            by_node.entry(node).or_default().push(stream);
        }
    }
    let mut config = Vec::new();
    for (node, streams) in by_node {
        if !node_matches(&request.node_matchers, node)? {
            continue;
        }
        let contents = !request.exclude_resource_contents;
        let generic_xds_configs = streams
            .iter()
            .flat_map(|s| stream_entries(snapshot, node, s, contents))
            .collect();
        config.push(ClientConfig {
            node: Some(Node {
                id: node.to_string(),
                ..Default::default()
            }),
            generic_xds_configs,
            ..Default::default()
        });
    }
    Ok(ClientStatusResponse { config })
}

fn stream_entries(
    snapshot: &Snapshot,
    node: &str,
    stream: &StreamStatus,
    contents: bool,
) -> Vec<GenericXdsConfig> {
    let mut types: Vec<&TypeStatus> = stream.types.values().collect();
    types.sort_by_key(|t| (type_url::order(&t.type_url), t.type_url.clone()));
    let variant = stream.kind.variant;
    let mut entries = Vec::new();
    for status in types {
        let current = snapshot.get(node, &status.type_url).map(AsRef::as_ref);
        let state = sync_state(status, current, variant);
        let mut names: Vec<&str> = status.names.iter().map(String::as_str).collect();
        if status.wildcard {
            names.extend(
                current
                    .iter()
                    .flat_map(|t| t.resources.keys())
                    .map(String::as_str),
            );
        }
        names.sort_unstable();
        names.dedup();
        let ledger = Ledger {
            status,
            state,
            variant,
            contents,
        };
        for name in names {
            let resource = current
                .and_then(|t| t.resources.get(name))
                .map(AsRef::as_ref);
            entries.push(ledger.entry(name, resource));
        }
    }
    entries
}

/// One stream's record of one type, and how to read it for each of its resources.
struct Ledger<'a> {
    status: &'a TypeStatus,
    state: SyncState,
    variant: Variant,
    contents: bool,
}

impl Ledger<'_> {
    fn entry(&self, name: &str, resource: Option<&Resource>) -> GenericXdsConfig {
        let status = self.status;
        let mut entry = GenericXdsConfig {
            type_url: status.type_url.clone(),
            name: name.to_string(),
            ..Default::default()
        };
        let Some(resource) = resource else {
            let told = status.last_sent.is_some();
            entry.config_status = ConfigStatus::NotSent as i32;
            entry.client_status = match told {
                true => ClientResourceStatus::DoesNotExist,
                false => ClientResourceStatus::Requested,
            } as i32;
            return entry;
        };
        entry.config_status = match self.state {
            SyncState::Synced => ConfigStatus::Synced,
            SyncState::Pending => ConfigStatus::Stale,
            SyncState::Nacked => ConfigStatus::Error,
            SyncState::Stale => ConfigStatus::NotSent,
        } as i32;
        let acked = status.last_acked.as_ref();
        let client = match answer(status) {
            Answer::Ack => ClientResourceStatus::Acked,
            Answer::Nack => ClientResourceStatus::Nacked,
            Answer::None if acked.is_some() => ClientResourceStatus::Acked,
            Answer::None => ClientResourceStatus::Requested,
        };
        entry.client_status = client as i32;
        entry.version_info = match (self.variant, self.state) {
            (Variant::Delta, SyncState::Synced) => resource.version.clone(),
            (Variant::Delta, _) => String::new(),
            (Variant::Sotw, _) => acked.map(|a| a.version.clone()).unwrap_or_default(),
        };
        entry.last_updated = acked.map(|a| timestamp(a.at));
        let holds_current = self.state == SyncState::Synced;
        if holds_current && self.contents {
            entry.xds_config = Some(any(resource));
        }
        if client == ClientResourceStatus::Nacked {
            entry.error_state = self.failure(resource);
        }
        entry
    }

    /// The NACK's record: the rejected version and the client's message, and the rejected
    /// resource itself while it is still what the snapshot serves.
    fn failure(&self, resource: &Resource) -> Option<UpdateFailureState> {
        let nack = self.status.last_nack.as_ref()?;
        let rejected_current = self.state == SyncState::Nacked && self.contents;
        Some(UpdateFailureState {
            failed_configuration: rejected_current.then(|| any(resource)),
            last_update_attempt: Some(timestamp(nack.at)),
            details: nack.message.clone(),
            version_info: nack.version.clone(),
        })
    }
}

/// Hides the secret values in the resources `response` carries (`xds_config`, a NACKed
/// `failed_configuration`), as `/snapshot` does. A resource the codec cannot decode stays as it
/// is: the server encoded every resource it serves with that codec.
pub(crate) fn hide_secrets(response: &mut ClientStatusResponse, codec: &Codec) {
    for config in &mut response.config {
        for entry in &mut config.generic_xds_configs {
            let failed = entry.error_state.as_mut();
            let failed = failed.and_then(|e| e.failed_configuration.as_mut());
            for any in entry.xds_config.iter_mut().chain(failed) {
                if let Ok(Some(hidden)) = codec.redacted(&any.type_url, &any.value) {
                    any.value = hidden.to_vec();
                }
            }
        }
    }
}

fn any(resource: &Resource) -> Any {
    Any {
        type_url: resource.type_url.clone(),
        value: resource.bytes.to_vec(),
    }
}

pub(crate) mod service;

#[cfg(test)]
mod tests;
