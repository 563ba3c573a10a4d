//! Heartbeat schedules, and the SotW and Delta machines wrapping, heartbeating and letting
//! TTL'd resources expire (S14-S16).

mod machines;

use super::*;

const TTL: Duration = Duration::from_secs(30);
/// A third of [`TTL`]: the heartbeat period.
const THIRD: Duration = Duration::from_secs(10);

#[test]
fn s15_heartbeat_due_at_a_third_of_the_ttl_once_answered() {
    let mut beats = Heartbeats::default();
    let t0 = Instant::now();
    beats.on_push(Some(TTL), 1);
    assert!(
        !beats.due(t0) && beats.next_deadline().is_none(),
        "in flight: not armed"
    );
    beats.on_answer();
    let answered = t0 + Duration::from_secs(1);
    assert!(!beats.due(answered), "armed, not due yet");
    assert_eq!(beats.next_deadline(), Some(answered + THIRD));
    assert!(!beats.due(answered + THIRD - Duration::from_millis(1)));
    assert!(beats.due(answered + THIRD));
    let sent = answered + THIRD;
    beats.on_sent("1-9".into(), sent, SystemTime::now());
    assert!(beats.answers_heartbeat("1-9") && !beats.answers_heartbeat(""));
    assert_eq!(beats.next_deadline(), Some(sent + THIRD));
    beats.on_answer();
    assert!(!beats.due(sent + THIRD - Duration::from_millis(1)));
    assert!(beats.due(sent + THIRD), "counted from the heartbeat sent");
    assert_eq!(beats.status().map(|s| s.sent), Some(1));
}

#[test]
fn s15_a_heartbeat_lost_is_followed_by_the_next() {
    let mut beats = Heartbeats::default();
    let t0 = Instant::now();
    beats.on_push(Some(TTL), 1);
    beats.on_answer();
    beats.due(t0);
    let first = t0 + THIRD;
    assert!(beats.due(first));
    beats.on_sent("1-2".into(), first, SystemTime::now());
    // No answer: the heartbeat was lost. The next is due a third of the TTL before the
    // client's copy, refreshed at the push, runs out.
    let second = first + THIRD;
    assert!(!beats.due(second - Duration::from_millis(1)));
    assert!(beats.due(second), "a lost heartbeat does not stop the next");
    assert_eq!(t0 + TTL - second, THIRD, "a third of the TTL to spare");
    beats.on_sent("1-3".into(), second, SystemTime::now());
    assert!(
        beats.answers_heartbeat("1-3") && beats.answers_heartbeat("1-2"),
        "an answer to the earlier heartbeat, arriving after the next was sent, is still one"
    );
    beats.on_sent("1-4".into(), second + THIRD, SystemTime::now());
    beats.on_sent("1-5".into(), second + THIRD * 2, SystemTime::now());
    assert!(
        !beats.answers_heartbeat("1-2"),
        "three periods late: forgotten"
    );
    assert_eq!(beats.status().map(|s| s.sent), Some(4));
}

#[test]
fn s15_no_heartbeat_while_in_flight_or_without_ttl() {
    let mut beats = Heartbeats::default();
    let t0 = Instant::now();
    beats.on_push(None, 0);
    beats.on_answer();
    assert!(!beats.due(t0) && beats.next_deadline().is_none());
    assert_eq!(beats.status(), None);
    beats.on_push(Some(TTL), 2);
    beats.on_answer();
    beats.due(t0);
    beats.on_push(Some(TTL), 2);
    assert!(
        !beats.due(t0 + TTL),
        "a new push is in flight: schedule dropped"
    );
    assert!(beats.next_deadline().is_none());
    assert!(
        !beats.answers_heartbeat("1-1"),
        "a push forgets the heartbeat nonce"
    );
}

#[test]
fn s15_features_come_from_the_node() {
    let node = Node {
        client_features: vec![RESOURCE_IN_SOTW.into(), SUPPORTS_TTL.into()],
        ..Default::default()
    };
    let both = Features::of(Some(&node));
    assert!(both.resource_in_sotw && both.ttl);
    assert_eq!(Features::of(None), Features::default());
}
