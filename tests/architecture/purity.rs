//! The sans-I/O rule: the protocol layers (the server's `snapshot/` and `protocol/`, the
//! client's `config.rs` and `core/`) decide, they never do I/O. They may use prost, tracing and
//! std's collections, sync and time; not the crates that reach the network, the file system or
//! the async runtime, so their decisions stay plain functions a unit test can call.

use crate::rust_source::{code_only, use_statements, without_tests};

/// Crates whose use makes a module I/O: gRPC, HTTP, the async runtime, file watching.
pub const IO_CRATES: &[&str] = &[
    "axum",
    "futures",
    "http",
    "http_body",
    "http_body_util",
    "hyper",
    "hyper_util",
    "notify",
    "tokio",
    "tokio_stream",
    "tonic",
    "tonic_health",
    "tonic_prost",
    "tonic_reflection",
];

/// Parts of std that do I/O.
pub const IO_STD: &[&str] = &["fs", "net", "process"];

/// Every I/O path the non-test code of `text` names, as `line: path`.
pub fn io_uses(text: &str) -> Vec<String> {
    let code = without_tests(&code_only(text));
    let mut found = Vec::new();
    let io = |path: &[&str]| match path {
        [first, ..] if IO_CRATES.contains(first) => true,
        ["std" | "core", second, ..] => IO_STD.contains(second),
        _ => false,
    };
    let statements = use_statements(&code);
    for statement in &statements {
        for leaf in &statement.leaves {
            let path: Vec<&str> = leaf.path.iter().map(String::as_str).collect();
            if io(&path) {
                found.push(format!("use {}", path.join("::")));
            }
        }
    }
    // Paths written out in code: `tokio::spawn(..)`, `#[tokio::main]`, `std::fs::read(..)`.
    let mut rest = code.clone();
    for statement in &statements {
        rest.replace_range(statement.span.clone(), &" ".repeat(statement.span.len()));
    }
    for (number, line) in rest.lines().enumerate() {
        let words = line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'));
        for word in words.filter(|w| w.contains("::")) {
            let path: Vec<&str> = word.split("::").collect();
            let path = if path.first() == Some(&"") {
                &path[1..]
            } else {
                &path[..]
            };
            if io(path) {
                found.push(format!("line {}: {word}", number + 1));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_check_flags_runtime_network_and_file_uses() {
        let sample = "use tokio::sync::watch;\nuse std::{collections::BTreeMap, fs};\n\
                      fn f() { let _ = ::tonic::Status::ok(\"\"); }\nuse prost::Message;";
        let found = io_uses(sample);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[0].contains("tokio::sync::watch"));
        assert!(found[1].contains("std::fs"));
        assert!(found[2].contains("line 3: ::tonic::Status::ok"));
    }

    #[test]
    fn io_check_ignores_tests_comments_and_strings() {
        let sample = "// tokio::spawn\nconst A: &str = \"hyper::Client\";\n\
                      #[cfg(test)]\nmod tests { use tokio::test; }";
        assert!(io_uses(sample).is_empty());
    }
}
