//! `--version`: the package version, and the git revision of the clone the binary was built in.

use std::process::Command;
use std::time::{Duration, SystemTime};

const BIN: &str = env!("CARGO_BIN_EXE_xdsloop-client");

fn git(args: &[&str]) -> Option<String> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    (out.status.success()).then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn version_names_the_release_and_the_git_revision_built_from() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let release = format!("xdsloop-client {}", env!("CARGO_PKG_VERSION"));
    // Where build.rs finds no repository that tracks this crate, the version alone.
    if git(&["ls-files", "--error-unmatch", "Cargo.toml"]).is_none() {
        return assert_eq!(line, format!("{release}\n"));
    }
    let head = git(&["rev-parse", "--short=7", "HEAD"]).unwrap();
    let built = std::fs::metadata(BIN).unwrap().modified().unwrap();
    let committed = git(&["log", "-1", "--format=%ct", "HEAD"]).unwrap();
    let committed = SystemTime::UNIX_EPOCH + Duration::from_secs(committed.parse().unwrap());
    if committed <= built {
        return assert_eq!(line, format!("{release} (git {head})\n"));
    }
    // A commit made after the binary was built (during a test run): the binary names one of
    // HEAD's ancestors.
    let revision = (line.strip_prefix(&format!("{release} (git ")))
        .and_then(|rest| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{line:?} names no git revision"));
    assert!(
        git(&["merge-base", "--is-ancestor", revision, "HEAD"]).is_some(),
        "{line:?} names {revision}, not HEAD ({head}) or one of its ancestors"
    );
}
