//! C4: every response is answered with its own nonce, and an ACK carries the version that was
//! sent with it. Also: no request names a nonce this stream never sent (a nonce from an
//! earlier stream is C11's: nonces do not survive a reconnect).
//!
//! On SotW streams "every response answered" is not judged: gRPC buffers requests while one is
//! in flight, so the ACK of one response can be merged into the ACK of the next, and every SotW
//! request that changes the interest repeats the latest nonce. The spec's word is SHOULD ("The
//! xDS client should ACK or NACK every DiscoveryResponse"), and that merging is a reason. On
//! Delta streams each response is answered with its own nonce (Envoy queues an ACK per
//! response), so an answer that passes over an earlier response is a violation
//! (`C4.delta-unanswered`).

use super::{Violation, c5_nack::shown};
use crate::protocol::subscription::Ledger;

/// Delta: the client answered `<stream>-<n>` of `type_url`; `unanswered` holds the responses
/// of the type not answered yet. A violation names those before `n` it passed over.
pub(crate) fn unanswered(
    type_url: &str,
    stream: u64,
    unanswered: &mut Vec<u64>,
    n: u64,
) -> Option<Violation> {
    let skipped: Vec<u64> = unanswered.iter().copied().filter(|m| *m < n).collect();
    unanswered.retain(|m| *m > n);
    if skipped.is_empty() {
        return None;
    }
    let names: Vec<String> = skipped.iter().map(|m| format!("{stream}-{m}")).collect();
    Some(Violation::new(
        "C4.delta-unanswered",
        Some(type_url),
        format!(
            "the client answered {stream}-{n} of {type_url}, passing over {} never ACKed nor \
             NACKed",
            names.join(", ")
        ),
    ))
}

/// Our nonces are `<stream>-<n>` ([`crate::protocol::nonce::NonceSource`]).
pub(crate) fn parse(nonce: &str) -> Option<(u64, u64)> {
    let (stream, n) = nonce.split_once('-')?;
    Some((stream.parse().ok()?, n.parse().ok()?))
}

/// A non-empty `response_nonce` this stream never sent for `type_url`: not ours at all, from
/// an earlier stream, issued later than any response of this type went on the wire
/// (`highest`, 0 for none: pushes, resends and heartbeats alike), or for a type this stream
/// never answered.
pub(crate) fn nonce(
    stream: u64,
    type_url: &str,
    nonce: &str,
    highest: u64,
    issued: u64,
) -> Option<Violation> {
    if nonce.is_empty() {
        return None;
    }
    let unknown = |why: &str| {
        Some(Violation::new(
            "C4.unknown-nonce",
            Some(type_url),
            format!(
                "request for {type_url} names nonce {} which this stream (stream {stream}, \
                 {issued} nonces sent) never sent{why}",
                shown(nonce)
            ),
        ))
    };
    let Some((from, n)) = parse(nonce) else {
        return unknown("");
    };
    if from != stream {
        if from > stream || n == 0 {
            return unknown("");
        }
        return Some(Violation::new(
            "C11.old-stream-nonce",
            Some(type_url),
            format!(
                "request for {type_url} on stream {stream} names nonce {nonce} from stream \
                 {from}: nonces do not survive a reconnect (C11: clear nonces)"
            ),
        ));
    }
    if n == 0 || n > issued {
        return unknown("");
    }
    if highest == 0 {
        return unknown(&format!(
            " for {type_url} (no response of that type was sent)"
        ));
    }
    if n > highest {
        return unknown(&format!(
            " for {type_url} (its latest response of that type had nonce {stream}-{highest})"
        ));
    }
    None
}

/// A SotW request that ACKs the latest response of its type (its nonce, no error) with a
/// `version_info` other than the one sent with that nonce. A response a fault changed on its
/// way out is not judged. Returns the violation to report if the machine confirms the request
/// was a plain ACK that changed no interest (a request that changes the interest carries the
/// latest nonce with the last *accepted* version, which may be older).
pub(crate) fn ack_version(
    type_url: &str,
    version: &str,
    nonce: &str,
    ledger: Option<&Ledger>,
) -> Option<Violation> {
    let sent = ledger?.last_sent.as_ref()?;
    if sent.nonce != nonce || sent.version == version || sent.fault.is_some() {
        return None;
    }
    Some(Violation::new(
        "C4.ack-version",
        Some(type_url),
        format!(
            "ACK of {type_url} nonce {nonce} carries version_info {version:?}, but the response \
             with that nonce had {:?}",
            sent.version
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::wire::{FaultMark, WireFate};

    fn sent(version: &str, nonce: &str) -> Ledger {
        let mut ledger = Ledger::default();
        ledger.record_sent(version, nonce, 1, std::time::SystemTime::now());
        ledger
    }

    #[test]
    fn c4_nonces_of_this_stream_and_type_pass() {
        assert_eq!(nonce(7, "cds", "", 3, 3), None);
        assert_eq!(nonce(7, "cds", "7-3", 3, 3), None);
        assert_eq!(
            nonce(7, "cds", "7-1", 3, 3),
            None,
            "an older one is stale, not unknown"
        );
    }

    #[test]
    fn c4_unknown_nonce_names_what_was_wrong() {
        for (bad, why) in [
            ("bogus", ""),
            ("7-9", ""),
            ("7-0", ""),
            ("9-1", ""),
            ("7-4", "(its latest response of that type had nonce 7-3)"),
        ] {
            let issued = if bad == "7-4" { 4 } else { 3 };
            let v = nonce(7, "cds", bad, 3, issued).unwrap_or_else(|| panic!("{bad}"));
            assert_eq!(v.check, "C4.unknown-nonce", "{bad}");
            assert!(
                v.message.contains(bad) && v.message.contains(why),
                "{}",
                v.message
            );
        }
        let v = nonce(7, "eds", "7-2", 0, 3).unwrap();
        assert!(
            v.message.contains("no response of that type was sent"),
            "{}",
            v.message
        );
    }

    #[test]
    fn c11_a_nonce_from_an_earlier_stream_is_named_as_such() {
        let v = nonce(7, "cds", "5-2", 0, 0).unwrap();
        assert_eq!((v.rule, v.check), ("C11", "C11.old-stream-nonce"));
        assert!(v.message.contains("from stream 5"), "{}", v.message);
    }

    #[test]
    fn c4_an_ack_carries_the_version_sent_with_its_nonce() {
        let l = sent("v2", "7-3");
        assert_eq!(ack_version("cds", "v2", "7-3", Some(&l)), None);
        assert_eq!(
            ack_version("cds", "v1", "7-2", Some(&l)),
            None,
            "not the latest: stale"
        );
        let v = ack_version("cds", "v1", "7-3", Some(&l)).unwrap();
        assert_eq!(v.check, "C4.ack-version");
        assert_eq!(
            &*v.message,
            "ACK of cds nonce 7-3 carries version_info \"v1\", but the response with that nonce \
             had \"v2\""
        );
    }

    #[test]
    fn c4_a_response_a_fault_changed_is_not_judged() {
        let mut l = sent("v2", "7-3");
        let mark = FaultMark {
            rule: "r".into(),
            action: "corrupt",
        };
        l.note_wire(
            "7-3",
            mark,
            &WireFate::Mutated { kind: "corrupt" },
            std::time::SystemTime::now(),
        );
        assert_eq!(ack_version("cds", "v1", "7-3", Some(&l)), None);
    }
}
