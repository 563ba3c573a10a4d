//! Wire types and the resource codec for xdsloop. No protocol logic lives here.
//!
//! Layout:
//! - [`envoy`]: Envoy's generated v3 messages and tonic service stubs (re-exported `envoy-types`).
//! - [`type_url`]: xDS type URLs and their short aliases (`cds`, `eds`, `lds`, `rds`, ...).
//! - [`codec`]: the descriptor pool (Envoy API plus user `--descriptor-set` files) and the
//!   resource ⇄ JSON conversions built on it.
//! - [`fixture`]: decoding fixture documents (JSON/YAML, single resources, lists,
//!   DiscoveryResponse-shaped files, multi-document YAML, resources wrapped with a TTL in
//!   [`wrapper`]) into encoded [`Resource`]s, on top of
//!   `parse` (strict text → JSON values: no duplicate keys, no NaN/Inf), `strict` (checks on the
//!   decoded message: enum numbers, floats, nested `@type`s) and [`locate`].
//! - [`locate`]: the line and column of a path inside YAML or JSON text, for fixture and
//!   scenario errors.
//! - [`secret`]: which values are secret material, and keeping them out of error messages.
//! - [`redact`]: secret values hidden wherever a resource is displayed (Envoy's
//!   `udpa.annotations.sensitive` fields), unless asked to show them.
//! - [`version`]: deterministic content hashes used as versions.
//! - [`discovery`]: the discovery request and response messages, and the protocol constants
//!   both ends share (wildcard, NACK code and size bound).
//! - [`services`]: ADS and the per-type services by name: gRPC paths and REST paths.
//! - [`spec`]: the xDS protocol spec as data: its normative sentences, what binds whom.
//! - [`csds`]: the Client Status Discovery Service both ends serve: messages, `node_matchers`.
//! - [`xdstp`]: `xdstp://` (federation) resource names, parsed and normalised alike on both ends.
//! - [`grpc_frames`]: gRPC messages split out of HTTP/2 data chunks without a stream buffer.
//! - [`yaml_depth`]: how deeply a YAML text nests, measured before any parser sees it.

pub mod codec;
pub mod csds;
pub mod discovery;
pub mod error;
pub mod fixture;
pub mod grpc_frames;
pub mod locate;
mod parse;
pub mod redact;
pub mod secret;
pub mod services;
pub mod spec;
mod strict;
pub mod type_url;
pub mod version;
pub mod wrapper;
pub mod xdstp;
pub mod yaml_depth;

pub use codec::Codec;
pub use discovery::Variant;
pub use error::{DecodeError, Position};
pub use fixture::FixtureDoc;
pub use parse::Format;

/// Envoy's generated protobuf messages and gRPC stubs (`envoy-types`' `pb` module).
pub use envoy_types::pb as envoy;

use bytes::Bytes;

/// One encoded xDS resource, as decoded from a fixture or received on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// Full type URL, e.g. `type.googleapis.com/envoy.config.cluster.v3.Cluster`.
    pub type_url: String,
    /// The name Envoy uses for this type (`name`, or `cluster_name` for endpoints).
    pub name: String,
    /// The protobuf encoding of the resource message (the `Any.value`).
    pub bytes: Bytes,
    /// Deterministic content hash: the per-resource version used by Delta xDS.
    pub version: String,
    /// The time to live a fixture gave it by wrapping it in `envoy.service.discovery.v3.Resource`
    /// (S14); it is part of `version`, so a TTL change is a new version.
    pub ttl: Option<std::time::Duration>,
}

impl Resource {
    /// One resource from its generated message (`Cluster`, `Listener`, ...), checked and named
    /// like a fixture, versioned by content: equal messages get equal versions.
    pub fn from_message<M: prost::Message + prost::Name>(message: &M) -> Result<Self, DecodeError> {
        Codec::envoy().encode_bytes(&M::type_url(), &message.encode_to_vec())
    }

    /// The resource wrapped in a protobuf `Any`, as it goes on the wire.
    pub fn to_any(&self) -> discovery::Any {
        discovery::Any {
            type_url: self.type_url.clone(),
            value: self.bytes.to_vec(),
        }
    }
}
