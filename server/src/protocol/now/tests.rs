use std::time::{Duration, Instant, SystemTime};

use super::Now;

/// The moment a unit test starts from (tests read the clock; the machines never do).
pub(crate) fn now() -> Now {
    Now {
        at: Instant::now(),
        wall: SystemTime::now(),
    }
}

#[test]
fn a_later_moment_moves_both_clocks() {
    let t0 = now();
    let later = t0 + Duration::from_secs(3);
    assert_eq!(later.at - t0.at, Duration::from_secs(3));
    assert_eq!(
        later.wall.duration_since(t0.wall).unwrap(),
        Duration::from_secs(3)
    );
}
