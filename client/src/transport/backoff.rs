//! Reconnect backoff (C10): exponential with jitter and a cap.

use std::time::Duration;

use crate::config::BackoffConfig;

/// Exponential backoff with jitter and a cap (C10). Every delay is positive: the client always
/// waits before re-creating a stream. Reset only once a response arrived.
#[derive(Debug)]
pub struct Backoff {
    config: BackoffConfig,
    attempt: u32,
    rng: fastrand::Rng,
}

impl Backoff {
    /// A backoff with a random jitter source.
    pub fn new(config: BackoffConfig) -> Self {
        Self::with_rng(config, fastrand::Rng::new())
    }

    /// A backoff with the given jitter source (tests make it repeatable).
    pub fn with_rng(config: BackoffConfig, rng: fastrand::Rng) -> Self {
        Self {
            config,
            attempt: 0,
            rng,
        }
    }

    /// Failed attempts since the last reset.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let c = self.config;
        let exponent = self.attempt.min(64) as i32;
        let base = c.initial.as_secs_f64() * c.multiplier.powi(exponent);
        let base = base.min(c.max.as_secs_f64());
        let factor = 1.0 - c.jitter + 2.0 * c.jitter * self.rng.f64();
        let delay = (base * factor).min(c.max.as_secs_f64());
        self.attempt = self.attempt.saturating_add(1);
        Duration::from_secs_f64(delay).max(Duration::from_millis(1))
    }

    /// A response arrived: the connection is healthy again.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// Sleeps for the next delay; returns it.
    pub async fn wait(&mut self) -> Duration {
        let delay = self.next_delay();
        tokio::time::sleep(delay).await;
        delay
    }
}

#[cfg(test)]
mod tests;
