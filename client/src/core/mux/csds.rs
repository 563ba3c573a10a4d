//! What this client holds, as CSDS reports it (C18): one `GenericXdsConfig` per resource it
//! wants or holds, with Envoy's client statuses.
//!
//! - ACKED: held, with the version and time of the update that last changed it;
//! - NACKED: in the last response of its type, which was rejected: `error_state` has the
//!   rejected version and the reason, `xds_config` the resource still held (the last good one);
//! - DOES_NOT_EXIST: the not-found timer fired, or a Delta response removed it;
//! - REQUESTED: wanted, nothing received yet.
//!
//! `config_status` stays UNKNOWN (only a server knows whether it sent everything), and
//! `client_scope` is the config source's name.
//!
//! A view over the mux's state, changing none of it: what the admin side asks, any time.

use std::collections::BTreeSet;
use std::time::SystemTime;

use xdsloop_proto::csds::{
    ClientConfig, ClientResourceStatus, GenericXdsConfig, UpdateFailureState, timestamp,
};
use xdsloop_proto::discovery::Any;
use xdsloop_proto::type_url;

use super::Mux;
use crate::core::store::Applied;

/// A rejected response, kept until the type's next accepted one (CSDS shows it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Nack {
    /// The rejected response's version.
    pub(super) version: String,
    pub(super) message: String,
    pub(super) at: SystemTime,
    /// The resources it held that could be read; empty: it could not be read at all.
    pub(super) names: BTreeSet<String>,
}

impl Mux {
    /// This client's CSDS `ClientConfig`; with `contents` false, without the resources
    /// themselves (the request's `exclude_resource_contents`).
    pub fn client_config(&self, contents: bool) -> ClientConfig {
        let mut types: Vec<&String> = self.types.keys().collect();
        types.sort_by_key(|t| (type_url::order(t), t.to_string()));
        let generic_xds_configs = types
            .into_iter()
            .flat_map(|t| self.type_configs(t, contents))
            .collect();
        ClientConfig {
            node: Some(self.config.node.clone()),
            generic_xds_configs,
            client_scope: self.config.source.name().to_string(),
            ..Default::default()
        }
    }

    fn type_configs(&self, type_url: &str, contents: bool) -> Vec<GenericXdsConfig> {
        let wanted = self.watches.wanted(type_url);
        let mut names = wanted.names.clone();
        let held = self.store.of_type(type_url);
        names.extend(held.iter().flat_map(|t| t.resources.keys()).cloned());
        let nack = self.nacked.get(type_url);
        names
            .iter()
            .map(|name| {
                let applied = held.and_then(|t| t.resources.get(name));
                let rejected = nack.filter(|n| n.names.is_empty() || n.names.contains(name));
                let missing = self.not_found.is_missing(type_url, name);
                let mut config = resource_config(type_url, name, applied, rejected, missing);
                if !contents {
                    config.xds_config = None;
                }
                config
            })
            .collect()
    }
}

fn resource_config(
    type_url: &str,
    name: &str,
    applied: Option<&Applied>,
    nack: Option<&Nack>,
    missing: bool,
) -> GenericXdsConfig {
    let mut config = GenericXdsConfig {
        type_url: type_url.to_string(),
        name: name.to_string(),
        ..Default::default()
    };
    if let Some(applied) = applied {
        config.version_info = applied.version.clone();
        config.last_updated = Some(timestamp(applied.applied_at));
        config.xds_config = Some(Any {
            type_url: type_url.to_string(),
            value: applied.bytes.to_vec(),
        });
    }
    config.client_status = match (applied, nack, missing) {
        (_, Some(nack), _) => {
            config.error_state = Some(UpdateFailureState {
                failed_configuration: None,
                last_update_attempt: Some(timestamp(nack.at)),
                details: nack.message.clone(),
                version_info: nack.version.clone(),
            });
            ClientResourceStatus::Nacked
        }
        (Some(_), None, _) => ClientResourceStatus::Acked,
        (None, None, true) => ClientResourceStatus::DoesNotExist,
        (None, None, false) => ClientResourceStatus::Requested,
    } as i32;
    config
}
