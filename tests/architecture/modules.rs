//! A crate's modules and which ones use which: the graph the layering rules are checked on.
//!
//! A module is a file (`a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` is the root). An edge
//! is a path the module's non-test code names (`crate::..`, `super::..`, `self::..`, or a child
//! module), resolved to the module that defines the item, following `pub use` re-exports
//! (`crate::Snapshot` is the module that re-exported it from, not the crate root). Test modules
//! (`tests.rs`, `*/tests/*`, `test_support.rs`) and `main.rs` are not part of the graph.
//!
//! A module and its descendants are one unit: a child using its parent (or the parent its
//! child) is containment, not a dependency. Every other edge is lifted to the two siblings
//! below the common ancestor, and those are what must not form a cycle, at every level.

use std::collections::{BTreeMap, BTreeSet};

use crate::rust_source::{code_only, inline_paths, use_statements, without_tests};

pub(crate) type ModPath = Vec<String>;

/// One module naming something in another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Edge {
    pub from: ModPath,
    pub to: ModPath,
    /// The path as written (after `use`-tree expansion), to say why the edge exists.
    pub via: String,
}

#[derive(Debug, Default)]
pub(crate) struct ModuleGraph {
    pub modules: BTreeSet<ModPath>,
    /// Per module, every path it names, absolute (from the crate root), as written.
    named: BTreeMap<ModPath, Vec<ModPath>>,
    /// Per module, the names it re-exports and the absolute paths they stand for.
    reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
}

/// The module a source file (path relative to `src/`, `/`-separated) defines, or `None` for
/// files outside the graph.
pub(crate) fn module_of(file: &str) -> Option<ModPath> {
    let file = file.strip_suffix(".rs")?;
    let mut path: ModPath = file.split('/').map(String::from).collect();
    if path == ["main"] || path.first().is_some_and(|p| p == "bin") {
        return None;
    }
    if path.last().is_some_and(|p| p == "mod" || p == "lib") {
        path.pop();
    }
    let test = |p: &String| p == "tests" || p.ends_with("_tests") || p == "test_support";
    (!path.iter().any(test)).then_some(path)
}

