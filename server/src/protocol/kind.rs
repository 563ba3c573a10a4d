//! How a stream reached the server: the protocol variant and the gRPC service. Plain
//! vocabulary shared by the protocol's observers, the registry and the transport.

use std::fmt;

use serde::Serialize;

/// SotW or Delta: the one definition lives in the wire crate, shared with the client.
pub use xdsloop_proto::Variant;

/// How a stream reached us: the protocol variant and the gRPC service (`ads`, or a per-type
/// service's name such as `clusters` or `endpoints`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct StreamKind {
    /// SotW or Delta.
    pub variant: Variant,
    /// `ads`, `rest`, or a per-type service's short name (`clusters`, `endpoints`, ...).
    pub service: &'static str,
}

impl StreamKind {
    /// An ADS stream, State of the World.
    pub const ADS_SOTW: StreamKind = StreamKind {
        variant: Variant::Sotw,
        service: "ads",
    };
    /// An ADS stream, Delta (incremental).
    pub const ADS_DELTA: StreamKind = StreamKind {
        variant: Variant::Delta,
        service: "ads",
    };
    /// REST-JSON polling: no stream, but SotW-shaped answers; the fault stage and the tap
    /// know a node's polls by this kind (stream id 0).
    pub const REST: StreamKind = StreamKind {
        variant: Variant::Sotw,
        service: "rest",
    };

    /// REST-JSON polls, not a gRPC stream.
    pub fn is_rest(self) -> bool {
        self.service == Self::REST.service
    }
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.service, self.variant)
    }
}
