//! The checks applied to this repository's source tree.

use std::path::{Path, PathBuf};

use crate::doc_links::broken_links;
use crate::modules::ModuleGraph;
use crate::purity::{clock_reads, io_uses};

/// The layers of each crate, lowest first: a top-level module may use only those before it.
/// The server's protocol core (`protocol`) comes before the rooms of the features around it
/// (`judge` .. `replay`), so the core never uses a room.
pub(crate) const SERVER_LAYERS: &[&str] = &[
    "error",
    "snapshot",
    "config",
    "protocol",
    "judge",
    "tap",
    "faults",
    "replay",
    "net",
    "admin",
    "transport",
    "app",
    "testkit",
    "api",
];
pub(crate) const CLIENT_LAYERS: &[&str] = &[
    "error",
    "config",
    "core",
    "transport",
    "client",
    "cli",
    "fleet",
    "check",
];
/// The server's rooms: features around the protocol core. A room may use the core and the
/// layers below it, and no other room unless it is listed in [`SERVER_ROOM_USES`].
pub(crate) const SERVER_ROOMS: &[&str] = &["judge", "tap", "faults", "replay"];
/// The uses between rooms, each needed: `(room, the room it uses)`.
pub(crate) const SERVER_ROOM_USES: &[(&str, &str)] = &[
    // A tap event carries the judge's violation as it found it.
    ("tap", "judge"),
];

/// Files (relative to `src/`) of the pure, sans-I/O layers: no I/O, no clock reads. A room
/// that becomes pure is added here, and both checks hold it to that.
pub(crate) const SERVER_PURE: &[&str] = &[
    "snapshot/",
    "protocol/",
    "judge/",
    "tap/",
    "faults/",
    "replay/",
];
/// Files inside the pure folders that are the I/O edge of their room, and why.
pub(crate) const SERVER_PURE_EXCEPT: &[(&str, &str)] = &[
    (
        "faults/scenario/installed.rs",
        "the scenario in force, published to the streams on a tokio watch",
    ),
    (
        "faults/scenario/outage.rs",
        "the outage in progress, published to the accept loop on a tokio watch",
    ),
    (
        "faults/scenario/watch",
        "`--scenario FILE`: reads the file and follows its edits",
    ),
    (
        "faults/scenario/check.rs",
        "`scenario check FILE`: reads the file",
    ),
    ("replay/script", "`--replay FILE`: reads the recording"),
];
pub(crate) const CLIENT_PURE: &[&str] = &["config.rs", "core/"];

pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `<crate>/src`, as (path relative to `src/` with `/`, text).
pub(crate) fn sources(krate: &str) -> Vec<(String, String)> {
    let src = workspace().join(krate).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable source dir") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(&src).expect("under src");
                let relative = relative.to_string_lossy().replace('\\', "/");
                let text = std::fs::read_to_string(&path).expect("UTF-8 source");
                files.push((relative, text));
            }
        }
    }
    files.sort();
    files
}

pub(crate) fn graph(krate: &str) -> ModuleGraph {
    let files = sources(krate);
    ModuleGraph::new(files.iter().map(|(f, t)| (f.as_str(), t.as_str())))
}

/// The files of `krate` in the `pure` list, as (path relative to `src/`, text), but for those
/// that start with one of `except` (the I/O edge of a room).
fn pure_sources(krate: &str, pure: &[&str], except: &[(&str, &str)]) -> Vec<(String, String)> {
    let is_pure = |f: &str| {
        pure.iter()
            .any(|p| f == *p || p.ends_with('/') && f.starts_with(p))
    };
    let all = sources(krate);
    let tests = test_only(&all);
    let files: Vec<_> = all
        .into_iter()
        .filter(|(f, _)| is_pure(f) && !tests.iter().any(|t| under(f, t)))
        .filter(|(f, _)| !except.iter().any(|(e, _)| f.starts_with(e)))
        .collect();
    assert!(!files.is_empty(), "{krate}: no files in {pure:?}");
    files
}

/// The modules declared `#[cfg(test)] mod name;`, as the path their file has without `.rs`
/// (`protocol/sotw/tests`): they and the modules under them are compiled only for tests.
fn test_only(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in files {
        let dir = match file.strip_suffix("mod.rs").or(file.strip_suffix("lib.rs")) {
            Some(dir) => dir.to_string(),
            None => format!("{}/", file.trim_end_matches(".rs")),
        };
        for (at, _) in text.match_indices("#[cfg(test)]") {
            let after = text[at + "#[cfg(test)]".len()..].trim_start();
            let after = after.strip_prefix("pub(crate) ").unwrap_or(after);
            let after = after.strip_prefix("pub ").unwrap_or(after);
            let Some(name) = after.strip_prefix("mod ") else {
                continue;
            };
            let name = name
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next();
            let declared = name.is_some_and(|n| after[4 + n.len()..].trim_start().starts_with(';'));
            if let Some(name) = name.filter(|_| declared) {
                out.push(format!("{dir}{name}"));
            }
        }
    }
    out
}

/// Whether `file` is the module `module` (a path without `.rs`) or under it.
fn under(file: &str, module: &str) -> bool {
    let file = file.trim_end_matches(".rs");
    file == module || file.starts_with(&format!("{module}/"))
}

/// Clock reads in the pure files of `krate`, as `krate/src/file:line: what`.
pub(crate) fn clock_reads_in(krate: &str, pure: &[&str], except: &[(&str, &str)]) -> Vec<String> {
    let files = pure_sources(krate, pure, except);
    let per_file = files.iter().flat_map(|(file, text)| {
        clock_reads(text)
            .into_iter()
            .map(move |(line, what)| format!("{krate}/src/{file}:{line}: {what}"))
    });
    per_file.collect()
}

/// I/O uses in the pure files of `krate`, as `file: use`: the files under `pure`, but for
/// those that start with one of `except` (each of which must name a file that exists).
pub(crate) fn impure(krate: &str, pure: &[&str], except: &[(&str, &str)]) -> Vec<String> {
    let stale = except
        .iter()
        .filter(|(e, _)| !sources(krate).iter().any(|(f, _)| f.starts_with(e)));
    let stale: Vec<String> = stale
        .map(|(e, _)| format!("{krate}/src/{e}: an exception to the I/O rule names no file"))
        .collect();
    if !stale.is_empty() {
        return stale;
    }
    let files = pure_sources(krate, pure, except);
    let checked = files.iter();
    let per_file = checked.into_iter().flat_map(|(file, text)| {
        io_uses(text)
            .into_iter()
            .map(move |u| format!("{krate}/src/{file}: {u}"))
    });
    per_file.collect()
}

/// Broken source links in a document (a path relative to the workspace).
pub(crate) fn broken_doc_links(doc: &str) -> Vec<String> {
    let root = workspace();
    let text = std::fs::read_to_string(root.join(doc)).expect("the document exists");
    let read = |p: &Path| std::fs::read_to_string(root.join(p)).ok();
    broken_links(Path::new(doc), &text, &read)
}
