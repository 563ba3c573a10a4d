use crate::protocol::machine::MachineHooks;
use crate::protocol::now::tests::now;
use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use xdsloop_proto::type_url::CLUSTER as CDS;
use xdsloop_transcript::{
    Header, LineWriter, Step,
    line::{Side, What as Line},
    read,
    step::Verdict as LineVerdict,
};

use super::*;
use crate::tap::{Closed, Opened};
use crate::{
    protocol::{
        facts::{Capture, StatusFacts, TapRequest, TapResponse},
        kind::StreamKind,
        machine::StreamMachine,
        request::SotwRequest,
        sotw::SotwStream,
    },
    test_support::{error, snapshot, sotw},
};

/// A SotW session as the stream loop taps it: open, subscribe, push, NACK, a stale ACK, close.
fn session() -> Vec<WireEvent> {
    let mut machine = SotwStream::new(7, snapshot(1, &[(CDS, &[("a", "1"), ("b", "1")])]));
    let mut whats = vec![What::Opened(Opened {
        kind: StreamKind::ADS_SOTW,
        peer: Some("127.0.0.1:5000".into()),
    })];
    let mut nack = sotw(CDS, &[], "", "7-1");
    nack.error_detail = error("bad cluster");
    for request in [sotw(CDS, &[], "", ""), nack, sotw(CDS, &[], "x", "7-0")] {
        let request = SotwRequest::from(request);
        let mut facts = request.facts(Capture::Full);
        let out = machine.on_request(request, now());
        facts.settle(machine.exchange(), false);
        whats.push(What::Request(Box::new(facts)));
        let responses = out.iter().map(|r| r.facts(Capture::Full));
        whats.extend(responses.map(|f| What::Response(Box::new(f))));
    }
    whats.push(What::Closed(Closed {
        reason: CloseReason::Status,
        status: Some(StatusFacts {
            code: 3,
            message: "malformed".into(),
        }),
    }));
    let events = whats.into_iter().enumerate().map(|(i, what)| WireEvent {
        // Whole milliseconds: the file's precision.
        at: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + i as u64),
        stream: 7,
        seq: i as u32 + 1,
        node: (i > 0).then(|| Arc::from("node-1")),
        what,
    });
    events.collect()
}

#[test]
fn a_tapped_session_becomes_transcript_lines_the_reader_takes_back() {
    let lines: Vec<_> = session().iter().map(|e| to_line(e, None)).collect();
    let steps: Vec<Option<Step>> = lines.iter().map(|l| l.step()).collect();
    use Step::*;
    let expected = [Established, Subscribe, Push, Nack, Ignored, Closed];
    assert_eq!(steps, expected.map(Some));
    let Line::Request(nack) = &lines[3].what else {
        panic!("the NACK");
    };
    assert_eq!(nack.verdict, LineVerdict::Nack);
    assert_eq!(nack.error_detail.as_ref().unwrap().message, "bad cluster");
    let Line::Response(push) = &lines[2].what else {
        panic!("the push");
    };
    let names: Vec<&str> = push.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!((names, push.nonce.as_str()), (vec!["a", "b"], "7-1"));
    let Line::Close(close) = &lines[5].what else {
        panic!("the close");
    };
    assert_eq!(close.status.as_ref().unwrap().code, "INVALID_ARGUMENT");

    let header = Header::new(
        Side::Server,
        "xdsloop-server test",
        SystemTime::now(),
        false,
    );
    let mut writer = LineWriter::new(Vec::new(), &header).unwrap();
    for line in &lines {
        writer.write(line, std::time::Instant::now()).unwrap();
    }
    let file = writer.finish().unwrap();
    let back = read::read("session.jsonl", file.as_slice()).expect("a valid transcript");
    let read_back: Vec<_> = back.events.into_iter().map(|n| n.event).collect();
    assert_eq!(read_back, lines);
}

#[test]
fn omitted_counts_what_a_summary_left_out() {
    let list: Vec<String> = (0..11).map(|i| format!("c{i}")).collect();
    let names: Vec<&str> = list.iter().map(String::as_str).collect();
    let request = SotwRequest::from(sotw(CDS, &names, "", ""));
    let event = |capture| WireEvent {
        at: SystemTime::now(),
        stream: 1,
        seq: 1,
        node: None,
        what: What::Request(Box::new(request.facts(capture))),
    };
    assert_eq!(omitted(&event(Capture::Summary)), 3);
    assert_eq!(omitted(&event(Capture::Full)), 0);
}

#[test]
fn status_codes_are_named_as_grpc_names_them() {
    assert_eq!(code_name(0), "OK");
    assert_eq!(code_name(9), "FAILED_PRECONDITION");
    assert_eq!(code_name(14), "UNAVAILABLE");
    assert_eq!(code_name(16), "UNAUTHENTICATED");
    assert_eq!(code_name(99), "UNKNOWN");
    assert_eq!(code_name(-1), "UNKNOWN");
}
