//! A stream's last few events (its "timeline"), kept in its registry entry so `/status` and
//! the live page can show what just happened on it, also after it closed.
//!
//! Appended in the critical section the stream loop already takes to publish its status, so a
//! ring costs no extra lock per message. Events are summaries (at most
//! [`crate::protocol::facts::SUMMARY_ITEMS`] names per list, no resources), so a ring never pins
//! an old fixture generation.

use std::{collections::VecDeque, sync::Arc};

use crate::tap::WireEvent;

/// Events kept per stream unless `--timeline-depth` says otherwise; about 2.5 KiB a stream.
pub const DEFAULT_DEPTH: usize = 16;

/// The newest events of one stream, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    events: VecDeque<Arc<WireEvent>>,
}

impl Timeline {
    /// Appends `events`, keeping the newest `depth`.
    pub(crate) fn extend(
        &mut self,
        depth: usize,
        events: impl IntoIterator<Item = Arc<WireEvent>>,
    ) {
        for event in events {
            if self.events.len() == depth {
                self.events.pop_front();
            }
            if depth > 0 {
                self.events.push_back(event);
            }
        }
    }

    /// Oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Arc<WireEvent>> {
        self.events.iter()
    }

    /// How many events it keeps now.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// It keeps none.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn event(seq: u32) -> Arc<WireEvent> {
        crate::test_support::closed_event(1, seq)
    }

    #[test]
    fn keeps_the_newest_events_up_to_its_depth() {
        let mut timeline = Timeline::default();
        timeline.extend(3, (1..=5).map(event));
        let seqs: Vec<u32> = timeline.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [3, 4, 5]);
        let mut off = Timeline::default();
        off.extend(0, (1..=5).map(event));
        assert!(off.is_empty(), "depth 0 keeps nothing");
    }
}
