//! The `--version` line (`XDSLOOP_VERSION`): the package version, and the git revision the binary
//! was built from when the crate is built inside its own clone. A packaged crate (crates.io,
//! `cargo package`) is not in a repository of its own: it prints the version alone.
//! (xdsloop-server's build.rs is the same: both binaries say it alike.)

use std::{env, path::Path, process::Command};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let line = match git_revision(Path::new(&dir)) {
        Some(revision) => format!("{version} (git {revision})"),
        None => version,
    };
    println!("cargo:rustc-env=XDSLOOP_VERSION={line}");
}

/// HEAD's short hash, or `None` without git, outside a repository, or when git does not track
/// this crate's manifest: a packaged copy unpacked inside another repository (`target/package/`
/// under a clone, a registry cache in a home directory kept in git) was not built from that
/// repository's HEAD.
fn git_revision(dir: &Path) -> Option<String> {
    git(dir, &["ls-files", "--error-unmatch", "Cargo.toml"])?;
    let revision = git(dir, &["rev-parse", "--short=7", "HEAD"])?;
    // A commit or a checkout moves HEAD or the branch it names: build again then, and only then.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(dir, &["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", &name]) {
            let path = dir.join(path);
            // A path that does not exist would make cargo run this script on every build.
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    Some(revision)
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (output.status.success() && !text.is_empty()).then(|| text.to_string())
}
