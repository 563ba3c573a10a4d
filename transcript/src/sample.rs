//! Lines for the unit tests: one node (`edge-1`), times from 2025-01-02T12:00:00Z plus `seq`
//! seconds.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use crate::line::*;
use crate::step::{Step, Verdict};

pub(crate) const NODE: &str = "edge-1";

pub(crate) fn at(seconds: u64) -> SystemTime {
    humantime::parse_rfc3339("2025-01-02T12:00:00Z").unwrap() + Duration::from_secs(seconds)
}

pub(crate) fn header(side: Side) -> Header {
    Header::new(side, "xdsloop-server 0.1.0", at(0), false)
}

pub(crate) fn event(stream: u64, seq: u32, what: What) -> Event {
    Event {
        t: at(seq.into()),
        stream: Some(stream),
        seq: Some(seq),
        node: Some(NODE.to_string()),
        what,
    }
}

fn ty(alias: &str) -> TypeUrl {
    TypeUrl::parse(alias).unwrap()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn open(stream: u64, seq: u32, transport: &str) -> Event {
    let open = Open {
        transport: transport.to_string(),
        peer: Some("127.0.0.1:51234".to_string()),
        ordinal: Some(1),
    };
    event(stream, seq, What::Open(open))
}

/// A subscription (no nonce) or an ACK of `nonce`.
pub(crate) fn sotw_request(
    stream: u64,
    seq: u32,
    alias: &str,
    version: &str,
    nonce: &str,
    names: &[&str],
) -> Event {
    let (step, verdict) = if nonce.is_empty() {
        (Step::Subscribe, Verdict::Initial)
    } else {
        (Step::Ack, Verdict::Ack)
    };
    let request = Request {
        dir: Dir::In,
        transport: None,
        type_url: ty(alias),
        step,
        verdict,
        change: None,
        body: RequestBody::Sotw {
            version: version.to_string(),
            names: strings(names),
        },
        nonce: nonce.to_string(),
        has_node: nonce.is_empty(),
        error_detail: None,
    };
    event(stream, seq, What::Request(request))
}

pub(crate) fn nack(
    stream: u64,
    seq: u32,
    alias: &str,
    version: &str,
    nonce: &str,
    why: &str,
) -> Event {
    let mut event = sotw_request(stream, seq, alias, version, nonce, &[]);
    if let What::Request(r) = &mut event.what {
        (r.step, r.verdict) = (Step::Nack, Verdict::Nack);
        r.error_detail = Some(ErrorDetail {
            code: 3,
            message: why.to_string(),
        });
    }
    event
}

pub(crate) fn sotw_response(
    stream: u64,
    seq: u32,
    alias: &str,
    version: &str,
    nonce: &str,
    names: &[&str],
) -> Event {
    let resources = names
        .iter()
        .map(|n| ResourceEntry {
            name: n.to_string(),
            version: Some(format!("h-{n}")),
            body: None,
        })
        .collect();
    let response = Response {
        dir: Dir::Out,
        transport: None,
        type_url: ty(alias),
        step: Step::Push,
        body: ResponseBody::Sotw {
            version: version.to_string(),
        },
        nonce: nonce.to_string(),
        resources,
        bytes: Some(100 + u64::from(seq)),
        undecodable: 0,
        fault: None,
    };
    event(stream, seq, What::Response(response))
}

pub(crate) fn delta_request(
    stream: u64,
    seq: u32,
    subscribe: &[&str],
    unsubscribe: &[&str],
    initial: &[(&str, &str)],
) -> Event {
    let initial: BTreeMap<String, String> = initial
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let request = Request {
        dir: Dir::In,
        transport: None,
        type_url: ty("cds"),
        step: Step::Subscribe,
        verdict: Verdict::Initial,
        change: Some(crate::step::Change::Widened),
        body: RequestBody::Delta {
            subscribe: strings(subscribe),
            unsubscribe: strings(unsubscribe),
            initial_resource_versions: initial,
        },
        nonce: String::new(),
        has_node: true,
        error_detail: None,
    };
    event(stream, seq, What::Request(request))
}

pub(crate) fn delta_response(
    stream: u64,
    seq: u32,
    nonce: &str,
    resources: &[(&str, &str)],
    removed: &[&str],
) -> Event {
    let resources = resources
        .iter()
        .map(|(n, v)| ResourceEntry {
            name: n.to_string(),
            version: Some(v.to_string()),
            body: None,
        })
        .collect();
    let response = Response {
        dir: Dir::Out,
        transport: None,
        type_url: ty("cds"),
        step: Step::Push,
        body: ResponseBody::Delta {
            system_version: "s1".to_string(),
            removed: strings(removed),
        },
        nonce: nonce.to_string(),
        resources,
        bytes: None,
        undecodable: 0,
        fault: None,
    };
    event(stream, seq, What::Response(response))
}

/// One line of each kind, with every optional field set somewhere.
pub(crate) fn one_of_each() -> Vec<Event> {
    let mut push = sotw_response(3, 3, "cds", "v7", "3-1", &["web", "api"]);
    if let What::Response(r) = &mut push.what {
        r.fault = Some(FaultMark {
            rule: "corrupt-web".into(),
            action: "corrupt".into(),
        });
        r.undecodable = 1;
        r.resources[0].body = Some(serde_json::json!({"name": "web"}));
    }
    let fault = Fault {
        rule: "drop-2".into(),
        action: "drop".into(),
        type_url: Some(ty("eds")),
        nonce: Some("3-2".into()),
        detail: Some("never sent".into()),
    };
    let violation = Violation {
        rule: "C5".into(),
        check: "C5.nack-version".into(),
        type_url: Some(ty("cds")),
        message: "NACK of cds nonce 3-1 carries version_info \"v7\"".into(),
        evidence: Some(serde_json::json!({"sent": "v7"})),
    };
    let close = Close {
        reason: CloseReason::Fault,
        status: Some(Status {
            code: "UNAVAILABLE".into(),
            message: "maintenance".into(),
        }),
    };
    let mut gap = event(0, 0, What::Gap(Gap { lost: 120 }));
    (gap.stream, gap.seq, gap.node) = (None, None, None);
    vec![
        open(3, 1, "ads-sotw"),
        sotw_request(3, 2, "cds", "", "", &[]),
        push,
        nack(3, 4, "cds", "", "3-1", "cluster web: bad"),
        event(3, 5, What::Fault(fault)),
        event(3, 6, What::Violation(violation)),
        delta_request(5, 1, &["web"], &[], &[("web", "h1")]),
        delta_response(5, 2, "5-1", &[("web", "h2")], &["old"]),
        event(3, 7, What::Close(close)),
        gap,
    ]
}
