use super::*;
use crate::sample;

fn round_trip(event: &Event) -> String {
    let json = serde_json::to_string(event).unwrap();
    let back: Event = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, event, "{json}");
    json
}

#[test]
fn every_kind_round_trips() {
    for event in sample::one_of_each() {
        round_trip(&event);
    }
}

#[test]
fn sotw_request_line_has_the_documented_fields_in_order() {
    let json = round_trip(&sample::sotw_request(3, 2, "cds", "v7", "3-1", &["web"]));
    assert_eq!(
        json,
        r#"{"t":"2025-01-02T12:00:02.000000Z","stream":3,"seq":2,"node":"edge-1","kind":"request","dir":"in","type":"cds","step":"ack","verdict":"ack","version":"v7","names":["web"],"nonce":"3-1","has_node":false}"#
    );
}

#[test]
fn delta_lines_use_delta_fields() {
    let request = round_trip(&sample::delta_request(
        5,
        2,
        &["web"],
        &["old"],
        &[("web", "h1")],
    ));
    assert!(
        request.contains(
            r#""subscribe":["web"],"unsubscribe":["old"],"initial_resource_versions":{"web":"h1"}"#
        ),
        "{request}"
    );
    assert!(!request.contains("\"version\""), "{request}");
    let response = round_trip(&sample::delta_response(
        5,
        3,
        "5-1",
        &[("web", "h2")],
        &["old"],
    ));
    assert!(response.contains(r#""system_version":"s1""#), "{response}");
    assert!(response.contains(r#""removed":["old"]"#), "{response}");
}

#[test]
fn lines_from_the_design_example_parse() {
    let lines = [
        r#"{"schema":"xdsloop.transcript.v1","kind":"header","side":"server","tool":"xdsloop-server 0.1.0","started":"2025-01-02T12:00:00Z","resources":false}"#,
        r#"{"t":"2025-01-02T12:00:01Z","stream":3,"seq":1,"node":"edge-1","kind":"open","transport":"ads-sotw","peer":"127.0.0.1:51234","ordinal":1}"#,
        r#"{"t":"2025-01-02T12:00:01Z","stream":3,"seq":3,"node":"edge-1","kind":"response","dir":"out","type":"cds","step":"push","version":"v7","nonce":"3-1","resources":[{"name":"web","version":"a1b2"}],"bytes":812,"fault":{"rule":"corrupt-web","action":"corrupt"}}"#,
        r#"{"t":"2025-01-02T12:00:01Z","stream":3,"seq":4,"node":"edge-1","kind":"request","dir":"in","type":"cds","step":"nack","verdict":"nack","version":"","nonce":"3-1","names":[],"has_node":false,"error_detail":{"code":3,"message":"bad"}}"#,
        r#"{"t":"2025-01-02T12:00:01Z","stream":3,"seq":9,"kind":"violation","rule":"C5","check":"C5.nack-version","message":"m","evidence":{"sent":"v8"}}"#,
        r#"{"t":"2025-01-02T12:00:01Z","stream":3,"seq":10,"kind":"close","reason":"fault","status":{"code":"UNAVAILABLE","message":"maintenance"}}"#,
        r#"{"t":"2025-01-02T12:00:02Z","kind":"gap","lost":120}"#,
    ];
    let header: Header = serde_json::from_str(lines[0]).unwrap();
    assert_eq!((header.side, header.resources), (Side::Server, false));
    let kinds: Vec<Kind> = lines[1..]
        .iter()
        .map(|l| serde_json::from_str::<Event>(l).unwrap().kind())
        .collect();
    use Kind::*;
    assert_eq!(kinds, [Open, Response, Request, Violation, Close, Gap]);
}

#[test]
fn unknown_fields_are_ignored_so_v1_can_grow() {
    let line = r#"{"t":"2025-01-02T12:00:01Z","stream":3,"kind":"open","transport":"ads-sotw","future":1}"#;
    let event: Event = serde_json::from_str(line).unwrap();
    assert_eq!(event.kind(), Kind::Open);
}

#[test]
fn mixed_or_missing_flavour_fields_are_named() {
    let base = r#""t":"2025-01-02T12:00:01Z","kind":"request","dir":"in","type":"cds","step":"ack","verdict":"ack","nonce":"","has_node":true"#;
    let mixed = format!(r#"{{{base},"version":"v1","names":[],"subscribe":["a"]}}"#);
    let error = serde_json::from_str::<Event>(&mixed)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("request mixes SotW and Delta fields"),
        "{error}"
    );
    let none = format!("{{{base}}}");
    let error = serde_json::from_str::<Event>(&none)
        .unwrap_err()
        .to_string();
    assert!(error.contains("request without its names"), "{error}");
    let response = r#"{"t":"2025-01-02T12:00:01Z","kind":"response","dir":"out","type":"cds","step":"push","nonce":"1","resources":[]}"#;
    let error = serde_json::from_str::<Event>(response)
        .unwrap_err()
        .to_string();
    assert!(error.contains("response without a version"), "{error}");
}

#[test]
fn events_say_their_type_step_and_nonce() {
    let mut push = sample::sotw_response(3, 3, "cds", "v7", "3-1", &["web"]);
    assert_eq!(push.type_url().map(|t| t.label()), Some("cds"));
    assert_eq!(push.step(), Some(Step::Push));
    *push.nonce_mut().unwrap() = "n1".into();
    let What::Response(response) = &push.what else {
        panic!("a response")
    };
    assert_eq!(response.nonce, "n1");
    let open = &sample::one_of_each()[0];
    assert_eq!(
        (open.kind(), open.step()),
        (Kind::Open, Some(Step::Established))
    );
}
