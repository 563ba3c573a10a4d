//! Embeds the Envoy API `FileDescriptorSet` that the `envoy-types` package ships but does not
//! export. Fixtures use the proto3 JSON mapping, which needs full descriptors to decode.

use std::{env, fs, path::PathBuf, process::Command};

const DESCRIPTORS: &str = "src/generated/types.bin";

fn main() {
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Only this target's packages: the others (e.g. wasi) were never downloaded, and
    // `--offline` must not need them.
    let target = env::var("TARGET").expect("cargo sets TARGET");
    let output = Command::new(&cargo)
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--filter-platform",
            &target,
        ])
        .current_dir(&manifest_dir)
        .output()
        .unwrap_or_else(|e| panic!("xdsloop-proto: could not run `{cargo} metadata`: {e}"));
    if !output.status.success() {
        panic!(
            "xdsloop-proto: `cargo metadata` failed; cannot locate envoy-types' descriptor set:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let manifest = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "envoy-types")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("xdsloop-proto: envoy-types is not in the dependency graph");
    let source = PathBuf::from(manifest)
        .parent()
        .expect("manifest has a parent directory")
        .join(DESCRIPTORS);
    let bytes = fs::read(&source).unwrap_or_else(|e| {
        panic!(
            "xdsloop-proto: envoy-types no longer ships {DESCRIPTORS} ({}: {e}); \
             pin an envoy-types version that does",
            source.display()
        )
    });
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("envoy.bin");
    fs::write(&out, bytes).expect("write descriptor set to OUT_DIR");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed=build.rs");
}
