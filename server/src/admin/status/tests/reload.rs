//! The reload part of the document: the last reload's outcome, the one in progress, the
//! watcher's health; in JSON and in the table.

use super::*;

#[test]
fn rejected_reload_names_its_file() {
    let v1 = snapshot(4, &[(CLUSTER, &[("a", "1")])]);
    let mut reload = reload_ok(&v1);
    reload.ok = false;
    reload.file = Some(PathBuf::from("fixtures/bad.yaml"));
    reload.error = Some("fixtures/bad.yaml: line 3, column 1: unknown field".into());
    let summary = reload_summary(&reload);
    assert_eq!(summary.file.as_deref(), Some("fixtures/bad.yaml"));
    assert_eq!(summary.error, reload.error);
    assert!(!summary.ok);
}

#[test]
fn reload_json_field_names_are_the_documented_ones() {
    let json = serde_json::to_value(nacked_document()).unwrap();
    let reload = [
        "at",
        "count",
        "duration_ms",
        "error",
        "file",
        "generation",
        "in_progress",
        "ok",
        "watcher",
    ];
    assert_eq!(keys(&json["reload"]), reload);
    let watcher = ["error", "ok", "restarts", "since"];
    assert_eq!(keys(&json["reload"]["watcher"]), watcher);
}

#[test]
fn reload_in_progress_shows_in_the_summary_and_table() {
    let v1 = snapshot(3, &[(CLUSTER, &[("a", "1")])]);
    let mut reload = reload_ok(&v1);
    let since = SystemTime::now();
    reload.in_progress = Some(crate::config::watch::InProgress {
        since,
        files: vec![PathBuf::from("fx/big.yaml"), PathBuf::from("fx/b.yaml")],
    });
    let summary = reload_summary(&reload);
    let running = summary.in_progress.as_ref().unwrap();
    assert_eq!(running.files, ["fx/big.yaml", "fx/b.yaml"]);
    assert_eq!(running.since, since);
    assert!(summary.watcher.ok);
    let doc = document(&Registry::new(), &v1, None);
    let doc = StatusDocument {
        reload: summary,
        ..doc
    };
    let text = table::render(&doc, SystemTime::now());
    let at = rfc3339::format(since);
    assert!(
        text.contains(&format!(
            "reload    RUNNING since {at}: decoding fx/big.yaml and 1 more\n"
        )),
        "{text}"
    );
}

#[test]
fn watcher_failure_shows_in_status_and_table() {
    let v1 = snapshot(3, &[(CLUSTER, &[("a", "1")])]);
    let mut reload = reload_ok(&v1);
    let since = SystemTime::now();
    reload.watcher = crate::config::watch::WatcherHealth {
        ok: false,
        error: Some("fx is gone, and so is the parent directory watched for its return".into()),
        since: Some(since),
        restarts: 2,
    };
    let summary = reload_summary(&reload);
    assert!(!summary.watcher.ok);
    assert_eq!(summary.watcher.restarts, 2);
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["watcher"]["ok"], false);
    assert!(json["in_progress"].is_null());
    let doc = StatusDocument {
        reload: summary,
        ..document(&Registry::new(), &v1, None)
    };
    let text = table::render(&doc, SystemTime::now());
    assert!(text.contains("watcher   DOWN since "), "{text}");
    assert!(text.contains("fx is gone, and so is the parent"), "{text}");
}
