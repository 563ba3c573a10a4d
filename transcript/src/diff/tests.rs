use super::*;
use crate::{
    line::{Event, Gap},
    read::Numbered,
    sample,
};

fn transcript(file: &str, events: Vec<Event>) -> Transcript {
    Transcript {
        file: file.into(),
        header: sample::header(Side::Server),
        events: events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Numbered { line: i + 2, event })
            .collect(),
    }
}

/// A stream that subscribes to CDS and LDS, gets both, and ACKs both; nonces `<id>-<n>`.
fn run(id: u64, lds_first: bool, cds_verdict_ack: bool) -> Vec<Event> {
    let nonce = |n: u32| format!("{id}-{n}");
    let (cds_n, lds_n) = if lds_first { (2, 1) } else { (1, 2) };
    let mut cds = vec![
        sample::sotw_request(id, 0, "cds", "", "", &[]),
        sample::sotw_response(id, 0, "cds", "v1", &nonce(cds_n), &["web"]),
    ];
    cds.push(if cds_verdict_ack {
        sample::sotw_request(id, 0, "cds", "v1", &nonce(cds_n), &[])
    } else {
        sample::nack(id, 0, "cds", "", &nonce(cds_n), "cluster web: bad")
    });
    let lds = vec![
        sample::sotw_request(id, 0, "lds", "", "", &[]),
        sample::sotw_response(id, 0, "lds", "v1", &nonce(lds_n), &["main"]),
        sample::sotw_request(id, 0, "lds", "v1", &nonce(lds_n), &[]),
    ];
    let mut events = vec![sample::open(id, 0, "ads-sotw")];
    if lds_first {
        events.extend(lds.into_iter().zip(cds).flat_map(|(l, c)| [l, c]));
    } else {
        events.extend(cds.into_iter().zip(lds).flat_map(|(c, l)| [c, l]));
    }
    for (seq, event) in events.iter_mut().enumerate() {
        event.seq = Some(seq as u32 + 1);
        event.t = sample::at(seq as u64 + id);
    }
    events
}

fn compare(a: Vec<Event>, b: Vec<Event>, strict_order: bool) -> Comparison {
    let options = Options {
        strict_order,
        ..Options::default()
    };
    diff(
        &transcript("a.jsonl", a),
        &transcript("b.jsonl", b),
        &options,
    )
}

#[test]
fn equal_runs_are_the_same_despite_ids_nonces_and_times() {
    let comparison = compare(run(3, false, true), run(8, false, true), false);
    assert_eq!(
        comparison,
        Comparison {
            same: true,
            report: "same: 7 lines in 3 sequences, compared per node, stream and type\n".into()
        }
    );
}

#[test]
fn a_nack_instead_of_an_ack_is_listed_with_both_locations() {
    let comparison = compare(run(3, false, true), run(3, false, false), false);
    assert!(!comparison.same);
    let expected = r#"--- a.jsonl
+++ b.jsonl
@@ edge-1#1 cds @@
  a.jsonl:3  cds ← SUBSCRIBE   v"" n"" []
  a.jsonl:5  cds → PUSH        v"v1" n1 [web]
- a.jsonl:7  cds ← ACK         v"v1" n1 []
+ b.jsonl:7  cds ← NACK        v"" n1 [] error 3 "cluster web: bad"
different: 1 of 3 sequences, compared per node, stream and type
"#;
    assert_eq!(comparison.report, expected);
}

#[test]
fn reorder_across_types_is_the_same_unless_strict_order() {
    let (a, b) = (run(3, false, true), run(3, true, true));
    assert!(compare(a.clone(), b.clone(), false).same);
    let strict = compare(a, b, true);
    assert!(!strict.same, "{}", strict.report);
    assert!(
        strict
            .report
            .starts_with("--- a.jsonl\n+++ b.jsonl\n@@ edge-1#1 @@\n"),
        "{}",
        strict.report
    );
    assert!(
        strict.report.ends_with(
            "different: 1 of 1 sequences, compared per node and stream (--strict-order)\n"
        ),
        "{}",
        strict.report
    );
}

#[test]
fn an_ack_of_another_response_is_caught_by_the_renumbered_nonces() {
    let mut b = run(3, false, true);
    // The CDS ACK echoes the LDS response's nonce.
    let lds_nonce = "3-2".to_string();
    *b[5].nonce_mut().unwrap() = lds_nonce;
    let comparison = compare(run(3, false, true), b, false);
    assert!(!comparison.same);
    assert!(
        comparison
            .report
            .contains("- a.jsonl:7  cds ← ACK         v\"v1\" n1 []"),
        "{}",
        comparison.report
    );
    assert!(
        comparison
            .report
            .contains("+ b.jsonl:7  cds ← ACK         v\"v1\" n2 []"),
        "{}",
        comparison.report
    );
}

