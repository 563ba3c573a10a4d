//! `--version`: the package version, and the git revision of the clone the binary was built in.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_xdsloop-client");

/// HEAD's short hash where this crate is a tracked file of a git clone (as build.rs decides).
fn head() -> Option<String> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let run = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    run(&["ls-files", "--error-unmatch", "Cargo.toml"])?;
    run(&["rev-parse", "--short=7", "HEAD"])
}

#[test]
fn version_names_the_release_and_the_git_revision_built_from() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let release = format!("xdsloop-client {}", env!("CARGO_PKG_VERSION"));
    let want = match head() {
        Some(revision) => format!("{release} (git {revision})\n"),
        None => format!("{release}\n"),
    };
    assert_eq!(line, want);
}
