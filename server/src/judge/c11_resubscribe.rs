//! C11: a client that reconnects resubscribes every type it held, declares the versions it
//! had (SotW: `version_info` of the first request per type), and (Delta) declares in
//! `initial_resource_versions` exactly the versions it ACKed.
//!
//! Judged only for a new stream on the same connection as the node's previous stream of that
//! service (same peer address: the same client process). A restarted process legitimately
//! declares nothing, and a client that switched from another control plane declares foreign
//! versions; neither can be told apart from a fault on a new connection. Names are not
//! compared (watches may change across a reconnect), and only types whose last response the
//! client ACKed are (an unanswered one may or may not have been applied).

use std::{
    collections::{BTreeMap, HashMap},
    time::{Duration, Instant},
};

use super::{
    Violation,
    nodes::{HeldType, LastStream, MAX_KNOWN},
};
use crate::protocol::held::Held;

/// How long a reconnected client has to resubscribe what it held.
pub(crate) const RESUBSCRIBE_WITHIN: Duration = Duration::from_secs(5);

/// What the previous stream left; checked against the new stream's first requests.
#[derive(Debug)]
pub(crate) struct Resubscribe {
    last: LastStream,
    deadline: Instant,
    /// C11.types was judged (types asked for again leave `last` as they arrive).
    done: bool,
}

impl Resubscribe {
    pub(crate) fn new(last: LastStream, now: Instant) -> Self {
        Self {
            last,
            deadline: now + RESUBSCRIBE_WITHIN,
            done: false,
        }
    }

    /// The new stream's first request for `url` declares `version` (SotW) or `initial`
    /// (Delta).
    pub(crate) fn first_request(
        &mut self,
        url: &str,
        version: &str,
        initial: Option<&HashMap<String, String>>,
    ) -> Option<Violation> {
        let held = self.last.types.remove(url)?;
        let previous = self.last.stream;
        if let Some(initial) = initial {
            return versions(url, previous, &held, initial);
        }
        let acked = held.acked.as_deref()?;
        if version == acked {
            return None;
        }
        Some(Violation::new(
            "C11.version",
            Some(url),
            format!(
                "the reconnected client's first request for {url} declares version_info \
                 {version:?}; on stream {previous} it had ACKed {acked:?}"
            ),
        ))
    }

    /// Past the deadline (or at the stream's end, `force`): the types held and not asked for
    /// again. Reported once.
    pub(crate) fn check(&mut self, now: Instant, force: bool) -> Option<Violation> {
        if self.done || (!force && now < self.deadline) {
            return None;
        }
        if force && now < self.deadline {
            // Ended before the client had its time: nothing to judge.
            self.done = true;
            return None;
        }
        self.done = true;
        let missing: Vec<&str> = self
            .last
            .types
            .iter()
            .filter(|(_, held)| held.wanted && held.acked.is_some())
            .map(|(url, _)| url.as_str())
            .collect();
        if missing.is_empty() {
            return None;
        }
        Some(Violation::new(
            "C11.types",
            None,
            format!(
                "the reconnected client did not resubscribe within {RESUBSCRIBE_WITHIN:?} what \
                 it held on stream {}: {}",
                self.last.stream,
                missing.join(", ")
            ),
        ))
    }
}

/// Delta: declared versions that differ from, or were never among, the ACKed ones.
fn versions(
    url: &str,
    previous: u64,
    held: &HeldType,
    initial: &HashMap<String, String>,
) -> Option<Violation> {
    held.acked.as_ref()?;
    let known = held.known.as_ref()?;
    let mut wrong: Vec<String> = initial
        .iter()
        .filter(|(name, v)| known.get(*name) != Some(*v))
        .map(|(name, v)| match known.get(name) {
            Some(acked) => format!("{name} {v:?} (ACKed {acked:?})"),
            None => format!("{name} {v:?} (never sent on stream {previous})"),
        })
        .collect();
    if wrong.is_empty() {
        return None;
    }
    wrong.sort();
    let count = wrong.len();
    wrong.truncate(3);
    Some(Violation::new(
        "C11.versions",
        Some(url),
        format!(
            "the reconnected client's initial_resource_versions for {url} differ from what it \
             ACKed on stream {previous} for {count} resource(s): {}",
            wrong.join(", ")
        ),
    ))
}

