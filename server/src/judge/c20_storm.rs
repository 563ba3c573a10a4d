//! C20: no request storm. More than [`STORM_REQUESTS`] requests of one type within
//! [`STORM_WINDOW`] with no response of that type in between is a client looping on its own
//! (re-sending the same subscription, or ACKing something it never got). Interest changes
//! from a busy client stay far below it: a client answers responses, and a response resets
//! the count.

use std::time::{Duration, Instant};

use super::Violation;

/// Requests of one type allowed in a window without a response of that type.
pub(crate) const STORM_REQUESTS: u32 = 20;
/// The window.
pub(crate) const STORM_WINDOW: Duration = Duration::from_secs(1);

/// One type's requests since its last response (or since the window began).
#[derive(Debug, Default)]
pub(crate) struct Storm {
    since: Option<Instant>,
    count: u32,
    reported: bool,
}

impl Storm {
    /// A request of `type_url` arrived at `now`.
    pub(crate) fn on_request(&mut self, type_url: &str, now: Instant) -> Option<Violation> {
        let fresh = self
            .since
            .is_none_or(|since| now.saturating_duration_since(since) > STORM_WINDOW);
        if fresh {
            *self = Storm {
                since: Some(now),
                ..Storm::default()
            };
        }
        self.count += 1;
        if self.count <= STORM_REQUESTS || self.reported {
            return None;
        }
        self.reported = true;
        Some(Violation::new(
            "C20.storm",
            Some(type_url),
            format!(
                "{} requests for {type_url} within {STORM_WINDOW:?} with no response of that \
                 type in between (at most {STORM_REQUESTS})",
                self.count
            ),
        ))
    }

    /// A response of the type went out: the client has something to answer again.
    pub(crate) fn on_response(&mut self) {
        *self = Storm::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c20_storm_is_more_than_the_limit_in_a_window_without_a_response() {
        let t0 = Instant::now();
        let mut storm = Storm::default();
        for i in 0..STORM_REQUESTS {
            assert_eq!(
                storm.on_request("cds", t0 + Duration::from_millis(i.into())),
                None
            );
        }
        let v = storm
            .on_request("cds", t0 + Duration::from_millis(30))
            .unwrap();
        assert_eq!((v.rule, v.check), ("C20", "C20.storm"));
        assert!(
            v.message.starts_with("21 requests for cds"),
            "{}",
            v.message
        );
        assert_eq!(
            storm.on_request("cds", t0 + Duration::from_millis(31)),
            None,
            "once"
        );
    }

    #[test]
    fn c20_a_response_or_a_quiet_second_resets_the_count() {
        let t0 = Instant::now();
        let mut storm = Storm::default();
        for _ in 0..STORM_REQUESTS {
            storm.on_request("cds", t0);
        }
        storm.on_response();
        assert_eq!(storm.on_request("cds", t0), None);
        let mut storm = Storm::default();
        for _ in 0..STORM_REQUESTS {
            storm.on_request("cds", t0);
        }
        let later = t0 + STORM_WINDOW + Duration::from_millis(1);
        assert_eq!(storm.on_request("cds", later), None);
    }
}
