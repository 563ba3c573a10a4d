//! The client's streams as the protocol sees them: which stream a type travels on
//! ([`StreamKey`]), the number each stream gets when it opens ([`StreamIds`], so reports and
//! transcripts can say "stream 3"), and how one ended ([`StreamEnd`]).

use std::collections::BTreeMap;

use xdsloop_proto::services::per_type_api;

use crate::config::Variant;

/// The stream a type's requests travel on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StreamKey {
    /// One stream for every type: ADS (and the single virtual stream of REST and file).
    Aggregated,
    /// One stream per type: non-aggregated gRPC (Envoy's per-subscription `GrpcMuxImpl`).
    Type(String),
}

impl StreamKey {
    /// How transcripts and `/status` name the transport: `ads-sotw`, `ads-delta`, or the
    /// per-type service's short name with the flavour (`clusters-sotw`).
    pub fn transport(&self, mode: Variant) -> String {
        let flavour = match mode {
            Variant::Sotw => "sotw",
            Variant::Delta => "delta",
        };
        let service = match self {
            Self::Aggregated => "ads",
            Self::Type(type_url) => per_type_api(type_url).map_or(type_url.as_str(), |a| a.service),
        };
        format!("{service}-{flavour}")
    }
}

/// One opened stream, as reports name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// The client's number for it: 1, 2, … in the order its streams opened, whatever they
    /// carry. Requests and responses name their stream by it.
    pub id: u64,
    /// This is the Nth stream with this key, from 1: above 1, the client reconnected.
    pub ordinal: u32,
    pub key: StreamKey,
}

/// How a stream ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEnd {
    /// For people: what subscriptions hear as the connection failure ("Unavailable: …").
    pub reason: String,
    /// The gRPC status the server ended the stream with (`code` as `UNAVAILABLE`), or `None`
    /// when the stream broke without one: a reset, a lost connection, a failed open.
    pub status: Option<(String, String)>,
}

impl From<&str> for StreamEnd {
    /// An end known only by its reason (no status).
    fn from(reason: &str) -> Self {
        Self {
            reason: reason.to_string(),
            status: None,
        }
    }
}

/// Numbers the streams as they open and remembers which are open now.
#[derive(Debug, Default)]
pub(crate) struct StreamIds {
    last: u64,
    ordinals: BTreeMap<StreamKey, u32>,
    open: BTreeMap<StreamKey, StreamInfo>,
}

impl StreamIds {
    /// A stream with `key` opened (replacing one still recorded as open under that key).
    pub(crate) fn open(&mut self, key: &StreamKey) -> StreamInfo {
        self.last += 1;
        let ordinal = self.ordinals.entry(key.clone()).or_default();
        *ordinal += 1;
        let info = StreamInfo {
            id: self.last,
            ordinal: *ordinal,
            key: key.clone(),
        };
        self.open.insert(key.clone(), info.clone());
        info
    }

    /// The stream with `key` closed; `None` if none was open.
    pub(crate) fn close(&mut self, key: &StreamKey) -> Option<StreamInfo> {
        self.open.remove(key)
    }

    pub(crate) fn is_open(&self, key: &StreamKey) -> bool {
        self.open.contains_key(key)
    }

    /// The number of the open stream with `key`; 0 when none is open.
    pub(crate) fn id_of(&self, key: &StreamKey) -> u64 {
        self.open.get(key).map_or(0, |info| info.id)
    }
}

#[cfg(test)]
mod tests {
    use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

    use super::*;

    #[test]
    fn ids_count_every_stream_and_ordinals_count_per_key() {
        let mut ids = StreamIds::default();
        let cds = StreamKey::Type(CLUSTER.into());
        let eds = StreamKey::Type(ENDPOINT.into());
        assert_eq!((ids.open(&cds).id, ids.open(&eds).id), (1, 2));
        assert_eq!(ids.id_of(&eds), 2);
        assert_eq!(ids.close(&eds).map(|s| s.ordinal), Some(1));
        assert_eq!((ids.id_of(&eds), ids.is_open(&eds)), (0, false));
        assert_eq!(ids.close(&eds), None, "closing twice reports nothing");
        let again = ids.open(&eds);
        assert_eq!((again.id, again.ordinal), (3, 2), "a reconnect");
        assert!(ids.is_open(&cds));
    }

    #[test]
    fn transports_are_named_like_the_servers_status() {
        assert_eq!(StreamKey::Aggregated.transport(Variant::Sotw), "ads-sotw");
        assert_eq!(StreamKey::Aggregated.transport(Variant::Delta), "ads-delta");
        let cds = StreamKey::Type(CLUSTER.into());
        assert_eq!(cds.transport(Variant::Sotw), "clusters-sotw");
        assert_eq!(cds.transport(Variant::Delta), "clusters-delta");
    }
}