impl ModuleGraph {
    /// The graph of a crate given as `(file relative to src/, text)` pairs.
    pub(crate) fn new<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let sources: Vec<(ModPath, String)> = files
            .into_iter()
            .filter_map(|(file, text)| Some((module_of(file)?, without_tests(&code_only(text)))))
            .collect();
        let mut graph = ModuleGraph {
            modules: sources.iter().map(|(m, _)| m.clone()).collect(),
            ..Default::default()
        };
        for (module, code) in &sources {
            let mut named = Vec::new();
            for statement in use_statements(code) {
                for leaf in statement.leaves {
                    let Some(path) = graph.absolute(module, &leaf.path) else {
                        continue;
                    };
                    if let (true, Some(name)) = (statement.public, leaf.name) {
                        let exports = graph.reexports.entry(module.clone()).or_default();
                        exports.insert(name, path.clone());
                    }
                    named.push(path);
                }
            }
            let inline = inline_paths(code).into_iter();
            named.extend(inline.filter_map(|p| graph.absolute(module, &p)));
            graph.named.insert(module.clone(), named);
        }
        graph
    }

    /// `path` as written in `module`, from the crate root; `None` for extern crates.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<ModPath> {
        let (first, rest) = path.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            child => {
                let mut base = module.to_vec();
                base.push(child.to_string());
                // A child module (2018 paths); anything else is an extern crate or a name
                // brought in by another `use`, which that `use` already recorded.
                return self.modules.contains(&base).then(|| {
                    base.extend(rest.iter().cloned());
                    base
                });
            }
        };
        let mut rest = rest;
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module that defines what `path` names, through re-exports.
    fn defining_module(&self, path: &[String], depth: usize) -> ModPath {
        let mut known = path.len();
        while known > 0 && !self.modules.contains(&path[..known]) {
            known -= 1;
        }
        let module = path[..known].to_vec();
        let exported = path
            .get(known)
            .and_then(|name| self.reexports.get(&module)?.get(name));
        match exported {
            Some(source) if depth < 16 && source.as_slice() != path => {
                let mut full = source.clone();
                full.extend(path[known + 1..].iter().cloned());
                self.defining_module(&full, depth + 1)
            }
            _ => module,
        }
    }

    /// Every edge between two modules where neither contains the other.
    pub(crate) fn edges(&self) -> BTreeSet<Edge> {
        let mut edges = BTreeSet::new();
        for (from, named) in &self.named {
            for path in named {
                let to = self.defining_module(path, 0);
                if to.starts_with(from) || from.starts_with(&to) {
                    continue;
                }
                let via = format!("crate::{}", path.join("::"));
                edges.insert(Edge {
                    from: from.clone(),
                    to,
                    via,
                });
            }
        }
        edges
    }

    /// Sibling modules that use each other, directly or around a loop, at any level; one line
    /// per loop, naming an edge of it as evidence.
    pub(crate) fn cycles(&self) -> Vec<String> {
        // (level, from child, to child) -> an edge that caused it.
        let mut lifted: BTreeMap<(ModPath, String, String), Edge> = BTreeMap::new();
        for edge in self.edges() {
            let common = edge
                .from
                .iter()
                .zip(&edge.to)
                .take_while(|(a, b)| a == b)
                .count();
            let key = (
                edge.from[..common].to_vec(),
                edge.from[common].clone(),
                edge.to[common].clone(),
            );
            lifted.entry(key).or_insert(edge);
        }
        let levels: BTreeSet<ModPath> = lifted.keys().map(|(level, _, _)| level.clone()).collect();
        let mut found = Vec::new();
        for level in levels {
            let graph: BTreeMap<&str, Vec<&str>> = lifted
                .keys()
                .filter(|(l, _, _)| *l == level)
                .fold(BTreeMap::new(), |mut g, (_, a, b)| {
                    g.entry(a.as_str()).or_default().push(b.as_str());
                    g
                });
            for component in strongly_connected(&graph) {
                let evidence: Vec<String> = lifted
                    .iter()
                    .filter(|((l, a, b), _)| {
                        *l == level && component.contains(a) && component.contains(b)
                    })
                    .map(|(_, e)| format!("{} uses {}", display(&e.from), e.via))
                    .collect();
                found.push(format!(
                    "cycle in {}: {} ({})",
                    display(&level),
                    component.join(" <-> "),
                    evidence.join("; ")
                ));
            }
        }
        found
    }

    /// Top-level modules may only use modules listed before them in `order`; a top-level
    /// module missing from `order` is an error too (a new module must be given its layer).
    pub(crate) fn layer_violations(&self, order: &[&str]) -> Vec<String> {
        let position = |m: &str| order.iter().position(|o| *o == m);
        let mut found = Vec::new();
        for module in self.modules.iter().filter(|m| m.len() == 1) {
            if position(&module[0]).is_none() {
                found.push(format!("top-level module {} has no layer", module[0]));
            }
        }
        for edge in self.edges() {
            let (from, to) = (&edge.from[0], &edge.to[0]);
            if from == to {
                continue;
            }
            if let (Some(f), Some(t)) = (position(from), position(to))
                && t >= f
            {
                let from = display(&edge.from);
                found.push(format!(
                    "{from} uses {}: {to} is not below {}",
                    edge.via, edge.from[0]
                ));
            }
        }
        found
    }

    /// Uses between two of the top-level modules in `rooms` that `allowed` (`(from, to)`)
    /// does not list: rooms stand apart, each on the layers below.
    pub(crate) fn room_violations(&self, rooms: &[&str], allowed: &[(&str, &str)]) -> Vec<String> {
        let room = |m: &str| rooms.contains(&m);
        let edges = self.edges().into_iter().filter(|e| {
            let (from, to) = (e.from[0].as_str(), e.to[0].as_str());
            from != to && room(from) && room(to) && !allowed.contains(&(from, to))
        });
        let found = edges.map(|e| {
            let (from, to) = (&e.from[0], &e.to[0]);
            format!(
                "{} uses {}: the room {from} does not use the room {to}",
                display(&e.from),
                e.via
            )
        });
        found.collect()
    }
}

