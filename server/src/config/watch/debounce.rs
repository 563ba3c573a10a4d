//! When to reload after a burst of file events (pure: the caller passes the clock).
//!
//! Editors save in several steps (truncate + write, write a temp file + rename, write a backup
//! first), and `cp -r` or `git checkout` touch many files. Reloading on the first event would
//! read half-written files and report errors the user never made, so a reload waits for a quiet
//! period after the last event. A directory that never goes quiet (something appending to a
//! file in it) must not starve reloads, so a burst is also cut off after `max_delay`.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Debounce {
    quiet: Duration,
    max_delay: Duration,
    /// First and last event of the current burst; `None` when nothing is pending.
    burst: Option<(Instant, Instant)>,
}

impl Debounce {
    pub fn new(quiet: Duration) -> Self {
        Self {
            quiet,
            max_delay: quiet.saturating_mul(20).max(Duration::from_secs(1)),
            burst: None,
        }
    }

    pub fn on_event(&mut self, now: Instant) {
        let first = self.burst.map_or(now, |(first, _)| first);
        self.burst = Some((first, now));
    }

    /// When to reload, if an event is pending.
    pub fn deadline(&self) -> Option<Instant> {
        let (first, last) = self.burst?;
        Some((last + self.quiet).min(first + self.max_delay))
    }

    /// The reload is starting: events from now on belong to the next burst.
    pub fn fire(&mut self) {
        self.burst = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn reload_waits_for_quiet_after_the_last_event() {
        let t0 = Instant::now();
        let mut debounce = Debounce::new(100 * MS);
        assert_eq!(debounce.deadline(), None);
        debounce.on_event(t0);
        assert_eq!(debounce.deadline(), Some(t0 + 100 * MS));
        debounce.on_event(t0 + 60 * MS);
        debounce.on_event(t0 + 90 * MS);
        assert_eq!(debounce.deadline(), Some(t0 + 190 * MS));
        debounce.fire();
        assert_eq!(debounce.deadline(), None);
        debounce.on_event(t0 + 500 * MS);
        assert_eq!(debounce.deadline(), Some(t0 + 600 * MS));
    }

    #[test]
    fn a_directory_that_never_goes_quiet_still_reloads() {
        let t0 = Instant::now();
        let mut debounce = Debounce::new(100 * MS);
        for i in 0..100 {
            debounce.on_event(t0 + i * 50 * MS);
        }
        assert_eq!(debounce.deadline(), Some(t0 + 2000 * MS));
    }
}
