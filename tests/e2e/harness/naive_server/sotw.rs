//! The naive server's SotW stream: per type an interest, the last response (nonce, what it
//! held) and the content of a NACKed response, which is not sent again.

use std::collections::{BTreeMap, BTreeSet};

use prost::bytes::Bytes;

use tonic::Status;
use xdsloop_proto::{
    Resource,
    discovery::{Any, DiscoveryRequest, DiscoveryResponse},
    type_url,
};

use super::{
    Bug, Legal,
    machine::{Machine, of_type, order, v2, version},
    store::Set,
};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Interest {
    Wildcard,
    Names(BTreeSet<String>),
}

impl Interest {
    fn wants(&self, name: &str) -> bool {
        match self {
            Interest::Wildcard => true,
            Interest::Names(names) => names.contains(name),
        }
    }

    fn widens(before: Option<&Interest>, after: &Interest) -> bool {
        match (before, after) {
            (None, _) | (Some(Interest::Names(_)), Interest::Wildcard) => true,
            (Some(Interest::Names(a)), Interest::Names(b)) => !b.is_subset(a),
            (Some(Interest::Wildcard), _) => false,
        }
    }
}

#[derive(Default)]
struct TypeState {
    interest: Option<Interest>,
    nonce: String,
    /// The version and content (name → body) of the last response, and the version a NACK
    /// rejected.
    sent_version: String,
    sent: BTreeMap<String, Bytes>,
    parked: Option<String>,
    /// Every name sent on this stream (what [`Bug::ReaddedNotResent`] wrongly trusts).
    ever: BTreeSet<String>,
}

pub struct Sotw {
    bug: Bug,
    legal: Legal,
    nonces: u64,
    types: BTreeMap<String, TypeState>,
}

impl Sotw {
    pub fn new(bug: Bug, legal: Legal) -> Self {
        Self {
            bug,
            legal,
            nonces: 0,
            types: BTreeMap::new(),
        }
    }

    /// The interest a request's names mean, given the one before: a wildcard entered with an
    /// empty list (legacy) stays one while the list stays empty; after explicit names an
    /// empty list means none.
    fn interest(&self, names: &[String], before: Option<&Interest>) -> Interest {
        if names.is_empty() {
            let legacy = matches!(before, None | Some(Interest::Wildcard));
            let wildcard = legacy || self.bug == Bug::EmptyIsWildcard;
            return if wildcard {
                Interest::Wildcard
            } else {
                Interest::Names(BTreeSet::new())
            };
        }
        if names.iter().any(|n| n == "*") && self.bug != Bug::StarIsLiteral {
            return Interest::Wildcard;
        }
        Interest::Names(names.iter().cloned().collect())
    }

    /// What `url` would be sent now (only `only` under [`Legal::GroupPerResource`]).
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
        let version = version(content.iter().copied());
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
        let resources = content
            .iter()
            .map(|r| Any {
                type_url: any_type.clone(),
                value: r.bytes.to_vec(),
            })
            .collect();
        let state = self.types.entry(url.to_string()).or_default();
        state.nonce = nonce.clone();
        state.sent_version = version.clone();
        state.sent = content
            .iter()
            .map(|r| (r.name.clone(), r.bytes.clone()))
            .collect();
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
        let state = self.types.entry(url.clone()).or_default();
        let nonce = request.response_nonce.as_str();
        if !nonce.is_empty() && nonce != state.nonce && self.bug != Bug::AnswerStale {
            return Ok(Vec::new());
        }
        let (answers, nack) = (!nonce.is_empty(), request.error_detail.is_some());
        if answers && nack {
            state.parked = Some(state.sent_version.clone());
        }
        let resend = answers
            && match self.bug {
                Bug::ResendOnAck | Bug::PushAllOnAck => !nack,
                Bug::ResendOnNack => nack,
                _ => false,
            };
        let before = state.interest.clone();
        let ever = state.ever.clone();
        let after = self.interest(&request.resource_names, before.as_ref());
        let mut widened = Interest::widens(before.as_ref(), &after);
        let narrowed = before.is_some() && before.as_ref() != Some(&after) && !widened;
        let added: BTreeSet<String> = match (&before, &after) {
            (Some(Interest::Names(a)), Interest::Names(b)) => b.difference(a).cloned().collect(),
            _ => BTreeSet::new(),
        };
        match self.bug {
            Bug::IgnoreWidening => widened &= before.is_none(),
            Bug::ReaddedNotResent if !added.is_empty() => {
                widened &= !added.iter().all(|n| ever.contains(n));
            }
            _ => {}
        }
        let per_resource = self.legal == Legal::GroupPerResource && !added.is_empty();
        let only = per_resource.then_some(&added);
        let answer_narrowing = narrowed && self.legal == Legal::AnswerNarrowing;
        self.types.get_mut(&url).expect("inserted").interest = Some(after);
        let mut out = Vec::new();
        if widened || resend || answer_narrowing {
            out.push(self.respond(set, &url, only));
        }
        if resend && self.bug == Bug::PushAllOnAck {
            let others: Vec<String> = self.types.keys().filter(|u| **u != url).cloned().collect();
            for other in others {
                out.push(self.respond(set, &other, None));
            }
        }
        Ok(out)
    }

    fn on_set(&mut self, set: &Set) -> Vec<DiscoveryResponse> {
        let mut planned = Vec::new();
        let urls: Vec<String> = self.types.keys().cloned().collect();
        for url in urls {
            let state = &self.types[&url];
            let wants_any = match &state.interest {
                None => false,
                Some(Interest::Names(names)) => !names.is_empty(),
                Some(Interest::Wildcard) => true,
            };
            let now = version(self.content(set, &url, None).into_iter());
            if !wants_any || now == state.sent_version || state.parked.as_ref() == Some(&now) {
                continue;
            }
            // Removal only: nothing in the new content is new to the client.
            let content = self.content(set, &url, None);
            let removal_only = content
                .iter()
                .all(|r| state.sent.get(&r.name) == Some(&r.bytes));
            let response = self.respond(set, &url, None);
            planned.push((url, removal_only, response));
        }
        order(planned, self.bug, self.legal)
    }
}