fn display(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        format!("crate::{}", module.join("::"))
    }
}

/// Tarjan's strongly connected components with more than one node, each sorted.
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<String>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(v: &'a str, graph: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, graph, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !state.index.contains_key(v) {
            visit(v, graph, &mut state);
        }
    }
    state.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> ModuleGraph {
        ModuleGraph::new(files.iter().copied())
    }

    #[test]
    fn cycle_check_catches_siblings_that_use_each_other() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "use crate::b::B;"),
            ("b.rs", "fn f() -> crate::a::A { todo!() }"),
        ]);
        let cycles = g.cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert!(
            cycles[0].starts_with("cycle in crate: a <-> b"),
            "{cycles:?}"
        );
    }

    #[test]
    fn cycle_check_sees_through_a_root_reexport() {
        // snapshot <-> view, hidden behind `crate::TypeResources`, was such a cycle.
        let g = graph(&[
            (
                "lib.rs",
                "pub mod snapshot; pub mod view; pub use snapshot::TypeResources;",
            ),
            (
                "snapshot.rs",
                "pub struct TypeResources { v: crate::view::ViewCache }",
            ),
            ("view.rs", "use crate::TypeResources;"),
        ]);
        assert_eq!(g.cycles().len(), 1, "{:?}", g.edges());
    }

    #[test]
    fn cycle_check_looks_inside_layers_and_allows_parent_and_child() {
        let g = graph(&[
            ("lib.rs", "mod core;"),
            (
                "core/mod.rs",
                "mod mux; mod request; pub use self::mux::Mux;",
            ),
            ("core/mux.rs", "use super::request::State; use super::*;"),
            ("core/request.rs", "use crate::core::Mux;"),
        ]);
        let cycles = g.cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert!(cycles[0].starts_with("cycle in crate::core: mux <-> request"));
        let fine = graph(&[
            ("lib.rs", "mod core;"),
            ("core/mod.rs", "mod mux; pub use self::mux::Mux;"),
            ("core/mux.rs", "use super::*;"),
        ]);
        assert!(fine.cycles().is_empty());
    }

    #[test]
    fn test_code_adds_no_edges() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "use crate::b::B;"),
            ("b.rs", "#[cfg(test)]\nmod tests { use crate::a::A; }"),
            ("b/tests.rs", "use crate::a::A;"),
        ]);
        assert!(g.cycles().is_empty());
    }

    #[test]
    fn room_check_rejects_a_room_using_another_unless_allowed() {
        let g = graph(&[
            ("lib.rs", "mod core; mod judge; mod tap; mod faults;"),
            ("core.rs", ""),
            ("judge.rs", "use crate::core::Ledger;"),
            ("tap.rs", "use crate::judge::Violation;"),
            ("faults.rs", "fn f() -> crate::tap::Event { todo!() }"),
        ]);
        let rooms = ["judge", "tap", "faults"];
        let found = g.room_violations(&rooms, &[("tap", "judge")]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("the room faults does not use the room tap"),
            "{found:?}"
        );
        assert_eq!(g.room_violations(&rooms, &[]).len(), 2);
    }

    #[test]
    fn layer_check_rejects_upward_uses_and_unplaced_modules() {
        let g = graph(&[
            ("lib.rs", "mod snapshot; mod protocol; mod extra;"),
            ("snapshot.rs", "use crate::protocol::Interest;"),
            ("protocol.rs", "use crate::snapshot::Snapshot;"),
            ("extra.rs", ""),
        ]);
        let found = g.layer_violations(&["snapshot", "protocol"]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().any(|f| f.contains("extra has no layer")));
        assert!(
            found
                .iter()
                .any(|f| f.contains("protocol is not below snapshot"))
        );
    }
}