/// What a closing stream leaves for the next one on its connection.
pub(crate) fn last_stream(stream: u64, held: Held) -> LastStream {
    let types = held.types.into_iter().map(|(url, t)| {
        let acked = t.last_acked.filter(|_| t.acked);
        let known = (acked.is_some() && t.delta_known.len() <= MAX_KNOWN).then(|| {
            let held = t.delta_known.into_iter();
            held.filter_map(|(name, v)| Some((name, v?)))
                .collect::<BTreeMap<_, _>>()
        });
        let held = HeldType {
            wanted: !t.interest.is_empty(),
            acked,
            known,
        };
        (url, held)
    });
    LastStream {
        stream,
        types: types.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (type, ACKed version, Delta versions by name).
    type Held<'a> = (&'a str, Option<&'a str>, &'a [(&'a str, &'a str)]);

    fn last(types: &[Held<'_>]) -> LastStream {
        let types = types.iter().map(|(url, acked, known)| {
            let known = known.iter().map(|(n, v)| (n.to_string(), v.to_string()));
            let held = HeldType {
                wanted: true,
                acked: acked.map(str::to_string),
                known: Some(known.collect()),
            };
            (url.to_string(), held)
        });
        LastStream {
            stream: 4,
            types: types.collect(),
        }
    }

    #[test]
    fn c11_version_sotw_declares_what_it_acked() {
        let now = Instant::now();
        let mut r = Resubscribe::new(last(&[("cds", Some("v3"), &[]), ("lds", None, &[])]), now);
        assert_eq!(r.first_request("cds", "v3", None), None);
        assert_eq!(
            r.first_request("lds", "", None),
            None,
            "nothing ACKed: not judged"
        );
        let mut r = Resubscribe::new(last(&[("cds", Some("v3"), &[])]), now);
        let v = r.first_request("cds", "", None).unwrap();
        assert_eq!((v.rule, v.check), ("C11", "C11.version"));
        assert!(
            v.message
                .contains("declares version_info \"\"; on stream 4 it had ACKed \"v3\"")
        );
    }

    #[test]
    fn c11_versions_delta_declares_exactly_the_acked_versions() {
        let now = Instant::now();
        let held: &[(&str, &str)] = &[("a", "1"), ("b", "2")];
        let mut r = Resubscribe::new(last(&[("cds", Some("v"), held)]), now);
        let good = HashMap::from([("a".to_string(), "1".to_string())]);
        assert_eq!(
            r.first_request("cds", "", Some(&good)),
            None,
            "a dropped watch passes"
        );
        let mut r = Resubscribe::new(last(&[("cds", Some("v"), held)]), now);
        let bad = HashMap::from([
            ("a".to_string(), "9".to_string()),
            ("z".to_string(), "1".to_string()),
        ]);
        let v = r.first_request("cds", "", Some(&bad)).unwrap();
        assert_eq!(v.check, "C11.versions");
        assert!(v.message.contains("a \"9\" (ACKed \"1\")"), "{}", v.message);
        assert!(
            v.message.contains("z \"1\" (never sent on stream 4)"),
            "{}",
            v.message
        );
    }

    #[test]
    fn c11_types_every_held_type_comes_back_in_time() {
        let t0 = Instant::now();
        let held = last(&[("cds", Some("v1"), &[]), ("eds", Some("v1"), &[])]);
        let mut r = Resubscribe::new(held, t0);
        r.first_request("cds", "v1", None);
        assert_eq!(
            r.check(t0 + Duration::from_secs(1), false),
            None,
            "still in time"
        );
        let v = r.check(t0 + RESUBSCRIBE_WITHIN, false).unwrap();
        assert_eq!(v.check, "C11.types");
        assert!(v.message.ends_with("on stream 4: eds"), "{}", v.message);
        assert_eq!(r.check(t0 + RESUBSCRIBE_WITHIN, true), None, "once");
        let held = last(&[("cds", Some("v1"), &[])]);
        let mut r = Resubscribe::new(held, t0);
        assert_eq!(
            r.check(t0 + Duration::from_secs(1), true),
            None,
            "closed too soon to tell"
        );
    }
}
