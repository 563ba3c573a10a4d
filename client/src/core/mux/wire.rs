//! The wire: all that SotW and Delta differ in. A response of either variant is read here into
//! the same [`Changes`] (the resources it sends, what it removes, its heartbeats), and its
//! entries into the same received-report lines; a NACK is built in the variant's request type.
//! Everything after the reading — decide, apply, ACK, report — is one path for both, so a rule
//! of the protocol is written once and cannot hold for one variant and not the other.

use std::collections::BTreeSet;

use prost::Message;
use xdsloop_proto::discovery::{
    Any, DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse, Node,
    WireResource,
};
use xdsloop_proto::wrapper::RESOURCE_WRAPPER;
use xdsloop_proto::{Codec, type_url};

use crate::config::{ReceivedReports, Validator, Variant};
use crate::core::event::ReceivedResource;
use crate::core::request::{Outgoing, nack_detail};
use crate::core::store::{Diff, Stamp, Store};
use crate::core::validate::{self, Decoded, Heartbeat, Rejection};

/// A response of either variant.
pub(super) enum Response {
    Sotw(DiscoveryResponse),
    Delta(DeltaDiscoveryResponse),
}

impl Response {
    pub(super) fn variant(&self) -> Variant {
        match self {
            Response::Sotw(_) => Variant::Sotw,
            Response::Delta(_) => Variant::Delta,
        }
    }

    /// Its type URL, version (SotW `version_info`, Delta `system_version_info`) and nonce.
    pub(super) fn head(&self) -> (&str, &str, &str) {
        match self {
            Response::Sotw(r) => (&r.type_url, &r.version_info, &r.nonce),
            Response::Delta(r) => (&r.type_url, &r.system_version_info, &r.nonce),
        }
    }

    /// The names it removes by name, as sent.
    pub(super) fn removed(&self) -> &[String] {
        match self {
            Response::Sotw(_) => &[],
            Response::Delta(r) => &r.removed_resources,
        }
    }

    pub(super) fn encoded_len(&self) -> usize {
        match self {
            Response::Sotw(r) => r.encoded_len(),
            Response::Delta(r) => r.encoded_len(),
        }
    }

    /// Takes the resources out and checks them (C6); `held_version` is the type's last
    /// accepted version, which a SotW heartbeat must refer to (C17).
    pub(super) fn read(
        &mut self,
        codec: &Codec,
        validator: Option<&Validator>,
        held_version: &str,
    ) -> Result<Changes, Rejection> {
        let (valid, removed) = match self {
            Response::Sotw(r) => {
                let resources = std::mem::take(&mut r.resources);
                let valid = validate::sotw(codec, &r.type_url, resources, validator)?;
                check_sotw_heartbeats(&r.version_info, held_version, &valid.heartbeats)?;
                (valid, Removed::Unlisted)
            }
            Response::Delta(r) => {
                let (resources, removed) = (std::mem::take(&mut r.resources), &r.removed_resources);
                let read = validate::delta(codec, &r.type_url, resources, removed, validator)?;
                (read.0, Removed::Named(read.1))
            }
        };
        let (resources, heartbeats) = (valid.resources, valid.heartbeats);
        Ok(Changes {
            resources,
            removed,
            heartbeats,
        })
    }

    /// Each entry as a received-report line.
    pub(super) fn lines(
        &self,
        codec: &Codec,
        detail: ReceivedReports,
    ) -> Vec<Option<ReceivedResource>> {
        match self {
            Response::Sotw(r) => r
                .resources
                .iter()
                .map(|a| sotw_entry(codec, detail, a))
                .collect(),
            Response::Delta(r) => r
                .resources
                .iter()
                .map(|w| delta_entry(codec, detail, w))
                .collect(),
        }
    }
}

/// A validated response's effect on the store.
#[derive(Clone, Debug)]
pub(super) struct Changes {
    /// The resources it sends (Delta: added or updated).
    pub(super) resources: Vec<Decoded>,
    pub(super) removed: Removed,
    /// Bodiless `Resource` wrappers: refresh a held resource's TTL (C17).
    pub(super) heartbeats: Vec<Heartbeat>,
}

/// How a response says what is gone (C7).
#[derive(Clone, Debug)]
pub(super) enum Removed {
    /// SotW: a full-state type (LDS, CDS) drops what the response no longer lists; other
    /// types drop nothing.
    Unlisted,
    /// Delta: the names in `removed_resources`, and only those.
    Named(Vec<String>),
}

