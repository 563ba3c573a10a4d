use super::*;
use crate::{read::Numbered, sample};

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

fn printed(transcript: &Transcript, filter: &Filter) -> String {
    let mut out = Vec::new();
    print(transcript, filter, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn each_kind_prints_in_fixed_width_columns() {
    let t = transcript(sample::one_of_each());
    let expected = r#"# server transcript by xdsloop-server 0.1.0, started 2025-01-02T12:00:00.000Z, resource bodies not recorded
12:00:01.000 s3 edge-1     · ESTABLISHED ads-sotw peer 127.0.0.1:51234 (the node's stream #1)
12:00:02.000 s3 edge-1 cds ← SUBSCRIBE   v"" n"" []
12:00:03.000 s3 edge-1 cds → PUSH        v"v7" n3-1 [web, api] undecodable 1 fault corrupt-web/corrupt
12:00:04.000 s3 edge-1 cds ← NACK        v"" n3-1 [] error 3 "cluster web: bad"
12:00:05.000 s3 edge-1 eds ! FAULT       drop-2/drop n3-2 (never sent)
12:00:06.000 s3 edge-1 cds ! VIOLATION   C5.nack-version: NACK of cds nonce 3-1 carries version_info "v7"
12:00:01.000 s5 edge-1 cds ← SUBSCRIBE   n"" +[web] initial [web@h1]
12:00:02.000 s5 edge-1 cds → PUSH        sv"s1" n5-1 [web@h2] removed [old]
12:00:07.000 s3 edge-1     · CLOSED      by a fault: UNAVAILABLE "maintenance"
12:00:00.000    -          ! GAP         120 events lost: the recording is incomplete here
"#;
    assert_eq!(printed(&t, &Filter::default()), expected);
}

#[test]
fn columns_widen_to_the_longest_value_shown() {
    let mut events = vec![
        sample::sotw_request(3, 2, "cds", "", "", &["web"]),
        sample::sotw_request(12, 2, "eds", "", "", &["web"]),
    ];
    events[1].node = Some("edge-west-1".into());
    let out = printed(&transcript(events), &Filter::default());
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        lines[0],
        r#"12:00:02.000 s3  edge-1      cds ← SUBSCRIBE   v"" n"" [web]"#
    );
    assert_eq!(
        lines[1],
        r#"12:00:02.000 s12 edge-west-1 eds ← SUBSCRIBE   v"" n"" [web]"#
    );
}

#[test]
fn filters_choose_the_lines_and_the_header_stays() {
    let t = transcript(sample::one_of_each());
    let filter = Filter {
        node: Some("edge-?".into()),
        kinds: vec![Kind::Response],
        ..Filter::default()
    };
    let out = printed(&t, &filter);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].starts_with("# server transcript"), "{out}");
    assert!(
        lines[1].contains("→ PUSH") && lines[2].contains("→ PUSH"),
        "{out}"
    );
    assert!(lines[3].contains("! GAP"), "gaps are always shown: {out}");
    let none = Filter {
        node: Some("core-*".into()),
        ..Filter::default()
    };
    assert_eq!(printed(&t, &none).lines().count(), 2, "header and the gap");
}

#[test]
fn long_name_lists_are_cut_and_counted() {
    let names: Vec<String> = (1..=11).map(|i| format!("c{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let t = transcript(vec![sample::sotw_response(
        1, 3, "cds", "v1", "1-1", &names,
    )]);
    let out = printed(&t, &Filter::default());
    assert!(
        out.ends_with("[c1, c2, c3, c4, c5, c6, c7, c8, +3 more]\n"),
        "{out}"
    );
}
