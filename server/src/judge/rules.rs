//! The judge's rules, each with the spec sentences it enforces (`xdsloop_proto::spec` ids) or,
//! for a rule no sentence states, why xdsloop judges it anyway.

/// One rule of the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// `C5.nack-version`.
    pub id: &'static str,
    /// The sentences it enforces; empty for xdsloop's own rules.
    pub sentences: &'static [&'static str],
    /// For a rule no sentence states: why it is judged.
    pub beyond: Option<&'static str>,
    /// The sentence, or xdsloop's reason, in a few words for a violation's message.
    pub says: &'static str,
}

const fn rule(id: &'static str, sentences: &'static [&'static str], says: &'static str) -> Rule {
    Rule {
        id,
        sentences,
        beyond: None,
        says,
    }
}

const fn own(id: &'static str, beyond: &'static str) -> Rule {
    Rule {
        id,
        sentences: &[],
        beyond: Some(beyond),
        says: beyond,
    }
}

/// Every rule the judge applies.
#[rustfmt::skip]
pub const RULES: &[Rule] = &[
    rule("C1.node", &["basic-protocol.6", "basic-protocol.7"],
        "the first request of every stream carries the node"),
    rule("C1.same-node", &["basic-protocol.8"],
        "the node identifier should always be identical if present more than once on the stream"),
    rule("C2.type-url", &["proto.discovery-request.5"],
        "type_url is required for ADS"),
    rule("C4.unknown-nonce", &["basic-protocol.4", "delta.5", "proto.delta-request.7", "proto.delta-request.8"],
        "a request carries the most recent nonce received on the stream, or none"),
    rule("C4.ack-version", &["ack.1", "ack-nack-summary.2", "ack-nack.5", "proto.discovery-request.1"],
        "an ACK carries the version_info of the response it accepts"),
    rule("C4.delta-unanswered", &["ack-nack-summary.1", "basic-protocol.3", "delta.3"],
        "the client should ACK or NACK every response"),
    rule("C5.nack-fields", &["ack-nack-summary.3", "delta.4"],
        "a NACK is told by error_detail"),
    rule("C5.nack-version", &["ack-nack.5", "proto.discovery-request.1"],
        "a NACK carries the last version the client accepted"),
    own("C10.backoff",
        "a client that reconnects at once, again and again, after streams that brought nothing, loads every server it talks to (Envoy and gRPC back off with jitter)"),
    rule("C11.old-stream-nonce", &["basic-protocol.5"],
        "a nonce does not survive stream restarts"),
    rule("C11.types", &["ack-nack.2", "delta.9"],
        "a reconnecting client asks again for every type it held"),
    rule("C11.version", &["ack-nack.2"],
        "a new stream's first request indicates the most recent version seen"),
    rule("C11.versions", &["delta.9"],
        "a reconnecting Delta client provides every resource name it is interested in"),
    rule("C11.late-initial-versions", &["proto.delta-request.6"],
        "initial_resource_versions is not populated after a stream's first request of a type"),
    rule("C12.before-ack", &["proto.discovery-request.2"],
        "no new request after a response until the client is ready to ACK or NACK it"),
    own("C12.coalesce",
        "dependent types are asked for together: one EDS (RDS) request for all the clusters (listeners) one update brought, as Envoy's paused mux does"),
    own("C20.storm",
        "a client that sends a request again and again with nothing new loads the server (a storm)"),
];

/// The rule `id`.
pub(crate) fn rule_of(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}
