//! One shard of a fleet spread over several processes (or machines): which of the run's nodes
//! this process simulates.
//!
//! Shard `I/N` of a run of `T` nodes owns a contiguous range of the run's node indexes; the
//! first `T % N` shards get one node more than the others, so no two shards differ by more
//! than one node, and the ranges of shards `0/N .. (N-1)/N` cover `0..T` exactly once. A node
//! keeps its run-wide index, so its id (`<prefix><index>`) is the one an unsharded run gives it.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (0-based, as Kubernetes' `JOB_COMPLETION_INDEX`).
/// A report read back is checked as the flag is (a damaged `count` of 0 must not divide).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "ShardFields")]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The whole run in one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// This shard's node indexes in a run of `total` nodes.
    pub fn range(&self, total: usize) -> Range<usize> {
        let (base, extra) = (total / self.count, total % self.count);
        let start = self.index * base + self.index.min(extra);
        let len = base + usize::from(self.index < extra);
        start..start + len
    }
}

/// [`Shard`]'s fields as a report spells them, before they are checked.
#[derive(Deserialize)]
struct ShardFields {
    index: usize,
    count: usize,
}

impl TryFrom<ShardFields> for Shard {
    type Error = String;

    fn try_from(fields: ShardFields) -> Result<Self, String> {
        format!("{}/{}", fields.index, fields.count).parse()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N` with `0 <= I < N`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = || {
            format!(
                "{text:?}: expected I/N, shard I (0-based, as JOB_COMPLETION_INDEX) of N, e.g. 0/4"
            )
        };
        let (index, count) = text.split_once('/').ok_or_else(usage)?;
        let index: usize = index.trim().parse().map_err(|_| usage())?;
        let count: usize = count.trim().parse().map_err(|_| usage())?;
        if count == 0 {
            return Err(format!("{text:?}: N must be at least 1"));
        }
        if index >= count {
            return Err(format!(
                "{text:?}: shard index {index} is out of range for {count} shards (0..{})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(count: usize) -> impl Iterator<Item = Shard> {
        (0..count).map(move |index| Shard { index, count })
    }

    #[test]
    fn shards_cover_every_node_once_in_order_and_differ_by_at_most_one() {
        for total in [0, 1, 7, 10, 2_500, 10_000, 100_000, 100_003] {
            for count in [1, 2, 3, 4, 7, 16, 100] {
                let ranges: Vec<Range<usize>> = shards(count).map(|s| s.range(total)).collect();
                let mut next = 0;
                for r in &ranges {
                    assert_eq!(
                        r.start, next,
                        "{total} nodes / {count}: contiguous, in order"
                    );
                    next = r.end;
                }
                assert_eq!(next, total, "{total} nodes / {count}: all covered");
                let sizes = ranges.iter().map(|r| r.len());
                let (min, max) = (sizes.clone().min().unwrap(), sizes.max().unwrap());
                assert!(max - min <= 1, "{total} nodes / {count}: {min}..{max}");
            }
        }
    }

    #[test]
    fn one_shard_is_the_unsharded_run() {
        assert_eq!(Shard::WHOLE.range(10_000), 0..10_000);
        let four: Vec<_> = shards(4).map(|s| s.range(10)).collect();
        assert_eq!(four, vec![0..3, 3..6, 6..8, 8..10]);
    }

    #[test]
    fn shard_flags_parse_and_bad_ones_say_why() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(Shard { index: 2, count: 4 }.to_string(), "2/4");
        let error = "4/4".parse::<Shard>().unwrap_err();
        assert!(
            error.contains("out of range for 4 shards (0..3)"),
            "{error}"
        );
        assert!("1/0".parse::<Shard>().unwrap_err().contains("at least 1"));
        for bad in ["", "3", "a/4", "1/b", "-1/4"] {
            let error = bad.parse::<Shard>().unwrap_err();
            assert!(error.contains("expected I/N"), "{bad:?}: {error}");
        }
    }

    #[test]
    fn a_shard_read_from_a_report_is_checked_as_the_flag_is() {
        let read = |json: &str| serde_json::from_str::<Shard>(json);
        assert_eq!(
            read(r#"{"index":1,"count":4}"#).unwrap(),
            Shard { index: 1, count: 4 }
        );
        for damaged in [r#"{"index":0,"count":0}"#, r#"{"index":4,"count":4}"#] {
            assert!(read(damaged).is_err(), "{damaged} was taken");
        }
    }
}
