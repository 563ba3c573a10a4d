//! Checks a response before anything is applied (C6): every resource decodes, carries the
//! response's type, names are unique, (Delta) no name is both added and removed, and the
//! user's validator accepts it. Any failure rejects the whole response: the store keeps the
//! last good config and the response is NACKed with every reason found. `xdstp://` names come
//! out normalised (C19), as subscriptions hold them.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use prost::Message;
use xdsloop_proto::Codec;
use xdsloop_proto::discovery::{Any, WireResource};
use xdsloop_proto::envoy::google::protobuf::Duration as ProtoDuration;
use xdsloop_proto::wrapper::RESOURCE_WRAPPER;
use xdsloop_proto::xdstp;

pub(crate) use crate::config::Validator;

/// A resource that passed validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub name: String,
    /// The per-resource version (Delta); empty for SotW.
    pub version: String,
    pub bytes: Bytes,
    /// The TTL its `Resource` wrapper gave it (C17); `None`: it lives until removed.
    pub ttl: Option<Duration>,
}

/// A `Resource` wrapper without `resource`: a heartbeat if the client holds `name` (at
/// `version`, for Delta), refreshing its TTL without an update (C17).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Heartbeat {
    pub name: String,
    /// Delta: the version it refers to; empty for SotW (the response's version says it).
    pub version: String,
    pub ttl: Option<Duration>,
}

/// A response's resources that passed validation, and its heartbeats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Validated {
    pub resources: Vec<Decoded>,
    pub heartbeats: Vec<Heartbeat>,
}

/// Why a response was rejected: one line per problem found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rejection {
    /// One line per problem found.
    pub problems: Vec<String>,
    /// The names of the response's resources that could be read (CSDS reports them NACKED).
    pub names: BTreeSet<String>,
}

impl Rejection {
    /// A rejection of the whole update, for `message`: what a subscription's callbacks
    /// return to NACK an update (Envoy's `onConfigUpdate` failing); the message becomes the
    /// NACK's `error_detail`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            problems: vec![message.into()],
            names: BTreeSet::new(),
        }
    }

    /// The problems joined with `; `: the NACK's `error_detail` message.
    pub fn message(&self) -> String {
        self.problems.join("; ")
    }
}

/// Validates the resources of a SotW response of `type_url`. An `Any` may be a `Resource`
/// wrapper (the client advertises `xds.config.resource-in-sotw`): with `resource`, the
/// resource and its TTL; without, a heartbeat.
pub(crate) fn sotw(
    codec: &Codec,
    type_url: &str,
    resources: Vec<Any>,
    validator: Option<&Validator>,
) -> Result<Validated, Rejection> {
    let mut checker = Checker::new(codec, type_url, validator);
    for (index, any) in resources.into_iter().enumerate() {
        if any.type_url != RESOURCE_WRAPPER {
            checker.check(index, None, String::new(), None, any);
            continue;
        }
        match WireResource::decode(any.value.as_slice()) {
            Ok(wrapper) => checker.wrapped(index, wrapper, String::new()),
            Err(e) => checker.fail(format!("resource #{index}: a Resource wrapper: {e}")),
        }
    }
    checker.finish()
}

/// Validates a Delta response of `type_url`; returns the added resources (and heartbeats:
/// resources without a body) and the removed names.
pub(crate) fn delta(
    codec: &Codec,
    type_url: &str,
    resources: Vec<WireResource>,
    removed: &[String],
    validator: Option<&Validator>,
) -> Result<(Validated, Vec<String>), Rejection> {
    let mut checker = Checker::new(codec, type_url, validator);
    for (index, resource) in resources.into_iter().enumerate() {
        let version = resource.version.clone();
        checker.wrapped(index, resource, version);
    }
    let mut removed: Vec<String> = removed.to_vec();
    removed.iter_mut().for_each(xdstp::normalize_owned);
    for name in &removed {
        if checker.names.contains(name) {
            checker.fail(format!("resource \"{name}\" is both added and removed"));
        }
    }
    let added = checker.finish()?;
    Ok((added, removed))
}

struct Checker<'a> {
    codec: &'a Codec,
    type_url: &'a str,
    validator: Option<&'a Validator>,
    names: BTreeSet<String>,
    accepted: Validated,
    rejection: Rejection,
}

impl<'a> Checker<'a> {
    fn new(codec: &'a Codec, type_url: &'a str, validator: Option<&'a Validator>) -> Self {
        Self {
            codec,
            type_url,
            validator,
            names: BTreeSet::new(),
            accepted: Validated::default(),
            rejection: Rejection::default(),
        }
    }

    fn fail(&mut self, problem: String) {
        self.rejection.problems.push(problem);
    }

    /// A `Resource`: its body checked like any resource, with its TTL; without a body, a
    /// heartbeat, which must name what it refreshes.
    fn wrapped(&mut self, index: usize, wrapper: WireResource, version: String) {
        let ttl = wrapper.ttl.and_then(|d| duration(&d));
        match wrapper.resource {
            Some(any) => self.check(index, Some(&wrapper.name), version, ttl, any),
            None if wrapper.name.is_empty() => {
                self.fail(format!(
                    "resource #{index}: a Resource without resource or name"
                ));
            }
            None => self.accepted.heartbeats.push(Heartbeat {
                name: xdstp::normalize(&wrapper.name).into_owned(),
                version,
                ttl,
            }),
        }
    }

