//! Whether the per-stream lines (stream opened, push, ACK, heartbeat, closed) are logged at
//! INFO. While a few dozen streams are open they tell each client's story; past that they are
//! noise (2,000 nodes under churn wrote 440k lines in 3 minutes), and one line per push
//! summarises the fleet instead (`admin::push_log`). They stay available at DEBUG.
//!
//! The count of open streams is process-wide: the registry keeps it (one server per process
//! in practice; a test that runs several only shifts a log level).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Up to this many open streams, their lines are at INFO.
pub(crate) const CHATTY_STREAMS: usize = 32;

static OPEN: AtomicUsize = AtomicUsize::new(0);

/// A stream opened.
pub(crate) fn opened() {
    OPEN.fetch_add(1, Ordering::Relaxed);
}

/// A stream closed.
pub(crate) fn closed() {
    let _ = OPEN.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
}

/// Whether per-stream lines go out at INFO now.
pub(crate) fn per_stream_at_info() -> bool {
    at_info(OPEN.load(Ordering::Relaxed))
}

/// Whether per-stream lines go out at INFO with `open` streams open.
pub(crate) fn at_info(open: usize) -> bool {
    open <= CHATTY_STREAMS
}

/// `tracing::info!` while few streams are open, `tracing::debug!` past `CHATTY_STREAMS`.
macro_rules! stream_line {
    ($($arg:tt)*) => {
        if $crate::protocol::chatter::per_stream_at_info() {
            tracing::info!($($arg)*)
        } else {
            tracing::debug!($($arg)*)
        }
    };
}
pub(crate) use stream_line;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_stream_lines_leave_info_past_a_few_dozen_streams() {
        assert!(at_info(1) && at_info(CHATTY_STREAMS));
        assert!(!at_info(CHATTY_STREAMS + 1) && !at_info(2_000));
    }
}
