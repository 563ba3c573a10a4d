//! C5: a NACK carries the last accepted version (or "") and an `error_detail` with a non-OK
//! code and a message.
//!
//! Envoy NACKs with code INTERNAL (13), gRPC and xdsloop-client with INVALID_ARGUMENT (3): any
//! non-zero code passes. Delta requests carry no version, so only the fields are judged there.

use super::Violation;
use crate::protocol::facts::RequestView;
use crate::protocol::subscription::Ledger;

/// `error_detail` with code 0 (OK) or an empty message.
pub(crate) fn fields(request: &RequestView<'_>) -> Option<Violation> {
    let (code, message) = request.error?;
    if code != 0 && !message.trim().is_empty() {
        return None;
    }
    let what = match (code, message.trim().is_empty()) {
        (0, true) => "code 0 (OK) and an empty message",
        (0, false) => "code 0 (OK)",
        _ => "an empty message",
    };
    Some(Violation::new(
        "C5.nack-fields",
        Some(request.type_url),
        format!(
            "NACK of {} nonce {} has an error_detail with {what}: a NACK says why, with a \
             non-OK code and a message",
            request.type_url,
            shown(request.nonce)
        ),
    ))
}

/// A SotW NACK of the latest response whose `version_info` is not the last version the
/// client accepted on this stream: `accepted`, what its latest request without an error said
/// (an ACK, also one that arrived after a newer push, or its first request), else "". C4
/// checks that an ACK carries the version it was sent.
pub(crate) fn version(
    request: &RequestView<'_>,
    ledger: Option<&Ledger>,
    accepted: Option<&str>,
) -> Option<Violation> {
    request.error?;
    let sent = ledger?
        .last_sent
        .as_ref()
        .filter(|s| s.nonce == request.nonce)?;
    let accepted = accepted.unwrap_or_default();
    if request.version == accepted {
        return None;
    }
    Some(Violation::new(
        "C5.nack-version",
        Some(request.type_url),
        format!(
            "NACK of {} nonce {} (sent {:?}) carries version_info {:?}; the last version \
             accepted on this stream is {accepted:?}",
            request.type_url, sent.nonce, sent.version, request.version
        ),
    ))
}

/// A nonce for a sentence: `""` when empty.
pub(crate) fn shown(nonce: &str) -> String {
    if nonce.is_empty() {
        "\"\"".to_string()
    } else {
        nonce.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nack<'a>(version: &'a str, nonce: &'a str, error: (i32, &'a str)) -> RequestView<'a> {
        RequestView {
            type_url: "cds",
            version,
            nonce,
            has_node: true,
            node_id: Some("n"),
            error: Some(error),
            initial_versions: None,
        }
    }

    fn ledger(sent: (&str, &str)) -> Ledger {
        let mut ledger = Ledger::default();
        ledger.record_sent(sent.0, sent.1, 1, std::time::SystemTime::now());
        ledger
    }

    #[test]
    fn c5_nack_fields_need_a_code_and_a_message() {
        assert_eq!(fields(&nack("v1", "1-2", (3, "bad cluster"))), None);
        assert_eq!(
            fields(&nack("v1", "1-2", (13, "bad"))),
            None,
            "Envoy's INTERNAL"
        );
        let v = fields(&nack("v1", "1-2", (0, "bad"))).unwrap();
        assert_eq!(v.check, "C5.nack-fields");
        assert!(v.message.contains("code 0 (OK)"), "{}", v.message);
        let v = fields(&nack("v1", "1-2", (3, "  "))).unwrap();
        assert!(v.message.contains("an empty message"), "{}", v.message);
        let ack = RequestView {
            error: None,
            ..nack("v1", "1-2", (3, "x"))
        };
        assert_eq!(fields(&ack), None);
    }

    #[test]
    fn c5_nack_version_is_the_last_accepted() {
        let l = ledger(("v8", "3-4"));
        assert_eq!(
            version(&nack("v7", "3-4", (3, "x")), Some(&l), Some("v7")),
            None
        );
        let v = version(&nack("v8", "3-4", (3, "x")), Some(&l), Some("v7")).unwrap();
        assert_eq!(v.check, "C5.nack-version");
        assert_eq!(
            &*v.message,
            "NACK of cds nonce 3-4 (sent \"v8\") carries version_info \"v8\"; the last version \
             accepted on this stream is \"v7\""
        );
    }

    #[test]
    fn c5_before_any_ack_the_accepted_version_is_empty() {
        let l = ledger(("v8", "3-1"));
        assert_eq!(version(&nack("", "3-1", (3, "x")), Some(&l), None), None);
        assert_eq!(
            version(&nack("v6", "3-1", (3, "x")), Some(&l), Some("v6")),
            None
        );
        assert!(version(&nack("v8", "3-1", (3, "x")), Some(&l), None).is_some());
        let stale = nack("v8", "3-0", (3, "x"));
        assert_eq!(
            version(&stale, Some(&l), None),
            None,
            "only NACKs of the latest"
        );
    }
}
