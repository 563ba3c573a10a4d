//! The fields that differ between SotW and Delta messages, and how a line says which it is:
//! a request is Delta when it has any of `subscribe`, `unsubscribe`,
//! `initial_resource_versions`; a response when it has `system_version`. Mixing the two
//! flavours' fields is an error naming them, rather than a guess.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Dir, ErrorDetail, FaultMark, Request, ResourceEntry, Response};
use crate::fields::TypeUrl;
use crate::step::{Change, Step, Verdict};

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RequestBody {
    /// SotW: the accepted `version_info` and the full list of names (empty: wildcard on a fresh
    /// type, or nothing after explicit names).
    Sotw {
        /// `version_info`: the last version the client accepted ("" before any).
        version: String,
        /// `resource_names`, as the request lists them.
        names: Vec<String>,
    },
    /// Delta: the changes to the subscription, and on a stream's first request the versions
    /// the client holds.
    Delta {
        /// `resource_names_subscribe`: names added to the interest.
        subscribe: Vec<String>,
        /// `resource_names_unsubscribe`: names dropped from it.
        unsubscribe: Vec<String>,
        /// Name to version of each resource the client already holds, sent only on a stream's
        /// first request (a reconnect); empty otherwise.
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        initial_resource_versions: BTreeMap<String, String>,
    },
}

/// The version a response carries, and (Delta) what it removes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ResponseBody {
    /// SotW `version_info`.
    Sotw {
        /// `version_info` of the whole set.
        version: String,
    },
    /// Delta `system_version_info` and `removed_resources`.
    Delta {
        /// `system_version_info`, informational only in Delta.
        system_version: String,
        /// `removed_resources`: names the client should drop.
        removed: Vec<String>,
    },
}

const SOTW_REQUEST: &str = "a SotW request has `version` and `names`";
const DELTA_REQUEST: &str =
    "a Delta request `subscribe`, `unsubscribe` and optionally `initial_resource_versions`";

/// A request line as it is in the file, before the flavour is known.
#[derive(Deserialize)]
pub(crate) struct RawRequest {
    dir: Dir,
    #[serde(default)]
    transport: Option<String>,
    #[serde(rename = "type")]
    type_url: TypeUrl,
    step: Step,
    verdict: Verdict,
    #[serde(default)]
    change: Option<Change>,
    nonce: String,
    has_node: bool,
    #[serde(default)]
    error_detail: Option<ErrorDetail>,
    version: Option<String>,
    names: Option<Vec<String>>,
    subscribe: Option<Vec<String>>,
    unsubscribe: Option<Vec<String>>,
    initial_resource_versions: Option<BTreeMap<String, String>>,
}

impl TryFrom<RawRequest> for Request {
    type Error = String;

    fn try_from(raw: RawRequest) -> Result<Self, String> {
        let delta = raw.subscribe.is_some()
            || raw.unsubscribe.is_some()
            || raw.initial_resource_versions.is_some();
        let body = match (delta, raw.version, raw.names) {
            (false, Some(version), Some(names)) => RequestBody::Sotw { version, names },
            (true, None, None) => RequestBody::Delta {
                subscribe: raw.subscribe.unwrap_or_default(),
                unsubscribe: raw.unsubscribe.unwrap_or_default(),
                initial_resource_versions: raw.initial_resource_versions.unwrap_or_default(),
            },
            (true, _, _) => {
                return Err(format!(
                    "request mixes SotW and Delta fields: {SOTW_REQUEST}, {DELTA_REQUEST}"
                ));
            }
            (false, _, _) => {
                return Err(format!(
                    "request without its names: {SOTW_REQUEST}, {DELTA_REQUEST}"
                ));
            }
        };
        Ok(Request {
            dir: raw.dir,
            transport: raw.transport,
            type_url: raw.type_url,
            step: raw.step,
            verdict: raw.verdict,
            change: raw.change,
            body,
            nonce: raw.nonce,
            has_node: raw.has_node,
            error_detail: raw.error_detail,
        })
    }
}

/// A response line as it is in the file, before the flavour is known.
#[derive(Deserialize)]
pub(crate) struct RawResponse {
    dir: Dir,
    #[serde(default)]
    transport: Option<String>,
    #[serde(rename = "type")]
    type_url: TypeUrl,
    step: Step,
    nonce: String,
    resources: Vec<ResourceEntry>,
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(default)]
    undecodable: u32,
    #[serde(default)]
    fault: Option<FaultMark>,
    version: Option<String>,
    system_version: Option<String>,
    removed: Option<Vec<String>>,
}

impl TryFrom<RawResponse> for Response {
    type Error = String;

    fn try_from(raw: RawResponse) -> Result<Self, String> {
        let body = match (raw.version, raw.system_version, raw.removed) {
            (Some(version), None, None) => ResponseBody::Sotw { version },
            (None, Some(system_version), removed) => ResponseBody::Delta {
                system_version,
                removed: removed.unwrap_or_default(),
            },
            (None, None, _) => {
                return Err(
                    "response without a version: a SotW response has `version`, \
                            a Delta response `system_version`"
                        .to_string(),
                );
            }
            (Some(_), _, _) => {
                return Err("response mixes SotW `version` with Delta fields \
                            (`system_version`, `removed`)"
                    .to_string());
            }
        };
        Ok(Response {
            dir: raw.dir,
            transport: raw.transport,
            type_url: raw.type_url,
            step: raw.step,
            body,
            nonce: raw.nonce,
            resources: raw.resources,
            bytes: raw.bytes,
            undecodable: raw.undecodable,
            fault: raw.fault,
        })
    }
}
