//! When to reload after a burst of file events (pure: the caller passes the clock).
//!
//! Editors save in several steps (truncate + write, write a temp file + rename, move the old
//! file to a backup and write a new one), and `cp -r` or `git checkout` touch many files.
//! Reloading in the middle would read half-written files, so each event says what it means for
//! its file ([`Step`]): a file closed after writing, or renamed into place, is complete. Once
//! every fixture file of the burst is complete, the reload follows after a short settle window
//! (the next step of a multi-step save comes within microseconds; the window catches it). While
//! a file is still being written, or was deleted or renamed away (an editor may be about to put
//! its replacement there), or the events cannot tell (a new directory whose files may have been
//! written before it was watched, lost events), the reload waits for the full quiet period after
//! the last event instead. A directory that never goes quiet (something appending to a file in
//! it) must not starve reloads, so a burst is also cut off after `max_delay`.

use std::{
    collections::BTreeSet,
    path::PathBuf,
    time::{Duration, Instant},
};

/// The settle window after a burst whose files are all complete (or the quiet period, if
/// that is shorter).
pub(crate) const SETTLE: Duration = Duration::from_millis(10);

/// What one file event says about the file it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Created or written to: more may come until it is closed.
    Writing(PathBuf),
    /// Closed after writing, or renamed into place: complete.
    Done(PathBuf),
    /// Deleted or renamed away: a replacement may be on its way.
    Gone(PathBuf),
    /// A change whose end the events cannot show: wait for the quiet period.
    Unknown,
    /// About a file the loader never reads (a hidden temp file, an editor's backup): it
    /// extends the burst but does not hold it open.
    Other,
}

#[derive(Debug, Clone)]
pub(crate) struct Debounce {
    quiet: Duration,
    settle: Duration,
    max_delay: Duration,
    /// `None` when nothing is pending.
    burst: Option<Burst>,
}

#[derive(Debug, Clone)]
struct Burst {
    first: Instant,
    last: Instant,
    /// Fixture files of this burst not known to be complete.
    unfinished: BTreeSet<PathBuf>,
    unknown: bool,
}

impl Debounce {
    pub(crate) fn new(quiet: Duration) -> Self {
        Self {
            quiet,
            settle: SETTLE.min(quiet),
            max_delay: quiet.saturating_mul(20).max(Duration::from_secs(1)),
            burst: None,
        }
    }

    pub(crate) fn on_event(&mut self, now: Instant, step: Step) {
        let burst = self.burst.get_or_insert_with(|| Burst {
            first: now,
            last: now,
            unfinished: BTreeSet::new(),
            unknown: false,
        });
        burst.last = now;
        match step {
            Step::Writing(path) | Step::Gone(path) => {
                burst.unfinished.insert(path);
            }
            Step::Done(path) => {
                burst.unfinished.remove(&path);
            }
            Step::Unknown => burst.unknown = true,
            Step::Other => {}
        }
    }