impl Changes {
    /// The names the update sends (CSDS reports them NACKED if it is rejected).
    pub(super) fn names(&self) -> BTreeSet<String> {
        self.resources.iter().map(|r| r.name.clone()).collect()
    }

    /// The names removed by name; empty for SotW.
    pub(super) fn removed_names(&self) -> &[String] {
        match &self.removed {
            Removed::Unlisted => &[],
            Removed::Named(names) => names,
        }
    }

    /// Only heartbeats: TTLs refreshed, no update (C17).
    pub(super) fn is_heartbeat_only(&self) -> bool {
        self.resources.is_empty() && self.removed_names().is_empty() && !self.heartbeats.is_empty()
    }

    /// Applies the update to `store`; `kept` are the names its heartbeats hold in place.
    pub(super) fn apply(
        self,
        store: &mut Store,
        type_url: &str,
        stamp: Stamp<'_>,
        kept: &[String],
    ) -> Diff {
        match &self.removed {
            Removed::Unlisted => {
                let full = type_url::full_state(type_url);
                store.apply_sotw(type_url, stamp, self.resources, full, kept)
            }
            Removed::Named(names) => store.apply_delta(type_url, stamp, self.resources, names),
        }
    }
}

/// SotW: a heartbeat (a wrapper without `resource`) carries the version the client holds;
/// in a response of another version it is an error.
fn check_sotw_heartbeats(
    version: &str,
    held_version: &str,
    heartbeats: &[Heartbeat],
) -> Result<(), Rejection> {
    let Some(first) = heartbeats.first().filter(|_| held_version != version) else {
        return Ok(());
    };
    let problem = format!(
        "resource \"{}\": a Resource without resource (a heartbeat) in a response of version \
         {version:?}, but the held version is {held_version:?}",
        first.name,
    );
    Err(Rejection {
        problems: vec![problem],
        names: heartbeats.iter().map(|h| h.name.clone()).collect(),
    })
}

/// A NACK of `nonce` with `message`, in the variant's request type.
pub(super) fn nack(
    variant: Variant,
    node: Option<Node>,
    type_url: &str,
    nonce: &str,
    message: &str,
) -> Outgoing {
    let (type_url, response_nonce) = (type_url.to_string(), nonce.to_string());
    let error_detail = Some(nack_detail(message));
    match variant {
        Variant::Sotw => Outgoing::Sotw(DiscoveryRequest {
            node,
            type_url,
            response_nonce,
            error_detail,
            ..Default::default()
        }),
        Variant::Delta => Outgoing::Delta(DeltaDiscoveryRequest {
            node,
            type_url,
            response_nonce,
            error_detail,
            ..Default::default()
        }),
    }
}

/// A SotW entry: a bare resource, or a `Resource` wrapper (C17) holding one, or none (a
/// heartbeat for the wrapper's name). `None`: no name could be read.
fn sotw_entry(codec: &Codec, detail: ReceivedReports, any: &Any) -> Option<ReceivedResource> {
    let entry = |name, body, heartbeat| ReceivedResource {
        name,
        version: None,
        body,
        heartbeat,
    };
    if any.type_url != RESOURCE_WRAPPER {
        return Some(entry(name_of(codec, any)?, body(detail, any), false));
    }
    let wrapper = WireResource::decode(any.value.as_slice()).ok()?;
    match &wrapper.resource {
        Some(inner) => Some(entry(name_of(codec, inner)?, body(detail, inner), false)),
        None if wrapper.name.is_empty() => None,
        None => Some(entry(wrapper.name, None, true)),
    }
}

/// A Delta entry: its name is the wire's, or read from the body; removals travel in
/// `removed_resources`, so an entry without a body is a heartbeat (C17).
fn delta_entry(
    codec: &Codec,
    detail: ReceivedReports,
    resource: &WireResource,
) -> Option<ReceivedResource> {
    let any = resource.resource.as_ref();
    let name = match (resource.name.as_str(), any) {
        ("", Some(any)) => name_of(codec, any)?,
        ("", None) => return None,
        (name, _) => name.to_string(),
    };
    Some(ReceivedResource {
        name,
        version: Some(resource.version.clone()),
        body: any.and_then(|any| body(detail, any)),
        heartbeat: any.is_none(),
    })
}

fn name_of(codec: &Codec, any: &Any) -> Option<String> {
    codec.resource_name(&any.type_url, &any.value).ok()
}

fn body(detail: ReceivedReports, any: &Any) -> Option<Any> {
    (detail == ReceivedReports::Bodies).then(|| any.clone())
}
