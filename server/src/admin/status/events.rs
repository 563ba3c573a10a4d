//! What `/status` shows of the tap: each stream's last few events (`recent`) as transcript
//! lines, and the server-wide counters.

use serde::{Deserialize, Serialize};
use xdsloop_transcript::line::Event;

use crate::admin::{lines, registry::timeline::Timeline};

/// One event of a stream's timeline: a transcript line (docs/transcripts.md), plus how many
/// names or resources the summary left out of its lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentEvent {
    #[serde(flatten)]
    pub line: Event,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The timeline as `/status` lists it, oldest first.
pub fn recent(timeline: &Timeline) -> Vec<RecentEvent> {
    let events = timeline.iter().map(|event| RecentEvent {
        line: lines::to_line(event, None),
        omitted: lines::omitted(event),
    });
    events.collect()
}
