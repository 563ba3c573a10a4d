//! Bad edits are rejected with a message that points at the problem, the last good snapshot
//! stays served, and fixing the file recovers; the shipped fixture sets load.

use super::*;

/// Every file in `fixtures/invalid`, with what its rejection must point at: the line, for
/// everything decoding refuses, and the resource, field or rule.
const INVALID: &[(&str, &str, &[&str])] = &[
    ("bad-syntax.yaml", "bad-syntax.yaml", &["line 7"]),
    ("bad-syntax.json", "bad-syntax.json", &["line 4"]),
    (
        "unknown-field.yaml",
        "unknown-field.yaml",
        &["line 5, column 1", "Cluster \"typo\"", "conect_timeout"],
    ),
    (
        "wrong-type.yaml",
        "wrong-type.yaml",
        &[
            "line 6",
            "\"wrong-type\"",
            "endpoints[0].load_balancing_weight",
        ],
    ),
    (
        "unknown-type.yaml",
        "unknown-type.yaml",
        &["line 2", "unknown @type", "envoy.config.cluster.v3.Clustr"],
    ),
    (
        "bad-type-prefix.yaml",
        "bad-type-prefix.yaml",
        &[
            "line 3",
            "example.com/envoy.config.cluster.v3.Cluster",
            "type.googleapis.com/<message name>",
        ],
    ),
    (
        "missing-type.yaml",
        "missing-type.yaml",
        &["line 2", "missing \"@type\""],
    ),
    (
        "duplicate-key.yaml",
        "duplicate-key.yaml",
        &["line 5, column 1", "duplicate key `name`"],
    ),
    (
        "duplicate-key.json",
        "duplicate-key.json",
        &["line 9", "duplicate key `sni`"],
    ),
    ("nan-weight.yaml", "nan-weight.yaml", &["line 6", "NaN"]),
    (
        "enum-number.yaml",
        "enum-number.yaml",
        &["line 5", "lb_policy", "99", "ROUND_ROBIN (0)"],
    ),
    (
        "secret-not-a-map.yaml",
        "secret-not-a-map.yaml",
        &["line 7", "tls_certificate.private_key", "<redacted>"],
    ),
    (
        "duplicate-name.yaml",
        "duplicate-name.yaml",
        &["duplicate name", "Cluster \"twice\""],
    ),
    (
        "missing-name.yaml",
        "missing-name.yaml",
        &["line 2", "cluster_name"],
    ),
];

/// Text of the fake private key in `secret-not-a-map.yaml`: no rejection may quote it.
const SECRET_TEXT: &[&str] = &["PRIVATE KEY", "Tk9ULUEt"];

#[test]
fn every_invalid_fixture_is_listed() {
    let listed: Vec<&str> = INVALID.iter().map(|(source, _, _)| *source).collect();
    let mut shipped: Vec<String> = std::fs::read_dir(fixture_set("invalid"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    shipped.sort();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    assert_eq!(shipped, listed_sorted);
}

#[tokio::test]
async fn each_invalid_kind_is_rejected_and_fixing_it_recovers() {
    let (dir, mut watcher) = demo();
    let good = watcher.snapshots.borrow().clone();
    for (source, reported, fragments) in INVALID {
        let from = fixture_set("invalid").join(source);
        let to = dir.path().join(source);
        std::fs::copy(&from, &to).unwrap();
        let status = wait_reload(&mut watcher.reloads, source, |r| !r.ok).await;
        let error = status.error.clone().unwrap();
        assert_eq!(status.file, Some(dir.path().join(reported)), "{error}");
        assert!(error.contains(reported), "{error}");
        for fragment in *fragments {
            assert!(
                error.contains(fragment),
                "{source}: expected {fragment:?} in {error}"
            );
        }
        for secret in SECRET_TEXT {
            assert!(
                !error.contains(secret),
                "{source}: quotes {secret:?}: {error}"
            );
        }
        assert_eq!(status.generation, good.generation);
        assert!(
            Arc::ptr_eq(&watcher.snapshots.borrow(), &good),
            "{source}: kept"
        );

        std::fs::remove_file(&to).unwrap();
        let status = wait_reload(&mut watcher.reloads, "recovered", |r| r.ok).await;
        // Back to the same content: nothing new to publish.
        assert_eq!(status.generation, good.generation, "{source}");
        assert!(Arc::ptr_eq(&watcher.snapshots.borrow(), &good), "{source}");
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
        .err()
        .expect("a missing directory is an error")
        .to_string();
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert!(!err.contains('\n'), "{err}");

    std::fs::copy(
        fixture_set("invalid/unknown-field.yaml"),
        dir.path().join("bad.yaml"),
    )
    .unwrap();
    let err = Watcher::start(dir.path().to_path_buf(), Codec::envoy(), DEBOUNCE)
        .err()
        .expect("invalid fixtures are an error")
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
