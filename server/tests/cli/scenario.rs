//! `xdsloop-server scenario check FILE`: a scenario file checked offline, as the server would
//! read it, with no server running.

use std::process::Command;

use super::support::BIN;

fn check(text: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("faults.yaml");
    std::fs::write(&path, text).unwrap();
    Command::new(BIN)
        .args(["scenario", "check"])
        .arg(&path)
        .output()
        .expect("the server binary runs")
}

#[test]
fn scenario_check_passes_a_good_file_and_lists_its_rules() {
    let out = check(
        "version: 1\nrules:\n  - id: mangle\n    match: { type: cds }\n    when: { nth: 2 }\n    do: { corrupt: {} }\n  - do: { delay: 2s }\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("2 rules"), "{stdout}");
    assert!(
        stdout.contains("mangle") && stdout.contains("corrupt"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rule-2") && stdout.contains("delay"),
        "{stdout}"
    );
}

#[test]
fn scenario_check_refuses_a_bad_file_with_file_line_and_exit_status_2() {
    let out = check("version: 1\nrules:\n  - id: huge\n    do: { oversize: { bytes: 100GiB } }\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("faults.yaml:4:30: rules[0] (huge): oversize.bytes: at most"),
        "{stderr}"
    );
}

#[test]
fn scenario_check_says_when_the_file_cannot_be_read() {
    let out = Command::new(BIN)
        .args(["scenario", "check", "/nonexistent/faults.yaml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/faults.yaml: cannot read"),
        "{stderr}"
    );
}

/// A value out of range in the third rule is refused at that value, the rule named by its
/// position when it has no id.
#[test]
fn scenario_check_points_at_the_offending_value_in_its_rule() {
    let out = check(
        "version: 1\nrules:\n  - id: first\n    do: { drop: {} }\n  - do: { drop: {} }\n  - do:\n      delay: 25h\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("faults.yaml:7:14: rules[2]: delay: at most 1day, not 1day 1h"),
        "{stderr}"
    );
}

/// `--scenario FILE` at start refuses a bad file as `scenario check` does: at the value.
#[test]
fn a_server_started_with_a_bad_scenario_says_where_and_exits_2() {
    let fixtures = super::support::fixtures("v1");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("faults.yaml");
    let text = "version: 1\nrules:\n  - id: first\n    do: { drop: {} }\n  - id: cut\n    when:\n      requested: { type: cds, name: web }\n    do: { close: {} }\n";
    std::fs::write(&path, text).unwrap();
    let out = Command::new(BIN)
        .args(["--fixtures", fixtures.path().to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--scenario"])
        .arg(&path)
        .output()
        .expect("the server binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("faults.yaml:7:7: rules[1] (cut): `when.requested` is a server-wide moment"),
        "{stderr}"
    );
}
