use super::*;
use crate::{line::Side, read::Numbered, sample};

fn transcript(events: Vec<Event>) -> Transcript {
    Transcript {
        file: "t.jsonl".into(),
        header: sample::header(Side::Server),
        events: events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Numbered { line: i + 2, event })
            .collect(),
    }
}

fn values(events: Vec<Event>) -> Vec<Value> {
    normalise(&transcript(events), &Ignore::default(), false)
        .into_iter()
        .map(|n| n.value)
        .collect()
}

/// One SotW exchange on stream `id` with nonces `<id>-<n>`, as the server numbers them.
fn exchange(id: u64) -> Vec<Event> {
    let nonce = |n: u32| format!("{id}-{n}");
    vec![
        sample::open(id, 1, "ads-sotw"),
        sample::sotw_request(id, 2, "cds", "", "", &[]),
        sample::sotw_response(id, 3, "cds", "v1", &nonce(1), &["web"]),
        sample::sotw_request(id, 4, "cds", "v1", &nonce(1), &[]),
    ]
}

#[test]
fn stream_ids_nonces_times_ports_and_sizes_do_not_count() {
    let mut b = exchange(42);
    for event in &mut b {
        event.t += std::time::Duration::from_secs(3600);
    }
    if let What::Open(open) = &mut b[0].what {
        open.peer = Some("127.0.0.1:60000".into());
    }
    if let What::Response(response) = &mut b[2].what {
        response.bytes = Some(9999);
    }
    assert_eq!(values(exchange(3)), values(b));
}

#[test]
fn nonces_are_renumbered_and_acks_still_point_at_their_response() {
    let normalised = normalise(&transcript(exchange(7)), &Ignore::default(), false);
    let nonces: Vec<&str> = normalised
        .iter()
        .filter_map(|n| n.value.get("nonce").and_then(Value::as_str))
        .collect();
    assert_eq!(nonces, ["", "1", "1"], "subscribe, push, its ACK");
    assert_eq!(normalised[0].group.to_string(), "edge-1#1");
    assert_eq!(normalised[2].group.to_string(), "edge-1#1 cds");
}

#[test]
fn an_ack_of_an_unknown_nonce_gets_a_number_of_its_own() {
    let mut events = exchange(7);
    events[3] = sample::sotw_request(7, 4, "cds", "v1", "6-9", &[]);
    let nonces: Vec<Value> = values(events).iter().map(|v| v["nonce"].clone()).collect();
    assert_eq!(
        nonces[2..],
        ["1", "2"],
        "the ACK no longer matches the push"
    );
}

#[test]
fn nonces_count_per_type_so_cross_type_order_does_not_leak_into_them() {
    let cds_first = vec![
        sample::sotw_response(1, 1, "cds", "v1", "1-1", &["web"]),
        sample::sotw_response(1, 2, "lds", "v1", "1-2", &["main"]),
    ];
    let lds_first = vec![
        sample::sotw_response(1, 1, "lds", "v1", "1-1", &["main"]),
        sample::sotw_response(1, 2, "cds", "v1", "1-2", &["web"]),
    ];
    let nonce_of = |events: Vec<Event>, alias: &str| {
        let all = normalise(&transcript(events), &Ignore::default(), false);
        let n = all
            .into_iter()
            .find(|n| n.event.type_url().unwrap().label() == alias)
            .unwrap();
        n.value["nonce"].clone()
    };
    assert_eq!(
        nonce_of(cds_first.clone(), "cds"),
        nonce_of(lds_first.clone(), "cds")
    );
    assert_eq!(nonce_of(cds_first, "lds"), nonce_of(lds_first, "lds"));
}

#[test]
fn streams_are_numbered_per_node_by_first_appearance() {
    let mut events = vec![];
    for (id, node) in [(9, "a"), (4, "b"), (2, "a"), (0, "a")] {
        let mut event = sample::sotw_request(id, 1, "cds", "", "", &[]);
        event.node = Some(node.into());
        events.push(event);
    }
    let groups: Vec<String> = normalise(&transcript(events), &Ignore::default(), true)
        .iter()
        .map(|n| n.group.to_string())
        .collect();
    assert_eq!(groups, ["a#1", "b#1", "a#2", "a#0"]);
}

#[test]
fn ignore_takes_fields_and_paths_into_lists() {
    let ignore = Ignore::parse(&["resources.version".into(), "version".into()]).unwrap();
    let t = transcript(vec![sample::sotw_response(
        1,
        3,
        "cds",
        "v1",
        "1-1",
        &["a", "b"],
    )]);
    let value = &normalise(&t, &ignore, false)[0].value;
    assert_eq!(
        value["resources"],
        serde_json::json!([{"name": "a"}, {"name": "b"}])
    );
    assert!(value.get("version").is_none() && value.get("bytes").is_none());
    assert_eq!(value["nonce"], "1");
}

#[test]
fn ignore_refuses_fields_no_line_has() {
    let error = Ignore::parse(&["verison".into()]).unwrap_err().to_string();
    assert!(
        error.starts_with("--ignore \"verison\": no line has that field (fields: t, stream,"),
        "{error}"
    );
    assert!(Ignore::parse(&["resources.".into()]).is_err());
}

#[test]
fn every_field_a_line_can_have_is_known_to_ignore() {
    for event in sample::one_of_each() {
        let value = serde_json::to_value(&event).unwrap();
        for key in value.as_object().unwrap().keys() {
            assert!(FIELDS.contains(&key.as_str()), "{key} missing from FIELDS");
        }
    }
}

#[test]
fn has_node_counts_only_when_whole_streams_are_compared() {
    let first = |alias: &str| {
        let mut events = vec![
            sample::sotw_request(1, 1, "cds", "", "", &[]),
            sample::sotw_request(1, 2, "lds", "", "", &[]),
        ];
        for event in &mut events {
            if let What::Request(r) = &mut event.what {
                r.has_node = r.type_url.label() == alias;
            }
        }
        transcript(events)
    };
    let compared = |t: &Transcript, strict| -> Vec<Value> {
        normalise(t, &Ignore::default(), strict)
            .into_iter()
            .map(|n| n.value)
            .collect()
    };
    let (cds_first, lds_first) = (first("cds"), first("lds"));
    assert_eq!(compared(&cds_first, false), compared(&lds_first, false));
    assert_ne!(compared(&cds_first, true), compared(&lds_first, true));
}

#[test]
fn stateless_lines_belong_to_the_node_they_name() {
    let mut events = vec![];
    for (node, nonce) in [("a", "r-1"), ("b", "r-2"), ("a", "r-3")] {
        let mut event = sample::sotw_response(0, 1, "cds", "v1", nonce, &["web"]);
        event.node = Some(node.into());
        events.push(event);
    }
    let t = transcript(events);
    assert!(t.stream_nodes().is_empty(), "stream 0 has no single node");
    let seen: Vec<(String, Value)> = normalise(&t, &Ignore::default(), false)
        .into_iter()
        .map(|n| (n.group.to_string(), n.value["nonce"].clone()))
        .collect();
    let expected = [("a#0 cds", "1"), ("b#0 cds", "1"), ("a#0 cds", "2")];
    let expected: Vec<(String, Value)> = expected
        .iter()
        .map(|(g, n)| (g.to_string(), Value::from(*n)))
        .collect();
    assert_eq!(seen, expected);
}
