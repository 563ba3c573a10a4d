//! C10: reconnects wait, with backoff, instead of looping. Judged per (node, peer IP,
//! service): [`BACKOFF_OPENS`] or more opens within [`BACKOFF_WINDOW`], each following a
//! stream of that key that got no response, is a tight reconnect loop.
//!
//! A backoff resets once a response arrives, so quick reconnects after served streams pass.
//! Envoy's full jitter can make a first retry almost immediate, hence several opens. Keyed by
//! service because per-type clients open several streams at once; many processes sharing one
//! node id on one host can still trip it, and the message says so.

use std::time::{Duration, Instant};

use super::{
    Violation,
    nodes::{Key, NodeBook},
};

/// Opens after unserved streams that make a loop.
pub(crate) const BACKOFF_OPENS: usize = 6;
/// Within this long.
pub(crate) const BACKOFF_WINDOW: Duration = Duration::from_secs(2);

/// A stream of `key` named its node at `now`.
pub(crate) fn opened(book: &mut NodeBook, key: Key, now: Instant) -> Option<Violation> {
    let (node, ip, service) = (key.0.clone(), key.1.clone(), key.2);
    let opens = book.opens.touch(key, now);
    if !opens.last_unserved {
        opens.failing.clear();
        return None;
    }
    opens.failing.push_back(now);
    while let Some(first) = opens.failing.front() {
        if now.saturating_duration_since(*first) <= BACKOFF_WINDOW {
            break;
        }
        opens.failing.pop_front();
    }
    if opens.failing.len() < BACKOFF_OPENS {
        return None;
    }
    let count = opens.failing.len();
    opens.failing.clear();
    Some(Violation::new(
        "C10.backoff",
        None,
        format!(
            "node {node:?} from {ip} opened {count} {service} streams within \
             {BACKOFF_WINDOW:?}, each right after a stream that got no response: reconnects \
             should back off (or several processes share this node id on one host)"
        ),
    ))
}

/// A stream of `key` closed after sending `responses` responses.
pub(crate) fn closed(book: &mut NodeBook, key: Key, responses: u64, now: Instant) {
    book.opens.touch(key, now).last_unserved = responses == 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        ("n".into(), "10.0.0.1".into(), "ads")
    }

    #[test]
    fn c10_six_quick_opens_after_unserved_streams_are_a_loop() {
        let mut book = NodeBook::default();
        let t0 = Instant::now();
        assert_eq!(opened(&mut book, key(), t0), None, "the first open");
        for i in 1..BACKOFF_OPENS as u64 {
            let at = t0 + Duration::from_millis(100 * i);
            closed(&mut book, key(), 0, at);
            assert_eq!(opened(&mut book, key(), at), None, "open {i}");
        }
        let at = t0 + Duration::from_millis(700);
        closed(&mut book, key(), 0, at);
        let v = opened(&mut book, key(), at).expect("the sixth failing open");
        assert_eq!((v.rule, v.check), ("C10", "C10.backoff"));
        assert!(v.message.contains("opened 6 ads streams"), "{}", v.message);
    }

    #[test]
    fn c10_a_served_stream_or_a_slow_retry_is_no_loop() {
        let mut book = NodeBook::default();
        let t0 = Instant::now();
        for i in 0..20u64 {
            let at = t0 + Duration::from_millis(10 * i);
            closed(&mut book, key(), u64::from(i % 3 == 0), at);
            assert_eq!(
                opened(&mut book, key(), at),
                None,
                "served streams reset it"
            );
        }
        let mut book = NodeBook::default();
        for i in 0..20u64 {
            let at = t0 + Duration::from_millis(500 * i);
            closed(&mut book, key(), 0, at);
            assert_eq!(
                opened(&mut book, key(), at),
                None,
                "two per second is backing off"
            );
        }
    }
}
