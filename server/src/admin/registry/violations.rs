//! What the conformance judge found on one stream, as its registry entry keeps it: how many
//! violations, how many per check, and the last few in full. Kept after the stream closes
//! (recently closed streams), so "why was my client cut off?" can still be answered.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::Arc,
};

use crate::judge::Violation;

/// Violations kept in full per stream, newest last.
pub(crate) const LAST_VIOLATIONS: usize = 8;

/// One stream's violations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Violations {
    /// How many it found.
    pub count: u64,
    /// By check (`C5.nack-version`).
    pub by_check: BTreeMap<&'static str, u64>,
    /// The last 8, oldest first.
    pub last: VecDeque<Arc<Violation>>,
}

impl Violations {
    pub(crate) fn add(&mut self, violation: Arc<Violation>) {
        self.count += 1;
        *self.by_check.entry(violation.check).or_default() += 1;
        if self.last.len() == LAST_VIOLATIONS {
            self.last.pop_front();
        }
        self.last.push_back(violation);
    }

    /// The judge found nothing on the stream.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_counts_every_violation_and_keeps_the_last_few() {
        let mut found = Violations::default();
        for i in 0..LAST_VIOLATIONS + 2 {
            let check = if i == 0 { "C1.node" } else { "C20.storm" };
            found.add(Arc::new(Violation::new(check, None, format!("#{i}"))));
        }
        assert_eq!(found.count, 10);
        assert_eq!(found.by_check["C1.node"], 1);
        assert_eq!(found.by_check["C20.storm"], 9);
        assert_eq!(found.last.len(), LAST_VIOLATIONS);
        assert_eq!(&*found.last[0].message, "#2");
    }
}