#[test]
fn a_gap_fails_the_diff_as_incomplete() {
    let mut b = run(3, false, true);
    let mut gap = sample::event(0, 0, What::Gap(Gap { lost: 12 }));
    (gap.stream, gap.seq, gap.node) = (None, None, None);
    b.insert(4, gap);
    let comparison = compare(run(3, false, true), b, false);
    assert_eq!(
        comparison,
        Comparison {
            same: false,
            report: "b.jsonl:6: incomplete transcript: 12 events were lost while recording\n"
                .into()
        }
    );
}

#[test]
fn a_stream_on_one_side_only_is_all_added() {
    let a = run(3, false, true);
    let mut b = a.clone();
    b.push(sample::open(9, 1, "ads-delta"));
    let comparison = compare(a, b, false);
    assert!(
        comparison.report.contains(
            "@@ edge-1#2 @@\n+ b.jsonl:9   · ESTABLISHED ads-delta (the node's stream #1)\n"
        ),
        "{}",
        comparison.report
    );
    assert!(
        comparison
            .report
            .ends_with("different: 1 of 4 sequences, compared per node, stream and type\n")
    );
}

#[test]
fn server_and_client_transcripts_never_match() {
    let a = transcript("a.jsonl", run(3, false, true));
    let mut b = transcript("b.jsonl", run(3, false, true));
    b.header.side = Side::Client;
    let comparison = diff(&a, &b, &Options::default());
    assert!(!comparison.same);
    assert_eq!(
        comparison.report,
        "a.jsonl is a server transcript and b.jsonl a client one: they cannot match\n"
    );
}

#[test]
fn ignored_fields_make_otherwise_different_runs_the_same() {
    let mut b = run(3, false, true);
    if let What::Response(r) = &mut b[3].what {
        r.body = crate::line::ResponseBody::Sotw {
            version: "v2".into(),
        };
    }
    if let What::Request(r) = &mut b[5].what {
        r.body = crate::line::RequestBody::Sotw {
            version: "v2".into(),
            names: vec![],
        };
    }
    assert!(!compare(run(3, false, true), b.clone(), false).same);
    let options = Options {
        ignore: Ignore::parse(&["version".into()]).unwrap(),
        strict_order: false,
    };
    let a = transcript("a.jsonl", run(3, false, true));
    assert!(diff(&a, &transcript("b.jsonl", b), &options).same);
}

#[test]
fn long_sequences_show_context_around_the_change_only() {
    let names: Vec<String> = (0..10).map(|i| format!("v{i}")).collect();
    let pushes = |changed: Option<usize>| -> Vec<Event> {
        names
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let v = if Some(i) == changed { "vX" } else { v };
                sample::sotw_response(1, i as u32 + 1, "cds", v, &format!("1-{i}"), &["web"])
            })
            .collect()
    };
    let comparison = compare(pushes(None), pushes(Some(5)), false);
    let lines: Vec<&str> = comparison.report.lines().collect();
    assert_eq!(lines[3], "  …");
    assert!(
        lines[4].starts_with("  a.jsonl:5 ") && lines[5].starts_with("  a.jsonl:6 "),
        "{}",
        comparison.report
    );
    assert!(
        lines[6].starts_with("- a.jsonl:7 ") && lines[7].starts_with("+ b.jsonl:7 "),
        "{}",
        comparison.report
    );
    assert_eq!(lines[10], "  …");
}

#[test]
fn edit_script_aligns_on_the_longest_common_subsequence() {
    let v: Vec<Value> = (0..6).map(Value::from).collect();
    let a = [&v[0], &v[1], &v[2], &v[3]];
    let b = [&v[0], &v[2], &v[4], &v[3]];
    use Op::*;
    assert_eq!(
        edit_script(&a, &b),
        [Same(0), Removed(1), Same(2), Added(2), Same(3)]
    );
    assert_eq!(
        edit_script(&a, &[]),
        [Removed(0), Removed(1), Removed(2), Removed(3)]
    );
}

#[test]
fn a_body_that_differs_names_the_differing_path() {
    let with_timeout = |timeout: &str| {
        let mut events = run(3, false, true);
        if let What::Response(r) = &mut events[3].what {
            r.resources[0].body = Some(serde_json::json!({
                "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
                "name": "web",
                "connect_timeout": timeout,
                "lb_policy": "ROUND_ROBIN",
            }));
        }
        events
    };
    let comparison = compare(with_timeout("1s"), with_timeout("2.5s"), false);
    assert!(!comparison.same);
    assert!(
        comparison.report.contains(
            "  ≠ resources[0].body.connect_timeout: \"1s\" in a.jsonl:5, \"2.5s\" in b.jsonl:5\n"
        ),
        "{}",
        comparison.report
    );
}
