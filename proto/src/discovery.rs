//! The discovery service messages every xDS transport uses, and the constants of the protocol
//! both ends must agree on.

pub use envoy_types::pb::envoy::config::core::v3::Node;
pub use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
    Resource as WireResource,
};
pub use envoy_types::pb::google::protobuf::Any;
pub use envoy_types::pb::google::rpc::Status;

/// Which flavour of the xDS protocol a stream speaks: State of the World (each response carries
/// the type's whole set, or the named ones) or Delta (incremental: what changed, what was
/// removed). One vocabulary for the server, the client and the scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// State of the World: `StreamAggregatedResources` and the per-type `Stream*` calls.
    Sotw,
    /// Incremental: `DeltaAggregatedResources` and the per-type `Delta*` calls.
    Delta,
}

impl Variant {
    /// The lowercase word used in logs, transcripts, `/status` and scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Sotw => "sotw",
            Variant::Delta => "delta",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The client feature that says a client honours resource TTLs and heartbeats (Envoy's "Well
/// Known Client Features").
pub const SUPPORTS_RESOURCE_TTL: &str = "xds.config.supports-resource-ttl";
/// The client feature that says a client unwraps `Resource` wrappers in SotW responses.
pub const RESOURCE_IN_SOTW: &str = "xds.config.resource-in-sotw";

/// The explicit wildcard resource name (xDS protocol, "wildcard subscriptions").
pub const WILDCARD: &str = "*";

/// `google.rpc.Code.INVALID_ARGUMENT`: the code a NACK's `error_detail` carries.
pub const INVALID_ARGUMENT: i32 = 3;

/// NACK messages are bounded: a server keeps one per client and type, and a client must not
/// be able to grow its memory without limit.
pub const MAX_NACK_MESSAGE_BYTES: usize = 4096;

/// The longest prefix of `message` of at most `max_bytes` bytes that ends on a character
/// boundary (UTF-8 must not be cut inside a character).
pub fn truncated(message: &str, max_bytes: usize) -> &str {
    if message.len() <= max_bytes {
        return message;
    }
    let mut end = max_bytes;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncated("short", 10), "short");
        assert_eq!(truncated("héllo", 2), "h");
        assert_eq!(truncated("héllo", 3), "hé");
        assert_eq!(truncated(&"é".repeat(10), 5).len(), 4);
    }
}
