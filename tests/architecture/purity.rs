//! The sans-I/O rule: the protocol layers (the server's `snapshot/` and `protocol/`, the
//! client's `config.rs` and `core/`) decide, they never do I/O. They may use prost, tracing and
//! std's collections, sync and time; not the crates that reach the network, the file system or
//! the async runtime, so their decisions stay plain functions a unit test can call. Nor do they
//! read a clock: the time comes in as an argument (the server's machines take a `Now`, the
//! client's core an `Instant`), so a test chooses it.

use crate::rust_source::{code_only, use_statements, without_tests};

/// Crates whose use makes a module I/O: gRPC, HTTP, the async runtime, file watching.
pub(crate) const IO_CRATES: &[&str] = &[
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
pub(crate) const IO_STD: &[&str] = &["fs", "net", "process"];

/// Every I/O path the non-test code of `text` names, as `use path` or `line N: path`.
pub(crate) fn io_uses(text: &str) -> Vec<String> {
    let io = |path: &[&str]| match path {
        [first, ..] if IO_CRATES.contains(first) => true,
        ["std" | "core", second, ..] => IO_STD.contains(second),
        _ => false,
    };
    let paths = named_paths(&without_tests(&code_only(text)));
    let found = paths.into_iter().filter_map(|named| {
        let path: Vec<&str> = named.path.iter().map(String::as_str).collect();
        let path = path.strip_prefix(&[""]).unwrap_or(&path);
        io(path).then(|| match named.written {
            None => format!("use {}", path.join("::")),
            Some(word) => format!("line {}: {word}", named.line),
        })
    });
    found.collect()
}

/// A path the code names: a leaf of a `use` statement (`written` is `None`) or a path written
/// out in the rest of the code (`tokio::spawn(..)`, `#[tokio::main]`, `::tonic::Status`), with
/// the line it is on.
struct NamedPath {
    line: usize,
    path: Vec<String>,
    written: Option<String>,
}

/// Every path `code` names: the `use` statements' leaves first, then the paths written out
/// elsewhere (the statements blanked, so line numbers hold).
fn named_paths(code: &str) -> Vec<NamedPath> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let statements = use_statements(code);
    let mut found = Vec::new();
    for statement in &statements {
        for leaf in &statement.leaves {
            found.push(NamedPath {
                line: line_of(statement.span.start),
                path: leaf.path.clone(),
                written: None,
            });
        }
    }
    let mut rest = code.to_string();
    for statement in &statements {
        blank_keeping_lines(&mut rest, statement.span.clone());
    }
    for (number, line) in rest.lines().enumerate() {
        let words = line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'));
        for word in words.filter(|w| w.contains("::")) {
            found.push(NamedPath {
                line: number + 1,
                path: word.split("::").map(str::to_string).collect(),
                written: Some(word.to_string()),
            });
        }
    }
    found
}

/// Blanks `span` of `code`, line breaks kept (so later positions keep their line numbers).
fn blank_keeping_lines(code: &mut String, span: std::ops::Range<usize>) {
    let blank: String = code[span.clone()]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    code.replace_range(span, &blank);
}

/// Functions that read a clock, as the last two segments of the path that calls them.
pub(crate) const CLOCK_READS: &[[&str; 2]] = &[
    ["SystemTime", "now"],
    ["Instant", "now"],
    ["Utc", "now"],
    ["Local", "now"],
    ["OffsetDateTime", "now_utc"],
];

/// Paths whose every use reads a clock or waits on one.
pub(crate) const CLOCK_PATHS: &[&[&str]] = &[&["chrono"], &["tokio", "time"]];

/// Every clock read in the non-test code of `text`, as (line, what): a `SystemTime::now()` or
/// `Instant::now()` (called or passed as a function), a clock crate's path, and
/// `.elapsed()`, which reads the clock to measure from an instant.
pub(crate) fn clock_reads(text: &str) -> Vec<(usize, String)> {
    let code = without_tests(&code_only(text));
    let clock = |path: &[&str]| {
        let path = match path.first() {
            Some(&"" | &"std" | &"core") => &path[1..],
            _ => path,
        };
        CLOCK_PATHS.iter().any(|p| path.starts_with(p))
            || path
                .windows(2)
                .any(|w| CLOCK_READS.iter().any(|r| r[..] == *w))
    };
    let mut found = Vec::new();
    for named in named_paths(&code) {
        let path: Vec<&str> = named.path.iter().map(String::as_str).collect();
        if clock(&path) {
            let what = named
                .written
                .unwrap_or_else(|| format!("use {}", path.join("::")));
            found.push((named.line, what));
        }
    }
    for (number, line) in code.lines().enumerate() {
        if line.contains(".elapsed()") {
            found.push((number + 1, ".elapsed()".to_string()));
        }
    }
    found.sort();
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
    fn clock_check_flags_reads_of_either_clock_with_their_lines() {
        // A `use` over several lines leaves the lines after it where they are.
        let sample = "use std::time::{\n    Instant,\n    SystemTime,\n};\nfn f(now: Instant) {\n\
                      let a = Instant::now();\n let b = std::time::SystemTime::now();\n\
                      let c = x.map_or_else(SystemTime::now, |s| s);\n\
                      let d = now.elapsed();\n}\nuse chrono::Utc;\n";
        let found = clock_reads(sample);
        let lines: Vec<usize> = found.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [6, 7, 8, 9, 11], "{found:?}");
        assert_eq!(found[0].1, "Instant::now");
        assert_eq!(found[1].1, "std::time::SystemTime::now");
        assert_eq!(found[4].1, "use chrono::Utc");
    }

    #[test]
    fn clock_check_lets_time_in_as_an_argument() {
        let sample = "use std::time::{Duration, Instant, SystemTime};\n\
                      fn due(now: Instant, at: SystemTime) -> Instant { now + Duration::ZERO }\n\
                      // Instant::now() is what the transport calls\n\
                      #[cfg(test)]\nmod tests { fn t() { let _ = std::time::Instant::now(); } }";
        assert!(clock_reads(sample).is_empty());
    }

    #[test]
    fn io_check_ignores_tests_comments_and_strings() {
        let sample = "// tokio::spawn\nconst A: &str = \"hyper::Client\";\n\
                      #[cfg(test)]\nmod tests { use tokio::test; }";
        assert!(io_uses(sample).is_empty());
    }
}