    /// When to reload, if an event is pending.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let burst = self.burst.as_ref()?;
        let complete = !burst.unknown && burst.unfinished.is_empty();
        let wait = if complete { self.settle } else { self.quiet };
        Some((burst.last + wait).min(burst.first + self.max_delay))
    }

    /// The reload is starting: events from now on belong to the next burst.
    pub(crate) fn fire(&mut self) {
        self.burst = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn file(name: &str) -> PathBuf {
        PathBuf::from("/fx").join(name)
    }

    fn writing(name: &str) -> Step {
        Step::Writing(file(name))
    }

    fn done(name: &str) -> Step {
        Step::Done(file(name))
    }

    /// Feeds `(ms after t0, step)` events and returns the deadline after each.
    fn deadlines(debounce: &mut Debounce, t0: Instant, events: &[(u32, Step)]) -> Vec<u64> {
        let at = |d: Instant| (d - t0).as_millis() as u64;
        (events.iter())
            .map(|(ms, step)| {
                debounce.on_event(t0 + *ms * MS, step.clone());
                at(debounce.deadline().expect("pending"))
            })
            .collect()
    }

    #[test]
    fn in_place_write_with_several_write_calls_reloads_after_the_close() {
        let (t0, mut debounce) = (Instant::now(), Debounce::new(100 * MS));
        assert_eq!(debounce.deadline(), None);
        let events = [
            (0, writing("a.yaml")),
            (1, writing("a.yaml")),
            (30, writing("a.yaml")),
            (31, done("a.yaml")),
        ];
        // Open for writing: a pause between write() calls is not the end of the save.
        assert_eq!(deadlines(&mut debounce, t0, &events), [100, 101, 130, 41]);
        debounce.fire();
        assert_eq!(debounce.deadline(), None);
    }

    #[test]
    fn write_temp_then_rename_reloads_after_the_settle_window() {
        let (t0, mut debounce) = (Instant::now(), Debounce::new(100 * MS));
        // The hidden temp file is never read: its events do not hold the burst open.
        let events = [
            (0, Step::Other),
            (1, Step::Other),
            (2, Step::Other),
            (2, done("a.yaml")),
            (3, done("b.yaml")),
        ];
        assert_eq!(deadlines(&mut debounce, t0, &events), [10, 11, 12, 12, 13]);
        debounce.fire();
        // A rename from one fixture name to another: the old name is gone, and may come back.
        debounce.on_event(t0 + 20 * MS, Step::Gone(file("a.yaml")));
        debounce.on_event(t0 + 20 * MS, done("b.yaml"));
        assert_eq!(debounce.deadline(), Some(t0 + 120 * MS));
    }

    #[test]
    fn truncate_then_write_in_two_opens_waits_for_the_second_close() {
        let (t0, mut debounce) = (Instant::now(), Debounce::new(100 * MS));
        let events = [
            (0, writing("a.yaml")),
            // Closed empty: complete as far as the events tell (an empty fixture file keeps
            // its previous resources, so a reload right here pushes nothing).
            (1, done("a.yaml")),
            (3, writing("a.yaml")),
            (4, writing("a.yaml")),
            (5, done("a.yaml")),
        ];
        assert_eq!(
            deadlines(&mut debounce, t0, &events),
            [100, 11, 103, 104, 15]
        );
    }

    #[test]
    fn editor_backup_files_hold_the_reload_until_the_new_file_is_closed() {
        let (t0, mut debounce) = (Instant::now(), Debounce::new(100 * MS));
        let events = [
            // vim: a write probe, then a.yaml moved to a.yaml~, a new a.yaml written.
            (0, Step::Other),
            (1, Step::Gone(file("a.yaml"))),
            (1, Step::Other),
            (2, writing("a.yaml")),
            (3, done("a.yaml")),
            (4, Step::Other),
        ];
        assert_eq!(
            deadlines(&mut debounce, t0, &events),
            [10, 101, 101, 102, 13, 14]
        );
        debounce.fire();
        // A file deleted or renamed away, with no replacement: the full quiet period.
        debounce.on_event(t0 + 50 * MS, Step::Gone(file("b.yaml")));
        assert_eq!(debounce.deadline(), Some(t0 + 150 * MS));
    }

    #[test]
    fn cp_r_of_many_files_waits_for_the_last_one() {
        let (t0, mut debounce) = (Instant::now(), Debounce::new(100 * MS));
        let mut events = Vec::new();
        for i in 0..50 {
            let name = format!("f{i}.yaml");
            events.push((2 * i, writing(&name)));
            events.push((2 * i + 1, done(&name)));
        }
        let got = deadlines(&mut debounce, t0, &events);
        // Between files the deadline is the settle window after the last close; each next
        // file starts within it, so the reload comes after the last one.
        assert_eq!(got.last(), Some(&(99 + 10)));
        let next_events = events.iter().skip(1).map(|(at, _)| u64::from(*at));
        assert!(
            got.iter()
                .zip(next_events)
                .all(|(deadline, next)| next < *deadline)
        );
        debounce.fire();
        // Into a new directory: its first files may be written before it is watched.
        debounce.on_event(t0, Step::Unknown);
        debounce.on_event(t0 + MS, writing("new/f.yaml"));
        debounce.on_event(t0 + 2 * MS, done("new/f.yaml"));
        assert_eq!(debounce.deadline(), Some(t0 + 102 * MS));
    }

    #[test]
    fn a_short_debounce_bounds_the_settle_window() {
        let (t0, mut debounce) = (Instant::now(), Debounce::new(5 * MS));
        debounce.on_event(t0, done("a.yaml"));
        assert_eq!(debounce.deadline(), Some(t0 + 5 * MS));
    }

    #[test]
    fn a_directory_that_never_goes_quiet_still_reloads() {
        let t0 = Instant::now();
        let mut debounce = Debounce::new(100 * MS);
        for i in 0..100 {
            debounce.on_event(t0 + i * 50 * MS, writing("log.yaml"));
        }
        assert_eq!(debounce.deadline(), Some(t0 + 2000 * MS));
    }
}
