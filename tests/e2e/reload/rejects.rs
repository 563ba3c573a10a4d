//! Bad edits are rejected with a message that points at the problem, the last good snapshot
//! stays served, and fixing the file recovers; the shipped fixture sets load.

use super::*;
use crate::harness::INVALID;

#[test]
fn every_invalid_fixture_is_listed() {
    let mut listed: Vec<&str> = INVALID.iter().map(|invalid| invalid.file).collect();
    listed.sort_unstable();
    let mut shipped: Vec<String> = std::fs::read_dir(fixture_set("invalid"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    shipped.sort();
    assert_eq!(shipped, listed);
}

#[tokio::test]
async fn each_invalid_kind_is_rejected_and_fixing_it_recovers() {
    let (dir, mut watcher) = demo();
    let good = watcher.snapshots.borrow().clone();
    for invalid in INVALID {
        let to = dir.path().join(invalid.file);
        std::fs::copy(invalid.source(), &to).unwrap();
        let status = wait_reload(&mut watcher.reloads, invalid.file, |r| !r.ok).await;
        let error = status.error.clone().unwrap();
        assert_eq!(status.file.as_deref(), Some(to.as_path()), "{error}");
        invalid.assert_rejection(&to, &error);
        assert_eq!(status.generation, good.generation);
        let kept = Arc::ptr_eq(&watcher.snapshots.borrow(), &good);
        assert!(kept, "{}: kept", invalid.file);

        std::fs::remove_file(&to).unwrap();
        let status = wait_reload(&mut watcher.reloads, "recovered", |r| r.ok).await;
        // Back to the same content: nothing new to publish.
        assert_eq!(status.generation, good.generation, "{}", invalid.file);
        assert!(Arc::ptr_eq(&watcher.snapshots.borrow(), &good));
    }
}

#[tokio::test]
async fn fixing_a_bad_edit_in_place_recovers_with_the_new_content() {
    let (dir, mut watcher) = demo();
    let file = dir.path().join("endpoints.yaml");
    std::fs::write(&file, "cluster_name: [web\n").unwrap();
    let status = wait_reload(&mut watcher.reloads, "rejected", |r| !r.ok).await;
    assert_eq!(status.file.as_deref(), Some(file.as_path()));
    assert_eq!(
        ports(&watcher.snapshots.borrow(), "web"),
        [8081, 8082, 8083]
    );

    std::fs::write(&file, endpoints_yaml(9200)).unwrap();
    wait_snapshot(&mut watcher.snapshots, "web on 9200", |s| {
        ports(s, "web") == [9200]
    })
    .await;
    let status = wait_reload(&mut watcher.reloads, "accepted", |r| r.ok).await;
    assert_eq!(status.generation, watcher.snapshots.borrow().generation);
}

#[tokio::test]
async fn start_up_errors_are_one_clear_line_and_empty_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = Watcher::start(missing.clone(), Codec::envoy(), DEBOUNCE)
        .expect_err("a missing directory is an error")
        .to_string();
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert!(!err.contains('\n'), "{err}");

    std::fs::copy(
        fixture_set("invalid/unknown-field.yaml"),
        dir.path().join("bad.yaml"),
    )
    .unwrap();
    let err = Watcher::start(dir.path().to_path_buf(), Codec::envoy(), DEBOUNCE)
        .expect_err("invalid fixtures are an error")
        .to_string();
    assert!(
        err.contains("bad.yaml") && err.contains("conect_timeout"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");

    std::fs::remove_file(dir.path().join("bad.yaml")).unwrap();
    let mut watcher = Watcher::start(dir.path().to_path_buf(), Codec::envoy(), DEBOUNCE).unwrap();
    assert_eq!(watcher.snapshots.borrow().resource_count(), 0);
    std::fs::write(dir.path().join("c.yaml"), cluster_yaml("first")).unwrap();
    wait_snapshot(&mut watcher.snapshots, "first file", |s| {
        has(s, "n", type_url::CLUSTER, "first")
    })
    .await;
}

#[tokio::test]
async fn shipped_fixture_sets_load_and_their_references_resolve() {
    for (set, listener, route, clusters) in [
        ("demo", "ingress", "local_route", &["api", "web"]),
        (
            "grpc",
            "greeter",
            "greeter-route",
            &["greeter-a", "greeter-b"],
        ),
        ("per-file", "ingress", "local_route", &["api", "web"]),
    ] {
        let watcher = Watcher::start(fixture_set(set), Codec::envoy(), DEBOUNCE)
            .unwrap_or_else(|e| panic!("{set}: {e}"));
        let snapshot = watcher.snapshots.borrow().clone();
        assert!(has(&snapshot, "n", type_url::LISTENER, listener), "{set}");
        assert!(has(&snapshot, "n", type_url::ROUTE, route), "{set}");
        for cluster in clusters {
            assert!(
                has(&snapshot, "n", type_url::CLUSTER, cluster),
                "{set}: {cluster}"
            );
            assert!(
                !ports(&snapshot, cluster).is_empty(),
                "{set}: {cluster} has endpoints"
            );
        }
        let codec = Codec::envoy();
        let listener = &snapshot.get("n", type_url::LISTENER).unwrap().resources[listener];
        let json = codec
            .to_json(type_url::LISTENER, &listener.bytes)
            .unwrap()
            .to_string();
        assert!(
            json.contains(&format!("\"route_config_name\":\"{route}\"")),
            "{set}: {json}"
        );
        let route = &snapshot.get("n", type_url::ROUTE).unwrap().resources[route];
        let json = codec
            .to_json(type_url::ROUTE, &route.bytes)
            .unwrap()
            .to_string();
        assert!(
            json.contains(&format!("\"cluster\":\"{}\"", clusters[0])),
            "{set}: {json}"
        );
    }
    let grpc = Watcher::start(fixture_set("grpc"), Codec::envoy(), DEBOUNCE).unwrap();
    let snapshot = grpc.snapshots.borrow().clone();
    assert_eq!(ports(&snapshot, "greeter-a"), [50051]);
    assert_eq!(ports(&snapshot, "greeter-b"), [50052]);
}
