use super::*;

fn wanted(wildcard: bool, names: &[&str]) -> Wanted {
    Wanted {
        wildcard,
        names: names.iter().map(|n| n.to_string()).collect(),
    }
}

#[test]
fn c3_sotw_requests_carry_the_full_set_of_names() {
    let mut state = TypeState::new("t");
    let first = state.build_sotw(&wanted(false, &["a", "b"]), None).unwrap();
    assert_eq!(first.resource_names, vec!["a", "b"]);
    state.mark_dirty();
    let second = state
        .build_sotw(&wanted(false, &["a", "b", "c"]), None)
        .unwrap();
    assert_eq!(second.resource_names, vec!["a", "b", "c"]);
}

#[test]
fn c9_wildcard_is_empty_on_a_fresh_type_and_explicit_once_names_are_wanted() {
    let mut state = TypeState::new("t");
    let first = state.build_sotw(&wanted(true, &[]), None).unwrap();
    assert!(first.resource_names.is_empty());
    state.mark_dirty();
    let mixed = state.build_sotw(&wanted(true, &["x"]), None).unwrap();
    assert_eq!(mixed.resource_names, vec!["*", "x"]);
    state.mark_dirty();
    let back = state.build_sotw(&wanted(true, &[]), None).unwrap();
    assert_eq!(
        back.resource_names,
        vec!["*"],
        "empty would now mean unsubscribe (S6)"
    );
}

#[test]
fn c4_every_response_gets_one_reply_echoing_its_nonce() {
    let mut state = TypeState::new("t");
    let w = wanted(false, &["a"]);
    state.build_sotw(&w, None).unwrap();
    state.ack("n1", "v1");
    let ack = state.build_sotw(&w, None).unwrap();
    assert_eq!(
        (ack.response_nonce.as_str(), ack.version_info.as_str()),
        ("n1", "v1")
    );
    assert!(ack.error_detail.is_none());
    assert!(
        state.build_sotw(&w, None).is_none(),
        "no second reply for one response"
    );
}

#[test]
fn c5_nack_carries_last_accepted_version_and_bounded_error() {
    let mut state = TypeState::new("t");
    let w = wanted(false, &["a"]);
    state.build_sotw(&w, None);
    state.ack("n1", "v1");
    state.build_sotw(&w, None);
    state.nack("n2", &"x".repeat(10 * MAX_NACK_MESSAGE_BYTES));
    let nack = state.build_sotw(&w, None).unwrap();
    assert_eq!(nack.version_info, "v1");
    assert_eq!(nack.response_nonce, "n2");
    let detail = nack.error_detail.unwrap();
    assert_ne!(detail.code, 0);
    assert!(detail.message.len() <= MAX_NACK_MESSAGE_BYTES);
    assert_eq!(state.version, "v1");
}

#[test]
fn c11_stream_start_clears_nonce_and_keeps_version() {
    let mut state = TypeState::new("t");
    let w = wanted(false, &["a"]);
    state.build_sotw(&w, None);
    state.ack("n1", "v1");
    state.build_sotw(&w, None);
    state.on_stream_start();
    let resubscribe = state.build_sotw(&w, None).unwrap();
    assert_eq!(resubscribe.version_info, "v1");
    assert_eq!(resubscribe.response_nonce, "");
    assert_eq!(resubscribe.resource_names, vec!["a"]);
}

#[test]
fn sotw_sends_nothing_for_an_unwanted_fresh_type() {
    let mut state = TypeState::new("t");
    assert!(state.build_sotw(&Wanted::default(), None).is_none());
}

#[test]
fn sotw_dropping_all_names_sends_an_empty_list() {
    let mut state = TypeState::new("t");
    state.build_sotw(&wanted(false, &["a"]), None);
    state.mark_dirty();
    let req = state.build_sotw(&Wanted::default(), None).unwrap();
    assert!(req.resource_names.is_empty());
}

#[test]
fn c11_delta_first_request_subscribes_everything_with_held_versions() {
    let mut state = TypeState::new("t");
    let held = BTreeMap::from([
        ("a".to_string(), "h1".to_string()),
        ("gone".to_string(), "h2".to_string()),
    ]);
    let req = state
        .build_delta(&wanted(false, &["a", "b"]), &held, None)
        .unwrap();
    assert_eq!(req.resource_names_subscribe, vec!["a", "b"]);
    assert_eq!(
        req.initial_resource_versions,
        HashMap::from([("a".to_string(), "h1".to_string())]),
        "only held versions of wanted names"
    );
}

#[test]
fn c3_delta_requests_carry_only_changes() {
    let mut state = TypeState::new("t");
    let held = BTreeMap::new();
    state.build_delta(&wanted(false, &["a", "b"]), &held, None);
    state.mark_dirty();
    let req = state
        .build_delta(&wanted(false, &["b", "c"]), &held, None)
        .unwrap();
    assert_eq!(req.resource_names_subscribe, vec!["c"]);
    assert_eq!(req.resource_names_unsubscribe, vec!["a"]);
    assert!(req.initial_resource_versions.is_empty());
    state.mark_dirty();
    assert!(
        state
            .build_delta(&wanted(false, &["b", "c"]), &held, None)
            .is_none()
    );
}

#[test]
fn c9_delta_legacy_wildcard_turns_explicit_when_names_are_added() {
    let mut state = TypeState::new("t");
    let held = BTreeMap::from([("x".to_string(), "h".to_string())]);
    let first = state.build_delta(&wanted(true, &[]), &held, None).unwrap();
    assert!(first.resource_names_subscribe.is_empty());
    assert_eq!(first.initial_resource_versions.len(), 1);
    state.mark_dirty();
    let req = state
        .build_delta(&wanted(true, &["n"]), &held, None)
        .unwrap();
    assert_eq!(req.resource_names_subscribe, vec!["*", "n"]);
}

#[test]
fn c4_delta_ack_and_nack_echo_the_nonce() {
    let mut state = TypeState::new("t");
    let held = BTreeMap::new();
    let w = wanted(true, &[]);
    state.build_delta(&w, &held, None);
    state.ack("n1", "sys1");
    let ack = state.build_delta(&w, &held, None).unwrap();
    assert_eq!(ack.response_nonce, "n1");
    assert!(ack.error_detail.is_none() && ack.resource_names_subscribe.is_empty());
    state.nack("n2", "bad");
    let nack = state.build_delta(&w, &held, None).unwrap();
    assert_eq!(nack.response_nonce, "n2");
    assert_eq!(nack.error_detail.unwrap().message, "bad");
}

#[test]
fn bounded_keeps_short_messages_and_cuts_on_char_boundaries() {
    assert_eq!(bounded("short"), "short");
    let long = "é".repeat(MAX_NACK_MESSAGE_BYTES);
    let cut = bounded(&long);
    assert!(cut.len() <= MAX_NACK_MESSAGE_BYTES && cut.contains("more bytes"));
}
