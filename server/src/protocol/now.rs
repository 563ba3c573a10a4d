//! Time as the machines take it: the transport reads its clocks once per event and passes the
//! moment in; nothing in the protocol layer reads a clock (`tests/architecture` checks it), so
//! a unit test chooses the time and a heartbeat's schedule is plain arithmetic.

use std::{
    ops::Add,
    time::{Duration, Instant, SystemTime},
};

/// The moment an event is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Now {
    /// On the monotonic clock: when heartbeats and recorded delays are due.
    pub at: Instant,
    /// On the wall clock: the timestamps `/status` shows (sent, ACKed, faulted at).
    pub wall: SystemTime,
}

impl Add<Duration> for Now {
    type Output = Now;

    /// The same two clocks, `by` later.
    fn add(self, by: Duration) -> Now {
        Now {
            at: self.at + by,
            wall: self.wall + by,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
