//! A scenario refused over `PUT /scenario`: the answer and `/status` point at the offending
//! value and name its rule, and the rules in force stay.

use super::*;
use crate::harness::{http_get, http_send};

/// `PUT` `yaml` on a server with one rule in force; the error it is refused with.
async fn refused(yaml: &str) -> String {
    let served = served_with("version: 1\nrules:\n  - id: kept\n    do: { delay: 1ms }\n").await;
    let answer = http_send(served.addr(), "PUT", "/scenario", Some(yaml)).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    let error = answer.json()["error"].as_str().unwrap().to_string();
    let status = http_get(served.addr(), "/status").await.json();
    assert_eq!(status["scenario"]["error"], error.as_str(), "{status:#}");
    assert_eq!(status["scenario"]["rules"][0]["id"], "kept", "{status:#}");
    error
}

#[tokio::test]
async fn put_scenario_points_at_the_offending_value_and_names_its_rule() {
    let yaml = "version: 1\nrules:\n  - id: first\n    do: { drop: {} }\n  - id: slow\n    match: { type: cds }\n    do: { delay: soon }\n";
    let error = refused(yaml).await;
    assert!(
        error.starts_with("PUT /scenario:7:18: rules[1] (slow): delay: \"soon\" is not a duration"),
        "{error}"
    );
    let yaml = "version: 1\nrules:\n  - id: first\n    do: { drop: {} }\n  - do: { drop: {} }\n  - when: { requested: { type: cds, name: web } }\n    do: { hang: {} }\n";
    let error = refused(yaml).await;
    assert!(
        error.starts_with("PUT /scenario:6:13: rules[2]: `when.requested` is a server-wide moment"),
        "{error}"
    );
}
