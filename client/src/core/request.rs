//! Per-type protocol state on one stream (Envoy's `SubscriptionState`) and the requests built
//! from it: SotW carries the full interest, Delta only the changes (C3), and every response gets
//! exactly one ACK or NACK echoing its nonce (C4).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use xdsloop_proto::discovery::{
    DeltaDiscoveryRequest, DiscoveryRequest, INVALID_ARGUMENT, MAX_NACK_MESSAGE_BYTES, Node,
    Status, WILDCARD, truncated,
};

use crate::core::watch_map::Wanted;
use xdsloop_transcript::Step;

/// A request ready for the wire.
#[derive(Clone, Debug, PartialEq)]
pub enum Outgoing {
    /// A State-of-the-World `DiscoveryRequest`.
    Sotw(DiscoveryRequest),
    /// A `DeltaDiscoveryRequest`.
    Delta(DeltaDiscoveryRequest),
}

impl Outgoing {
    /// The request's type URL.
    pub fn type_url(&self) -> &str {
        match self {
            Self::Sotw(r) => &r.type_url,
            Self::Delta(r) => &r.type_url,
        }
    }

    /// The nonce it answers (empty on a first request).
    pub fn response_nonce(&self) -> &str {
        match self {
            Self::Sotw(r) => &r.response_nonce,
            Self::Delta(r) => &r.response_nonce,
        }
    }

    /// The NACK's error message, if this request is a NACK.
    pub fn error(&self) -> Option<&str> {
        let detail = match self {
            Self::Sotw(r) => r.error_detail.as_ref(),
            Self::Delta(r) => r.error_detail.as_ref(),
        };
        detail.map(|s| s.message.as_str())
    }

    /// Whether it carries the node (the first request of a stream, C1).
    pub fn has_node(&self) -> bool {
        match self {
            Self::Sotw(r) => r.node.is_some(),
            Self::Delta(r) => r.node.is_some(),
        }
    }
}

/// The ACK or NACK a response is owed.
#[derive(Clone, Debug)]
struct Reply {
    nonce: String,
    error: Option<Status>,
}

/// One type's state: kept versions plus what this stream has been told.
#[derive(Clone, Debug)]
pub(crate) struct TypeState {
    pub type_url: String,
    /// Last accepted version (SotW `version_info`, Delta `system_version_info`). Kept across
    /// reconnects (C11); a NACK repeats it (C5).
    pub version: String,
    /// Latest nonce received on the current stream; cleared on reconnect (C11).
    pub nonce: String,
    reply: Option<Reply>,
    /// The interest last put on the wire on this stream (`None`: nothing sent yet).
    sent: Option<Wanted>,
    /// The wildcard went out as the legacy empty list (only valid while nothing else was sent).
    legacy_wildcard: bool,
    dirty: bool,
    /// A request for this type went out on some stream: the first on a new stream is then a
    /// resubscription (C11).
    ever_sent: bool,
}

impl TypeState {
    pub(crate) fn new(type_url: &str) -> Self {
        Self {
            type_url: type_url.to_string(),
            version: String::new(),
            nonce: String::new(),
            reply: None,
            sent: None,
            legacy_wildcard: false,
            dirty: true,
            ever_sent: false,
        }
    }

    /// A new stream: nonces and what the server was told are gone; versions stay (C11).
    pub(crate) fn on_stream_start(&mut self) {
        self.nonce.clear();
        self.reply = None;
        self.sent = None;
        self.legacy_wildcard = false;
        self.dirty = true;
    }

    pub(crate) fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    pub(crate) fn needs_request(&self) -> bool {
        self.dirty || self.reply.is_some()
    }

    /// The step of the loop the next request takes, as the client means it: the reply a
    /// response is owed (ACK or NACK), else the first request on the stream (subscribe, or
    /// resubscribe when an earlier stream carried the type), else an interest change.
    pub(crate) fn next_step(&self) -> Step {
        match &self.reply {
            Some(Reply { error: Some(_), .. }) => Step::Nack,
            Some(Reply { error: None, .. }) => Step::Ack,
            None if self.sent.is_some() => Step::Update,
            None if self.ever_sent => Step::Resubscribe,
            None => Step::Subscribe,
        }
    }

    /// Accepts the response with `nonce`: the next request ACKs it.
    pub(crate) fn ack(&mut self, nonce: &str, version: &str) {
        self.nonce = nonce.to_string();
        self.version = version.to_string();
        self.reply = Some(Reply {
            nonce: nonce.to_string(),
            error: None,
        });
    }

    /// Rejects the response with `nonce`: the next request NACKs it with the last accepted
    /// version and a bounded error (C5).
    pub(crate) fn nack(&mut self, nonce: &str, message: &str) {
        self.nonce = nonce.to_string();
        self.reply = Some(Reply {
            nonce: nonce.to_string(),
            error: Some(nack_detail(message)),
        });
    }

