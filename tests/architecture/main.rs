//! The architecture, checked: the layers of `server/` and `client/` and the one-way
//! dependencies between their modules (docs/architecture.md), the sans-I/O rule for the
//! protocol layers, and the source links of the docs. Plain text analysis of the source
//! tree: no crate of the workspace is compiled into this test.

mod doc_links;
mod modules;
mod purity;
mod rust_source;
mod tree;

use tree::*;

#[test]
fn server_modules_depend_one_way() {
    let graph = graph("server");
    let mut problems = graph.cycles();
    problems.extend(graph.layer_violations(SERVER_LAYERS));
    assert!(problems.is_empty(), "server/src:\n{}", problems.join("\n"));
}

#[test]
fn client_modules_depend_one_way() {
    let graph = graph("client");
    let mut problems = graph.cycles();
    problems.extend(graph.layer_violations(CLIENT_LAYERS));
    assert!(problems.is_empty(), "client/src:\n{}", problems.join("\n"));
}

#[test]
fn server_protocol_layers_do_no_io() {
    let found = impure("server", SERVER_PURE);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn client_core_does_no_io() {
    let found = impure("client", CLIENT_PURE);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn architecture_walk_names_functions_that_exist() {
    let links = doc_links::source_links(
        &std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap(),
    );
    assert!(
        links.len() > 40,
        "the walk links the source: {} links",
        links.len()
    );
    let mut broken = Vec::new();
    for doc in [
        "docs/architecture.md",
        "README.md",
        "client/README.md",
        "docs/performance.md",
    ] {
        broken.extend(broken_doc_links(doc));
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn no_crate_has_a_module_cycle() {
    for krate in ["proto", "transcript", "log", "bench"] {
        let cycles = graph(krate).cycles();
        assert!(cycles.is_empty(), "{krate}/src:\n{}", cycles.join("\n"));
    }
}
