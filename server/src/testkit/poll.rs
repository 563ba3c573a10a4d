//! One bounded wait for any condition the journal's awaits do not cover: a `/status` field, a
//! client's store, a file on disk. The condition is probed again and again, at short and then
//! longer intervals, until it holds or the timeout passes; the timeout names what was awaited
//! and the last state the probe saw.

use std::{fmt::Display, time::Duration};

use tokio::time::Instant;

use super::WaitError;

/// The first pause between two probes; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(5);
/// The longest pause between two probes: a condition that holds is seen this late at worst.
const MAX_PAUSE: Duration = Duration::from_millis(100);

/// What one probe of [`poll_until`] found: done (with a value), or not yet (with what it saw).
pub trait Probe {
    /// What [`poll_until`] returns once the condition holds.
    type Value;
    /// `Ok` once the condition holds; otherwise what was seen instead, if the probe says.
    fn settle(self) -> Result<Self::Value, Option<String>>;
}

/// `true` once the condition holds.
impl Probe for bool {
    type Value = ();
    fn settle(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

/// `Some(value)` once the condition holds.
impl<T> Probe for Option<T> {
    type Value = T;
    fn settle(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

/// `Ok(value)` once the condition holds; `Err(what was seen)` until then (a failed fetch
/// counts as "not yet", and the last one is in the timeout's message).
impl<T, E: Display> Probe for Result<T, E> {
    type Value = T;
    fn settle(self) -> Result<T, Option<String>> {
        self.map_err(|seen| Some(seen.to_string()))
    }
}

/// Probes until `probe` finds its condition holds, or fails with [`WaitError::NotMet`] after
/// `timeout`, naming `what` was awaited and the last thing the probe saw. The probe runs at
/// once, then after pauses of 5 ms doubling up to 100 ms; it runs at least once, even with a
/// zero timeout.
///
/// ```no_run
/// # async fn demo(server: &xdsloop_server::testkit::TestServer) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use xdsloop_server::testkit::poll_until;
///
/// poll_until("two open streams", Duration::from_secs(5), async || {
///     let open = server.registry().streams().len();
///     if open == 2 { Ok(()) } else { Err(format!("{open} open")) }
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn poll_until<P: Probe>(
    what: &str,
    timeout: Duration,
    mut probe: impl AsyncFnMut() -> P,
) -> Result<P::Value, WaitError> {
    let deadline = Instant::now() + timeout;
    let mut pause = FIRST_PAUSE;
    loop {
        let seen = match probe().await.settle() {
            Ok(value) => return Ok(value),
            Err(seen) => seen,
        };
        if Instant::now() >= deadline {
            let message = match seen {
                Some(seen) => format!("{what}: not within {timeout:?}; last seen: {seen}"),
                None => format!("{what}: not within {timeout:?}"),
            };
            return Err(WaitError::NotMet {
                waited: timeout,
                message,
            });
        }
        tokio::time::sleep_until(deadline.min(Instant::now() + pause)).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn returns_the_value_once_the_condition_holds() {
        let probes = AtomicU32::new(0);
        let found = poll_until("the third probe", Duration::from_secs(5), async || {
            let n = probes.fetch_add(1, Ordering::SeqCst) + 1;
            (n == 3).then_some(n)
        })
        .await
        .unwrap();
        assert_eq!(found, 3);
        assert_eq!(probes.load(Ordering::SeqCst), 3, "no probe after it held");
    }

    #[tokio::test(start_paused = true)]
    async fn a_timeout_names_what_was_awaited_and_the_last_state_seen() {
        let probes = AtomicU32::new(0);
        let started = Instant::now();
        let err = poll_until("two open streams", Duration::from_secs(1), async || {
            let n = probes.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(format!("{n} open"))
        })
        .await
        .unwrap_err();
        let last = probes.load(Ordering::SeqCst) - 1;
        assert_eq!(
            err.to_string(),
            format!("two open streams: not within 1s; last seen: {last} open")
        );
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(1),
            "it gives up at the deadline"
        );
        assert!(last > 5, "it probed again and again: {last}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_condition_that_never_holds_times_out_without_a_state() {
        let err = poll_until("nothing", Duration::ZERO, async || false)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "nothing: not within 0ns");
        let WaitError::NotMet { waited, .. } = err else {
            panic!("a poll ends NotMet: {err:?}")
        };
        assert_eq!(waited, Duration::ZERO);
    }
}
