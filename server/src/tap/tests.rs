use std::time::SystemTime;

use xdsloop_proto::type_url::CLUSTER as CDS;

use super::*;
use crate::{
    protocol::{
        facts::{Capture, TapResponse},
        machine::StreamMachine,
        now::tests::now,
        sotw::SotwStream,
    },
    test_support::{snapshot, sotw},
};

#[test]
fn a_summarized_event_keeps_counts_and_drops_bodies() {
    let mut stream = SotwStream::new(1, snapshot(1, &[(CDS, &[("a", "1")])]));
    let out = stream
        .on_request(sotw(CDS, &[], "", "").into(), now())
        .remove(0);
    let event = WireEvent {
        at: SystemTime::UNIX_EPOCH,
        stream: 1,
        seq: 2,
        node: Some("n".into()),
        what: What::Response(Box::new(out.facts(Capture::Bodies))),
    };
    let summary = event.summarized();
    let What::Response(facts) = &summary.what else {
        panic!("a response");
    };
    assert!(facts.bodies.is_none(), "a ring never pins resources");
    assert_eq!((facts.resources.total, summary.seq), (1, 2));
    assert_eq!(summary.node.as_deref(), Some("n"));
}
