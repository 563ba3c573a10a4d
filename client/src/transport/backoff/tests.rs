//! Backoff with paused tokio time.

use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn config() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(2),
        multiplier: 2.0,
        jitter: 0.2,
    }
}

#[test]
fn c10_backoff_grows_exponentially_with_jitter_up_to_the_cap() {
    let mut backoff = Backoff::with_rng(config(), fastrand::Rng::with_seed(7));
    let mut distinct = std::collections::BTreeSet::new();
    for attempt in 0..12u32 {
        let delay = backoff.next_delay();
        let base = (0.1 * 2f64.powi(attempt as i32)).min(2.0);
        let secs = delay.as_secs_f64();
        assert!(
            secs >= base * 0.8 - 1e-9,
            "attempt {attempt}: {secs} below {base}"
        );
        assert!(
            secs <= (base * 1.2).min(2.0) + 1e-9,
            "attempt {attempt}: {secs} above cap"
        );
        distinct.insert(delay);
    }
    assert_eq!(backoff.attempt(), 12);
    assert!(distinct.len() > 6, "jitter varies the delays");
}

#[test]
fn c10_backoff_resets_to_the_initial_delay() {
    let mut backoff = Backoff::with_rng(config(), fastrand::Rng::with_seed(1));
    for _ in 0..6 {
        backoff.next_delay();
    }
    backoff.reset();
    assert_eq!(backoff.attempt(), 0);
    assert!(backoff.next_delay() <= Duration::from_millis(120));
}

#[test]
fn c10_backoff_never_returns_zero_even_with_full_jitter() {
    let mut full = config();
    full.jitter = 1.0;
    full.initial = Duration::ZERO;
    let mut backoff = Backoff::with_rng(full, fastrand::Rng::with_seed(3));
    for _ in 0..50 {
        assert!(backoff.next_delay() > Duration::ZERO);
    }
}

#[tokio::test(start_paused = true)]
async fn c10_backoff_wait_sleeps_the_delay_it_returns() {
    let mut backoff = Backoff::with_rng(config(), fastrand::Rng::with_seed(9));
    let start = Instant::now();
    let first = backoff.wait().await;
    let second = backoff.wait().await;
    let elapsed = start.elapsed();
    assert!(second > first);
    assert!(elapsed >= first + second);
    assert!(elapsed < first + second + Duration::from_millis(5));
}