    /// The next SotW request, if one is owed: the full interest (C3), the last accepted version
    /// and the latest nonce.
    pub(crate) fn build_sotw(
        &mut self,
        wanted: &Wanted,
        node: Option<Node>,
    ) -> Option<DiscoveryRequest> {
        let reply = self.reply.take();
        self.dirty = false;
        let fresh = self.sent.is_none();
        if reply.is_none() && self.sent.as_ref() == Some(wanted) {
            return None;
        }
        if fresh && wanted.is_empty() {
            // On a fresh type an empty list would mean wildcard (S6): say nothing instead.
            return None;
        }
        let resource_names = if wanted.wildcard && wanted.names.is_empty() {
            if fresh || self.legacy_wildcard {
                self.legacy_wildcard = true;
                Vec::new()
            } else {
                vec![WILDCARD.to_string()]
            }
        } else {
            self.legacy_wildcard = false;
            let star = wanted.wildcard.then(|| WILDCARD.to_string());
            star.into_iter()
                .chain(wanted.names.iter().cloned())
                .collect()
        };
        self.sent = Some(wanted.clone());
        self.ever_sent = true;
        let (response_nonce, error_detail) = match reply {
            Some(r) => (r.nonce, r.error),
            None => (self.nonce.clone(), None),
        };
        Some(DiscoveryRequest {
            version_info: self.version.clone(),
            node,
            resource_names,
            type_url: self.type_url.clone(),
            response_nonce,
            error_detail,
            ..Default::default()
        })
    }

    /// The next Delta request, if one is owed. The first on a stream subscribes everything
    /// wanted and lists the held versions (C11); later ones carry only changes (C3).
    pub(crate) fn build_delta(
        &mut self,
        wanted: &Wanted,
        held: &BTreeMap<String, String>,
        node: Option<Node>,
    ) -> Option<DeltaDiscoveryRequest> {
        let reply = self.reply.take();
        self.dirty = false;
        let desired = wire_names(wanted);
        let mut request = DeltaDiscoveryRequest {
            node,
            type_url: self.type_url.clone(),
            ..Default::default()
        };
        match &self.sent {
            None => {
                if desired.is_empty() {
                    // Nothing wanted; an empty first request would be a legacy wildcard.
                    return None;
                }
                if wanted.wildcard && wanted.names.is_empty() {
                    self.legacy_wildcard = true;
                } else {
                    request.resource_names_subscribe = desired.into_iter().collect();
                }
                request.initial_resource_versions = held
                    .iter()
                    .filter(|(name, _)| wanted.wants(name))
                    .map(|(n, v)| (n.clone(), v.clone()))
                    .collect::<HashMap<_, _>>();
            }
            Some(previous) => {
                let before = wire_names(previous);
                let mut subscribe: BTreeSet<String> =
                    desired.difference(&before).cloned().collect();
                let unsubscribe: Vec<String> = before.difference(&desired).cloned().collect();
                if self.legacy_wildcard && wanted.wildcard && !subscribe.is_empty() {
                    // Named interest ends legacy wildcard mode unless `*` is explicit (C9).
                    subscribe.insert(WILDCARD.to_string());
                }
                if !subscribe.is_empty() || !unsubscribe.is_empty() {
                    self.legacy_wildcard = false;
                }
                if subscribe.is_empty() && unsubscribe.is_empty() && reply.is_none() {
                    return None;
                }
                request.resource_names_subscribe = subscribe.into_iter().collect();
                request.resource_names_unsubscribe = unsubscribe;
            }
        }
        self.sent = Some(wanted.clone());
        self.ever_sent = true;
        if let Some(reply) = reply {
            request.response_nonce = reply.nonce;
            request.error_detail = reply.error;
        }
        Some(request)
    }
}

/// The names a wanted set puts on the wire, with `*` for wildcard.
fn wire_names(wanted: &Wanted) -> BTreeSet<String> {
    let mut names = wanted.names.clone();
    if wanted.wildcard {
        names.insert(WILDCARD.to_string());
    }
    names
}

/// A NACK's `error_detail`: `INVALID_ARGUMENT` and the reason, bounded (C5). The fleet's
/// nodes NACK with it too.
pub(crate) fn nack_detail(message: &str) -> Status {
    Status {
        code: INVALID_ARGUMENT,
        message: bounded(message),
        details: Vec::new(),
    }
}

/// Truncates a NACK message to [`MAX_NACK_MESSAGE_BYTES`] on a character boundary, saying how
/// much was cut.
pub(crate) fn bounded(message: &str) -> String {
    if message.len() <= MAX_NACK_MESSAGE_BYTES {
        return message.to_string();
    }
    let kept = truncated(message, MAX_NACK_MESSAGE_BYTES - 32);
    format!("{kept} … ({} more bytes)", message.len() - kept.len())
}

#[cfg(test)]
mod tests;
