//! Checks a response before anything is applied (C6): every resource decodes, carries the
//! response's type, names are unique, (Delta) no name is both added and removed, and the
//! user's validator accepts it. Any failure rejects the whole response: the store keeps the
//! last good config and the response is NACKed with every reason found. `xdstp://` names come
//! out normalised (C19), as subscriptions hold them.

use std::collections::BTreeSet;

use bytes::Bytes;
use xdsloop_proto::Codec;
use xdsloop_proto::discovery::{Any, WireResource};
use xdsloop_proto::xdstp;

pub use crate::config::Validator;

/// A resource that passed validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub name: String,
    /// The per-resource version (Delta); empty for SotW.
    pub version: String,
    pub bytes: Bytes,
}

/// Why a response was rejected: one line per problem found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rejection {
    pub problems: Vec<String>,
    /// The names of the response's resources that could be read (CSDS reports them NACKED).
    pub names: BTreeSet<String>,
}

impl Rejection {
    pub fn message(&self) -> String {
        self.problems.join("; ")
    }
}

/// Validates the resources of a SotW response of `type_url`.
pub fn sotw(
    codec: &Codec,
    type_url: &str,
    resources: Vec<Any>,
    validator: Option<&Validator>,
) -> Result<Vec<Decoded>, Rejection> {
    let mut checker = Checker::new(codec, type_url, validator);
    for (index, any) in resources.into_iter().enumerate() {
        checker.check(index, None, String::new(), any);
    }
    checker.finish()
}

/// Validates a Delta response of `type_url`; returns the added resources and removed names.
pub fn delta(
    codec: &Codec,
    type_url: &str,
    resources: Vec<WireResource>,
    removed: &[String],
    validator: Option<&Validator>,
) -> Result<(Vec<Decoded>, Vec<String>), Rejection> {
    let mut checker = Checker::new(codec, type_url, validator);
    for (index, resource) in resources.into_iter().enumerate() {
        match resource.resource {
            Some(any) => checker.check(index, Some(&resource.name), resource.version, any),
            // A body-less resource only refreshes a TTL (xDS "heartbeat"): nothing to apply.
            None => tracing::debug!(name = %resource.name, "delta resource without body ignored"),
        }
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
    accepted: Vec<Decoded>,
    rejection: Rejection,
}

impl<'a> Checker<'a> {
    fn new(codec: &'a Codec, type_url: &'a str, validator: Option<&'a Validator>) -> Self {
        Self {
            codec,
            type_url,
            validator,
            names: BTreeSet::new(),
            accepted: Vec::new(),
            rejection: Rejection::default(),
        }
    }

    fn fail(&mut self, problem: String) {
        self.rejection.problems.push(problem);
    }

    /// Takes the `Any` by value so its bytes move into the store without a copy.
    fn check(&mut self, index: usize, wire_name: Option<&str>, version: String, any: Any) {
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
        self.accepted.push(Decoded {
            name,
            version,
            bytes: Bytes::from(any.value),
        });
    }

    fn finish(mut self) -> Result<Vec<Decoded>, Rejection> {
        if self.rejection.problems.is_empty() {
            Ok(self.accepted)
        } else {
            self.rejection.names = self.names;
            Err(self.rejection)
        }
    }
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
        let names: Vec<_> = ok.iter().map(|d| d.name.as_str()).collect();
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
            (added[0].version.as_str(), removed[0].as_str()),
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
