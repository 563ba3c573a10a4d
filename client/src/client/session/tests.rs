//! Backoff with paused tokio time, and the reconnect loop against a closed port.

use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::client::{Client, ClientConfig};
use crate::core::event::{ConnectionReport, Report};

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

#[tokio::test(start_paused = true)]
async fn c10_unreachable_server_is_retried_with_growing_waits_not_a_tight_loop() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = ClientConfig::new(format!("127.0.0.1:{port}"), "n");
    config.backoff = BackoffConfig {
        initial: Duration::from_secs(1),
        max: Duration::from_secs(4),
        multiplier: 2.0,
        jitter: 0.0,
    };
    let client = Client::start(config, std::future::pending()).unwrap();
    let mut reports = client.reports();
    let _watch = client
        .subscribe(xdsloop_proto::type_url::CLUSTER, crate::Interest::Wildcard)
        .await
        .unwrap();
    let mut connects = Vec::new();
    let mut delays = Vec::new();
    while connects.len() < 4 {
        match reports.recv().await.unwrap() {
            Report::Connection(ConnectionReport::Connecting { attempt, .. }) => {
                connects.push((attempt, Instant::now()));
            }
            Report::Connection(ConnectionReport::BackingOff { delay, .. }) => delays.push(delay),
            _ => {}
        }
    }
    let attempts: Vec<u32> = connects.iter().map(|(a, _)| *a).collect();
    assert_eq!(attempts, vec![1, 2, 3, 4]);
    assert_eq!(delays[..3], [1, 2, 4].map(Duration::from_secs));
    for (pair, delay) in connects.windows(2).zip(&delays) {
        assert!(
            pair[1].1 - pair[0].1 >= *delay,
            "waited before re-connecting"
        );
    }
    client.stop().await;
}
