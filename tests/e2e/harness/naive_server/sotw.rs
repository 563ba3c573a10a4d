//! The naive server's SotW stream: per type an interest, the last response (nonce, what it
//! held) and the content of a NACKed response, which is not sent again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prost::bytes::Bytes;

use tonic::Status;
use xdsloop_proto::{
    Resource,
    discovery::{Any, DiscoveryRequest, DiscoveryResponse},
    type_url,
};

use super::{
    Bug, Legal,
    machine::{Machine, eds_silenced, of_type, order, v2, version},
    store::Set,
};

/// What a stream asks of one type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Interest {
    wildcard: bool,
    names: BTreeSet<String>,
}

impl Interest {
    fn wants(&self, name: &str) -> bool {
        self.wildcard || self.names.contains(name)
    }

    fn is_empty(&self) -> bool {
        !self.wildcard && self.names.is_empty()
    }

    /// Whether `after` asks for something `self` (`None`: nothing yet) did not.
    fn widens(before: Option<&Interest>, after: &Interest) -> bool {
        match before {
            None => true,
            Some(b) => (after.wildcard && !b.wildcard) || !after.names.is_subset(&b.names),
        }
    }
}

#[derive(Default)]
struct TypeState {
    interest: Option<Interest>,
    /// A request named resources (the legacy wildcard is over).
    explicit: bool,
    nonce: String,
    /// The content hash and content (name → body) of the last response, and the hash of the
    /// content a NACK rejected.
    sent_hash: String,
    sent: BTreeMap<String, Bytes>,
    parked: Option<String>,
    /// Every name sent on this stream (what [`Bug::ReaddedNotResent`] wrongly trusts).
    ever: BTreeSet<String>,
    /// Names asked for while they did not exist ([`Bug::ForgetMissing`] never pushes them).
    forgotten: BTreeSet<String>,
}

pub(super) struct Sotw {
    bug: Bug,
    legal: Legal,
    /// On ADS, where types share the stream.
    ads: bool,
    nonces: u64,
    types: BTreeMap<String, TypeState>,
    eds_streams: Arc<AtomicU64>,
    eds_silent: Option<bool>,
}

impl Sotw {
    pub(super) fn new(bug: Bug, legal: Legal, ads: bool, eds_streams: Arc<AtomicU64>) -> Self {
        Self {
            bug,
            legal,
            ads,
            nonces: 0,
            types: BTreeMap::new(),
            eds_streams,
            eds_silent: None,
        }
    }

    /// The interest a request's names mean, given the one before: an empty list on a type that
    /// never named anything is the legacy wildcard; after names, an empty list means none.
    fn interest(&self, names: &[String], before: Option<&Interest>, explicit: bool) -> Interest {
        if names.is_empty() {
            let wildcard = !explicit || self.bug == Bug::EmptyIsWildcard;
            return Interest {
                wildcard,
                names: BTreeSet::new(),
            };
        }
        let star = names.iter().any(|n| n == "*") && self.bug != Bug::StarIsLiteral;
        let stays = self.bug == Bug::StarStays && before.is_some_and(|b| b.wildcard);
        let names = names
            .iter()
            .filter(|n| *n != "*" || self.bug == Bug::StarIsLiteral);
        Interest {
            wildcard: star || stays,
            names: names.cloned().collect(),
        }
    }

