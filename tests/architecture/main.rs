//! The architecture, checked: the layers of `server/` and `client/` and the one-way
//! dependencies between their modules (docs/architecture.md), the sans-I/O rule for the
//! protocol layers (no I/O, no clock reads), and the source links of the docs. Plain text analysis of the source
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
    problems.extend(graph.room_violations(SERVER_ROOMS, SERVER_ROOM_USES));
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
    let found = impure("server", SERVER_PURE, SERVER_PURE_EXCEPT);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn client_core_does_no_io() {
    let found = impure("client", CLIENT_PURE, &[]);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn pure_layers_read_no_clock() {
    let mut found = clock_reads_in("server", SERVER_PURE, SERVER_PURE_EXCEPT);
    found.extend(clock_reads_in("client", CLIENT_PURE, &[]));
    assert!(
        found.is_empty(),
        "the pure layers take the time as an argument, they do not read a clock:\n{}",
        found.join("\n")
    );
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
        "docs/running.md",
        "docs/tutorial.md",
        "docs/lab-day12.md",
        "docs/zh/lab-day12.md",
        "docs/zh/tutorial.md",
    ] {
        broken.extend(broken_doc_links(doc));
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_labs_take_the_lessons_l04_to_the_mux_add_watch_definition() {
    // The lesson's L04: GrpcSubscriptionImpl::start() is GrpcMux::addWatch. Each lab's L04
    // section links xdsloop's counterpart in the file that defines it (checked above).
    for doc in ["docs/lab-day12.md", "docs/zh/lab-day12.md"] {
        let text = std::fs::read_to_string(workspace().join(doc)).unwrap();
        let l04 = text
            .split("\n## ")
            .find(|section| section.starts_with("L04"))
            .unwrap_or_else(|| panic!("{doc}: no `## L04` section"));
        let links = doc_links::source_links(l04);
        let add_watch = links.iter().find(|l| {
            l.item == "Mux::add_watch" && l.target.ends_with("client/src/core/mux/watch.rs")
        });
        assert!(
            add_watch.is_some(),
            "{doc}: L04 links no [`Mux::add_watch`](…/client/src/core/mux/watch.rs): {links:?}"
        );
    }
}

#[test]
fn no_crate_has_a_module_cycle() {
    for krate in ["proto", "transcript", "log", "bench"] {
        let cycles = graph(krate).cycles();
        assert!(cycles.is_empty(), "{krate}/src:\n{}", cycles.join("\n"));
    }
}

#[test]
fn the_readme_is_one_screen_of_at_most_200_lines_with_the_two_set_up_commands() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move detail into docs/"
    );
    let first_block = readme.split("```sh\n").nth(1).unwrap_or_default();
    let block = first_block.split("```").next().unwrap_or_default();
    assert!(
        block.contains("make run-server") && block.contains("make test"),
        "the first command block sets up a fresh machine: {block}"
    );
}
