//! Heartbeat schedules, and the SotW and Delta machines wrapping, heartbeating and letting
//! TTL'd resources expire (S14-S16).

mod machines;

use super::*;

const TTL: Duration = Duration::from_secs(10);

#[test]
fn s15_heartbeat_due_at_half_ttl_once_answered() {
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
    assert_eq!(beats.next_deadline(), Some(answered + TTL / 2));
    assert!(!beats.due(answered + TTL / 2 - Duration::from_millis(1)));
    assert!(beats.due(answered + TTL / 2));
    beats.on_sent("1-9".into(), SystemTime::now());
    assert!(beats.answers_heartbeat("1-9") && !beats.answers_heartbeat(""));
    assert!(!beats.due(answered + TTL), "the heartbeat is in flight");
    beats.on_answer();
    let again = answered + TTL;
    assert!(!beats.due(again));
    assert_eq!(beats.next_deadline(), Some(again + TTL / 2));
    assert_eq!(beats.status().map(|s| s.sent), Some(1));
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
