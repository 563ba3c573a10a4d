//! What `/status` shows of the tap: each stream's last few events (`recent`) as transcript
//! lines, and the server-wide counters.

use serde::{Deserialize, Serialize};
use xdsloop_transcript::line::Event;

use crate::admin::{lines, registry::timeline::Timeline};

/// One event of a stream's timeline: a transcript line (docs/transcripts.md), plus how many
/// names or resources the summary left out of its lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentEvent {
    /// The transcript line.
    #[serde(flatten)]
    pub line: Event,
    /// Names or resources cut from its lists (absent when none were).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The timeline as `/status` lists it, oldest first.
pub(crate) fn recent(timeline: &Timeline) -> Vec<RecentEvent> {
    let events = timeline.iter().map(|event| RecentEvent {
        line: lines::to_line(event, None),
        omitted: lines::omitted(event),
    });
    events.collect()
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::SystemTime};

    use xdsloop_proto::type_url::CLUSTER;

    use super::*;
    use crate::{
        protocol::facts::{Capture, TapRequest},
        protocol::request::SotwRequest,
        tap::{What, WireEvent},
        test_support::sotw,
    };

    #[test]
    fn recent_events_read_back_from_the_status_json() {
        let names: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let request = SotwRequest::from(sotw(CLUSTER, &names, "", ""));
        let mut timeline = Timeline::default();
        let event = WireEvent {
            at: SystemTime::UNIX_EPOCH,
            stream: 3,
            seq: 2,
            node: Some(Arc::from("n")),
            what: What::Request(Box::new(request.facts(Capture::Summary))),
        };
        timeline.extend(16, [Arc::new(event)]);
        let listed = recent(&timeline);
        assert_eq!(listed[0].omitted, 2, "10 names, 8 listed");
        let json = serde_json::to_value(&listed).unwrap();
        assert_eq!(json[0]["kind"], "request");
        assert_eq!(json[0]["omitted"], 2);
        let back: Vec<RecentEvent> = serde_json::from_value(json).unwrap();
        assert_eq!(back, listed);
    }
}
