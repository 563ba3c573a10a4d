use std::time::Duration;

use super::*;

const QUIET: Duration = Duration::from_millis(30);
const WAIT: Duration = Duration::from_secs(10);

const ONE_RULE: &str = "version: 1\nrules:\n  - id: a\n    do: { drop: {} }\n";
const TWO_RULES: &str =
    "version: 1\nrules:\n  - id: a\n    do: { drop: {} }\n  - id: b\n    do: { drop: {} }\n";

async fn generation_reaches(scenarios: &Scenarios, generation: u64) {
    let mut rx = scenarios.subscribe();
    let reached = rx.wait_for(|installed| installed.generation >= generation);
    tokio::time::timeout(WAIT, reached)
        .await
        .expect("the scenario is reloaded")
        .expect("the sender lives");
}

/// Reading the file makes inotify report an open and a read-only close: a watcher that takes
/// those for changes reloads after every reload, for ever, and starts the counters again each
/// time.
#[tokio::test]
async fn one_save_is_one_reload_and_the_reload_s_own_read_is_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("faults.yaml");
    std::fs::write(&path, ONE_RULE).unwrap();
    let scenarios = Scenarios::new();
    let _watcher = start(scenarios.clone(), path.clone(), QUIET).unwrap();
    assert_eq!(scenarios.current().generation, 1);

    std::fs::write(&path, TWO_RULES).unwrap();
    generation_reaches(&scenarios, 2).await;
    assert_eq!(scenarios.current().scenario.rules.len(), 2);
    // Many quiet periods later, the one save is still one reload.
    tokio::time::sleep(QUIET * 20).await;
    assert_eq!(scenarios.current().generation, 2, "reloaded without a save");

    // A save by rename (as editors do) is one reload too.
    let temp = dir.path().join(".faults.yaml.swp");
    std::fs::write(&temp, ONE_RULE).unwrap();
    std::fs::rename(&temp, &path).unwrap();
    generation_reaches(&scenarios, 3).await;
    tokio::time::sleep(QUIET * 20).await;
    assert_eq!(scenarios.current().generation, 3, "reloaded without a save");
}

/// A refused edit is said once, not after every read of the file.
#[tokio::test]
async fn a_refused_edit_is_refused_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("faults.yaml");
    std::fs::write(&path, ONE_RULE).unwrap();
    let scenarios = Scenarios::new();
    let _watcher = start(scenarios.clone(), path.clone(), QUIET).unwrap();

    std::fs::write(&path, "version: 1\nrules:\n  - do: { nope: {} }\n").unwrap();
    let refused = async {
        loop {
            if let Some(r) = scenarios.rejected() {
                return r.at;
            }
            tokio::time::sleep(QUIET).await;
        }
    };
    let first = tokio::time::timeout(WAIT, refused).await.expect("refused");
    tokio::time::sleep(QUIET * 20).await;
    let again = scenarios.rejected().expect("still refused");
    assert_eq!(again.at, first, "the refusal was made again without a save");
    assert_eq!(scenarios.current().generation, 1);
}

/// Three rules, the third wrong: its place is not the first rule's.
const THIRD_RULE_WRONG: &str = "version: 1\nrules:\n  - id: a\n    do: { drop: {} }\n  - do: { drop: {} }\n  - id: down\n    do:\n      outage: { for: 0s }\n";

/// The file read at start and each reload of it are refused at the offending value, naming
/// its rule, as every other way in refuses it.
#[tokio::test]
async fn a_refused_file_points_at_the_offending_value_at_start_and_on_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("faults.yaml");
    std::fs::write(&path, THIRD_RULE_WRONG).unwrap();
    let placed = format!(
        "{}:8:22: rules[2] (down): `outage.for` must be above zero",
        path.display()
    );
    let e = start(Scenarios::new(), path.clone(), QUIET).expect_err("refused at start");
    assert!(e.starts_with(&placed), "{e}");

    std::fs::write(&path, ONE_RULE).unwrap();
    let scenarios = Scenarios::new();
    let _watcher = start(scenarios.clone(), path.clone(), QUIET).unwrap();
    let no_id = THIRD_RULE_WRONG.replace("  - id: down\n", "  -\n");
    std::fs::write(&path, &no_id).unwrap();
    let refused = async {
        loop {
            if let Some(r) = scenarios.rejected() {
                return r.error;
            }
            tokio::time::sleep(QUIET).await;
        }
    };
    let e = tokio::time::timeout(WAIT, refused).await.expect("refused");
    let placed = format!(
        "{}:8:22: rules[2]: `outage.for` must be above zero",
        path.display()
    );
    assert!(e.starts_with(&placed), "{e}");
}
