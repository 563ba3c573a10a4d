//! Links from documentation into the source, checked: `` [`Reloader::reload`](../server/src/config/watch/reload.rs) ``
//! must point at a file that defines `fn reload`; a capitalised last segment (`Snapshot`)
//! must be a `struct`, `enum`, `trait`, `type` or `const` there, and a last segment that is the
//! file's own module name (`services` for `services.rs`) links the module. A link never pins a
//! line (`mux.rs#L153`): every edit above it would move it, so the item name is what is checked.
//! A renamed function or a moved file then fails the build instead of leaving the walk-through
//! wrong.

use std::path::{Path, PathBuf};

/// One link into a `.rs` file: its text (without backticks) and target, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceLink {
    pub line: usize,
    pub item: String,
    pub target: String,
    /// `#L153`: the line of the target the link opens at.
    pub at_line: Option<usize>,
}

/// Every `[`item`](path.rs)` link in `markdown`.
pub(crate) fn source_links(markdown: &str) -> Vec<SourceLink> {
    let mut links = Vec::new();
    for (number, line) in markdown.lines().enumerate() {
        let mut rest = line;
        while let Some(open) = rest.find("[`") {
            rest = &rest[open + 2..];
            let Some(close) = rest.find("`](") else {
                break;
            };
            let item = rest[..close].to_string();
            rest = &rest[close + 3..];
            let Some(end) = rest.find(')') else {
                break;
            };
            let (target, fragment) = match rest[..end].split_once('#') {
                Some((target, fragment)) => (target.to_string(), Some(fragment)),
                None => (rest[..end].to_string(), None),
            };
            let at_line = fragment
                .and_then(|f| f.strip_prefix('L'))
                .and_then(|n| n.parse().ok());
            rest = &rest[end + 1..];
            if target.ends_with(".rs") {
                links.push(SourceLink {
                    line: number + 1,
                    item,
                    target,
                    at_line,
                });
            }
        }
    }
    links
}

/// Problems with the source links of the document at `doc` (links are relative to its
/// folder); `read` returns a file's text, `None` if it does not exist.
pub(crate) fn broken_links(
    doc: &Path,
    markdown: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Vec<String> {
    let base = doc.parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for link in source_links(markdown) {
        let file: PathBuf = base.join(&link.target);
        let at = format!("{}:{}", doc.display(), link.line);
        let Some(text) = read(&file) else {
            problems.push(format!("{at}: {} does not exist", link.target));
            continue;
        };
        let name = link.item.trim_end_matches("()");
        let name = name.rsplit("::").next().unwrap_or(name);
        if module_name(&file) == Some(name) {
            continue;
        }
        let kinds: &[&str] = if name.starts_with(char::is_uppercase) {
            &["struct", "enum", "trait", "type", "const"]
        } else {
            &["fn"]
        };
        let defined = kinds.iter().any(|kind| defines(&text, kind, name));
        if !defined {
            let kinds = kinds.join("/");
            problems.push(format!("{at}: {} defines no {kinds} {name}", link.target));
            continue;
        }
        if let Some(n) = link.at_line {
            problems.push(format!(
                "{at}: {}#L{n} pins a line, which moves with every edit above it: link \
                 {} and let the item's name be checked",
                link.target, link.target
            ));
        }
    }
    problems
}

/// The module a file defines: its stem, or its folder for `mod.rs`.
fn module_name(file: &Path) -> Option<&str> {
    let stem = file.file_stem()?.to_str()?;
    if stem != "mod" {
        return Some(stem);
    }
    file.parent()?.file_name()?.to_str()
}

/// Whether `text` has `<kind> <name>` followed by something that ends the name.
fn defines(text: &str, kind: &str, name: &str) -> bool {
    let needle = format!("{kind} {name}");
    text.match_indices(&needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            && after.is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> Option<String> {
        (path == Path::new("docs/../src/a.rs"))
            .then(|| "pub struct Stream;\nimpl Stream { pub fn on_request(&mut self) {} }".into())
    }

    #[test]
    fn doc_check_accepts_links_to_items_that_exist() {
        let doc = "[`Stream::on_request`](../src/a.rs) and [`Stream`](../src/a.rs), in \
                   [`crate::a`](../src/a.rs)";
        assert_eq!(source_links(doc).len(), 3);
        assert!(broken_links(Path::new("docs/a.md"), doc, &read).is_empty());
    }

    #[test]
    fn doc_check_refuses_a_link_that_pins_a_line() {
        let doc = "[`Stream::on_request`](../src/a.rs#L2)";
        let problems = broken_links(Path::new("docs/a.md"), doc, &read);
        assert_eq!(
            problems,
            [
                "docs/a.md:1: ../src/a.rs#L2 pins a line, which moves with every edit above it: \
                 link ../src/a.rs and let the item's name be checked"
            ]
        );
    }

    #[test]
    fn doc_check_rejects_a_made_up_function_and_a_missing_file() {
        let doc = "walk:\n[`Stream::on_requests`](../src/a.rs), [`run()`](../src/gone.rs)";
        let problems = broken_links(Path::new("docs/a.md"), doc, &read);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("docs/a.md:2: ../src/a.rs defines no fn on_requests"));
        assert!(problems[1].contains("../src/gone.rs does not exist"));
    }
}