    /// What `url` would be sent now (only `only` under [`Legal::GroupPerResource`] and
    /// [`Bug::PartialState`]).
    fn content<'s>(
        &self,
        set: &'s Set,
        url: &str,
        only: Option<&BTreeSet<String>>,
    ) -> Vec<&'s Resource> {
        let Some(interest) = self.types.get(url).and_then(|s| s.interest.as_ref()) else {
            return Vec::new();
        };
        let picked = of_type(set, url).filter(|(name, _)| interest.wants(name));
        let picked = picked.filter(|(name, _)| only.is_none_or(|o| o.contains(*name)));
        picked.map(|(_, r)| r).collect()
    }

    fn respond(
        &mut self,
        set: &Set,
        url: &str,
        only: Option<&BTreeSet<String>>,
    ) -> DiscoveryResponse {
        let content = self.content(set, url, only);
        let hash = version(content.iter().copied());
        let version = match self.bug {
            Bug::FixedVersion => "v1".to_string(),
            _ => hash.clone(),
        };
        self.nonces += 1;
        let nonce = match self.bug {
            Bug::NonceIsVersion => version.clone(),
            _ => self.nonces.to_string(),
        };
        let any_type = if self.bug == Bug::AnyTypeV2 {
            v2(url)
        } else {
            url.to_string()
        };
        let mut resources: Vec<Any> = content
            .iter()
            .map(|r| Any {
                type_url: any_type.clone(),
                value: r.bytes.to_vec(),
            })
            .collect();
        if self.bug == Bug::DuplicateNames && !resources.is_empty() {
            resources.push(resources[0].clone());
        }
        let state = self.types.entry(url.to_string()).or_default();
        state.nonce = nonce.clone();
        state.sent_hash = hash;
        let sent = content.iter().map(|r| (r.name.clone(), r.bytes.clone()));
        if self.bug == Bug::PartialState {
            // It believes the client keeps what it was sent before, as in Delta.
            state.sent.extend(sent);
        } else {
            state.sent = sent.collect();
        }
        state.ever.extend(state.sent.keys().cloned());
        DiscoveryResponse {
            version_info: version,
            resources,
            type_url: if self.bug == Bug::ResponseTypeV2 {
                v2(url)
            } else {
                url.to_string()
            },
            nonce,
            ..Default::default()
        }
    }

    /// What a response for `url` holds under [`Bug::PartialState`]: only `new` of LDS/CDS.
    fn partial(&self, url: &str, new: BTreeSet<String>) -> Option<BTreeSet<String>> {
        let full_state = url == type_url::LISTENER || url == type_url::CLUSTER;
        (self.bug == Bug::PartialState && full_state && !new.is_empty()).then_some(new)
    }

    /// Whether the first request of a type, carrying `version`, goes unanswered: a client
    /// coming back under [`Bug::SkipResumed`], or holding the current wildcard set under
    /// [`Legal::SkipResumedWildcard`].
    fn skips_resumed(&self, set: &Set, url: &str, version: &str, interest: &Interest) -> bool {
        if version.is_empty() {
            return false;
        }
        let root = url == type_url::LISTENER || url == type_url::CLUSTER;
        let current = super::machine::version(of_type(set, url).map(|(_, r)| r));
        let wildcard_held = root && interest.wildcard && version == current;
        self.bug == Bug::SkipResumed || (self.legal == Legal::SkipResumedWildcard && wildcard_held)
    }

    /// Remembers the names of `url` that `set` does not hold ([`Bug::ForgetMissing`]).
    fn forget_missing(&mut self, set: &Set, url: &str) {
        let exists: BTreeSet<String> = of_type(set, url).map(|(n, _)| n.clone()).collect();
        if let Some(state) = self.types.get_mut(url) {
            let names = state.interest.iter().flat_map(|i| i.names.iter());
            let missing: Vec<String> = names.filter(|n| !exists.contains(*n)).cloned().collect();
            state.forgotten.extend(missing);
        }
    }
}

impl Machine for Sotw {
    type Request = DiscoveryRequest;
    type Response = DiscoveryResponse;