    /// Takes the `Any` by value so its bytes move into the store without a copy.
    fn check(
        &mut self,
        index: usize,
        wire_name: Option<&str>,
        version: String,
        ttl: Option<Duration>,
        any: Any,
    ) {
        if any.type_url != self.type_url {
            let found = &any.type_url;
            let expected = self.type_url;
            self.fail(format!(
                "resource #{index}: @type {found} does not match the response type {expected}"
            ));
            return;
        }
        let mut name = match self.codec.resource_name(self.type_url, &any.value) {
            Ok(name) => name,
            Err(e) => return self.fail(format!("resource #{index}: {e}")),
        };
        // C19: names are compared with their context parameters sorted.
        xdstp::normalize_owned(&mut name);
        let wire_name = wire_name.map(xdstp::normalize);
        if let Some(wire) = wire_name.filter(|w| !w.is_empty() && *w != name) {
            return self.fail(format!(
                "resource #{index}: named \"{wire}\" but its body is named \"{name}\""
            ));
        }
        if !self.names.insert(name.clone()) {
            return self.fail(format!("duplicate resource name \"{name}\""));
        }
        if let Some(validator) = self.validator
            && let Err(reason) = validator(self.type_url, &name, &any.value)
        {
            return self.fail(format!("resource \"{name}\": {reason}"));
        }
        self.accepted.resources.push(Decoded {
            name,
            version,
            bytes: Bytes::from(any.value),
            ttl,
        });
    }

    fn finish(mut self) -> Result<Validated, Rejection> {
        if self.rejection.problems.is_empty() {
            Ok(self.accepted)
        } else {
            self.rejection.names = self.names;
            Err(self.rejection)
        }
    }
}

/// A positive protobuf `Duration` (a zero or negative TTL means none).
fn duration(d: &ProtoDuration) -> Option<Duration> {
    let (seconds, nanos) = (u64::try_from(d.seconds).ok()?, u32::try_from(d.nanos).ok()?);
    let ttl = Duration::new(seconds, nanos);
    (!ttl.is_zero()).then_some(ttl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
    use xdsloop_proto::type_url::{CLUSTER, LISTENER};

    fn cluster(name: &str) -> Any {
        let c = Cluster {
            name: name.into(),
            ..Default::default()
        };
        Any {
            type_url: CLUSTER.into(),
            value: c.encode_to_vec(),
        }
    }

    fn wire(name: &str) -> WireResource {
        WireResource {
            name: name.into(),
            version: format!("h-{name}"),
            resource: Some(cluster(name)),
            ..Default::default()
        }
    }

    #[test]
    fn valid_resources_are_decoded_with_their_names() {
        let codec = Codec::envoy();
        let ok = sotw(&codec, CLUSTER, vec![cluster("a"), cluster("b")], None).unwrap();
        let names: Vec<_> = ok.resources.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn c6_rejects_duplicate_names() {
        let err = sotw(
            &Codec::envoy(),
            CLUSTER,
            vec![cluster("a"), cluster("a")],
            None,
        )
        .unwrap_err();
        assert!(
            err.message().contains("duplicate resource name \"a\""),
            "{err:?}"
        );
    }

    #[test]
    fn c6_rejects_an_any_of_the_wrong_type() {
        let mut wrong = cluster("a");
        wrong.type_url = LISTENER.into();
        let err = sotw(&Codec::envoy(), CLUSTER, vec![wrong], None).unwrap_err();
        assert!(
            err.message().contains("does not match the response type"),
            "{err:?}"
        );
    }

    #[test]
    fn c6_rejects_an_undecodable_resource() {
        let garbage = Any {
            type_url: CLUSTER.into(),
            value: vec![0xff, 0xff, 0xff],
        };
        let err = sotw(&Codec::envoy(), CLUSTER, vec![cluster("ok"), garbage], None).unwrap_err();
        assert!(err.message().contains("resource #1"), "{err:?}");
    }

    #[test]
    fn c6_rejects_a_delta_name_both_added_and_removed() {
        let removed = vec!["a".to_string()];
        let err = delta(&Codec::envoy(), CLUSTER, vec![wire("a")], &removed, None).unwrap_err();
        assert!(err.message().contains("both added and removed"), "{err:?}");
        let (added, removed) = delta(
            &Codec::envoy(),
            CLUSTER,
            vec![wire("a")],
            &["b".into()],
            None,
        )
        .unwrap();
        assert_eq!(
            (added.resources[0].version.as_str(), removed[0].as_str()),
            ("h-a", "b")
        );
    }

    #[test]
    fn user_validator_rejects_with_its_reason() {
        let validator: Validator = std::sync::Arc::new(|_, name, _| {
            if name == "bad" {
                Err("not allowed".into())
            } else {
                Ok(())
            }
        });
        let err = sotw(
            &Codec::envoy(),
            CLUSTER,
            vec![cluster("good"), cluster("bad")],
            Some(&validator),
        )
        .unwrap_err();
        assert_eq!(err.message(), "resource \"bad\": not allowed");
    }
}