    fn on_request(
        &mut self,
        request: DiscoveryRequest,
        set: &Set,
    ) -> Result<Vec<DiscoveryResponse>, Status> {
        let url = request.type_url.clone();
        let known = type_url::order(&url) < type_url::ORDERED.len();
        if self.bug == Bug::UnknownTypeCloses && !known {
            return Err(Status::invalid_argument(format!("unknown type {url}")));
        }
        let first = !self.types.contains_key(&url);
        let state = self.types.entry(url.clone()).or_default();
        let nonce = request.response_nonce.as_str();
        if !nonce.is_empty() && nonce != state.nonce && self.bug != Bug::AnswerStale {
            return Ok(Vec::new());
        }
        let (answers, nack) = (!nonce.is_empty(), request.error_detail.is_some());
        if answers && nack {
            state.parked = Some(state.sent_hash.clone());
        }
        let resend = answers
            && match self.bug {
                Bug::ResendOnAck | Bug::PushAllOnAck => !nack,
                Bug::ResendOnNack => nack,
                _ => false,
            };
        let before = state.interest.clone();
        let ever = state.ever.clone();
        let explicit = state.explicit;
        let after = self.interest(&request.resource_names, before.as_ref(), explicit);
        let mut widened = Interest::widens(before.as_ref(), &after);
        let narrowed = before.is_some() && before.as_ref() != Some(&after) && !widened;
        let added: BTreeSet<String> = match &before {
            Some(b) => after.names.difference(&b.names).cloned().collect(),
            None => BTreeSet::new(),
        };
        match self.bug {
            Bug::IgnoreWidening => widened &= before.is_none(),
            Bug::ReaddedNotResent if !added.is_empty() => {
                widened &= !added.iter().all(|n| ever.contains(n));
            }
            Bug::SilentEds
                if url == type_url::ENDPOINT
                    && eds_silenced(self.bug, &self.eds_streams, &mut self.eds_silent) =>
            {
                widened = false
            }
            _ => {}
        }
        if first && self.skips_resumed(set, &url, &request.version_info, &after) {
            widened = false;
        }
        // Grouping is free only where the full state is not required (grouping.1, grouping.2).
        let full_state = url == type_url::LISTENER || url == type_url::CLUSTER;
        let grouped = self.legal == Legal::GroupPerResource && !added.is_empty() && !full_state;
        let only = match grouped {
            true => Some(added.clone()),
            false => self.partial(&url, added),
        };
        let answer_narrowing = narrowed && self.legal == Legal::AnswerNarrowing;
        let state = self.types.get_mut(&url).expect("inserted");
        state.explicit |= !request.resource_names.is_empty();
        state.interest = Some(after);
        if self.bug == Bug::ForgetMissing {
            self.forget_missing(set, &url);
        }
        let mut out = Vec::new();
        if widened || resend || answer_narrowing {
            out.push(self.respond(set, &url, only.as_ref()));
        }
        if resend && self.bug == Bug::PushAllOnAck {
            let others: Vec<String> = self.types.keys().filter(|u| **u != url).cloned().collect();
            for other in others {
                out.push(self.respond(set, &other, None));
            }
        }
        let unasked = !self.types.contains_key(type_url::LISTENER);
        if self.bug == Bug::PushUnasked && self.ads && first && url == type_url::CLUSTER && unasked
        {
            // Pushed as if LDS had been asked for, with the wildcard.
            self.types
                .entry(type_url::LISTENER.to_string())
                .or_default()
                .interest = Some(Interest {
                wildcard: true,
                names: BTreeSet::new(),
            });
            out.push(self.respond(set, type_url::LISTENER, None));
            self.types.remove(type_url::LISTENER);
        }
        Ok(out)
    }

    fn on_set(&mut self, set: &Set) -> Vec<DiscoveryResponse> {
        let mut planned = Vec::new();
        let urls: Vec<String> = self.types.keys().cloned().collect();
        for url in urls {
            if url == type_url::ENDPOINT && self.eds_silent == Some(true) {
                continue;
            }
            let state = &self.types[&url];
            let wants_any = state.interest.as_ref().is_some_and(|i| !i.is_empty());
            let content = self.content(set, &url, None);
            let remembered = content
                .iter()
                .filter(|r| !state.forgotten.contains(&r.name));
            let now = version(remembered.copied());
            if !wants_any || now == state.sent_hash || state.parked.as_ref() == Some(&now) {
                continue;
            }
            let changed: BTreeSet<String> = content
                .iter()
                .filter(|r| state.sent.get(&r.name) != Some(&r.bytes))
                .map(|r| r.name.clone())
                .collect();
            // Removal only: nothing in the new content is new to the client.
            let removal_only = changed.is_empty();
            let only = self.partial(&url, changed);
            let response = self.respond(set, &url, only.as_ref());
            planned.push((url, removal_only, response));
        }
        order(planned, self.bug, self.legal)
    }
}
